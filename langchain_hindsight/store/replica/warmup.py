"""When a database namespace's replica is read: after a process's first recalls, in a thread, the database answering.

A store on a database that feeds its changes (Postgres) recalls from an in-process replica
(``replica.synced``), but reading a namespace whole costs ~0.1 ms per memory (1.2 s at 10k, 9 s at
100k), paid by the first search of every process; the database answers one recall in one statement
in tens of milliseconds. So the first :attr:`ReplicaWarmup.after` recalls of a namespace in a process are
answered by the database (the same ranking: an exact dense arm where the replica would mirror the
vectors, its index above that, and the same BM25; see ``store/search.py``), and the one that reaches
that count starts reading the replica in a thread of its own. Short processes (a CLI call, a
serverless worker, a test) therefore never read it; long ones do once, without a recall waiting.

Consistency: the read is one snapshot query at the collection's revision ``R``; the next recall
after it finished takes it in (on the caller's thread, under the store's lock) and brings it from
``R`` to the latest revision through the change feed before answering, as every search does. Until
then the database answers, which sees every committed write, this process's included.

One owner per namespace's read: the :class:`ReplicaWarmup` of the store's
:class:`~langchain_hindsight.store.replica.replica.Replica`. No thread exists before that count is
reached; :meth:`ReplicaWarmup.close` (the store's close) asks a running read to stop at its next
slice and joins every thread it started.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_hindsight.store.replica.synced import SyncedNamespace

__all__ = ["Read", "ReplicaWarmup"]

logger = logging.getLogger(__name__)

Read = Callable[[Callable[[], bool]], SyncedNamespace | None]
"""Reads a namespace's replica whole; its argument says whether to stop early (then it returns ``None``)."""


@dataclass
class _Reading:
    """One namespace's read in its thread: what it found, or what it raised, once :attr:`done` is set."""

    thread: threading.Thread | None = None
    done: threading.Event = field(default_factory=threading.Event)
    result: SyncedNamespace | None = None
    error: Exception | None = None


class ReplicaWarmup:
    """Counts the recalls the database answers per namespace and reads the replica once they reach :attr:`after`.

    Args:
        after: Recalls of a namespace the database answers before its replica is read in a thread
            (0: never in a thread; the store reads it at the first search, as it answers).
    """

    def __init__(self, after: int) -> None:
        self.after = max(0, int(after))
        self._recalls: dict[str, int] = {}
        self._readings: dict[str, _Reading] = {}
        self._abandoned: list[_Reading] = []  # reads whose result is not wanted any more, joined at close
        self._stop = threading.Event()

    def recalls(self, namespace: str) -> int:
        """How many recalls of ``namespace`` the database answered since its replica was last dropped or read."""
        return self._recalls.get(namespace, 0)

    def reading(self, namespace: str) -> bool:
        """Whether a read of ``namespace``'s replica was started and not yet taken in (or discarded)."""
        return namespace in self._readings

    def answered(self, namespace: str, read: Read) -> None:
        """The database answered a recall of ``namespace``: at the :attr:`after`-th, start ``read`` in a thread."""
        count = self._recalls[namespace] = self._recalls.get(namespace, 0) + 1
        if count < self.after or namespace in self._readings or self._stop.is_set():
            return
        reading = _Reading()
        reading.thread = threading.Thread(
            target=self._run, args=(reading, read), name=f"hindsight-replica-read[{namespace}]", daemon=True
        )
        self._readings[namespace] = reading
        logger.debug("reading the replica of %r in the background after %d recalls", namespace, count)
        reading.thread.start()

    def _run(self, reading: _Reading, read: Read) -> None:
        try:
            reading.result = read(self._stop.is_set)
        except Exception as e:  # noqa: BLE001 - not lost: take() raises it on the store's thread
            reading.error = e
        finally:
            reading.done.set()

    def take(self, namespace: str) -> tuple[bool, SyncedNamespace | None]:
        """``(True, replica)`` once ``namespace``'s read finished (taken once; ``None``: the collection was dropped
        meanwhile), else ``(False, None)``.

        Raises:
            Exception: what the read raised (the count starts again: a later recall reads again).
        """  # noqa: D205
        reading = self._readings.get(namespace)
        if reading is None or not reading.done.is_set():
            return False, None
        del self._readings[namespace]
        self._recalls.pop(namespace, None)
        if reading.thread is not None:
            reading.thread.join()
        if reading.error is not None:
            raise reading.error
        return True, reading.result

    def discard(self, namespace: str | None = None) -> None:
        """Forget the count and any read of ``namespace`` (``None``: of every namespace): what they read is stale."""
        names = list(self._readings) if namespace is None else [namespace]
        for name in names:
            reading = self._readings.pop(name, None)
            if reading is not None:
                self._abandoned.append(reading)
        if namespace is None:
            self._recalls.clear()
        else:
            self._recalls.pop(namespace, None)
        running = []
        for reading in self._abandoned:  # join the finished ones now, keep the others for close()
            if not reading.done.is_set():
                running.append(reading)
            elif reading.thread is not None:
                reading.thread.join()
        self._abandoned = running

    def close(self) -> None:
        """Ask every running read to stop (at its next slice of records) and join its thread; no read starts after."""
        self._stop.set()
        for reading in [*self._readings.values(), *self._abandoned]:
            if reading.thread is not None:
                reading.thread.join()
        self._readings.clear()
        self._abandoned.clear()
        self._recalls.clear()
