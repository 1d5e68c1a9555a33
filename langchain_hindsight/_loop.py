"""The per-task hindsight loop shared by every adapter: serve → (agent runs) → finish.

``serve`` recalls experiences for a task and formats them; ``finish`` applies
the task's outcome to the memories it was served (seed §4.5), journals the run
and triggers reflection (seed §2.3), synchronously or in the background. The
adapters (middleware, graph nodes, classic memory, the ``Hindsight`` facade)
only decide *where* the block goes and *when* a task ends.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from langchain_hindsight.errors import ConfigurationError, HindsightError
from langchain_hindsight.prompts import Locale, get_templates
from langchain_hindsight.reflection import BackgroundReflector, Reflector
from langchain_hindsight.types import MemoryUnit, Outcome, ScoredMemory, Trajectory

if TYPE_CHECKING:
    from langchain_hindsight.journal import RunJournal
    from langchain_hindsight.retriever import HindsightRetriever
    from langchain_hindsight.store import MemoryStore

__all__ = ["ErrorPolicy", "HindsightLoop", "Served"]

logger = logging.getLogger(__name__)

ErrorPolicy = Literal["log", "raise"]
"""What an adapter does when recall or reflection fails.

``"log"`` (default): log a warning with the traceback and let the agent go on
(without experiences, or without learning from this run). ``"raise"``: raise
the typed error (for tests and debugging).
"""


def new_run_id() -> str:
    """A fresh run id (a UUID4 string, like LangChain's)."""
    return str(uuid.uuid4())


@dataclass
class Served:
    """What one task was given: its recalled memories and the rendered block."""

    run_id: str
    task: str
    namespace: str
    memories: list[ScoredMemory] = field(default_factory=list)
    block: str = ""
    """The ``[相关经验]`` block, or ``""`` when nothing relevant was recalled."""
    task_prompt: str = ""
    """The task as the seed's task prompt (block + ``[当前任务]`` + instruction), or the task itself."""

    @property
    def memory_ids(self) -> list[str]:
        """Ids of the served memories, best first."""
        return [m.memory.memory_id for m in self.memories]


class HindsightLoop:
    """Recall before a task, outcome + reflection after it, with one error policy.

    Args:
        store: The memory store (the single source of truth).
        retriever: Recall component; default ``HindsightRetriever(store=store, k=k, locale=locale)``.
        reflector: A ``Reflector`` (runs after the task) or a ``BackgroundReflector``
            (queued); default a rule-based ``Reflector(store=store)``.
        journal: Optional ``RunJournal`` recording served and produced memories per run.
        k: Experiences recalled per task.
        task_type: Task type to prefer in recall and to label reflections; ``None`` lets them infer.
        locale: ``"zh"`` (default) or ``"en"`` block and task prompt.
        max_lines: At most this many block lines (seed §3.3: 5-8).
        recall: ``False`` learns without injecting (e.g. the baseline arm of an A/B test).
        reflect: ``False`` never reflects (recall and outcome feedback only).
        apply_outcome: ``False`` leaves served memories' confidence alone (feedback
            only through an explicit ``Hindsight.feedback``).
        on_error: :data:`ErrorPolicy`.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        retriever: HindsightRetriever | None = None,
        reflector: Reflector | BackgroundReflector | None = None,
        journal: RunJournal | None = None,
        k: int = 5,
        task_type: str | None = None,
        locale: Locale = "zh",
        max_lines: int = 8,
        recall: bool = True,
        reflect: bool = True,
        apply_outcome: bool = True,
        on_error: ErrorPolicy = "log",
    ) -> None:
        if on_error not in ("log", "raise"):
            raise ConfigurationError(f"on_error must be 'log' or 'raise', got {on_error!r}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigurationError(f"k must be a positive int, got {k!r}")
        get_templates(locale)  # validates the locale
        self.store = store
        if retriever is None:
            from langchain_hindsight.retriever import HindsightRetriever

            retriever = HindsightRetriever(store=store, k=k, locale=locale)
        self.retriever = retriever
        if reflector is None and reflect:
            reflector = Reflector(store=store, locale=locale)
        self.reflector = reflector
        self.journal = journal
        self.k = k
        self.task_type = task_type
        self.locale: Locale = locale
        self.max_lines = max_lines
        self.recall_enabled = recall
        self.reflect_enabled = reflect
        self.apply_outcome = apply_outcome
        self.on_error: ErrorPolicy = on_error

    # ------------------------------------------------------------------ helpers
    def namespace(self, namespace: str | None) -> str:
        """``namespace`` or the store's default."""
        return namespace or self.store.namespace

    def _fail(self, what: str, error: Exception) -> None:
        if self.on_error == "raise":
            if isinstance(error, HindsightError):
                raise error
            raise HindsightError(f"{what} failed: {error}") from error
        logger.warning("hindsight %s failed; the agent continues without it", what, exc_info=error)

    def _render(self, served: Served) -> Served:
        from langchain_hindsight.injection import build_task_prompt, format_experiences

        if served.memories:
            served.block = format_experiences(served.memories, locale=self.locale, max_lines=self.max_lines)
            served.task_prompt = build_task_prompt(served.task, served.memories, locale=self.locale)
        else:
            served.task_prompt = served.task
        return served

    def _start(self, served: Served) -> None:
        if self.journal is not None:
            self.journal.start(
                served.run_id,
                task=served.task,
                task_type=self.task_type,
                namespace=served.namespace,
                served=served.memories,
            )

    # ------------------------------------------------------------------ serve
    def serve(self, task: str, *, namespace: str | None = None, run_id: str | None = None) -> Served:
        """Recall experiences for ``task`` and render them (never raises under ``on_error="log"``)."""
        served = Served(run_id=run_id or new_run_id(), task=task, namespace=self.namespace(namespace))
        if self.recall_enabled and task.strip():
            try:
                served.memories = self.retriever.recall(
                    task, k=self.k, task_type=self.task_type, namespace=served.namespace
                )
            except Exception as e:  # noqa: BLE001 - the error policy decides
                self._fail("recall", e)
        try:
            self._start(served)
        except Exception as e:  # noqa: BLE001
            self._fail("journal", e)
        return self._render(served)

    async def aserve(self, task: str, *, namespace: str | None = None, run_id: str | None = None) -> Served:
        """Async :meth:`serve`."""
        served = Served(run_id=run_id or new_run_id(), task=task, namespace=self.namespace(namespace))
        if self.recall_enabled and task.strip():
            try:
                served.memories = await self.retriever.arecall(
                    task, k=self.k, task_type=self.task_type, namespace=served.namespace
                )
            except Exception as e:  # noqa: BLE001
                self._fail("recall", e)
        try:
            await asyncio.to_thread(self._start, served)
        except Exception as e:  # noqa: BLE001
            self._fail("journal", e)
        return self._render(served)

    # ------------------------------------------------------------------ finish
    def _outcome(self, served: Served | None, outcome: Outcome) -> None:
        if served is None or not served.memories or not self.apply_outcome:
            return
        success = {"success": True, "failure": False}.get(outcome)
        self.store.record_feedback(served.memory_ids, success=success, namespace=served.namespace)

    def _finish_sync_parts(self, served: Served | None, trajectory: Trajectory) -> None:
        try:
            self._outcome(served, trajectory.outcome)
            if self.journal is not None:
                self.journal.finish(
                    trajectory.run_id,
                    outcome=trajectory.outcome,
                    task_type=trajectory.task_type,
                    namespace=trajectory.namespace,
                )
        except Exception as e:  # noqa: BLE001
            self._fail("outcome feedback", e)

    def _journal_produced(self, trajectory: Trajectory, produced: list[MemoryUnit]) -> None:
        if self.journal is not None and produced:
            self.journal.add_produced(
                trajectory.run_id, [u.memory_id for u in produced], namespace=trajectory.namespace
            )

    def _submit(self, background: BackgroundReflector, trajectory: Trajectory) -> None:
        future = background.submit(trajectory)

        def done(f: Future[list[MemoryUnit]]) -> None:
            if f.cancelled() or f.exception() is not None:
                return  # the background reflector logs its own failures
            try:
                self._journal_produced(trajectory, f.result())
            except Exception:  # a worker thread: nobody to raise to
                logger.warning("could not journal produced memories of run %s", trajectory.run_id, exc_info=True)

        future.add_done_callback(done)

    def finish(self, served: Served | None, trajectory: Trajectory) -> list[MemoryUnit]:
        """Apply the outcome to the served memories, journal the run, reflect.

        Returns:
            The memory units reflection stored (empty when reflection is off,
            queued in the background, found nothing, or failed under ``"log"``).
        """
        if served is not None:
            trajectory = self._align(served, trajectory)
        self._finish_sync_parts(served, trajectory)
        reflector = self.reflector
        if not self.reflect_enabled or reflector is None:
            return []
        try:
            if isinstance(reflector, BackgroundReflector):
                self._submit(reflector, trajectory)
                return []
            produced = list(reflector.reflect(trajectory))
            self._journal_produced(trajectory, produced)
            return produced
        except Exception as e:  # noqa: BLE001
            self._fail("reflection", e)
            return []

    async def afinish(self, served: Served | None, trajectory: Trajectory) -> list[MemoryUnit]:
        """Async :meth:`finish` (store writes run in a worker thread)."""
        if served is not None:
            trajectory = self._align(served, trajectory)
        await asyncio.to_thread(self._finish_sync_parts, served, trajectory)
        reflector = self.reflector
        if not self.reflect_enabled or reflector is None:
            return []
        try:
            if isinstance(reflector, BackgroundReflector):
                self._submit(reflector, trajectory)
                return []
            produced = list(await reflector.areflect(trajectory))
            await asyncio.to_thread(self._journal_produced, trajectory, produced)
            return produced
        except Exception as e:  # noqa: BLE001
            self._fail("reflection", e)
            return []

    def _align(self, served: Served, trajectory: Trajectory) -> Trajectory:
        changes: dict[str, Any] = {"run_id": served.run_id, "namespace": served.namespace}
        if served.task:
            changes["task"] = served.task
        if trajectory.task_type is None and self.task_type is not None:
            changes["task_type"] = self.task_type
        if served.memories:
            changes["metadata"] = {**trajectory.metadata, "served_memory_ids": served.memory_ids}
        return trajectory.model_copy(update=changes)
