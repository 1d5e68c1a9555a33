"""``reembed`` and ``import`` on PostgreSQL with other processes writing, and with the process killed mid-way.

What must hold: a re-embedding switches every collection to the new embedder at once or not at all
(a SIGKILL at any point leaves every record's vector from one embedder, the one its collection
records), and what another process wrote during it is carried over, never lost; a process still on
the old embedder is refused rather than mixing its vectors in. An import is one transaction: a
killed import leaves nothing of itself, and a unit another process stored meanwhile is a clash.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.embeddings.identity import embedder_identity
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.store._collections import recorded_identity
from langchain_hindsight.store._naming import ROLES, collection_name
from tests.fakes import HashEmbeddings, NgramEmbeddings
from tests.integration_tests.store.test_postgres import _scan
from tests.postgres import PostgresServer
from tests.unit_tests.adapters.test_langgraph_store import (
    test_langmem_memory_tools_in_create_agent_round_trip as langmem_round_trip,
)

pytestmark = pytest.mark.integration

ROOT = str(Path(__file__).resolve().parents[3])
OLD, NEW = HashEmbeddings(), NgramEmbeddings()
"""The store's embedder before and after the re-embedding (two identities, both 384-d, deterministic)."""


def _text(i: int) -> str:
    if i % 2:
        return f"lesson {i}: read the csv report with encoding utf-8-sig before cleaning batch {i}"
    return f"第{i}条经验：清洗销售数据前先检查编码和空值，批次{i}"


def _seed(url: str, namespaces: tuple[str, ...] = ("default", "alice"), n: int = 60) -> dict[str, str]:
    """Units in each namespace on the old embedder, some archived; ``memory id -> text``."""
    texts: dict[str, str] = {}
    with MemoryStore(database_url=url, embeddings=OLD) as store:
        for ns in namespaces:
            units = [MemoryUnit(memory_id=f"m_{ns}_{i}", task_type="data_cleaning", content=_text(i)) for i in range(n)]
            store.add_many(units, namespace=ns, dedupe=False)
            store.archive([f"m_{ns}_{i}" for i in range(0, n, 6)], namespace=ns)
            texts.update({u.memory_id: u.content for u in units})
    return texts


def _vectors_by_model(url: str, namespaces: tuple[str, ...]) -> dict[str, set[str]]:
    """For each vector collection: the embedders its recorded identity and each record's vector agree with."""
    out: dict[str, set[str]] = {}
    with MemoryStore(database_url=url, embeddings=OLD) as store:
        for ns in namespaces:
            for role in ROLES:
                col = store.backend.get_collection(collection_name(ns, role))
                assert col is not None
                rows = col.get(include=["documents", "embeddings"])
                models: set[str] = {str(recorded_identity(col))}
                for doc, vector in zip(rows["documents"], rows["embeddings"], strict=True):
                    for model in (OLD, NEW):
                        if np.allclose(vector, model.embed_documents([doc])[0], atol=1e-5):
                            models.add(str(embedder_identity(model)))
                out[f"{ns}/{role}"] = models
    return out


def _recalls_every_unit(url: str, texts: dict[str, str], embeddings: Embeddings) -> None:
    with MemoryStore(database_url=url, embeddings=embeddings) as store:
        namespaces = {i: i.split("_")[1] if i.startswith("m_") else "default" for i in texts}
        units = [u for ns in set(namespaces.values()) for u in store.get_many(list(texts), namespace=ns)]
        assert {u.memory_id: u.content for u in units} == texts
        for unit in units:
            if unit.status == "active":
                assert store.search(unit.content, k=1, namespace=unit.namespace)[0][0].memory_id == unit.memory_id


_REEMBED_KILLED = """
import os, signal, sys
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore
from tests.fakes import NgramEmbeddings
def progress(stage, done, total):
    if {kill_at!r} == "copy" and stage.endswith("/memories") and done >= 20:
        os.kill(os.getpid(), signal.SIGKILL)  # mid-copy
    if {kill_at!r} == "switch" and stage == "switch" and done == 2:
        os.kill(os.getpid(), signal.SIGKILL)  # inside the switch's transaction, two collections switched
store = MemoryStore(database_url={url!r}, embeddings=NgramEmbeddings())
store.reembed(batch_size=8, progress=progress)
"""


