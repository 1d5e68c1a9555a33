"""Write semantics that never lose a lesson: true duplicates merge, different statements never do.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/store/test_write_semantics.py``.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage

from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.recall.retriever import HindsightRetriever
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import utcnow
from langchain_hindsight.writes import (
    LLMWriteJudge,
    RuleWriteJudge,
    WriteResult,
)
from tests.fakes import ReactiveToolModel, Turn, call, judge_model, scripted_model
from tests.unit_tests.store.test_write_semantics import _fact

ZH_FACTS = {
    "客户甲公司希望通过邮件联系。": "客户甲公司希望我们用什么方式联系？",
    "客户乙公司希望通过电话联系。": "客户乙公司希望我们用什么方式联系？",
    "客户丙公司希望通过微信联系。": "客户丙公司希望我们用什么方式联系？",
    "客户甲公司每月订购300箱。": "客户甲公司每月订购多少箱？",
    "客户乙公司每月订购500箱。": "客户乙公司每月订购多少箱？",
}


"""Five user facts that differ only in an entity, a number or a channel → the query each must answer."""


EN_FACTS = {
    "Customer Acme wants to be contacted by email.": "How does customer Acme want to be contacted?",
    "Customer Globex wants to be contacted by phone.": "How does customer Globex want to be contacted?",
    "Customer Initech wants to be contacted by WeChat.": "How does customer Initech want to be contacted?",
    "Customer Acme orders 300 boxes every month.": "How many boxes does customer Acme order each month?",
    "Customer Globex orders 500 boxes every month.": "How many boxes does customer Globex order each month?",
}


class NearEmbeddings(Embeddings):
    """Every text is a shared direction plus a small text-specific one: all pairs ~0.94 similar."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        noise = [b - 127.5 for b in hashlib.sha512(text.encode()).digest()]
        scale = 0.25 / math.sqrt(sum(x * x for x in noise))
        v = [1.0 + x * scale * math.sqrt(len(noise)) for x in noise]
        norm = math.sqrt(sum(x * x for x in v))
        return [x / norm for x in v]


def _near_store(make_store: Callable[..., MemoryStore], *args: object, **kwargs: object) -> MemoryStore:
    return make_store(*args, embeddings=NearEmbeddings(), **kwargs)


def _judge_model(decide: Callable[[list[str]], Turn]) -> ReactiveToolModel:
    """A scripted chat model that answers the judge prompt from the ids it was shown."""

    def respond(messages: list[BaseMessage]) -> Turn:
        return decide(re.findall(r"id=(mem_\w+)", str(messages[-1].content)))

    return ReactiveToolModel(respond=respond)


@pytest.mark.parametrize("facts", [ZH_FACTS, EN_FACTS], ids=["zh", "en"])
def test_distinct_facts_all_stay_active_and_each_is_recalled_first(
    store: MemoryStore, facts: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="langchain_hindsight.store"):
        results = [store.add(_fact(text)) for text in facts]
    assert [r.action for r in results] == ["added"] * 5
    assert [r.unit.content for r in results] == list(facts)  # each returns its own text, not another's
    assert len({r.memory_id for r in results}) == 5
    assert store.count(status="active") == 5
    assert sum("added as" in m for m in caplog.messages) == 5  # every write says what it did

    retriever = HindsightRetriever(store=store, k=5)
    for text, query in facts.items():
        top = retriever.recall(query)[0]
        assert top.memory.content == text, query


def test_distinct_chinese_facts_are_named_as_similar_but_kept(store: MemoryStore) -> None:
    first = store.add(_fact("客户甲公司希望通过邮件联系。"))
    second = store.add(_fact("客户乙公司希望通过电话联系。"))
    # MiniLM puts them at ~1.0: the old write path merged the second into the first and returned the first's text.
    assert second.action == "added"
    assert second.unit.content == "客户乙公司希望通过电话联系。"
    assert first.memory_id in second.related_ids
    assert "both kept active" in second.reason
    assert {u.status for u in store.list_units()} == {"active"}


