"""One task's hindsight from start to end: serve → journal → (agent runs) → capture → reflect → credit.

:class:`HindsightSession` is the single orchestration path. Every adapter is a
thin shell over it that only decides *where* the ``[相关经验]`` block goes and
*when* a task ends:

==============================  ==============================================
adapter                         calls
==============================  ==============================================
``HindsightMiddleware``         ``serve`` at the first model call of a task,
                                ``finish`` after the agent
``recall_node``/``reflect_node``  ``serve`` / ``finish``
``HindsightMemory``             ``serve`` on load, ``finish`` on save
``Hindsight.callbacks``         ``on_trajectory`` when a captured run ends
``Hindsight.feedback``          ``feedback``
==============================  ==============================================

The journal is always on: every served task gets a run record with what it was
served (and the task type it was served as), how it ended, what reflection
stored from it (background reflection included) and the success credit applied
to its memories, so a later rejection reverses exactly that credit.

A human turn in the same conversation thread that corrects the previous answer
("不对，…", "No, …") is taken as feedback on the previous run (see
:mod:`langchain_hindsight.session._conversation`).

Options are written out once, in :class:`SessionConfig`; :class:`~langchain_hindsight.Hindsight`
builds one and every adapter takes the ``Hindsight`` (or a session, or a bare
store plus ``SessionConfig`` keywords).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from typing import Any, Unpack

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight._script import query_script
from langchain_hindsight.capture.messages import namespace_from_config
from langchain_hindsight.capture.recorder import SERVED_KEY
from langchain_hindsight.errors import AccessDeniedError, ConfigurationError, HindsightError, RunNotFoundError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.prompts import Locale, get_reflection_templates
from langchain_hindsight.recall.engine import RecallResult
from langchain_hindsight.recall.injection import block_locale, build_task_prompt, fit_experiences
from langchain_hindsight.recall.retriever import HindsightRetriever
from langchain_hindsight.reflection.background import BackgroundReflector
from langchain_hindsight.reflection.reflector import Reflector
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.session._conversation import CorrectionDetector, detect_correction
from langchain_hindsight.session._credit import (
    apply_outcome,
    journal_produced,
    run_record,
    served_from_items,
    start_run,
    submit_background,
)
from langchain_hindsight.session._use import judge_run
from langchain_hindsight.session._verdict import correction_unit, record_verdict, revert_feedback
from langchain_hindsight.session.build import build_config
from langchain_hindsight.session.config import (
    PROMPT_LOCALE,
    ErrorPolicy,
    FeedbackResult,
    SessionConfig,
    SessionOptions,
    new_run_id,
)
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit, ScoredMemory, Served, Trajectory

__all__ = ["HindsightSession"]

logger = logging.getLogger(__name__)


@refuse_unknown_keywords
class HindsightSession:
    """Recall before a task, outcome + reflection + credit after it, journaled, with one error policy.

    It receives a :class:`SessionConfig` whose parts are built
    (:func:`~langchain_hindsight.session.build.build_config`) and builds nothing itself; get one from
    :class:`~langchain_hindsight.Hindsight` (``hs.session``) or from a store plus ``SessionConfig``
    keywords with :func:`~langchain_hindsight.session.source.session_for`.

    Example:
        .. code-block:: python

            session = session_for(store, k=3)
            served = session.serve("生成本周的销售周报", thread_id="t1")
            answer = my_agent(served.task_prompt)
            session.finish(served, trajectory)   # credit, journal, reflect

    Raises:
        ConfigurationError: a config that is not built.
    """

    def __init__(self, config: SessionConfig, /) -> None:
        if not isinstance(config, SessionConfig):
            raise ConfigurationError(
                f"HindsightSession takes a built SessionConfig, got {type(config).__name__}: "
                "use session_for(store, **options) (langchain_hindsight.session.source)"
            )
        retriever, reflector, journal = config.retriever, config.reflector, config.journal
        if retriever is None or journal is None or (reflector is None and config.reflect):
            raise ConfigurationError(
                "HindsightSession receives built parts (retriever, journal, reflector): "
                "build the config with build_config(...) or use session_for(...)"
            )
        store = config.store
        self.config = config
        self.store: MemoryStore = store
        self.retriever: HindsightRetriever = retriever
        self.reflector: Reflector | BackgroundReflector | None = reflector
        self.journal: RunJournal = journal
        self._detector = CorrectionDetector(
            config.correction_patterns, model=config.feedback_model, locale=config.locale or PROMPT_LOCALE
        )

    # ------------------------------------------------------------------ options
    def derive(self, **options: Unpack[SessionOptions]) -> HindsightSession:
        """A session sharing this one's store, retriever, reflector and journal, with some options changed.

        The changed config is built by :func:`~langchain_hindsight.session.build.build_config` (the one
        place a session's parts are made).
        """
        return HindsightSession(build_config(self.config, **options)) if options else self

    @property
    def k(self) -> int:
        """Experiences recalled per task."""
        return self.config.k

    @property
    def task_type(self) -> str | None:
        """The fixed task type, or ``None`` (inferred per task)."""
        return self.config.task_type

    @property
    def locale(self) -> Locale:
        """The prompt language (the set locale, else :data:`~langchain_hindsight.session.config.PROMPT_LOCALE`)."""
        return self.config.locale or PROMPT_LOCALE

    def block_locale(self, memories: Sequence[ScoredMemory], task: str) -> Locale:
        """The language of the block's frame: the set locale, else the language of the memories shown."""
        if self.config.locale is not None:
            return self.config.locale
        contents = [m.memory.content for m in memories[: self.config.max_lines]]
        return block_locale(contents, task, fallback=PROMPT_LOCALE)

    @property
    def on_error(self) -> ErrorPolicy:
        """The error policy."""
        return self.config.on_error

    def namespace(self, namespace: str | None) -> str:
        """``namespace`` or the default (the pinned namespace, else the store's).

        Raises:
            AccessDeniedError: the session is pinned to another namespace.
        """
        pinned = self.config.namespace
        if pinned is not None and namespace and namespace != pinned:
            raise AccessDeniedError(f"this session acts in namespace {pinned!r} only, not {namespace!r}")
        return namespace or pinned or self.store.namespace

    def namespace_for_run(
        self, config: Mapping[str, Any] | None, *, explicit: str | None = None, context: Any = None
    ) -> str:
        """The namespace of a run.

        ``explicit`` (a name or a ``"user-{user_id}"`` template), else
        ``config["configurable"][namespace_key]`` (or the runtime context), else the store's default.
        """
        return self.namespace(
            namespace_from_config(config, explicit=explicit, key=self.config.namespace_key, context=context)
        )

    def task_type_for(self, task: str) -> str | None:
        """The task type a task is served as: the fixed one, else what the retriever infers from its text."""
        if not task.strip():
            return self.config.task_type
        return self.retriever.resolve_task_type(task, self.config.task_type)[0]

    # ------------------------------------------------------------------ helpers
    def _fail(self, what: str, error: Exception) -> None:
        if self.config.on_error == "raise":
            if isinstance(error, HindsightError):
                raise error
            raise HindsightError(f"{what} failed: {error}") from error
        logger.warning("hindsight %s failed; the agent continues without it", what, exc_info=error)

    def _render(self, served: Served) -> Served:
        if served.memories:
            c = self.config
            own = served.namespace  # a memory from another (shared) namespace is labelled with its origin
            frame = self.block_locale(served.memories, served.task)
            served.block, shown = fit_experiences(
                served.memories,
                locale=frame,
                own_namespace=own,
                max_lines=c.max_lines,
                max_line_chars=c.max_line_chars,
                max_block_chars=c.max_block_chars,
            )
            served.memories = served.memories[:shown]  # what the block left out was not served (nor credited)
            served.task_prompt = build_task_prompt(
                served.task,
                served.memories,
                locale=frame,
                own_namespace=own,
                max_lines=c.max_lines,
                max_line_chars=c.max_line_chars,
                max_block_chars=c.max_block_chars,
            )
        else:
            served.task_prompt = served.task
        return served

    def _new(self, task: str, namespace: str | None, run_id: str | None, thread_id: str | None) -> Served:
        if not isinstance(task, str):
            raise ConfigurationError(f"task must be a string, got {type(task).__name__}")
        return Served(
            run_id=run_id or new_run_id(),
            task=task,
            namespace=self.namespace(namespace),
            thread_id=thread_id or None,
        )

    def _prepare(self, served: Served) -> set[str]:
        """Task type, and the conversation correction; returns the ids the correction just superseded."""
        rejected: set[str] = set()
        try:
            found = (
                detect_correction(self._detector, self.journal, served) if self.config.conversation_feedback else None
            )
            if found is not None:
                previous, detection = found
                result = self.feedback(
                    previous.run_id,
                    success=False,
                    comment=detection.correction,
                    namespace=previous.namespace,
                    detection_rule=detection.rule,
                )
                served.corrects = previous.run_id
                served.task_type = previous.task_type
                effects = result.run.feedback[-1].effects or []
                rejected = {e.memory_id for e in effects if e.action == "superseded"}
        except Exception as e:  # noqa: BLE001 - the error policy decides
            self._fail("conversation feedback", e)
        return rejected

    def _recalled(self, served: Served, result: RecallResult, rejected: set[str]) -> None:
        served.task_type = result.task_type
        served.memories = [m for m in result.memories if m.memory.memory_id not in rejected]
        served.withheld = [i for i in result.withheld if i not in rejected]

    def _type_only(self, served: Served) -> None:
        """The task type of a run that recalls nothing (recall off, or an empty task)."""
        if served.task_type is None:
            try:
                served.task_type = self.task_type_for(served.task)
            except Exception as e:  # noqa: BLE001 - the error policy decides
                self._fail("task type inference", e)

    # ------------------------------------------------------------------ serve
    def serve(
        self,
        task: str,
        *,
        namespace: str | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
        query: str | None = None,
    ) -> Served:
        """Recall experiences for ``task``, journal what was served, render the block.

        Never raises under ``on_error="log"`` (the agent then runs without experience).

        Args:
            task: The task text (the user's request).
            namespace: Namespace of the run; default the store's.
            run_id: The run id (pass the same to ``feedback``); default a fresh UUID.
            thread_id: The conversation thread; a turn that corrects the previous answer of
                the thread is applied as feedback on that run first.
            query: The text recall searches with; default ``task``. The chat adapters pass the
                conversation's last human turns (:func:`~langchain_hindsight.capture.messages.recall_query`);
                the task stays what is journaled, reflected on and shown in the block.
        """
        served = self._new(task, namespace, run_id, thread_id)
        rejected = self._prepare(served)
        if self.config.recall and _has_text(task, served):
            try:
                result = self.retriever.recall_result(
                    _query(task, query), k=self.k, task_type=served.task_type, namespace=served.namespace
                )
                self._recalled(served, result, rejected)
            except Exception as e:  # noqa: BLE001
                self._fail("recall", e)
        self._type_only(served)
        self._render(served)  # first: the journal records what the block shows
        try:
            start_run(self.journal, served)
        except Exception as e:  # noqa: BLE001
            self._fail("journal", e)
        return served

    async def aserve(
        self,
        task: str,
        *,
        namespace: str | None = None,
        run_id: str | None = None,
        thread_id: str | None = None,
        query: str | None = None,
    ) -> Served:
        """Async :meth:`serve` (store and journal I/O off the event loop)."""
        served = self._new(task, namespace, run_id, thread_id)
        rejected = await asyncio.to_thread(self._prepare, served)
        if self.config.recall and _has_text(task, served):
            try:
                result = await self.retriever.arecall_result(
                    _query(task, query), k=self.k, task_type=served.task_type, namespace=served.namespace
                )
                self._recalled(served, result, rejected)
            except Exception as e:  # noqa: BLE001
                self._fail("recall", e)
        await asyncio.to_thread(self._type_only, served)
        self._render(served)  # first: the journal records what the block shows
        try:
            await asyncio.to_thread(start_run, self.journal, served)
        except Exception as e:  # noqa: BLE001
            self._fail("journal", e)
        return served

    # ------------------------------------------------------------------ credit
    def _own_ids(self, record: RunRecord) -> list[str]:
        """The served ids a run's outcome applies to: all, or in a pinned session its own namespace's only."""
        ids = record.served_ids
        if self.config.namespace is None or not ids:
            return ids
        stored = {u.memory_id for u in self.store.get_many(ids, namespace=record.namespace)}
        return [i for i in ids if i in stored]

    def _conclude(self, served: Served, trajectory: Trajectory) -> None:
        """Apply the outcome to what the journal says was served, credit once, journal the end."""
        try:
            record = run_record(self.journal, served)
            apply_outcome(
                self.store,
                self.journal,
                record,
                trajectory,
                ids=self._own_ids(record),
                to_memories=self.config.apply_outcome,
                uses=judge_run(self.store, record, trajectory),
            )
        except Exception as e:  # noqa: BLE001
            self._fail("outcome feedback", e)

    # ------------------------------------------------------------------ reflect
    def _reflect(self, trajectory: Trajectory) -> tuple[list[MemoryUnit], Future[list[MemoryUnit]] | None]:
        reflector = self.reflector
        if not self.config.reflect or reflector is None:
            return [], None
        try:
            if isinstance(reflector, BackgroundReflector):
                return [], submit_background(reflector, self.journal, trajectory)
            produced = list(reflector.reflect(trajectory))
            journal_produced(self.journal, trajectory, produced)
            return produced, None
        except Exception as e:  # noqa: BLE001
            self._fail("reflection", e)
            return [], None

    async def _areflect(self, trajectory: Trajectory) -> list[MemoryUnit]:
        reflector = self.reflector
        if not self.config.reflect or reflector is None:
            return []
        try:
            if isinstance(reflector, BackgroundReflector):
                submit_background(reflector, self.journal, trajectory)
                return []
            produced = list(await reflector.areflect(trajectory))
            await asyncio.to_thread(journal_produced, self.journal, trajectory, produced)
            return produced
        except Exception as e:  # noqa: BLE001
            self._fail("reflection", e)
            return []

    # ------------------------------------------------------------------ finish
    def _align(self, served: Served | None, trajectory: Trajectory) -> tuple[Served, Trajectory]:
        if served is None:
            served = Served(run_id=trajectory.run_id, task=trajectory.task, namespace=trajectory.namespace)
            served.task_type = trajectory.task_type or self.task_type_for(trajectory.task)
        changes: dict[str, Any] = {"run_id": served.run_id, "namespace": served.namespace}
        if served.task:
            changes["task"] = served.task
        if trajectory.task_type is None and (served.task_type or self.task_type):
            changes["task_type"] = served.task_type or self.task_type
        if served.memories:
            changes["metadata"] = {**trajectory.metadata, "served_memory_ids": list(served.memory_ids)}
        return served, trajectory.model_copy(update=changes)

    def finish(self, served: Served | None, trajectory: Trajectory) -> list[MemoryUnit]:
        """The task ended: apply its outcome to the served memories, journal it, reflect.

        Success credit is applied once per run and recorded in the journal, so a
        later rejection (:meth:`feedback` with ``success=False``, or a correcting
        turn in the thread) takes it back exactly.

        Returns:
            The memory units reflection stored (empty when reflection is off,
            queued in the background, found nothing, or failed under ``"log"``).
        """
        served, trajectory = self._align(served, trajectory)
        self._conclude(served, trajectory)
        return self._reflect(trajectory)[0]

    async def afinish(self, served: Served | None, trajectory: Trajectory) -> list[MemoryUnit]:
        """Async :meth:`finish` (store writes in a worker thread, the reflection model awaited)."""
        served, trajectory = self._align(served, trajectory)
        await asyncio.to_thread(self._conclude, served, trajectory)
        return await self._areflect(trajectory)

    def on_trajectory(self, trajectory: Trajectory) -> Future[list[MemoryUnit]] | None:
        """A captured run ended (``TrajectoryRecorder(on_finish=...)``): journal, credit and reflect it.

        What a hindsight retriever served inside the run (an LCEL chain with
        ``hs.retriever``) is journaled as served and credited like an adapter's.
        Runs an adapter already served (its run id is in the journal) are left to that
        adapter. Returns the background future when reflection was queued.
        """
        try:
            self.journal.get(trajectory.run_id, namespace=trajectory.namespace)
            return None
        except RunNotFoundError:
            pass
        items = [i for i in trajectory.metadata.get(SERVED_KEY) or [] if isinstance(i, Mapping)]
        spaces = {str(i.get("namespace") or "") for i in items}
        if len(spaces) == 1 and "" not in spaces and trajectory.namespace == self.namespace(None):
            trajectory = trajectory.model_copy(update={"namespace": spaces.pop()})  # the run used that namespace
        served, trajectory = self._align(None, trajectory)
        try:
            served.memories = served_from_items(self.store, items, served.namespace)
            start_run(self.journal, served)
        except Exception as e:  # noqa: BLE001
            self._fail("journal", e)
        self._conclude(served, trajectory)
        return self._reflect(trajectory)[1]

    # ------------------------------------------------------------------ feedback
    def feedback(
        self,
        run_id: str,
        *,
        success: bool | None = None,
        comment: str | None = None,
        namespace: str | None = None,
        detection_rule: str | None = None,
    ) -> FeedbackResult:
        """Apply a user's verdict on a run to the memories that run was served (journaled, undoable).

        ``success=False`` takes back exactly the run's success credit. A ``comment``
        with ``success`` not ``True`` is a correction: a new ``user_feedback`` memory
        that *supersedes* only the served memories it contradicts (same subject,
        another prescription); the others, another correction on a different point
        included, stay as they are. ``success=False`` without a comment: the failure
        debit (−0.1), never on a user's own correction. ``success=True`` credits
        (+0.05) once per run. See :mod:`~langchain_hindsight.session._verdict`.
        ``detection_rule`` (what recognised a feedback typed in the conversation) goes
        into the journal's feedback entry.

        Raises:
            RunNotFoundError: the journal has no such run.
            ConfigurationError: nothing to record (no verdict and no comment).
        """
        if success is not None and not isinstance(success, bool):
            raise ConfigurationError(f"success must be True, False or None, got {success!r}")
        text = comment.strip() if isinstance(comment, str) else ""
        if success is None and not text:
            raise ConfigurationError("give success=True/False, a comment, or both")
        record = self.journal.get(run_id, namespace=namespace)
        correction = self._correction_unit(text, record) if text and success is not True else None
        return record_verdict(
            self.store,
            self.journal,
            record,
            success,
            text,
            ids=self._own_ids(record),
            correction=correction,
            rule=detection_rule,
        )

    async def afeedback(
        self,
        run_id: str,
        *,
        success: bool | None = None,
        comment: str | None = None,
        namespace: str | None = None,
    ) -> FeedbackResult:
        """Async :meth:`feedback` (store and journal I/O off the event loop)."""
        return await asyncio.to_thread(
            lambda: self.feedback(run_id, success=success, comment=comment, namespace=namespace)
        )

    def undo_feedback(self, run_id: str, *, namespace: str | None = None) -> RunRecord:
        """Revert exactly what the run's newest feedback did, and journal the undo.

        States come back as the feedback entry recorded them; a superseded memory is
        active again; the correction it created is archived (restorable); the credit
        is restored. Several verdicts are undone newest first, one per call.

        Returns:
            The run's record, ending with the undo entry (``kind="undo"``, its ``effects``).

        Raises:
            RunNotFoundError: the journal has no such run.
            FeedbackNotFoundError: the run has no feedback to undo.
            FeedbackAlreadyUndoneError: its feedback is already undone (nothing changed).
        """
        return revert_feedback(self.store, self.journal, self.journal.get(run_id, namespace=namespace))[0]

    async def aundo_feedback(self, run_id: str, *, namespace: str | None = None) -> RunRecord:
        """Async :meth:`undo_feedback`."""
        return await asyncio.to_thread(lambda: self.undo_feedback(run_id, namespace=namespace))

    def _correction_unit(self, text: str, record: RunRecord) -> MemoryUnit | None:
        reflector = self.reflector
        if isinstance(reflector, BackgroundReflector):
            inner = reflector.reflector
            reflector = inner if isinstance(inner, Reflector) else None
        if reflector is None:
            templates, vocabulary = get_reflection_templates(self.locale), self.store.vocabulary
        else:
            templates, vocabulary = reflector.templates, reflector.vocabulary
        if self.config.locale is None:  # no locale set: the correction is stored in the language it was typed in
            templates = get_reflection_templates("zh" if query_script(text) == "cjk" else "en")
        return correction_unit(text, record, templates=templates, vocabulary=vocabulary)


def _has_text(task: str, served: Served) -> bool:
    """Whether the task has text to recall for; an empty task (a turn with no words) skips recall, logged at DEBUG.

    Recall refuses a blank query (:func:`~langchain_hindsight._checks.check_query`); an agent whose task is empty
    runs on without experience rather than fail.
    """
    if task.strip():
        return True
    logger.debug("run %s: the task has no text, recall skipped", served.run_id)
    return False


def _query(task: str, query: str | None) -> str:
    """What recall searches with: ``query`` when it has text, else the task."""
    if query is None or not query.strip():
        return task
    return query
