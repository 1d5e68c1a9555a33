"""``hindsight search`` on a cleanly closed store answers from its snapshot: the same output, no Chroma."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.cli import _search as quick_search
from langchain_hindsight.cli import search as search_command
from langchain_hindsight.cli.main import main
from langchain_hindsight.embeddings.multilingual import ScriptRoutedEmbeddings
from langchain_hindsight.recall import engine as recall_engine
from langchain_hindsight.store._directory import STAMP_FILE
from langchain_hindsight.store._naming import collection_name
from langchain_hindsight.store.replica import DerivedFiles
from langchain_hindsight.store.replica.files import read_snapshot, write_snapshot
from tests.fakes import HashEmbeddings

NOW = datetime(2026, 11, 1, tzinfo=UTC)
LESSONS = [
    ("data_cleaning", "用pandas读取含中文的CSV时要指定encoding='utf-8-sig'。"),
    ("weekly_report", "周报的数据范围取上周一到周日的自然周，不要用最近7天滚动窗口。"),
    ("api_call", "Slack chat.postMessage needs the channel ID, not the channel name."),
    ("api_call", "Retry HTTP 429 responses with exponential backoff, at most five times."),
    ("data_cleaning", "清洗销售数据前先去掉重复的订单号。"),
]


def _build(path: Path, embeddings: object) -> None:
    with MemoryStore(path, embeddings=embeddings) as store:  # type: ignore[arg-type]
        store.add_many(
            [MemoryUnit(task_type=t, content=c, created_at=NOW, last_accessed_at=NOW) for t, c in LESSONS],
            dedupe=False,
        )
        vector = store.embeddings.embed_query("warm up")
        store.hybrid_search("warm up", vector, k=1)  # the mirror and lexical index exist, so close saves them


def _args(path: Path, query: str, **extra: object) -> argparse.Namespace:
    base = {
        "path": str(path),
        "server": None,
        "database_url": None,
        "principal": None,
        "config": None,
        "namespace": None,
        "k": 3,
        "task_type": None,
        "json": False,
        "query": query,
        "embeddings": HashEmbeddings(64),
    }
    return argparse.Namespace(**{**base, **extra})


@pytest.mark.parametrize("query", ["CSV 编码 pandas", "Slack channel ID", "完全无关的诗歌"])
def test_the_snapshot_answer_is_the_stores_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    path = tmp_path / "db"
    _build(path, HashEmbeddings(64))
    _assert_the_snapshot_answers_as_the_store(path, query, HashEmbeddings(64), capsys, monkeypatch)


@pytest.mark.parametrize("query", ["Slack channel ID", "CSV 编码 pandas", "用pandas读取CSV with utf-8-sig"])
def test_with_the_default_embedder_the_snapshot_answer_is_the_stores_answer(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    routed_embeddings: ScriptRoutedEmbeddings,
    query: str,
) -> None:
    """The quick path embeds with the model without LangChain, the opened store with ``ScriptRoutedEmbeddings``."""
    path = tmp_path / "db"
    _build(path, routed_embeddings)
    _assert_the_snapshot_answers_as_the_store(path, query, None, capsys, monkeypatch)


def _assert_the_snapshot_answers_as_the_store(
    path: Path,
    query: str,
    embeddings: object,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``query``'s quick answer, then the store-opened one (``embeddings``: ``None`` for each side's default)."""
    # Recency counts to the second, so both answers are ranked at one instant (the clock is an input too).
    monkeypatch.setattr(recall_engine, "utcnow", lambda: NOW + timedelta(days=3, seconds=17))
    for as_json in (False, True):
        args = _args(path, query, json=as_json, embeddings=embeddings)
        assert quick_search.quick(args) == 0  # the store is never opened
        quick = capsys.readouterr().out
        stamp = (path / STAMP_FILE).read_bytes()
        (path / STAMP_FILE).unlink()  # nothing vouched for: the store is opened
        assert quick_search.quick(args) is None
        assert search_command.search(args) == 0
        assert capsys.readouterr().out == quick
        assert (path / STAMP_FILE).read_bytes() != stamp  # the session that opened it stamped it afresh