def test_add_many_returns_one_result_per_unit(store: MemoryStore) -> None:
    results = store.add_many([_fact(t) for t in ZH_FACTS])
    assert all(isinstance(r, WriteResult) for r in results)
    assert [r.unit.content for r in results] == list(ZH_FACTS)
    assert store.count(status="active") == 5


@pytest.mark.parametrize(
    ("first", "again"),
    [
        ("客户甲公司希望通过邮件联系。", "客户甲公司希望通过邮件联系。"),
        ("客户甲公司希望通过邮件联系。", " 客户甲公司 希望通过邮件联系！"),
        ("客户甲公司，希望通过「邮件」联系。", "客户甲公司希望通过邮件联系"),
        ("Customer Acme wants to be contacted by email.", "customer  ACME wants to be contacted by email"),
        ("Read GBK CSVs with encoding='gbk'.", "Read ＧＢＫ CSVs, with encoding=“gbk”."),
    ],
    ids=["zh-identical", "zh-space-punct", "zh-fullwidth", "en-case-space", "en-fullwidth"],
)
def test_readding_the_same_lesson_merges_and_says_so(store: MemoryStore, first: str, again: str) -> None:
    stored = store.add(_fact(first, access_count=1, tags=["a"]))
    result = store.add(_fact(again, access_count=2, tags=["b"]))
    assert result.action == "merged"
    assert result.memory_id == stored.memory_id
    assert result.related_ids == (stored.memory_id,)
    assert "same statement" in result.reason
    assert result.unit.access_count == 3
    assert result.unit.tags == ["a", "b"]
    assert store.count() == 1


def test_merge_keeps_the_newest_time(store: MemoryStore) -> None:
    old = datetime(2025, 6, 1, tzinfo=UTC)
    stored = store.add(_fact("周报只统计本周一到周日的数据。", created_at=old, last_accessed_at=old))
    now = utcnow()
    result = store.add(_fact("周报只统计本周一到周日的数据", created_at=now, last_accessed_at=now))
    assert result.action == "merged"
    assert result.unit.created_at == now
    assert result.unit.last_accessed_at == now
    assert store.get(stored.memory_id).created_at == now  # persisted, so recency sees it
    # An older echo does not make the stored unit older.
    again = store.add(_fact("周报只统计本周一到周日的数据！", created_at=old, last_accessed_at=old))
    assert again.unit.created_at == now


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("阈值设为1.5。", "阈值设为15。"),
        ("温度低于-5度时停止。", "温度低于5度时停止。"),
        ("no tone", "not one"),
        ("客户甲公司希望通过邮件联系。", "客户乙公司希望通过邮件联系。"),
        ("Use pandas below 10k rows.", "Use pandas above 10k rows."),
    ],
)
def test_different_statements_never_merge(store: MemoryStore, a: str, b: str) -> None:
    first = store.add(_fact(a))
    result = store.add(_fact(b))
    assert result.action != "merged"
    assert result.unit.content == b
    assert store.count() == 2  # both kept: active, or (a contradicted value, 1.5 -> 15) superseded in history
    if result.action == "superseded":
        assert (a, b) == ("阈值设为1.5。", "阈值设为15。")
        assert store.history(result.memory_id)[-1].memory_id == first.memory_id
    else:
        assert store.count(status="active") == 2


def test_thresholds_off_still_merge_only_the_same_statement(make_store: Callable[..., MemoryStore]) -> None:
    model = scripted_model()  # would raise ScriptExhaustedError if the judge were asked
    store = _near_store(make_store, conflict_threshold=None, merge_threshold=None, judge=LLMWriteJudge(model))
    store.add(_fact("客户甲公司希望通过邮件联系。"))
    assert store.add(_fact("客户乙公司希望通过电话联系。")).action == "added"
    assert store.add(_fact("客户乙公司希望通过电话联系")).action == "merged"
    assert model.calls == 0


