"""Run journal: records beside the memories (both backends), explain(), scrub(), namespaces and forget.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/test_journal.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

from langchain_hindsight.errors import RunNotFoundError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.recall.explain import explain_run
from langchain_hindsight.recall.scoring import score_memory
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit, ScoredMemory
from tests.unit_tests.store.store_backends import chroma_store_factory, store_factory  # noqa: F401 - fixtures
from tests.unit_tests.test_journal import T0


def _scored(unit: MemoryUnit, similarity: float) -> ScoredMemory:
    return score_memory(unit, similarity, task_type="data_cleaning", now=T0)


@pytest.fixture
def units(store: MemoryStore) -> list[MemoryUnit]:
    return [
        r.unit
        for r in store.add_many(
            [
                MemoryUnit(task_type="data_cleaning", content="读取中文CSV时指定encoding='utf-8-sig'。", tags=["csv"]),
                MemoryUnit(task_type="data_cleaning", content="Fill missing values before computing weekly totals."),
                MemoryUnit(
                    task_type="weekly_report", content="Weekly reports cover the last 7 days, Monday to Sunday."
                ),
            ]
        )
    ]


def test_run_lifecycle_is_recorded_and_survives_reopen(
    make_store: Callable[..., MemoryStore], units: list[MemoryUnit], store: MemoryStore
) -> None:
    journal = RunJournal(store)
    served = [_scored(units[0], 0.82), _scored(units[1], 0.55)]
    journal.start("run-1", task="清洗 sales.csv", task_type="清洗数据", served=served, now=T0)
    journal.add_produced("run-1", [units[2].memory_id])
    journal.add_feedback("run-1", text="编码对了", success=True, now=T0 + timedelta(minutes=2))
    journal.finish("run-1", outcome="success", now=T0 + timedelta(minutes=1))
    store.close()

    reopened = make_store()  # same directory, a new client: nothing lives only in memory
    record = RunJournal(reopened).get("run-1")
    assert record.task == "清洗 sales.csv"
    assert record.task_type == "data_cleaning"  # normalised by the store's vocabulary
    assert record.outcome == "success"
    assert record.started_at == T0
    assert record.ended_at == T0 + timedelta(minutes=1)
    assert record.served_ids == [units[0].memory_id, units[1].memory_id]
    assert record.served[0].breakdown == pytest.approx(served[0].breakdown)
    assert record.served[0].confidence == units[0].confidence
    assert record.produced == [units[2].memory_id]
    assert [(f.text, f.success) for f in record.feedback] == [("编码对了", True)]


def test_explain_orders_by_rank_and_names_the_main_factor(store: MemoryStore, units: list[MemoryUnit]) -> None:
    journal = RunJournal(store)
    journal.start("run-2", task="clean", served=[_scored(units[0], 0.9), _scored(units[2], 0.3)], now=T0)
    # The unit disappears without a forget (e.g. folded away by a merge pass): explain says so.
    store.collection(store.namespace, create=True).delete(ids=[units[2].memory_id])

    explanation = explain_run(journal, "run-2")
    first, second = explanation.memories
    assert first.served.rank == 1
    assert first.served.memory_id == units[0].memory_id
    assert first.status == "active"
    assert first.unit is not None
    # similarity contributes 0.5 * 0.9 = 0.45, more than any other factor
    assert first.main_factor == "similarity"
    assert next(name for name, _ in first.factors) == "similarity"
    assert first.factors == sorted(first.factors, key=lambda kv: kv[1], reverse=True)
    assert second.status == "forgotten"
    assert second.unit is None


def test_scrub_removes_ids_from_served_and_produced(store: MemoryStore, units: list[MemoryUnit]) -> None:
    journal = RunJournal(store)
    journal.start("a", task="t", served=[_scored(units[0], 0.9), _scored(units[1], 0.8)], now=T0)
    journal.add_produced("a", [units[1].memory_id, units[2].memory_id])
    journal.start("b", task="t", served=[_scored(units[2], 0.7)], now=T0)
    journal.start("c", task="t", served=[], now=T0)

    changed = journal.scrub([units[1].memory_id, units[2].memory_id])
    assert changed == 2
    a, b = journal.get("a"), journal.get("b")
    assert a.served_ids == [units[0].memory_id]
    assert a.produced == []
    assert b.served == []
    # No trace of the ids in any stored document.
    col = store.collection(store.namespace, "journal", create=True)
    docs = col.get(include=["documents"])["documents"]
    assert not any(units[1].memory_id in d or units[2].memory_id in d for d in docs)
    assert journal.scrub([units[1].memory_id]) == 0


def test_list_runs_filters_by_time_and_outcome(store: MemoryStore) -> None:
    journal = RunJournal(store)
    for day in range(5):
        journal.start(f"r{day}", task=f"day {day}", now=T0 + timedelta(days=day))
        journal.finish(f"r{day}", outcome="failure" if day % 2 else "success", now=T0 + timedelta(days=day))
    runs = journal.list_runs(since=T0 + timedelta(days=1), until=T0 + timedelta(days=4))
    assert [r.run_id for r in runs] == ["r3", "r2", "r1"]
    assert [r.run_id for r in journal.list_runs(outcome="failure")] == ["r3", "r1"]
    assert [r.run_id for r in journal.list_runs(limit=2)] == ["r4", "r3"]
    assert journal.last_started_at() == T0 + timedelta(days=4)
    assert journal.count() == 5


def test_forget_scrubs_the_journal(store: MemoryStore, units: list[MemoryUnit]) -> None:
    journal = RunJournal(store)
    journal.start("run-3", task="clean", served=[_scored(units[0], 0.9), _scored(units[1], 0.5)], now=T0)
    store.forget(units[1].memory_id, scrub=False)
    assert journal.get("run-3").served_ids == [units[0].memory_id]


def test_namespaces_are_separate_and_forget_namespace_removes_the_journal(store: MemoryStore) -> None:
    journal = RunJournal(store)
    journal.start("alice-run", task="t", namespace="alice", now=T0)
    journal.start("bob-run", task="t", namespace="bob", now=T0)
    assert [r.run_id for r in journal.list_runs(namespace="alice")] == ["alice-run"]
    # a run id is looked up in the journal's own namespace only, never in another tenant's
    with pytest.raises(RunNotFoundError):
        journal.finish("alice-run", outcome="success")
    assert journal.finish("alice-run", outcome="success", namespace="alice").namespace == "alice"

    store.forget(namespace="alice")
    with pytest.raises(RunNotFoundError):
        journal.get("alice-run", namespace="alice")
    assert journal.get("bob-run", namespace="bob").run_id == "bob-run"


def test_unknown_runs_raise_a_typed_error(store: MemoryStore) -> None:
    journal = RunJournal(store)
    with pytest.raises(RunNotFoundError, match="nope"):
        journal.finish("nope", outcome="success")
    with pytest.raises(KeyError):  # RunNotFoundError refines KeyError
        explain_run(journal, "nope")


async def test_async_twins_write_the_same_records(store: MemoryStore) -> None:
    journal = RunJournal(store)
    await journal.astart("as-1", task="async", now=T0)
    await journal.aadd_produced("as-1", ["m1"])
    await journal.aadd_feedback("as-1", text="ok", success=True)
    record = await journal.afinish("as-1", outcome="success")
    assert record.outcome == "success"
    assert record.produced == ["m1"]
    assert len(record.feedback) == 1
