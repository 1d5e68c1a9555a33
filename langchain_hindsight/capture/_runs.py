"""The run registry of :class:`~langchain_hindsight.capture.recorder.TrajectoryRecorder`.

The agent's working memory: live trajectories (one per root run, keyed by
``run_id`` so concurrent runs never mix) and the finished ones still retained,
behind one lock. The recorder turns callback events into steps; this class
stores them, finishes a trajectory when its root run ends, hands it to
``on_finish`` and serves the public reads and corrections (``get``,
``mark_outcome``, ``add_feedback``, ``release``).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from time import time
from typing import Any, get_args
from uuid import UUID

from langchain_hindsight._checks import check_int
from langchain_hindsight._text import clip_text
from langchain_hindsight.capture._steps import Live, Raw, conclude, run_uuid, snapshot, to_step
from langchain_hindsight.capture._text import final_from_outputs, is_interrupt, task_from_inputs
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import REFLECTION_ZH, ReflectionTemplates
from langchain_hindsight.types import Outcome, Trajectory

__all__ = ["NAMESPACE_KEY", "TASK_TYPE_KEY", "RunRegistry"]

logger = logging.getLogger("langchain_hindsight.capture.recorder")  # one logger for the recorder and its registry

_OUTCOMES = frozenset(get_args(Outcome))
NAMESPACE_KEY = "hindsight_namespace"
"""Run metadata key naming the trajectory's namespace."""
TASK_TYPE_KEY = "hindsight_task_type"
"""Run metadata key naming the trajectory's task type."""


