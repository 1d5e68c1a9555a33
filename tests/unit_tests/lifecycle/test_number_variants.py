"""Issue 33 point 5: lessons that differ only in run-specific values are one lesson with its evidence count.

Four failed runs of ``把第N周的周报发给张经理`` (or ``Send the week N report``) leave one avoid lesson whose
``evidence`` counts them, on write and, for lessons stored before the mask, in ``Lifecycle.maintain`` (journaled
in the merge report, undoable with ``unmerge``). Values that are the prescription never merge: ``超时设为30秒`` /
``60秒``, ``小于`` / ``大于1万行``, ``端口8080`` / ``5432``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from langchain_hindsight import Lifecycle
from langchain_hindsight._statements import generalise, lesson_key
from langchain_hindsight.prompts import REFLECTION_EN, REFLECTION_ZH, ReflectionTemplates
from langchain_hindsight.reflection._rules import RuleSettings, apply_rules
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit, Step, Trajectory
from langchain_hindsight.ui.views import Console
from tests.fakes import NgramEmbeddings

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _failed_run(task: str, n: int) -> Trajectory:
    return Trajectory(
        run_id=f"run-{n}",
        task=task,
        outcome="failure",
        steps=[
            Step(type="tool_call", tool_name="send_email", tool_args={"to": "zhang@example.com"}),
            Step(type="error", tool_name="send_email", error_type="SMTPError", error_message="mailbox unavailable"),
        ],
    )


@pytest.mark.parametrize(
    ("templates", "task"),
    [
        (REFLECTION_ZH, "把第{n}周的周报发给张经理"),
        (REFLECTION_ZH, "把第{n}周周报发给张经理"),
        (REFLECTION_EN, "Send the week {n} report to Manager Zhang"),
        (REFLECTION_EN, "Send the {n}th week summary to Manager Zhang"),
    ],
)
def test_four_failed_runs_that_differ_in_the_week_are_one_lesson(
    memory_store: MemoryStore, templates: ReflectionTemplates, task: str
) -> None:
    settings = RuleSettings(templates=templates, task_type="email", namespace=memory_store.namespace)
    results = []
    for n in (1, 2, 3, 4):
        (lesson,) = [u for u in apply_rules(_failed_run(task.format(n=n), n), settings) if "avoid" in u.tags]
        results.append(memory_store.add(lesson))
    assert [r.action for r in results] == ["added", "merged", "merged", "merged"]
    (stored,) = memory_store.list_units(status="active")
    assert stored.evidence == 4
    assert "<n>" in stored.content
    assert task.format(n=1) not in stored.content
    assert {u.task_description for u in [stored]} <= {task.format(n=n) for n in (1, 2, 3, 4)}  # the run's own


def _old_lesson(i: int, week: int, *, locale: str = "zh") -> MemoryUnit:
    """An avoid lesson as c351316 stored it: the week unmasked in its text."""
    t = REFLECTION_ZH if locale == "zh" else REFLECTION_EN
    task = f"把第{week}周的周报发给张经理" if locale == "zh" else f"Send the week {week} report to Manager Zhang"
    return MemoryUnit(
        memory_id=f"{locale}{i}",
        content=t.rule_avoid.format(task=task, reason=t.rule_unknown_reason, action=""),
        task_description=task,
        task_type="email",
        source="rule",
        run_id=f"run-{locale}-{i}",
        created_at=T0 + timedelta(days=i),
        last_accessed_at=T0 + timedelta(days=i),
    )


@pytest.mark.parametrize("locale", ["zh", "en"])
def test_maintain_folds_number_variants_stored_before_and_can_undo(memory_store: MemoryStore, locale: str) -> None:
    units = [_old_lesson(i, week, locale=locale) for i, week in enumerate((1, 2, 3, 4))]
    memory_store.add_many(units, dedupe=False)
    assert memory_store.count(status="active") == 4
    report = Lifecycle(memory_store).maintain(now=T0 + timedelta(days=5))
    assert report.merge.removed == 3
    ((keeper_id, folded),) = report.merge.merged.items()
    keeper = memory_store.get(keeper_id)
    assert keeper.evidence == 4
    assert keeper.content == generalise(units[0].content)
    assert "<n>" in keeper.content
    assert "run-specific" in report.merge.reasons[keeper_id]
    assert "evidence 1 → 4" in report.merge.reasons[keeper_id]
    restored = Lifecycle(memory_store).unmerge(keeper_id)
    assert sorted(u.memory_id for u in restored) == sorted(folded)
    assert memory_store.count(status="active") == 4


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("把接口超时设为30秒", "把接口超时设为60秒"),
        ("数据量小于1万行时用A方法", "数据量大于1万行时用A方法"),
        ("订单服务的端口设为8080", "用户服务的端口设为5432"),
        ("订单服务的端口设为8080", "订单服务的端口设为5432"),
        ("Set the API timeout to 30 seconds", "Set the API timeout to 60 seconds"),
        ("Point the orders service at port 8080", "Point the orders service at port 5432"),
        ("每天最多调用接口500次", "每天最多调用接口1000次"),
    ],
)
def test_values_that_are_the_lesson_never_merge(memory_store: MemoryStore, first: str, second: str) -> None:
    units = [
        MemoryUnit(
            memory_id=f"v{i}",
            content=REFLECTION_ZH.rule_avoid.format(task=text, reason=REFLECTION_ZH.rule_unknown_reason, action=""),
            task_description=text,
            source="rule",
            run_id=f"r{i}",
        )
        for i, text in enumerate((first, second))
    ]
    assert lesson_key(units[0]) != lesson_key(units[1])
    results = memory_store.add_many(units)
    assert "merged" not in [r.action for r in results]  # a change (perhaps a supersede), never a duplicate
    assert {u.memory_id for u in memory_store.list_units(status="active")} | {
        u.memory_id for u in memory_store.list_units(status="superseded")
    } == {"v0", "v1"}
    assert Lifecycle(memory_store).maintain().merge.merged == {}


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("把第3周的周报发给张经理", "把第<n>周的周报发给张经理"),
        ("把第十二周的周报发给张经理", "把第<n>周的周报发给张经理"),
        ("Send the week 3 report", "Send the week <n> report"),
        ("the 3rd week summary", "the <n> week summary"),
        ("close issue #42", "close issue #<n>"),
        ("处理工单#101的退款", "处理工单#<n>的退款"),
        ("生成Q3销售报告", "生成Q<n>销售报告"),
        ("生成3月份的销售报表", "生成<n>月份的销售报表"),
        ("导出2026-01-01的订单", "导出<date>的订单"),
        ("12月3号的数据", "<date>的数据"),
    ],
)
def test_generalise_masks_ordinals_that_name_the_runs_object(text: str, masked: str) -> None:
    assert generalise(text) == masked


@pytest.mark.parametrize("text", ["超时设为30秒", "端口8080", "小于1万行", "每3月检查一次", "3个月内", "1月度报表"])
def test_generalise_keeps_quantities(text: str) -> None:
    assert generalise(text) == text


def _inferred(i: int, week: int, *, locale: str) -> MemoryUnit:
    """A lesson the reflection model inferred from a failed run (``agent_inference``), naming the run's week."""
    if locale == "zh":
        task = f"把第{week}周的周报发给张经理"
        content = f"发送第{week}周周报前先把附件压缩到10MB以内，第2步要确认收件人。"
    else:
        task = f"Send the week {week} report to Manager Zhang"
        content = f"Before sending the week {week} report, compress the attachment below 10 MB."
    return MemoryUnit(
        memory_id=f"i{locale}{i}",
        content=content,
        task_description=task,
        task_type="email",
        source="agent_inference",
        run_id=f"run-i-{locale}-{i}",
    )