@pytest.mark.parametrize(
    ("old_text", "new_text", "query"),
    [
        ("周报统计上周一到上周日的数据。", "周报只统计本周一到本周日的数据。", "周报统计哪几天的数据？"),
        (
            "The weekly report covers last Monday to last Sunday.",
            "The weekly report covers only this Monday to this Sunday.",
            "Which days does the weekly report cover?",
        ),
    ],
    ids=["zh", "en"],
)
def test_newer_correction_is_kept_and_ranks_above_the_older_fact(
    store: MemoryStore, old_text: str, new_text: str, query: str
) -> None:
    old = store.add(_fact(old_text, task_type="weekly_report", created_at=utcnow() - timedelta(days=60)))
    new = store.add(_fact(new_text, task_type="weekly_report"))
    assert new.unit.content == new_text
    ranked = [s.memory.memory_id for s in HindsightRetriever(store=store, k=5).recall(query)]
    if new.action == "superseded":  # the rules are sure it contradicts (en): the old one is history, not served
        assert store.get(old.memory_id).status == "superseded"
        assert old.memory_id not in ranked
        assert ranked[0] == new.memory_id
    else:  # the rules are unsure (zh: 上周一 / 本周一): both stay and the newer ranks first
        assert new.action == "added"
        assert {u.status for u in store.get_many([old.memory_id, new.memory_id])} == {"active"}
        assert ranked.index(new.memory_id) < ranked.index(old.memory_id)


def test_a_judged_duplicate_from_the_user_replaces_an_inference_instead_of_vanishing(
    make_store: Callable[..., MemoryStore],
) -> None:
    model = _judge_model(lambda ids: call("JudgeOutput", decision="duplicate", target_id=ids[0], reason="same"))
    store = _near_store(make_store, judge=LLMWriteJudge(model), merge_threshold=0.9)
    inferred = store.add(_fact("Weekly reports cover Monday to Sunday.", source="agent_inference"))
    told = store.add(_fact("Weekly reports cover Monday through Sunday.", source="user_feedback"))
    assert told.action == "superseded"
    assert told.unit.content == "Weekly reports cover Monday through Sunday."
    assert told.related_ids == (inferred.memory_id,)
    assert store.get(inferred.memory_id).status == "superseded"  # kept in history


def test_judge_is_not_asked_when_nothing_is_similar(make_store: Callable[..., MemoryStore]) -> None:
    model = scripted_model()
    store = make_store(judge=LLMWriteJudge(model))
    store.add(_fact("Customer Acme wants to be contacted by email."))
    store.add(_fact("周报只统计本周一到周日的数据。", task_type="weekly_report"))
    assert model.calls == 0


@pytest.mark.parametrize("locale", ["zh", "en"])
def test_judge_add_keeps_both_with_one_call_over_a_few_neighbours(
    make_store: Callable[..., MemoryStore], locale: str
) -> None:
    prompts: list[str] = []

    def respond(messages: list[BaseMessage]) -> Turn:
        prompts.append(str(messages[-1].content))
        return call("JudgeOutput", decision="add", target_id=None, reason="different customers")

    store = _near_store(
        make_store, judge=LLMWriteJudge(ReactiveToolModel(respond=respond), locale=locale, max_neighbours=2)
    )
    facts = list(ZH_FACTS)
    for text in facts[:4]:
        store.add(_fact(text))
    result = store.add(_fact(facts[4]))
    assert result.action == "added"
    assert result.reason == "different customers"
    assert len(prompts) == 4  # one call per write that had similar neighbours (none for the first)
    shown = re.findall(r"id=(mem_\w+)", prompts[-1])
    assert len(shown) == 2  # bounded
    assert set(shown) <= set(result.related_ids)
    assert ("已有经验" if locale == "zh" else "Stored lessons") in prompts[-1]
    assert facts[4] in prompts[-1]
    assert store.count(status="active") == 5