@pytest.mark.parametrize("kill_at", ["copy", "switch"])
def test_a_sigkill_mid_reembed_leaves_one_consistent_model(postgres_url: str, kill_at: str) -> None:
    namespaces = ("alice", "default")
    texts = _seed(postgres_url, namespaces)
    script = _REEMBED_KILLED.format(root=ROOT, url=postgres_url, kill_at=kill_at)
    proc = subprocess.run([sys.executable, "-c", script], timeout=300)
    assert proc.returncode == -signal.SIGKILL
    old = str(embedder_identity(OLD))
    # nothing switched: every collection, and every vector in it, is still the old embedder's
    assert _vectors_by_model(postgres_url, namespaces) == {f"{ns}/{r}": {old} for ns in namespaces for r in ROLES}
    _recalls_every_unit(postgres_url, texts, OLD)
    with MemoryStore(database_url=postgres_url, embeddings=NEW) as store:
        report = store.reembed()
        assert report.units == len(texts)
    new = str(embedder_identity(NEW))
    assert _vectors_by_model(postgres_url, namespaces) == {f"{ns}/{r}": {new} for ns in namespaces for r in ROLES}
    _recalls_every_unit(postgres_url, texts, NEW)


_OLD_WRITER = """
import sys, time
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.errors import EmbedderMismatchError
from tests.fakes import HashEmbeddings
store = MemoryStore(database_url={url!r}, embeddings=HashEmbeddings())
print("READY", flush=True)
i = 0
try:
    while True:
        i += 1
        unit = MemoryUnit(memory_id=f"w_{{i}}", task_type="general", content=f"writer lesson {{i}} 写入第{{i}}条")
        store.add(unit, dedupe=False)
        print("COMMITTED", unit.memory_id, flush=True)
        store.record_feedback([f"m_default_{{6 * (i % 20) + 1}}"], success=True)  # metadata only, an active unit
        print("FEEDBACK", 6 * (i % 20) + 1, flush=True)
        time.sleep(0.01)
except EmbedderMismatchError as e:
    print("REFUSED", e, flush=True)
store.close()
"""


def test_a_writer_process_during_reembed_loses_nothing(postgres_url: str) -> None:
    texts = _seed(postgres_url, ("default",), n=120)
    writer = subprocess.Popen(
        [sys.executable, "-c", _OLD_WRITER.format(root=ROOT, url=postgres_url)], stdout=subprocess.PIPE, text=True
    )
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "READY"
    assert writer.stdout.readline().startswith("COMMITTED")  # it writes before the copy begins

    def slow(stage: str, done: int, total: int) -> None:
        time.sleep(0.05)  # a copy long enough for the writer to write during it

    with MemoryStore(database_url=postgres_url, embeddings=NEW) as store:
        report = store.reembed(batch_size=4, progress=slow)
    out, _ = writer.communicate(timeout=120)
    lines = out.splitlines()
    assert lines[-1].startswith("REFUSED"), lines[-3:]  # its first write after the switch: refused, typed
    committed = ["w_1"] + [line.split()[1] for line in lines if line.startswith("COMMITTED")]
    feedback = [int(line.split()[1]) for line in lines if line.startswith("FEEDBACK")]
    assert report.carried > 0  # writes made during the copy, carried over
    assert len(committed) > report.carried
    written = {f"w_{i}": f"writer lesson {i} 写入第{i}条" for i in range(1, len(committed) + 1)}
    assert committed == list(written)
    new = str(embedder_identity(NEW))
    assert _vectors_by_model(postgres_url, ("default",)) == {"default/memories": {new}, "default/archive": {new}}
    _recalls_every_unit(postgres_url, {**texts, **written}, NEW)
    with MemoryStore(database_url=postgres_url, embeddings=NEW) as store:
        counts = {i: store.get(f"m_default_{i}").access_count for i in range(1, 120, 6)}
    expected = {i: sum(1 for f in feedback if f == i) for i in range(1, 120, 6)}
    assert counts == expected  # every acknowledged feedback kept


def test_a_process_on_the_new_embedder_keeps_working_across_a_reembed_elsewhere(postgres_url: str) -> None:
    texts = _seed(postgres_url, ("default",), n=20)
    with MemoryStore(database_url=postgres_url, embeddings=NEW) as reader:
        assert len(reader.get_many(list(texts))) == len(texts)  # collections cached before the switch
        with MemoryStore(database_url=postgres_url, embeddings=NEW) as other:
            other.reembed()
        reader.record_feedback(["m_default_1"], success=True)  # a plan re-checks its collections at once
        reader.archive(["m_default_2"])
        unit = reader.add(MemoryUnit(memory_id="after", task_type="general", content="written after the switch"))
        assert unit.action == "added"
        assert reader.search("written after the switch", k=1)[0][0].memory_id == "after"
        assert reader.get("m_default_1").access_count == 1
        assert reader.get("m_default_2").status == "archived"


