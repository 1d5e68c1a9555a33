"""The statistics summary of an embedded store: what ``hindsight stats`` prints, kept in ``summary.json``.

Counting a namespace's memories reads Chroma, and opening Chroma costs a second
before anything is read. The summary lets ``hindsight stats`` answer from a file
instead, read only when the clean-close stamp vouches for it (see ``store._directory``;
read through ``replica.files.DerivedFiles``, by the live store and the CLI alike).
Standard library only. Its one writer is the store's close (``Replica.close``), and only
for a session that wrote or counted:

* what the session counted (``MemoryStore.statistics``, which ``hindsight stats`` calls)
  is kept for a namespace no write followed it into;
* a namespace none of whose collections the session wrote keeps the entry trusted at
  open; one whose journal alone was written keeps it with its run count read again; one
  whose memories were written is counted again if the store holds its recall mirror
  (active memories from memory, the rest read from Chroma, within a bound), else its
  entry is dropped; the namespace list is read again;
* nothing is kept after a write whose scope the backend cannot tell (an erase, a
  recovery) or a write that failed half-way, nor when nothing could be kept: the close
  then erases the file. A write after the close (through a backend the caller still
  holds) leaves it unvouched, so it is not read again.

File format::

    {"format": 1, "namespaces": [every namespace of the store],
     "stats": {namespace: {"total": n, "status": {...}, "active_by_task_type": {...},
                           "by_source": {...}, "runs": n}}}

``stats`` holds the namespaces some ``stats`` counted (not necessarily all of them);
the order of every mapping is the order ``stats`` prints.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_hindsight.store._directory import SUMMARY_FILE, replace_file

__all__ = ["Summary", "read_summary", "summary_entry", "write_summary"]

logger = logging.getLogger(__name__)

SUMMARY_FORMAT = 1
_COUNTS = ("status", "active_by_task_type", "by_source")
_NUMBERS = ("total", "runs")


@dataclass(frozen=True)
class Summary:
    """A store's statistics as last counted.

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
        counts: ``MemoryStore.count_by("status", "task_type", "source")`` of the namespace.
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


def _valid_entry(entry: object) -> bool:
    if not isinstance(entry, dict) or set(entry) != {*_COUNTS, *_NUMBERS}:
        return False
    if not all(type(entry[k]) is int and entry[k] >= 0 for k in _NUMBERS):
        return False
    return all(
        isinstance(entry[k], dict) and all(isinstance(n, str) and type(c) is int for n, c in entry[k].items())
        for k in _COUNTS
    )


def read_summary(directory: Path) -> Summary | None:
    """The summary in ``directory``, or ``None`` if there is none or it is malformed (the caller counts)."""
    try:
        data = json.loads((directory / SUMMARY_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        logger.debug("unreadable %s in %s: ignored", SUMMARY_FILE, directory)
        return None
    if not isinstance(data, dict) or data.get("format") != SUMMARY_FORMAT:
        return None
    namespaces, stats = data.get("namespaces"), data.get("stats")
    if not isinstance(namespaces, list) or not all(isinstance(ns, str) for ns in namespaces):
        return None
    if not isinstance(stats, dict) or not all(_valid_entry(e) for e in stats.values()):
        return None
    return Summary(namespaces, stats)


def write_summary(directory: Path, namespaces: Sequence[str], stats: Mapping[str, Mapping[str, Any]]) -> None:
    """Write the summary of ``directory`` atomically (``stats``: what ``hindsight stats`` counted, by namespace).

    Raises:
        OSError: the file could not be written.
    """
    payload = {
        "format": SUMMARY_FORMAT,
        "namespaces": list(namespaces),
        "stats": {k: dict(v) for k, v in stats.items()},
    }
    replace_file(directory / SUMMARY_FILE, json.dumps(payload, ensure_ascii=False).encode("utf-8"))
