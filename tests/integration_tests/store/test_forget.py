"""Hard delete: ``forget`` leaves no byte of a forgotten memory anywhere under the store's directory.

Every test reads the raw files (``chroma.sqlite3`` and every HNSW segment file) and looks for the
forgotten unit's text, metadata, id and vector. Each scan is first shown to *find* the unit before
the delete, so a passing "nothing found" is not a blind scanner.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from langchain_hindsight import ConfigurationError, MemoryNotFoundError, MemoryStore, MemoryUnit
from langchain_hindsight.store._directory import Intent
from langchain_hindsight.writes import LLMWriteJudge
from tests.bytescan import text_hits, vector_hits
from tests.fakes import REPO_ROOT, HashEmbeddings, judge_model
from tests.unit_tests.store.store_backends import chroma_store_factory, fake_embedding_store  # noqa: F401 - fixtures


def _secret_unit(tag: str = "alpha") -> MemoryUnit:
    return MemoryUnit(
        task_type="data_cleaning",
        content=f"SECRET-{tag}-CONTENT 客户的秘密密码是{tag}",
        task_description=f"SECRET-{tag}-TASK",
        tags=[f"secret-{tag}-tag"],
        context={"parameters": {"token": f"SECRET-{tag}-PARAM"}},
    )


def _needles(unit: MemoryUnit) -> dict[str, str]:
    tag = unit.content.split("-")[1]
    return {
        "content": f"SECRET-{tag}-CONTENT",
        "chinese": f"客户的秘密密码是{tag}",
        "task": f"SECRET-{tag}-TASK",
        "tag": f"secret-{tag}-tag",
        "param": f"SECRET-{tag}-PARAM",
        "id": unit.memory_id,
    }


def _filler(n: int) -> list[MemoryUnit]:
    return [MemoryUnit(task_type="general", content=f"filler memory number {i} about topic {i % 7}") for i in range(n)]


@pytest.fixture
def fast_store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore(tmp_path / "db", embeddings=HashEmbeddings()) as store:
        yield store


def test_forget_erases_every_byte_and_the_store_keeps_working(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    emb = HashEmbeddings()
    store = MemoryStore(directory, embeddings=emb)
    # > 1000 records: Chroma's HNSW index syncs to disk, so the vector is in data_level0.bin too.
    store.add_many(_filler(1100), dedupe=False)
    secret = store.add(_secret_unit()).unit
    keep = store.add(_secret_unit("keeper")).unit
    store.add_many(_filler(50), dedupe=False)  # more writes after the secret one
    store.record_feedback([secret.memory_id], success=True)
    store.lexical_search("SECRET alpha", k=1)  # builds the lexical index, whose snapshot is written at close
    store.close()
    store = MemoryStore(directory, embeddings=emb)
    snapshots = list(directory.glob("mirror/*.npz"))
    assert snapshots
    assert secret.memory_id.encode() in snapshots[0].read_bytes()  # the scans below include the snapshot
    vector = emb.embed_query(secret.content)

    assert set(text_hits(directory, _needles(secret))) == set(_needles(secret))  # the scanner sees it
    assert vector_hits(directory, vector)

    assert store.forget(secret.memory_id) == 1
    assert text_hits(directory, _needles(secret)) == {}
    assert vector_hits(directory, vector) == []
    assert not (directory / Intent.SCRUB.value).exists()
    assert text_hits(directory, {"kept": "SECRET-keeper-CONTENT"})  # only the forgotten unit is gone

    # The store works on after the purge, and after a reopen.
    assert store.get(keep.memory_id).content == keep.content
    assert store.search(keep.content, k=1)[0][0].memory_id == keep.memory_id
    store.close()
    with MemoryStore(directory, embeddings=emb) as again:
        assert again.count() == 1100 + 50 + 1
        with pytest.raises(MemoryNotFoundError):
            again.get(secret.memory_id)
        assert again.search(keep.content, k=1)[0][0].memory_id == keep.memory_id
        assert secret.memory_id not in {i for i, _ in again.lexical_search("SECRET alpha CONTENT", k=5)}
        added = again.add(_secret_unit("after")).unit
        assert again.get(added.memory_id) == added
    assert text_hits(directory, _needles(secret)) == {}


def test_api_delete_alone_leaves_bytes_and_scrub_erases_them(fast_store: MemoryStore) -> None:
    """The measured fact behind the design: a Chroma delete is only logical."""
    directory = fast_store.persist_directory
    assert directory is not None
    fast_store.add_many(_filler(20), dedupe=False)
    secret = fast_store.add(_secret_unit()).unit
    assert fast_store.forget(secret.memory_id, scrub=False) == 1
    with pytest.raises(MemoryNotFoundError):
        fast_store.get(secret.memory_id)
    assert "content" in text_hits(directory, _needles(secret))  # still on disk
    fast_store.scrub()
    assert text_hits(directory, _needles(secret)) == {}
    assert fast_store.count() == 20


def test_forget_namespace_erases_it_and_spares_the_others(fast_store: MemoryStore) -> None:
    directory = fast_store.persist_directory
    assert directory is not None
    alice = fast_store.add(_secret_unit("alice"), namespace="alice").unit
    fast_store.archive([fast_store.add(_secret_unit("alicearc"), namespace="alice").memory_id], namespace="alice")
    bob = fast_store.add(_secret_unit("bob"), namespace="bob").unit
    assert fast_store.forget(namespace="alice") == 2
    assert "alice" not in fast_store.namespaces()
    assert text_hits(directory, {**_needles(alice), "archived": "SECRET-alicearc-CONTENT"}) == {}
    assert fast_store.get(bob.memory_id, namespace="bob") == bob
    assert fast_store.count(namespace="alice") == 0


def test_forget_removes_references_and_journal_entries(make_chroma_store: Callable[..., MemoryStore]) -> None:
    from langchain_hindsight.journal import RunJournal

    fast_store = make_chroma_store(
        judge=LLMWriteJudge(judge_model("conflict"))
    )  # real embeddings: the lessons are similar
    directory = fast_store.persist_directory
    assert directory is not None
    lesson = "When reading a Chinese CSV with pandas, pass encoding='{}' to avoid garbled text."
    old = fast_store.add(MemoryUnit(task_type="data_cleaning", content=lesson.format("gbk"))).unit
    new = fast_store.add(MemoryUnit(task_type="data_cleaning", content=lesson.format("utf-8-sig"))).unit
    assert new.supersedes == old.memory_id
    journal = RunJournal(fast_store)
    journal.start("run-1", task="call the api", served=[])
    journal.add_produced("run-1", [old.memory_id, new.memory_id])
    assert text_hits(directory, {"id": old.memory_id})

    assert fast_store.forget(old.memory_id) == 1
    assert text_hits(directory, {"id": old.memory_id, "content": "encoding='gbk'"}) == {}
    assert fast_store.get(new.memory_id).supersedes is None
    assert journal.get("run-1").produced == [new.memory_id]
    assert fast_store.history(new.memory_id) == [fast_store.get(new.memory_id)]
    # Reads made Chroma re-persist small HNSW indexes from this process's memory (unused slots are
    # uninitialised heap, which still holds the forgotten text): close() zeroes those slots again.
    fast_store.close()
    assert text_hits(directory, {"id": old.memory_id, "content": "encoding='gbk'"}) == {}


def test_forget_of_unknown_ids_changes_nothing(hash_store: MemoryStore) -> None:
    unit = hash_store.add(_secret_unit()).unit
    assert hash_store.forget("mem_does_not_exist") == 0
    assert hash_store.get(unit.memory_id) == unit


def test_forget_cleans_references_run_records_and_comments_on_every_backend(hash_store: MemoryStore) -> None:
    from langchain_hindsight.journal import RunJournal
    from langchain_hindsight.runs import RunRecord

    store = hash_store
    old = store.add(MemoryUnit(task_type="report", content="周报按自然周统计。")).unit
    feedback = store.add(
        MemoryUnit(
            task_type="report",
            content="用户纠正：SECRET-COMMENT 周报只统计工作日",
            source="user_feedback",
            run_id="run-1",
            supersedes=old.memory_id,
            merged_from=[old.memory_id],
        )
    ).unit
    journal = RunJournal(store)
    journal.record(RunRecord(run_id="run-1", namespace=store.namespace, produced=[old.memory_id, feedback.memory_id]))
    journal.add_feedback("run-1", text="不对，SECRET-COMMENT 周报只统计工作日", success=False)
    journal.add_feedback("run-1", text="谢谢", success=True)

    assert store.forget(old.memory_id) == 1
    kept = store.get(feedback.memory_id)
    assert kept.supersedes is None
    assert kept.merged_from == []
    assert journal.get("run-1").produced == [feedback.memory_id]
    assert journal.get("run-1").feedback[0].text.startswith("不对")  # not made into the forgotten unit

    assert store.forget(feedback.memory_id) == 1
    record = journal.get("run-1")
    assert record.produced == []
    assert [f.text for f in record.feedback] == ["", "谢谢"]  # the comment that became the unit is erased
    assert store.lexical_search("SECRET-COMMENT") == []


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "namespace"),
        ({"memory_id": 42}, "ids"),
        ({"memory_id": ["ok", ""]}, "ids"),
        ({"memory_id": "x", "scrub": "yes"}, "scrub"),
        ({"memory_id": "x", "namespace": ""}, "namespace"),
    ],
)
def test_forget_rejects_bad_arguments(hash_store: MemoryStore, kwargs: dict[str, object], match: str) -> None:
    unit = hash_store.add(_secret_unit()).unit
    with pytest.raises(ConfigurationError, match=match):
        hash_store.forget(**kwargs)  # type: ignore[arg-type]
    assert hash_store.get(unit.memory_id) == unit


def test_scrub_needs_an_owned_directory(tmp_path: Path) -> None:
    import chromadb
    from chromadb.config import Settings

    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    store = MemoryStore(client=client, embeddings=HashEmbeddings(), namespace="scrub-needs-dir")
    unit = store.add(_secret_unit()).unit
    with pytest.raises(ConfigurationError, match="scrub"):
        store.scrub()
    with pytest.raises(ConfigurationError, match="scrub"):
        store.forget(unit.memory_id, scrub=True)
    assert store.forget(unit.memory_id) == 1  # logical delete still works
    store.forget(namespace="scrub-needs-dir")


def test_forget_through_a_passed_client_leaves_no_text_in_any_derived_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store on a passed client (as on a server) has no directory of its own: it writes no derived file
    anywhere (no lexical or recall snapshot, no summary), so after a forget no such file can hold the text.
    Its ``scrub()`` is refused with a typed error (the data files are the client's, not the store's)."""
    import chromadb
    from chromadb.config import Settings

    from langchain_hindsight.store._directory import DERIVED

    monkeypatch.chdir(tmp_path)
    data = tmp_path / "chroma"
    client = chromadb.PersistentClient(path=str(data), settings=Settings(anonymized_telemetry=False))
    emb = HashEmbeddings()
    store = MemoryStore(client=client, embeddings=emb, namespace="shared")
    store.add_many(_filler(20), dedupe=False)
    secret = store.add(_secret_unit()).unit
    store.hybrid_search(secret.content, emb.embed_query(secret.content), k=3)  # the in-memory replicas exist
    assert store.lexical_search("SECRET alpha CONTENT", k=1)[0][0] == secret.memory_id
    assert "content" in text_hits(tmp_path, _needles(secret))  # the scanner sees it (in the client's data)
    assert store.forget(secret.memory_id) == 1
    with pytest.raises(ConfigurationError, match="scrub"):
        store.scrub()
    store.close()
    derived = [p for p in tmp_path.rglob("*") if p.name in DERIVED or p.suffix == ".npz"]
    assert derived == []
    hits = text_hits(tmp_path, _needles(secret))  # whatever is left is in the client's own data files only
    assert all(data in (tmp_path / rel).parents for files in hits.values() for rel in files), hits