@pytest.mark.parametrize("decision", ["update", "conflict"])
def test_judge_update_or_conflict_supersedes_the_named_neighbour(
    make_store: Callable[..., MemoryStore], decision: str
) -> None:
    model = _judge_model(lambda ids: call("JudgeOutput", decision=decision, target_id=ids[0], reason=decision))
    store = _near_store(make_store, judge=LLMWriteJudge(model), conflict_threshold=0.5)
    old = store.add(_fact("周报统计上周一到上周日的数据。", task_type="weekly_report"))
    new = store.add(_fact("周报只统计本周一到本周日的数据。", task_type="weekly_report"))
    assert (new.action, new.related_ids) == ("superseded", (old.memory_id,))
    before = old.unit.score_confidence
    assert (
        new.reason == f"{decision} ({old.memory_id}: confidence {before:.2f} -> {before / 2:.2f}, kept as superseded)"
    )
    assert new.unit.supersedes == old.memory_id
    assert store.get(old.memory_id).status == "superseded"
    assert [u.memory_id for u in store.history(old.memory_id)] == [new.memory_id, old.memory_id]
    recalled = HindsightRetriever(store=store, k=5).recall("周报统计哪几天的数据？")
    assert [s.memory.memory_id for s in recalled] == [new.memory_id]


def test_judge_duplicate_merges_a_rewording_at_or_above_merge_threshold(make_store: Callable[..., MemoryStore]) -> None:
    model = _judge_model(lambda ids: call("JudgeOutput", decision="duplicate", target_id=ids[0], reason="reworded"))
    store = _near_store(make_store, judge=LLMWriteJudge(model), conflict_threshold=0.5, merge_threshold=0.8)
    first = store.add(_fact("Weekly reports cover Monday to Sunday."))
    again = store.add(_fact("Weekly reports cover Monday through Sunday."))
    assert (again.action, again.memory_id, again.related_ids) == ("merged", first.memory_id, (first.memory_id,))
    assert store.count() == 1


def test_judge_duplicate_below_merge_threshold_is_kept(make_store: Callable[..., MemoryStore]) -> None:
    model = _judge_model(lambda ids: call("JudgeOutput", decision="duplicate", target_id=ids[0], reason="reworded"))
    store = _near_store(make_store, judge=LLMWriteJudge(model), conflict_threshold=0.3, merge_threshold=0.999)
    store.add(_fact("Weekly reports cover Monday to Sunday."))
    again = store.add(_fact("Weekly reports cover Monday through Sunday."))
    assert again.action == "added"
    assert "below merge_threshold" in again.reason
    assert store.count(status="active") == 2


def test_judge_never_lets_a_less_trusted_unit_supersede(make_store: Callable[..., MemoryStore]) -> None:
    model = _judge_model(lambda ids: call("JudgeOutput", decision="conflict", target_id=ids[0], reason="contradicts"))
    store = _near_store(make_store, judge=LLMWriteJudge(model), conflict_threshold=0.5)
    told = store.add(_fact("周报只统计本周一到本周日的数据。", task_type="weekly_report"))
    echo = store.add(_fact("周报统计上周一到上周日的数据。", task_type="weekly_report", source="tool_output"))
    assert echo.action == "added"
    assert "never replaces" in echo.reason
    assert store.get(told.memory_id).status == "active"


def test_judge_answer_as_json_text_is_understood(make_store: Callable[..., MemoryStore]) -> None:
    """A model without tool calling (GenericFakeChatModel) answers in text; the JSON is parsed."""
    store = _near_store(make_store)
    old = store.add(_fact("周报统计上周一到上周日的数据。", task_type="weekly_report"))
    text = f'好的。\n```json\n{{"decision": "Update", "target_id": "{old.memory_id}", "reason": "更正"}}\n```'
    model = GenericFakeChatModel(messages=iter([AIMessage(content=text)]))
    judged = _near_store(make_store, "other", judge=LLMWriteJudge(model), conflict_threshold=0.5)
    judged.add(old.unit.evolve())
    new = judged.add(_fact("周报只统计本周一到本周日的数据。", task_type="weekly_report"))
    assert (new.action, new.related_ids) == ("superseded", (old.memory_id,))
    assert new.reason.startswith("更正 (")


