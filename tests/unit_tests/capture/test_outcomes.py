"""Credit from real outcomes: give-ups and unrecovered tool errors are failures, explicit verdicts win,
repeats of one task earn a diminishing credit, and every credit and debit is logged with its reason."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_hindsight import Hindsight, MemoryStore, MemoryUnit, TrajectoryRecorder
from langchain_hindsight.capture import OUTCOME_REASON_KEY
from langchain_hindsight.capture._outcome import answer_outcome, gives_up, unrecovered_error
from langchain_hindsight.capture.messages import trajectory_from_messages
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.session._credit import credit, earlier_credits
from langchain_hindsight.store import ConfidencePolicy
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.testing import ReactiveToolModel, Turn, call, scripted_model
from langchain_hindsight.types import MemoryContext, utcnow
from tests.fakes import NgramEmbeddings, query_sales

ANSWERS = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "final_answers.jsonl"
LESSON = "生成销售周报时，query_sales 的 start 必须是具体日期（如 2024-06-03），不能用 rolling"
TASK = "生成本周的销售周报"

GIVE_UPS = [
    "放弃：多次失败。",
    "抱歉，我无法完成这个任务",
    "无法读取文件，任务失败",
    "I give up",
    "I was unable to complete the task",
    "Sorry, I couldn't read the file.",
]
HARD_NEGATIVES = [
    "上次失败的原因已经修复，报告已生成",
    "The failing test now passes",
    "没有失败的订单",
    "I couldn't find any errors — the data is clean",
    "已处理3条失败记录",
]


# ---------------------------------------------------------------------------- the give-up rule
@pytest.mark.parametrize("answer", GIVE_UPS)
def test_a_give_up_is_detected(answer: str) -> None:
    assert gives_up(answer) is not None
    assert answer_outcome(answer)[0] == "failure"


@pytest.mark.parametrize("answer", HARD_NEGATIVES)
def test_an_answer_that_mentions_failure_but_succeeds_is_not_a_give_up(answer: str) -> None:
    assert gives_up(answer) is None
    assert answer_outcome(answer) == ("success", None)


def _labelled() -> list[dict[str, Any]]:
    return [json.loads(line) for line in ANSWERS.read_text(encoding="utf-8").splitlines() if line.strip()]


def _precision_recall(rows: list[dict[str, Any]]) -> tuple[float, float]:
    predicted = [(gives_up(r["text"]) is not None, r["label"] == "give_up") for r in rows]
    tp = sum(p and g for p, g in predicted)
    fp = sum(p and not g for p, g in predicted)
    fn = sum(g and not p for p, g in predicted)
    return tp / max(1, tp + fp), tp / max(1, tp + fn)


def test_the_labelled_set_has_hard_negatives_and_a_held_out_split() -> None:
    rows = _labelled()
    assert len(rows) >= 120
    assert sum(r["kind"] == "hard_negative" for r in rows) >= 0.4 * len(rows)
    assert {"dev", "heldout", "heldout_e", "heldout_chat"} <= {r["split"] for r in rows}
    assert {r["lang"] for r in rows} == {"zh", "en"}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_held_out_precision_and_recall(lang: str) -> None:
    """Held-out A: written in the same sitting as the dev split, never used to choose a pattern."""
    rows = [r for r in _labelled() if r["lang"] == lang and r["split"] == "heldout"]
    precision, recall = _precision_recall(rows)
    assert precision >= 0.97, (precision, recall)
    assert recall >= 0.95, (precision, recall)


@pytest.mark.parametrize(
    ("split", "min_precision", "min_recall"), [("heldout_e", 0.9, 0.65), ("heldout_chat", 0.8, 0.8)]
)
def test_fresh_phrasing_precision_and_recall(split: str, min_precision: float, min_recall: float) -> None:
    """Held-out E (task answers) and chat (conversational replies): written after the patterns were frozen.

    A guard against regressions at the numbers ``benchmarks/outcome_detector.py`` reports, not a
    target: rules miss much fresh phrasing (recall), and precision is what matters more (a false
    give-up debits the served memories; a missed one earns a bounded credit).
    """
    precision, recall = _precision_recall([r for r in _labelled() if r["split"] == split])
    assert precision >= min_precision, (precision, recall)
    assert recall >= min_recall, (precision, recall)


def test_unrecovered_error_is_the_last_error_no_later_tool_success_followed() -> None:
    parallel = [("tool_call", "a"), ("tool_call", "b"), ("error", "a"), ("tool_result", "b"), ("final_answer", None)]
    assert unrecovered_error(parallel) == 2  # the other half of the same batch does not recover it
    other_tool = [("tool_call", "a"), ("error", "a"), ("tool_call", "b"), ("tool_result", "b")]
    assert unrecovered_error(other_tool) is None
    assert unrecovered_error([("tool_call", "a"), ("tool_result", "a"), ("final_answer", None)]) is None


# ---------------------------------------------------------------------------- agents end to end
@pytest.fixture
def hs(fake_embeddings: NgramEmbeddings) -> Iterator[Hindsight]:
    store = MemoryStore(backend=InMemoryBackend(), embeddings=fake_embeddings)
    with Hindsight(store=store, task_type="weekly_report", min_relevance=None) as bundle:
        yield bundle
    store.close()


FOLLOWS = {"zh": "按第1条经验：", "en": "Following experience 1: "}
"""An answer's opening that says the agent applied the lesson: a run credits or debits only what it used."""


