"""The candidate pipeline of one recall: fuse both arms, score, apply the floors, keep the best ``k``.

Input: the candidates of the dense arm (each with its memory and cosine similarity; candidates
found only lexically already carry the cosine of their stored vector) and the BM25 scores of the
lexical arm. :func:`rank_candidates`

1. fuses the two signals into one relevance in [0, 1]
   (:func:`~langchain_hindsight.recall.fusion.fuse_arrays`); a candidate written in another
   script than the query is lexically blind and gets the cross-script share instead;
2. scores every candidate at once (:func:`~langchain_hindsight.recall.scoring.score_many`:
   task type, confidence, access heat, source and time decay on top of the relevance);
3. drops candidates below ``min_score`` and below the relevance floor ``min_relevance``;
4. returns the best ``limit``, best first (ties by memory id), each with its breakdown
   (``dense`` and ``lexical`` included) and the task type it was scored against.

Pure: no store access, no logging; the retriever records and diagnoses what is served.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import numpy as np

from langchain_hindsight.recall.fusion import Fusion, FusionWeights, Script, fuse_arrays, query_script
from langchain_hindsight.recall.scoring import ScoringWeights, score_many
from langchain_hindsight.types import MemoryUnit, ScoredMemory, TaskTypeSource

__all__ = [
    "DEFAULT_LOW_RELEVANCE",
    "DEFAULT_MIN_RELEVANCE",
    "SCRIPT_CACHE_SIZE",
    "ScriptCache",
    "content_script",
    "rank_candidates",
]

DEFAULT_MIN_RELEVANCE = 0.18
"""Default relevance floor: a memory whose fused query relevance (before
confidence, task type, access, source and recency are added) is below it is
never served, so an unrelated task gets no block. Calibrated by
``benchmarks/recall_quality.py`` for the default embedder on the tuning split
(midpoint of the highest no-answer relevance, 0.161, and the weakest correct
answer, 0.194); on the held-out splits 17 of 18 no-answer queries got no block.
It also fits USE alone (no-answer max 0.175, weakest answer 0.222); re-measure
for another embedder or fusion."""

DEFAULT_LOW_RELEVANCE = DEFAULT_MIN_RELEVANCE
"""Default ``low_similarity_threshold``: served memories below the calibrated
relevance level are weak matches (only possible with a lowered or disabled
floor), and the retriever warns that the embedder may not fit."""

SCRIPT_CACHE_SIZE = 16_384
"""Candidates whose content script a retriever remembers (emptied when full; it holds their content strings)."""

ScriptCache = dict[str, tuple[str, Script]]
"""Memory id → (content, :func:`query_script` of that content), owned by one retriever."""


def content_script(scripts: ScriptCache, unit: MemoryUnit) -> Script:
    """:func:`query_script` of a candidate's content, remembered in ``scripts`` per memory (and content)."""
    cached = scripts.get(unit.memory_id)
    if cached is not None and (cached[0] is unit.content or cached[0] == unit.content):
        return cached[1]
    script = query_script(unit.content)
    if len(scripts) >= SCRIPT_CACHE_SIZE:
        scripts.clear()
    scripts[unit.memory_id] = (unit.content, script)
    return script


def rank_candidates(
    query: str,
    dense: Mapping[str, tuple[MemoryUnit, float]],
    lexical: Mapping[str, float],
    *,
    limit: int,
    task: tuple[str | None, TaskTypeSource | None],
    fallback_task_type: str,
    fusion: Fusion,
    fusion_weights: FusionWeights,
    weights: ScoringWeights,
    min_score: float,
    min_relevance: float | None,
    now: datetime,
    scripts: ScriptCache,
) -> list[ScoredMemory]:
    """The best ``limit`` candidates for ``query``, scored, best first; none below either floor.

    Args:
        query: The (cleaned) task text.
        dense: Every candidate: memory id → (memory, cosine similarity to the query).
        lexical: Memory id → BM25 score, for the candidates the lexical arm found.
        limit: How many to return at most.
        task: The task type scored against and its source. An inferred fallback label
            (``"general"``: nothing recognised) is recorded but earns no task-type bonus.
        fallback_task_type: The vocabulary's fallback label.
        fusion: The fusion method.
        fusion_weights: The resolved fusion weights (dense weight per script, cross-script gain).
        weights: The scoring weights.
        min_score: Drop candidates whose weighted score is below it.
        min_relevance: The relevance floor (``None``: no floor).
        now: The clock for time decay (aware).
        scripts: The caller's content-script cache (see :func:`content_script`).
    """
    ids = list(dense)
    units = [unit for unit, _ in dense.values()]
    cosine = np.fromiter((sim for _, sim in dense.values()), dtype=np.float64, count=len(ids))
    lex = np.fromiter((lexical.get(i, 0.0) for i in ids), dtype=np.float64, count=len(ids))
    script = query_script(query)
    fw = fusion_weights
    alpha = fw.alpha if fw.alpha_cjk is None else (fw.alpha_cjk if script == "cjk" else fw.alpha)
    relevance = fuse_arrays(
        ids,
        cosine,
        lex,
        method=fusion,
        alpha=alpha,
        lexically_blind=np.fromiter((content_script(scripts, u) != script for u in units), dtype=bool, count=len(ids)),
        blind_gain=fw.cross_script,
        lexical_found=np.fromiter((i in lexical for i in ids), dtype=bool, count=len(ids)),
    )
    label, source = task
    # "general" found by inference means "not recognised": recorded, but no bonus for general memories
    bonus_type = label if source == "fixed" or label != fallback_task_type else None
    table = score_many(units, relevance, task_type=bonus_type, now=now, weights=weights)
    keep = table.score >= min_score
    if min_relevance is not None:
        keep &= table.similarity >= min_relevance
    rows = np.flatnonzero(keep).tolist()
    scores = table.score.tolist()
    rows.sort(key=lambda j: (-scores[j], ids[j]))
    return [
        table.scored(j, extra={"dense": float(cosine[j]), "lexical": float(lex[j])}, query_task_type=label)
        for j in rows[:limit]
    ]
