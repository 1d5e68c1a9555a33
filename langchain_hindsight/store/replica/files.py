"""The derived files' one eraser: zero-fill, fsync and remove (a forgotten memory's bytes never stay behind)."""

from __future__ import annotations

import os
from pathlib import Path

from langchain_hindsight.errors import StoreError

__all__ = ["drop_snapshot"]


def drop_snapshot(path: Path) -> None:
    """Zero-fill and remove the snapshot at ``path`` and any half-written copy of it (absent is fine).

    Raises:
        StoreError: a file exists and could not be erased (it may hold the
            tokens of a memory being forgotten).
    """
    for target in (path, path.with_name(path.name + ".tmp")):
        try:
            size = target.stat().st_size
        except FileNotFoundError:
            continue
        try:
            with target.open("r+b") as fh:
                remaining = size
                while remaining > 0:
                    n = min(remaining, 1 << 20)
                    fh.write(b"\0" * n)
                    remaining -= n
                fh.flush()
                os.fsync(fh.fileno())
            target.unlink()
        except FileNotFoundError:
            continue
        except OSError as e:
            raise StoreError(f"could not erase the lexical index snapshot {target}: {e}") from e
