"""The models without LangChain: which one a store's identity names, and the query cache they share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight.embeddings.identity import MINILM_NAME, EmbedderIdentity
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.models import (
    MiniLMModel,
    MultilingualModel,
    ScriptRoutedModel,
    default_model,
)
from langchain_hindsight.embeddings.multilingual import (
    MultilingualEmbeddings,
    ScriptRoutedEmbeddings,
    default_embeddings,
)
from langchain_hindsight.errors import UnknownOptionError
from tests.fakes import HashEmbeddings

PAIRS = [(LocalEmbeddings, MiniLMModel), (MultilingualEmbeddings, MultilingualModel)]
PAIRS += [(ScriptRoutedEmbeddings, ScriptRoutedModel)]


@pytest.mark.parametrize(("public", "model"), PAIRS)
def test_each_public_embedder_is_its_model_with_the_langchain_base(public: type, model: type) -> None:
    assert issubclass(public, model)
    assert issubclass(public, Embeddings)
    assert not issubclass(model, Embeddings)


def test_the_routed_model_joins_the_models_and_the_public_one_the_public_embedders() -> None:
    routed = ScriptRoutedModel()
    assert type(routed.minilm) is MiniLMModel
    assert type(routed.use) is MultilingualModel
    public = ScriptRoutedEmbeddings()
    assert type(public.minilm) is LocalEmbeddings
    assert type(public.use) is MultilingualEmbeddings


@pytest.mark.parametrize(
    ("recorded", "public", "model"),
    [
        (None, ScriptRoutedEmbeddings, ScriptRoutedModel),
        (EmbedderIdentity(MINILM_NAME), LocalEmbeddings, MiniLMModel),
        (EmbedderIdentity("use-multilingual-v3", 512), MultilingualEmbeddings, MultilingualModel),
        (EmbedderIdentity("HashEmbeddings", 64), ScriptRoutedEmbeddings, ScriptRoutedModel),
    ],
)
def test_the_default_for_a_recorded_identity_is_one_rule(
    recorded: EmbedderIdentity | None, public: type, model: type
) -> None:
    assert default_model(recorded) is model
    assert type(default_embeddings(recorded)) is public


class _Counting(MultilingualModel):
    """The multilingual model with a stand-in encoder that counts the texts it encodes."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.encoded: list[str] = []

    def _encode(self, texts: Sequence[str]) -> Any:
        self.encoded.extend(texts)
        return np.asarray([HashEmbeddings(self.dimension).embed_query(t) for t in texts])


def test_the_query_cache_keeps_the_most_recent_queries_and_returns_copies() -> None:
    model = _Counting(query_cache_size=2)
    first = model.embed_query("a")
    first.append(9.0)  # a caller's change never reaches the cache
    assert model.embed_query("a") == first[:-1]
    model.embed_query("b")
    model.embed_query("a")  # "a" is now the most recent: "b" goes first
    model.embed_query("c")
    assert model.encoded == ["a", "b", "c"]
    model.embed_query("a")  # kept
    model.embed_query("b")  # dropped: encoded again
    assert model.encoded == ["a", "b", "c", "b"]


def test_a_cache_of_size_zero_keeps_nothing() -> None:
    model = _Counting(query_cache_size=0)
    model.embed_query("a")
    model.embed_query("a")
    assert model.encoded == ["a", "a"]


@pytest.mark.parametrize(
    ("make", "public", "wrong", "meant"),
    [
        (lambda: LocalEmbeddings(query_thread=1), "LocalEmbeddings", "query_thread", "query_threads"),
        (lambda: MultilingualEmbeddings(batchsize=8), "MultilingualEmbeddings", "batchsize", "batch_size"),
        (lambda: ScriptRoutedEmbeddings(minlm=None), "ScriptRoutedEmbeddings", "minlm", "minilm"),
        (lambda: MiniLMModel(backnd="onnx"), "MiniLMModel", "backnd", "backend"),
        (lambda: MultilingualModel(cache_directory=None), "MultilingualModel", "cache_directory", "cache_dir"),
        (lambda: ScriptRoutedModel(uses=None), "ScriptRoutedModel", "uses", "use"),
    ],
)
def test_a_misspelt_option_names_the_class_and_the_meant_one(make: Any, public: str, wrong: str, meant: str) -> None:
    with pytest.raises(UnknownOptionError) as caught:
        make()
    assert str(caught.value) == f"unknown {public} option {wrong!r} (did you mean {meant!r}?)"
