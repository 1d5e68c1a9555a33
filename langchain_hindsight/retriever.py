"""``HindsightRetriever``: hybrid candidate generation, weighted scoring, served-id records.

One recall (seed §2.4, §4.4):

1. embed the query once;
2. dense arm: Chroma nearest neighbours, over-fetching ``candidate_multiplier × k``;
   lexical arm: BM25 over content, task description, tags and tools (Chinese
   and English tokenisation), same depth;
3. candidates found only lexically get their cosine similarity from their stored
   vectors, so every candidate has both signals;
4. fusion turns the two signals into one relevance in [0, 1];
5. :func:`~langchain_hindsight.scoring.score_memory` adds task type, confidence,
   access heat, source and time decay; the best ``k`` are returned.

Only active units can come back: the dense arm and the id lookup drop
superseded units, archived ones live in another collection, and the lexical
index holds active units only.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from langchain_hindsight._safety import clean_text
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import Locale, get_templates
from langchain_hindsight.scoring import ScoringWeights, score_memory
from langchain_hindsight.store import MemoryStore
from langchain_hindsight.types import MemoryUnit, ScoredMemory, utcnow

__all__ = ["Fusion", "HindsightRetriever", "ServedRecord", "fuse"]

logger = logging.getLogger(__name__)

Fusion = Literal["convex_idf", "convex", "rrf", "dense", "lexical"]
"""How the two arms become one relevance in [0, 1].

