"""Issue 33 point 3: a new statement supersedes an active one only when subject *and* condition match.

Statements about the same subject under different conditions (size, time, person, purpose, environment, file
type, scope) stand side by side, whoever judged; both are served, each with its condition, and the block does
not call them a conflict. The article's Java → Python change still supersedes, in Chinese, English and across.
The false-supersede rate on a held-out set is measured by ``benchmarks/supersede_judge.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from benchmarks.supersede_judge import FlatEmbeddings, evaluate, load_split
from langchain_hindsight import HindsightRetriever, _claims
from langchain_hindsight._claims import claim_of, relation
from langchain_hindsight.recall.injection import format_experiences
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit
from langchain_hindsight.writes import Neighbour, WriteDecision
from tests.fakes import NgramEmbeddings

CONDITIONAL = [
    ("数据量小于1万行时用pandas处理。", "数据量大于1万行时用duckdb处理。"),
    ("在Windows上用gbk编码读取导出文件。", "在Linux上用utf-8编码读取导出文件。"),
    ("When the table has fewer than 10,000 rows, use pandas.", "When the table has more than 10,000 rows, use Spark."),
    ("On weekdays, send the daily report at 9am.", "On weekends, send the daily report at noon."),
    ("数据量小于1万行时用pandas。", "When the data has more than 10k rows, use duckdb."),
]
"""Pairs the rules already kept apart on c351316 (a judge that says "conflict" still replaced them)."""

NOT_A_CHANGE = [
    # c351316 read these as "contradicts" and superseded the older: two values swapped, or another aspect added
    ("用户偏好用Python写脚本。", "用户偏好用PyCharm写代码。"),
    ("The user prefers Python for scripting.", "The user prefers PyCharm as the IDE."),
    ("周报要发给张经理。", "周报要在周五下午发出。"),
]

UPDATES = [
    ("用户偏好用Java。", "用户偏好用Python。"),
    ("用户偏好用Java写后端服务。", "用户偏好用Python写后端服务。"),
    ("The user prefers Java.", "The user prefers Python."),
    ("The user prefers Java for backend services.", "The user prefers Python for backend services."),
    ("用户偏好用Java。", "The user prefers Python."),
    ("数据量小于1万行时用A方法。", "数据量小于1万行时用C方法。"),  # the same condition, another prescription
]


def _store() -> MemoryStore:
    return MemoryStore(backend=InMemoryBackend(), embeddings=NgramEmbeddings())


def _fact(content: str) -> MemoryUnit:
    return MemoryUnit(content=content, task_type="general", kind="fact", source="user_feedback")


class AlwaysConflict:
    """A judge (an over-eager model) that calls every similar neighbour a contradiction."""

    def judge(self, unit: MemoryUnit, neighbours: Sequence[Neighbour]) -> WriteDecision:
        return WriteDecision("conflict", neighbours[0].unit.memory_id, "the model says they conflict")


class AlwaysDuplicate:
    def judge(self, unit: MemoryUnit, neighbours: Sequence[Neighbour]) -> WriteDecision:
        return WriteDecision("duplicate", neighbours[0].unit.memory_id, "the model says they are the same")


@pytest.mark.parametrize(("old", "new"), CONDITIONAL)
@pytest.mark.parametrize("judge", [AlwaysConflict, AlwaysDuplicate])
def test_no_judge_replaces_a_fact_that_holds_under_another_condition(old: str, new: str, judge: type) -> None:
    with MemoryStore(backend=InMemoryBackend(), embeddings=FlatEmbeddings(), judge=judge()) as store:
        first = store.add(_fact(old))
        second = store.add(_fact(new))
        assert second.action == "added", second.reason
        assert "condition" in second.reason or "threshold" in second.reason
        assert {u.content for u in store.list_units(status="active")} == {old, new}
        assert store.get(first.memory_id).status == "active"


@pytest.mark.parametrize(("old", "new"), [*CONDITIONAL, *NOT_A_CHANGE])
def test_the_rule_judge_keeps_both_and_the_block_shows_each_with_its_condition(old: str, new: str) -> None:
    with _store() as store:
        first = store.add(_fact(old))
        second = store.add(_fact(new))
        assert second.action == "added", second.reason
        active = store.list_units(status="active")
        assert {u.content for u in active} == {old, new}
        assert relation(old, new) != "contradicts"
        block = format_experiences([second.unit, first.unit])
        assert old.rstrip("。.") in block
        assert new.rstrip("。.") in block
        assert "存在不同结论" not in block  # a conditional pair is not a conflict
        assert "disagree" not in format_experiences([second.unit, first.unit], locale="en")


@pytest.mark.parametrize(("old", "new"), UPDATES)
def test_the_java_to_python_change_still_supersedes(old: str, new: str) -> None:
    with _store() as store:
        first = store.add(_fact(old))
        second = store.add(_fact(new))
        assert second.action == "superseded", second.reason
        assert second.related_ids == (first.memory_id,)
        assert [u.content for u in store.list_units(status="active")] == [new]


def test_scoped_apart_names_why() -> None:
    assert _claims.scoped_apart(claim_of("数据量小于1万行时用A方法"), claim_of("数据量大于1万行时用B方法")) == (
        "different conditions"
    )
    assert _claims.scoped_apart(claim_of("用户偏好用Java"), claim_of("用户偏好用Python")) is None
    assert _claims.scoped_apart(claim_of("Use pandas for files under 10k rows."), claim_of("Use duckdb.")) is not None


def test_the_held_out_pairs_keep_every_users_fact() -> None:
    """The benchmark's held-out split: no pair that must stay is superseded (the numbers: benchmarks/results)."""
    rows = evaluate(load_split("heldout"))
    assert len(rows) >= 150
    keep = [r for r in rows if r["expect"] == "keep"]
    assert len(keep) / len(rows) >= 0.4
    assert [r["id"] for r in keep if r["action"] == "superseded"] == []
    assert {r["lang"] for r in rows} == {"zh", "en", "mixed"}


