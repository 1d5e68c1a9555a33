"""What the agent did with the memories it was served: used, set aside, or no sign (issue 33, point 2).

The judge (:mod:`langchain_hindsight.session._use`) decides which served memories a run's
outcome may credit or debit. Every rule in zh, en and across the two, with hard negatives:
a memory's words quoted to reject it, ``不适用`` about something else, a number beyond the
block, a generic parameter value used by coincidence.
"""

from __future__ import annotations

from typing import Any

import pytest

from langchain_hindsight.session._use import agent_text, judge_uses, statement_refs
from langchain_hindsight.types import MemoryContext, MemoryUnit, Step, Trajectory

REPORT_FIX = MemoryUnit(
    content="用户纠正（任务：生成本周的销售周报）：周报只统计本周一到周日",
    source="user_feedback",
    task_type="weekly_report",
)
ADDRESS = MemoryUnit(
    content="发送邮件前先查通讯录确认收件人的邮箱地址",
    task_type="email",
    context=MemoryContext(tools_used=["lookup_contact"], parameters={"domain": "corp.example.com"}),
)
ENCODING = MemoryUnit(
    content="读取CSV时指定 encoding=utf-8",
    task_type="data_cleaning",
    context=MemoryContext(parameters={"encoding": "utf-8"}),
)
GBK = MemoryUnit(
    content="Read the customer export with encoding gbk, it is not UTF-8",
    task_type="data_cleaning",
    context=MemoryContext(parameters={"encoding": "gbk"}),
)
ROLLING_EN = MemoryUnit(content="The weekly sales report uses a rolling 7-day window", task_type="weekly_report")


def run(answer: str = "", *calls: tuple[str, dict[str, Any]], thoughts: tuple[str, ...] = ()) -> Trajectory:
    steps = [Step(type="thought", content=t) for t in thoughts]
    steps += [Step(type="tool_call", tool_name=name, tool_args=args) for name, args in calls]
    return Trajectory(run_id="r", task="t", steps=steps, final_answer=answer or None, outcome="failure")


def verdicts(served: list[MemoryUnit], trajectory: Trajectory) -> list[str]:
    return [u.verdict for u in judge_uses(served, trajectory)]


# ---------------------------------------------------------------------------- set aside
@pytest.mark.parametrize(
    "answer",
    [
        "第1条经验不适用，因为本任务是发邮件，不是生成周报。",
        "经验1与本任务无关：它讲的是周报的统计范围。",
        "第一条经验不适用。",
        "以上经验都不适用，直接发送。",
        "“周报只统计本周一到周日”这条经验和发邮件无关，已忽略。",  # restated, then rejected
        "周报只统计本周一到周日——这与发送邮件无关。",  # quotes the memory's words, rejects them
        "Experience 1 doesn't apply because this is an e-mail task.",  # en answer, zh block (numbers cross)
        "I ignored experience 1: it is about the report's date range.",
        "None of the experiences apply here.",
        "经验1：与本任务无关。",
    ],
)
def test_a_memory_the_agent_says_does_not_apply_is_set_aside_with_its_reason(answer: str) -> None:
    uses = judge_uses([REPORT_FIX], run(answer))
    assert [u.verdict for u in uses] == ["set_aside"]
    assert answer.split("，")[0].split(":")[0][:8] in uses[0].evidence  # the agent's own words are the reason


def test_set_aside_wins_over_the_memorys_own_words_in_the_answer() -> None:
    """Hard negative: the answer carries most of the statement (would count as followed), but rejects it."""
    follows = judge_uses([ROLLING_EN], run("Done: the weekly sales report uses a rolling 7-day window."))
    assert follows[0].verdict == "used"
    rejects = judge_uses(
        [ROLLING_EN], run("The rolling 7-day window for the weekly sales report does not apply to an e-mail.")
    )
    assert rejects[0].verdict == "set_aside"


def test_numbered_statements_pick_their_memory_and_a_number_beyond_the_block_names_nothing() -> None:
    served = [REPORT_FIX, ADDRESS]
    assert verdicts(served, run("第1条经验不适用；按第2条经验先确认了地址。")) == ["set_aside", "used"]
    assert verdicts(served, run("Experience 2 doesn't apply; following experience 1.")) == ["used", "set_aside"]
    assert verdicts(served, run("第1、2条经验都不适用。")) == ["set_aside", "set_aside"]
    assert verdicts(served, run("第5条经验不适用。")) == ["unclear", "unclear"]  # the block has 2
    assert verdicts(served, run("Experience 7 does not apply.")) == ["unclear", "unclear"]
    assert statement_refs("第1、3条经验不适用", 2) == ({1}, False)


def test_not_applying_about_something_else_sets_nothing_aside() -> None:
    """Hard negative: ``不适用`` / "doesn't apply" in the task's own output, about no memory."""
    served = [REPORT_FIX, ADDRESS]
    assert verdicts(served, run("该优惠券不适用于本订单，已按原价结算。")) == ["unclear", "unclear"]
    assert verdicts(served, run("The discount doesn't apply to this order; charged the full price.")) == [
        "unclear",
        "unclear",
    ]
    assert verdicts(served, run("邮件已发送，附件格式不适用于旧版Outlook。")) == ["unclear", "unclear"]


