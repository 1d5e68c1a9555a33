"""The candidate pipeline of one recall: fuse both arms, score, apply the floors, keep the best ``k``.

Input: the candidates of the dense arm (each with its memory and cosine similarity; candidates
found only lexically already carry the cosine of their stored vector) and the BM25 scores of the
lexical arm. :func:`rank_candidates`

1. fuses the two signals into one relevance in [0, 1]
   (:func:`~langchain_hindsight.recall.fusion.fuse_arrays`); a candidate written in another
   script than the query is lexically blind and gets the cross-script share instead;
2. scores every candidate at once (:func:`~langchain_hindsight.recall.scoring.score_many`:
   task type, confidence, access heat, source and time decay on top of the relevance);
3. drops candidates below ``min_score`` and below the relevance floor: a number is an absolute floor
   on the fused relevance; a :class:`FloorRule` (the default, :data:`AUTO_FLOOR`) judges each
   candidate's evidence against a threshold for its script pair (:meth:`FloorRule.passes`);
4. returns the best ``limit``, best first (ties by memory id), each with its breakdown
   (``dense`` and ``lexical`` included) and the task type it was scored against.

Pure: no store access, no logging; the retriever records and diagnoses what is served.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import numpy as np
import numpy.typing as npt

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight._script import FusionWeights, Script, query_script
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.recall.fusion import Fusion, fuse_arrays
from langchain_hindsight.recall.scoring import ScoringWeights, score_many
from langchain_hindsight.types import MemoryUnit, ScoredMemory, TaskTypeSource

__all__ = [
    "AUTO_FLOOR",
    "DEFAULT_LOW_RELEVANCE",
    "DEFAULT_MIN_RELEVANCE",
    "SCRIPT_CACHE_SIZE",
    "FloorRule",
    "LowRelevance",
    "MinRelevance",
    "ScriptCache",
    "content_script",
    "rank_candidates",
]

MinRelevance = float | Literal["auto"] | None
"""The ``min_relevance`` option: ``"auto"`` (default) applies :data:`AUTO_FLOOR`; a number is an
absolute floor on the fused relevance; ``None`` disables the floor."""

LowRelevance = float | Literal["auto"]
"""The ``low_similarity_threshold`` option: ``"auto"`` (default) warns when even the best served memory
fails :data:`AUTO_FLOOR`; a number warns when the best fused relevance is below it."""

DEFAULT_MIN_RELEVANCE = 0.18
"""The absolute relevance floor that was the default before the calibrated rule
(``min_relevance="auto"``, :data:`AUTO_FLOOR`) replaced it; ``min_relevance=DEFAULT_MIN_RELEVANCE``
restores it. A memory whose fused query relevance (before confidence, task type,
access, source and recency are added) is below it is never served. It was chosen
on short task texts (``benchmarks/recall_quality.py``: midpoint of the highest
no-answer relevance, 0.161, and the weakest correct answer, 0.194) and silences
Chinese: a long or multi-clause Chinese task, or a chat transcript, matches its
lesson at a fused relevance of 0.10–0.17, because the Chinese fusion weights the
lexical share (which shrinks with every unmatched clause) at 0.8.
``benchmarks/floor_calibration.py`` measures it against the rule per slice."""

DEFAULT_LOW_RELEVANCE: LowRelevance = "auto"
"""Default ``low_similarity_threshold``: the retriever warns that the embedder may not fit when
even the best served memory fails :data:`AUTO_FLOOR` (only possible with a lowered or disabled
floor)."""


@refuse_unknown_keywords
@dataclass(frozen=True, slots=True)
class FloorRule:
    """A relevance floor judged on each candidate's evidence, per script pair (``min_relevance="auto"``).

    The fused relevance is built for ranking: for a Chinese query it is ``0.2·cosine + 0.8·lexical
    share``, and the lexical share (the part of the query's idf mass a memory matches) shrinks
    with every clause a longer task or a chat transcript adds, so one absolute number on it either
    silences long Chinese queries or serves unrelated short ones. The rule judges the two signals
    with its own weights instead:

    * same script as the query: ``evidence = cosine + w·lexical share``, passing when at least the
      threshold of the query's script (``lexical_weight_cjk``/``threshold_cjk`` for a mostly-CJK
      query, ``lexical_weight_latin``/``threshold_latin`` otherwise);
    * another script (lexically blind): ``evidence = cosine``, passing when at least the cross-script
      threshold of the query's script (``cross_script_cjk`` for a mostly-CJK query, ``cross_script``
      otherwise; both 0.11 by default: a lower one for Chinese queries, 0.08, won on tuning and lost
      on held-out, see ``docs/recall.md``).

    The defaults were chosen on the tuning split of ``benchmarks/floor_calibration.py`` for the
    default embedder (script-routed MiniLM + USE, ``convex_idf``) to maximise the mean plus half
    the minimum of the per-slice rates (short / long / chat transcript × zh / en / cross-language,
    related queries served their memory, unrelated ones served nothing).
    ``benchmarks/floor_designs.py`` compares them on that split, with the chat forms an adapter sends
    added, against floors per query length, relative to the query's own score distribution or to a
    background set, and a deeper fetch. They assume ``convex_idf`` lexical shares; with another
    fusion the engine applies :data:`DEFAULT_MIN_RELEVANCE` instead.
    Re-measure for another embedder.

    Attributes:
        lexical_weight_cjk: Weight of the lexical share in the evidence for a CJK query.
        threshold_cjk: Evidence a same-script candidate of a CJK query needs.
        lexical_weight_latin: Weight of the lexical share for a Latin-script query.
        threshold_latin: Evidence a same-script candidate of a Latin-script query needs.
        cross_script: Cosine a candidate written in the other script needs, for a Latin-script query.
        cross_script_cjk: Cosine a candidate written in the other script needs, for a CJK query.

    Example:
        >>> rule = FloorRule()
        >>> rule.passes([0.30, 0.30, 0.12], [0.10, 0.0, 0.0], [False, False, True], "cjk").tolist()
        [True, False, True]
        >>> FloorRule(cross_script_cjk=0.08).passes([0.09], [0.0], [True], "cjk").tolist()
        [True]
    """

    lexical_weight_cjk: float = 1.0
    threshold_cjk: float = 0.39
    lexical_weight_latin: float = 0.5
    threshold_latin: float = 0.34
    cross_script: float = 0.11
    cross_script_cjk: float = 0.11

    def __post_init__(self) -> None:
        for name in (
            "lexical_weight_cjk",
            "threshold_cjk",
            "lexical_weight_latin",
            "threshold_latin",
            "cross_script",
            "cross_script_cjk",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ConfigurationError(f"FloorRule.{name} must be a finite number >= 0, got {value!r}")

    def margins(self, cosine: npt.ArrayLike, share: npt.ArrayLike, blind: npt.ArrayLike, script: Script) -> np.ndarray:
        """Each candidate's evidence minus the threshold it needs (``>= 0`` passes).

        Args:
            cosine: Cosine similarity per candidate.
            share: Lexical share per candidate (the ``convex_idf`` normalised BM25, in [0, 1]).
            blind: Per candidate, whether it is written in another script than the query.
            script: The query's script (:func:`query_script`).
        """
        cos = np.nan_to_num(np.asarray(cosine, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        lex = np.clip(np.nan_to_num(np.asarray(share, dtype=np.float64), nan=0.0), 0.0, 1.0)
        cjk = script == "cjk"
        weight = self.lexical_weight_cjk if cjk else self.lexical_weight_latin
        threshold = self.threshold_cjk if cjk else self.threshold_latin
        same = cos + weight * lex - threshold
        cross = self.cross_script_cjk if cjk else self.cross_script
        return np.where(np.asarray(blind, dtype=bool), cos - cross, same)

    def passes(self, cosine: npt.ArrayLike, share: npt.ArrayLike, blind: npt.ArrayLike, script: Script) -> np.ndarray:
        """Boolean mask of the candidates that pass (see :meth:`margins`)."""
        return self.margins(cosine, share, blind, script) >= 0.0


AUTO_FLOOR = FloorRule()
"""The rule ``min_relevance="auto"`` (the default) applies: :class:`FloorRule` with its calibrated defaults."""


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
    min_relevance: float | FloorRule | None,
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
        min_relevance: The relevance floor: a number is an absolute floor on the fused relevance,
            a :class:`FloorRule` judges each candidate's evidence, ``None``: no floor. Every
            result's breakdown carries ``floor_margin``: its evidence minus the threshold of
            :data:`AUTO_FLOOR` (with ``convex_idf``; ``>= 0`` passes it), whatever the floor applied.
        now: The clock for time decay (aware).
        scripts: The caller's content-script cache (see :func:`content_script`).
    """
    ids = list(dense)
    units = [unit for unit, _ in dense.values()]
    cosine = np.fromiter((sim for _, sim in dense.values()), dtype=np.float64, count=len(ids))
    lex = np.fromiter((lexical.get(i, 0.0) for i in ids), dtype=np.float64, count=len(ids))
    script = query_script(query)
    blind = np.fromiter((content_script(scripts, u) != script for u in units), dtype=bool, count=len(ids))
    fw = fusion_weights
    alpha = fw.alpha if fw.alpha_cjk is None else (fw.alpha_cjk if script == "cjk" else fw.alpha)
    relevance = fuse_arrays(
        ids,
        cosine,
        lex,
        method=fusion,
        alpha=alpha,
        lexically_blind=blind,
        blind_gain=fw.cross_script,
        lexical_found=np.fromiter((i in lexical for i in ids), dtype=bool, count=len(ids)),
    )
    label, source = task
    # "general" found by inference means "not recognised": recorded, but no bonus for general memories
    bonus_type = label if source == "fixed" or label != fallback_task_type else None
    table = score_many(units, relevance, task_type=bonus_type, now=now, weights=weights)
    keep = table.score >= min_score
    rule = min_relevance if isinstance(min_relevance, FloorRule) else AUTO_FLOOR
    margin = (
        rule.margins(cosine, lex, blind, script) if fusion == "convex_idf" else table.similarity - DEFAULT_MIN_RELEVANCE
    )
    if isinstance(min_relevance, FloorRule):
        keep &= margin >= 0.0
    elif min_relevance is not None:
        keep &= table.similarity >= min_relevance
    rows = np.flatnonzero(keep).tolist()
    scores = table.score.tolist()
    rows.sort(key=lambda j: (-scores[j], ids[j]))
    return [
        table.scored(
            j,
            extra={"dense": float(cosine[j]), "lexical": float(lex[j]), "floor_margin": float(margin[j])},
            query_task_type=label,
        )
        for j in rows[:limit]
    ]