_IMPORTER = """
import os, signal, sys
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import HashEmbeddings
units = [MemoryUnit(memory_id=f"imp_{{i}}", task_type="general", content=f"imported lesson {{i}} 导入{{i}}")
         for i in range(600)]
def progress(stage, done, total):
    print(stage, done, total, flush=True)
    if {kill!r} and stage == "import" and done >= 256:
        os.kill(os.getpid(), signal.SIGKILL)  # one batch written, inside the import's transaction
store = MemoryStore(database_url={url!r}, embeddings=HashEmbeddings())
print("READY", flush=True)
sys.stdin.readline()
report = store.import_units(units, progress=progress)
print("IMPORTED", report.imported, flush=True)
store.close()
"""


def _importer(url: str, *, kill: bool) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", _IMPORTER.format(root=ROOT, url=url, kill=kill)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "READY"
    return child


def test_a_killed_import_leaves_nothing_and_a_rerun_imports_everything(postgres_url: str) -> None:
    texts = _seed(postgres_url, ("default",), n=10)
    child = _importer(postgres_url, kill=True)
    out, _ = child.communicate("go\n", timeout=300)
    assert child.returncode == -signal.SIGKILL
    assert "import 256 600" in out.splitlines()
    with MemoryStore(database_url=postgres_url, embeddings=OLD) as store:
        assert store.get_many([f"imp_{i}" for i in range(600)]) == []  # all or nothing
        assert len(store.list_units()) == len(texts)
    child = _importer(postgres_url, kill=False)
    out, _ = child.communicate("go\n", timeout=300)
    assert out.splitlines()[-1] == "IMPORTED 600"
    with MemoryStore(database_url=postgres_url, embeddings=OLD) as store:
        assert len(store.get_many([f"imp_{i}" for i in range(600)])) == 600


_ADDER = """
import sys
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import HashEmbeddings
store = MemoryStore(database_url={url!r}, embeddings=HashEmbeddings())
print("READY", flush=True)
sys.stdin.readline()
for i in range(150):
    store.add(MemoryUnit(memory_id=f"add_{{i}}", task_type="general", content=f"added lesson {{i}} 新增{{i}}"))
    print("COMMITTED", i, flush=True)
store.close()
"""


