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
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from langchain_hindsight._script import FusionWeights, query_script
from langchain_hindsight.errors import ConfigurationError

__all__ = ["Fusion", "dense_weight", "fuse", "fuse_arrays", "fusion_weights_for"]

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
        out: dict[str, float] = {}
        for i in ids:
            cosine = _clamp(dense.get(i, 0.0))
            raw = lexical.get(i, 0.0)
            share = _clamp(raw) if method == "convex_idf" else (_clamp(raw / best) if best > 0 else 0.0)
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


def fuse_arrays(
    ids: Sequence[str],
    dense: npt.ArrayLike,
    lexical: npt.ArrayLike,
    *,
    method: Fusion = "convex_idf",
    alpha: float = 0.3,
    rrf_c: float = 60.0,
    lexically_blind: npt.ArrayLike | None = None,
    blind_gain: float = 1.0,
    lexical_found: npt.ArrayLike | None = None,
) -> np.ndarray:
    """:func:`fuse` over aligned arrays, one entry per candidate: the same numbers, without per-id dicts.

    The convex fusions and ``dense`` run as a few numpy operations (the same
    arithmetic in the same order as :func:`fuse`, so the results are equal to the
    last bit); ``rrf`` and ``lexical`` go through :func:`fuse`.

    Args:
        ids: The candidates' ids (only ``rrf`` reads them, for its tie-break).
        dense: Cosine similarity per candidate.
        lexical: BM25 score per candidate (0 where the lexical arm did not find it).
        method: See :data:`Fusion`.
        alpha: Weight of the dense arm in the convex fusions.
        rrf_c: The rank offset of ``rrf``.
        lexically_blind: Boolean mask of the candidates the lexical arm cannot judge
            (see :func:`fuse`); ``None``: none.
        blind_gain: See :func:`fuse`.
        lexical_found: Boolean mask of the candidates the lexical arm returned
            (``rrf`` ranks only those); ``None``: those with a non-zero score.

    Returns:
        The relevance per candidate (float64, aligned with ``ids``).

    Raises:
        ConfigurationError: an unknown ``method``.

    Example:
        >>> fuse_arrays(["a", "b"], [0.8, 0.4], [0.0, 0.5], alpha=0.5).tolist()
        [0.4, 0.45]
        >>> fuse_arrays(["a", "b"], [0.8, 0.4], [0.0, 0.5], alpha=0.5, lexically_blind=[True, False]).tolist()
        [0.8, 0.45]
    """
    cosine = np.asarray(dense, dtype=np.float64)
    lex = np.asarray(lexical, dtype=np.float64)
    if cosine.shape != (len(ids),) or lex.shape != (len(ids),):
        raise ConfigurationError("fuse_arrays: ids, dense and lexical must have one entry per candidate")
    if method in ("convex_idf", "convex", "dense"):
        cos = _clamp_array(cosine)
        if method == "dense":
            return cos
        if method == "convex_idf":
            share = _clamp_array(lex * 1.0)
        else:
            best = float(lex.max(initial=0.0))
            share = _clamp_array(lex / best) if best > 0 else np.zeros_like(lex)  # no 1/best: it overflows
        if lexically_blind is not None:
            blind = np.asarray(lexically_blind, dtype=bool)
            if blind.any():
                share = np.where(blind, np.maximum(share, _clamp_array(blind_gain * cos)), share)
        return _clamp_array(alpha * cos + (1.0 - alpha) * share)
    if method in ("rrf", "lexical"):
        found = lex != 0.0 if lexical_found is None else np.asarray(lexical_found, dtype=bool)
        lexical_map = {i: s for i, s, f in zip(ids, lex.tolist(), found.tolist(), strict=True) if f}
        blind_ids = (
            ()
            if lexically_blind is None
            else [i for i, b in zip(ids, np.asarray(lexically_blind, dtype=bool).tolist(), strict=True) if b]
        )
        fused = fuse(
            dict(zip(ids, cosine.tolist(), strict=True)),
            lexical_map,
            method=method,
            alpha=alpha,
            rrf_c=rrf_c,
            lexically_blind=blind_ids,
            blind_gain=blind_gain,
        )
        return np.asarray([fused[i] for i in ids], dtype=np.float64)
    raise ConfigurationError(f"fusion must be one of {', '.join(get_args(Fusion))}, got {method!r}")


def _clamp_array(values: np.ndarray) -> np.ndarray:
    """:func:`_clamp` elementwise: non-finite values count 0, the rest clipped to [0, 1]."""
    out = np.where(np.isfinite(values), values, 0.0)
    return np.minimum(1.0, np.maximum(0.0, out))


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0