# ---------------------------------------------------------------------------- used
def test_said_applied_counts_as_use_in_both_languages() -> None:
    assert verdicts([REPORT_FIX, ADDRESS], run("按第2条经验，先查了通讯录。")) == ["unclear", "used"]
    assert verdicts([REPORT_FIX, ADDRESS], run("根据经验1，只统计了本周一到周日。")) == ["used", "unclear"]
    assert verdicts([ADDRESS], run("Following experience 1, I looked the address up first.")) == ["used"]


def test_followed_by_its_parameters_or_tools() -> None:
    assert verdicts([ADDRESS], run("已发送。", ("send_email", {"to": "zhang@corp.example.com"}))) == ["used"]
    assert verdicts([ADDRESS], run("已发送。", ("lookup_contact", {"name": "张经理"}))) == ["used"]
    assert verdicts([GBK], run("", ("read_file", {"path": "c.csv", "encoding": "GBK"}))) == ["used"]


def test_a_generic_parameter_value_is_no_evidence() -> None:
    """Decided: ``encoding="utf-8"`` is what any agent passes; it does not show the memory was followed."""
    assert verdicts([ENCODING], run("已读取。", ("read_file", {"path": "a.csv", "encoding": "utf-8"}))) == ["unclear"]
    assert verdicts([ENCODING], run("Read it as utf-8.")) == ["unclear"]


def test_exposure_alone_is_unclear() -> None:
    """The e-mail task served the weekly-report correction through the word 周报: no sign of use."""
    trajectory = run("发送失败：SMTP 超时。", ("send_email", {"to": "张经理", "subject": "第1周的周报"}))
    assert verdicts([REPORT_FIX], trajectory) == ["unclear"]


def test_only_the_agents_own_text_counts() -> None:
    """The task and tool results are not the agent's words; its thoughts and answer are."""
    trajectory = Trajectory(
        run_id="r",
        task="第1条经验不适用吗？",
        steps=[
            Step(type="tool_call", tool_name="search", tool_args={"q": "x"}),
            Step(type="tool_result", content="第1条经验不适用"),
            Step(type="thought", content="Experience 1 does not apply."),
        ],
        final_answer="done",
    )
    assert agent_text(trajectory) == "Experience 1 does not apply.\ndone"
    assert verdicts([REPORT_FIX], trajectory) == ["set_aside"]
    no_thought = trajectory.model_copy(update={"steps": trajectory.steps[:2]})
    assert verdicts([REPORT_FIX], no_thought) == ["unclear"]


def test_block_numbers_follow_the_journals_ranks() -> None:
    """A served memory deleted before the run ended leaves a gap: the others keep their numbers."""
    uses = judge_uses([ADDRESS], run("第2条经验不适用。"), numbers=[2])
    assert [u.verdict for u in uses] == ["set_aside"]


def test_a_key_value_written_in_the_statement_is_a_parameter() -> None:
    """``encoding='gbk'`` in the statement: a call passing it follows it; ``delimiter=';'`` is too short."""
    lesson = MemoryUnit(content="读取 ERP 导出的销售 CSV 时，read_csv 需要指定 encoding='gbk' 和 delimiter=';'")
    assert verdicts([lesson], run("done", ("read_csv", {"path": "sales.csv", "encoding": "gbk"}))) == ["used"]
    assert verdicts([lesson], run("done", ("read_csv", {"path": "sales.csv", "delimiter": ";"}))) == ["unclear"]
    assert verdicts([lesson], run("done", ("read_csv", {"path": "sales.csv"}))) == ["unclear"]


def test_an_avoid_lesson_is_not_followed_by_repeating_what_failed() -> None:
    avoid = MemoryUnit(
        content=(
            "执行“把第1周的周报发给张经理”时失败：SMTP timeout。"
            "下次避免重复同样的做法（send_email，参数to='张经理'），换一种方法。"
        ),
        tags=["avoid", "failure", "send_email"],
        context=MemoryContext(tools_used=["send_email"], parameters={"avoid": {"to": "张经理"}}),
    )
    assert verdicts([avoid], run("放弃。", ("send_email", {"to": "张经理"}))) == ["unclear"]
    assert verdicts([avoid], run("按第1条经验，换用 lookup_contact 先查地址。")) == ["used"]


@pytest.mark.parametrize(
    "answer",
    [
        "没有按第1条经验，改用了别的方法。",
        "I used a different window instead of experience 1.",
        "I did not follow experience 1: the task is an e-mail.",
    ],
)
def test_not_following_is_setting_aside_not_use(answer: str) -> None:
    """Hard negative: an applied-word (用了, used, follow) next to the number, negated."""
    assert verdicts([REPORT_FIX], run(answer)) == ["set_aside"]


@pytest.mark.parametrize(
    "answer",
    [
        "I followed experience 2 instead of experience 1.",
        "I used experience 2 rather than experience 1.",
        "Instead of experience 1, I followed experience 2.",
        "按第2条经验而不是第1条处理。",
        "我按第2条经验而非第1条。",
    ],
)
def test_a_choice_between_two_experiences_credits_one_and_sets_aside_the_other(answer: str) -> None:
    """"Instead of" names what was set aside after it; the words before it judge what comes before."""
    assert verdicts([REPORT_FIX, ROLLING_EN], run(answer)) == ["set_aside", "used"]


def test_rather_than_something_else_is_still_use() -> None:
    """Hard negative: the contrast names no experience after it, so the one before it was followed."""
    assert verdicts([REPORT_FIX], run("Following experience 1 rather than my habit.")) == ["used"]
