"""Writes that re-plan: a write whose premise another writer changed re-reads, re-plans, and says what it did.

At c351316 a supersede of a unit that another process had just superseded raised
``MemoryNotFoundError`` ("no active memory among [...]"): 14-17 of 40 concurrent
``HindsightStore.put`` calls, and ``Hindsight.feedback`` with a correction. The two-process
property test is ``tests/integration_tests/adapters/test_concurrent_writers.py``; these are the
deterministic interleavings, on one store (what another process would have written is written
first, then the write planned on the older read runs).
"""

from __future__ import annotations

import logging

import pytest

from langchain_hindsight.adapters.langgraph_store import HindsightStore, key_of
from langchain_hindsight.errors import ConfigurationError, MemoryNotFoundError, WriteConflictError
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit
from langchain_hindsight.writes import Target, plan_supersede


def _unit(content: str, **kwargs: object) -> MemoryUnit:
    kwargs.setdefault("source", "user_feedback")
    return MemoryUnit(content=content, task_type="general", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("old", "theirs", "ours"),
    [
        ("客户甲公司希望通过邮件联系。", "客户甲公司希望通过电话联系。", "客户甲公司希望通过微信联系。"),
        ("Send the weekly report on Monday.", "Send the weekly report on Friday.", "Send it on Thursday."),
        ("周报周一发送。", "Send the weekly report on Friday.", "周报周四发送。"),
    ],
    ids=["zh", "en", "cross"],
)
def test_a_supersede_of_a_version_another_writer_replaced_replaces_the_newest(
    memory_store: MemoryStore, old: str, theirs: str, ours: str
) -> None:
    shown = memory_store.add(_unit(old), dedupe=False).unit  # what our run was shown
    other = memory_store.supersede([shown.memory_id], _unit(theirs), reason="the other process's correction")
    result = memory_store.supersede([shown.memory_id], _unit(ours), reason="our correction")
    assert result.related_ids == (other.memory_id,)
    assert "re-planned" in result.reason
    assert other.memory_id in result.reason
    active = memory_store.list_units(status="active")
    assert [u.content for u in active] == [ours]
    assert [u.memory_id for u in memory_store.history(result.memory_id)] == [
        result.memory_id,
        other.memory_id,
        shown.memory_id,
    ]  # nothing lost: every version stays in the chain


def test_a_chain_is_followed_to_its_head_and_a_forgotten_target_writes_nothing(memory_store: MemoryStore) -> None:
    first = memory_store.add(_unit("用户偏好用Java写后端服务。"), dedupe=False).unit
    second = memory_store.supersede(first.memory_id, _unit("用户偏好用Go写后端服务。"), reason="a")
    third = memory_store.supersede(second.memory_id, _unit("用户偏好用Rust写后端服务。"), reason="b")
    result = memory_store.supersede(first.memory_id, _unit("用户偏好用Python写后端服务。"), reason="c")
    assert result.related_ids == (third.memory_id,)
    memory_store.forget([u.memory_id for u in memory_store.history(result.memory_id)])
    before = memory_store.count()
    with pytest.raises(MemoryNotFoundError, match="forgotten"):
        memory_store.supersede(first.memory_id, _unit("The backend is written in Kotlin."), reason="d")
    assert memory_store.count() == before


def test_the_planner_is_pure_and_says_why() -> None:
    a, b = _unit("lesson a"), _unit("lesson b")
    targets = [Target("x", a.evolve(status="superseded"), b), Target(a.memory_id, a, a)]
    planned = plan_supersede(targets, "ns", source="user_feedback")
    assert [u.memory_id for u in planned.replace] == [b.memory_id, a.memory_id]
    assert planned.notes == (f"x was superseded by another write first: its newest version {b.memory_id} is "
                             "superseded instead",)  # fmt: skip
    with pytest.raises(MemoryNotFoundError, match="archived"):
        plan_supersede([Target("x", a.evolve(status="archived"), None)], "ns", source="user_feedback")
    with pytest.raises(ConfigurationError, match="never replaces a more trusted one"):
        plan_supersede(targets, "ns", source="tool_output")


