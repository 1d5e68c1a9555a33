"""MultilingualEmbeddings: the default embedder reads Chinese and English, pins BLAS to one thread, rejects damage."""

from __future__ import annotations

from typing import Any

import pytest

from langchain_hindsight.embeddings.identity import EmbedderIdentity, embedder_identity
from langchain_hindsight.embeddings.models import check_vectors
from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings, ScriptRoutedEmbeddings
from langchain_hindsight.errors import ConfigurationError, EmbeddingError
from langchain_hindsight.recall import query_script


@pytest.mark.parametrize("kwargs", [{"batch_size": 0}, {"batch_size": True}, {"query_cache_size": -1}])
def test_bad_options_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        MultilingualEmbeddings(**kwargs)


def test_identity_is_declared_without_loading() -> None:
    emb = MultilingualEmbeddings()
    assert embedder_identity(emb) == EmbedderIdentity("use-multilingual-v3", 512)
    assert emb._model is None


# -- BLAS pinned to one thread, restored after -----------------------------------------------


# -- damaged weights are a typed error, never stored --------------------------------------------


@pytest.mark.parametrize(
    ("vectors", "match"),
    [
        ([[0.0, 0.0]], "length 0"),
        ([[float("nan"), 1.0]], "NaN"),
        ([[1.0, 0.0], [0.0, 1.0]], "shape"),
        ([[1.0, 0.0, 0.0]], "shape"),
    ],
)
def test_check_vectors_rejects_degenerate_output(vectors: list[list[float]], match: str) -> None:
    with pytest.raises(EmbeddingError, match=match):
        check_vectors(vectors, 1, 2, source="test")
    check_vectors([[0.6, 0.8]], 1, 2, source="test")


# -- the default: MiniLM and USE routed by script ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("生成本周的销售周报", "cjk"),
        ("查一下ClickHouse里昨天的报错日志", "cjk"),
        ("Translate the 合同 into English", "latin"),
        ("Read CSV with utf-8-sig", "latin"),
        ("42", "latin"),
        ("", "latin"),
    ],
)
def test_routing_script(text: str, script: str) -> None:
    assert query_script(text) == script


def test_each_embedder_declares_the_fusion_weights_chosen_with_it() -> None:
    from langchain_hindsight.recall import FusionWeights

    assert ScriptRoutedEmbeddings().fusion_weights == FusionWeights(0.5, 0.2, 2.0)
    assert MultilingualEmbeddings().fusion_weights == FusionWeights(0.6, 0.8, 0.0)
