"""What a user's correction does to memory: scoped, superseding, journaled with reasons, and exactly undoable.

The scenarios are the ones issue 20 quotes: three real corrections on different points (three threads) must
not wear each other down; the corrected lesson is superseded and never served again; a follow-up correction on
another point demotes nothing; ``undo_feedback`` puts every unit back byte for byte. zh and en. The relation
between a correction and a served memory is :func:`langchain_hindsight._claims.relation` (the real one) in the
scenario tests, and a scripted one where only the mechanics are under test.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langchain_hindsight import Hindsight, MemoryStore, MemoryUnit
from langchain_hindsight.cli.main import EXIT_NOT_FOUND, EXIT_OK, main
from langchain_hindsight.errors import (
    ConfigurationError,
    FeedbackAlreadyUndoneError,
    FeedbackNotFoundError,
    InvalidMemoryError,
    MemoryNotFoundError,
    RunNotFoundError,
)
from langchain_hindsight.session import _verdict
from langchain_hindsight.session._verdict import claim_of
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.testing import ReactiveToolModel
from langchain_hindsight.types import Trajectory
from tests.fakes import NgramEmbeddings, closing_factory

LANGS = {
    "zh": {
        "task": "生成本周的销售周报",
        "lesson": "周报按最近7天滚动窗口统计销售额。",
        "corrections": ["不对，周报只统计本周一到周日", "不对，金额要用含税价", "错了，周报要发给张经理而不是李经理"],
        "keys": ["本周一到周日", "含税价", "张经理"],
    },
    "en": {
        "task": "Write this week's sales report",
        "lesson": "For the weekly sales report, use a rolling window of the last 7 days.",
        "corrections": [
            "No, for the weekly sales report, use Monday to Sunday of this week.",
            "No, amounts must include tax",
            "That's wrong: the report goes to manager Zhang, not manager Li",
        ],
        "keys": ["Monday to Sunday", "include tax", "manager Zhang"],
    },
}


@pytest.fixture
def make_hs(fake_embeddings: NgramEmbeddings) -> Iterator[Callable[..., Hindsight]]:
    """Hindsight bundles on the in-memory backend (the backend does not matter here)."""

    def build(i: int, **kwargs: Any) -> Hindsight:
        kwargs = {"task_type": "weekly_report", "min_relevance": None, **kwargs}
        return Hindsight(store=MemoryStore(backend=InMemoryBackend(), embeddings=fake_embeddings), **kwargs)

    yield from closing_factory(build)


def _lesson(hs: Hindsight, content: str) -> MemoryUnit:
    return hs.store.add(MemoryUnit(task_type="weekly_report", content=content, confidence=0.7)).unit


FOLLOWED = "按以上经验完成。"
"""An answer that says the agent applied what it was served: the outcome credits (or debits) only what a run used."""


def _run(hs: Hindsight, task: str, *, thread: str | None = None, outcome: str = "success") -> Any:
    served = hs.session.serve(task, thread_id=thread)
    hs.session.finish(served, Trajectory(run_id=served.run_id, task=task, outcome=outcome, final_answer=FOLLOWED))
    return served


def _snapshot(hs: Hindsight) -> dict[str, str]:
    """Every unit of the namespace as JSON (active, superseded and archived)."""
    return {u.memory_id: json.dumps(u.to_dict(), sort_keys=True, ensure_ascii=False) for u in hs.store.list_units()}


def _scripted(pairs: dict[tuple[str, str], str]) -> Callable[[str, str], str]:
    """A relation that answers ``contradicts`` for the given (claim fragment, memory fragment) pairs."""

    def relation(a: str, b: str) -> str:
        for (x, y), verdict in pairs.items():
            if x in a and y in b:
                return verdict
        return "unrelated"

    return relation


# ---------------------------------------------------------------------------- scenarios (the real relation)
@pytest.mark.parametrize("lang", list(LANGS))
def test_three_corrections_on_different_points_all_stay_trusted(lang: str, make_hs: Callable[..., Hindsight]) -> None:
    case = LANGS[lang]
    hs = make_hs(locale=lang)
    lesson = _lesson(hs, case["lesson"])
    created: list[str] = []
    for n, correction in enumerate(case["corrections"]):
        thread = f"{lang}-thread-{n}"
        _run(hs, case["task"], thread=thread)
        hs.session.serve(correction, thread_id=thread)  # the correction turn of that thread
        made = [u for u in hs.store.list_units(source="user_feedback") if u.memory_id not in created]
        assert len(made) == 1, [u.content for u in made]
        created.append(made[0].memory_id)
    corrections = hs.store.get_many(created)
    assert [u.status for u in corrections] == ["active"] * 3
    assert all(u.score_confidence >= 0.85 for u in corrections), [u.score_confidence for u in corrections]
    for unit, key in zip(corrections, case["keys"], strict=True):
        assert key in unit.content
    # the first correction superseded the rolling-window lesson, the chain is in history
    old = hs.store.get(lesson.memory_id)
    assert old.status == "superseded"
    assert [u.memory_id for u in hs.store.history(created[0])] == [created[0], lesson.memory_id]


@pytest.mark.parametrize("lang", list(LANGS))
def test_corrected_lesson_is_superseded_and_never_served_again(lang: str, make_hs: Callable[..., Hindsight]) -> None:
    case = LANGS[lang]
    hs = make_hs(locale=lang)
    lesson = _lesson(hs, case["lesson"])
    first = _run(hs, case["task"], thread="t")
    assert first.memory_ids == (lesson.memory_id,)
    result = hs.feedback(first.run_id, success=False, comment=case["corrections"][0])
    new = result.created[0]
    old = hs.store.get(lesson.memory_id)
    assert old.status == "superseded"
    assert new.supersedes == lesson.memory_id
    assert old.score_confidence == pytest.approx(0.7 * 0.5)  # the credit taken back, then halved once
    for _ in range(12):
        served = _run(hs, case["task"])
        assert lesson.memory_id not in served.memory_ids
        assert new.memory_id in served.memory_ids
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.35)  # no credit regained
    assert hs.store.get(new.memory_id).score_confidence >= 0.95


@pytest.mark.parametrize("lang", list(LANGS))
def test_follow_up_correction_on_another_point_demotes_nothing(lang: str, make_hs: Callable[..., Hindsight]) -> None:
    case = LANGS[lang]
    hs = make_hs(locale=lang)
    _lesson(hs, case["lesson"])
    first = _run(hs, case["task"], thread="t1")
    hs.feedback(first.run_id, success=False, comment=case["corrections"][0])
    second = _run(hs, case["task"], thread="t2")
    before = {u.memory_id: u.score_confidence for u in hs.store.get_many(list(second.memory_ids))}
    credit = hs.journal.get(second.run_id).credit or {}
    result = hs.feedback(second.run_id, success=False, comment=case["corrections"][1])
    entry = result.run.feedback[-1]
    assert [e.action for e in entry.effects or [] if e.action == "superseded"] == []
    for mid, conf in before.items():  # only the run's own credit was taken back
        assert hs.store.get(mid).score_confidence == pytest.approx(conf - credit.get(mid, 0.0))
        assert hs.store.get(mid).status == "active"


# ---------------------------------------------------------------------------- mechanics (a scripted relation)
@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[tuple[str, str], str]], None]:
    def install(pairs: dict[tuple[str, str], str]) -> None:
        monkeypatch.setattr(_verdict, "relation", _scripted(pairs))

    return install


def test_only_contradicted_memories_are_superseded_and_every_effect_has_a_reason(
    make_hs: Callable[..., Hindsight], scripted: Callable[..., None], caplog: pytest.LogCaptureFixture
) -> None:
    scripted({("本周一到周日", "滚动"): "contradicts", ("本周一到周日", "环比"): "unsure"})
    hs = make_hs()
    wrong = _lesson(hs, "周报按最近7天滚动窗口统计销售额。")
    other = _lesson(hs, "周报要附上环比。")
    served = _run(hs, "生成本周的销售周报")
    assert set(served.memory_ids) == {wrong.memory_id, other.memory_id}
    with caplog.at_level(logging.INFO, logger="langchain_hindsight"):
        result = hs.feedback(served.run_id, success=False, comment="不对，周报只统计本周一到周日")
    new = result.created[0]
    assert hs.store.get(wrong.memory_id).status == "superseded"
    kept = hs.store.get(other.memory_id)  # "unsure": both kept; only the run's credit was taken back
    assert (kept.status, kept.score_confidence) == ("active", pytest.approx(0.7))
    entry = result.run.feedback[-1]
    effects = {e.memory_id: e for e in entry.effects or []}
    assert effects[new.memory_id].action == "created"
    assert effects[wrong.memory_id].action == "superseded"
    assert effects[wrong.memory_id].by == new.memory_id
    assert effects[wrong.memory_id].before.status == "active"  # type: ignore[union-attr]
    assert effects[wrong.memory_id].before.confidence == pytest.approx(0.75)  # type: ignore[union-attr]
    assert effects[wrong.memory_id].after.confidence == pytest.approx(0.35)  # type: ignore[union-attr]
    assert "credit" in effects[wrong.memory_id].reason
    assert "contradicted" in effects[wrong.memory_id].reason
    assert effects[other.memory_id].action == "uncredited"
    assert all(e.reason for e in effects.values())
    assert entry.credit_before == {wrong.memory_id: pytest.approx(0.05), other.memory_id: pytest.approx(0.05)}
    assert entry.credit_after is None
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert wrong.memory_id in logged
    assert new.memory_id in logged
    assert "superseded" in logged
    # the journal survives a round trip (it is what the review console reads)
    assert hs.journal.get(served.run_id).feedback[-1] == entry


def test_a_correction_never_supersedes_another_users_correction_on_a_different_point(
    make_hs: Callable[..., Hindsight], scripted: Callable[..., None]
) -> None:
    scripted({})  # nothing contradicts anything
    hs = make_hs()
    first = _run(hs, "生成本周的销售周报", thread="a")
    one = hs.feedback(first.run_id, success=False, comment="不对，周报只统计本周一到周日").created[0]
    second = _run(hs, "生成本周的销售周报", thread="b")
    assert one.memory_id in second.memory_ids
    hs.feedback(second.run_id, success=False, comment="不对，金额要用含税价")
    # taken back: the success credit the second run gave it; nothing else
    assert hs.store.get(one.memory_id).score_confidence == pytest.approx(one.score_confidence)
    assert hs.store.get(one.memory_id).status == "active"


def test_a_later_correction_on_the_same_point_supersedes_the_earlier_one(
    make_hs: Callable[..., Hindsight], scripted: Callable[..., None]
) -> None:
    scripted({("王经理", "张经理"): "contradicts"})
    hs = make_hs()
    first = _run(hs, "生成本周的销售周报")
    old = hs.feedback(first.run_id, success=False, comment="错了，周报要发给张经理").created[0]
    second = _run(hs, "生成本周的销售周报")
    new = hs.feedback(second.run_id, success=False, comment="不对，周报要发给王经理").created[0]
    assert hs.store.get(old.memory_id).status == "superseded"
    assert [u.memory_id for u in hs.store.history(new.memory_id)] == [new.memory_id, old.memory_id]


def test_failure_without_a_comment_debits_but_never_a_users_correction(
    make_hs: Callable[..., Hindsight], scripted: Callable[..., None]
) -> None:
    scripted({})
    hs = make_hs()
    lesson = _lesson(hs, "周报要附上环比。")
    first = _run(hs, "生成本周的销售周报")
    correction = hs.feedback(first.run_id, success=False, comment="不对，周报只统计本周一到周日").created[0]
    second = _run(hs, "生成本周的销售周报")
    assert set(second.memory_ids) == {lesson.memory_id, correction.memory_id}
    was = hs.store.get(correction.memory_id).score_confidence
    result = hs.feedback(second.run_id, success=False)
    # the lesson: its credit back and the failure debit (−0.1), not a halving
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.7 - 0.1)
    # the user's correction: only its credit from this run taken back
    assert hs.store.get(correction.memory_id).score_confidence == pytest.approx(was - 0.05)
    actions = {e.memory_id: e.action for e in result.run.feedback[-1].effects or []}
    assert actions == {lesson.memory_id: "debited", correction.memory_id: "uncredited"}


@pytest.mark.parametrize("lang", list(LANGS))
def test_undo_restores_every_unit_byte_for_byte_and_archives_the_correction(
    lang: str, make_hs: Callable[..., Hindsight], scripted: Callable[..., None]
) -> None:
    case = LANGS[lang]
    scripted({(case["keys"][0], case["lesson"][:8]): "contradicts"})
    hs = make_hs(locale=lang)
    wrong = _lesson(hs, case["lesson"])
    other = _lesson(hs, "周报要附上环比。" if lang == "zh" else "Split the weekly report by store.")
    served = _run(hs, case["task"])
    assert set(served.memory_ids) == {wrong.memory_id, other.memory_id}
    before = _snapshot(hs)
    credit = hs.journal.get(served.run_id).credit
    result = hs.feedback(served.run_id, success=False, comment=case["corrections"][0])
    new = result.created[0]
    assert hs.store.get(wrong.memory_id).status == "superseded"

    run = hs.undo_feedback(served.run_id)

    after = _snapshot(hs)
    assert {k: v for k, v in after.items() if k != new.memory_id} == before
    assert hs.store.get(new.memory_id).status == "archived"  # out of recall, restorable
    assert hs.journal.get(served.run_id).credit == credit
    assert [u.memory_id for u in hs.store.history(wrong.memory_id)] == [wrong.memory_id]
    verdict, undo = run.feedback[-2], run.feedback[-1]
    assert verdict.undone_at is not None
    assert (undo.kind, undo.undoes) == ("undo", len(run.feedback) - 2)
    assert {e.memory_id: e.action for e in undo.effects or []} == {
        wrong.memory_id: "restored",
        other.memory_id: "restored",
        new.memory_id: "archived",
    }
    assert new.memory_id not in _run(hs, case["task"]).memory_ids
    with pytest.raises(FeedbackAlreadyUndoneError, match="already undone"):
        hs.undo_feedback(served.run_id)


def test_undo_of_a_success_verdict_and_a_bare_failure(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs()
    lesson = _lesson(hs, "周报要附上环比。")
    served = hs.session.derive(apply_outcome=False).serve("生成本周的销售周报")
    before = _snapshot(hs)
    hs.feedback(served.run_id, success=True)
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.75)
    hs.feedback(served.run_id, success=False)
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.6)
    hs.undo_feedback(served.run_id)  # the failure
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.75)
    assert hs.journal.get(served.run_id).credit == {lesson.memory_id: pytest.approx(0.05)}
    hs.undo_feedback(served.run_id)  # then the success
    assert _snapshot(hs) == before
    assert hs.journal.get(served.run_id).credit is None
    with pytest.raises(FeedbackAlreadyUndoneError):
        hs.undo_feedback(served.run_id)


def test_undo_keeps_credit_earned_since(make_hs: Callable[..., Hindsight], scripted: Callable[..., None]) -> None:
    scripted({})
    hs = make_hs()
    lesson = _lesson(hs, "周报要附上环比。")
    first = _run(hs, "生成本周的销售周报")
    hs.feedback(first.run_id, success=False)  # 0.75 → 0.7 → 0.6
    _run(hs, "生成本周的销售周报")  # a later run credits it: 0.65
    hs.undo_feedback(first.run_id)
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.8)  # the debit reversed, +0.05 kept


def test_undo_errors(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs()
    served = _run(hs, "生成本周的销售周报")
    with pytest.raises(FeedbackNotFoundError, match="no feedback"):
        hs.undo_feedback(served.run_id)
    with pytest.raises(RunNotFoundError):
        hs.undo_feedback("no-such-run")


def test_async_undo(make_hs: Callable[..., Hindsight], scripted: Callable[..., None]) -> None:
    scripted({})
    hs = make_hs()
    lesson = _lesson(hs, "周报要附上环比。")
    served = _run(hs, "生成本周的销售周报")
    before = _snapshot(hs)

    async def main() -> Any:
        result = await hs.afeedback(served.run_id, success=False, comment="不对，金额要用含税价")
        await hs.aundo_feedback(served.run_id)
        return result

    result = asyncio.run(main())
    assert hs.store.get(result.created[0].memory_id).status == "archived"
    assert {k: v for k, v in _snapshot(hs).items() if k != result.created[0].memory_id} == before
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.75)


def test_supersede_store_method(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs()
    old = _lesson(hs, "用户偏好用Java写后端服务。")
    result = hs.store.supersede(
        [old.memory_id],
        MemoryUnit(task_type="weekly_report", content="用户偏好用Python写后端服务。", source="user_feedback"),
        reason="test",
    )
    assert result.action == "superseded"
    assert result.related_ids == (old.memory_id,)
    assert result.previous[0].status == "active"
    assert result.unit.supersedes == old.memory_id
    assert hs.store.get(old.memory_id).status == "superseded"
    assert hs.store.get(old.memory_id).score_confidence == pytest.approx(0.35)
    with pytest.raises(ConfigurationError, match=f"more trusted one \\({result.memory_id}\\)"):
        # not active any more: re-planned onto its newest version (writes.plan_supersede), a user's, more trusted
        hs.store.supersede([old.memory_id], MemoryUnit(content="用户偏好用Go写后端服务。"), reason="test")
    with pytest.raises(MemoryNotFoundError):  # no such memory at all
        hs.store.supersede(["mem_unknown"], MemoryUnit(content="用户偏好用Go写后端服务。"), reason="test")
    with pytest.raises(ConfigurationError, match="reason"):
        hs.store.supersede([result.memory_id], MemoryUnit(content="用户偏好用Go写后端服务。"), reason=" ")
    with pytest.raises(ConfigurationError, match="more trusted"):  # provenance holds
        hs.store.supersede([result.memory_id], MemoryUnit(content="用户偏好用Go写后端服务。"), reason="test")


def test_claim_of_strips_the_correction_frame() -> None:
    zh = MemoryUnit(content="用户纠正（任务：生成周报）：金额要用含税价", source="user_feedback")
    en = MemoryUnit(content="User correction (task: weekly report): amounts include tax", source="user_feedback")
    lesson = MemoryUnit(content="用户纠正（任务：x）：y")  # not a user's unit: taken as it is
    assert (claim_of(zh), claim_of(en), claim_of(lesson)) == ("金额要用含税价", "amounts include tax", lesson.content)


# ---------------------------------------------------------------------------- a checkpointed agent, and the CLI
def _answer(messages: list[BaseMessage]) -> Any:
    return "report done" if messages[-1].type == "human" else "ok"


@pytest.mark.parametrize("lang", list(LANGS))
def test_middleware_correction_turn_supersedes_only_what_it_contradicts(
    lang: str, make_hs: Callable[..., Hindsight]
) -> None:
    case = LANGS[lang]
    hs = make_hs(locale=lang)
    wrong = _lesson(hs, case["lesson"])
    agent = create_agent(
        ReactiveToolModel(respond=_answer), tools=[], middleware=[hs.middleware()], checkpointer=InMemorySaver()
    )
    config: dict[str, Any] = {"configurable": {"thread_id": f"thread-{lang}"}}
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    agent.invoke({"messages": [HumanMessage(case["task"])]}, config={**config, "run_id": first})
    agent.invoke({"messages": [HumanMessage(case["corrections"][0])]}, config={**config, "run_id": second})
    assert hs.store.get(wrong.memory_id).status == "superseded"
    assert wrong.memory_id not in hs.journal.get(second).served_ids
    hs.undo_feedback(first)
    assert hs.store.get(wrong.memory_id).status == "active"


def test_cli_undo_feedback(
    tmp_path: Path, fake_embeddings: NgramEmbeddings, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "db"
    with Hindsight(path, embeddings=fake_embeddings, task_type="weekly_report", min_relevance=None) as hs:
        lesson = _lesson(hs, "周报要附上环比。")
        served = _run(hs, "生成本周的销售周报")
        hs.feedback(served.run_id, success=False)
        debited = hs.store.get(lesson.memory_id).score_confidence
    assert debited == pytest.approx(0.6)
    assert main(["undo-feedback", served.run_id, "--path", str(path), "--json"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert out["run_id"] == served.run_id
    assert [e["action"] for e in out["effects"]] == ["restored"]
    assert main(["undo-feedback", served.run_id, "--path", str(path)]) == EXIT_NOT_FOUND
    err = capsys.readouterr().err
    assert err.startswith("hindsight: ")
    assert "already undone" in err
    assert "Traceback" not in err
    assert main(["undo-feedback", "no-such-run", "--path", str(path)]) == EXIT_NOT_FOUND
    with MemoryStore(path, embeddings=fake_embeddings) as store:
        assert store.get(lesson.memory_id).score_confidence == pytest.approx(0.75)


def test_feedback_journaled_before_effects_cannot_be_undone(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs()
    served = _run(hs, "生成本周的销售周报")
    hs.journal.add_feedback(served.run_id, text="不对", success=False, rejected=True)  # an entry of an older version
    with pytest.raises(FeedbackNotFoundError, match="before its effects were recorded"):
        hs.undo_feedback(served.run_id)


def test_forget_scrubs_the_effects_and_undo_skips_what_is_gone(
    make_hs: Callable[..., Hindsight], scripted: Callable[..., None]
) -> None:
    scripted({("本周一到周日", "滚动"): "contradicts"})
    hs = make_hs()
    wrong = _lesson(hs, "周报按最近7天滚动窗口统计销售额。")
    served = _run(hs, "生成本周的销售周报")
    new = hs.feedback(served.run_id, success=False, comment="不对，周报只统计本周一到周日").created[0]
    hs.store.forget(new.memory_id)
    entry = hs.journal.get(served.run_id).feedback[-1]
    assert new.memory_id not in json.dumps(entry.model_dump(mode="json"))  # no trace of the forgotten unit
    assert "本周一到周日" not in entry.text  # nor of the comment it was made from
    assert [e.memory_id for e in entry.effects or []] == [wrong.memory_id]
    hs.undo_feedback(served.run_id)
    assert hs.store.get(wrong.memory_id).status == "active"
    assert hs.store.get(wrong.memory_id).score_confidence == pytest.approx(0.75)


def test_failure_verdict_on_a_failed_run_debits_nothing_more(make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs()
    lesson = _lesson(hs, "周报要附上环比。")
    served = _run(hs, "生成本周的销售周报", outcome="failure")
    debited = hs.store.get(lesson.memory_id).score_confidence
    assert debited == pytest.approx(0.6)  # the outcome's failure debit
    result = hs.feedback(served.run_id, success=False)
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(debited)
    assert result.run.feedback[-1].effects == []


def test_a_correction_the_store_refuses_is_still_journaled_and_undoable(
    make_hs: Callable[..., Hindsight], monkeypatch: pytest.MonkeyPatch
) -> None:
    hs = make_hs()
    lesson = _lesson(hs, "周报要附上环比。")
    served = _run(hs, "生成本周的销售周报")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise InvalidMemoryError("invalid memory unit: content: carries no information")

    monkeypatch.setattr(hs.store, "add", refuse)
    result = hs.feedback(served.run_id, success=False, comment="不对，金额要用含税价")
    assert result.created == []
    entry = result.run.feedback[-1]
    assert [(e.memory_id, e.action) for e in entry.effects or []] == [(lesson.memory_id, "uncredited")]
    monkeypatch.undo()
    hs.undo_feedback(served.run_id)
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.75)


def test_undo_of_a_success_verdict_on_a_failed_run_puts_the_outcomes_debit_back(
    make_hs: Callable[..., Hindsight],
) -> None:
    hs = make_hs()
    lesson = _lesson(hs, "周报要附上环比。")
    served = _run(hs, "生成本周的销售周报", outcome="failure")
    debit = hs.journal.get(served.run_id).debit
    assert debit == {lesson.memory_id: pytest.approx(-0.1)}
    before = _snapshot(hs)
    hs.feedback(served.run_id, success=True)  # the user overrules the failure: debit back, then credit
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.75)
    assert hs.journal.get(served.run_id).debit is None
    run = hs.undo_feedback(served.run_id)
    assert _snapshot(hs) == before
    assert (run.credit, run.debit) == (None, debit)


def test_a_bare_failure_verdict_is_the_runs_debit_a_later_success_verdict_takes_back(
    make_hs: Callable[..., Hindsight],
) -> None:
    hs = make_hs()
    lesson = _lesson(hs, "周报要附上环比。")
    served = hs.session.derive(apply_outcome=False).serve("生成本周的销售周报")
    hs.feedback(served.run_id, success=False)
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.6)
    assert hs.journal.get(served.run_id).debit == {lesson.memory_id: pytest.approx(-0.1)}
    hs.feedback(served.run_id, success=True)  # the user changed their mind
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.75)
    hs.undo_feedback(served.run_id)
    hs.undo_feedback(served.run_id)
    assert hs.store.get(lesson.memory_id).score_confidence == pytest.approx(0.7)
    assert (hs.journal.get(served.run_id).credit, hs.journal.get(served.run_id).debit) == (None, None)
