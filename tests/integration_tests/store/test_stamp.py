"""The clean-close stamp of an embedded store: written at close, absent while open or after a crash, void when
a file it lists changed; derived files vouched for only on the store's word at its close (the summary written
then, and only then); the lock-only reader."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from langchain_hindsight.errors import StoreLockedError
from langchain_hindsight.store._directory import (
    DATA_FILE,
    STAMP_FILE,
    HeldDirectory,
    file_states,
    read_stamp,
    trusted_store,
)
from langchain_hindsight.store.backend import ChromaBackend
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit
from tests.counts import counts_files, counts_vouched, read_counts, write_counts

UNITS = [
    MemoryUnit(memory_id="m_csv", content="读取中文CSV时指定encoding='utf-8-sig'。", task_type="data_cleaning"),
    MemoryUnit(memory_id="m_report", content="Weekly reports cover last week only.", task_type="weekly_report"),
    MemoryUnit(memory_id="m_team", content="团队甲的周报周一提交。", namespace="团队甲", source="manual"),
]
SUMMARY = {"default": {"total": 2, "status": {"active": 2}, "active_by_task_type": {}, "by_source": {}, "runs": 0}}


def held(backend: ChromaBackend) -> HeldDirectory:
    """The embedded backend's directory (where its writes are noted)."""
    assert backend.directory is not None
    return backend.directory


def _stamp(directory: Path) -> dict[str, list[int | str]]:
    files: dict[str, list[int | str]] = json.loads((directory / STAMP_FILE).read_text(encoding="utf-8"))["files"]
    return files


@pytest.fixture
def closed(make_fake_store: Callable[..., MemoryStore], tmp_path: Path) -> Path:
    """A store closed cleanly after writing units of two namespaces and searching (its snapshot)."""
    store = make_fake_store("db")
    store.add_many(UNITS, dedupe=False)
    store.lexical_search("中文CSV", k=1)  # builds the index: its snapshot is saved at close
    store.close()
    return tmp_path / "db"


def test_a_clean_close_stamps_the_data_and_the_derived_files(closed: Path) -> None:
    files = _stamp(closed)
    assert DATA_FILE in files
    assert any(rel.startswith("mirror/") for rel in files)
    assert {rel: (state[0], state[1]) for rel, state in files.items()} == {
        rel: state for rel, state in file_states(closed).items() if rel in files
    }
    for rel, state in files.items():  # each derived file's content, as the close left it
        digest = [] if rel == DATA_FILE else [hashlib.sha256((closed / rel).read_bytes()).hexdigest()]
        assert state[2:] == digest
    assert read_stamp(closed) == frozenset(files)


def test_a_format_1_stamp_without_hashes_trusts_nothing(closed: Path) -> None:
    files = {rel: state[:2] for rel, state in _stamp(closed).items()}
    (closed / STAMP_FILE).write_text(json.dumps({"format": 1, "files": files}), encoding="utf-8")
    assert read_stamp(closed) == frozenset()


def test_the_stamp_is_absent_while_open_and_back_after_a_read_only_session(closed: Path) -> None:
    listed = frozenset(_stamp(closed))
    backend = ChromaBackend.embedded(closed)
    try:
        assert not (closed / STAMP_FILE).exists()  # what a crash now would leave: nothing vouched for
        assert backend.directory is not None
        assert backend.directory.trusted == listed
        store = MemoryStore(backend=backend, embeddings=None)
        assert store.get("m_csv").task_type == "data_cleaning"
        store.close()
        assert held(backend).writes == 0
    finally:
        backend.close()
    assert frozenset(_stamp(closed)) == listed
    assert read_stamp(closed) == listed


