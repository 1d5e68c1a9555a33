"""Both versions of a word the user changed stay served, the newer first (issue 33, point 3).

When the claim rule cannot read a changed preference as a change (``不对，月报里要用柱状图`` / "No, use a line
chart in the monthly report instead": across languages the rule is unsure), the store keeps both; recall then
puts the later word above the earlier, and leaves every other line where its score put it. A change the rule
reads (an explicit "… instead" on the same object, see ``tests/unit_tests/test_change_markers.py``) supersedes.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit
from langchain_hindsight.recall.ranking import later_word_first, same_subject
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.types import ScoredMemory
from tests.fakes import NgramEmbeddings

DATA = Path(__file__).parents[1] / "data"
T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _scored(content: str, *, days: int, source: str = "user_feedback", task_type: str = "monthly_report",
            score: float = 0.5) -> ScoredMemory:  # fmt: skip
    unit = MemoryUnit(task_type=task_type, content=content, source=source, created_at=T0 + timedelta(days=days))  # type: ignore[arg-type]
    return ScoredMemory(memory=unit, score=score, similarity=score)


def _contents(memories: list[ScoredMemory]) -> list[str]:
    return [m.memory.content for m in memories]


BAR = "No, keep the first record when deduplicating"
LINE = "No, keep the newest record when deduplicating instead"


def test_the_newer_version_moves_above_the_older_and_the_rest_keeps_its_place() -> None:
    lesson = _scored("Check the monthly totals against the ledger", days=5, source="rule", score=0.6)
    ranked = [_scored(BAR, days=0, score=0.9), lesson, _scored(LINE, days=3, score=0.4)]
    assert _contents(later_word_first(ranked)) == [LINE, lesson.memory.content, BAR]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("No, keep the first record when deduplicating", "No, keep the newest record when deduplicating instead"),
        ("不对，去重时保留第一条记录", "不对，去重时改为保留最新的记录"),
        ("不对，月报里要用柱状图", "No, use a line chart in the monthly report instead"),  # across languages: unsure
    ],
)  # fmt: skip
def test_changed_words_in_either_language_are_one_subject(old: str, new: str) -> None:
    ranked = [_scored(old, days=0, score=0.9), _scored(new, days=1, score=0.3)]
    assert _contents(later_word_first(ranked)) == [new, old]


def test_other_subjects_other_task_types_and_lessons_keep_their_rank() -> None:
    other_point = [_scored("不对，金额要用含税价", days=0, score=0.9), _scored("不对，周报要用PDF格式", days=1)]
    assert later_word_first(other_point) == other_point
    other_type = [_scored(BAR, days=0), _scored(LINE, days=1, task_type="weekly_report")]
    assert later_word_first(other_type) == other_type
    lessons = [_scored(BAR, days=0, source="rule"), _scored(LINE, days=1, source="agent_inference")]
    assert later_word_first(lessons) == lessons


def test_a_group_of_three_fills_its_places_newest_first() -> None:
    first = _scored(BAR, days=0, score=0.9)
    second = _scored("No, keep the last record when deduplicating", days=1, score=0.8)
    third = _scored(LINE, days=2, score=0.1)
    assert _contents(later_word_first([first, second, third])) == [LINE, second.memory.content, BAR]


def test_distinct_facts_about_other_subjects_keep_their_rank() -> None:
    """Another entity is another fact, however many words they share: each stays first for its own question."""
    acme = _scored("Customer Acme wants to be contacted by email.", days=0, score=0.9)
    beta = _scored("Customer Beta wants to be contacted by phone.", days=1, score=0.5)
    assert later_word_first([acme, beta]) == [acme, beta]


@pytest.mark.parametrize("split", ["tuning", "heldout", "heldout_c"])
def test_every_labelled_change_is_one_subject(split: str) -> None:
    """On the labelled claim pairs (zh, en and across), every pair labelled a change is grouped, so a changed
    word the store kept twice is always served newer first; unrelated pairs are grouped only where their words
    overlap or the rule cannot tell (a different order of two served lines, nothing dropped)."""
    rows = [json.loads(line) for line in (DATA / f"claim_pairs_{split}.jsonl").read_text(encoding="utf-8").splitlines()]
    changes = [r for r in rows if r["relation"] == "contradicts"]
    assert {r["lang"] for r in changes} >= {"zh", "en"}
    assert [r["id"] for r in changes if not same_subject(r["a"], r["b"])] == []
    unrelated_zh_en = [r for r in rows if r["relation"] == "unrelated" and r["lang"] != "mixed"]
    grouped = sum(same_subject(r["a"], r["b"]) for r in unrelated_zh_en)
    assert grouped < len(unrelated_zh_en) / 2


BAR_ZH = "不对，月报里要用柱状图"
LINE_EN = "No, use a line chart in the monthly report instead"


def test_recall_serves_both_versions_the_newer_first() -> None:
    with MemoryStore(backend=InMemoryBackend(), embeddings=NgramEmbeddings()) as store:
        # the newer is written second; the older one is given a higher confidence, so the score alone ranks it first
        old = store.add(MemoryUnit(task_type="monthly_report", content=BAR_ZH, source="user_feedback", confidence=1.0,
                                   created_at=T0))  # fmt: skip
        new = store.add(MemoryUnit(task_type="monthly_report", content=LINE_EN, source="user_feedback",
                                   confidence=0.9, created_at=T0 + timedelta(days=1)))  # fmt: skip
        assert (old.action, new.action) == ("added", "added")  # across languages the rule is unsure: both kept
        retriever = HindsightRetriever(store=store, k=5, task_type="monthly_report", min_relevance=None)
        served = [d.metadata["memory_id"] for d in retriever.invoke("make the monthly report chart")]
    assert served.index(new.unit.memory_id) < served.index(old.unit.memory_id)