def _lesson(hs: Hindsight, content: str = LESSON, confidence: float = 0.7) -> MemoryUnit:
    context = MemoryContext(parameters={"start": "2024-06-03"})  # what a run that follows it passes
    return hs.store.add(
        MemoryUnit(task_type="weekly_report", content=content, confidence=confidence, context=context)
    ).unit


def _run(hs: Hindsight, model: Any, task: str = TASK, *, tools: list[Any] | None = None) -> str:
    agent = create_agent(
        model, tools=tools or [query_sales], middleware=[hs.middleware(reflect=False)], checkpointer=InMemorySaver()
    )
    run_id = str(uuid.uuid4())
    agent.invoke({"messages": [HumanMessage(task)]}, config={"run_id": run_id, "configurable": {"thread_id": run_id}})
    return run_id


@pytest.mark.parametrize("answer", ["放弃：多次失败。", "I was unable to complete the task."])
def test_a_give_up_credits_nothing(hs: Hindsight, answer: str, caplog: pytest.LogCaptureFixture) -> None:
    unit = _lesson(hs)
    with caplog.at_level(logging.INFO, logger="langchain_hindsight"):
        run_id = _run(hs, scripted_model(FOLLOWS["zh" if answer.startswith("放弃") else "en"] + answer))
    record = hs.journal.get(run_id)
    assert record.served_ids == [unit.memory_id]
    assert record.outcome == "failure"
    assert record.credit is None
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(0.6)  # the seed's failure −0.1
    debit = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"confidence of {unit.memory_id}")]
    assert len(debit) == 1
    assert "0.7000 → 0.6000" in debit[0]
    assert f"failure of run {run_id}: final answer gives up" in debit[0]


def _errors_then_answers(messages: list[BaseMessage]) -> Turn:
    """The bad start date, then an answer without retrying: the tool error stays unrecovered."""
    if messages[-1].type == "tool":
        return "周报：销售额未知"
    return call("query_sales", start="rolling", end="today")


def _errors_then_retries(messages: list[BaseMessage]) -> Turn:
    last = messages[-1]
    if last.type == "tool":
        return call("query_sales", start="2024-06-03", end="2024-06-09") if "Error" in str(last.content) else "周报：42"
    return call("query_sales", start="rolling", end="today")