def test_a_read_only_session_hashes_each_derived_file_once(closed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The open checks each derived file's bytes; the close, finding it as it was, records that digest again."""
    from langchain_hindsight.store import _directory

    before = _stamp(closed)
    hashed: list[str] = []
    digest = _directory._digest

    def counting(path: Path) -> str | None:
        hashed.append(path.relative_to(closed).as_posix())
        return digest(path)

    monkeypatch.setattr(_directory, "_digest", counting)
    store = MemoryStore(closed, embeddings=None)
    assert store.get("m_csv").task_type == "data_cleaning"
    store.close()
    derived = sorted(rel for rel in before if rel != DATA_FILE)
    assert sorted(hashed) == derived
    after = _stamp(closed)
    assert {rel: after[rel] for rel in derived} == {rel: before[rel] for rel in derived}


def test_a_derived_file_edited_behind_an_open_store_is_not_vouched_for_at_its_close(closed: Path) -> None:
    """Size and modification time restored: the close records the digest the open checked, so the next open
    finds the edit and trusts nothing (before, the close hashed the edited bytes and vouched for them)."""
    snapshot = next(closed / rel for rel in _stamp(closed) if rel.startswith("mirror/"))
    store = MemoryStore(closed, embeddings=None)
    st = snapshot.stat()
    data = bytearray(snapshot.read_bytes())
    data[-1] ^= 0xFF
    snapshot.write_bytes(bytes(data))
    os.utime(snapshot, ns=(st.st_atime_ns, st.st_mtime_ns))
    store.close()
    assert read_stamp(closed) == frozenset()


def test_a_store_open_in_this_process_has_no_stamp(make_fake_store: Callable[..., MemoryStore], tmp_path: Path) -> None:
    store = make_fake_store("db")
    store.add_many(UNITS[:1], dedupe=False)
    assert not (tmp_path / "db" / STAMP_FILE).exists()
    store.close()
    assert (tmp_path / "db" / STAMP_FILE).exists()


@pytest.mark.parametrize(
    "change", ["touch data", "grow data", "edit snapshot", "same-size edit of snapshot", "delete snapshot"]
)
def test_a_changed_listed_file_voids_the_stamp(closed: Path, change: str) -> None:
    snapshot = next(closed / rel for rel in _stamp(closed) if rel.startswith("mirror/"))
    data = closed / DATA_FILE
    if change == "touch data":
        st = data.stat()
        os.utime(data, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000))
    elif change == "grow data":
        mtime = data.stat().st_mtime_ns
        with data.open("ab") as fh:
            fh.write(b"\0")
        os.utime(data, ns=(mtime, mtime))  # same mtime: the size still gives it away
    elif change == "edit snapshot":
        snapshot.write_bytes(snapshot.read_bytes() + b"x")
    elif change == "same-size edit of snapshot":  # size and mtime kept: only the content hash gives it away
        st = snapshot.stat()
        blob = bytearray(snapshot.read_bytes())
        blob[len(blob) // 2] ^= 0xFF
        snapshot.write_bytes(bytes(blob))
        os.utime(snapshot, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert file_states(closed)[snapshot.relative_to(closed).as_posix()] == (st.st_size, st.st_mtime_ns)
    else:
        snapshot.unlink()
    assert read_stamp(closed) == frozenset()
    with trusted_store(closed) as trusted:
        assert trusted == frozenset()


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps({"format": 2, "files": {DATA_FILE: [1, 1]}}),
        json.dumps({"format": 2, "files": {}}),  # no data file
        json.dumps({"format": 2, "files": {DATA_FILE: "big"}}),
    ],
)
def test_a_malformed_stamp_trusts_nothing(closed: Path, text: str) -> None:
    (closed / STAMP_FILE).write_text(text, encoding="utf-8")
    assert read_stamp(closed) == frozenset()


def test_a_stamp_never_names_a_file_outside_the_derived_paths(closed: Path) -> None:
    outside = closed.parent / "elsewhere.json"
    outside.write_text("{}", encoding="utf-8")
    files = _stamp(closed)
    st = outside.stat()
    files["../elsewhere.json"] = [st.st_size, st.st_mtime_ns, hashlib.sha256(b"{}").hexdigest()]
    (closed / STAMP_FILE).write_text(json.dumps({"format": 2, "files": files}), encoding="utf-8")
    assert read_stamp(closed) == frozenset()