def test_feedback_on_a_version_another_writer_replaced_stays_with_that_version(
    memory_store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The credit was earned by the text the run was shown: it is not moved to a newer text it never saw."""
    shown = memory_store.add(_unit("Read Chinese CSV files with encoding utf-8-sig."), dedupe=False).unit
    newer = memory_store.supersede(shown.memory_id, _unit("读取中文CSV时用gbk编码。"), reason="other").unit
    with caplog.at_level(logging.INFO, logger="langchain_hindsight.store._store_writes"):
        written = memory_store.record_feedback([shown.memory_id], success=True)
    assert [u.memory_id for u in written] == [shown.memory_id]
    assert written[0].access_count == shown.access_count + 1
    assert memory_store.get(newer.memory_id).access_count == newer.access_count
    assert "recorded against that version (it is superseded now)" in caplog.text


def test_add_if_absent_refuses_a_taken_id_or_a_continuation_another_writer_made(memory_store: MemoryStore) -> None:
    root = memory_store.add(_unit("第一版：报销单周五前提交。", memory_id="mem_root"), dedupe=False, if_absent=True)
    n = memory_store.count()
    with pytest.raises(WriteConflictError, match="already stored"):
        memory_store.add(_unit("Expense reports are due on Friday.", memory_id="mem_root"), if_absent=True)
    memory_store.archive([root.memory_id])
    memory_store.add(_unit("第二版：报销单周四前提交。", supersedes="mem_root"), dedupe=False, if_absent=True)
    with pytest.raises(WriteConflictError, match="continued by another writer"):
        memory_store.add(_unit("Expense reports are due on Wednesday.", supersedes="mem_root"), if_absent=True)
    with pytest.raises(WriteConflictError, match="forgotten"):
        memory_store.add(_unit("Expense reports are due on Tuesday.", supersedes="mem_gone"), if_absent=True)
    assert memory_store.count() == n + 1  # only the second version was written
    assert memory_store.add(_unit("第三条：发票抬头写公司全称。", memory_id="mem_root")).memory_id != "mem_root"


def test_forget_with_successors_forgets_the_versions_written_since_the_chain_was_read(
    memory_store: MemoryStore,
) -> None:
    first = memory_store.add(_unit("The VPN password rotates monthly."), dedupe=False).unit
    later = memory_store.supersede(first.memory_id, _unit("VPN密码每周轮换。"), reason="newer").unit
    unrelated = memory_store.add(_unit("Lunch is at noon."), dedupe=False).unit
    assert memory_store.forget([first.memory_id], successors=True) == 2
    assert [u.memory_id for u in memory_store.list_units()] == [unrelated.memory_id]
    assert later.memory_id not in {u.memory_id for u in memory_store.list_units()}


def test_a_put_planned_on_a_stale_read_re_plans_and_leaves_one_active_version(memory_store: MemoryStore) -> None:
    """The three races of two ``HindsightStore`` writers on one key, each replayed in the order that broke it."""
    ns = ("users", "u1")
    mine, theirs = HindsightStore(memory_store), HindsightStore(memory_store)

    def active() -> list[MemoryUnit]:
        return [u for u in memory_store.list_units(namespace="users.u1", status="active") if key_of(u) == "k"]

    def race(op_value: dict[str, str], meanwhile: object) -> None:
        from langgraph.store.base import PutOp

        op, content, found = mine._plan(PutOp(ns, "k", op_value))  # planned on the key as it is now
        meanwhile()  # type: ignore[operator]
        mine._put_replanning(op, content, found)

    race({"content": "第一版：用户喜欢喝茶。"}, lambda: theirs.put(ns, "k", {"content": "The user likes coffee."}))
    assert [u.content for u in active()] == ["第一版：用户喜欢喝茶。"]  # created first by them: ours replaced it
    race({"content": "第二版：用户喜欢绿茶。"}, lambda: theirs.put(ns, "k", {"content": "The user likes black tea."}))
    assert [u.content for u in active()] == ["第二版：用户喜欢绿茶。"]  # superseded meanwhile: ours is newest
    race({"content": "第三版：用户喜欢白茶。"}, lambda: theirs.delete(ns, "k"))
    assert [u.content for u in active()] == ["第三版：用户喜欢白茶。"]  # deleted meanwhile: ours starts it again
    item = mine.get(ns, "k")
    assert item is not None
    assert item.value == {"content": "第三版：用户喜欢白茶。"}
