"""Crash safety: a process SIGKILLed in the middle of a write leaves every unit complete or absent.

Two kinds of tests. Deterministic ones kill the writer *exactly* between the steps of a two-step
write (by replacing a Chroma method in the child with one that SIGKILLs the process). Random ones kill
a busy writer at arbitrary moments. After every kill the directory is reopened and checked unit by
unit: document, metadata, vector (found by its own embedding) and lexical index agree, no write is
half done, and the store keeps working.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.writes import Neighbour, WriteDecision
from tests.fakes import REPO_ROOT, HashEmbeddings

ROOT = str(REPO_ROOT)  # first on a child's sys.path: it imports tests.*
LESSON = "When reading a Chinese CSV with pandas, pass encoding='{}' to avoid garbled text."


class PrefixEmbeddings(Embeddings):
    """Texts sharing the part before the first quote get cosine ~0.89: a conflict, not a duplicate."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        base = HashEmbeddings().embed_query(text.split("'")[0])
        noise = HashEmbeddings().embed_query(text)
        v = [b + 0.35 * n for b, n in zip(base, noise, strict=True)]
        norm = sum(x * x for x in v) ** 0.5
        return [x / norm for x in v]


class SupersedeNearest:
    """A write judge that says every similar unit is outdated: the nearest one is superseded."""

    def judge(self, unit: MemoryUnit, neighbours: Sequence[Neighbour]) -> WriteDecision:
        return WriteDecision("update", neighbours[0].unit.memory_id, "test: supersede the nearest")


_PRELUDE = f"""
import os, signal, sys
sys.path.insert(0, {ROOT!r})
import chromadb.api.models.Collection as C
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.integration_tests.store.test_reliability_crash import PrefixEmbeddings, SupersedeNearest

def die_on(method, nth=1):
    original = getattr(C.Collection, method)
    calls = []
    def wrapper(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == nth:
            print("DYING", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, *args, **kwargs)
    setattr(C.Collection, method, wrapper)
"""


def _run_child(body: str) -> str:
    script = _PRELUDE + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9, f"child was not killed (rc={proc.returncode}):\n{proc.stderr[-3000:]}"
    assert "DYING" in proc.stdout
    return proc.stdout


def check_consistent(store: MemoryStore, embedder: HashEmbeddings | None = None) -> list[MemoryUnit]:
    """Every unit is complete and agrees across document, metadata, vector and lexical index."""
    units = store.list_units()
    ids = [u.memory_id for u in units]
    assert len(ids) == len(set(ids)), "a unit is both in memories and in the archive"
    by_id = {u.memory_id: u for u in units}
    for ns in {u.namespace for u in units}:
        for role in ("memories", "archive"):
            col = store.collection(ns, role)
            if col is None:
                continue
            rows = col.get(include=["metadatas", "embeddings"])
            assert all(m.get("pending", "") == "" for m in rows["metadatas"]), "an interrupted write was not finished"
            assert all(e is not None and len(e) > 0 for e in rows["embeddings"]), "a record has no vector"
    for unit in units:
        if unit.status == "superseded":
            successors = [u for u in units if u.supersedes == unit.memory_id]
            assert successors, f"{unit.memory_id} is superseded by nothing"
        if unit.supersedes and unit.supersedes in by_id and unit.status == "active":
            assert by_id[unit.supersedes].status != "active", "partial supersede: the old unit is still active"
        if unit.status == "active":
            lexical = {i for i, _ in store.lexical_search(unit.content, k=len(units) + 1, namespace=unit.namespace)}
            assert unit.memory_id in lexical, "an active unit is missing from the lexical index"
            if embedder is not None:
                hits = store.search_by_vector(embedder.embed_query(unit.content), k=1, namespace=unit.namespace)
                assert hits, "an active unit's vector is not searchable"
                assert hits[0][0].memory_id == unit.memory_id, "an active unit's vector is not searchable"
                assert hits[0][1] == pytest.approx(1.0, abs=1e-4)
    return units


# ---------------------------------------------------------------- deterministic kill points