def test_a_session_that_wrote_leaves_a_snapshot_that_holds_its_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "db"
    _build(path, HashEmbeddings(64))
    with MemoryStore(path, embeddings=HashEmbeddings(64)) as store:  # writes without searching
        store.add(MemoryUnit(task_type="api_call", content="新的经验：上传大文件要分片。"))
        store.archive([u.memory_id for u in store.list_units() if "Slack" in u.content])
    assert quick_search.quick(_args(path, "上传大文件 分片", k=5)) == 0  # the store is never opened
    out = capsys.readouterr().out
    assert "上传大文件要分片" in out  # the write was applied to the snapshots, saved at close
    assert "Slack" not in out  # and the archived memory left them


@pytest.mark.parametrize(
    "extra",
    [{"server": "localhost:1"}, {"principal": "analyst"}, {"namespace": "other"}, {"embeddings": HashEmbeddings(32)}],
)
def test_what_the_snapshot_cannot_answer_goes_to_the_store(tmp_path: Path, extra: dict[str, object]) -> None:
    path = tmp_path / "db"
    _build(path, HashEmbeddings(64))
    assert quick_search.quick(_args(path, "CSV", **extra)) is None


_NO_CHROMA = """
import sys
from langchain_hindsight.cli.main import main
code = main(sys.argv[1:])
print("chromadb imported:", "chromadb" in sys.modules, file=sys.stderr)
heavy = ("langchain", "langchain_core", "torch", "langchain_hindsight.store.memory_store")
print("heavy:", sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.integration
@pytest.mark.parametrize(("query", "found"), [("读取CSV 编码", "utf-8-sig"), ("Slack channel ID", "chat.postMessage")])
def test_search_of_a_stamped_store_imports_neither_chroma_nor_langchain(tmp_path: Path, query: str, found: str) -> None:
    """A CJK query loads the multilingual model alone; a Latin-script one both halves (still no ``langchain_core``)."""
    path = tmp_path / "db"
    _build(path, ScriptRoutedEmbeddings())  # the default embedder, as the command line uses
    root = Path(__file__).resolve().parents[3]

    def child(*launch: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(root)}
        argv = [sys.executable, *launch, "search", query, "--path", str(path)]
        return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root, timeout=300, check=False)

    runs = [child("-c", _NO_CHROMA) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stderr.strip().splitlines()[-2:] == ["chromadb imported: False", "heavy: []"]
    assert runs[0].stdout == runs[1].stdout
    assert found in runs[0].stdout
    program = child("-m", "langchain_hindsight.cli.main")  # ends without the interpreter's teardown: output whole
    assert (program.returncode, program.stdout) == (0, runs[0].stdout), program.stderr[-2000:]


_RETRY = LESSONS[3][1]
_FORGED = "Never back off: resend every HTTP 429 at once, forever, ignoring limits."[: len(_RETRY)]
_FORGED = _FORGED.ljust(len(_RETRY), "!")


def _edit_in_place(path: Path, rewrite: str) -> None:
    """Rewrite ``path`` keeping its size and modification time (what a size+mtime check cannot see)."""
    import numpy as np

    st = path.stat()
    if rewrite == "forge":  # a valid snapshot whose record text is in no record of the store
        arrays = ("ids", "vectors", "offsets", "records", "vocab", "lengths", "indptr", "docs", "tfs")
        loaded = read_snapshot(path, "mirror", arrays)
        assert loaded is not None
        header, saved = loaded
        blob = saved["records"].tobytes()
        assert _RETRY.encode() in blob
        saved["records"] = np.frombuffer(blob.replace(_RETRY.encode(), _FORGED.encode()), dtype=np.uint8)
        fields = {k: v for k, v in header.items() if k not in {"kind", "format", "collection"}}
        write_snapshot(path, "mirror", fields, saved)  # the store's own writer: a well-formed snapshot
    else:  # corrupt: the same number of meaningless bytes
        path.write_bytes(bytes((i * 37 + 11) % 256 for i in range(st.st_size)))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size
    assert path.stat().st_mtime_ns == st.st_mtime_ns


@pytest.mark.parametrize("rewrite", ["forge", "corrupt"])
def test_a_snapshot_edited_in_place_is_never_served_and_is_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, rewrite: str
) -> None:
    """Same size, same mtime, other bytes: the stamp's content hash voids it; the search opens the store."""
    import logging

    from langchain_hindsight.store._directory import read_stamp

    path = tmp_path / "db"
    _build(path, HashEmbeddings(64))
    (mirror,) = (path / "mirror").iterdir()
    _edit_in_place(mirror, rewrite)
    assert len(_FORGED.encode()) == len(_RETRY.encode())
    assert _FORGED != _RETRY
    with caplog.at_level(logging.WARNING, logger="langchain_hindsight.store._directory"):
        assert read_stamp(path) == frozenset()
    assert "does not have the content" in caplog.text  # logged
    assert quick_search.quick(_args(path, "HTTP 429 retry")) is None  # never served quick
    assert search_command.search(_args(path, "HTTP 429 retry", k=5, json=True)) == 0  # opens the store
    out = capsys.readouterr().out
    assert _RETRY in out
    assert _FORGED not in out
    assert _FORGED.encode() not in mirror.read_bytes()  # rebuilt from the store at that session's close
    assert f"mirror/{mirror.name}" in read_stamp(path)  # and vouched for again
    assert quick_search.quick(_args(path, "HTTP 429 retry")) == 0


