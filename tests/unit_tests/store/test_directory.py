"""The store directory's intent files: an interrupted import is finished without writing anything twice, and
leaves no plaintext behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.store import _directory
from langchain_hindsight.store.backend import ChromaRecords
from tests.fakes import HashEmbeddings


def _pending(directory: Path, units: list[MemoryUnit]) -> None:
    """What an import killed after writing its pending file leaves (the file, complete)."""
    lines = (json.dumps(u.to_dict(), ensure_ascii=False, sort_keys=True) + "\n" for u in units)
    _directory.Intent.IMPORT.write(directory, "".join(lines).encode("utf-8"))


def test_rolling_an_import_forward_writes_only_what_did_not_arrive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "db"
    units = [MemoryUnit(memory_id=f"mem_{i}", content=f"imported lesson {i} 第{i}条") for i in range(6)]
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        store.import_units(units[:4])  # the first four reached the store before the kill
        arrived = {u.memory_id: u for u in store.list_units()}
    _pending(directory, units)
    written: list[str] = []
    upsert = ChromaRecords.upsert

    def counting(self: ChromaRecords, **kwargs: object) -> None:
        written.extend(kwargs["ids"])  # type: ignore[arg-type]
        upsert(self, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ChromaRecords, "upsert", counting)
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        assert sorted(written) == ["mem_4", "mem_5"]  # an identical record is never upserted again
        now = {u.memory_id: u for u in store.list_units()}
        assert sorted(now) == [u.memory_id for u in units]
        assert all(now[i] == u for i, u in arrived.items())
    assert not _directory.Intent.IMPORT.pending(directory)


def test_a_half_written_import_file_is_erased_on_reopen(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    MemoryStore(directory, embeddings=HashEmbeddings()).close()
    tmp = directory / (_directory.Intent.IMPORT.value + ".tmp")  # killed while writing it: nothing was imported
    tmp.write_text('{"content": "SECRET-LESSON-TEXT"}\n', encoding="utf-8")
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        assert store.count() == 0
    assert not tmp.exists()
    assert not any(b"SECRET-LESSON-TEXT" in p.read_bytes() for p in directory.rglob("*") if p.is_file())


def test_an_import_note_a_kill_left_half_erased_is_finished_work(tmp_path: Path) -> None:
    """Killed inside the note's erase (zeros written, not yet removed): the import had finished; the store opens."""
    directory = tmp_path / "db"
    units = [MemoryUnit(memory_id=f"mem_{i}", content=f"imported lesson {i} 第{i}条") for i in range(3)]
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        store.import_units(units)
    _pending(directory, units)
    note = directory / _directory.Intent.IMPORT.value
    _directory.zero_tail(note, 0)  # what the erase does first
    assert _directory.Intent.IMPORT.read(directory) is None
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        assert sorted(u.memory_id for u in store.list_units()) == [u.memory_id for u in units]
    assert not note.exists()


def test_a_finished_import_leaves_no_pending_file(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        store.import_units([MemoryUnit(memory_id="mem_a", content="an imported lesson")])
    assert not list(directory.glob(".hindsight.import-pending*"))


@pytest.mark.parametrize("intent", list(_directory.Intent))
def test_every_intent_is_written_durably_and_erased_when_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, intent: _directory.Intent
) -> None:
    synced: list[Path] = []
    fsync_directory = _directory.fsync_directory

    def noting(directory: Path) -> None:
        synced.append(directory)
        fsync_directory(directory)

    monkeypatch.setattr(_directory, "fsync_directory", noting)
    intent.write(tmp_path, b"SECRET-NOTE")
    assert synced == [tmp_path]  # the new directory entry is durable too, not only the file's bytes
    assert intent.pending(tmp_path)
    assert intent.read(tmp_path) == b"SECRET-NOTE"
    (tmp_path / (intent.value + ".tmp")).write_bytes(b"SECRET-NOTE")  # a copy a kill left half-written
    intent.clear(tmp_path)
    assert not intent.pending(tmp_path)
    assert intent.read(tmp_path) is None
    assert list(tmp_path.iterdir()) == []
    assert synced == [tmp_path, tmp_path]  # the removal is durable: a crash cannot bring a finished note back
