"""The merge pass over stored units (keeps the store from bloating): exact duplicate search and folding.

Only true duplicates fold: units that make the same statement after normalising
case, whitespace and punctuation (:func:`~langchain_hindsight._statements.statement_key`,
the rule of the write path). The similarity threshold only selects candidates;
two different statements never fold, however close their vectors.

A rule-made lesson is keyed on its text with the parts that only identify a run
masked (:func:`~langchain_hindsight._statements.lesson_key`: file names, paths,
ids, dates, positions, ordinals such as ``第3周`` / ``week 3``), so the same
error→fix lesson stored once per file before the rules masked them folds into one;
their vectors differ only by what the mask removed, so the masked statement alone decides (no similarity threshold). A
person's facts are keyed on their text as it is: their numbers are the fact.

Folding sums ``evidence`` (how many times the lesson was learned), grows
confidence with it (:func:`~langchain_hindsight.confidence.corroborated`) and
*archives* the folded units whole (not served, kept for :func:`unfold`).

Pure helpers (:func:`duplicate_groups`, :func:`star_clusters`, :func:`fold`, :func:`unfold`)
plus the store accesses the pass needs (:func:`active_with_vectors`, :func:`archive_folded`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_hindsight._statements import learned_in_run, lesson_key, rule_made, run_masked, statement_key
from langchain_hindsight._trust import trust_rank
from langchain_hindsight.confidence import ConfidencePolicy, corroborated, evidence_cap, uncorroborated
from langchain_hindsight.types import MemoryUnit

if TYPE_CHECKING:
    import numpy as np

    from langchain_hindsight.store.memory_store import MemoryStore

__all__ = [
    "KEPT_APART_TAG",
    "active_with_vectors",
    "archive_folded",
    "duplicate_groups",
    "fold",
    "fold_reason",
    "masked_only",
    "priority",
    "star_clusters",
    "unfold",
]

KEPT_APART_TAG = "kept-apart"
"""Tag of a unit an :func:`unfold` brought back: the merge pass never folds it again."""

_READ_BATCH = 5000
_ARCHIVE_BATCH = 1000
_BLOCK_ELEMENTS = 1 << 25
"""Similarity block size in floats (~128 MB)."""


def active_with_vectors(
    store: MemoryStore, ns: str, progress: Callable[[str, int, int], None] | None = None
) -> tuple[list[MemoryUnit], np.ndarray]:
    """Every active unit of ``ns`` with its stored (L2-normalised) vector, read in pages."""
    import numpy as np

    units: list[MemoryUnit] = []
    chunks: list[np.ndarray] = []
    total = store.count(namespace=ns, status="active")
    for page, page_vectors in store.iter_vectors(namespace=ns, status="active", batch_size=_READ_BATCH):
        units.extend(page)
        chunks.append(page_vectors)
        if progress is not None:
            progress("merge read", min(len(units), total), total)
    vectors = np.concatenate(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)
    if len(vectors):
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.where(norms == 0, 1.0, norms)
    return units, vectors


def priority(unit: MemoryUnit) -> tuple[Any, ...]:
    """Sort key: the unit that should survive a merge comes first (most trusted source, then confidence).

    The survivor's text is what remains, so it must be the most trusted one:
    a merge never pairs one unit's text with another's (more trusted) source.
    """
    return (
        trust_rank(unit.source),
        -unit.score_confidence,
        -unit.access_count,
        unit.created_at,
        unit.memory_id,
    )


def star_clusters(
    units: Sequence[MemoryUnit], vectors: np.ndarray, threshold: float
) -> list[tuple[MemoryUnit, list[MemoryUnit]]]:
    """Greedy star clustering: best unit first, each absorbs its not-yet-absorbed neighbours.

    Every pair is compared exactly (blocked upper-triangle matrix products), so a
    unit is folded only into a keeper it is itself at least ``threshold`` similar to.
    """
    import numpy as np

    order = sorted(range(len(units)), key=lambda i: priority(units[i]))
    x = vectors[np.asarray(order)]
    n = len(order)
    limit = np.float32(threshold - 1e-6)
    neighbours: dict[int, list[int]] = {}
    block = max(1, min(n, _BLOCK_ELEMENTS // max(1, n)))
    for start in range(0, n, block):
        stop = min(n, start + block)
        sims = x[start:stop] @ x[start:].T  # rows start..stop, columns start..n
        rows, cols = np.nonzero(sims >= limit)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            a, b = start + r, start + c
            if b > a:
                neighbours.setdefault(a, []).append(b)
    absorbed: set[int] = set()
    out: list[tuple[MemoryUnit, list[MemoryUnit]]] = []
    for a in range(n):
        if a in absorbed or a not in neighbours:
            continue
        folded = [b for b in sorted(neighbours[a]) if b not in absorbed]
        if folded:
            absorbed.update(folded)
            out.append((units[order[a]], [units[order[b]] for b in folded]))
    return out


def duplicate_groups(units: Sequence[MemoryUnit], *, by_task_type: bool) -> list[list[int]]:
    """Indices of ``units`` grouped by statement (and task type and kind when ``by_task_type``); groups of 2+.

    The statement is :func:`~langchain_hindsight._statements.lesson_key`: a
    rule-made lesson's text with its run-specific parts masked, anything else's as
    it is. A unit tagged :data:`KEPT_APART_TAG` (unfolded by hand) joins no group.
    """
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, u in enumerate(units):
        if KEPT_APART_TAG in u.tags:
            continue
        scope = (u.task_type, u.kind) if by_task_type else ()
        groups.setdefault((*scope, lesson_key(u)), []).append(i)
    return [idx for idx in groups.values() if len(idx) > 1]


def masked_only(members: Sequence[MemoryUnit]) -> bool:
    """``members`` (one group) are lessons learned in runs that differ in their run-specific parts (files, ids, 第N周).

    Rule-made (:func:`~langchain_hindsight._statements.rule_made`) or inferred by the model from a
    run (:func:`~langchain_hindsight._statements.learned_in_run`).
    """
    learned = all(rule_made(u) or learned_in_run(u) for u in members)
    return learned and len({statement_key(u.content) for u in members}) > 1


def fold(keeper: MemoryUnit, folded: Sequence[MemoryUnit], policy: ConfidencePolicy | None = None) -> MemoryUnit:
    """``keeper`` after absorbing ``folded``: evidence added up, summed accesses, union of tags, provenance.

    Confidence is the highest of the keeper's source, grown by the evidence the
    folded units of that source bring (:func:`~langchain_hindsight.confidence.corroborated`,
    never above the source's ceiling nor ``policy``'s, never for a ``suspicious`` unit);
    a less trusted unit lends no confidence and no evidence. Times are the newest of
    the group (creation and last access), so recency reflects the latest time the
    lesson was learned. A keeper learned in a run has its
    text masked (:func:`~langchain_hindsight._statements.run_masked`): the
    file name or week of the one run it came from is not the lesson.

    A folded id already in ``keeper.merged_from`` (a merge interrupted between
    its write and its archive) adds no access count or evidence again.
    """
    known = set(keeper.merged_from)
    merged_from = list(keeper.merged_from)
    access = keeper.access_count
    evidence = 0
    for u in folded:
        if u.memory_id not in known:
            access += u.access_count
            if u.source == keeper.source:
                evidence += u.evidence
        merged_from.extend([u.memory_id, *u.merged_from])
    group = [keeper, *folded]
    supersedes = keeper.supersedes or next((u.supersedes for u in folded if u.supersedes), None)
    peers = [u for u in group if u.source == keeper.source]  # a less trusted unit lends no confidence
    masked = run_masked(keeper)
    changes = {"content": masked} if masked != keeper.content else {}
    tags = [t for u in group for t in u.tags]
    best = keeper.evolve(confidence=max(u.score_confidence for u in peers), tags=tags)
    return keeper.evolve(
        confidence=corroborated(best.score_confidence, keeper.source, evidence, ceiling=evidence_cap(best, policy)),
        evidence=keeper.evidence + evidence,
        access_count=access,
        tags=tags,
        created_at=max(u.created_at for u in group),
        last_accessed_at=max(u.last_accessed_at for u in group),
        merged_from=[i for i in dict.fromkeys(merged_from) if i != keeper.memory_id],
        source=keeper.source,  # the keeper is the most trusted of its cluster (see priority)
        supersedes=supersedes,
        **changes,
    )


def fold_reason(before: MemoryUnit, after: MemoryUnit, folded: Sequence[MemoryUnit], *, masked: bool) -> str:
    """Why ``folded`` went into ``before`` (now ``after``), in one sentence for the log and the report."""
    why = (
        "the same lesson with only run-specific parts (file names, paths, ids, dates, ordinals) differing"
        if masked
        else "the same statement (after normalising case, whitespace and punctuation)"
    )
    return (
        f"{why}: {len(folded)} unit(s) folded and archived (undo: Lifecycle.unmerge), evidence "
        f"{before.evidence} → {after.evidence}, confidence {before.score_confidence:.2f} → {after.score_confidence:.2f}"
    )


def unfold(keeper: MemoryUnit, restored: Sequence[MemoryUnit]) -> MemoryUnit:
    """``keeper`` with what :func:`fold` took from ``restored`` (units brought back from the archive) given back.

    Their ids (and what they had absorbed) leave ``merged_from``; their evidence
    and accesses are subtracted; the confidence step their evidence gave is
    reversed (feedback the keeper earned since is kept). Tags and times stay.
    """
    gone = {i for u in restored for i in (u.memory_id, *u.merged_from)}
    evidence = sum(u.evidence for u in restored if u.source == keeper.source)
    evidence = min(evidence, keeper.evidence - 1)
    return keeper.evolve(
        confidence=uncorroborated(keeper.score_confidence, keeper.source, evidence),
        evidence=keeper.evidence - evidence,
        access_count=max(0, keeper.access_count - sum(u.access_count for u in restored)),
        merged_from=[i for i in keeper.merged_from if i not in gone],
    )


def archive_folded(store: MemoryStore, ns: str, ids: list[str]) -> None:
    """Move merged-away units to the archive, whole: not served, their ids kept in the keeper's ``merged_from``."""
    for start in range(0, len(ids), _ARCHIVE_BATCH):
        store.archive(ids[start : start + _ARCHIVE_BATCH], namespace=ns)