@pytest.mark.parametrize(
    ("old", "new", "query"),
    [
        (
            "数据量小于1万行时用pandas处理。",
            "数据量大于1万行时用duckdb处理。",
            "这份销售数据用什么方法处理？数据量多少行都有",
        ),
        (
            "When the table has fewer than 10,000 rows, use pandas.",
            "When the table has more than 10,000 rows, use Spark.",
            "Which tool should process the sales table rows?",
        ),
    ],
)
def test_conditional_facts_are_both_served_with_their_conditions(old: str, new: str, query: str) -> None:
    with _store() as store:
        store.add(_fact(old))
        store.add(_fact(new))
        retriever = HindsightRetriever(store=store, min_relevance=None)
        served = retriever.recall(query, k=5)
        assert [m.memory.content for m in served][:2] == [new, old]  # both, the newer first
        block = format_experiences(served, locale="zh" if "数据" in old else "en")
        assert ("1万行" if "数据" in old else "10,000 rows") in block
        assert block.count("1万行" if "数据" in old else "10,000 rows") == 2  # each line keeps its condition
        assert "存在不同结论" not in block
        assert "disagree" not in block


@pytest.mark.parametrize(
    ("first", "second"),
    [("lesson 1", "lesson 2"), ("seed 0 batch 1 unit 3", "seed 0 batch 1 unit 4"), ("第1条备注", "第2条备注")],
)
def test_numbered_siblings_are_two_items_not_a_change(first: str, second: str) -> None:
    """One number for another with no prescription around it names another item: both stay active."""
    with _store() as store:
        store.add(_fact(first))
        result = store.add(_fact(second))
        assert result.action != "superseded", result.reason
        assert sorted(u.content for u in store.list_units(status="active")) == sorted([first, second])
