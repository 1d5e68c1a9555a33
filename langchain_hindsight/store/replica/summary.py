"""What ``hindsight stats`` prints for a namespace (its *entry*), and the summary of a store's entries.

The store's close keeps entries in ``counts`` files, so ``stats`` need not open Chroma. Standard library only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["SUMMARY_FIELDS", "Summary", "summary_entry"]

SUMMARY_FIELDS = ("status", "task_type", "source")
"""What a namespace's entry counts by, in the order :func:`summary_entry` reads its ``counts`` keys."""


@dataclass(frozen=True)
class Summary:
    """A store's statistics as last counted: every namespace it had (sorted), and each counted one's entry."""

    namespaces: list[str]
    stats: dict[str, dict[str, Any]]


def _ranked(counts: Counter[str]) -> dict[str, int]:
    """``counts`` most common first, ties by name (the same order however the counts were gathered)."""
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def summary_entry(counts: Mapping[tuple[str, ...], int], runs: int) -> dict[str, Any]:
    """A namespace's entry (``MemoryStore.statistics``' keys) from its ``count_by(*SUMMARY_FIELDS)`` and the run
    records its journal holds, every mapping in the order ``stats`` prints.
    """  # noqa: D205
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
