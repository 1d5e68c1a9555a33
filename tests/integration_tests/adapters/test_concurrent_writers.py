"""Two processes put, credit and delete one ``HindsightStore`` key at random: no write fails, one version stays active.

At c351316 14-17 of 40 concurrent puts raised ``MemoryNotFoundError`` (the put superseded the
unit it had read, which the other process had just superseded). Every write now re-reads and
re-plans inside its write plan (``writes.py``, ``plan_supersede``), so two processes interleaving ``put``,
``record_feedback`` on the version they were shown and ``delete`` on one key finish every
operation and leave at most one active version of the key.

Size: ``RACE_OPS`` operations in total (default 120; the acceptance run uses ``RACE_OPS=500``)
and ``RACE_RUNS`` rounds in a row (default 1; 10 for the acceptance run; tests/conftest.py clears
``HINDSIGHT_*`` variables, hence the plain names), on Postgres (two processes with the store open
at once) and on an embedded directory (each operation opens the store, waiting for the other
process's directory lock).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore
from langchain_hindsight.adapters.langgraph_store import key_of
from tests.fakes import REPO_ROOT, HashEmbeddings

OPS = int(os.environ.get("RACE_OPS", "120"))
RUNS = int(os.environ.get("RACE_RUNS", "1"))
KEY = "profile"

_WORKER = textwrap.dedent(
    """
    import json, random, sys, time
    sys.path.insert(0, {root!r})
    from langchain_hindsight import MemoryStore, StoreLockedError
    from langchain_hindsight.adapters.langgraph_store import HindsightStore
    from tests.fakes import HashEmbeddings

    rng = random.Random({seed!r})
    target = {target!r}
    counts = {{"put": 0, "feedback": 0, "delete": 0, "feedback_on_old": 0}}
    errors = []

    def open_store():
        while True:
            try:
                if target.startswith("postgresql"):
                    return MemoryStore(database_url=target, embeddings=HashEmbeddings(), namespace="race")
                return MemoryStore(persist_directory=target, embeddings=HashEmbeddings(), namespace="race")
            except StoreLockedError:
                time.sleep(rng.uniform(0.0, 0.01))

    def one(hs, store, i):
        op = rng.choices(["put", "feedback", "delete"], weights=[5, 3, 2])[0]
        ns = ("users", "u1")
        if op == "put":
            text = f"{me} version {{i}}: the user prefers tea number {{rng.randrange(10**6)}}"
            hs.put(ns, {key!r}, {{"content": text}})
        elif op == "delete":
            hs.delete(ns, {key!r})
        else:
            item = hs.get(ns, {key!r})
            if item is None:
                return op
            shown = [u for u in store.list_units(namespace="users.u1", status="active")]
            time.sleep(rng.uniform(0.0, 0.003))  # the other process may replace what was shown meanwhile
            if shown:
                got = store.record_feedback([shown[0].memory_id], success=rng.random() < 0.7, namespace="users.u1")
                if got and got[0].status != "active":
                    counts["feedback_on_old"] += 1
        return op

    persistent = target.startswith("postgresql")
    store = open_store() if persistent else None
    for i in range({n}):
        if not persistent:
            store = open_store()
        try:
            hs = HindsightStore(store, scrub=False)
            counts[one(hs, store, i)] += 1
        except Exception as e:
            errors.append(f"{{type(e).__name__}}: {{e}}")
        finally:
            if not persistent:
                store.close()
        time.sleep(rng.uniform(0.0, 0.002))
    if persistent:
        store.close()
    print(json.dumps({{"counts": counts, "errors": errors}}))
    """
)


def _race(target: str, run: int) -> list[dict[str, object]]:
    procs = []
    for me in ("alpha", "beta"):
        script = _WORKER.format(root=str(REPO_ROOT), seed=f"{me}-{run}", target=target, me=me, n=OPS // 2, key=KEY)
        procs.append(subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))  # fmt: skip
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=1800)
        assert proc.returncode == 0, stderr[-3000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def _check(store: MemoryStore, results: list[dict[str, object]], label: str) -> None:
    errors = [e for r in results for e in r["errors"]]  # type: ignore[attr-defined]
    assert errors == [], errors[:5]
    done = sum(sum(r["counts"].values()) - r["counts"]["feedback_on_old"] for r in results)  # type: ignore[attr-defined]
    assert done == 2 * (OPS // 2)
    active = [u for u in store.list_units(namespace="users.u1", status="active") if key_of(u) == KEY]
    everything = sorted(store.list_units(namespace="users.u1"), key=lambda u: u.created_at)
    assert len(active) <= 1, [(u.memory_id, u.status, u.supersedes, u.content[:24]) for u in everything]
    counts = [r["counts"] for r in results]
    print(f"{label}: {done} operations, 0 errors, {len(active)} active version(s) of the key; {counts}")


@pytest.mark.integration
@pytest.mark.slow
def test_two_processes_on_one_postgres_key_never_fail(postgres_server: object) -> None:
    for run in range(RUNS):
        url = postgres_server.create_database()  # type: ignore[attr-defined]
        try:
            results = _race(url, run)
            with MemoryStore(database_url=url, embeddings=HashEmbeddings(), namespace="race") as store:
                _check(store, results, f"postgres run {run + 1}/{RUNS}")
        finally:
            postgres_server.drop_database(url)  # type: ignore[attr-defined]


@pytest.mark.integration
@pytest.mark.slow
def test_two_processes_on_one_embedded_key_never_fail(tmp_path: Path) -> None:
    for run in range(RUNS):
        directory = tmp_path / f"run{run}"
        results = _race(str(directory), run)
        with MemoryStore(persist_directory=directory, embeddings=HashEmbeddings(), namespace="race") as store:
            _check(store, results, f"embedded run {run + 1}/{RUNS}")
