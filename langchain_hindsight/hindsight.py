"""``Hindsight``: one object bundling store, retriever, recorder, reflector and journal.

A thin facade for applications: build the parts once, then get the adapters
and the feedback call as one-liners.

Example:
    .. code-block:: python

        from langchain_hindsight import Hindsight

        with Hindsight(persist_directory="./memory_db") as hs:
            agent = create_agent(model, tools, middleware=[hs.middleware()])
            agent.invoke(inputs, config={"run_id": run_id})
            hs.feedback(run_id, success=False, comment="不对，周报只统计本周一到周日的数据")
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import BaseCallbackHandler

from langchain_hindsight._loop import ErrorPolicy
from langchain_hindsight.capture import TrajectoryRecorder
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.journal import RunJournal, RunRecord
from langchain_hindsight.prompts import Locale
from langchain_hindsight.reflection import BackgroundReflector, Reflector
from langchain_hindsight.retriever import HindsightRetriever
from langchain_hindsight.store import MemoryStore
from langchain_hindsight.types import MemoryUnit, ScoredMemory, Trajectory

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel
    from langgraph.graph.state import CompiledStateGraph

    from langchain_hindsight.memory import HindsightMemory
    from langchain_hindsight.middleware import HindsightMiddleware

__all__ = ["FeedbackResult", "Hindsight"]


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """What :meth:`Hindsight.feedback` changed.

    Attributes:
        run: The run's journal record, with the feedback appended.
        updated: Served memories whose confidence changed.
        created: New ``user_feedback`` memories made from the comment.
    """

    run: RunRecord
    updated: list[MemoryUnit] = field(default_factory=list)
    created: list[MemoryUnit] = field(default_factory=list)


class Hindsight:
    """Store + retriever + recorder + reflector + journal, and the one-liners around them.

    Args:
        persist_directory: Directory of the embedded store (ignored with ``store``).
        store: An existing :class:`MemoryStore` (not closed by :meth:`close`).
        model: Chat model for reflection; ``None`` reflects with rules only.
        embeddings: Embedder for a new store (default: the offline MiniLM).
        namespace: Default namespace of a new store.
        k: Experiences recalled per task.
        task_type: Task type preferred in recall and used to label reflections.
        locale: ``"zh"`` (default) or ``"en"``.
        background: Reflect in a worker thread (never delays the agent); call
            :meth:`flush` before reading what was learned.
        on_error: ``"log"`` (default) or ``"raise"`` for the adapters.

    Example:
        .. code-block:: python

            hs = Hindsight(persist_directory="./memory_db")
            app = hs.wrap(my_graph)                       # LangGraph
            agent = create_agent(model, tools, middleware=[hs.middleware()])
            chain.invoke(x, config={"callbacks": hs.callbacks})  # capture + reflect any runnable
            hs.feedback(run_id, success=True)
            hs.close()
    """

    def __init__(
        self,
        persist_directory: str | os.PathLike[str] = "./memory_db",
        *,
        store: MemoryStore | None = None,
        model: BaseChatModel | None = None,
        embeddings: Embeddings | None = None,
        namespace: str = "default",
        k: int = 5,
        task_type: str | None = None,
        locale: Locale = "zh",
        background: bool = False,
        on_error: ErrorPolicy = "log",
    ) -> None:
        self._owns_store = store is None
        self.store = (
            store if store is not None else MemoryStore(persist_directory, embeddings=embeddings, namespace=namespace)
        )
        try:
            self.k = k
            self.task_type = task_type
            self.locale: Locale = locale
            self.on_error: ErrorPolicy = on_error
            self.retriever = HindsightRetriever(store=self.store, k=k, task_type=task_type, locale=locale)
            self.reflector = Reflector(store=self.store, model=model, locale=locale)
            self.background = BackgroundReflector(self.reflector) if background else None
            self.journal = RunJournal(self.store)
            self.recorder = TrajectoryRecorder(on_finish=self._on_trajectory, namespace=self.store.namespace)
        except Exception:
            self.close()
            raise

    # ------------------------------------------------------------------ adapters
    def _options(self, overrides: dict[str, Any]) -> dict[str, Any]:
        options: dict[str, Any] = {
            "retriever": self.retriever,
            "reflector": self.background or self.reflector,
            "journal": self.journal,
            "k": self.k,
            "task_type": self.task_type,
            "locale": self.locale,
            "on_error": self.on_error,
        }
        options.update(overrides)
        return options

    def middleware(self, **overrides: Any) -> HindsightMiddleware:
        """A :class:`HindsightMiddleware` wired to this bundle (keyword overrides allowed)."""
        from langchain_hindsight.middleware import HindsightMiddleware

        return HindsightMiddleware(self.store, **self._options(overrides))

    def wrap(
        self, graph: CompiledStateGraph[Any, Any, Any, Any], **overrides: Any
    ) -> CompiledStateGraph[Any, Any, Any, Any]:
        """``with_hindsight(graph, ...)`` wired to this bundle."""
        from langchain_hindsight.graph import with_hindsight

        return with_hindsight(graph, self.store, **self._options(overrides))

    def memory(self, **overrides: Any) -> HindsightMemory:
        """A classic-chain :class:`HindsightMemory` (needs the ``classic`` extra)."""
        from langchain_hindsight.memory import HindsightMemory

        return HindsightMemory(store=self.store, **self._options(overrides))

    @property
    def callbacks(self) -> list[BaseCallbackHandler]:
        """Callbacks that capture any runnable's run and reflect on it when it ends.

        Runs already handled by an adapter of this bundle (same run id in the
        journal) are not reflected twice.
        """
        return [self.recorder]

    def recall(self, query: str, **kwargs: Any) -> list[ScoredMemory]:
        """``retriever.recall(query, ...)``: scored memories with their breakdowns."""
        return self.retriever.recall(query, **kwargs)

    # ------------------------------------------------------------------ capture → reflect
    def _on_trajectory(self, trajectory: Trajectory) -> object:
        """Recorder hook: journal and reflect a run that no adapter handled."""
        from langchain_hindsight.errors import RunNotFoundError

        try:
            self.journal.get(trajectory.run_id, namespace=trajectory.namespace)
            return None  # an adapter served, journaled and reflects this run
        except RunNotFoundError:
            pass
        self.journal.start(trajectory.run_id, task=trajectory.task, namespace=trajectory.namespace)
        self.journal.finish(trajectory.run_id, outcome=trajectory.outcome, namespace=trajectory.namespace)
        if self.background is not None:
            return self.background.submit(trajectory)
        produced = self.reflector.reflect(trajectory)
        if produced:
            self.journal.add_produced(
                trajectory.run_id, [u.memory_id for u in produced], namespace=trajectory.namespace
            )
        return None

    # ------------------------------------------------------------------ feedback
    def feedback(
        self,
        run_id: str,
        *,
        success: bool | None = None,
        comment: str | None = None,
        namespace: str | None = None,
    ) -> FeedbackResult:
        """Apply a user's verdict on a run to the memories that run used (seed §2.3, §4.5).

        ``success=False`` means the user says the result was wrong: the served
        memories are rejected (confidence × 0.5, seed §3.1). ``success=True``
        credits them (+0.05) unless the run already ended as a success (the
        adapters credit that automatically; no double counting). A ``comment``
        with ``success`` not ``True`` is a correction: it becomes a new
        ``user_feedback`` memory (high trust) for the run's task. Everything is
        recorded in the journal.

        Raises:
            RunNotFoundError: the journal has no such run.
            ConfigurationError: nothing to record (no verdict and no comment).
        """
        if success is None and not (comment and comment.strip()):
            raise ConfigurationError("give success=True/False, a comment, or both")
        record = self.journal.get(run_id, namespace=namespace)
        ns = record.namespace
        updated: list[MemoryUnit] = []
        ids = record.served_ids
        if ids and success is False:
            updated = self.store.record_feedback(ids, rejected=True, namespace=ns)
        elif ids and success is True and record.outcome != "success":
            updated = self.store.record_feedback(ids, success=True, namespace=ns)
        created: list[MemoryUnit] = []
        if comment and comment.strip() and success is not True:
            created = self.reflector.record_user_feedback(
                comment, task=record.task, task_type=record.task_type, namespace=ns, run_id=run_id
            )
            if created:
                self.journal.add_produced(run_id, [u.memory_id for u in created], namespace=ns)
        run = self.journal.add_feedback(
            run_id, text=(comment or "").strip(), success=success, rejected=success is False, namespace=ns
        )
        return FeedbackResult(run=run, updated=updated, created=created)

    # ------------------------------------------------------------------ lifecycle
    def flush(self, timeout: float | None = None) -> bool:
        """Wait for background reflection (no-op without ``background=True``)."""
        return self.background.flush(timeout) if self.background is not None else True

    def close(self) -> None:
        """Finish background work and close the store this object opened (idempotent)."""
        background = getattr(self, "background", None)
        if background is not None:
            background.close()
        if self._owns_store and getattr(self, "store", None) is not None:
            self.store.close()

    def __enter__(self) -> Hindsight:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
