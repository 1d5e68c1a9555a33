"""The candidate pipeline of one recall: fuse both arms, score, apply the floors, keep the best ``k``.

Input: the candidates of the dense arm (each with its memory and cosine similarity; candidates
found only lexically already carry the cosine of their stored vector) and the BM25 scores of the
lexical arm. :func:`rank_candidates`

1. fuses the two signals into one relevance in [0, 1]
   (:func:`~langchain_hindsight.recall.fusion.fuse_arrays`); a candidate written in another
   script than the query is lexically blind and gets the cross-script share instead;
2. scores every candidate at once (:func:`~langchain_hindsight.recall.scoring.score_many`:
   task type, confidence, access heat, source and time decay on top of the relevance);
3. drops candidates below ``min_score`` (and, for a number, below that absolute floor on the fused
   relevance) and keeps the best ``limit``, best first (ties by memory id);
4. applies the relevance floor: a :class:`FloorRule` (the default, :data:`AUTO_FLOOR`) judges each
   candidate's evidence against a threshold for its script pair (:meth:`FloorRule.margins`) and,
   with its default scope ``"ranking"``, serves all ``limit`` when at least one of them passes and
   nothing when none does (``"candidate"``: only those that pass). When unsure, serve: a related
   query keeps its whole ranking, and the agent's model sets aside what does not apply;
5. puts the later of two served words of the user on one subject first (:func:`later_word_first`):
   a preference the user changed in words the rules could not read as a change keeps both
   versions (never destroy when unsure), and the agent reads the newer one first;
6. returns them, each with its breakdown (``dense``, ``lexical``, ``evidence_margin`` and
   ``floor_margin`` included) and the task type it was scored against.

Pure: no store access, no logging; the retriever records and diagnoses what is served.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight._claims import claim_of, relation
from langchain_hindsight._script import FusionWeights, Script, query_script
from langchain_hindsight._trust import USER_SOURCES
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.recall.fusion import Fusion, fuse_arrays
from langchain_hindsight.recall.scoring import ScoringWeights, score_many
from langchain_hindsight.types import MemoryUnit, ScoredMemory, TaskTypeSource

__all__ = [
    "AUTO_FLOOR",
    "DEFAULT_LOW_RELEVANCE",
    "DEFAULT_MIN_RELEVANCE",
    "SAME_SUBJECT_OVERLAP",
    "SCRIPT_CACHE_SIZE",
    "FloorRule",
    "FloorScope",
    "LowRelevance",
    "MinRelevance",
    "ScriptCache",
    "content_script",
    "later_word_first",
    "rank_candidates",
    "same_subject",
    "served_mask",
]

FloorScope = Literal["ranking", "candidate"]
"""What a :class:`FloorRule` decides: ``"ranking"`` (default) whether the best ``k`` are served at all,
``"candidate"`` which of them are."""

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
    """A relevance floor judged on the candidates' evidence, per script pair (``min_relevance="auto"``).

    By default (``scope="ranking"``) the rule decides only whether a recall is served at all: when
    at least one of the best ``k`` candidates (ranked as without a floor) has the evidence below,
    all ``k`` are served, in their order; when none has, nothing is. It never picks which memories
    of a related query to serve: a cosine cannot tell a relevant long event memory from its
    neighbour, and the agent's model, which sees the block with "如果经验不适用，请忽略并说明原因",
    sets aside what does not apply (``benchmarks/floor_recall.py`` and ``benchmarks/locomo.py``
    measure what each scope costs in recall). ``scope="candidate"`` judges each candidate alone
    (the rule of the previous release, which cut relevant memories from long and dialogue queries).

    The ranking-scope test (the default) asks for evidence of any kind among the best ``k``: a
    memory in the query's script that shares a weighted part of the query's words (lexical share at
    least :attr:`any_share`) or has a cosine of at least :attr:`any_cosine`; a memory in the other
    script (lexically blind) with a cosine of at least :attr:`any_cross`. The three defaults were
    chosen on the ``dev`` split of ``benchmarks/floor_recall.py`` only (short tasks, long tasks,
    chat transcripts, dialogue against an archive of long event memories, near-identical lessons;
    zh, en and both cross-language directions): of the settings that lose no recall@5/@10 on dev
    even with every threshold 25 % stricter (a safety margin), the one that silences the most
    unrelated dev queries. The held-out split was scored once, with the chosen values. Silence is
    the second objective and the price is real: unrelated queries that share a word with a memory
    are served (``benchmarks/results/floor_recall.md`` reports silence per slice); the agent's
    model sets such memories aside, and ``relevance_check`` can ask the chat model.

    The candidate-scope test (``scope="candidate"``, the previous release's default) weighs the two
    signals per script: same script ``cosine + w·lexical share`` against the threshold of the
    query's script (``lexical_weight_cjk``/``threshold_cjk`` for a mostly-CJK query,
    ``lexical_weight_latin``/``threshold_latin`` otherwise), another script the cosine against
    ``cross_script_cjk``/``cross_script``. Those values were chosen on the tuning split of
    ``benchmarks/floor_calibration.py``; judged per candidate they cut relevant memories of long,
    dialogue and near-identical queries (``benchmarks/floor_recall.py``). All values assume
    ``convex_idf`` lexical shares; with another fusion the evidence is the fused relevance minus
    :data:`DEFAULT_MIN_RELEVANCE`. Re-measure for another embedder.

    Attributes:
        lexical_weight_cjk: Weight of the lexical share in the evidence for a CJK query.
        threshold_cjk: Evidence a same-script candidate of a CJK query needs.
        lexical_weight_latin: Weight of the lexical share for a Latin-script query.
        threshold_latin: Evidence a same-script candidate of a Latin-script query needs.
        cross_script: Cosine a candidate written in the other script needs, for a Latin-script query.
        cross_script_cjk: Cosine a candidate written in the other script needs, for a CJK query.
        scope: :data:`FloorScope`: ``"ranking"`` (default) serves the best ``k`` when any of them
            passes, ``"candidate"`` serves only those that pass.
        any_share: Ranking scope: lexical share that counts as evidence (same script).
        any_cosine: Ranking scope: cosine that counts as evidence (same script).
        any_cross: Ranking scope: cosine that counts as evidence for a memory in the other script.

    Example:
        >>> rule = FloorRule()
        >>> rule.passes([0.30, 0.05, 0.05, 0.08], [0.0, 0.06, 0.0, 0.0], [False, False, False, True], "cjk").tolist()
        [True, True, False, True]
        >>> old = FloorRule(scope="candidate")
        >>> old.passes([0.30, 0.30, 0.12], [0.10, 0.0, 0.0], [False, False, True], "cjk").tolist()
        [True, False, True]
        >>> FloorRule(scope="candidate", cross_script_cjk=0.08).passes([0.09], [0.0], [True], "cjk").tolist()
        [True]
    """

    lexical_weight_cjk: float = 1.0
    threshold_cjk: float = 0.39
    lexical_weight_latin: float = 0.5
    threshold_latin: float = 0.34
    cross_script: float = 0.11
    cross_script_cjk: float = 0.11
    scope: FloorScope = "ranking"
    any_share: float = 0.04
    any_cosine: float = 0.20
    any_cross: float = 0.07

    def __post_init__(self) -> None:
        if self.scope not in get_args(FloorScope):
            raise ConfigurationError(f"FloorRule.scope must be one of {get_args(FloorScope)}, got {self.scope!r}")
        for name in (
            "lexical_weight_cjk",
            "threshold_cjk",
            "lexical_weight_latin",
            "threshold_latin",
            "cross_script",
            "cross_script_cjk",
            "any_share",
            "any_cosine",
            "any_cross",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ConfigurationError(f"FloorRule.{name} must be a finite number >= 0, got {value!r}")

    def margins(self, cosine: npt.ArrayLike, share: npt.ArrayLike, blind: npt.ArrayLike, script: Script) -> np.ndarray:
        """Each candidate's evidence minus the threshold it needs (``>= 0`` passes).

        With ``scope="ranking"`` the evidence is of any kind: a same-script candidate passes when
        its lexical share reaches :attr:`any_share` *or* its cosine reaches :attr:`any_cosine`
        (the margin is the larger of the two differences), another-script one when its cosine
        reaches :attr:`any_cross`. With ``scope="candidate"`` it is the weighted sum against the
        per-script thresholds (``cosine + w·share >= threshold``; the cosine against
        ``cross_script``/``cross_script_cjk`` for another script).

        Args:
            cosine: Cosine similarity per candidate.
            share: Lexical share per candidate (the ``convex_idf`` normalised BM25, in [0, 1]).
            blind: Per candidate, whether it is written in another script than the query.
            script: The query's script (:func:`query_script`).
        """
        cos = np.nan_to_num(np.asarray(cosine, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        lex = np.clip(np.nan_to_num(np.asarray(share, dtype=np.float64), nan=0.0), 0.0, 1.0)
        if self.scope == "ranking":
            same_any = np.maximum(lex - self.any_share, cos - self.any_cosine)
            return np.where(np.asarray(blind, dtype=bool), cos - self.any_cross, same_any)
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
            a :class:`FloorRule` judges the candidates' evidence (the best ``limit`` at once, or
            each alone: :attr:`FloorRule.scope`), ``None``: no floor. Every result's breakdown
            carries ``evidence_margin``: its own evidence minus the threshold of the rule (the given
            one, else :data:`AUTO_FLOOR`; with another fusion than ``convex_idf``, its relevance
            minus :data:`DEFAULT_MIN_RELEVANCE`), and ``floor_margin``: the margin by which that
            rule serves it (``>= 0``: served) — for a ranking-scope rule the best
            ``evidence_margin`` of the returned results, so it is the same for all of them —
            whatever floor was applied (so a search without a floor can say what recall serves).
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
    evidence = (
        rule.margins(cosine, lex, blind, script) if fusion == "convex_idf" else table.similarity - DEFAULT_MIN_RELEVANCE
    )
    if isinstance(min_relevance, FloorRule) and min_relevance.scope == "candidate":
        keep &= evidence >= 0.0
    elif min_relevance is not None and not isinstance(min_relevance, FloorRule):
        keep &= table.similarity >= min_relevance
    rows = np.flatnonzero(keep).tolist()
    scores = table.score.tolist()
    rows.sort(key=lambda j: (-scores[j], ids[j]))
    rows = rows[:limit]
    # the verdict of a ranking-scope rule on these k: the best evidence among them (>= 0: all are served)
    best = max((float(evidence[j]) for j in rows), default=-1.0)
    if isinstance(min_relevance, FloorRule) and min_relevance.scope == "ranking" and best < 0.0:
        return []
    ranking_scope = rule.scope == "ranking"
    return later_word_first(
        [
            table.scored(
                j,
                extra={
                    "dense": float(cosine[j]),
                    "lexical": float(lex[j]),
                    "evidence_margin": float(evidence[j]),
                    "floor_margin": best if ranking_scope else float(evidence[j]),
                },
                query_task_type=label,
            )
            for j in rows
        ]
    )


SAME_SUBJECT_OVERLAP = 0.6
"""Two statements in one language are on one subject when this share of the shorter one's units (English word
stems, Chinese characters, literals) is in the other: "keep the first record when removing duplicates" / "keep
the newest record when removing duplicates instead" share 0.83, "周报要用PDF格式" / "周报改用Excel格式" 0.83, while
two corrections on other points of one report ("the monthly report needs a bar chart" / "the monthly report
covers the calendar month") share 0.5. A pair above it only changes the order of two served lines."""


def same_subject(a: str, b: str) -> bool:
    """Whether two statements may be two versions of one word.

    True when the claim rule reads them as a change (``contradicts``) or cannot tell (``unsure``:
    every Chinese / English pair whose frames do not align), or reads them as compatible and they share
    :data:`SAME_SUBJECT_OVERLAP` of their units. Never for ``unrelated``: another subject
    ("客户甲公司…" / "客户乙公司…") is a distinct fact and keeps the rank its own question gives it.

    Example:
        >>> same_subject("No, keep the first record", "No, keep the newest record instead")
        True
        >>> same_subject("不对，金额要用含税价", "不对，周报要用PDF格式")
        False
    """
    said = relation(a, b)
    if said != "compatible":
        return said in (
            "contradicts",
            "unsure",
        )  # "unrelated": another subject (客户甲公司 / 客户乙公司) keeps its rank
    ua, ub = set(claim_of(a).key), set(claim_of(b).key)
    shorter = min(len(ua), len(ub))
    return shorter > 0 and len(ua & ub) >= SAME_SUBJECT_OVERLAP * shorter


def later_word_first(memories: list[ScoredMemory]) -> list[ScoredMemory]:
    """``memories`` (best first) with the later of two words of the user on one subject above the earlier.

    A user's statements (``user_feedback`` and ``manual``) of one task type that share a subject
    (:func:`same_subject`) form a group; the group keeps the places its members ranked at and
    fills them newest first (``created_at``). When the store kept both versions of a changed preference
    because its rules were unsure ("No, the monthly report needs a bar chart" / "No, use a line chart in
    the monthly report instead"), the agent reads the newer first; everything else keeps its rank.
    Nothing is dropped: both are served, and the model sets aside what does not apply.

    Example:
        >>> later_word_first([])
        []
    """
    own = [i for i, m in enumerate(memories) if m.memory.source in USER_SOURCES]
    if len(own) < 2:
        return memories
    parent = {i: i for i in own}

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for x, i in enumerate(own):
        for j in own[x + 1 :]:
            a, b = memories[i].memory, memories[j].memory
            if a.task_type == b.task_type and same_subject(a.content, b.content):
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in own:
        groups.setdefault(root(i), []).append(i)
    out = list(memories)
    for places in groups.values():
        if len(places) > 1:
            newest = sorted(places, key=lambda i: (memories[i].memory.created_at, -i), reverse=True)
            for place, i in zip(places, newest, strict=True):
                out[place] = memories[i]
    return out


def served_mask(memories: Sequence[ScoredMemory], floor: MinRelevance | FloorRule) -> list[bool]:
    """Which results of a recall made without a floor ``floor`` would serve (a search shows both).

    ``memories`` are what :func:`rank_candidates` returned with ``min_relevance=None`` (their
    breakdown carries ``evidence_margin``, measured against :data:`AUTO_FLOOR`): ``None`` serves
    all, a number those whose relevance reaches it, ``"auto"`` and a ranking-scope rule all of them
    when at least one has evidence (``evidence_margin >= 0``) and none otherwise, a candidate-scope
    rule those with evidence. A :class:`FloorRule` with other thresholds than :data:`AUTO_FLOOR` is
    judged on the margins measured against :data:`AUTO_FLOOR` (recall with that rule to be exact).

    Example:
        >>> served_mask([], "auto")
        []
    """
    if floor is None:
        return [True] * len(memories)
    if not isinstance(floor, FloorRule | str):
        return [m.similarity >= floor for m in memories]
    own = [m.breakdown.get("evidence_margin", m.breakdown.get("floor_margin", 0.0)) >= 0.0 for m in memories]
    if isinstance(floor, FloorRule) and floor.scope == "candidate":
        return own
    return [any(own)] * len(memories)
