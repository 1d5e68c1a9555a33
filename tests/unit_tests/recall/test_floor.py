"""The relevance floor: ``min_relevance="auto"`` (the calibrated :class:`FloorRule`), a number, ``None``.

Unit tier: the rule's arithmetic and the options (fake embeddings). Integration tier
(the default embedder, real weights): the issue's weekly-report queries — short, with
an addition, long and multi-clause, and a chat transcript — get the weekly lesson, and
an autumn poem gets nothing, in both languages.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit
from langchain_hindsight.cli import search as search_command
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.recall import FusionWeights
from langchain_hindsight.recall.ranking import (
    AUTO_FLOOR,
    DEFAULT_MIN_RELEVANCE,
    FloorRule,
    rank_candidates,
    served_mask,
)
from langchain_hindsight.recall.scoring import ScoringWeights
from langchain_hindsight.session.config import SessionConfig

NOW = datetime(2026, 6, 1, tzinfo=UTC)
WEEKLY = "用户纠正（任务：生成本周的销售周报）：周报只统计本周一到周日的数据"


# ------------------------------------------------------------------ the rule (pure)
def test_the_default_rule_asks_for_evidence_of_any_kind() -> None:
    """Ranking scope (the default): a word in common or a cosine is evidence; the margin is the larger one."""
    rule = FloorRule(any_share=0.05, any_cosine=0.2, any_cross=0.1)
    cosine, share, blind = [0.3, 0.1, 0.1, 0.15], [0.0, 0.08, 0.0, 0.9], [False, False, False, True]
    assert rule.margins(cosine, share, blind, "cjk") == pytest.approx([0.1, 0.03, -0.05, 0.05])
    assert rule.margins(cosine, share, blind, "latin") == pytest.approx([0.1, 0.03, -0.05, 0.05])
    assert rule.passes(cosine, share, blind, "cjk").tolist() == [True, True, False, True]
    assert AUTO_FLOOR.scope == "ranking"
    with pytest.raises(ConfigurationError, match="scope"):
        FloorRule(scope="each")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="any_cross"):
        FloorRule(any_cross=-0.1)


def test_the_candidate_rule_weighs_cosine_and_lexical_share_per_query_script() -> None:
    rule = FloorRule(
        lexical_weight_cjk=1.0, threshold_cjk=0.4, lexical_weight_latin=0.5, threshold_latin=0.3, scope="candidate"
    )
    cosine, share, blind = [0.3, 0.3, 0.2], [0.1, 0.0, 0.4], [False, False, False]
    assert rule.margins(cosine, share, blind, "cjk") == pytest.approx([0.0, -0.1, 0.2])
    assert rule.margins(cosine, share, blind, "latin") == pytest.approx([0.05, 0.0, 0.1])
    # a memory in the other script is lexically blind: its cosine alone, against the cross-script
    # threshold of the query's script (cross_script_cjk for a Chinese query, cross_script otherwise)
    assert rule.passes([0.12, 0.10], [0.9, 0.9], [True, True], "latin").tolist() == [True, False]
    assert rule.margins([0.12, 0.07], [0.9, 0.9], [True, True], "cjk") == pytest.approx([0.01, -0.04])
    own = FloorRule(cross_script=0.2, cross_script_cjk=0.05, scope="candidate")
    assert own.passes([0.1, 0.1], [0.0, 0.0], [True, True], "cjk").tolist() == [True, True]
    assert own.passes([0.1], [0.0], [True], "latin").tolist() == [False]
    with pytest.raises(ConfigurationError, match="cross_script_cjk"):
        FloorRule(cross_script_cjk=-0.01)
    assert rule.margins([float("nan")], [0.0], [False], "latin")[0] == pytest.approx(-0.3)  # NaN counts nothing
    for bad in (float("nan"), -0.1, True):
        with pytest.raises(ConfigurationError, match="threshold_cjk"):
            FloorRule(threshold_cjk=bad)


def _rank(min_relevance: float | FloorRule | None, lexical: dict[str, float], fusion: str = "convex_idf") -> list[str]:
    units = {
        "a": MemoryUnit(memory_id="a", task_type="weekly_report", content="周报只统计本周一到周日的数据"),
        "b": MemoryUnit(memory_id="b", task_type="general", content="用户喜欢喝美式咖啡"),
    }
    dense = {"a": (units["a"], 0.36), "b": (units["b"], 0.20)}
    ranked = rank_candidates(
        "帮我做一下这周各门店的销售周报，按门店拆分，附上环比",
        dense,
        lexical,
        limit=5,
        task=(None, None),
        fallback_task_type="general",
        fusion=fusion,  # type: ignore[arg-type]
        fusion_weights=FusionWeights(alpha=0.5, alpha_cjk=0.2, cross_script=2.0),
        weights=ScoringWeights(),
        min_score=0.0,
        min_relevance=min_relevance,
        now=NOW,
        scripts={},
    )
    return [m.memory.memory_id for m in ranked]


def test_a_long_chinese_task_is_served_its_whole_ranking() -> None:
    """One memory with evidence opens the ranking: the coffee memory is served too, the agent sets it aside.

    (The previous default judged each candidate alone and served the weekly lesson only; with a long
    or dialogue query that cut relevant memories: ``benchmarks/results/floor_recall.md``.)
    """
    lexical = {"a": 0.06}  # a long task matches a small share of its own idf mass
    fused = 0.2 * 0.36 + 0.8 * 0.06
    assert fused < DEFAULT_MIN_RELEVANCE
    assert _rank(DEFAULT_MIN_RELEVANCE, lexical) == []
    assert _rank(AUTO_FLOOR, lexical) == ["a", "b"]  # the weekly lesson has evidence (0.36 >= 0.20)
    assert _rank(FloorRule(scope="candidate"), lexical) == ["a"]  # 0.36 + 0.06 >= 0.39; the coffee (0.20) fails
    assert _rank(None, lexical) == ["a", "b"]


def test_a_ranking_without_any_evidence_is_not_served() -> None:
    strict = FloorRule(any_cosine=0.5, any_share=0.5)  # neither 0.36 nor 0.20, nor the share 0.06, reaches it
    assert _rank(strict, {"a": 0.06}) == []
    assert _rank(strict, {"a": 0.6}) == ["a", "b"]


def test_every_result_carries_its_evidence_and_the_rankings_verdict() -> None:
    units = {
        "a": MemoryUnit(memory_id="a", task_type="general", content="周报只统计本周一到周日的数据"),
        "b": MemoryUnit(memory_id="b", task_type="general", content="用户喜欢喝美式咖啡"),
    }
    ranked = rank_candidates(
        "生成本周的销售周报",
        {"a": (units["a"], 0.30), "b": (units["b"], 0.05)},
        {"a": 0.05},
        limit=2,
        task=(None, None),
        fallback_task_type="general",
        fusion="convex_idf",
        fusion_weights=FusionWeights(alpha=0.5, alpha_cjk=0.2),
        weights=ScoringWeights(),
        min_score=0.0,
        min_relevance=None,
        now=NOW,
        scripts={},
    )
    by_id = {m.memory.memory_id: m.breakdown for m in ranked}
    expected_a = max(0.05 - AUTO_FLOOR.any_share, 0.30 - AUTO_FLOOR.any_cosine)
    assert by_id["a"]["evidence_margin"] == pytest.approx(expected_a)
    assert by_id["b"]["evidence_margin"] == pytest.approx(max(-AUTO_FLOOR.any_share, 0.05 - AUTO_FLOOR.any_cosine))
    assert by_id["a"]["floor_margin"] == by_id["b"]["floor_margin"] == pytest.approx(expected_a)  # both served
    assert served_mask(ranked, "auto") == [True, True]
    assert served_mask(ranked, FloorRule(scope="candidate", threshold_cjk=0.3)) == [
        m.breakdown["evidence_margin"] >= 0 for m in ranked
    ]
    assert served_mask(ranked, None) == [True, True]


def test_with_another_fusion_the_rule_falls_back_to_the_absolute_floor() -> None:
    # raw BM25 scores are no lexical share: the rule does not apply, DEFAULT_MIN_RELEVANCE on the fused relevance
    # does (as the ranking's verdict: one memory above it opens the ranking)
    assert _rank(AUTO_FLOOR, {"a": 3.0}, fusion="convex") == ["a", "b"]
    assert _rank(AUTO_FLOOR, {}, fusion="convex") == []


# ------------------------------------------------------------------ the options
@pytest.fixture
def memory_store(tmp_path: Path, fake_embeddings: Embeddings) -> Iterator[MemoryStore]:
    with MemoryStore(tmp_path / "db", embeddings=fake_embeddings) as store:
        yield store


def test_auto_is_the_default_and_other_values_are_validated(memory_store: MemoryStore) -> None:
    assert HindsightRetriever(store=memory_store).min_relevance == "auto"
    assert HindsightRetriever(store=memory_store).low_similarity_threshold == "auto"
    assert HindsightRetriever(store=memory_store, min_relevance=0.25).min_relevance == pytest.approx(0.25)
    assert HindsightRetriever(store=memory_store, min_relevance=AUTO_FLOOR).min_relevance is AUTO_FLOOR
    for bad in ("automatic", True, -0.1, 1.5, float("nan")):
        with pytest.raises(ConfigurationError):
            HindsightRetriever(store=memory_store, min_relevance=bad)
    with pytest.raises(ConfigurationError):
        HindsightRetriever(store=memory_store, low_similarity_threshold="loose")


@pytest.mark.parametrize("floor", ["auto", AUTO_FLOOR, 0.18, None])
def test_recall_logs_its_floor_at_info_whatever_the_floor_is(
    memory_store: MemoryStore, caplog: pytest.LogCaptureFixture, floor: object
) -> None:
    """The recall log line is built only at INFO: a floor it could not print broke every recall there."""
    import logging

    memory_store.add(MemoryUnit(task_type="weekly_report", content=WEEKLY))
    caplog.set_level(logging.INFO, logger="langchain_hindsight.recall.retriever")
    retriever = HindsightRetriever(store=memory_store, k=3, min_relevance=floor)  # type: ignore[arg-type]
    retriever.recall("生成本周的销售周报")
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("recall ")]
    expected = {"auto": "auto", None: "off", 0.18: "0.180"}.get(floor, "auto")  # type: ignore[call-overload]
    assert f"relevance floor {expected})" in line


def test_the_session_accepts_auto(memory_store: MemoryStore) -> None:
    assert SessionConfig(store=memory_store, min_relevance="auto").min_relevance == "auto"
    with pytest.raises(ConfigurationError, match="'auto'"):
        SessionConfig(store=memory_store, min_relevance="loose")  # type: ignore[arg-type]


# ------------------------------------------------------------------ hindsight search says what the floor serves
def test_search_marks_what_the_retriever_would_serve(
    tmp_path: Path, fake_embeddings: Embeddings, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embeddings=fake_embeddings) as store:
        store.add_many(
            [
                MemoryUnit(task_type="weekly_report", content=WEEKLY),
                MemoryUnit(task_type="general", content="The user prefers aisle seats on long flights."),
            ],
            dedupe=False,
        )
        served = {m.memory.memory_id for m in HindsightRetriever(store=store, k=5).recall("生成本周的销售周报")}
    args = argparse.Namespace(
        path=str(path),
        server=None,
        database_url=None,
        principal=None,
        config=None,
        namespace=None,
        k=5,
        task_type=None,
        json=True,
        query="生成本周的销售周报",
        embeddings=fake_embeddings,
        all=True,
    )
    assert search_command.search(args) == 0
    shown = json.loads(capsys.readouterr().out)
    assert len(shown) == 2  # with --all the search shows every match…
    assert {r["memory"]["memory_id"] for r in shown if r["served"]} == served  # …and marks what the floor serves
    assert all(r["served"] == (r["breakdown"]["floor_margin"] >= 0) for r in shown)
    args.all = False  # by default: what recall would serve, and how many more lie below the floor
    assert search_command.search(args) == 0
    out, err = capsys.readouterr()
    assert {r["memory"]["memory_id"] for r in json.loads(out)} == served
    assert ("below the relevance floor" in err) == (len(served) < 2)
