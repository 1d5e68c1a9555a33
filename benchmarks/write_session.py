"""A session that only writes: patch the snapshot it does not hold, or drop it and rebuild once later.

An embedded store that closed after a search leaves one snapshot file per namespace (the lexical
index and the recall mirror together). A later session that only writes (``hindsight import``, an MCP
``remember``, a script that adds) holds neither in memory. Two designs, measured in the same run on
the same data:

* ``patch`` — at its first write the session loads the snapshot (vouched for by the clean-close
  stamp), applies its writes to both copies and saves the file again at close, so the next session
  that searches loads it;
* ``drop`` — the session erases the snapshot and holds nothing; the next session that searches
  rebuilds both copies from the backend (every active record read once) and saves them at close.

For each namespace size and each number of units written, the benchmark times (median of
``--runs`` trials, each on a fresh copy of one seeded directory): the write session (open, write,
close), the next session's first hybrid search (open to first answer, and its close), and their sum.
A single write session is followed by one search session; ``--chain`` write sessions in a row show
what repeated write-only sessions cost (each patch session loads and saves the file again).

The ``patch`` arm is the store as shipped; the ``drop`` arm is the same store with the replica's
snapshot load turned off (see :func:`design`): nothing else differs.

Writes benchmarks/results/write_session.json and .md.

Run: .venv/bin/python benchmarks/write_session.py [--sizes 1000,10000] [--writes 1,50] [--runs 5] [--chain 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from _corpus import experiences  # noqa: E402

from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.store.replica.replica import Replica  # noqa: E402
from langchain_hindsight.types import MemoryUnit  # noqa: E402

RESULTS = ROOT / "results"
DIMENSION = 384
"""The default embedder's dimension: the mirror holds vectors of this size."""


