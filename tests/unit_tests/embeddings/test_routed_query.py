"""ScriptRoutedEmbeddings.embed_query: a Latin query's two halves run at once, and the vector is the same."""

from __future__ import annotations

import math
import threading

import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight.embeddings.multilingual import ScriptRoutedEmbeddings


def _unit(dim: int, seed: int) -> list[float]:
    raw = [math.sin(seed * 7.0 + i) for i in range(dim)]
    norm = math.sqrt(sum(x * x for x in raw))
    return [x / norm for x in raw]


class _Half(Embeddings):
    """One half of the routed embedder: a fixed unit vector per text, meeting the other half at ``gate``."""

    def __init__(self, dim: int, gate: threading.Barrier | None = None, error: Exception | None = None) -> None:
        self.dim, self.gate, self.error = dim, gate, error
        self.threads: list[str] = []
        self.finished = threading.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.threads.append(threading.current_thread().name)
        try:
            if self.gate is not None:
                self.gate.wait()  # passes only when the other half is inside its embed_query too
            if self.error is not None:
                raise self.error
            return _unit(self.dim, len(text))
        finally:
            self.finished.set()


def _sequential(emb: ScriptRoutedEmbeddings, text: str) -> list[float]:
    """The vector as the routed embedder built it before its halves ran concurrently."""
    a, b = math.sqrt(emb.latin_share), math.sqrt(1.0 - emb.latin_share)
    return [a * x for x in _unit(384, len(text))] + [b * x for x in _unit(512, len(text))]


def test_a_latin_query_runs_both_halves_at_once_and_joins_them_as_before() -> None:
    gate = threading.Barrier(2, timeout=10)  # a sequential call would break it (BrokenBarrierError)
    minilm, use = _Half(384, gate), _Half(512, gate)
    emb = ScriptRoutedEmbeddings(minilm=minilm, use=use)
    text = "Retry HTTP 429 with exponential backoff"
    assert emb.embed_query(text) == _sequential(emb, text)
    assert minilm.threads == [threading.current_thread().name]  # MiniLM on the caller's thread
    assert use.threads[0].startswith("hindsight-embed")  # USE on the embedder's helper thread
    gate.reset()
    assert emb.embed_query(text) == _sequential(emb, text)
    assert len(set(use.threads)) == 1  # one helper thread, reused


def test_a_cjk_query_runs_the_multilingual_half_alone_and_starts_no_thread() -> None:
    minilm, use = _Half(384), _Half(512)
    emb = ScriptRoutedEmbeddings(minilm=minilm, use=use)
    vector = emb.embed_query("生成本周的销售周报")
    assert vector == [0.0] * 384 + _unit(512, len("生成本周的销售周报"))
    assert minilm.threads == []
    assert use.threads == [threading.current_thread().name]
    assert emb._helper is None


def test_a_minilm_failure_propagates_after_the_other_half_finished() -> None:
    minilm, use = _Half(384, error=RuntimeError("MiniLM broke")), _Half(512)
    emb = ScriptRoutedEmbeddings(minilm=minilm, use=use)
    with pytest.raises(RuntimeError, match="MiniLM broke"):
        emb.embed_query("an English query")
    assert use.finished.is_set()  # nothing is left running behind the error


def test_a_multilingual_failure_propagates_from_the_helper_thread() -> None:
    minilm, use = _Half(384), _Half(512, error=RuntimeError("USE broke"))
    with pytest.raises(RuntimeError, match="USE broke"):
        ScriptRoutedEmbeddings(minilm=minilm, use=use).embed_query("an English query")
