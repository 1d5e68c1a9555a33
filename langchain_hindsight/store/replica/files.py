"""The derived files' one eraser: zero-fill, fsync and remove (a forgotten memory's bytes never stay behind)."""

from __future__ import annotations

from pathlib import Path

from langchain_hindsight.store._directory import erase_file

__all__ = ["drop_snapshot"]


def drop_snapshot(path: Path) -> None:
    """Zero-fill and remove the snapshot at ``path`` and any half-written copy of it (absent is fine).

    Raises:
        StoreError: a file exists and could not be erased (it may hold the
            tokens of a memory being forgotten).
    """
    erase_file(path)
