"""Keeping the model cache directory from growing: one file per content, stale versions removed.

Every prepared model file in the cache directory (the MiniLM ONNX graph, the Universal
Sentence Encoder's uncompressed weights and parsed tokenizer) is named by a hash of the
content it was made from, so any number of virtual environments with the same model
share one copy. Each use refreshes the file's modification time; a file of the same kind
left unused for :data:`IDLE_DAYS` days (a model version no installation loads any more)
is deleted when another one of its kind is used.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

__all__ = ["IDLE_DAYS", "used"]

logger = logging.getLogger(__name__)

IDLE_DAYS = 30
"""A cached model file unused for this many days is removed (when another file of its kind is used)."""


def used(path: Path, pattern: str, *, now: float | None = None) -> None:
    """Record that ``path`` (a cache file) was just used, and remove stale files matching ``pattern`` beside it.

    Never raises: the cache is an optimisation, and a file another process removed or
    a directory without write access only means nothing is tidied.

    Args:
        path: The cache file in use.
        pattern: The glob of its kind in the same directory (e.g. ``"use-weights-*.npz"``).
        now: The clock (seconds since the epoch), for tests.
    """
    now = time.time() if now is None else now
    try:
        os.utime(path, (now, now))
    except OSError as e:
        logger.debug("cache file %s not touched (%s)", path, e)
    cutoff = now - IDLE_DAYS * 86_400
    for other in path.parent.glob(pattern):
        if other == path:
            continue
        try:
            if other.stat().st_mtime < cutoff:
                other.unlink()
                logger.info("removed %s from the model cache: unused for %d days", other.name, IDLE_DAYS)
        except OSError as e:  # removed by another process meanwhile, or no write access
            logger.debug("stale cache file %s not removed (%s)", other, e)
