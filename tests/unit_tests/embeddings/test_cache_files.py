"""How the embedders' cache files are named and tidied: by the bytes they copy, unused ones removed after 30 days.

What the cached files hold (the real USE tokenizer and weights, parsed and loaded) is tested in the integration
tier, ``tests/integration_tests/embeddings/test_use_cache.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from langchain_hindsight.embeddings._cache_files import used
from langchain_hindsight.embeddings._use_cache import resources_dir, tokenizer_cache_path, weights_cache_path

SP_MODEL = resources_dir() / "sp.model"


def test_the_cache_file_is_named_by_the_model_bytes(tmp_path: Path) -> None:
    copy = tmp_path / "sp.model"
    copy.write_bytes(SP_MODEL.read_bytes())
    same = tokenizer_cache_path(tmp_path, copy)
    assert same == tokenizer_cache_path(tmp_path, SP_MODEL)
    raw = copy.read_bytes()
    copy.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    assert tokenizer_cache_path(tmp_path, copy) != same


def test_the_weights_copy_is_named_by_the_content_it_copies(tmp_path: Path) -> None:
    weights = tmp_path / "weights.npz"
    np.savez_compressed(weights, a=np.zeros(3))
    first = weights_cache_path(tmp_path / "cache", weights)
    np.savez_compressed(weights, a=np.ones(3))
    assert weights_cache_path(tmp_path / "cache", weights) != first
    # Another installation (another path, another modification time) of the same weights shares the copy.
    packaged = resources_dir() / "weights.npz"
    elsewhere = tmp_path / "other-venv" / "weights.npz"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(packaged.read_bytes())
    assert weights_cache_path(tmp_path / "cache", elsewhere) == weights_cache_path(tmp_path / "cache", packaged)


def test_using_a_cache_file_removes_its_kind_unused_for_thirty_days(tmp_path: Path) -> None:
    now = 2_000_000_000.0
    current, stale, recent = (tmp_path / f"use-weights-{n}.npz" for n in ("current", "stale", "recent"))
    other_kind = tmp_path / "sentence-model-stale.onnx"
    for path, age_days in ((current, 90), (stale, 31), (recent, 29), (other_kind, 90)):
        path.write_bytes(b"x")
        os.utime(path, (now - age_days * 86_400,) * 2)
    used(current, "use-weights-*.npz", now=now)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "sentence-model-stale.onnx",  # another kind: tidied when a file of its own kind is used
        "use-weights-current.npz",
        "use-weights-recent.npz",  # another version still in use somewhere
    ]
    assert current.stat().st_mtime == now  # its use is recorded
    used(tmp_path / "gone.npz", "use-weights-*.npz", now=now)  # a missing file never raises
