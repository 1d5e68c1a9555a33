"""Judge what was used, not what was shown (issue 33, point 2), on every door into the session.

The e-mail scenario of the issue: the user's weekly-report correction (``user_feedback``, 0.90) is served
to ``把第1周的周报发给张经理`` through the word 周报; the agent never follows it and the e-mail fails four
times. On c351316 that took the correction to 0.50. Now a run credits or debits only what its agent used;
what the agent says does not apply is journaled with its reason and counted in ``hindsight report``.

Only the public API here (``Hindsight``, ``create_agent`` + ``hs.middleware()``, ``hs.wrap``, the graph
nodes, ``hs.journal``, the CLI), so the file runs against the base commit and fails there.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import StructuredTool, ToolException
from langgraph.graph import END, START, MessagesState, StateGraph

from langchain_hindsight import Hindsight, Lifecycle, MemoryStore, MemoryUnit, recall_node, reflect_node
from langchain_hindsight.cli.main import main
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.testing import ReactiveToolModel, Turn, call
from langchain_hindsight.types import Trajectory
from tests.fakes import NgramEmbeddings, Prompts

EMAIL = "把第1周的周报发给张经理"
EMAIL_EN = "Send the week 1 weekly report to manager Zhang"
CORRECTION = "用户纠正（任务：生成本周的销售周报）：周报只统计本周一到周日"
CORRECTION_EN = "User correction (task: write this week's sales report): the weekly report covers Monday to Sunday"


def _send_email(to: str, subject: str = "") -> str:
    raise ToolException("SMTP timeout: the mail server did not answer")


SEND = StructuredTool.from_function(_send_email, name="send_email", description="Send an e-mail.")
SEND.handle_tool_error = True


def emailer(answer_after_error: str, first_words: str = "") -> Callable[[list[BaseMessage]], Turn]:
    """An agent that sends the e-mail (the tool fails), then answers ``answer_after_error``."""

    def respond(messages: list[BaseMessage]) -> Turn:
        if messages[-1].type == "tool":
            return answer_after_error
        if first_words:
            from langchain_core.messages import AIMessage

            return AIMessage(content=first_words, tool_calls=[call("send_email", to="张经理", subject="第1周的周报")])
        return call("send_email", to="张经理", subject="第1周的周报")

    return respond


@pytest.fixture
def hs(fake_embeddings: NgramEmbeddings) -> Iterator[Hindsight]:
    store = MemoryStore(backend=InMemoryBackend(), embeddings=fake_embeddings)
    with Hindsight(store=store, min_relevance=None, reflector=None) as h:
        yield h


def _correction(hs: Hindsight, content: str = CORRECTION) -> MemoryUnit:
    unit = hs.store.add(MemoryUnit(task_type="weekly_report", content=content, source="user_feedback")).unit
    assert unit.score_confidence == pytest.approx(0.9)
    return unit


def _lesson(hs: Hindsight, content: str = "发送邮件时附件不要超过10MB", **fields: Any) -> MemoryUnit:
    return hs.store.add(MemoryUnit(task_type="email", content=content, confidence=0.7, **fields)).unit


# ---------------------------------------------------------------------------- the doors
def _middleware(
    hs: Hindsight, respond: Callable[[list[BaseMessage]], Turn], task: str, prompts: Prompts, reflect: bool = False
) -> str:
    agent = create_agent(ReactiveToolModel(respond=respond), tools=[SEND], middleware=[hs.middleware(reflect=reflect)])
    run_id = str(uuid.uuid4())
    agent.invoke({"messages": [HumanMessage(task)]}, config={"run_id": run_id, "callbacks": [prompts]})
    return run_id


def _wrapped(
    hs: Hindsight, respond: Callable[[list[BaseMessage]], Turn], task: str, prompts: Prompts, reflect: bool = False
) -> str:
    app = hs.wrap(create_agent(ReactiveToolModel(respond=respond), tools=[SEND]), reflect=reflect)
    run_id = str(uuid.uuid4())
    app.invoke({"messages": [HumanMessage(task)]}, config={"run_id": run_id, "callbacks": [prompts]})
    return run_id


class _State(MessagesState, total=False):
    experience: str
    hindsight_served: dict[str, Any]


def _nodes(
    hs: Hindsight, respond: Callable[[list[BaseMessage]], Turn], task: str, prompts: Prompts, reflect: bool = False
) -> str:
    inner = create_agent(ReactiveToolModel(respond=respond), tools=[SEND])

    def agent(state: _State) -> dict[str, Any]:
        prompt = HumanMessage(f"{state.get('experience') or ''}\n{task}")  # the block goes where the app puts it
        out = inner.invoke({"messages": [prompt]}, config={"callbacks": [prompts]})["messages"]
        return {"messages": out[1:]}

    builder: StateGraph[Any, Any, Any, Any] = StateGraph(_State)
    builder.add_node("recall", recall_node(hs))
    builder.add_node("agent", agent)
    builder.add_node("reflect", reflect_node(hs, reflect=reflect))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "agent")
    builder.add_edge("agent", "reflect")
    builder.add_edge("reflect", END)
    run_id = str(uuid.uuid4())
    builder.compile().invoke({"messages": [HumanMessage(task)]}, config={"run_id": run_id})
    return run_id


DOORS = {"middleware": _middleware, "wrapped_graph": _wrapped, "graph_nodes": _nodes}


def _runs_with(hs: Hindsight, memory_id: str) -> list[Any]:
    return [r for r in hs.journal.list_runs() if memory_id in r.served_ids]


# ---------------------------------------------------------------------------- the e-mail scenario
@pytest.mark.parametrize("door", list(DOORS))
def test_four_failed_email_runs_leave_the_served_correction_at_its_confidence(door: str, hs: Hindsight) -> None:
    correction = _correction(hs)
    prompts = Prompts()
    for _ in range(4):  # reflection on, as a new user has it: the failures' own lessons are served too
        DOORS[door](hs, emailer("放弃：多次失败。"), EMAIL, prompts, reflect=True)
    assert any("周报只统计本周一到周日" in str(m.content) for p in prompts.seen for m in p)  # it was shown
    runs = _runs_with(hs, correction.memory_id)
    assert len(runs) == 4
    assert {r.outcome for r in runs} == {"failure"}
    assert hs.store.get(correction.memory_id).score_confidence == pytest.approx(0.9)  # was 0.50 on c351316
    assert all(correction.memory_id not in (r.debit or {}) for r in runs)


def test_the_scenario_in_english_and_across_languages(hs: Hindsight) -> None:
    zh = _correction(hs)
    en = _correction(hs, CORRECTION_EN)
    prompts = Prompts()
    for task in (EMAIL, EMAIL_EN, EMAIL_EN, EMAIL):
        _middleware(hs, emailer("I was unable to complete the task."), task, prompts)
    for unit in (zh, en):
        assert _runs_with(hs, unit.memory_id), "the correction was not served: the scenario tests nothing"
        assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(0.9)


def test_a_used_lesson_is_still_debited_and_a_used_correction_never_by_an_unexplained_failure(hs: Hindsight) -> None:
    lesson = _lesson(hs)
    correction = _correction(hs)
    _middleware(hs, emailer("放弃：多次失败。", first_words="按以上经验发送。"), EMAIL, Prompts())
    (run,) = _runs_with(hs, lesson.memory_id)
    assert {u.memory_id: u.verdict for u in run.uses} == {lesson.memory_id: "used", correction.memory_id: "used"}
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.6)  # −0.1: it was used and failed
    assert hs.store.get(correction.memory_id).score_confidence == pytest.approx(0.9)  # a user's own words


# ---------------------------------------------------------------------------- set aside
@pytest.mark.parametrize("door", list(DOORS))
@pytest.mark.parametrize(
    "answer",
    [
        "第1条经验不适用，因为本任务是发邮件，不是生成周报。邮件发送失败，放弃：多次失败。",
        "Experience 1 doesn't apply because this is an e-mail, not a report. I was unable to complete the task.",
    ],
)
def test_a_memory_the_agent_sets_aside_is_unchanged_and_its_reason_journaled(
    door: str, answer: str, hs: Hindsight
) -> None:
    lesson = hs.store.add(MemoryUnit(task_type="weekly_report", content="周报金额要用含税价", confidence=0.7)).unit
    DOORS[door](hs, emailer(answer), EMAIL, Prompts())
    (run,) = _runs_with(hs, lesson.memory_id)
    assert run.outcome == "failure"
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.7)
    (use,) = run.uses
    assert use.verdict == "set_aside"
    assert answer.split("，")[0].split(" because")[0] in use.evidence  # the agent's reason, in its words


def test_a_success_credits_what_was_used_and_not_what_was_set_aside(hs: Hindsight) -> None:
    kept = _lesson(hs, "发送邮件前先确认收件人的邮箱地址")
    aside = hs.store.add(MemoryUnit(task_type="email", content="周报金额要用含税价", confidence=0.7)).unit
    prompts = Prompts()

    def respond(messages: list[BaseMessage]) -> Turn:
        block = str(messages[0].content)
        first = 1 if block.index("邮箱地址") < block.index("含税价") else 2
        return f"按第{first}条经验确认了邮箱地址；第{3 - first}条经验与本任务无关。已发送。"

    _middleware(hs, respond, EMAIL, prompts)
    assert hs.store.get(kept.memory_id).score_confidence == pytest.approx(0.75)
    assert hs.store.get(aside.memory_id).score_confidence == pytest.approx(0.7)


def test_not_applying_about_something_else_sets_nothing_aside(hs: Hindsight) -> None:
    lesson = _lesson(hs)
    _middleware(hs, emailer("该邮件服务不适用于大附件，放弃：多次失败。"), EMAIL, Prompts())
    (run,) = _runs_with(hs, lesson.memory_id)
    assert [u.verdict for u in run.uses] == ["unclear"]
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.7)


# ---------------------------------------------------------------------------- the user's verdict
def test_an_explicit_rejection_still_debits_what_was_used_only(hs: Hindsight) -> None:
    used = _lesson(hs, "发送邮件前先确认收件人的邮箱地址")
    shown = hs.store.add(MemoryUnit(task_type="email", content="周报金额要用含税价", confidence=0.7)).unit

    def respond(messages: list[BaseMessage]) -> Turn:
        block = str(messages[0].content)
        n = 1 if block.index("邮箱地址") < block.index("含税价") else 2
        return f"按第{n}条经验发送了。"

    run_id = _middleware(hs, respond, EMAIL, Prompts())
    assert hs.store.get(used.memory_id).score_confidence == pytest.approx(0.75)
    hs.feedback(run_id, success=False)  # "that's wrong", naming nothing
    assert hs.store.get(used.memory_id).score_confidence == pytest.approx(0.6)  # credit back, then −0.1
    assert hs.store.get(shown.memory_id).score_confidence == pytest.approx(0.7)


def test_a_multi_turn_thread_judges_each_turn_by_its_own_answer(hs: Hindsight) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    lesson = _lesson(hs, "发送邮件前先确认收件人的邮箱地址")
    answers = iter(["第1条经验不适用。已完成。", "已完成。"])
    agent = create_agent(
        ReactiveToolModel(respond=lambda messages: next(answers)),
        middleware=[hs.middleware(reflect=False)],
        checkpointer=InMemorySaver(),
    )
    ids = []
    for task in (EMAIL, "给李经理发一封会议邀请邮件"):
        ids.append(str(uuid.uuid4()))
        agent.invoke({"messages": [HumanMessage(task)]}, config={"run_id": ids[-1], "configurable": {"thread_id": "t"}})
    verdicts = [{u.memory_id: u.verdict for u in hs.journal.get(i).uses or []}.get(lesson.memory_id) for i in ids]
    assert verdicts == ["set_aside", "unclear"]  # the first turn's words do not speak for the second
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.7)


# ---------------------------------------------------------------------------- report and review
def test_the_usage_report_shows_the_set_aside_counts(hs: Hindsight) -> None:
    lesson = hs.store.add(MemoryUnit(task_type="weekly_report", content="周报金额要用含税价", confidence=0.7)).unit
    answers = ("第1条经验不适用：本任务是发邮件。放弃：多次失败。", "放弃：多次失败。", "经验1与本任务无关。放弃。")
    for answer in answers:
        _middleware(hs, emailer(answer), EMAIL, Prompts())
    row = next(m for m in Lifecycle(hs.store).usage_report(min_shown=1).memories if m.memory_id == lesson.memory_id)
    assert (row.shown, row.used, row.set_aside) == (3, 0, 2)
    assert "经验1与本任务无关" in row.set_aside_reason  # the newest statement


def test_hindsight_report_prints_served_and_set_aside(
    make_fake_store: Callable[..., MemoryStore], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = make_fake_store("db")
    lesson = store.add(MemoryUnit(task_type="weekly_report", content="周报金额要用含税价", confidence=0.7)).unit
    h = Hindsight(store=store, min_relevance=None, reflector=None)
    for answer in ("第1条经验不适用：本任务是发邮件。放弃：多次失败。", "Experience 1 does not apply. I gave up."):
        _middleware(h, emailer(answer), EMAIL, Prompts())
    store.close()
    capsys.readouterr()
    assert main(["report", "--path", str(tmp_path / "db")]) == 0
    out = capsys.readouterr().out
    assert "served 2 times, set aside by the agent 2 times" in out
    assert main(["report", "--json", "--path", str(tmp_path / "db")]) == 0
    rows = json.loads(capsys.readouterr().out)["memories"]
    (row,) = [r for r in rows if r["memory_id"] == lesson.memory_id]
    assert (row["shown"], row["set_aside"], row["used"]) == (2, 2, 0)


def test_a_run_the_session_never_saw_end_keeps_the_users_verdict_as_judge(hs: Hindsight) -> None:
    """``serve`` then ``feedback`` with no ``finish``: nothing says what the agent did, the user's verdict applies."""
    lesson = _lesson(hs)
    served = hs.session.serve(EMAIL)
    assert lesson.memory_id in served.memory_ids
    hs.feedback(served.run_id, success=True)
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.75)
    assert hs.journal.get(served.run_id).uses is None


def test_finish_journals_a_use_per_served_memory(hs: Hindsight) -> None:
    lesson = _lesson(hs)
    served = hs.session.serve(EMAIL)
    hs.session.finish(served, Trajectory(run_id=served.run_id, task=EMAIL, outcome="success", final_answer="已发送"))
    record = hs.journal.get(served.run_id)
    assert [(u.memory_id, u.verdict) for u in record.uses] == [(lesson.memory_id, "unclear")]
    assert record.credit is None
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.7)
    assert hs.store.get(lesson.memory_id).access_count == 1  # shown: the access still counts
