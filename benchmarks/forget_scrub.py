"""Cost of a provable hard delete: ``forget`` with scrub vs a logical (API-only) delete.

Baseline, measured in the same run on the same store: ``forget(id, scrub=False)``,
which is a plain Chroma delete plus reference clean-up (what most memory
libraries call "delete"; it leaves the bytes on disk). The scrubbed ``forget``
additionally rebuilds the collection, VACUUMs ``chroma.sqlite3`` with
``secure_delete`` and removes orphaned HNSW files. Vectors are deterministic
hash vectors (384-d): the cost measured is the store's, not the model's.

Run: ``.venv/bin/python benchmarks/forget_scrub.py [--sizes 1000 5000] [--repeat 7]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from langchain_hindsight import MemoryStore, MemoryUnit

RESULTS = Path(__file__).parent / "results"


class HashEmbeddings(Embeddings):
    """Deterministic unit vectors, one per text."""

    def _vec(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(384)
        return (v / np.linalg.norm(v)).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _measure(store: MemoryStore, ids: list[str], scrub: bool) -> list[float]:
    times = []
    for memory_id in ids:
        t0 = time.perf_counter()
        assert store.forget(memory_id, scrub=scrub) == 1
        times.append((time.perf_counter() - t0) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "db"
            store = MemoryStore(db, embeddings=HashEmbeddings())
            units = [
                r.unit
                for r in store.add_many(
                    [
                        MemoryUnit(task_type="general", content=f"benchmark memory {i} about topic {i % 97}")
                        for i in range(n)
                    ],
                    dedupe=False,
                )
            ]
            victims = [u.memory_id for u in units[: 2 * args.repeat]]
            logical = _measure(store, victims[: args.repeat], scrub=False)
            t0 = time.perf_counter()
            store.scrub()  # erase the logical deletes above before timing scrubbed forgets
            full_scrub_ms = (time.perf_counter() - t0) * 1000
            scrubbed = _measure(store, victims[args.repeat :], scrub=True)
            size_mb = sum(p.stat().st_size for p in db.rglob("*") if p.is_file()) / 1e6
            store.close()
        row = {
            "units": n,
            "forget_logical_ms": {"p50": statistics.median(logical), "p95": _pct(logical, 0.95)},
            "forget_scrubbed_ms": {"p50": statistics.median(scrubbed), "p95": _pct(scrubbed, 0.95)},
            "scrub_all_ms": full_scrub_ms,
            "ratio_p50": statistics.median(scrubbed) / statistics.median(logical),
            "directory_mb": size_mb,
        }
        rows.append(row)
        print(json.dumps(row))
    RESULTS.mkdir(exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "repeat": args.repeat}
    (RESULTS / "forget_scrub.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [
        "# Hard delete cost: scrubbed `forget` vs logical delete",
        "",
        f"{args.repeat} forgets per size, one id each; 384-d hash vectors (store cost only). Baseline: "
        "`forget(id, scrub=False)` (Chroma delete + reference clean-up) on the same store in the same run.",
        "",
        "| units | logical p50 / p95 (ms) | scrubbed p50 / p95 (ms) | ratio (p50) | `scrub()` all (ms) | dir (MB) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lo, sc = r["forget_logical_ms"], r["forget_scrubbed_ms"]
        lines.append(
            f"| {r['units']} | {lo['p50']:.0f} / {lo['p95']:.0f} | {sc['p50']:.0f} / {sc['p95']:.0f} | "
            f"{r['ratio_p50']:.0f}× | {r['scrub_all_ms']:.0f} | {r['directory_mb']:.1f} |"
        )
    lines += [
        "",
        "A scrubbed forget is O(size of the namespace): it copies every live record. Batch deletes with",
        "`forget(ids)` (one scrub for all ids) or `forget(..., scrub=False)` followed by one `scrub()`.",
    ]
    (RESULTS / "forget_scrub.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