``convex_idf`` (default, chosen by ``benchmarks/recall_quality.py``):
``alpha·cosine + (1 − alpha)·bm25 / idf_mass(query)`` (BM25 as the share of the
query's information matched, so an unrelated query stays low);
``convex``: ``alpha·cosine + (1 − alpha)·bm25 / best_bm25`` (the best lexical hit
always counts 1); ``rrf``: reciprocal-rank fusion
``Σ 1/(c + rank)`` scaled so rank 1 in both arms is 1; ``dense`` / ``lexical``:
one arm only (for comparison).
"""


@dataclass(frozen=True, slots=True)
class ServedRecord:
    """Which memories one recall served (for the feedback loop, seed §4.5)."""

    query: str
    namespace: str
    memory_ids: tuple[str, ...]
    at: datetime


def fuse(
    dense: Mapping[str, float],
    lexical: Mapping[str, float],
    *,
    method: Fusion = "convex_idf",
    alpha: float = 0.3,
    rrf_c: float = 60.0,
) -> dict[str, float]:
    """Combine per-id dense cosine similarities and BM25 scores into a relevance in [0, 1].

    Args:
        dense: Cosine similarity of every candidate (ids missing count as 0).
        lexical: BM25 score of the candidates the lexical arm found (for
            ``convex_idf``, already normalised to [0, 1] by the store).
        method: See :data:`Fusion`.
        alpha: Weight of the dense arm in ``convex``.
        rrf_c: The rank offset of ``rrf``.

    Example:
        >>> fuse({"a": 0.8, "b": 0.4}, {"b": 6.0}, method="convex", alpha=0.5)
        {'a': 0.4, 'b': 0.7}
    """
    ids = list(dict.fromkeys([*dense, *lexical]))
    if method == "dense":
        return {i: _clamp(dense.get(i, 0.0)) for i in ids}
    best = max(lexical.values(), default=0.0)
    if method == "lexical":
        return {i: lexical.get(i, 0.0) / best if best > 0 else 0.0 for i in ids}
    if method == "convex_idf":
        return {i: _clamp(alpha * _clamp(dense.get(i, 0.0)) + (1.0 - alpha) * _clamp(lexical.get(i, 0.0))) for i in ids}
    if method == "convex":
        return {
            i: _clamp(alpha * _clamp(dense.get(i, 0.0)) + (1.0 - alpha) * (lexical.get(i, 0.0) / best if best else 0.0))
            for i in ids
        }
    if method == "rrf":
        d_rank = {i: r for r, i in enumerate(sorted(dense, key=lambda i: (-dense[i], i)), 1)}
        l_rank = {i: r for r, i in enumerate(sorted(lexical, key=lambda i: (-lexical[i], i)), 1)}
        top = 2.0 / (rrf_c + 1.0)
        return {
            i: (
                (1.0 / (rrf_c + d_rank[i]) if i in d_rank else 0.0)
                + (1.0 / (rrf_c + l_rank[i]) if i in l_rank and lexical[i] > 0 else 0.0)
            )
            / top
            for i in ids
        }
    raise ConfigurationError(f"fusion must be one of {', '.join(get_args(Fusion))}, got {method!r}")


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0


def _to_document(scored: ScoredMemory) -> Document:
    unit = scored.memory
    return Document(
        id=unit.memory_id,
        page_content=unit.content,
        metadata={
            "memory_id": unit.memory_id,
            "task_type": unit.task_type,
            "kind": unit.kind,
            "confidence": unit.score_confidence,
            "source": unit.source,
            "namespace": unit.namespace,
            "tags": list(unit.tags),
            "score": scored.score,
            "similarity": scored.similarity,
            "breakdown": dict(scored.breakdown),
        },
    )


class HindsightRetriever(BaseRetriever):
    """Recall the memories that matter for a task (hybrid search + the seed's weighted score).

    Setup:
        Needs a :class:`~langchain_hindsight.store.MemoryStore`.

    Instantiate:
        .. code-block:: python

            from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit

            store = MemoryStore(persist_directory="./memory_db")
            store.add(MemoryUnit(task_type="weekly_report", content="周报的数据范围取上周一到周日的自然周。"))
            retriever = HindsightRetriever(store=store, k=5, task_type="weekly_report")

    Use:
        .. code-block:: python

            docs = retriever.invoke("生成本周的团队周报")          # Documents, best first
            docs[0].metadata["memory_id"], docs[0].metadata["breakdown"]
            memories = retriever.recall("生成本周的团队周报", k=3)  # typed: list[ScoredMemory]

    Async:
        .. code-block:: python

            docs = await retriever.ainvoke("生成本周的团队周报", k=3)
            memories = await retriever.arecall("生成本周的团队周报")

    Attributes:
        store: Where memories live (read through on every call, never cached here).
        k: Memories returned per call; a per-call ``k`` keyword overrides it.
        task_type: Task type of the current task (normalised with the store's
            vocabulary); matching memories get the task-type bonus.
        namespace: Namespace to search; ``None`` uses the store's default.
        weights: The scoring weights (seed defaults).
        min_score: Drop memories whose weighted score is below this.
        min_relevance: Drop memories whose fused query relevance is below this.
            0 (default) keeps everything; on the labelled set, unrelated queries'
            best relevance averaged 0.17 and correct top hits were >= 0.20
            (``benchmarks/results/recall_quality.md``), so ~0.15 trims noise.
        locale: Locale of the ``[相关经验]`` block the adapters render.
        fusion: How the dense and lexical arms combine (:data:`Fusion`).
        fusion_alpha: Weight of the dense arm in the convex fusions (0.3 measured best with MiniLM,
            which is weak on Chinese).
        candidate_multiplier: Each arm fetches ``candidate_multiplier × k`` (seed: 3k).
        low_similarity_threshold: When every served memory's dense similarity is
            below this, warn (once per retriever) that the embedder may not fit
            the domain (seed §5.1).
        on_served: Called after every recall with a :class:`ServedRecord`.
        served_log_size: How many :class:`ServedRecord` s :meth:`served` keeps.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: MemoryStore
    k: int = 5
    task_type: str | None = None
    namespace: str | None = None
    weights: ScoringWeights = Field(default_factory=ScoringWeights)
    min_score: float = 0.0
    min_relevance: float = 0.0
    locale: Locale = "zh"
    fusion: Fusion = "convex_idf"
    fusion_alpha: float = 0.3
    candidate_multiplier: int = 3
    low_similarity_threshold: float = 0.6
    on_served: Callable[[ServedRecord], None] | None = None
    served_log_size: int = 256

    _served: deque[ServedRecord] = PrivateAttr()
    _served_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _warned: bool = PrivateAttr(default=False)

    def model_post_init(self, __context: Any) -> None:
        """Create the bounded served log."""
        self._served = deque(maxlen=self.served_log_size)

    @field_validator("k", "candidate_multiplier", "served_log_size")
    @classmethod
    def _positive(cls, value: int) -> int:
        if isinstance(value, bool) or value < 1:
            raise ValueError(f"must be a positive int, got {value!r}")
        return value

    @field_validator("fusion_alpha", "min_relevance", "low_similarity_threshold")
    @classmethod
    def _unit_interval(cls, value: float) -> float:
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"must be in [0, 1], got {value!r}")
        return value

    @field_validator("locale")
    @classmethod
    def _locale(cls, value: Locale) -> Locale:
        get_templates(value)
        return value

    # ------------------------------------------------------------------ typed API
    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        task_type: str | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> list[ScoredMemory]:
        """The best memories for ``query``, scored, best first (at most ``k``).

        Args:
            query: The task description.
            k: Overrides :attr:`k`.
            task_type: Overrides :attr:`task_type`.
            namespace: Overrides :attr:`namespace`.
            now: The clock for time decay (aware datetime); defaults to now.

        Raises:
            ConfigurationError: a bad argument.
            StoreError: the store failed.
        """
        limit, wanted_type, ns, when = self._prepare(query, k, task_type, namespace, now)
        if not query.strip():
            return []
        query = clean_text(query)
        depth = limit * self.candidate_multiplier
        vector = self.store.embeddings.embed_query(query)
        dense, lexical = self.store.hybrid_search(
            query, vector, k=depth, namespace=ns, normalize=self.fusion == "convex_idf"
        )
        return self._finish(query, ns, dense, lexical, limit, wanted_type, when)

    async def arecall(
        self,
        query: str,
        *,
        k: int | None = None,
        task_type: str | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> list[ScoredMemory]:
        """Async :meth:`recall`: the blocking embedding and store work runs in a thread executor."""
        return await run_in_executor(
            None, lambda: self.recall(query, k=k, task_type=task_type, namespace=namespace, now=now)
        )

    def served(self) -> list[ServedRecord]:
        """The latest served records, oldest first (bounded by ``served_log_size``)."""
        with self._served_lock:
            return list(self._served)

    # ------------------------------------------------------------------ pure helpers
    def _prepare(
        self, query: object, k: int | None, task_type: str | None, namespace: str | None, now: datetime | None
    ) -> tuple[int, str | None, str, datetime]:
        if not isinstance(query, str):
            raise ConfigurationError(f"query must be a string, got {type(query).__name__}")
        limit = self.k if k is None else k
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"k must be a positive int, got {limit!r}")
        wanted = task_type if task_type is not None else self.task_type
        wanted_type = None if wanted is None else self.store.vocabulary.normalize(wanted)
        ns = namespace if namespace is not None else self.namespace
        when = now or utcnow()
        if when.tzinfo is None:
            raise ConfigurationError("now must be timezone-aware")
        return limit, wanted_type, self.store._ns(ns), when

    def _finish(
        self,
        query: str,
        namespace: str,
        dense: Mapping[str, tuple[MemoryUnit, float]],
        lexical: Mapping[str, float],
        limit: int,
        task_type: str | None,
        now: datetime,
    ) -> list[ScoredMemory]:
        cosine = {i: sim for i, (_, sim) in dense.items()}
        relevance = fuse(
            cosine, {i: s for i, s in lexical.items() if i in dense}, method=self.fusion, alpha=self.fusion_alpha
        )
        scored = [
            score_memory(
                unit,
                relevance[i],
                task_type=task_type,
                now=now,
                weights=self.weights,
                extra={"dense": cosine[i], "lexical": lexical.get(i, 0.0)},
            )
            for i, (unit, _) in dense.items()
        ]
        kept = [s for s in scored if s.score >= self.min_score and s.similarity >= self.min_relevance]
        kept.sort(key=lambda s: (-s.score, s.memory.memory_id))
        result = kept[:limit]
        self._diagnose(result)
        record = ServedRecord(query, namespace, tuple(s.memory.memory_id for s in result), now)
        with self._served_lock:
            self._served.append(record)
        if self.on_served is not None:
            self.on_served(record)
        return result

    def _diagnose(self, result: Sequence[ScoredMemory]) -> None:
        if not result:
            return
        best = max(s.breakdown.get("dense", 0.0) for s in result)
        if best < self.low_similarity_threshold:
            with self._served_lock:
                first, self._warned = not self._warned, True
            log = logger.warning if first else logger.debug
            log(
                "best dense similarity of recalled memories is %.2f (< %.2f): the embedding model may not fit this "
                "domain or language (seed §5.1); consider a domain or multilingual embedder",
                best,
                self.low_similarity_threshold,
            )

    # ------------------------------------------------------------------ BaseRetriever
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        return [_to_document(s) for s in self.recall(query, k=k, **kwargs)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        return [_to_document(s) for s in await self.arecall(query, k=k, **kwargs)]
