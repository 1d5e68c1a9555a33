"""Concurrency: many threads on one store, two processes on one directory, two writers on one server."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore, MemoryUnit, StoreLockedError
from langchain_hindsight.embeddings.local import LocalEmbeddings
from tests.fakes import REPO_ROOT, HashEmbeddings
from tests.server import ChromaServer

ROOT = str(REPO_ROOT)  # first on a child's sys.path: it imports tests.*

TOPICS = [
    ("data_cleaning", "Read Chinese CSV files with encoding='utf-8-sig' to avoid garbled text"),
    ("api_call", "Retry the flaky geocoding API three times with exponential backoff"),
    ("weekly_report", "The weekly report covers the last seven days and goes to the team lead"),
    ("database_query", "Add LIMIT to exploratory SQL queries on the events table"),
    ("file_operation", "Write temporary files under the job's scratch directory, never /tmp"),
    ("web_search", "Prefer the official documentation site over forum answers for API details"),
]


# Unrelated lessons: near-identical texts would (correctly) merge and make the count depend on the embedder.
DISTINCT = [
    "Compress images to WebP before uploading them to the CMS",
    "The finance team wants amounts rounded to two decimals in euros",
    "Kubernetes jobs need a memory limit of at least 2 GiB for the ETL step",
    "Translate product names only when the glossary has an entry",
    "Schedule meetings with the Tokyo office before 10:00 CET",
    "Escalate refund requests above 500 dollars to a supervisor",
    "Use the staging database replica for load tests, never production",
    "Git commits in this repo must reference a ticket number",
    "The marketing newsletter goes out on Tuesdays at 9:00",
    "Parse dates in the logistics feed as day-first",
    "PDF invoices from supplier B have the total on page two",
    "Cache the exchange-rate API response for one hour",
]


def test_threads_adding_recalling_and_feeding_back_lose_nothing(make_store: Callable[..., MemoryStore]) -> None:
    store = make_store()
    seeds = [
        r.unit
        for r in store.add_many(
            [MemoryUnit(task_type=t, content=c, confidence=0.3, source="manual") for t, c in TOPICS], dedupe=False
        )
    ]
    ids = [u.memory_id for u in seeds]
    threads, rounds = 6, 2
    errors: list[BaseException] = []
    added: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def worker(n: int) -> None:
        try:
            start.wait()
            for r in range(rounds):
                unit = store.add(MemoryUnit(task_type="general", content=DISTINCT[n * rounds + r])).unit
                with lock:
                    added.append(unit.memory_id)
                store.search(TOPICS[(n + r) % len(TOPICS)][1], k=3)
                store.lexical_search("CSV 编码 retry", k=3)
                store.record_feedback(ids, success=True)  # every thread touches every seed unit
                store.record_feedback([ids[n % len(ids)]], success=None)
        except BaseException as e:  # collected and re-raised in the main thread
            errors.append(e)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(worker, range(threads)))
    assert errors == []
    final = {u.memory_id: u for u in store.get_many(ids)}
    for i, memory_id in enumerate(ids):
        extra = sum(rounds for n in range(threads) if n % len(ids) == i)
        assert final[memory_id].access_count == threads * rounds + extra  # no lost read-modify-write
        assert final[memory_id].confidence == pytest.approx(0.3 + threads * rounds * 0.05)
    assert len(set(added)) == threads * rounds
    assert store.count() == len(TOPICS) + threads * rounds
    assert {u.memory_id for u in store.get_many(added)} == set(added)


def test_a_killed_owner_does_not_leave_the_directory_locked(tmp_path: Path, embeddings: LocalEmbeddings) -> None:
    """The lock is an OS lock: it dies with its process, even on SIGKILL."""
    directory = tmp_path / "db"
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {ROOT!r})
        from langchain_hindsight import MemoryStore, MemoryUnit
        from tests.fakes import HashEmbeddings
        store = MemoryStore({str(directory)!r}, embeddings=HashEmbeddings())
        store.add(MemoryUnit(content="written before the crash"))
        print("OPEN", flush=True)
        sys.stdin.readline()
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        assert owner.stdout.readline().strip() == "OPEN"
        with pytest.raises(StoreLockedError, match="chroma run"):
            MemoryStore(directory, embeddings=HashEmbeddings())
        assert owner.stdin is not None
        owner.stdin.write("die\n")
        owner.stdin.flush()
        assert owner.wait(timeout=60) == -9
    finally:
        if owner.poll() is None:
            owner.kill()
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        assert [u.content for u in store.list_units()] == ["written before the crash"]


# ---------------------------------------------------------------- server mode

_WRITER = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
import chromadb
from chromadb.config import Settings
from langchain_hindsight import MemoryStore, MemoryUnit
from tests.fakes import HashEmbeddings

me, other, n, sync = {me!r}, {other!r}, {n}, Path({sync!r})
client = chromadb.HttpClient(host={host!r}, port={port}, settings=Settings(anonymized_telemetry=False))
store = MemoryStore(client=client, embeddings=HashEmbeddings(), namespace="team")
(sync / f"{{me}}.ready").touch()
while not (sync / f"{{other}}.ready").exists():
    time.sleep(0.02)
mine = []
for i in range(n):
    unit = store.add(MemoryUnit(task_type="general", content=f"{{me}} lesson {{i}}: value {{i * 7919 % 1000}}"))
    mine.append(unit.memory_id)
    if i % 5 == 0:
        store.search(f"{{other}} lesson {{i}}", k=3)
        store.lexical_search(f"{{other}} lesson", k=3)
(sync / f"{{me}}.done").touch()
while not (sync / f"{{other}}.done").exists():
    time.sleep(0.02)
seen_dense = [store.search(f"{{other}} lesson {{i}}: value {{i * 7919 % 1000}}", k=1)[0][0].content for i in range(n)]
seen_lexical = {{i for i, _ in store.lexical_search(f"{{other}} lesson", k=4 * n)}}
from langchain_hindsight import HindsightRetriever
retriever = HindsightRetriever(store=store, k=3)
queries = [f"{{other}} lesson {{i}}: value {{i * 7919 % 1000}}" for i in range(0, n, 3)]
recalled = [retriever.recall(q)[0].memory.content for q in queries]
print(json.dumps({{"mine": mine, "dense": seen_dense, "lexical": sorted(seen_lexical), "recalled": recalled,
                  "count": store.count()}}))
"""


