"""The review console over a 10k-memory store: list a page, run a search (p50/p95, targets 300 / 500 ms).

The store is embedded (Chroma on disk) with the default embedder's identity: the
first ``--real`` memory texts of the ``mixed`` zh/en corpus are embedded for real,
the others get noisy mixes of those vectors (as ``recall_scale.py`` does: embedding
10k texts on 2 shared cores takes minutes); every search query is embedded for
real, with the embedders' query caches off. 60 journalled runs give the pages
something to join. Requests go through Starlette's TestClient (the ASGI app, no
socket), logged in with the access token.

Timed, each after warm-up requests:

* ``list`` — ``GET /memories`` pages 1..n (the namespace's listing cached by the console);
* ``list_filtered`` — ``GET /memories?task_type=…&min_conf=…``;
* ``list_unread`` — the first list when the listing was not read yet (``hindsight ui`` reads it
  ahead, in the background, while the browser opens the URL);
* ``list_after_action`` — the list right after a confirm (the action updates the units it touched);
* ``search`` — ``GET /memories?q=…`` with distinct zh and en queries (the real recall, k=10, no floor);
* ``memory`` — ``GET /memories/{id}`` (labels, confidence line, usage bar, version timeline, runs, feedback);
* ``review`` — ``GET /review`` (the queue; computed once, then kept until an action changes the namespace);
* ``review_after_action`` — the queue right after a confirm from it (recomputed);
* ``runs``, ``run``, ``plots``, ``forget`` — the journal, one run's ``explain``, the plots, the forget page.

Every page is rendered in zh (the console's default) with the session's path prefix.

Writes benchmarks/results/console_latency.json and .md.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/console_latency.py [--size 10000] [--real 1500] [--queries 60]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from _corpora import CORPORA  # noqa: E402
from _stats import summary  # noqa: E402
from recall_scale import TableEmbeddings, default_embedder, synthetic_units, vectors_for  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from langchain_hindsight.journal import RunJournal  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.types import ScoredMemory  # noqa: E402
from langchain_hindsight.ui import Console, create_app  # noqa: E402

TARGETS = {
    "list_p95_ms": 300.0,
    "memory_p95_ms": 300.0,
    "review_p95_ms": 300.0,
    "runs_p95_ms": 300.0,
    "run_p95_ms": 300.0,
    "plots_p95_ms": 300.0,
    "forget_p95_ms": 300.0,
    "search_p95_ms": 500.0,
}
BASE = "http://127.0.0.1:8766"


def timed(client: TestClient, paths: list[str], warm: int = 3) -> list[float]:
    for p in paths[:warm]:
        assert client.get(p).status_code == 200, p
    ms = []
    for p in paths:
        t0 = time.perf_counter()
        r = client.get(p)
        ms.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200, (p, r.status_code, r.text[:300])
    return ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--real", type=int, default=1500, help="memory texts embedded for real")
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    if args.size < 200:  # the pages timed below read the first 200 memories and act on the 100th to 110th
        parser.error(f"--size must be at least 200, not {args.size}")
    real = default_embedder()
    texts, queries = CORPORA["mixed"](args.size, args.queries)
    vecs, _ = vectors_for(texts, real, args.real, seed=args.size)
    emb = TableEmbeddings({t: v.tolist() for t, v in zip(texts, vecs, strict=True)}, real)
    rng = random.Random(args.size)
    result: dict[str, Any] = {"size": args.size, "real_vectors": args.real, "queries": len(queries)}
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(Path(tmp) / "store", embeddings=emb) as store:
        t0 = time.perf_counter()
        for start in range(0, args.size, 5000):
            store.add_many(synthetic_units(texts[start : start + 5000], start, rng), dedupe=False)
        result["build_s"] = round(time.perf_counter() - t0, 1)
        units = store.list_units(limit=200)
        journal = RunJournal(store)
        for i in range(60):
            served = [ScoredMemory(memory=u, score=0.5, similarity=0.4) for u in rng.sample(units, 5)]
            journal.start(f"run-{i}", task=queries[i % len(queries)], served=served)
            journal.finish(f"run-{i}", outcome=rng.choice(["success", "failure", "unknown"]))
        console = Console(store)
        app, gate = create_app(console)
        client = TestClient(app, base_url=BASE)
        opened = client.get(f"/?token={gate.token}", follow_redirects=False)
        assert opened.status_code == 303
        prefix = opened.headers["location"].removesuffix("/memories")
        client.base_url = client.base_url.join(prefix)  # every page lives under the session's /s/<key>
        timings: dict[str, list[float]] = {}
        timings["list"] = timed(client, [f"/memories?page={1 + i % 50}" for i in range(60)])
        timings["list_filtered"] = timed(
            client, [f"/memories?task_type=weekly_report&min_conf=0.{5 + i % 4}&page={1 + i % 5}" for i in range(40)]
        )
        cold = []
        for _ in range(3):
            console.invalidate(store.namespace)  # the first page when the listing was not read ahead
            t0 = time.perf_counter()
            assert client.get("/memories").status_code == 200
            cold.append((time.perf_counter() - t0) * 1000)
        timings["list_unread"] = cold
        session = gate.session(prefix.rsplit("/", 1)[-1], client.cookies[gate.cookie])
        assert session is not None
        csrf = session.csrf
        after = []
        for u in units[100:110]:
            form = {"csrf": csrf, "memory_id": u.memory_id, "next": "/memories"}
            r = client.post("/act/confirm", data=form, follow_redirects=False)
            assert r.status_code == 303, r.text[:300]
            t0 = time.perf_counter()
            assert client.get("/memories").status_code == 200
            after.append((time.perf_counter() - t0) * 1000)
        timings["list_after_action"] = after
        timings["search"] = timed(client, [f"/memories?q={q}" for q in queries], warm=0)
        timings["memory"] = timed(client, [f"/memories/{u.memory_id}" for u in units[:40]])
        timings["review"] = timed(client, ["/review"] * 20)
        again = []
        for u in units[120:125]:
            form = {"csrf": csrf, "memory_id": u.memory_id, "next": "/review"}
            assert client.post("/act/confirm", data=form, follow_redirects=False).status_code == 303
            t0 = time.perf_counter()
            assert client.get("/review").status_code == 200
            again.append((time.perf_counter() - t0) * 1000)
        timings["review_after_action"] = again
        timings["runs"] = timed(client, ["/runs"] * 20)
        timings["run"] = timed(client, [f"/runs/run-{i}" for i in range(40)])
        timings["plots"] = timed(client, ["/plots"] * 10)
        timings["forget"] = timed(client, [f"/memories/{u.memory_id}/forget" for u in units[40:60]])
        console.close()
    result["timings"] = {name: summary(ms) for name, ms in timings.items()}
    result["targets"] = TARGETS
    result["meets"] = {
        key: result["timings"][key.removesuffix("_p95_ms")]["p95_ms"] <= target for key, target in TARGETS.items()
    }
    result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    out = ROOT / "results"
    (out / "console_latency.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    rows = [
        f"| `{name}` | {s['n']} | {s['p50_ms']:.1f} | {s['p95_ms']:.1f} | {TARGETS.get(name + '_p95_ms', '–')} |"
        for name, s in result["timings"].items()
    ]
    md = [
        f"# Console latency at {args.size} memories",
        "",
        f"Embedded store, `mixed` zh/en corpus ({args.real} texts embedded for real, the rest noisy mixes), "
        f"60 journalled runs; Starlette TestClient, logged in (see `benchmarks/console_latency.py`). "
        f"Build {result['build_s']} s. Load average after the run: "
        f"{', '.join(map(str, result['load_average']))} on {os.cpu_count()} CPUs.",
        "",
        "| request | n | p50 ms | p95 ms | target p95 ms |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]
    (out / "console_latency.md").write_text("\n".join(md), encoding="utf-8")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
