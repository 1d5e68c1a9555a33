"""Fusion of the dense and lexical arms into one relevance in [0, 1] (pure functions).

Hybrid recall has two signals per candidate memory: the cosine similarity of
the embedder (the dense arm) and a BM25 score (the lexical arm). :func:`fuse`
turns them into the relevance that the weighted score and the relevance floor
use. The default, ``convex_idf``, is a convex combination
``alpha·cosine + (1 − alpha)·bm25 / idf_mass(query)``: BM25 as the share of the
query's information a memory matches, so an unrelated query stays low in both
arms and a floor on the result means something.

The dense weight ``alpha`` can depend on the query's script
(:func:`query_script`, :func:`dense_weight`): a Chinese query has no word
boundaries and shares few tokens with an English memory, so it leans on the
embedder; an English query keeps a strong lexical arm. The weights were chosen
on the tuning split of ``benchmarks/recall_quality.py`` and reported on its
held-out split.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Literal, get_args

from langchain_hindsight._script import FusionWeights, Script, query_script
from langchain_hindsight.errors import ConfigurationError

__all__ = ["Fusion", "FusionWeights", "Script", "dense_weight", "fuse", "fusion_weights_for", "query_script"]

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

_FIELDS = {"alpha": "fusion_alpha", "alpha_cjk": "fusion_alpha_cjk", "cross_script": "fusion_cross_script"}


def fusion_weights_for(embeddings: object, given: FusionWeights, *, explicit: Collection[str]) -> FusionWeights:
    """The weights to fuse with: the caller's where set, else the embedder's declared ones.

    Args:
        embeddings: The store's embedder; its ``fusion_weights`` attribute (a
            :class:`FusionWeights`), when present, supplies the defaults.
        given: The retriever's weights (its field values).
        explicit: Names of the retriever fields the caller set
            (``fusion_alpha``, ``fusion_alpha_cjk``, ``fusion_cross_script``).

    Returns:
        ``given`` when the embedder declares nothing; otherwise the embedder's
        weights with every explicitly set field taken from ``given``.

    Example:
        >>> class Tuned:
        ...     fusion_weights = FusionWeights(alpha=0.5, alpha_cjk=0.2, cross_script=2.0)
        >>> fusion_weights_for(Tuned(), FusionWeights(), explicit=())
        FusionWeights(alpha=0.5, alpha_cjk=0.2, cross_script=2.0)
        >>> fusion_weights_for(Tuned(), FusionWeights(alpha=0.9), explicit={"fusion_alpha"})
        FusionWeights(alpha=0.9, alpha_cjk=0.2, cross_script=2.0)
        >>> fusion_weights_for(object(), FusionWeights(alpha=0.9), explicit=())
        FusionWeights(alpha=0.9, alpha_cjk=None, cross_script=0.0)
    """
    declared = getattr(embeddings, "fusion_weights", None)
    if not isinstance(declared, FusionWeights):
        return given
    return replace(declared, **{k: getattr(given, k) for k, field in _FIELDS.items() if field in explicit})


def dense_weight(text: str, *, latin: float, cjk: float | None = None) -> float:
    """The dense-arm weight ``alpha`` for a query, chosen by its script.

    Args:
        text: The query.
        latin: ``alpha`` for a Latin-script query (and the only weight when
            ``cjk`` is ``None``).
        cjk: ``alpha`` for a CJK query; ``None`` uses ``latin`` for every query.

    Returns:
        The weight in [0, 1].

    Raises:
        ConfigurationError: a weight outside [0, 1].

    Example:
        >>> dense_weight("生成本周的销售周报", latin=0.5, cjk=0.7)
        0.7
        >>> dense_weight("Write the weekly sales report", latin=0.5, cjk=0.7)
        0.5
        >>> dense_weight("生成本周的销售周报", latin=0.5)
        0.5
    """
    for name, value in (("latin", latin), ("cjk", cjk)):
        if value is not None and (not math.isfinite(value) or not 0.0 <= value <= 1.0):
            raise ConfigurationError(f"dense weight {name} must be in [0, 1], got {value!r}")
    if cjk is None:
        return latin
    return cjk if query_script(text) == "cjk" else latin


def fuse(
    dense: Mapping[str, float],
    lexical: Mapping[str, float],
    *,
    method: Fusion = "convex_idf",
    alpha: float = 0.3,
    rrf_c: float = 60.0,
    lexically_blind: Collection[str] = (),
    blind_gain: float = 1.0,
) -> dict[str, float]:
    """Combine per-id dense cosine similarities and BM25 scores into a relevance in [0, 1].

    Args:
        dense: Cosine similarity of every candidate (ids missing count as 0).
        lexical: BM25 score of the candidates the lexical arm found (for
            ``convex_idf``, already normalised to [0, 1] by the store).
        method: See :data:`Fusion`.
        alpha: Weight of the dense arm in the convex fusions.
        rrf_c: The rank offset of ``rrf``.
        lexically_blind: Ids the lexical arm cannot judge against this query
            (written in another script: an English memory for a Chinese query).
            Their lexical evidence is missing rather than zero, so in the convex
            fusions the lexical share is filled with ``blind_gain × cosine``
            (capped at 1; their own lexical score when higher): a cross-language
            memory is not pushed down by ``1 − alpha`` for words it could never share.
        blind_gain: See ``lexically_blind`` (0 treats missing evidence as zero).

    Returns:
        Relevance per id, for every id in either arm.

    Raises:
        ConfigurationError: an unknown ``method``.

    Example:
        >>> fuse({"a": 0.8, "b": 0.4}, {"b": 6.0}, method="convex", alpha=0.5)
        {'a': 0.4, 'b': 0.7}
        >>> fuse({"a": 0.8, "b": 0.4}, {"b": 0.5}, method="convex_idf", alpha=0.5)
        {'a': 0.4, 'b': 0.45}
        >>> fuse({"a": 0.8, "b": 0.4}, {"b": 0.5}, method="convex_idf", alpha=0.5, lexically_blind={"a"})
        {'a': 0.8, 'b': 0.45}
        >>> fuse({"a": 0.25}, {}, alpha=0.5, lexically_blind={"a"}, blind_gain=2.0)
        {'a': 0.375}
    """
    ids = list(dict.fromkeys([*dense, *lexical]))
    if method == "dense":
        return {i: _clamp(dense.get(i, 0.0)) for i in ids}
    best = max(lexical.values(), default=0.0)
    if method == "lexical":
        return {i: lexical.get(i, 0.0) / best if best > 0 else 0.0 for i in ids}
    if method in ("convex_idf", "convex"):
        blind = frozenset(lexically_blind)
        scale = 1.0 if method == "convex_idf" else (1.0 / best if best > 0 else 0.0)
        out: dict[str, float] = {}
        for i in ids:
            cosine = _clamp(dense.get(i, 0.0))
            share = _clamp(lexical.get(i, 0.0) * scale)
            if i in blind:
                share = max(share, _clamp(blind_gain * cosine))
            out[i] = _clamp(alpha * cosine + (1.0 - alpha) * share)
        return out
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