def test_an_import_and_a_writer_process_at_once_lose_and_duplicate_nothing(postgres_url: str) -> None:
    texts = _seed(postgres_url, ("default",), n=10)
    adder = subprocess.Popen(
        [sys.executable, "-c", _ADDER.format(root=ROOT, url=postgres_url)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert adder.stdout is not None
    assert adder.stdout.readline().strip() == "READY"
    importer = _importer(postgres_url, kill=False)
    for child in (adder, importer):
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    imported, _ = importer.communicate(timeout=300)
    added, _ = adder.communicate(timeout=300)
    assert imported.splitlines()[-1] == "IMPORTED 600"
    assert sum(line.startswith("COMMITTED") for line in added.splitlines()) == 150
    with MemoryStore(database_url=postgres_url, embeddings=OLD) as store:
        units = store.list_units()
        ids = [u.memory_id for u in units]
        assert len(ids) == len(set(ids)) == len(texts) + 600 + 150
        assert {f"imp_{i}" for i in range(600)} | {f"add_{i}" for i in range(150)} <= set(ids)


def test_a_unit_stored_by_another_process_during_an_import_is_a_clash(postgres_url: str) -> None:
    """The ids are checked again inside the import's transaction: a unit another store wrote after the
    first check, under an id the file also holds, is refused like any clash (nothing imported), not overwritten.
    """
    units = [MemoryUnit(memory_id=f"imp_{i}", task_type="general", content=f"imported lesson {i}") for i in range(40)]
    with (
        MemoryStore(database_url=postgres_url, embeddings=OLD) as importer,
        MemoryStore(database_url=postgres_url, embeddings=OLD) as other,
    ):

        def meanwhile(stage: str, done: int, total: int) -> None:
            if stage == "embed" and not other.get_many(["imp_7"]):  # after the first check, before the write
                other.add(MemoryUnit(memory_id="imp_7", task_type="general", content="written elsewhere"), dedupe=False)

        with pytest.raises(ConfigurationError, match="already stored with other data"):
            importer.import_units(units, progress=meanwhile)
        assert other.get("imp_7").content == "written elsewhere"
        assert importer.get_many([u.memory_id for u in units if u.memory_id != "imp_7"]) == []
        report = importer.import_units(units, replace=True)  # an explicit overwrite
        assert report.imported == 40
        assert other.get("imp_7").content == "imported lesson 7"


# ---------------------------------------------------------------------- gaps the audit found
def test_scrub_erases_what_a_forget_without_scrub_left_in_the_data_directory(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    secret, secret_zh = "quokka5519vault", "机密暗号白虎节堂"

    def checkpoint() -> None:
        with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
            conn.execute("CHECKPOINT")

    with MemoryStore(database_url=postgres_url, embeddings=OLD) as store:
        keep = store.add(MemoryUnit(content="A lesson that stays after the scrub.")).unit
        gone = store.add(MemoryUnit(content=f"The door code is {secret}; 暗号是{secret_zh}")).unit
        assert store.forget(gone.memory_id, scrub=False) == 1
        checkpoint()
        assert store.get_many([gone.memory_id]) == []
        assert _scan(postgres_server.data_dir, secret.encode())  # a DELETE leaves the bytes: the test can fail
        store.scrub()
        checkpoint()
        assert _scan(postgres_server.data_dir, secret.encode()) == []
        assert _scan(postgres_server.data_dir, secret_zh.encode()) == []
        assert store.get(keep.memory_id).content == keep.content


def test_langmem_memory_tools_in_create_agent_on_postgres(postgres_url: str) -> None:
    opened: list[MemoryStore] = []

    def make_memory(**kwargs: object) -> MemoryStore:
        opened.append(MemoryStore(database_url=postgres_url, embeddings=NgramEmbeddings(), **kwargs))  # type: ignore[arg-type]
        return opened[-1]

    try:
        langmem_round_trip(make_memory)  # create -> search -> get -> update (supersede) -> delete (forget)
    finally:
        for store in opened:
            store.close()


_FORGET_KILLED_BEFORE_ERASE = """
import os, signal, sys
sys.path.insert(0, {root!r})
from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.store.backend.postgres import PostgresBackend
from tests.fakes import HashEmbeddings

def die(self, rebuild):
    print("DYING", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

store = MemoryStore(database_url={url!r}, embeddings=HashEmbeddings())
store.add(MemoryUnit(content="A lesson that stays after the forget."))
gone = store.add(MemoryUnit(content="The door code is {secret}; 暗号是{secret_zh}")).unit
PostgresBackend.erase = die  # the DELETE commits, the process dies before VACUUM and the WAL switch
store.forget(gone.memory_id)
"""


def test_a_forget_killed_after_its_delete_is_erased_by_the_next_open(
    postgres_server: PostgresServer, postgres_url: str
) -> None:
    """The erase a forget owes is noted in the database with its DELETE and finished by the next store that opens.

    At c351316 only the embedded store kept such an intent: the text stayed in the table files
    and the WAL of a Postgres database for good.
    """
    secret, secret_zh = "narwhal7731cellar", "机密暗号青龙偃月"
    script = _FORGET_KILLED_BEFORE_ERASE.format(root=ROOT, url=postgres_url, secret=secret, secret_zh=secret_zh)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-3000:]
    assert "DYING" in proc.stdout

    def checkpoint() -> None:
        with psycopg.connect(postgres_server.url(), autocommit=True) as conn:
            conn.execute("CHECKPOINT")

    checkpoint()
    assert _scan(postgres_server.data_dir, secret.encode())  # the DELETE left the bytes: the test can fail
    with MemoryStore(database_url=postgres_url, embeddings=HashEmbeddings()) as store:
        assert [u.content for u in store.list_units()] == ["A lesson that stays after the forget."]
    checkpoint()
    assert _scan(postgres_server.data_dir, secret.encode()) == []
    assert _scan(postgres_server.data_dir, secret_zh.encode()) == []
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # the note is cleared once paid
        assert conn.execute("SELECT count(*) FROM hindsight.meta WHERE key = 'erase_owed'").fetchone() == (0,)
