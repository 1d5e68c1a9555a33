"""Byte scanners for the hard-delete tests: which files under a directory still hold a text or a vector.

A forgotten memory must leave no byte under the store's directory; these read every file raw (Chroma's
SQLite database, its HNSW segments, the derived files) and look for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _files(directory: Path) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file()]


def text_hits(directory: Path, needles: dict[str, str]) -> dict[str, list[str]]:
    """Which needles occur in which files, as UTF-8 or as JSON ``\\u`` escapes."""
    hits: dict[str, list[str]] = {}
    blobs = {p: p.read_bytes() for p in _files(directory)}
    for name, needle in needles.items():
        forms = {needle.encode(), json.dumps(needle).strip('"').encode()}
        for path, blob in blobs.items():
            if any(form in blob for form in forms):
                hits.setdefault(name, []).append(str(path.relative_to(directory)))
    return hits


def vector_hits(directory: Path, vector: list[float], *, tol: float = 1e-5, width: int = 8) -> list[str]:
    """Files holding ``vector``'s first ``width`` components as float32 (at any byte alignment)."""
    target = np.asarray(vector[:width], dtype=np.float32)
    found = []
    for path in _files(directory):
        blob = path.read_bytes()
        for shift in range(4):
            n = (len(blob) - shift) // 4
            if n < width:
                continue
            arr = np.frombuffer(blob[shift : shift + 4 * n], dtype=np.float32)
            with np.errstate(invalid="ignore"):
                starts = np.nonzero(np.abs(arr[: n - width + 1] - target[0]) < tol)[0]
            if any(np.all(np.abs(arr[i : i + width] - target) < tol) for i in starts):
                found.append(str(path.relative_to(directory)))
                break
    return found