_KILL_IN_SCRUB = """
import os, signal, sys
import chromadb.api.models.Collection as C
from langchain_hindsight import MemoryStore, MemoryUnit
sys.path.insert(0, {root!r})
from tests.fakes import HashEmbeddings
from tests.integration_tests.store.test_forget import _filler, _secret_unit

store = MemoryStore({path!r}, embeddings=HashEmbeddings())
store.add_many(_filler(30), dedupe=False)
secret = store.add(_secret_unit()).unit
print(secret.memory_id, flush=True)
point = {point!r}
if point == "rename":  # the old collection is dropped, the complete copy not yet renamed
    C.Collection.modify = lambda self, **kw: os.kill(os.getpid(), signal.SIGKILL)
else:  # everything rebuilt, files not yet erased
    import langchain_hindsight.store.backend.chroma as S
    S._erase_files = lambda directory: os.kill(os.getpid(), signal.SIGKILL)
store.forget(secret.memory_id)
print("NOT KILLED", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("point", ["rename", "erase"])
def test_a_scrub_killed_midway_is_finished_on_reopen(tmp_path: Path, point: str) -> None:
    directory = tmp_path / "db"
    script = _KILL_IN_SCRUB.format(root=str(REPO_ROOT), path=str(directory), point=point)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert "NOT KILLED" not in proc.stdout
    secret_id = proc.stdout.split()[0]
    assert (directory / Intent.SCRUB.value).exists()
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        assert store.count() == 30
        with pytest.raises(MemoryNotFoundError):
            store.get(secret_id)
        assert not (directory / Intent.SCRUB.value).exists()
        assert store.add(_secret_unit("after")).unit.content.startswith("SECRET-after")
    assert text_hits(directory, {"content": "SECRET-alpha-CONTENT", "id": secret_id}) == {}


# ----------------------------------------------------------------------------- every copy, every collection
@pytest.mark.parametrize("history", ["archived", "archived-then-restored", "restored-twice"])
def test_forget_erases_the_copies_a_unit_left_in_collections_it_moved_out_of(
    fast_store: MemoryStore, history: str
) -> None:
    directory = fast_store.persist_directory
    assert directory is not None
    fast_store.add_many(_filler(20), dedupe=False)
    secret = fast_store.add(_secret_unit()).unit
    moves = {"archived": 1, "archived-then-restored": 2, "restored-twice": 4}[history]
    for n in range(moves):
        (fast_store.archive if n % 2 == 0 else fast_store.restore)([secret.memory_id])
    assert set(text_hits(directory, _needles(secret))) == set(_needles(secret))  # the scanner sees it
    assert fast_store.forget(secret.memory_id) == 1
    assert text_hits(directory, _needles(secret)) == {}
    fast_store.close()
    assert text_hits(directory, _needles(secret)) == {}


def test_forget_erases_the_feedback_comment_a_unit_was_made_from(tmp_path: Path) -> None:
    from langchain_hindsight import Hindsight

    comment = "不对，SECRET-COMMENT 周报只统计本周一到周日的数据"
    with Hindsight(tmp_path / "db", embeddings=HashEmbeddings()) as hs:
        hs.journal.start("run-1", task="生成周报")
        hs.journal.finish("run-1", outcome="failure")
        result = hs.feedback("run-1", success=False, comment=comment)
        (created,) = result.created
        assert created.source == "user_feedback"
        assert text_hits(tmp_path / "db", {"comment": "SECRET-COMMENT"})  # in the unit and the journal
        assert hs.store.forget(created.memory_id) == 1
        record = hs.journal.get("run-1")
        assert [f.text for f in record.feedback] == [""]  # the verdict stays, the words are gone
        assert record.feedback[0].rejected
        assert created.memory_id not in record.produced
        assert text_hits(tmp_path / "db", {"comment": "SECRET-COMMENT", "id": created.memory_id}) == {}
    assert text_hits(tmp_path / "db", {"comment": "SECRET-COMMENT", "id": created.memory_id}) == {}


_KILL_IN_FORGET = """
import os, signal, sys
import chromadb.api.models.Collection as C
from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.journal import RunJournal
sys.path.insert(0, {root!r})
from tests.fakes import HashEmbeddings
from tests.integration_tests.store.test_forget import _filler, _secret_unit