@pytest.mark.slow
@pytest.mark.parametrize("nth", [1, 2], ids=["before-demotion", "before-clearing-the-mark"])
def test_supersede_killed_between_steps_is_completed_once(tmp_path: Path, nth: int) -> None:
    directory = tmp_path / "db"
    out = _run_child(
        f"""
        store = MemoryStore({str(directory)!r}, embeddings=PrefixEmbeddings(), judge=SupersedeNearest())
        old = store.add(MemoryUnit(task_type="data_cleaning", content={LESSON.format("gbk")!r}, confidence=0.8))
        print("OLD", old.memory_id, flush=True)
        die_on("update", {nth})
        store.add(MemoryUnit(task_type="data_cleaning", content={LESSON.format("utf-8-sig")!r}))
        """
    )
    old_id = out.split("OLD ")[1].split()[0]
    with MemoryStore(directory, embeddings=PrefixEmbeddings()) as store:
        units = check_consistent(store)
        assert len(units) == 2
        old = store.get(old_id)
        (new,) = [u for u in units if u.memory_id != old_id]
        assert new.supersedes == old_id
        assert new.status == "active"
        assert old.status == "superseded"
        assert old.confidence == pytest.approx(0.4)  # demoted exactly once, not twice
        assert [u.memory_id for u, _, _ in store.search("Chinese CSV encoding", k=5)] == [new.memory_id]
        assert [u.memory_id for u in store.history(old_id)] == [new.memory_id, old_id]
    with MemoryStore(directory, embeddings=PrefixEmbeddings()) as store:  # repair is idempotent
        assert store.get(old_id).confidence == pytest.approx(0.4)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("operation", "method"),
    [("archive", "delete"), ("archive", "update"), ("restore", "delete"), ("restore", "update")],
)
def test_archive_and_restore_killed_between_steps_end_in_one_place(tmp_path: Path, operation: str, method: str) -> None:
    directory = tmp_path / "db"
    body = f"""
        store = MemoryStore({str(directory)!r}, embeddings=HashEmbeddings())
        unit = store.add(MemoryUnit(content="Move me between memories and the archive"))
        keep = store.add(MemoryUnit(content="An unrelated memory that stays put"))
        print("UNIT", unit.memory_id, flush=True)
        if {operation!r} == "restore":
            store.archive([unit.memory_id])
        die_on({method!r})
        store.{operation}([unit.memory_id])
        """
    out = _run_child("from tests.fakes import HashEmbeddings\n" + textwrap.dedent(body))
    unit_id = out.split("UNIT ")[1].split()[0]
    expected = "archived" if operation == "archive" else "active"
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        units = check_consistent(store, HashEmbeddings())
        assert len(units) == 2
        assert store.get(unit_id).status == expected  # the move completed (its copy was durable)
        found = [u.memory_id for u, _, _ in store.search("Move me between memories and the archive", k=2)]
        assert (unit_id in found) == (expected == "active")


@pytest.mark.slow
def test_a_user_restored_superseded_unit_stays_restored_after_reopen(tmp_path: Path) -> None:
    """The repair touches only marked writes (the first version re-demoted every superseded target)."""
    directory = tmp_path / "db"
    with MemoryStore(directory, embeddings=PrefixEmbeddings(), judge=SupersedeNearest()) as store:
        old = store.add(MemoryUnit(task_type="data_cleaning", content=LESSON.format("gbk"))).unit
        store.add(MemoryUnit(task_type="data_cleaning", content=LESSON.format("utf-8-sig")))
        assert store.get(old.memory_id).status == "superseded"
        store.update(old.memory_id, status="active")  # the user decides both apply
    with MemoryStore(directory, embeddings=PrefixEmbeddings()) as store:
        assert store.get(old.memory_id).status == "active"


# ---------------------------------------------------------------- random kill points

_BUSY = """
import sys, random
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import HashEmbeddings
rng = random.Random({seed})
store = MemoryStore({path!r}, embeddings=HashEmbeddings())
print("READY", flush=True)
batch = 0
while True:
    batch += 1
    units = [MemoryUnit(task_type="general", content=f"seed {seed} batch {{batch}} unit {{i}}") for i in range(150)]
    stored = store.add_many(units)
    ids = [u.memory_id for u in rng.sample(stored, 40)]
    store.record_feedback(ids, success=rng.random() < 0.5)
    store.archive(ids[:5])
    store.restore(ids[:2])
"""


