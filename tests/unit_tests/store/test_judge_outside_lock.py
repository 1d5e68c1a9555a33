"""A write judge that may be slow (a chat model) is asked outside the store's lock, and its answer confirmed inside.

``add`` / ``add_many`` with dedupe and a judge other than the rules ask it in a pre-pass that reads the neighbours
and decides without the store's lock or a transaction; the write plan then reads and decides again under the lock,
replaying the answer to a question asked before and asking again (logged) when what the judge would see changed.
The Postgres case (another process's write of the namespace does not wait) is in
``tests/integration_tests/store/test_postgres.py``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import pytest

from benchmarks.supersede_judge import FlatEmbeddings
from langchain_hindsight.store import _store_writes
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit
from langchain_hindsight.writes import Neighbour, WriteDecision

ASKED_AGAIN = "changed since the write judge was asked outside the lock, so it was asked again"


def _fact(content: str) -> MemoryUnit:
    return MemoryUnit(content=content, task_type="general", kind="fact", source="user_feedback")


def _in_thread(work: Callable[[], Any]) -> bool:
    """Run ``work`` in another thread; whether it finished within a few seconds (it would wait for a held lock)."""
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(timeout=5)
    return not thread.is_alive()


class Judge:
    """A scripted judge: ``first`` runs during its first call; it answers ``conflict`` with the nearest neighbour
    on its first call and ``then`` after it; every call's question is kept (``shown``).
    """

    def __init__(self, first: Callable[[], object] = lambda: None, then: Literal["add", "conflict"] = "add") -> None:
        self.first, self.then = first, then
        self.shown: list[list[Neighbour]] = []

    def judge(self, unit: MemoryUnit, neighbours: Sequence[Neighbour]) -> WriteDecision:
        self.shown.append(list(neighbours))
        if len(self.shown) == 1:
            self.first()
            return WriteDecision("conflict", neighbours[0].unit.memory_id, "the model says they conflict")
        target = neighbours[0].unit.memory_id if self.then != "add" else None
        return WriteDecision(self.then, target, "the model, asked again")


@pytest.fixture(name="judged")
def judged_store() -> Iterator[tuple[MemoryStore, Judge]]:
    """A store in memory whose every pair of texts is 1.0 similar (every stored unit is a neighbour), and its judge."""
    judge = Judge()
    with MemoryStore(backend=InMemoryBackend(), embeddings=FlatEmbeddings(), judge=judge) as store:
        yield store, judge


def _lock_is_free(store: MemoryStore) -> bool:
    free: list[bool] = []

    def take() -> None:
        free.append(store.lock.acquire(blocking=False))
        if free[-1]:
            store.lock.release()

    assert _in_thread(take)
    return free[0]


@pytest.mark.parametrize("how", ["add", "add_many", "share"])
def test_the_judge_is_asked_once_and_without_the_stores_lock(
    judged: tuple[MemoryStore, Judge], how: str, caplog: pytest.LogCaptureFixture
) -> None:
    store, judge = judged
    free: list[bool] = []
    judge.first = lambda: free.append(_lock_is_free(store))  # a recall in another thread needs this lock
    old = store.add(_fact("The weekly report goes to the sales manager."), namespace="team", dedupe=False).unit
    new = _fact("The weekly report goes to the finance director.")
    with caplog.at_level(logging.INFO, logger="langchain_hindsight.store"):
        if how == "share":
            mine = store.add(new, namespace="me", dedupe=False).unit
            result = store.share([mine.memory_id], namespace="me", to_namespace="team")[0]
        else:
            written = store.add(new, namespace="team") if how == "add" else store.add_many([new], namespace="team")[0]
            assert (written.action, written.related_ids) == ("superseded", (old.memory_id,))
            result = written.unit
    assert free == [True]
    assert len(judge.shown) == 1  # the write plan replayed the answer: the same question, not asked again
    assert result.supersedes == old.memory_id
    assert store.get(old.memory_id, namespace="team").status == "superseded"
    assert not any(ASKED_AGAIN in m for m in caplog.messages)


def test_a_batch_is_judged_once_in_an_empty_namespace(judged: tuple[MemoryStore, Judge]) -> None:
    store, judge = judged
    free: list[bool] = []
    judge.first = lambda: free.append(_lock_is_free(store))
    first, second = store.add_many([_fact("Deploy on Tuesdays."), _fact("Deploy on Thursdays.")])
    assert free == [True]
    assert len(judge.shown) == 1  # the second unit's question names the first (new in this batch): asked once
    assert (second.action, second.related_ids) == ("superseded", (first.memory_id,))


@pytest.mark.parametrize("change", ["new content", "new confidence", "discard", "add closer"])
def test_neighbours_changed_while_the_judge_was_asked_are_judged_again_under_the_lock(
    judged: tuple[MemoryStore, Judge], change: str, caplog: pytest.LogCaptureFixture
) -> None:
    store, judge = judged
    target = store.add(_fact("The weekly report goes to the sales manager."), dedupe=False).unit
    other = store.add(_fact("Invoices are sent on the first working day."), dedupe=False).unit
    changes: dict[str, Callable[[], object]] = {
        "new content": lambda: store.update(target.memory_id, content="The weekly report goes to the head of sales."),
        "new confidence": lambda: store.update(target.memory_id, confidence=0.7),  # the same ids, another question
        "discard": lambda: store.discard([target.memory_id]),
        "add closer": lambda: store.add(_fact("The weekly report goes to the CEO."), dedupe=False),
    }
    finished: list[bool] = []
    judge.first = lambda: finished.append(_in_thread(changes[change]))  # another thread, while the judge thinks
    with caplog.at_level(logging.INFO, logger="langchain_hindsight.store"):
        result = store.add(_fact("The weekly report goes to the finance director."))
    assert finished == [True]
    assert len(judge.shown) == 2  # asked again, on what is stored now
    shown = {n.unit.memory_id: n.unit for n in judge.shown[1]}
    assert shown == {u.memory_id: u for u in store.list_units(status="active") if u.memory_id != result.memory_id}
    # the first answer (supersede the target as it was) is not applied: the second one ("add") is
    assert (result.action, result.unit.supersedes) == ("added", None)
    assert store.get(other.memory_id).status == "active"
    if change != "discard":
        assert store.get(target.memory_id).status == "active"
    assert any(result.memory_id in m and ASKED_AGAIN in m for m in caplog.messages)


def test_a_changed_target_is_superseded_as_it_is_now() -> None:
    judge = Judge(then="conflict")
    with MemoryStore(backend=InMemoryBackend(), embeddings=FlatEmbeddings(), judge=judge) as store:
        target = store.add(_fact("The weekly report goes to the sales manager."), dedupe=False).unit
        judge.first = lambda: _in_thread(lambda: store.update(target.memory_id, confidence=0.7))
        result = store.add(_fact("The weekly report goes to the finance director."))
        assert (result.action, result.related_ids) == ("superseded", (target.memory_id,))
        assert result.previous[0].confidence == 0.7  # the version stored when the plan ran, not the one first shown
        assert store.get(target.memory_id).confidence == pytest.approx(0.7 * store.policy.supersede_factor)


def test_a_re_run_write_plan_does_not_ask_the_judge_again(
    judged: tuple[MemoryStore, Judge], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database re-runs a plan after a serialization failure: the model is not asked twice for one question."""
    store, judge = judged
    store.add(_fact("The weekly report goes to the sales manager."), dedupe=False)
    atomic = store.backend.atomic

    def rolled_back_once(key: str, fn: Callable[[], Any]) -> Any:
        with monkeypatch.context() as m:  # the first attempt writes nothing that stays
            m.setattr(_store_writes, "write_plan", lambda *_: None)
            m.setattr(store.replica, "reindex", lambda *_, **__: None)
            fn()
        return atomic(key, fn)

    monkeypatch.setattr(store.backend, "atomic", rolled_back_once)
    assert store.add(_fact("The weekly report goes to the finance director.")).action == "superseded"
    assert len(judge.shown) == 1


@pytest.mark.parametrize("judge", [None, Judge()], ids=["rules", "model"])
def test_only_a_judge_other_than_the_rules_gets_a_pre_pass(
    judge: Judge | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    neighbours = _store_writes._neighbours

    def counted(*args: Any) -> list[list[Neighbour]]:
        reads.append("read")
        return neighbours(*args)

    monkeypatch.setattr(_store_writes, "_neighbours", counted)
    with MemoryStore(backend=InMemoryBackend(), embeddings=FlatEmbeddings(), judge=judge) as store:
        store.add(_fact("用户偏好用Java写后端服务。"), dedupe=False)
        result = store.add(_fact("用户偏好用Python写后端服务。"))
    assert result.action == "superseded"  # the rules find the contradiction; the scripted judge calls it one
    assert len(reads) == (1 if judge is None else 2)  # the rule judge's path reads once, inside its write plan