def test_a_writing_session_erases_the_summary_a_counting_one_writes_it_at_close(
    make_fake_store: Callable[..., MemoryStore], tmp_path: Path
) -> None:
    directory = tmp_path / "db"
    store = make_fake_store("db")
    store.add_many(UNITS, dedupe=False)
    write_counts(directory, ["default"], SUMMARY)  # a summary the session's writes made stale
    store.close()
    assert counts_files(directory) == []  # nothing recounted: the close erased it
    assert not any(rel.startswith("counts/") for rel in _stamp(directory))

    with MemoryStore(directory, embeddings=None) as store:  # a read-only session that counts
        counted = {ns: store.statistics(namespace=ns) for ns in ("default", "团队甲")}
        assert counts_files(directory) == []  # written by the close, not by the count
    assert counted["default"]["total"] == 2
    assert counted["团队甲"]["by_source"] == {"manual": 1}
    assert counts_vouched(directory, read_stamp(directory))

    with MemoryStore(directory, embeddings=None) as store:  # another read-only session: still trusted
        assert store.backend.directory is not None
        assert counts_vouched(directory, store.backend.directory.trusted)
        assert len(store.list_units(namespace="团队甲")) == 1
    assert counts_vouched(directory, read_stamp(directory))
    summary = read_counts(directory)
    assert summary is not None
    assert summary.namespaces == ["default", "团队甲"]
    assert summary.stats == counted

    with MemoryStore(directory, embeddings=None) as store:  # a session that writes one namespace
        store.archive(["m_report"])
    summary = read_counts(directory)
    assert summary is not None
    assert set(summary.stats) == {"团队甲"}  # the written one is dropped, not patched
    assert counts_vouched(directory, read_stamp(directory))
    assert DATA_FILE in read_stamp(directory)


def test_counts_followed_by_a_write_are_not_kept(make_fake_store: Callable[..., MemoryStore], tmp_path: Path) -> None:
    store = make_fake_store("db")
    store.add_many(UNITS, dedupe=False)
    store.statistics()
    store.archive(["m_report"])  # after the count: the count is stale, and no mirror can recount it
    store.close()
    summary = read_counts(tmp_path / "db")
    assert summary is None or "default" not in summary.stats


def test_a_write_after_the_stores_close_leaves_the_derived_files_unvouched(closed: Path) -> None:
    backend = ChromaBackend.embedded(closed)
    with MemoryStore(backend=backend, embeddings=None) as store:
        store.statistics()
    col = backend.list_collections()[0]
    col.update(ids=col.get(include=[])["ids"][:1], metadatas=[{"confidence": 0.5}])  # the store cannot see it
    backend.close()
    assert set(_stamp(closed)) == {DATA_FILE}


def test_a_backend_closed_without_its_store_vouches_for_no_derived_file(closed: Path) -> None:
    ChromaBackend.embedded(closed).close()  # no store: nobody gave the derived files' word
    assert set(_stamp(closed)) == {DATA_FILE}


def test_a_summary_left_without_a_stamp_is_not_vouched_for(closed: Path) -> None:
    """After a crash there is no stamp: a summary the dead process left stays untrusted after the next close."""
    write_counts(closed, ["default"], SUMMARY)
    (closed / STAMP_FILE).unlink()  # the directory as a process killed after writing the summary leaves it
    with MemoryStore(closed, embeddings=None) as store:
        assert store.backend.directory is not None
        assert store.backend.directory.trusted == frozenset()
        assert store.count() == 2
    assert counts_files(closed)
    assert not set(counts_files(closed)) & read_stamp(closed)
    assert DATA_FILE in read_stamp(closed)


def test_every_write_method_of_the_interface_marks_the_session(tmp_path: Path) -> None:
    backend = ChromaBackend.embedded(tmp_path / "db")
    try:
        col = backend.create_collection("col", {"hindsight_role": "memories"})
        writes: dict[str, Callable[[], object]] = {
            "upsert": lambda: col.upsert(ids=["a", "b"], embeddings=[[1.0, 0.0], [0.0, 1.0]], documents=["x", "y"]),
            "update": lambda: col.update(ids=["a"], metadatas=[{"k": 2}]),
            "delete": lambda: col.delete(ids=["b"]),
            "modify": lambda: col.modify(metadata={"hindsight_role": "memories", "n": 1}),
            "get_or_create": lambda: backend.get_or_create("other", {"hindsight_role": "memories"}),
            "delete_collection": lambda: backend.delete_collection("other"),
            "erase": lambda: backend.erase(["col"]),
        }
        for name, write in writes.items():
            before = held(backend).writes
            write()
            assert held(backend).writes > before, name
    finally:
        backend.close()


def test_reads_leave_the_session_clean_writes_mark_it(tmp_path: Path) -> None:
    backend = ChromaBackend.embedded(tmp_path / "db")
    try:
        assert backend.list_collections() == []
        assert backend.get_collection("nothing") is None
        assert backend.recover_interrupted() is False
        assert held(backend).writes == 0
        col = backend.create_collection("col", {"hindsight_role": "memories"})
        assert held(backend).writes == 1
    finally:
        backend.close()
    backend = ChromaBackend.embedded(tmp_path / "db")
    try:
        col = backend.get_collection("col")
        assert col is not None
        assert col.count() == 0
        assert col.get()["ids"] == []
        assert held(backend).writes == 0
        col.upsert(ids=["a"], embeddings=[[1.0, 0.0]], documents=["文档"], metadatas=[{"k": 1}])
        assert held(backend).writes == 1
    finally:
        backend.close()
    backend = ChromaBackend.embedded(tmp_path / "db")
    try:
        assert not hasattr(backend, "client")  # no raw client: every write passes a marked method
    finally:
        backend.close()


