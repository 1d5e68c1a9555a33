"""The fusion functions (langchain_hindsight.recall.fusion) and how the retriever applies them."""

from __future__ import annotations

import doctest
import math
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.embeddings import Embeddings

from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.recall import FusionWeights, query_script
from langchain_hindsight.recall import fusion as _fusion
from langchain_hindsight.recall.fusion import dense_weight, fuse, fuse_arrays, fusion_weights_for
from langchain_hindsight.recall.fusion import fuse as retriever_fuse
from langchain_hindsight.recall.retriever import HindsightRetriever
from langchain_hindsight.recall.scoring import ScoringWeights
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit

NOW = datetime(2026, 6, 1, tzinfo=UTC)
RELEVANCE_ONLY = ScoringWeights(similarity=1.0, task_type=0.0, confidence=0.0, access_cap=0.0, source=0.0)


# ---------------------------------------------------------------- query_script
@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("生成本周的销售周报", "cjk"),
        ("查一下ClickHouse里昨天的报错日志", "cjk"),  # one English product name in a Chinese sentence
        ("用pandas读取CSV", "cjk"),
        ("Write the weekly sales report", "latin"),
        ("Translate the 合同 into English", "latin"),  # one Chinese term in an English sentence
        ("週報を書いてください", "cjk"),  # Japanese kana and kanji
        ("주간 보고서를 작성하세요", "cjk"),  # Hangul
        ("", "latin"),
        ("2026-06-01 42%", "latin"),
    ],
)
def test_query_script(text: str, script: str) -> None:
    assert query_script(text) == script


# ---------------------------------------------------------------- dense_weight
def test_dense_weight_routes_by_script() -> None:
    assert dense_weight("生成本周的销售周报", latin=0.5, cjk=0.2) == 0.2
    assert dense_weight("Write the weekly report", latin=0.5, cjk=0.2) == 0.5


def test_dense_weight_without_a_cjk_weight_uses_one_weight_for_all() -> None:
    assert dense_weight("生成本周的销售周报", latin=0.3) == 0.3
    assert dense_weight("Write the weekly report", latin=0.3) == 0.3


@pytest.mark.parametrize(("latin", "cjk"), [(-0.1, None), (1.5, None), (0.5, 1.01), (math.nan, None), (0.5, math.inf)])
def test_dense_weight_rejects_weights_outside_the_unit_interval(latin: float, cjk: float | None) -> None:
    with pytest.raises(ConfigurationError, match="dense weight"):
        dense_weight("text", latin=latin, cjk=cjk)


# ---------------------------------------------------------------- fuse
def test_convex_idf_is_the_weighted_sum_of_cosine_and_lexical_share() -> None:
    got = fuse({"a": 0.9, "b": 0.4}, {"b": 0.8}, method="convex_idf", alpha=0.3)
    assert got == pytest.approx({"a": 0.27, "b": 0.3 * 0.4 + 0.7 * 0.8})


def test_values_are_clamped_to_the_unit_interval() -> None:
    got = fuse({"a": 1.3, "b": -0.2, "c": math.nan}, {"a": 2.0}, method="convex_idf", alpha=0.5)
    assert got == {"a": 1.0, "b": 0.0, "c": 0.0}


def test_a_lexically_blind_candidate_is_not_pushed_down_for_words_it_could_not_share() -> None:
    """A cross-language memory with a good cosine beats a same-language one that shares only a common word."""
    dense = {"english_answer": 0.55, "chinese_noise": 0.35}
    lexical = {"chinese_noise": 0.25}
    plain = fuse(dense, lexical, alpha=0.5)
    assert plain["chinese_noise"] > plain["english_answer"]  # the failure the imputation fixes
    fixed = fuse(dense, lexical, alpha=0.5, lexically_blind={"english_answer"}, blind_gain=1.0)
    assert fixed["english_answer"] == pytest.approx(0.55)
    assert fixed["english_answer"] > fixed["chinese_noise"] == pytest.approx(plain["chinese_noise"])


def test_blind_gain_scales_the_imputed_share_and_zero_turns_it_off() -> None:
    dense = {"x": 0.3}
    assert fuse(dense, {}, alpha=0.5, lexically_blind={"x"}, blind_gain=0.0) == pytest.approx({"x": 0.15})
    assert fuse(dense, {}, alpha=0.5, lexically_blind={"x"}, blind_gain=2.0) == pytest.approx({"x": 0.15 + 0.3})
    assert fuse(dense, {}, alpha=0.5, lexically_blind={"x"}, blind_gain=10.0) == pytest.approx({"x": 0.15 + 0.5})


def test_a_blind_candidate_keeps_its_own_lexical_share_when_that_is_higher() -> None:
    got = fuse({"x": 0.2}, {"x": 0.9}, alpha=0.5, lexically_blind={"x"}, blind_gain=1.0)
    assert got == pytest.approx({"x": 0.1 + 0.45})