def test_an_unrecovered_tool_error_is_a_failure_and_a_recovered_one_is_not(hs: Hindsight) -> None:
    unit = _lesson(hs)
    failed = hs.journal.get(_run(hs, ReactiveToolModel(respond=_errors_then_answers)))
    assert failed.outcome == "failure"
    # the agent passed start="rolling", which the lesson forbids: it did not follow it, so no debit
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(0.7)
    assert failed.uses is not None
    assert [u.verdict for u in failed.uses] == ["unclear"]
    recovered = hs.journal.get(_run(hs, ReactiveToolModel(respond=_errors_then_retries), "再生成一次本周的销售周报"))
    assert recovered.outcome == "success"
    assert recovered.credit == {unit.memory_id: pytest.approx(0.05)}  # the retry passed the lesson's start date


def test_the_reason_is_on_the_trajectory() -> None:
    task = HumanMessage("统计 sales.csv")
    calls = AIMessage("", tool_calls=[{"name": "read_csv", "args": {"path": "sales.csv"}, "id": "c1"}])
    error = ToolMessage("FileNotFoundError: sales.csv", tool_call_id="c1", status="error")
    traj = trajectory_from_messages([task, calls, error, AIMessage("无法读取文件，任务失败")], run_id="r")
    assert traj.outcome == "failure"
    assert traj.error == "FileNotFoundError: sales.csv"  # reflection's avoid rule names the real cause
    assert "final answer gives up: 任务失败" in traj.metadata[OUTCOME_REASON_KEY]
    assert "unrecovered tool error: FileNotFoundError" in traj.metadata[OUTCOME_REASON_KEY]


def test_a_give_up_alone_gives_its_words_as_the_error() -> None:
    answer = "无法连接到 ERP 系统，请稍后再试。"
    traj = trajectory_from_messages([HumanMessage("导出本周订单"), AIMessage(answer)], run_id="r")
    assert traj.outcome == "failure"
    assert traj.error == answer  # what reflection's avoid rule names as the reason
    assert traj.metadata[OUTCOME_REASON_KEY] == "final answer gives up: 无法连接"


def test_an_explicit_outcome_wins_over_the_rules() -> None:
    task, answer = HumanMessage("t"), AIMessage("放弃：多次失败。")
    assert trajectory_from_messages([task, answer], run_id="r").outcome == "failure"
    assert trajectory_from_messages([task, answer], run_id="r", outcome="success").outcome == "success"
    recorder = TrajectoryRecorder()
    model = scripted_model("I give up.")
    run_id = uuid.uuid4()
    model.invoke("t", config={"callbacks": [recorder], "run_id": run_id})
    assert recorder.get(run_id).outcome == "failure"
    assert recorder.mark_outcome(run_id, "success").outcome == "success"
    # the wrong way round too: a cheerful answer the application knows failed
    assert trajectory_from_messages([task, AIMessage("周报已生成")], run_id="r", outcome="failure").outcome == "failure"


def test_explicit_feedback_after_a_give_up_credits_the_run(hs: Hindsight) -> None:
    unit = _lesson(hs)
    run_id = _run(hs, scripted_model(FOLLOWS["en"] + "I give up."))
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(0.6)
    assert hs.journal.get(run_id).debit == {unit.memory_id: pytest.approx(-0.1)}
    hs.feedback(run_id, success=True)  # the user's verdict: it did work
    # the automatic failure is taken back, then the run is credited: as if the rules had called it a success
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(0.75)
    record = hs.journal.get(run_id)
    assert record.credit == {unit.memory_id: pytest.approx(0.05)}
    assert record.debit is None
    hs.feedback(run_id, success=True)  # confirmed again: nothing more
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(0.75)


