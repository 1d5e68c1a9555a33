"""A model file's SHA-256, remembered by the file's identity on disk: never stale, never required."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from langchain_hindsight.embeddings._file_digest import SETTLE_S, file_sha256, memo_path


def later() -> float:
    """A clock at which the files below look settled."""
    return time.time() + 10 * SETTLE_S


def _weights(tmp_path: Path, data: bytes = b"\x01\x02" * 50_000) -> Path:
    path = tmp_path / "model" / "model.safetensors"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    return path


def test_the_digest_is_remembered_and_then_read_without_hashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, cache = _weights(tmp_path), tmp_path / "cache"
    expected = hashlib.sha256(path.read_bytes()).digest()
    assert file_sha256(path, cache, now=later()) == expected
    assert memo_path(path, cache).read_bytes() == expected

    def no_hashing(*args: object, **kwargs: object) -> None:
        raise AssertionError("hashed again")

    monkeypatch.setattr(hashlib, "file_digest", no_hashing)
    assert file_sha256(path, cache, now=later()) == expected


@pytest.mark.parametrize("change", ["rewrite", "truncate", "append"])
def test_a_changed_file_is_hashed_again_even_with_its_old_modification_time(tmp_path: Path, change: str) -> None:
    path, cache = _weights(tmp_path), tmp_path / "cache"
    before = path.stat()
    old = file_sha256(path, cache, now=later())
    time.sleep(0.05)  # past the file system's clock tick: the change time moves
    data = path.read_bytes()
    changed = {"rewrite": bytes(255 - b for b in data), "truncate": data[:-1000], "append": data + b"\0"}[change]
    path.write_bytes(changed)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # the modification time put back
    new = file_sha256(path, cache, now=later())
    assert new == hashlib.sha256(changed).digest() != old


def test_a_file_changed_moments_ago_is_hashed_every_time(tmp_path: Path) -> None:
    path, cache = _weights(tmp_path), tmp_path / "cache"
    assert file_sha256(path, cache) == hashlib.sha256(path.read_bytes()).digest()
    assert not cache.exists()  # nothing remembered: a write in the same clock tick could keep its times


def test_a_damaged_memo_is_ignored_and_written_again(tmp_path: Path) -> None:
    path, cache = _weights(tmp_path), tmp_path / "cache"
    expected = file_sha256(path, cache, now=later())
    memo = memo_path(path, cache)
    memo.write_bytes(expected[:-1])  # cut short
    assert file_sha256(path, cache, now=later()) == expected
    assert memo.read_bytes() == expected


def test_an_unwritable_cache_only_means_hashing(tmp_path: Path) -> None:
    path = _weights(tmp_path)
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    assert file_sha256(path, blocked / "cache", now=later()) == hashlib.sha256(path.read_bytes()).digest()
    assert file_sha256(path, None) == hashlib.sha256(path.read_bytes()).digest()
