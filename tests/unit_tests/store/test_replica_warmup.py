"""ReplicaWarmup: when a database namespace's replica is read, on which thread, and what close() leaves.

The database side (the recalls answered before the read, the read taken in and synced) is in
``tests/integration_tests/store/test_postgres_first_recall.py``; these need no server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from langchain_hindsight.errors import StoreError
from langchain_hindsight.store.replica.lexical import LexicalIndex
from langchain_hindsight.store.replica.synced import SyncedNamespace
from langchain_hindsight.store.replica.warmup import ReplicaWarmup


def _replica(rev: int) -> SyncedNamespace:
    return SyncedNamespace(rev, LexicalIndex(), None, False, "test")


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("hindsight-replica-read")]


def test_no_thread_before_the_count_then_one_read_taken_once() -> None:
    warmup = ReplicaWarmup(3)
    reads: list[str] = []

    def read(stopped: Callable[[], bool]) -> SyncedNamespace:
        reads.append(threading.current_thread().name)
        return _replica(7)

    for _ in range(2):
        warmup.answered("ns", read)
    assert _threads() == []
    assert warmup.take("ns") == (False, None)
    warmup.answered("ns", read)  # the third: the read starts in its own thread
    assert warmup.reading("ns")
    warmup._readings["ns"].done.wait(10)
    warmup.answered("ns", read)  # running or finished: not started twice
    finished, held = warmup.take("ns")
    assert finished
    assert held is not None
    assert held.rev == 7
    assert reads == ["hindsight-replica-read[ns]"]
    assert warmup.take("ns") == (False, None)  # taken once
    assert warmup.recalls("ns") == 0
    assert _threads() == []


def test_a_failed_read_is_raised_on_the_caller_and_the_count_starts_again() -> None:
    warmup = ReplicaWarmup(1)

    def read(stopped: Callable[[], bool]) -> SyncedNamespace:
        raise StoreError("record 'x' is corrupt")

    warmup.answered("ns", read)
    warmup._readings["ns"].done.wait(10)
    with pytest.raises(StoreError, match="corrupt"):
        warmup.take("ns")
    assert not warmup.reading("ns")
    assert warmup.recalls("ns") == 0


def test_close_stops_a_running_read_and_joins_it() -> None:
    warmup = ReplicaWarmup(1)
    started = threading.Event()
    seen: list[bool] = []

    def read(stopped: Callable[[], bool]) -> SyncedNamespace | None:
        started.set()
        while not stopped():  # a read between slices: it looks at stopped() and ends early
            threading.Event().wait(0.01)
        seen.append(True)
        return None

    warmup.answered("ns", read)
    assert started.wait(10)
    warmup.close()
    assert seen == [True]
    assert _threads() == []
    warmup.answered("other", read)  # closed: no read starts
    assert _threads() == []


def test_a_discarded_read_is_never_taken_and_is_joined_at_close() -> None:
    warmup = ReplicaWarmup(1)
    release = threading.Event()

    def read(stopped: Callable[[], bool]) -> SyncedNamespace:
        release.wait(10)
        return _replica(1)

    warmup.answered("ns", read)
    warmup.discard("ns")  # the namespace was dropped or re-embedded meanwhile: what it reads is stale
    release.set()
    assert warmup.take("ns") == (False, None)
    warmup.close()
    assert _threads() == []