@pytest.mark.slow
@pytest.mark.server
def test_two_writer_processes_on_a_server_lose_nothing_and_see_each_other(
    chroma_server: ChromaServer,
    tmp_path: Path,
) -> None:
    n = 30
    sync = tmp_path / "sync"
    sync.mkdir()
    procs = {}
    for me, other in (("alpha", "beta"), ("beta", "alpha")):
        script = _WRITER.format(
            root=ROOT, me=me, other=other, n=n, sync=str(sync), host=chroma_server.host, port=chroma_server.port
        )
        with (tmp_path / f"{me}.out").open("w") as out, (tmp_path / f"{me}.err").open("w") as err:
            procs[me] = subprocess.Popen([sys.executable, "-c", script], stdout=out, stderr=err, text=True)
    # each writer waits for the other: if one fails, stop the other at once and show why the first failed
    deadline = time.monotonic() + 600
    while any(p.poll() is None for p in procs.values()) and time.monotonic() < deadline:
        if any(p.poll() not in (None, 0) for p in procs.values()):
            break
        time.sleep(0.1)
    for proc in procs.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    errors = {me: (tmp_path / f"{me}.err").read_text()[-3000:] for me in procs}
    assert all(p.returncode == 0 for p in procs.values()), {me: (p.returncode, errors[me]) for me, p in procs.items()}
    results = {me: json.loads((tmp_path / f"{me}.out").read_text().strip().splitlines()[-1]) for me in procs}
    for me, other in (("alpha", "beta"), ("beta", "alpha")):
        assert results[me]["count"] == 2 * n
        assert results[me]["dense"] == [f"{other} lesson {i}: value {i * 7919 % 1000}" for i in range(n)]
        assert set(results[other]["mine"]) <= set(results[me]["lexical"])  # the lexical arm saw them too
        assert results[me]["recalled"] == [f"{other} lesson {i}: value {i * 7919 % 1000}" for i in range(0, n, 3)]
    with MemoryStore(client=chroma_server.client(), embeddings=HashEmbeddings(), namespace="team") as store:
        assert {u.memory_id for u in store.list_units()} == {*results["alpha"]["mine"], *results["beta"]["mine"]}


@pytest.mark.server
def test_server_store_uses_the_same_code_path(chroma_server: ChromaServer) -> None:
    """Supersede, feedback, archive and forget behave on a server as embedded (scrub is refused)."""
    from langchain_hindsight import ConfigurationError

    store = MemoryStore(client=chroma_server.client(), embeddings=HashEmbeddings(), namespace="srv")
    a = store.add(MemoryUnit(content="server lesson one")).unit
    store.record_feedback([a.memory_id], success=True)
    assert store.get(a.memory_id).access_count == 1
    store.archive([a.memory_id])
    assert store.get(a.memory_id).status == "archived"
    with pytest.raises(ConfigurationError, match="scrub"):
        store.scrub()
    assert store.forget(a.memory_id) == 1
    assert store.forget(namespace="srv") == 0
    assert "srv" not in store.namespaces()
    store.close()