def test_trusted_store_holds_the_lock_and_leaves_the_stamp(closed: Path) -> None:
    listed = frozenset(_stamp(closed))
    with trusted_store(closed) as trusted:
        assert trusted == listed
        with pytest.raises(StoreLockedError):
            ChromaBackend.embedded(closed)
    assert frozenset(_stamp(closed)) == listed
    ChromaBackend.embedded(closed).close()  # the lock was released


def test_trusted_store_on_an_open_store_raises_the_open_error(closed: Path) -> None:
    with MemoryStore(closed, embeddings=None), pytest.raises(StoreLockedError) as reader, trusted_store(closed):
        pass
    with MemoryStore(closed, embeddings=None), pytest.raises(StoreLockedError) as opener:
        MemoryStore(closed, embeddings=None)
    assert str(reader.value) == str(opener.value)


def test_trusted_store_of_a_missing_directory_creates_nothing(tmp_path: Path) -> None:
    with trusted_store(tmp_path / "nowhere") as trusted:
        assert trusted == frozenset()
    assert not (tmp_path / "nowhere").exists()


_CHILD = """
import sys, time
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit
from tests.counts import write_counts
from tests.fakes import NgramEmbeddings
store = MemoryStore(sys.argv[1], embeddings=NgramEmbeddings())
store.add_many([MemoryUnit(content="进程被杀之前写入的经验。")], dedupe=False)
write_counts(store.persist_directory, ["default"], {"default": {"total": 1, "status": {"active": 1},
             "active_by_task_type": {}, "by_source": {}, "runs": 0}})
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.integration
def test_a_killed_process_leaves_no_stamp_and_its_summary_untrusted(closed: Path) -> None:
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(root)}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(closed)], stdout=subprocess.PIPE, text=True, env=env, cwd=root
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        assert not (closed / STAMP_FILE).exists()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    time.sleep(0.1)
    assert not (closed / STAMP_FILE).exists()
    with MemoryStore(closed, embeddings=None) as store:
        assert store.backend.directory is not None
        assert store.backend.directory.trusted == frozenset()
        assert store.count() == 3  # the killed process's write is there
    assert counts_files(closed)
    assert not set(counts_files(closed)) & read_stamp(
        closed
    )  # its summary (which missed nothing here) is not vouched for
    assert DATA_FILE in read_stamp(closed)


def _derived(directory: Path) -> set[str]:
    return {
        p.relative_to(directory).as_posix()
        for name in ("lexical", "mirror")
        for p in (directory / name).rglob("*")
        if p.is_file()
    }


def test_a_scrub_keeps_the_derived_files_the_stamp_vouches_for(
    make_fake_store: Callable[..., MemoryStore], closed: Path
) -> None:
    before = _derived(closed)
    assert before  # the fixture's close saved a snapshot
    store = make_fake_store("db")
    store.scrub()
    assert _derived(closed) == before  # vouched files are what the data holds: nothing to erase
    store.close()


def test_a_scrub_erases_the_derived_files_the_stamp_does_not_vouch_for_and_the_close_saves_them_again(
    make_fake_store: Callable[..., MemoryStore], closed: Path
) -> None:
    backend = ChromaBackend.embedded(closed)
    col = backend.list_collections()[0]
    col.update(ids=col.get(include=[])["ids"][:1], metadatas=[{"confidence": 0.5}])  # changed under the stamp
    backend.close()
    stale = _derived(closed)
    assert stale
    assert set(_stamp(closed)) == {DATA_FILE}
    (closed / "mirror" / "orphan.npz.tmp").write_bytes(b"half-written")  # a half-written copy is never vouched
    store = make_fake_store("db")
    store.scrub()
    assert _derived(closed) == set()
    assert store.lexical_search("中文CSV", k=1)[0][0] == "m_csv"  # rebuilt from the records
    store.close()
    assert _derived(closed) >= {p for p in stale if p.startswith("mirror/")}  # the close saved it again
