"""``BackgroundReflector``: reflection off the agent's hot path (a bounded queue and worker threads)."""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from collections import OrderedDict
from collections.abc import Collection
from concurrent.futures import Future
from typing import Any, Protocol, get_args

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight.errors import ConfigurationError, ReflectionError
from langchain_hindsight.types import MemoryUnit, Outcome, Trajectory

__all__ = ["BackgroundReflector", "SupportsReflect"]

logger = logging.getLogger(__name__)

_STOP = object()


class SupportsReflect(Protocol):
    """What :class:`BackgroundReflector` runs: anything with ``reflect(trajectory)`` (a ``Reflector``)."""

    def reflect(self, traj: Trajectory, /) -> list[MemoryUnit]:
        """Extract and store the units of ``traj``; returns the stored units."""
        ...


@refuse_unknown_keywords
class BackgroundReflector:
    """Reflect on finished trajectories in worker threads, so the agent never waits for it.

    One reflection per task: a second ``submit`` of the same ``run_id`` returns the
    first future. The queue is bounded; when it is full, ``submit`` does not block
    the agent: the returned future fails with :class:`ReflectionError` (the
    recorder then keeps the trajectory, and you can reflect on it later). Errors
    are logged once per task and set on its future; they never reach the agent.
    ``close()`` (also called at interpreter exit) finishes queued work first.

    Nothing starts at construction: the worker threads start, and the exit hook
    is registered, at the first trajectory queued for reflection.

    Example:
        .. code-block:: python

            from langchain_hindsight import Reflector, TrajectoryRecorder
            from langchain_hindsight.reflection.reflector import BackgroundReflector

            background = BackgroundReflector(Reflector(store=store))
            recorder = TrajectoryRecorder(on_finish=background.submit)   # write trigger: each finished run
            agent.invoke(inputs, config={"callbacks": [recorder]})      # returns without waiting
            background.flush()                                          # e.g. before exiting a script
            background.close()

    Args:
        reflector: The :class:`~langchain_hindsight.reflection.reflector.Reflector` to run
            (anything with ``reflect(trajectory)``).
        max_queue: Trajectories waiting at most; more are refused (never blocking).
        workers: Worker threads (1 keeps writes in submission order).
        triggers: Outcomes that trigger reflection (default: success and failure).
            A trajectory with user feedback is always reflected.
        remember: How many run ids are remembered for de-duplication.
    """

    def __init__(
        self,
        reflector: SupportsReflect,
        *,
        max_queue: int = 100,
        workers: int = 1,
        triggers: Collection[Outcome] = ("success", "failure"),
        remember: int = 10_000,
    ) -> None:
        for name, value in (("max_queue", max_queue), ("workers", workers), ("remember", remember)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"{name} must be a positive int, got {value!r}")
        unknown = set(triggers) - set(get_args(Outcome))
        if isinstance(triggers, str) or unknown:
            raise ConfigurationError(f"triggers must be a collection of {get_args(Outcome)}, got {triggers!r}")
        if not callable(getattr(reflector, "reflect", None)):
            raise ConfigurationError("reflector must have a reflect(trajectory) method")
        self.reflector = reflector
        self.triggers = frozenset(triggers)
        self.remember = remember
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queue)
        self._futures: OrderedDict[str, Future[list[MemoryUnit]]] = OrderedDict()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending = 0
        self._closed = False
        self.workers = workers
        self._threads: list[threading.Thread] = []

    @property
    def started(self) -> bool:
        """Whether the worker threads are running (they start at the first queued trajectory)."""
        with self._lock:
            return bool(self._threads)

    def _start_workers(self) -> None:
        """Start the workers and register the exit hook, once (called with ``self._lock`` held)."""
        if self._threads:
            return
        self._threads = [
            threading.Thread(target=self._work, name=f"hindsight-reflect-{i}", daemon=True) for i in range(self.workers)
        ]
        for thread in self._threads:
            thread.start()
        atexit.register(self.close)  # normal interpreter exit finishes queued work (workers are daemons)

    def submit(self, trajectory: Trajectory) -> Future[list[MemoryUnit]]:
        """Queue ``trajectory`` for reflection; returns at once with a future of the stored units.

        Never raises for a full queue or a closed reflector (the future carries the error),
        so it is safe as ``TrajectoryRecorder(on_finish=...)``.
        """
        if not isinstance(trajectory, Trajectory):
            raise ConfigurationError(f"expected a Trajectory, got {type(trajectory).__name__}")
        with self._lock:
            existing = self._futures.get(trajectory.run_id)
            if existing is not None:
                return existing
            future: Future[list[MemoryUnit]] = Future()
            has_feedback = any(s.type == "feedback" for s in trajectory.steps)
            if self._closed:
                future.set_exception(ReflectionError("BackgroundReflector is closed"))
                return future
            if trajectory.outcome not in self.triggers and not has_feedback:
                logger.debug("run %s: outcome %s is not a reflection trigger", trajectory.run_id, trajectory.outcome)
                future.set_result([])
                return future
            self._start_workers()  # before the put: a worker is waiting when the item arrives
            try:
                self._queue.put_nowait((future, trajectory))
            except queue.Full:
                logger.warning(
                    "reflection queue full (%d); run %s not reflected", self._queue.maxsize, trajectory.run_id
                )
                future.set_exception(ReflectionError(f"reflection queue full; run {trajectory.run_id} not reflected"))
                return future
            self._pending += 1
            self._futures[trajectory.run_id] = future
            while len(self._futures) > self.remember:
                self._futures.popitem(last=False)
            return future

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            future, trajectory = item
            try:
                if future.set_running_or_notify_cancel():
                    try:
                        result = self.reflector.reflect(trajectory)
                    except Exception as e:  # noqa: BLE001 - background work: log once, hand the error to the future
                        logger.warning("background reflection of run %s failed: %s", trajectory.run_id, e)
                        future.set_exception(e)
                    else:
                        future.set_result(result)
            finally:
                with self._idle:
                    self._pending -= 1
                    if self._pending == 0:
                        self._idle.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued reflection is done. Returns False if ``timeout`` (seconds) ran out."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout=timeout)

    @property
    def pending(self) -> int:
        """Reflections queued or running."""
        with self._lock:
            return self._pending

    def close(self, timeout: float | None = None) -> None:
        """Stop accepting work, finish what is queued, stop the workers (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = list(self._threads)
        if not threads:
            return  # never started: nothing queued, no threads, no exit hook
        atexit.unregister(self.close)
        for _ in threads:
            self._queue.put(_STOP)  # after the queued work: FIFO keeps it
        for thread in threads:
            thread.join(timeout)

    def __enter__(self) -> BackgroundReflector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
