"""What ``hindsight stats`` prints, and its quick path: the answer without opening the store.

Importing Chroma alone costs more than ``stats``'s budget, so :func:`quick` first answers from the ``counts``
files the store's close keeps (read under the directory's lock, writing nothing); else the caller counts.
This module imports neither Chroma, numpy nor the store.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_hindsight.cli._output import emit_json, one_line, table
from langchain_hindsight.store import holds_store
from langchain_hindsight.store.replica.files import DerivedFiles

__all__ = ["print_stats", "quick"]


def print_stats(out: Mapping[str, Mapping[str, Any]], *, as_json: bool) -> None:
    """Print the statistics ``out`` (by namespace) as ``hindsight stats`` does: tables, or JSON with ``as_json``."""
    if as_json:
        emit_json(out)
        return
    for ns, s in out.items():
        print(f"namespace {one_line(ns)}: {s['total']} memories, {s['runs']} journalled runs")
        print(table(["status", "count"], sorted(s["status"].items())) if s["status"] else "  (empty)")
        if s["active_by_task_type"]:
            print(table(["task_type (active)", "count"], list(s["active_by_task_type"].items())))
        if s["by_source"]:
            print(table(["source", "count"], list(s["by_source"].items())))
        print()


def quick(args: argparse.Namespace) -> int | None:
    """Answer ``hindsight stats`` from the trusted counts files; ``None``: the caller counts.

    Raises:
        StoreLockedError: the store is open in another process (as opening it would).
    """
    if getattr(args, "principal", None) or getattr(args, "config", None) or args.server or args.database_url:
        return None
    directory = Path(args.path)
    if not holds_store(directory):
        return None  # opening it reports the missing store (nothing may be written there, not even a lock)
    with DerivedFiles.closed_store(directory) as files:  # the reader the live store uses, under the lock
        summary = files.summary()
    if summary is None or (args.namespace and args.namespace not in summary.namespaces):
        return None  # the caller counts; opening the store reports a --namespace it does not have
    namespaces = summary.namespaces if args.all else [args.namespace or "default"]
    if not all(ns in summary.stats for ns in namespaces):
        return None
    print_stats({ns: summary.stats[ns] for ns in namespaces}, as_json=args.json)
    return 0