class RunRegistry:
    """Live and finished trajectories of root runs, thread-safe (see :class:`TrajectoryRecorder` for the options)."""

    def __init__(
        self,
        *,
        on_finish: Callable[[Trajectory], object] | None = None,
        max_content_chars: int = 2000,
        max_finished: int = 100,
        max_live: int = 1000,
        namespace: str = "default",
        templates: ReflectionTemplates | None = None,
    ) -> None:
        for name, value in (
            ("max_content_chars", max_content_chars),
            ("max_finished", max_finished),
            ("max_live", max_live),
        ):
            check_int(name, value)
        if max_content_chars < 20:
            raise ConfigurationError(f"max_content_chars must be at least 20, got {max_content_chars}")
        if not isinstance(namespace, str) or not namespace.strip():
            raise ConfigurationError("namespace must be a non-empty string")
        if on_finish is not None and not callable(on_finish):
            raise ConfigurationError("on_finish must be callable")
        self.on_finish = on_finish
        self.max_content_chars = max_content_chars
        self.max_finished = max_finished
        self.max_live = max_live
        self.namespace = namespace
        self._marker = (templates or REFLECTION_ZH).truncation_marker
        self._lock = threading.Lock()
        self._root_of: dict[UUID, UUID] = {}
        self._live: OrderedDict[UUID, Live] = OrderedDict()
        self._finished: OrderedDict[UUID, Trajectory] = OrderedDict()
        self._last: Trajectory | None = None
        self._warned = False

    # ------------------------------------------------------------------ public API
    @property
    def last_trajectory(self) -> Trajectory | None:
        """The most recently finished trajectory (with concurrent runs: whichever ended last)."""
        return self._last

    def get(self, run_id: UUID | str) -> Trajectory | None:
        """The trajectory of root run ``run_id``: a snapshot while it runs (working memory), or the finished one."""
        rid = run_uuid(run_id)
        with self._lock:
            live = self._live.get(rid)
            if live is not None:
                return snapshot(live, outcome="unknown", ended=None, final=None, error=None)
            return self._finished.get(rid)

    def live_run_ids(self) -> list[UUID]:
        """Root runs still in progress, oldest first."""
        with self._lock:
            return list(self._live)

    def finished_run_ids(self) -> list[UUID]:
        """Finished runs still retained, oldest first."""
        with self._lock:
            return list(self._finished)

    def mark_outcome(self, run_id: UUID | str, outcome: Outcome) -> Trajectory:
        """Set the outcome explicitly (it wins over the automatic success/failure).

        Call it during the run so that ``on_finish`` sees it, or afterwards to
        correct a retained trajectory before reflecting on it.

        Raises:
            ConfigurationError: unknown outcome or run.
        """
        if outcome not in _OUTCOMES:
            raise ConfigurationError(f"outcome must be one of {sorted(_OUTCOMES)}, got {outcome!r}")
        rid = run_uuid(run_id)
        with self._lock:
            live = self._live.get(rid)
            if live is not None:
                live.outcome_override = outcome
                return snapshot(live, outcome=outcome, ended=None, final=None, error=None)
            done = self._finished.get(rid)
            if done is None:
                raise ConfigurationError(f"no run {rid} in this recorder (never seen, or released)")
            updated = done.model_copy(update={"outcome": outcome})
            self._store_finished(updated)
            return updated

    def add_feedback(self, run_id: UUID | str, text: str) -> Trajectory:
        """Append a user-feedback step to a live or retained run; returns the updated trajectory.

        To write the correction to memory immediately, also call
        :meth:`langchain_hindsight.reflection.reflector.Reflector.record_user_feedback`.

        Raises:
            ConfigurationError: empty text or unknown run.
        """
        if not isinstance(text, str) or not text.strip():
            raise ConfigurationError("feedback text must be a non-empty string")
        content, cut = clip_text(text.strip(), self.max_content_chars, self._marker)
        rid = run_uuid(run_id)
        raw: Raw = ("feedback", content, time(), None, None, None, None, None, cut)
        with self._lock:
            live = self._live.get(rid)
            if live is not None:
                live.steps.append(raw)
                return snapshot(live, outcome="unknown", ended=None, final=None, error=None)
            done = self._finished.get(rid)
            if done is None:
                raise ConfigurationError(f"no run {rid} in this recorder (never seen, or released)")
            updated = done.model_copy(update={"steps": [*done.steps, to_step(raw)]})
            self._store_finished(updated)
            return updated

    def release(self, run_id: UUID | str) -> bool:
        """Forget a run (live or finished). Returns whether it was held."""
        rid = run_uuid(run_id)
        with self._lock:
            live = self._live.pop(rid, None)
            if live is not None:
                self._root_of = {k: v for k, v in self._root_of.items() if v != rid}
            return live is not None or self._finished.pop(rid, None) is not None

    # ------------------------------------------------------------------ internals
    def _failed(self, event: str) -> None:
        """Log a callback failure once per recorder (later ones at debug); never raise into the agent."""
        if not self._warned:
            self._warned = True
            logger.warning("TrajectoryRecorder ignored an error in %s; capture may be incomplete", event, exc_info=True)
        else:
            logger.debug("TrajectoryRecorder ignored an error in %s", event, exc_info=True)

    def _clip(self, text: str) -> tuple[str, bool]:
        return clip_text(text, self.max_content_chars, self._marker)

    def _start(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        inputs: Any,
        metadata: dict[str, Any] | None,
    ) -> Live | None:
        """Register a run; a run without a known parent starts a trajectory. Returns its live trajectory."""
        with self._lock:
            root = self._root_of.get(parent_run_id) if parent_run_id is not None else None
            live = None if root is None else self._live.get(root)
            if root is not None and live is not None:
                self._root_of[run_id] = root  # the root's own key (LangChain may pass a caller's str run id)
                return live
        meta = dict(metadata or {})
        namespace = meta.get(NAMESPACE_KEY)
        task_type = meta.get(TASK_TYPE_KEY)
        live = Live(
            run_id=run_id,
            task=self._clip(task_from_inputs(inputs).strip())[0],
            started=time(),
            namespace=namespace if isinstance(namespace, str) and namespace.strip() else self.namespace,
            task_type=task_type if isinstance(task_type, str) and task_type.strip() else None,
            metadata={k: v for k, v in meta.items() if isinstance(v, str | int | float | bool)},
        )
        with self._lock:
            self._live[run_id] = live
            self._root_of[run_id] = run_id
            while len(self._live) > self.max_live:
                dropped, _ = self._live.popitem(last=False)
                self._root_of = {k: v for k, v in self._root_of.items() if v != dropped}
                logger.warning(
                    "TrajectoryRecorder dropped unfinished run %s (more than %d live)", dropped, self.max_live
                )
        return live

    def _add(self, run_id: UUID, raw: Raw) -> None:
        with self._lock:
            root = self._root_of.get(run_id)
            live = None if root is None else self._live.get(root)
            if live is not None:
                live.steps.append(raw)

    def _end(self, run_id: UUID, *, outputs: Any = None, error: BaseException | None = None) -> None:
        """A run ended; if it is a root, finish its trajectory."""
        with self._lock:
            root = self._root_of.pop(run_id, None)
            if root is None or root != run_id:
                return
            live = self._live.pop(run_id, None)
        if live is None:
            return
        self._finish(live, outputs, error)

    def _finish(self, live: Live, outputs: Any, error: BaseException | None) -> None:
        interrupted = error is not None and is_interrupt(error)
        failure: tuple[str, str, bool] | None = None
        if error is not None and not interrupted:
            message, cut = self._clip(str(error))
            failure = (type(error).__name__, message, cut)
        answer = final_from_outputs(outputs) if error is None else None
        traj = conclude(live, answer=answer, clip=self._clip, failure=failure, interrupted=interrupted)
        with self._lock:
            self._store_finished(traj)
            self._last = traj
        if self.on_finish is not None:
            result = self.on_finish(traj)
            if isinstance(result, Future):
                result.add_done_callback(functools.partial(self._release_done, run_uuid(live.run_id)))

    def _release_done(self, run_id: UUID, future: Future[Any]) -> None:
        if not future.cancelled() and future.exception() is None:
            with self._lock:
                self._finished.pop(run_id, None)

    def _store_finished(self, traj: Trajectory) -> None:
        rid = UUID(traj.run_id)
        self._finished[rid] = traj
        self._finished.move_to_end(rid)
        while len(self._finished) > self.max_finished:
            self._finished.popitem(last=False)
        if self._last is not None and self._last.run_id == traj.run_id:
            self._last = traj