def die(*args, **kwargs):
    print("DYING", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

store = MemoryStore({path!r}, embeddings=HashEmbeddings())
store.add_many(_filler(30), dedupe=False)
secret = store.add(_secret_unit()).unit
store.archive([secret.memory_id]); store.restore([secret.memory_id])
RunJournal(store).start("run-1", task="t")
RunJournal(store).add_produced("run-1", [secret.memory_id])
print(secret.memory_id, flush=True)
point = {point!r}
if point == "first-delete":  # the intent is durable, nothing deleted yet
    C.Collection.delete = die
elif point == "journal-scrub":  # the unit is deleted, the journal still names it
    C.Collection.upsert = die
elif point == "before-scrub":  # every Chroma delete done, no scrub marker yet: the bytes are still on disk
    import langchain_hindsight.store.forget as F
    F.scrub_collections = die
elif point == "rename":  # a rebuild half done
    C.Collection.modify = die
else:  # everything rebuilt, files not yet erased
    import langchain_hindsight.store.backend.chroma as S
    S._erase_files = die
store.forget(secret.memory_id)
print("NOT KILLED", flush=True)
"""
FORGET_KILL_POINTS = ["first-delete", "journal-scrub", "before-scrub", "rename", "erase"]


@pytest.mark.slow
@pytest.mark.parametrize("point", FORGET_KILL_POINTS)
def test_a_forget_killed_at_any_step_is_finished_on_reopen(tmp_path: Path, point: str) -> None:
    from langchain_hindsight.journal import RunJournal

    directory = tmp_path / "db"
    script = _KILL_IN_FORGET.format(root=str(REPO_ROOT), path=str(directory), point=point)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert "NOT KILLED" not in proc.stdout
    secret_id = proc.stdout.split()[0]
    assert (directory / Intent.FORGET.value).exists()  # the intent was durable before the kill
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        assert store.count() == 30
        with pytest.raises(MemoryNotFoundError):
            store.get(secret_id)
        assert RunJournal(store).get("run-1").produced == []
        assert not (directory / Intent.FORGET.value).exists()
        assert not (directory / Intent.SCRUB.value).exists()
        assert store.add(_secret_unit("after")).unit.content.startswith("SECRET-after")
    assert text_hits(directory, {"content": "SECRET-alpha-CONTENT", "id": secret_id}) == {}