def test_blindness_also_applies_to_the_best_normalised_convex_fusion() -> None:
    got = fuse({"a": 0.6, "b": 0.5}, {"b": 4.0}, method="convex", alpha=0.5, lexically_blind={"a"})
    assert got == pytest.approx({"a": 0.6, "b": 0.75})


def test_single_arm_and_rank_fusions() -> None:
    dense = {"a": 0.9, "b": 0.4}
    assert fuse(dense, {"b": 3.0}, method="dense") == pytest.approx({"a": 0.9, "b": 0.4})
    assert fuse(dense, {"b": 3.0}, method="lexical") == pytest.approx({"a": 0.0, "b": 1.0})
    rrf = fuse({"a": 0.9}, {"a": 5.0}, method="rrf")
    assert rrf == pytest.approx({"a": 1.0})  # first in both arms


def test_unknown_fusion_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="fusion must be one of"):
        fuse({"a": 0.5}, {}, method="nope")  # type: ignore[arg-type]


@given(
    rows=st.lists(
        st.tuples(
            st.floats(allow_nan=True, allow_infinity=True, width=64),
            st.one_of(st.none(), st.floats(min_value=0, max_value=30)),
            st.booleans(),
        ),
        min_size=1,
        max_size=10,
    ),
    method=st.sampled_from(["convex_idf", "convex", "rrf", "dense", "lexical"]),
    alpha=st.floats(min_value=0, max_value=1),
    gain=st.floats(min_value=0, max_value=3),
)
def test_fuse_arrays_equals_fuse_to_the_last_bit(
    rows: list[tuple[float, float | None, bool]], method: str, alpha: float, gain: float
) -> None:
    ids = [f"m{j}" for j in range(len(rows))]
    dense = {i: r[0] for i, r in zip(ids, rows, strict=True)}
    lexical = {i: r[1] for i, r in zip(ids, rows, strict=True) if r[1] is not None}
    blind = [i for i, r in zip(ids, rows, strict=True) if r[2]]
    expected = fuse(dense, lexical, method=method, alpha=alpha, lexically_blind=blind, blind_gain=gain)  # type: ignore[arg-type]
    got = fuse_arrays(
        ids,
        [r[0] for r in rows],
        [r[1] or 0.0 for r in rows],
        method=method,  # type: ignore[arg-type]
        alpha=alpha,
        lexically_blind=[r[2] for r in rows],
        blind_gain=gain,
        lexical_found=[r[1] is not None for r in rows],
    )
    assert got.tolist() == [expected[i] for i in ids]


def test_fuse_arrays_checks_its_input() -> None:
    with pytest.raises(ConfigurationError, match="one entry per candidate"):
        fuse_arrays(["a", "b"], [0.5], [0.0, 0.1])
    with pytest.raises(ConfigurationError, match="fusion must be one of"):
        fuse_arrays(["a"], [0.5], [0.0], method="nope")  # type: ignore[arg-type]


def test_the_retriever_module_still_exports_fuse() -> None:
    assert retriever_fuse is fuse


# ---------------------------------------------------------------- through the retriever
class ConceptEmbeddings(Embeddings):
    """A bilingual toy embedder: one axis per concept, named in both languages."""

    CONCEPTS = (
        ("weekly report", "周报"),
        ("slack", "群"),
        ("invoice", "发票"),
        ("refund", "退款"),
    )

    def _vec(self, text: str) -> list[float]:
        low = text.lower()
        v = [1.0 if en in low or zh in text else 0.0 for en, zh in self.CONCEPTS] + [0.3]
        n = math.sqrt(sum(x * x for x in v))
        return [x / n for x in v]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


@pytest.fixture
def bilingual_store(tmp_path: Path) -> Iterator[MemoryStore]:
    memories = {
        "en_weekly": "Post the weekly report in the #team Slack channel by Friday.",
        "zh_refund": "退款要先确认本周的订单号和支付渠道。",
        "zh_invoice": "开发票前先确认抬头和税号。",
    }
    with MemoryStore(tmp_path, embeddings=ConceptEmbeddings()) as store:
        store.add_many(
            [
                MemoryUnit(memory_id=i, task_type="general", content=c, created_at=NOW, last_accessed_at=NOW)
                for i, c in memories.items()
            ],
            dedupe=False,
        )
        yield store


def _top(store: MemoryStore, query: str, **fields: object) -> list[str]:
    retriever = HindsightRetriever(
        store=store,
        k=3,
        weights=RELEVANCE_ONLY,
        low_similarity_threshold=0.0,
        **fields,  # type: ignore[arg-type]
    )
    return [s.memory.memory_id for s in retriever.recall(query, now=NOW)]


def test_a_chinese_task_finds_the_english_lesson_when_cross_script_evidence_is_imputed(
    bilingual_store: MemoryStore,
) -> None:
    query = "本周的周报"
    without = _top(bilingual_store, query, fusion_alpha=0.2, fusion_cross_script=0.0)
    assert without[0] == "zh_refund"  # shares 本周 lexically, nothing else
    with_imputation = _top(bilingual_store, query, fusion_alpha=0.2, fusion_cross_script=1.0)
    assert with_imputation[0] == "en_weekly"


