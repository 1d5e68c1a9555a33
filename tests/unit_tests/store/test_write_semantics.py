"""Write semantics that never lose a lesson: true duplicates merge, different statements never do.

Embedders: the recall claims use the ``store`` / ``make_store`` fixtures' real embedder (at the
time of writing the packaged all-MiniLM-L6-v2, ``tests/conftest.py``). MiniLM cannot read Chinese
(the distinct Chinese facts below sit at cosine ≈ 1.0 to each other, which is exactly what made the
old write path merge them), so the "recalled first by its own query" tests go through
``HindsightRetriever``'s default hybrid recall, whose lexical arm (CJK unigrams + bigrams, BM25)
tells 甲/乙/丙, 邮件/电话 and 300/500 apart; the English facts are told apart by both arms. The
judge-mechanics tests use :class:`NearEmbeddings` (every pair of texts ~0.94 similar, identical
texts 1.0), so what they test does not depend on how close a real embedder puts two sentences.
"""

from __future__ import annotations

import logging

import pytest

from langchain_hindsight.errors import ConfigurationError, MemoryNotFoundError
from langchain_hindsight.recall.scoring import score_many
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit
from tests.fakes import NgramEmbeddings


def _fact(content: str, **kwargs: object) -> MemoryUnit:
    kwargs.setdefault("task_type", "general")
    kwargs.setdefault("kind", "fact")
    kwargs.setdefault("source", "user_feedback")
    return MemoryUnit(content=content, **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the statement rule


def test_statement_key_normalises_only_form() -> None:
    from langchain_hindsight._statements import statement_key

    same = [
        ("客户甲公司希望通过邮件联系。", "客户甲公司 希望通过邮件联系"),
        ("Read ＧＢＫ CSVs.", "read gbk csvs"),
        ("Use encoding='utf-8-sig'!", "use encoding=utf-8-sig"),
        ("温度低于-5度", "温度低于 -5 度"),
    ]
    different = [("1.5", "15"), ("-5度", "5度"), ("no tone", "not one"), ("...", "!!!"), ("1,000", "1000")]
    for a, b in same:
        assert statement_key(a) == statement_key(b), (a, b)
    for a, b in different:
        assert statement_key(a) != statement_key(b), (a, b)


# ---------------------------------------------------------------- the article's conflict chain without a model (§3.4)
def _rule_store(**kwargs: object) -> MemoryStore:
    """In memory, on the similarity-preserving fake embedder: what the rule judge does does not need a real one."""
    return MemoryStore(backend=InMemoryBackend(), embeddings=NgramEmbeddings(), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("old_text", "new_text"),
    [
        ("用户偏好用Java写后端服务。", "用户偏好用Python写后端服务。"),
        ("The user prefers Java for backend services.", "The user prefers Python for backend services."),
    ],
    ids=["zh", "en"],
)
def test_a_contradicting_statement_supersedes_with_the_chain_in_history(
    old_text: str, new_text: str, caplog: pytest.LogCaptureFixture
) -> None:
    with _rule_store() as store:
        old = store.add(_fact(old_text, task_type="general", confidence=0.8))
        with caplog.at_level(logging.INFO, logger="langchain_hindsight.store"):
            new = store.add(_fact(new_text, task_type="general"))
        assert new.action == "superseded"
        assert new.related_ids == (old.memory_id,)
        assert "contradicts" in new.reason
        assert new.unit.supersedes == old.memory_id
        before = store.get(old.memory_id)
        assert before.status == "superseded"  # kept for history, not served
        assert before.confidence == pytest.approx(0.8 * store.policy.supersede_factor)  # halved
        assert [u.memory_id for u in store.history(new.memory_id)] == [new.memory_id, old.memory_id]
        assert [u.content for u in store.list_units(status="active")] == [new_text]
        assert any(f"superseded {old.memory_id}" in m and "contradicts" in m for m in caplog.messages)


def test_a_rule_supersede_says_how_to_undo_it() -> None:
    with _rule_store() as store:
        old = store.add(_fact("用户偏好用Java写后端服务。", confidence=0.9))
        new = store.add(_fact("用户偏好用Python写后端服务。"))
        assert f"({old.memory_id}: confidence 0.90 -> 0.45, kept as superseded)" in new.reason
        back = store.update(old.memory_id, status="active", confidence=0.9)  # the undo the reason spells out
        assert (back.status, back.confidence, back.content) == ("active", 0.9, old.unit.content)
        assert store.count(status="active") == 2


def test_a_contradiction_below_the_cosine_threshold_is_still_a_candidate() -> None:
    # the correction shares the subject, not the wording: 0.34 on this embedder, 0.36-0.56 on the default one
    lesson = "周报按最近7天滚动窗口统计销售额。"
    correction = "用户纠正（任务：生成本周的销售周报）：周报只统计本周一到周日的数据"
    embedder = NgramEmbeddings()
    cosine = sum(x * y for x, y in zip(embedder.embed_query(lesson), embedder.embed_query(correction), strict=True))
    with _rule_store() as store:
        assert cosine < store.conflict_threshold
        old = store.add(MemoryUnit(task_type="weekly_report", source="rule", content=lesson))
        new = store.add(MemoryUnit(task_type="weekly_report", source="user_feedback", content=correction))
        assert (new.action, new.related_ids) == ("superseded", (old.memory_id,))
        assert store.get(old.memory_id).status == "superseded"


def test_corrections_on_different_points_all_stay() -> None:
    prefix = "用户纠正（任务：生成本周的销售周报）："
    with _rule_store() as store:
        results = [
            store.add(MemoryUnit(task_type="weekly_report", source="user_feedback", content=prefix + text))
            for text in ("周报只统计本周一到周日", "金额要用含税价", "周报要发给张经理而不是李经理")
        ]
        assert [r.action for r in results] == ["added"] * 3
        assert store.count(status="active") == 3


def test_a_less_trusted_contradiction_never_supersedes() -> None:
    with _rule_store() as store:
        told = store.add(_fact("用户偏好用Java写后端服务。", source="user_feedback"))
        guessed = store.add(_fact("用户偏好用Python写后端服务。", source="agent_inference"))
        assert guessed.action == "added"
        assert "never replaces" in guessed.reason
        assert {u.status for u in store.get_many([told.memory_id, guessed.memory_id])} == {"active"}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("数据少于1万行时用pandas处理。", "数据超过1万行时用duckdb处理。"),  # compatible: other cases
        ("周报统计上周一到上周日的数据。", "周报只统计本周一到本周日的数据。"),  # the rules are unsure
        ("Alice prefers Java for backend services.", "Bob prefers Python for backend services."),  # unrelated
    ],
)
def test_without_a_sure_contradiction_both_stay_and_the_newer_ranks_first(a: str, b: str) -> None:
    with _rule_store() as store:
        first = store.add(_fact(a, task_type="general"))
        second = store.add(_fact(b, task_type="general"))
        assert second.action == "added"
        assert store.count(status="active") == 2
        # written the same day: at timestamp resolution the newer still ranks first when all else ties
        scored = score_many([first.unit, second.unit], [0.5, 0.5])
        assert scored.score[1] > scored.score[0]