class HashEmbeddings(Embeddings):
    """Deterministic unit vectors from a text's hash (the store's cost is measured, not a model's)."""

    def _vector(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(DIMENSION)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


QUERY = "读取 CSV 时 encoding 报错怎么办"


@contextmanager
def design(name: str) -> Iterator[None]:
    """Run the store with the ``name`` design for the duration of the block.

    ``patch`` is the store as shipped. ``drop`` makes the replica's snapshot load (``Replica._load``,
    which its first write calls) find nothing, which is exactly the session that holds nothing: the
    write erases the snapshot, the close saves none, and the next search rebuilds from the backend
    (it would find no snapshot to load either way).
    """
    if name == "patch":
        yield
        return
    saved = Replica._load
    Replica._load = lambda self, namespace: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        Replica._load = saved  # type: ignore[method-assign]


def seed(path: Path, size: int, emb: Embeddings) -> None:
    """An embedded store of ``size`` memories that closed after a search (its snapshot saved, stamped)."""
    units = [MemoryUnit(task_type=t, content=c) for t, c in experiences(size)]
    with MemoryStore(path, embeddings=emb) as store:
        for i in range(0, len(units), 5000):
            store.add_many(units[i : i + 5000], dedupe=False)
    with MemoryStore(path, embeddings=emb) as store:
        store.hybrid_search(QUERY, emb.embed_query(QUERY), k=5)
    assert {p.parent.name for p in path.rglob("*.npz")} >= {"mirror"}, "the seed left no snapshot"


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def trial(base: Path, work: Path, name: str, n_writes: int, chain: int, emb: Embeddings, tag: int) -> dict[str, float]:
    """One trial of ``name`` on a fresh copy of ``base``: ``chain`` write sessions, then one search session."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    write_s = 0.0
    with design(name):
        for c in range(chain):
            fresh = [
                MemoryUnit(task_type="data_cleaning", content=f"新经验 {tag}-{c}-{i}: 读取 CSV 前先检查编码 step {i}")
                for i in range(n_writes)
            ]

            def write_session(units: list[MemoryUnit] = fresh) -> None:
                with MemoryStore(work, embeddings=emb) as store:
                    store.add_many(units, dedupe=False)

            write_s += timed(write_session)
        vector = emb.embed_query(QUERY)
        t0 = time.perf_counter()
        store = MemoryStore(work, embeddings=emb)
        hits = store.hybrid_search(QUERY, vector, k=5)
        first_s = time.perf_counter() - t0
        close_s = timed(store.close)
    assert hits[0], "the search found nothing"
    return {"write_s": write_s, "first_search_s": first_s, "search_close_s": close_s}


def median(rows: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(r[key] for r in rows), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="namespace sizes (memories)")
    parser.add_argument("--writes", default="1,50", help="units written by the write session")
    parser.add_argument("--runs", type=int, default=5, help="trials per design (median reported)")
    parser.add_argument("--chain", type=int, default=5, help="write sessions in a row for the chained rows")
    parser.add_argument("--quick", action="store_true", help="1000 only, 1 write, 3 runs, chain 3")
    parser.add_argument("--note", default="", help="a line added to the report (e.g. 'machine shared')")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.writes, args.runs, args.chain = "1000", "1", 3, 3
    sizes = [int(s) for s in args.sizes.split(",")]
    writes = [int(w) for w in args.writes.split(",")]
    emb = HashEmbeddings()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            base = Path(tmp) / f"base-{size}"
            t0 = time.perf_counter()
            seed(base, size, emb)
            print(f"seeded {size} in {time.perf_counter() - t0:.1f} s", flush=True)
            cases = [(n, 1) for n in writes] + ([(writes[0], args.chain)] if args.chain > 1 else [])
            for n_writes, chain in cases:
                measured: dict[str, list[dict[str, float]]] = {"patch": [], "drop": []}
                for run in range(args.runs):  # interleaved, so drift on a shared machine hits both designs
                    for name in ("patch", "drop"):
                        work = Path(tmp) / "work"
                        measured[name].append(trial(base, work, name, n_writes, chain, emb, run))
                for name, trials in measured.items():
                    row = {
                        "size": size,
                        "writes": n_writes,
                        "chain": chain,
                        "design": name,
                        "runs": len(trials),
                        "write_sessions_s": median(trials, "write_s"),
                        "first_search_s": median(trials, "first_search_s"),
                        "search_close_s": median(trials, "search_close_s"),
                    }
                    row["total_s"] = round(
                        statistics.median(t["write_s"] + t["first_search_s"] + t["search_close_s"] for t in trials), 4
                    )
                    rows.append(row)
                    print(row, flush=True)
    for row in rows:
        patch = next(
            r
            for r in rows
            if r["design"] == "patch"
            and (r["size"], r["writes"], r["chain"]) == (row["size"], row["writes"], row["chain"])
        )
        row["total_vs_patch"] = round(row["total_s"] / patch["total_s"], 2)
    out = {
        "machine": platform.platform(),
        "python": platform.python_version(),
        "note": args.note,
        "dimension": DIMENSION,
        "rows": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "write_session.json").write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    lines = [
        "# A session that only writes: patch or drop the snapshots",
        "",
        f"Embedded store, one namespace, {DIMENSION}-d vectors (hash embedder: the store's cost, not a model's);",
        f"median of {args.runs} trials per design, interleaved, each on a fresh copy of one seeded directory;",
        "`total` = the write session(s) + the next session's first hybrid search + its close.",
        *([f"Note: {args.note}"] if args.note else []),
        "",
        "| memories | units written | write sessions | design | write session(s) s | first search s | its close s | total s | vs patch |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']} | {r['writes']} | {r['chain']} | {r['design']} | {r['write_sessions_s']} | "
            f"{r['first_search_s']} | {r['search_close_s']} | {r['total_s']} | {r['total_vs_patch']}× |"
        )
    cases = [r for r in rows if r["design"] == "drop"]
    drop_wins = sum(r["total_vs_patch"] < 1.0 for r in cases)
    lines += [
        "",
        "| verdict (total time, per case) | cases |",
        "|---|---:|",
        f"| patching costs less | {len(cases) - drop_wins} |",
        f"| dropping costs less | {drop_wins} |",
    ]
    out["verdict"] = {"cases": len(cases), "drop_costs_less": drop_wins}
    (RESULTS / "write_session.json").write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    (RESULTS / "write_session.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