def test_the_cjk_weight_applies_to_chinese_queries_only(bilingual_store: MemoryStore) -> None:
    query = "本周的周报"
    # all-lexical for Chinese queries: the English lesson cannot be found by words
    assert _top(bilingual_store, query, fusion_alpha=1.0, fusion_alpha_cjk=0.0)[0] == "zh_refund"
    # all-dense for Chinese queries: the concept match wins
    assert _top(bilingual_store, query, fusion_alpha=0.0, fusion_alpha_cjk=1.0)[0] == "en_weekly"


@pytest.mark.parametrize("field", ["fusion_alpha_cjk", "fusion_cross_script"])
def test_retriever_rejects_bad_fusion_settings(bilingual_store: MemoryStore, field: str) -> None:
    with pytest.raises(ValueError):
        HindsightRetriever(store=bilingual_store, **{field: -0.5})  # type: ignore[arg-type]


# ---------------------------------------------------------------- weights declared by the embedder
class TunedConceptEmbeddings(ConceptEmbeddings):
    """The toy embedder declaring the weights it was tuned with."""

    fusion_weights = FusionWeights(alpha=0.2, alpha_cjk=0.2, cross_script=1.0)


def test_fusion_weights_validate() -> None:
    with pytest.raises(ConfigurationError, match="alpha"):
        FusionWeights(alpha=1.2)
    with pytest.raises(ConfigurationError, match="alpha_cjk"):
        FusionWeights(alpha_cjk=-0.1)
    with pytest.raises(ConfigurationError, match="cross_script"):
        FusionWeights(cross_script=math.inf)


def test_explicit_fields_win_over_the_declared_weights() -> None:
    declared = TunedConceptEmbeddings()
    given = FusionWeights(alpha=0.9, alpha_cjk=None, cross_script=0.0)
    assert fusion_weights_for(declared, given, explicit=()) == declared.fusion_weights
    assert fusion_weights_for(declared, given, explicit={"fusion_cross_script"}) == FusionWeights(0.2, 0.2, 0.0)
    assert fusion_weights_for(ConceptEmbeddings(), given, explicit=()) == given


def test_the_retriever_uses_the_weights_its_embedder_declares(tmp_path: Path) -> None:
    """Unset fusion fields come from the embedder: the cross-language lesson wins without any argument."""
    with MemoryStore(tmp_path, embeddings=TunedConceptEmbeddings()) as store:
        store.add_many(
            [
                MemoryUnit(
                    memory_id="en_weekly", content="Post the weekly report in the #team Slack channel by Friday."
                ),
                MemoryUnit(memory_id="zh_refund", content="退款要先确认本周的订单号和支付渠道。"),
            ],
            dedupe=False,
        )
        assert _top(store, "本周的周报")[0] == "en_weekly"
        # an explicit setting still wins: no imputation, so the lexical near-miss is back on top
        assert _top(store, "本周的周报", fusion_cross_script=0.0)[0] == "zh_refund"


def test_the_docstring_examples_are_correct() -> None:
    result = doctest.testmod(_fusion, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10
    assert result.failed == 0


def test_a_memory_rewritten_in_another_script_is_fused_by_its_new_script(bilingual_store: MemoryStore) -> None:
    # the retriever remembers each candidate's script; a rewrite of the content must not keep the old one
    retriever = HindsightRetriever(
        store=bilingual_store,
        k=3,
        weights=RELEVANCE_ONLY,
        min_relevance=None,
        low_similarity_threshold=0.0,
        fusion_alpha=0.5,
        fusion_alpha_cjk=0.2,
        fusion_cross_script=2.0,
    )

    def weekly() -> tuple[float, float, float]:
        got = {s.memory.memory_id: s for s in retriever.recall("本周的周报怎么发", now=NOW)}
        b = got["en_weekly"].breakdown
        return got["en_weekly"].similarity, b["dense"], b["lexical"]

    relevance, cosine, lexical = weekly()  # English content, Chinese query: lexically blind
    assert lexical < min(1.0, 2.0 * cosine)  # so blindness changes the relevance
    assert relevance == pytest.approx(0.2 * cosine + 0.8 * min(1.0, 2.0 * cosine))
    bilingual_store.update("en_weekly", content="周报周五前发到团队群里。")
    relevance, cosine, lexical = weekly()  # now Chinese: judged by its own lexical score
    assert lexical < min(1.0, 2.0 * cosine)
    assert relevance == pytest.approx(0.2 * cosine + 0.8 * lexical)


def test_convex_share_of_a_tiny_best_lexical_score_does_not_overflow() -> None:
    """``convex`` divides by the best lexical score: a subnormal best is still a share in [0, 1], no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fused = fuse_arrays(["a", "b"], [0.5, 0.5], [5e-324, 0.0], alpha=0.5, method="convex")
    assert fused.tolist() == [0.75, 0.25]
