"""The one snapshot format of derived files (``replica.files``): a header every kind shares, one writer, one reader;
a file of the older format, another kind or another collection is never read (the kind is rebuilt)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from langchain_hindsight.store._naming import collection_name
from langchain_hindsight.store.replica.files import DerivedFiles, read_header, read_snapshot, write_snapshot
from langchain_hindsight.store.replica.lexical import LexicalIndex
from langchain_hindsight.store.replica.records import Held, Mirror, record_bytes
from langchain_hindsight.types import MemoryUnit


def test_every_kind_shares_one_header_and_one_reader(tmp_path: Path) -> None:
    index = LexicalIndex()
    index.upsert([MemoryUnit(memory_id="a", content="读取中文CSV时指定编码。")])
    mirror = Mirror(2, "fake (2-d)")
    mirror.put("a", [1.0, 0.0], record_bytes("读取中文CSV时指定编码。", {"status": "active"}))
    files = DerivedFiles(tmp_path, ())
    Held(index, mirror).save(files.path("mirror", "default"))
    entry = {"total": 1, "status": {"active": 1}, "active_by_task_type": {}, "by_source": {}, "runs": 0}
    files.write_summary(["default"], {"default": entry})
    collection = collection_name("default", "memories")
    for kind in ("mirror", "counts"):
        header = read_header(tmp_path / kind / f"{collection}.npz", kind)  # type: ignore[arg-type]
        assert header is not None
        assert (header["kind"], header["format"], header["collection"]) == (kind, 3, collection)
        assert header.get("identity") == ("fake (2-d)" if kind == "mirror" else None)
    assert read_header(files.path("mirror", "default"), "counts") is None  # another kind
    moved = files.path("mirror", "other")
    files.path("mirror", "default").rename(moved)
    assert read_header(moved, "mirror") is None  # another collection's file
    assert Held.load(moved, "fake (2-d)") is None


def test_an_older_format_is_not_read_it_is_rebuilt(tmp_path: Path) -> None:
    """Format 1: each kind's own npz with a ``header`` array; format 2: the lexical index in a file of its own.
    Loading either yields nothing (the caller rebuilds), and the older files are erased with the namespace's."""
    for kind in ("lexical", "mirror"):
        path = tmp_path / kind / "hs-x.npz"
        path.parent.mkdir()
        header = {"version": 1, "dimension": 2, "identity": "fake (2-d)", "meta": {"count": 0}}
        with path.open("wb") as fh:
            np.savez(fh, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
        assert read_header(path, "mirror") is None
    assert Held.load(tmp_path / "mirror" / "hs-x.npz", "fake (2-d)") is None
    (tmp_path / "summary.json").write_text("{}", encoding="utf-8")  # the older statistics file: erased, not read
    files = DerivedFiles(tmp_path, ())
    assert tmp_path / "summary.json" in files.unvouched()
    files.erase_summary()
    assert not (tmp_path / "summary.json").exists()
    name = files.path("mirror", "default").name
    assert set(files.snapshots("default")) == {tmp_path / "mirror" / name, tmp_path / "lexical" / name}


def test_counts_answer_only_when_every_file_is_vouched_and_agrees(tmp_path: Path) -> None:
    entry = {"total": 1, "status": {"active": 1}, "active_by_task_type": {"周报": 1}, "by_source": {"manual": 1}}
    stats = {"default": {**entry, "runs": 0}, "团队甲": {**entry, "runs": 2}}
    DerivedFiles(tmp_path, ()).write_summary(["default", "团队甲"], stats)
    hs_d, hs_t = (f"counts/{collection_name(ns, 'memories')}.npz" for ns in ("default", "团队甲"))
    files = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "counts").glob("*.npz"))
    assert files == sorted([hs_d, hs_t])
    summary = DerivedFiles(tmp_path, files).summary()
    assert summary is not None
    assert (summary.namespaces, summary.stats) == (["default", "团队甲"], stats)
    assert list(summary.stats["团队甲"]) == list(stats["团队甲"])  # printing order kept
    assert DerivedFiles(tmp_path, files[:1]).summary() is None  # one not vouched for: nothing answers
    header = read_snapshot(tmp_path / hs_d, "counts", ())
    assert header is not None
    fields = {k: v for k, v in header[0].items() if k not in {"kind", "format", "collection"}}
    write_snapshot(tmp_path / hs_d, "counts", {**fields, "namespaces": ["default"]})
    assert DerivedFiles(tmp_path, files).summary() is None  # the files disagree on the namespaces
    DerivedFiles(tmp_path, ()).write_summary(["default", "团队甲"], {"default": stats["default"]})
    assert not (tmp_path / hs_t).exists()  # a namespace not kept loses its file
    summary = DerivedFiles(tmp_path, [hs_d]).summary()
    assert summary is not None
    assert summary.namespaces == ["default", "团队甲"]
    assert "团队甲" not in summary.stats  # listed, not counted: stats opens the store


def test_only_the_files_module_opens_a_snapshot_container() -> None:
    """One format, one writer and one reader: no other store module saves or loads an npz or a zip itself."""
    root = Path(__file__).resolve().parents[3] / "langchain_hindsight" / "store"
    reaches = {
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        if path.name != "files.py"
        and any(s in path.read_text(encoding="utf-8") for s in ("np.savez", "np.load(", "zipfile", "write_array"))
    }
    assert reaches == set()
