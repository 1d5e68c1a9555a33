"""The usage review report: which memories are recalled, and whether that helps.

"Some memories are retrieved often but never lead to success: they look relevant
and are not; lower their weight or delete them." This module computes that list
and its companions from the run journal and the store.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from langchain_hindsight._checks import check_int
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.taxonomy import FALLBACK_TASK_TYPE

if TYPE_CHECKING:
    from langchain_hindsight.journal import RunJournal
    from langchain_hindsight.store.memory_store import MemoryStore

__all__ = ["LowSimilarityRecall", "MemoryUsage", "TaskTypeUsage", "UsageReport", "build_usage_report"]

Section = Literal["memories", "never_successful", "low_similarity", "supersede_chains", "task_types"]


@dataclass(frozen=True, slots=True)
class MemoryUsage:
    """How often one memory was served, what the agents did with it, and how those runs ended."""

    memory_id: str
    content: str
    """The memory's text now (empty when it no longer exists)."""
    task_type: str
    status: str
    """``active`` / ``superseded`` / ``archived`` / ``forgotten``."""
    confidence: float | None
    shown: int
    successes: int
    failures: int
    unknown: int
    mean_similarity: float
    mean_score: float
    used: int = 0
    """Runs whose agent used it (followed it, or said it applied it): only those are credited or debited."""
    set_aside: int = 0
    """Runs whose agent said it does not apply: "served ``shown`` times, set aside by the agent ``set_aside`` times"."""
    set_aside_reason: str = ""
    """The newest of the agent's statements setting it aside (its reason), '' when never set aside."""


@dataclass(frozen=True, slots=True)
class LowSimilarityRecall:
    """One served memory whose similarity to the task was low (below 0.6: the embedder may not fit the domain)."""

    run_id: str
    memory_id: str
    rank: int
    similarity: float
    score: float
    task: str


@dataclass(frozen=True, slots=True)
class TaskTypeUsage:
    """Runs and memories of one task type."""

    task_type: str
    runs: int
    successes: int
    failures: int
    memories: int
    """Active memories of this task type in the store."""


@dataclass(frozen=True, slots=True)
class UsageReport:
    """The usage review (see :meth:`Lifecycle.usage_report`).

    Example:
        .. code-block:: python

            report = Lifecycle(store).usage_report()
            for row in report.never_successful:
                print(row.memory_id, row.shown, row.content)
            df = report.to_dataframe("memories")  # needs pandas
    """

    namespace: str
    runs: int
    memories: list[MemoryUsage] = field(default_factory=list)
    """Every served memory, most shown first."""
    never_successful: list[MemoryUsage] = field(default_factory=list)
    """Served at least ``min_shown`` times and never followed by a successful run."""
    low_similarity: list[LowSimilarityRecall] = field(default_factory=list)
    supersede_chains: list[list[str]] = field(default_factory=list)
    """Chains of two or more units linked by ``supersedes``, newest first, longest chains first."""
    task_types: list[TaskTypeUsage] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)

    def to_dataframe(self, section: Section = "memories") -> Any:
        """One section as a ``pandas.DataFrame`` (pandas is imported lazily; install it for this).

        Raises:
            ImportError: pandas is not installed (``pip install pandas``).
            ConfigurationError: an unknown section.
        """
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]
        except ImportError as e:
            raise ImportError("UsageReport.to_dataframe needs pandas: pip install pandas") from e
        if section == "supersede_chains":
            return pd.DataFrame(
                {"head": c[0], "length": len(c), "chain": " <- ".join(c)} for c in self.supersede_chains
            )
        if section not in ("memories", "never_successful", "low_similarity", "task_types"):
            raise ConfigurationError(f"unknown section {section!r}")
        rows = getattr(self, section)
        return pd.DataFrame([asdict(r) for r in rows])


def _chains(store: MemoryStore, namespace: str) -> list[list[str]]:
    parent: dict[str, str] = {}
    for unit in store.iter_units(namespace=namespace):
        if unit.supersedes:
            parent[unit.memory_id] = unit.supersedes
    heads = set(parent) - set(parent.values())
    chains = []
    for head in heads:
        chain = [head]
        while chain[-1] in parent and parent[chain[-1]] not in chain:
            chain.append(parent[chain[-1]])
        chains.append(chain)
    return sorted(chains, key=lambda c: (-len(c), c[0]))


def build_usage_report(
    store: MemoryStore,
    journal: RunJournal,
    *,
    namespace: str,
    since: datetime | None,
    until: datetime,
    min_shown: int,
    low_similarity: float,
) -> UsageReport:
    """Compute the report from the journal's runs in ``[since, until)`` and the store's units."""
    check_int("min_shown", min_shown)
    runs = journal.list_runs(namespace=namespace, since=since, until=until, kind="run")
    tally: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    reasons: dict[str, tuple[datetime, str]] = {}
    low: list[LowSimilarityRecall] = []
    per_type: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in runs:
        kind = r.task_type or FALLBACK_TASK_TYPE
        per_type[kind]["runs"] += 1
        outcome = r.judged_outcome
        per_type[kind][outcome] += 1
        for m in r.served:
            t = tally[m.memory_id]
            t["shown"] += 1
            t[outcome] += 1
            t["similarity"] += m.similarity
            t["score"] += m.score
            if m.similarity < low_similarity:
                low.append(LowSimilarityRecall(r.run_id, m.memory_id, m.rank, m.similarity, m.score, r.task))
        served = {m.memory_id for m in r.served}
        for use in r.uses or []:
            if use.memory_id not in served:
                continue
            tally[use.memory_id][use.verdict] += 1
            if use.verdict == "set_aside" and (
                use.memory_id not in reasons or reasons[use.memory_id][0] <= r.started_at
            ):
                reasons[use.memory_id] = (r.started_at, use.evidence)
    units = {u.memory_id: u for u in store.get_many(list(tally), namespace=namespace)} if tally else {}
    memories = []
    for memory_id, t in tally.items():
        u = units.get(memory_id)
        shown = int(t["shown"])
        memories.append(
            MemoryUsage(
                memory_id=memory_id,
                content=u.content if u else "",
                task_type=u.task_type if u else "",
                status=u.status if u else "forgotten",
                confidence=u.score_confidence if u else None,
                shown=shown,
                successes=int(t["success"]),
                failures=int(t["failure"]),
                unknown=int(t["unknown"]),
                mean_similarity=round(t["similarity"] / shown, 4),
                mean_score=round(t["score"] / shown, 4),
                used=int(t["used"]),
                set_aside=int(t["set_aside"]),
                set_aside_reason=reasons[memory_id][1] if memory_id in reasons else "",
            )
        )
    memories.sort(key=lambda m: (-m.shown, m.memory_id))
    active: dict[str, int] = defaultdict(int)
    for unit in store.iter_units(namespace=namespace, status="active"):
        active[unit.task_type] += 1
    types = [
        TaskTypeUsage(
            task_type=k,
            runs=per_type[k]["runs"] if k in per_type else 0,
            successes=per_type[k]["success"] if k in per_type else 0,
            failures=per_type[k]["failure"] if k in per_type else 0,
            memories=active.get(k, 0),
        )
        for k in sorted(set(per_type) | set(active))
    ]
    return UsageReport(
        namespace=namespace,
        runs=len(runs),
        memories=memories,
        never_successful=[m for m in memories if m.shown >= min_shown and m.successes == 0],
        low_similarity=sorted(low, key=lambda x: x.similarity),
        supersede_chains=_chains(store, namespace),
        task_types=types,
    )