@pytest.mark.slow
def test_random_sigkills_during_writes_leave_complete_units(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    rng = random.Random(20261129)
    embedder = HashEmbeddings()
    previous = 0
    for seed in range(3):
        script = _BUSY.format(root=ROOT, seed=seed, path=str(directory))
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY"
        time.sleep(rng.uniform(0.5, 2.5))
        proc.kill()  # SIGKILL
        assert proc.wait(timeout=60) == -9
        with MemoryStore(directory, embeddings=embedder) as store:
            units = check_consistent(store, embedder)
            assert len(units) >= previous  # nothing that was durable before is lost
            previous = len(units)
            later = store.add(MemoryUnit(content=f"written after crash {seed}")).unit
            assert store.search_by_vector(embedder.embed_query(later.content), k=1)[0][0].memory_id == later.memory_id
            previous += 1


@pytest.mark.slow
def test_feedback_killed_mid_write_is_all_or_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "db"
    body = f"""
        from tests.fakes import HashEmbeddings
        store = MemoryStore({str(directory)!r}, embeddings=HashEmbeddings())
        units = store.add_many([MemoryUnit(content=f"lesson {{i}}", confidence=0.5) for i in range(50)])
        print("IDS", " ".join(u.memory_id for u in units), flush=True)
        die_on("update")
        store.record_feedback([u.memory_id for u in units], success=True)
        """
    out = _run_child(body)
    ids = out.split("IDS ")[1].split("\n")[0].split()
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        units = check_consistent(store, HashEmbeddings())
        assert {u.memory_id for u in units} == set(ids)
        states = {(u.access_count, round(u.score_confidence, 6)) for u in units}
        assert states in ({(0, 0.5)}, {(1, 0.55)})  # the batch landed whole or not at all
        store.record_feedback(ids, success=True)
        assert {u.access_count for u in store.get_many(ids)} <= {1, 2}


# ---------------------------------------------------------------- import: all or nothing across a kill
IMPORT_KILL_POINTS = [("upsert", 1), ("upsert", 2), ("upsert", 3), ("delete", 1)]


@pytest.mark.slow
@pytest.mark.parametrize(("method", "nth"), IMPORT_KILL_POINTS, ids=[f"{m}-{n}" for m, n in IMPORT_KILL_POINTS])
def test_import_killed_midway_is_rolled_forward_on_reopen(tmp_path: Path, method: str, nth: int) -> None:
    from langchain_hindsight.store._directory import Intent

    directory = tmp_path / "db"
    body = f"""
        from tests.fakes import HashEmbeddings
        from langchain_hindsight.store.transfer import import_units
        store = MemoryStore({str(directory)!r}, embeddings=HashEmbeddings())
        moved = store.add(MemoryUnit(memory_id="mem_moved", content="archived in the file, active in the store")).unit
        units = [MemoryUnit(memory_id=f"mem_{{i}}", content=f"imported lesson {{i}}") for i in range(600)]
        units.append(moved.evolve(status="archived"))
        print("START", flush=True)
        die_on({method!r}, {nth})
        import_units(store, units, replace=True)
        """
    _run_child(body)
    assert (directory / Intent.IMPORT.value).exists()
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        units = check_consistent(store, HashEmbeddings())  # no id in both memories and archive
        assert len(units) == 601
        assert store.get("mem_moved").status == "archived"
        assert not (directory / Intent.IMPORT.value).exists()


_BUSY_IMPORT_FORGET = """
import sys, random
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.store.transfer import import_units
from tests.fakes import HashEmbeddings
rng = random.Random({seed})
store = MemoryStore({path!r}, embeddings=HashEmbeddings())
print("READY", flush=True)
batch = 0
while True:
    batch += 1
    tag = f"s{seed}b{{batch}}"
    units = [MemoryUnit(memory_id=f"mem_{{tag}}_{{i}}", content=f"BATCH-{{tag}}-UNIT-{{i}} lesson") for i in range(120)]
    import_units(store, units)
    print("IMPORTED", tag, flush=True)
    victims = rng.sample([u.memory_id for u in units], 2)
    store.forget(victims)
    print("FORGOT", " ".join(victims), flush=True)
"""


@pytest.mark.slow
def test_random_sigkills_during_import_and_forget_leave_whole_batches_and_no_forgotten_text(tmp_path: Path) -> None:
    from tests.bytescan import text_hits

    directory = tmp_path / "db"
    rng = random.Random(20261201)
    imported_batches = 0
    for seed in range(3):
        script = _BUSY_IMPORT_FORGET.format(root=ROOT, seed=seed, path=str(directory))
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "READY"
        time.sleep(rng.uniform(1.0, 4.0))
        proc.kill()  # SIGKILL
        assert proc.wait(timeout=60) == -9
        lines = proc.stdout.read().splitlines()
        forgotten = [i for line in lines if line.startswith("FORGOT ") for i in line.split()[1:]]
        imported_batches += sum(line.startswith("IMPORTED ") for line in lines)
        with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
            units = check_consistent(store, HashEmbeddings())
            ids = {u.memory_id for u in units}
            assert not ids & set(forgotten)
            batches: dict[str, int] = {}
            for i in ids:
                tag = i.split("_")[1]
                batches[tag] = batches.get(tag, 0) + 1
            # every batch is whole (120), or whole minus the units forgotten from it (at most 2)
            assert all(n >= 118 for n in batches.values()), batches
        needles = {i: f"BATCH-{i.split('_')[1]}-UNIT-{i.split('_')[2]} " for i in forgotten}
        assert text_hits(directory, needles) == {}
    assert imported_batches > 0  # the kills landed in a busy writer, not before it started


@pytest.mark.slow
@pytest.mark.parametrize("status", ["active", "archived"])
def test_import_killed_between_its_copy_and_its_delete_leaves_the_id_in_one_collection(
    tmp_path: Path, status: str
) -> None:
    """The move out of the other collection is redone even when the new copy already reads as imported.

    At c351316 the roll-forward skipped a unit stored identically, so a unit imported as active
    while the store held it archived stayed in both collections: ``count()`` 2, listed twice.
    """
    directory = tmp_path / "db"
    start = "archived" if status == "active" else "active"
    body = f"""
        from tests.fakes import HashEmbeddings
        from langchain_hindsight.store.transfer import import_units
        store = MemoryStore({str(directory)!r}, embeddings=HashEmbeddings())
        unit = store.add(MemoryUnit(memory_id="mem_x", content="the moved lesson about CSV encodings")).unit
        if {start!r} == "archived":
            unit = store.archive(["mem_x"])[0]
        print("START", flush=True)
        die_on("delete", 1)  # the copy is written, its removal from the other collection is not
        import_units(store, [unit.evolve(status={status!r})], replace=True)
        """
    _run_child(body)
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        units = check_consistent(store, HashEmbeddings())
        assert [u.memory_id for u in units] == ["mem_x"]
        assert store.get("mem_x").status == status
        assert store.count() == 1
