"""Randomized sequences of every write, checked after each step against what the backend holds.

A Hypothesis state machine adds (Chinese and English statements, restatements and contradictions, so merges and
supersedes happen), supersedes, rewrites, credits, archives, restores, forgets and discards units, runs the
lifecycle (decay, archiving, the merge pass and its undo), backs the store up and restores the backup elsewhere,
and reopens the store. After every step it checks what a user relies on:

- nothing written is lost: every id a write returned, and not forgotten or discarded since, is still stored;
- what recall reads is what is stored: the dense arm, the lexical arm and hybrid recall (the replica or the
  database, whichever this store reads) return only active units, each exactly as stored, and a deep enough
  search returns every active unit; a unit's own words find it;
- counts agree with the units listed, and a superseded unit's successor is stored;
- the same lesson is stored once: while only ``add`` and ``add_many`` brought statements in, no two active units
  in one scope make the same statement (a rewrite, a restore or a caller's supersede may bring a second copy).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, multiple, rule

from langchain_hindsight._statements import statement_key
from langchain_hindsight.errors import MemoryNotFoundError
from langchain_hindsight.lifecycle.maintenance import Lifecycle
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.store.transfer import export_units, read_backup
from langchain_hindsight.types import MemoryUnit, utcnow
from tests.fakes import NgramEmbeddings

STATEMENTS = [
    "周报统计上周一到上周日的数据。",
    "周报只统计本周一到本周日的数据。",
    "客户甲公司希望通过邮件联系。",
    "客户乙公司希望通过电话联系。",
    "客户甲公司希望通过电话联系。",
    "用户偏好用Python写后端服务。",
    "用户偏好用Java写后端服务。",
    "Read the ERP export with encoding='gbk'.",
    "read the ERP export with encoding=gbk",
    "Always set encoding='utf-8-sig' when reading the sales CSV.",
    "The weekly sales report uses a rolling 7-day window.",
    "The weekly report covers Monday to Sunday only.",
    "读取 sales.csv 之前先检查编码 check the encoding first",
]
SOURCES = ["agent_inference", "user_feedback", "rule", "tool_output"]
TASK_TYPES = ["data_cleaning", "report"]

Opener = Callable[[], MemoryStore]


def _memory_opener() -> Opener:
    backend, embeddings = InMemoryBackend(), NgramEmbeddings()
    return lambda: MemoryStore(backend=backend, embeddings=embeddings)


class StoreModel(RuleBasedStateMachine):
    """The store under random writes; ``opener`` opens it again on the same data."""

    opener: Opener
    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.store = self.opener()
        self.alive: set[str] = set()  # every id a write returned, not forgotten or discarded since
        self.orphaned: set[str] = set()  # units whose successor was forgotten or discarded
        self.deduped = True  # only add and add_many brought statements in so far
        self.probes = 0

    def teardown(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------ writes
    @rule(target=ids, content=st.sampled_from(STATEMENTS), source=st.sampled_from(SOURCES),
          task_type=st.sampled_from(TASK_TYPES), age=st.integers(0, 400))  # fmt: skip
    def add(self, content: str, source: str, task_type: str, age: int) -> str:
        """A lesson learned ``age`` days ago (the lifecycle decays and archives what has stayed idle)."""
        then = utcnow() - timedelta(days=age)
        unit = MemoryUnit(content=content, source=source, task_type=task_type, created_at=then, last_accessed_at=then)  # type: ignore[arg-type]
        result = self.store.add(unit)
        self.alive.add(result.memory_id)
        return result.memory_id

    @rule(target=ids, contents=st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=4))
    def add_many(self, contents: list[str]) -> object:
        results = self.store.add_many([MemoryUnit(content=c, task_type="report") for c in contents])
        self.alive.update(r.memory_id for r in results)
        return multiple(*(r.memory_id for r in results))

    @rule(target=ids, old=ids, content=st.sampled_from(STATEMENTS))
    def supersede(self, old: str, content: str) -> object:
        try:
            result = self.store.supersede(old, MemoryUnit(content=content, source="user_feedback"), reason="random")
        except MemoryNotFoundError:  # forgotten, discarded or archived, or its chain has no active version
            return multiple()
        self.deduped = False
        self.alive.add(result.memory_id)
        return result.memory_id

    @rule(memory_id=ids, content=st.sampled_from(STATEMENTS))
    def rewrite(self, memory_id: str, content: str) -> None:
        if memory_id in self.alive:
            self.deduped = False
            assert self.store.update(memory_id, content=content).content == content

    @rule(source=ids, into=ids)
    def restate(self, source: str, into: str) -> None:  # a second copy of a lesson, which the merge pass folds
        if {source, into} <= self.alive and source != into:
            original = self.store.get(source)
            self.deduped = False
            self.store.update(into, content=original.content, task_type=original.task_type, kind=original.kind)

    @rule(memory_id=ids, success=st.booleans())
    def credit(self, memory_id: str, success: bool) -> None:
        self.store.record_feedback([memory_id], success=success)

    @rule(memory_id=ids)
    def archive(self, memory_id: str) -> None:
        self.store.archive([memory_id])

    @rule(memory_id=ids)
    def restore(self, memory_id: str) -> None:
        self.deduped &= not self.store.restore([memory_id])

    def _removing(self, memory_id: str) -> None:
        removed = self._stored().get(memory_id)
        if removed is not None and removed.supersedes:
            self.orphaned.add(removed.supersedes)

    @rule(memory_id=consumes(ids))
    def forget(self, memory_id: str) -> None:
        self._removing(memory_id)
        self.store.forget(memory_id)
        self.alive.discard(memory_id)
        with pytest.raises(MemoryNotFoundError):
            self.store.get(memory_id)

    @rule(memory_id=consumes(ids))
    def discard(self, memory_id: str) -> None:
        self._removing(memory_id)
        self.store.discard([memory_id])
        self.alive.discard(memory_id)

    # ------------------------------------------------------------------ the lifecycle
    @rule()
    def maintain(self) -> None:  # decay, archive what stayed idle and low, fold duplicates
        Lifecycle(self.store).maintain()

    @rule(pick=st.integers(0, 10))
    def unmerge(self, pick: int) -> None:  # one of the units the merge pass folded others into (now archived)
        archived = {u.memory_id for u in self.store.list_units(status="archived")}
        keepers = [u.memory_id for u in self.store.list_units() if archived & set(u.merged_from)]
        if keepers:
            self.deduped &= not Lifecycle(self.store).unmerge(keepers[pick % len(keepers)])

    @rule()
    def back_up_and_restore_elsewhere(self) -> None:  # every unit comes back exactly, whatever its status
        out = io.StringIO()
        export_units(self.store, out, namespaces=[self.store.namespace])
        units, _ = read_backup(out.getvalue().splitlines())
        with _memory_opener()() as restored:
            restored.import_units(units)
            assert {u.memory_id: u.to_dict() for u in restored.list_units(namespace=self.store.namespace)} == {
                u.memory_id: u.to_dict() for u in self.store.list_units()
            }

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.store = self.opener()

    # ------------------------------------------------------------------ what a user relies on
    def _stored(self) -> dict[str, MemoryUnit]:
        return {u.memory_id: u for u in self.store.list_units()}

    @invariant()
    def nothing_written_is_lost(self) -> None:
        stored = self._stored()
        for status in ("active", "superseded", "archived"):
            listed = [u for u in stored.values() if u.status == status]
            assert self.store.count(status=status) == len(listed)  # type: ignore[arg-type]
        assert self.alive <= set(stored), f"lost: {sorted(self.alive - set(stored))}"
        for unit in stored.values():
            if unit.status == "superseded" and unit.memory_id not in self.orphaned:
                assert any(u.supersedes == unit.memory_id for u in stored.values()), unit

    @invariant()
    def the_same_lesson_is_stored_once(self) -> None:
        if not self.deduped:
            return
        keys = [(u.task_type, u.kind, statement_key(u.content)) for u in self.store.list_units(status="active")]
        assert len(keys) == len(set(keys)), sorted(keys)

    @invariant()
    def recall_reads_what_is_stored(self) -> None:
        stored = self._stored()
        active = {i: u for i, u in stored.items() if u.status == "active"}
        if not active:
            return
        self.probes += 1  # each check probes another active unit's own words
        probe = list(active.values())[self.probes % len(active)]
        deep = len(stored) + 5
        vector = self.store.embeddings.embed_query(probe.content)
        dense = self.store.search_by_vector(vector, k=deep)
        assert {u.memory_id for u, _, _ in dense} == set(active)
        for unit, _, _ in dense:
            assert unit.content == active[unit.memory_id].content
            assert unit.score_confidence == active[unit.memory_id].score_confidence
        candidates, lexical = self.store.hybrid_search(probe.content, vector, k=deep)
        assert set(candidates) == set(active)
        assert probe.memory_id in lexical  # its own words find it
        assert set(lexical) <= set(active)
        for memory_id, (unit, _) in candidates.items():
            assert (unit.content, unit.status) == (active[memory_id].content, "active")
        assert {i for i, _ in self.store.lexical_search(probe.content, k=deep)} == set(lexical)


def run(model: type[StoreModel], opens: Callable[[], Opener], *, examples: int, steps: int) -> None:
    """Run ``model`` for ``examples`` random sequences of at most ``steps`` steps; ``opens()`` gives each its opener."""

    class Run(model):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            self.opener = opens()
            super().__init__()

    Run.TestCase.settings = settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    Run.TestCase().runTest()


def test_random_writes_in_memory_lose_nothing_and_recall_reads_what_is_stored() -> None:
    run(StoreModel, _memory_opener, examples=40, steps=30)
