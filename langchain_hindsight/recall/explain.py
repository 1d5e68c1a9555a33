"""Why a run was shown what it was shown: each served memory's score, its factors, and what became of it.

The explanation reads a run's journal record (:class:`~langchain_hindsight.journal.RunJournal`)
and the memories as they are now, and orders each served memory's additive score terms
(:data:`~langchain_hindsight.recall.scoring.TERMS`) by contribution: a question about recall's
scores, so it lives beside them rather than in the store. ``Hindsight.explain``,
``ScopedMemory.explain``, ``hindsight explain``, the MCP ``explain`` tool and the UI's run page
all answer through :func:`explain_run`.

Example:
    .. code-block:: python

        from langchain_hindsight.recall.explain import explain_run

        explanation = explain_run(hs.journal, run_id)      # or hs.explain(run_id)
        for m in explanation.memories:
            print(m.served.memory_id, m.main_factor, m.status)
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from langchain_hindsight.journal import RunJournal
from langchain_hindsight.recall.scoring import TERMS
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.types import MemoryStatus, MemoryUnit, ServedMemory

__all__ = ["ExplainedMemory", "RunExplanation", "aexplain_run", "explain_run"]


class ExplainedMemory(BaseModel):
    """One served memory, its ranking numbers and what became of it."""

    model_config = ConfigDict(frozen=True)

    served: ServedMemory
    status: MemoryStatus | Literal["forgotten"]
    """Current status; ``forgotten`` when the memory no longer exists (deleted or merged away)."""
    unit: MemoryUnit | None = None
    """The memory as it is now (``None`` when forgotten)."""
    factors: list[tuple[str, float]] = Field(default_factory=list)
    """The additive score factors, largest contribution first."""

    @property
    def main_factor(self) -> str | None:
        """The factor that contributed most to the score."""
        return self.factors[0][0] if self.factors else None


class RunExplanation(BaseModel):
    """Which memories shaped a run and why they were ranked so (see :func:`explain_run`)."""

    model_config = ConfigDict(frozen=True)

    record: RunRecord
    memories: list[ExplainedMemory] = Field(default_factory=list)
    """Served memories in rank order."""
    produced: list[tuple[str, MemoryUnit | None]] = Field(default_factory=list)
    """Produced memory ids with the unit as it is now (``None`` when it no longer exists)."""


def _factors(breakdown: dict[str, float]) -> list[tuple[str, float]]:
    """The score terms present in ``breakdown``, largest contribution first."""
    found = [(k, float(breakdown[k])) for k in TERMS if k in breakdown]
    return sorted(found, key=lambda kv: kv[1], reverse=True)


def explain_run(journal: RunJournal, run_id: str, *, namespace: str | None = None) -> RunExplanation:
    """Which memories shaped this run, and why they were ranked so.

    Each served memory comes with its score, the additive factors sorted by
    contribution, and its current state (confidence now, status, or
    ``forgotten``); produced memories are resolved the same way.

    Args:
        journal: The run journal holding the run.
        run_id: The run.
        namespace: The journal's namespace (default: the journal's own).

    Raises:
        RunNotFoundError: no such run.
    """
    record = journal.get(run_id, namespace=namespace)
    ids = [*record.served_ids, *record.produced]
    units = {u.memory_id: u for u in journal.store.get_many(ids, namespace=record.namespace)} if ids else {}
    memories = [
        ExplainedMemory(
            served=m,
            status=units[m.memory_id].status if m.memory_id in units else "forgotten",
            unit=units.get(m.memory_id),
            factors=_factors(m.breakdown),
        )
        for m in sorted(record.served, key=lambda m: m.rank)
    ]
    return RunExplanation(record=record, memories=memories, produced=[(i, units.get(i)) for i in record.produced])


async def aexplain_run(journal: RunJournal, run_id: str, *, namespace: str | None = None) -> RunExplanation:
    """Async :func:`explain_run` (the store reads run in a worker thread)."""
    return await asyncio.to_thread(explain_run, journal, run_id, namespace=namespace)