def test_a_contradiction_in_the_same_batch_supersedes_the_earlier_unit() -> None:
    with _rule_store() as store:
        old, new = store.add_many(
            [_fact("Send the weekly report to the project manager."), _fact("Send the weekly report to the director.")]
        )
        assert (new.action, new.related_ids) == ("superseded", (old.memory_id,))
        assert store.get(old.memory_id).status == "superseded"


def test_no_thresholds_means_no_rule_judge_either() -> None:
    with _rule_store(conflict_threshold=None, merge_threshold=None) as store:
        store.add(_fact("用户偏好用Java写后端服务。"))
        assert store.add(_fact("用户偏好用Python写后端服务。")).action == "added"


def test_update_many_checks_every_unit_before_it_writes_any(memory_store: MemoryStore) -> None:
    kept = memory_store.add(_fact("Send the weekly report on Monday."), dedupe=False).unit
    shelved = memory_store.add(_fact("Invoices go out on the first of the month."), dedupe=False).unit
    memory_store.archive([shelved.memory_id])
    edited = kept.evolve(content="Send the weekly report on Friday.")
    with pytest.raises(ConfigurationError, match="restore"):
        memory_store.update_many([edited, memory_store.get(shelved.memory_id).evolve(status="active")])
    with pytest.raises(MemoryNotFoundError):
        memory_store.update_many([edited, _fact("never stored")])
    assert memory_store.get(kept.memory_id).content == "Send the weekly report on Monday."  # nothing was written
