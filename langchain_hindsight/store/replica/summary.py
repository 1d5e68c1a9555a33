"""What ``hindsight stats`` prints for a namespace (its *entry*), and the summary of a store's entries.

Counting a namespace reads Chroma, and opening Chroma costs a second before anything is read, so the store's
close keeps each namespace's entry in a ``counts`` snapshot (``replica.files``), which ``hindsight stats``
reads when the clean-close stamp vouches for it (which entries the close keeps: ``Replica.save_summary``).
Standard library only.

An entry: ``{"total": n, "status": {...}, "active_by_task_type": {...}, "by_source": {...}, "runs": n}``,
every mapping in the order ``stats`` prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

__all__ = ["SUMMARY_FIELDS", "Summary", "summary_entry", "valid_entry"]

SUMMARY_FIELDS = ("status", "task_type", "source")
"""What a namespace's entry counts by, in the order :func:`summary_entry` reads its ``counts`` keys."""
_COUNTS = ("status", "active_by_task_type", "by_source")
_NUMBERS = ("total", "runs")


@dataclass(frozen=True)
class Summary:
    """A store's statistics as last counted (read from its ``counts`` files).

    Attributes:
        namespaces: Every namespace the store had (sorted).
        stats: Per counted namespace, its entry.
    """

    namespaces: list[str]
    stats: dict[str, dict[str, Any]]


def _ranked(counts: Counter[str]) -> dict[str, int]:
    """``counts`` most common first, ties by name (the same order however the counts were gathered)."""
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def summary_entry(counts: Mapping[tuple[str, ...], int], runs: int) -> dict[str, Any]:
    """A namespace's entry as ``hindsight stats`` prints it, in printing order.

    Args:
        counts: ``MemoryStore.count_by(*SUMMARY_FIELDS)`` of the namespace.
        runs: How many run records its journal holds.
    """
    status: Counter[str] = Counter()
    types: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    for (state, task_type, source), n in counts.items():
        status[state] += n
        sources[source] += n
        if state == "active":
            types[task_type] += n
    return {
        "total": sum(status.values()),
        "status": dict(sorted(status.items())),
        "active_by_task_type": _ranked(types),
        "by_source": _ranked(sources),
        "runs": runs,
    }


def valid_entry(entry: object) -> TypeGuard[dict[str, Any]]:
    """Whether ``entry`` has the shape of :func:`summary_entry` (what a ``counts`` file must hold to be read)."""
    if not isinstance(entry, dict) or set(entry) != {*_COUNTS, *_NUMBERS}:
        return False
    if not all(type(entry[k]) is int and entry[k] >= 0 for k in _NUMBERS):
        return False
    return all(
        isinstance(entry[k], dict) and all(isinstance(n, str) and type(c) is int for n, c in entry[k].items())
        for k in _COUNTS
    )
