"""What ``hindsight stats`` prints for a namespace (its *entry*), and the summary of a store's entries.

Counting a namespace's memories reads Chroma, and opening Chroma costs a second
before anything is read. So the store's close keeps each namespace's entry in a
per-namespace ``counts`` snapshot (``counts/<collection>.npz``, written and read
through ``replica.files``: the one snapshot format, the one reader), which
``hindsight stats`` reads when the clean-close stamp vouches for it. Standard
library only. Its one writer is the store's close (``Replica.close``), and only
for a session that wrote or counted:

* what the session counted (``MemoryStore.statistics``, which ``hindsight stats`` calls)
  is kept for a namespace no write followed it into;
* a namespace none of whose collections the session wrote keeps the entry trusted at
  open; one whose journal alone was written keeps it with its run count read again; one
  whose memories were written is counted again if the store holds its recall mirror
  (active memories from memory, the rest read from Chroma, within a bound), else its
  file is erased; every file lists the store's namespaces, read again;
* nothing is kept after a write whose scope the backend cannot tell (an erase, a
  recovery) or a write that failed half-way, nor when nothing could be kept: the close
  then erases every ``counts`` file. A write after the close (through a backend the caller
  still holds) leaves them unvouched, so they are not read again.

An entry: ``{"total": n, "status": {...}, "active_by_task_type": {...}, "by_source": {...},
"runs": n}``, every mapping in the order ``stats`` prints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
        stats: Per counted namespace: ``total``, ``status``, ``active_by_task_type``,
            ``by_source`` and ``runs``, in printing order.
    """

    namespaces: list[str]
    stats: dict[str, dict[str, Any]]

    def answers(self, namespaces: Sequence[str]) -> bool:
        """Whether every one of ``namespaces`` was counted."""
        return all(ns in self.stats for ns in namespaces)


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


def valid_entry(entry: object) -> bool:
    """Whether ``entry`` has the shape of :func:`summary_entry` (what a ``counts`` file must hold to be read)."""
    if not isinstance(entry, dict) or set(entry) != {*_COUNTS, *_NUMBERS}:
        return False
    if not all(type(entry[k]) is int and entry[k] >= 0 for k in _NUMBERS):
        return False
    return all(
        isinstance(entry[k], dict) and all(isinstance(n, str) and type(c) is int for n, c in entry[k].items())
        for k in _COUNTS
    )