@pytest.mark.parametrize(
    "answer",
    [
        "I think these are related.",
        '{"decision": "delete_everything", "target_id": null}',
        '{"decision": "conflict", "target_id": "mem_not_shown"}',
        call("JudgeOutput", decision="update", target_id="mem_0000", reason="made up"),
    ],
    ids=["prose", "unknown-decision", "unknown-id-json", "unknown-id-tool"],
)
def test_garbage_from_the_judge_falls_back_to_keeping_both_logged_once(
    make_store: Callable[..., MemoryStore], answer: Turn, caplog: pytest.LogCaptureFixture
) -> None:
    model = scripted_model(answer, answer)
    store = _near_store(make_store, judge=LLMWriteJudge(model))
    first = store.add(_fact("客户甲公司希望通过邮件联系。"))
    with caplog.at_level(logging.DEBUG, logger="langchain_hindsight.writes"):
        second = store.add(_fact("客户乙公司希望通过电话联系。"))
        third = store.add(_fact("客户丙公司希望通过微信联系。"))
    assert model.calls == 2
    assert (second.action, third.action) == ("added", "added")
    assert first.memory_id in second.related_ids
    assert store.count(status="active") == 3
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "langchain_hindsight.writes"]
    assert len(warnings) == 1
    assert "fell back to RuleWriteJudge" in warnings[0].getMessage()


def test_a_failing_judge_model_never_loses_the_write(make_store: Callable[..., MemoryStore]) -> None:
    model = scripted_model()  # exhausted: every call raises
    store = _near_store(make_store, judge=LLMWriteJudge(model))
    store.add(_fact("客户甲公司希望通过邮件联系。"))
    result = store.add(_fact("客户乙公司希望通过电话联系。"))
    assert result.action == "added"
    assert store.count(status="active") == 2


def test_bad_judge_options_are_refused(make_store: Callable[..., MemoryStore]) -> None:
    with pytest.raises(ConfigurationError, match="judge"):
        _near_store(make_store, judge="gpt")
    with pytest.raises(ConfigurationError, match="max_neighbours"):
        LLMWriteJudge(scripted_model(), max_neighbours=0)


def test_four_chinese_corrections_through_the_facade_stay_four(store: MemoryStore) -> None:
    from langchain_hindsight.hindsight import Hindsight

    corrections = [
        "不对，客户甲公司希望通过邮件联系。",
        "不对，客户乙公司希望通过电话联系。",
        "不对，客户丙公司希望通过微信联系。",
        "不对，客户甲公司每月订购300箱。",
    ]
    hs = Hindsight(store=store)
    try:
        for i, comment in enumerate(corrections):
            hs.journal.start(f"run-{i}", task="整理客户联系方式", task_type="general", served=[])
            assert len(hs.feedback(f"run-{i}", success=False, comment=comment).created) == 1
    finally:
        hs.close()
    told = store.list_units(status="active", source="user_feedback")
    assert len(told) == 4
    for entity in ("甲公司希望通过邮件", "乙公司希望通过电话", "丙公司希望通过微信", "甲公司每月订购300箱"):
        assert sum(entity in u.content for u in told) == 1, entity


def test_the_facade_judges_similar_writes_with_its_model(tmp_path: Path, embeddings: Embeddings) -> None:
    from langchain_hindsight import Hindsight

    with Hindsight(tmp_path / "a", embeddings=embeddings, model=judge_model("conflict")) as hs:
        assert isinstance(hs.store.judge, LLMWriteJudge)
        with Hindsight(store=hs.store) as same, pytest.raises(ConfigurationError):
            Hindsight(store=same.store, judge="rules")
    with Hindsight(tmp_path / "b", embeddings=embeddings) as hs:
        assert isinstance(hs.store.judge, RuleWriteJudge)
    with Hindsight(tmp_path / "c", embeddings=embeddings, model=judge_model("conflict"), judge="rules") as hs:
        assert isinstance(hs.store.judge, RuleWriteJudge)