@pytest.mark.parametrize("locale", ["zh", "en"])
def test_inferred_lessons_that_name_the_runs_week_are_one_lesson(memory_store: MemoryStore, locale: str) -> None:
    units = [_inferred(i, week, locale=locale) for i, week in enumerate((1, 2, 3, 4))]
    assert len({lesson_key(u) for u in units}) == 1
    results = [memory_store.add(u) for u in units]
    assert [r.action for r in results] == ["added", "merged", "merged", "merged"]
    assert "run-specific" in results[1].reason
    assert memory_store.get(units[0].memory_id).evidence == 4
    # stored apart before: maintain folds them, masking only the run's own week (第2步 and 10MB are the lesson)
    with MemoryStore(backend=InMemoryBackend(), embeddings=NgramEmbeddings()) as other:
        other.add_many(units, dedupe=False)
        report = Lifecycle(other).maintain()
        ((keeper_id, _folded),) = report.merge.merged.items()
        keeper = other.get(keeper_id)
        assert keeper.evidence == 4
        assert "<n>" in keeper.content
        assert "10" in keeper.content
        assert locale == "en" or "第2步" in keeper.content


def test_an_inferred_fact_keeps_values_its_task_does_not_name(memory_store: MemoryStore) -> None:
    units = [
        MemoryUnit(
            memory_id=f"x{i}",
            content=text,
            task_description="配置订单服务",
            source="agent_inference",
            run_id=f"r{i}",
        )
        for i, text in enumerate(("订单服务的超时设为30秒，第1步先备份。", "订单服务的超时设为60秒，第2步先备份。"))
    ]
    assert lesson_key(units[0]) != lesson_key(units[1])


def test_the_console_leaves_number_variants_to_the_merge_pass(memory_store: MemoryStore) -> None:
    """The console's merge list shows pairs for a person to judge: number variants are not among them."""
    units = [_old_lesson(i, week) for i, week in enumerate((1, 2, 3, 4))]
    memory_store.add_many(units, dedupe=False)
    assert Console(memory_store).near_duplicates(memory_store.namespace) == []