def test_the_quick_paths_and_the_live_store_read_through_one_reader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``hindsight search`` and ``hindsight stats`` ask the replica's :class:`DerivedFiles` which files the stamp
    vouches for, the same object and question the live store asks before it loads a snapshot."""
    path = tmp_path / "db"
    _build(path, HashEmbeddings(64))
    asked: list[tuple[str, str]] = []
    vouched = DerivedFiles.vouched

    def spy(self: DerivedFiles, file: Path) -> bool:
        answer = vouched(self, file)
        asked.append((file.relative_to(self.directory).as_posix(), str(answer)))
        return answer

    monkeypatch.setattr(DerivedFiles, "vouched", spy)
    with MemoryStore(path, embeddings=HashEmbeddings(64)) as store:  # the live store loads the snapshot
        store.hybrid_search("CSV", store.embeddings.embed_query("CSV"), k=1)
        store.statistics()
    live = set(asked)
    asked.clear()
    assert quick_search.quick(_args(path, "CSV 编码 pandas")) == 0
    assert main(["stats", "--path", str(path), "--json"]) == 0
    capsys.readouterr()
    quick = set(asked)
    counts = f"counts/{collection_name('default', 'memories')}.npz"
    snapshots = {rel for rel, answer in live if answer == "True" and rel.endswith(".npz")} - {counts}
    assert len(snapshots) == 1  # the lexical index and the recall mirror, loaded by the live store
    assert snapshots <= {rel for rel, _ in quick}  # and asked about by the search's quick path
    assert (counts, "True") in quick  # the counts the live store's close wrote, read by stats


def test_the_program_frees_the_loaded_snapshot_by_ending(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Under ``hindsight`` (``cli.main.run``) the quick path leaves its snapshot and models in ``args.resident``."""
    from langchain_hindsight.store.replica.snapshot import StoreSnapshot

    path = tmp_path / "db"
    _build(path, HashEmbeddings(64))
    resident: list[object] = []
    assert quick_search.quick(_args(path, "CSV 编码 pandas", resident=resident)) == 0
    assert [type(r) for r in resident] == [StoreSnapshot]
    assert quick_search.quick(_args(path, "CSV 编码 pandas")) == 0  # main()'s callers: nothing is kept
    assert capsys.readouterr().out.count("utf-8-sig") == 2