# ---------------------------------------------------------------------------- bounded credit
def test_three_ok_runs_of_one_task_do_not_reach_the_cap(hs: Hindsight, caplog: pytest.LogCaptureFixture) -> None:
    unit = _lesson(hs, confidence=0.85)
    with caplog.at_level(logging.INFO, logger="langchain_hindsight.store"):
        runs = [_run(hs, scripted_model(FOLLOWS["zh"] + "ok")) for _ in range(3)]
    credits = [hs.journal.get(r).credit[unit.memory_id] for r in runs]  # type: ignore[index]
    assert credits == pytest.approx([0.05, 0.0125, 0.003125])
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(0.915625)
    assert hs.store.get(unit.memory_id).score_confidence < hs.store.policy.success_cap
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"confidence of {unit.memory_id}")]
    assert f"success of run {runs[0]})" in logged[0]
    assert "diminished ×0.25: 1 earlier credit for the same task within 24 h" in logged[1]
    assert "0.9125 → 0.9156" in logged[2]
    assert "2 earlier credits" in logged[2]


def test_distinct_tasks_earn_full_credit_and_twelve_reach_the_cap(hs: Hindsight) -> None:
    unit = _lesson(hs)
    for week in range(12):
        _run(hs, scripted_model(FOLLOWS["zh"] + "ok"), f"生成第 {week + 1} 周的销售周报")
    assert hs.store.get(unit.memory_id).score_confidence == pytest.approx(hs.store.policy.success_cap)


def test_the_same_task_on_another_day_earns_full_credit(fake_embeddings: NgramEmbeddings) -> None:
    store = MemoryStore(backend=InMemoryBackend(), embeddings=fake_embeddings)
    journal = RunJournal(store)
    unit = store.add(MemoryUnit(task_type="weekly_report", content=LESSON)).unit
    now = utcnow()
    for run_id, ago in (("yesterday-ish", timedelta(hours=30)), ("this-morning", timedelta(hours=3))):
        journal.record(RunRecord(run_id=run_id, task=TASK + "。", started_at=now - ago, credit={unit.memory_id: 0.05}))
    journal.record(RunRecord(run_id="undone", task=TASK, started_at=now, credit=None))  # a rejected run
    journal.record(RunRecord(run_id="other", task="生成本月的销售月报", started_at=now, credit={unit.memory_id: 0.05}))
    record = journal.start("now", task=f" {TASK} ", now=now)
    assert earlier_credits(store, journal, record, [unit.memory_id]) == {unit.memory_id: 1}  # this morning only
    _, given = credit(store, [unit.memory_id], store.namespace, journal=journal, record=record)
    assert given == {unit.memory_id: pytest.approx(0.0125)}
    store.close()


def test_the_policy_is_configurable_and_validated(fake_embeddings: NgramEmbeddings) -> None:
    seed = ConfidencePolicy(repeat_factor=1.0)  # the seed's unbounded rule
    assert seed.success_credit(5) == pytest.approx(0.05)
    assert ConfidencePolicy(repeat_factor=0.0).success_credit(1) == 0.0
    with pytest.raises(ConfigurationError, match="repeat_factor"):
        ConfidencePolicy(repeat_factor=1.5)
    with pytest.raises(ConfigurationError, match="repeat_window"):
        ConfidencePolicy(repeat_window=timedelta(hours=-1))
    store = MemoryStore(backend=InMemoryBackend(), embeddings=fake_embeddings)
    unit = store.add(MemoryUnit(task_type="weekly_report", content=LESSON)).unit
    with pytest.raises(ConfigurationError, match="repeats"):
        store.record_feedback([unit.memory_id], success=True, repeats={unit.memory_id: -1})
    store.close()


def test_a_failure_verdict_is_logged_with_its_reason(hs: Hindsight, caplog: pytest.LogCaptureFixture) -> None:
    unit = _lesson(hs)
    run_id = _run(hs, scripted_model(FOLLOWS["zh"] + "周报已生成"))
    with caplog.at_level(logging.INFO, logger="langchain_hindsight"):
        hs.feedback(run_id, success=False)
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith(f"confidence of {unit.memory_id}")]
    assert any("0.7500 → 0.7000 (credit taken back)" in m for m in logged)
    # a failure verdict without a comment is the failure debit with its reason, not a halving (issue 20)
    assert any("0.7000 → 0.6000 (the user said run" in m and "failure debit" in m for m in logged)
