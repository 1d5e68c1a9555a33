"""Wall time of ``hindsight`` CLI commands on a store of N memories, next to the import floor.

Builds (or reuses, ``--path``) a store of ``--size`` memories of the ``common``
corpus (``benchmarks/_corpora.py``; 5 % of them archived, so both collections
are read), then times fresh processes of

* ``hindsight stats`` in its two cases: it answers from the store's
  per-namespace counts files (vouched for by the clean-close stamp) without
  importing Chroma; else it opens the store and counts (and its store's close
  saves the counts). Each run follows an untimed store session that archives
  and restores one memory (the counts end as they were). Five rows:

  - after a session that recalled, then wrote (an agent's session: recalling
    holds the recall mirror, so its close rewrites the counts files);
  - after a session that only wrote (it holds the mirror too when the mirror's
    snapshot was trusted: loaded at the first write);
  - after a session whose writes the counts files cannot vouch for (here a write
    through the backend after the store closed, which the store cannot see; a
    namespace written without its mirror, an erase or a failed write do the
    same): the store counts;
  - after a write interrupted midway (a record left with a two-step write's
    ``pending`` mark, set through the backend): opening the store repairs it,
    then counts;
  - repeated ``stats`` with nothing written in between, after a session that
    counted (from the counts files);
* ``hindsight show ID``, ``hindsight history ID`` and ``hindsight runs`` (the store holds 1,000
  journalled runs): each opens the store (Chroma imported), reads and prints (with ``--baseline``,
  alternating with the baseline's code like ``search``);
* ``hindsight search "<a corpus query>"`` (the corpus's first query, mostly Chinese: the
  multilingual half of the default embedder alone), and a Latin-script one (both halves load), after
  one untimed search whose store saves the snapshots the next open loads (the last ``stats`` session kept none);
* ``python -c "import chromadb"``: the floor every command that opens a store
  pays before any of our code runs (measured in the same run, same interpreter).

Each is run ``--runs`` times; the report gives the p50 and min of the wall time and the p50 of the
CPU time (user + sys, which a busy machine changes less than the wall time), in seconds. With ``--baseline DIR``
(another source tree of the package, e.g. ``git worktree add /tmp/base main``) each ``hindsight
search``, ``show``, ``history`` and ``runs`` run alternates with the same command run on that tree's code, same store, same
interpreter, and the report adds the baseline's p50 and the ratio (the machine's load changes
both alike). Document
vectors are precomputed as in ``recall_scale.py`` (``--real`` texts embedded for
real, the rest noisy mixes), queries are embedded for real by the CLI itself.

Writes benchmarks/results/cli_latency.json and .md (``--out NAME`` changes the name).

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/cli_latency.py [--size 10000] [--runs 7] [--search-runs 21]
     [--path DIR (kept; reused when it exists)] [--note "machine shared"] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from _corpora import CORPORA  # noqa: E402
from recall_scale import TableEmbeddings, default_embedder, synthetic_units, vectors_for  # noqa: E402

from langchain_hindsight import RunJournal  # noqa: E402
from langchain_hindsight._script import query_script  # noqa: E402
from langchain_hindsight.store.backend import ChromaBackend  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.types import MemoryUnit, ScoredMemory  # noqa: E402

TARGETS = {"stats": 1.0, "search": 2.0, "show": 1.5, "history": 1.5, "runs": 1.5}
"""Issue 34's acceptance at 10k memories (seconds, imports included)."""

RUNS = 1000
"""Journalled runs in the built store (``hindsight runs`` lists the newest 20)."""


def build(path: Path, size: int, n_real: int) -> str:
    """A store of ``size`` common-corpus memories at ``path`` (5 % archived); returns a query of the corpus."""
    texts, queries = CORPORA["common"](size, 20)
    real = default_embedder()
    vecs, _ = vectors_for(texts, real, n_real, seed=size)
    emb = TableEmbeddings({t: v.tolist() for t, v in zip(texts, vecs, strict=True)}, real)
    rng = random.Random(size)
    with MemoryStore(path, embeddings=emb) as store:
        for start in range(0, size, 5000):
            units = store.add_many(
                synthetic_units(texts[start : start + 5000], start, rng),
                dedupe=False,
            )
            store.archive([u.memory_id for u in units[::20]])
        journal = RunJournal(store)
        for i in range(RUNS):  # a served list and an outcome each, as a session journals them
            served = store.search(queries[i % len(queries)], k=5) if i < 20 else []
            journal.start(f"run-{i:04d}", task=queries[i % len(queries)], served=[_scored(u, s) for u, s, _ in served])
            journal.finish(f"run-{i:04d}", outcome="success" if i % 3 else "failure")
        store.lexical_search("warm up", k=1)  # the lexical snapshot is written at close
    return queries[0]


def _scored(unit: MemoryUnit, similarity: float) -> ScoredMemory:
    return ScoredMemory(memory=unit, score=similarity, similarity=similarity)


def a_memory_id(path: Path) -> str:
    """An active memory of the store at ``path`` (untimed; the store's close leaves its files as they were)."""
    with MemoryStore(path, embeddings=None) as store:
        return next(u.memory_id for u in store.iter_units(status="active"))


def touch(path: Path, *, recall: str | None = None, unvouched: bool = False, pending: bool = False) -> None:
    """A tiny write, untimed: archive one active memory and restore it (the counts end as they were).

    ``recall``: first search for it, as an agent recalls before it writes (the
    store's embedder, loaded for real). ``unvouched``: also write through the
    backend after the store closed (a write the store cannot see), so the stamp
    vouches for no derived file. ``pending``: that write leaves the memory marked as
    the first half of a move (a process killed midway): the next open repairs it
    (the memory is in no other collection, so the repair only clears the mark).
    """
    backend = ChromaBackend.embedded(path)
    try:
        with MemoryStore(backend=backend, embeddings=None) as store:
            if recall is not None:
                store.search(recall, k=5)
            memory_id = next(u.memory_id for u in store.iter_units(status="active"))
            store.archive([memory_id])
            store.restore([memory_id])
        if unvouched or pending:
            col = next(c for c in backend.list_collections() if c.metadata.get("hindsight_role") == "memories")
            mark = {"pending": "move"} if pending else {"status": "active"}  # else what it already holds
            col.update(ids=[memory_id], metadatas=[mark])
    finally:
        backend.close()


class Timed(NamedTuple):
    """Fresh processes of one command: each one's wall and CPU seconds, and the last failure's exit code."""

    wall: list[float]
    cpu: list[float]
    code: int

    def then(self, other: Timed) -> Timed:
        """These runs followed by ``other``'s."""
        return Timed(self.wall + other.wall, self.cpu + other.cpu, other.code or self.code)


def timed(argv: list[str], runs: int, before: Callable[[], None] | None = None, *, source: Path = ROOT.parent) -> Timed:
    """``argv`` in ``runs`` fresh processes (``before`` each, untimed): wall and CPU (user + sys) seconds of each.

    ``source``: the source tree whose package the processes import (this one by default); it is also their
    working directory, which ``python -m`` puts first on ``sys.path``, before ``PYTHONPATH``.
    """
    env = dict(os.environ, PYTHONPATH=str(source), HF_HUB_OFFLINE="1")
    result = Timed([], [], 0)
    for _ in range(runs):
        if before is not None:
            before()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(argv, env=env, cwd=source, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
        result = result.then(Timed([wall], [cpu], proc.returncode))
        if proc.returncode:
            print(f"  {argv[3:5]} failed: {proc.stderr.strip()[-300:]}", flush=True)
    return result


def row(sample: Timed, target: float | None = None) -> dict[str, Any]:
    """p50 and min wall seconds, p50 CPU seconds, how many, the exit code, the target if the command has one."""
    return {
        "p50_s": round(statistics.median(sample.wall), 3),
        "min_s": round(min(sample.wall), 3),
        "cpu_p50_s": round(statistics.median(sample.cpu), 3),
        "n": len(sample.wall),
        "exit": sample.code,
        "target_s": target,
    }


def wall(argv: list[str], runs: int, target: float | None = None, baseline: Path | None = None) -> dict[str, Any]:
    """p50 and min wall seconds (and p50 CPU) of ``argv`` in ``runs`` fresh processes.

    ``baseline``: each run alternates with one on that source tree's code (each side first every other
    time); the row adds its p50s and min and the ratios of the p50s (this tree's over the baseline's).
    """
    if baseline is None:
        return row(timed(argv, runs), target)
    ours = theirs = Timed([], [], 0)
    for i in range(runs):  # in turn, each side first every other time
        for side in (0, 1) if i % 2 == 0 else (1, 0):
            if side == 0:
                ours = ours.then(timed(argv, 1))
            else:
                theirs = theirs.then(timed(argv, 1, source=baseline))
    result, base = row(ours, target), row(theirs)
    result.update(baseline_p50_s=base["p50_s"], baseline_min_s=base["min_s"], baseline_cpu_p50_s=base["cpu_p50_s"])
    result["ratio_p50"] = round(result["p50_s"] / base["p50_s"], 3)
    result["cpu_ratio_p50"] = round(result["cpu_p50_s"] / base["cpu_p50_s"], 3)
    return result


def count_once(path: Path) -> None:
    """An untimed session that counts every namespace (its close keeps the counts files), as ``stats`` does."""
    with MemoryStore(path, embeddings=None) as store:
        for namespace in store.namespaces():
            store.statistics(namespace=namespace)


def stats_rows(cli: list[str], path: Path, runs: int, query: str) -> dict[str, dict[str, Any]]:
    """The five ``hindsight stats`` rows (see the module docstring)."""
    argv = [*cli, "stats", "--path", str(path)]
    target = TARGETS["stats"]
    rows: dict[str, dict[str, Any]] = {}
    for name, before, goal in (
        ("each right after a session that recalled, then wrote", lambda: touch(path, recall=query), target),
        ("each right after a session that only wrote", lambda: touch(path), target),
        # neither can be answered without opening the store (and importing Chroma): no target
        ("each right after a write it cannot vouch for: the store counts", lambda: touch(path, unvouched=True), None),
        ("each right after a write interrupted midway: the store counts", lambda: touch(path, pending=True), None),
    ):
        rows[f"hindsight stats ({name})"] = row(timed(argv, runs, before=before), goal)
    count_once(path)
    rows["hindsight stats (repeated: from the summary)"] = row(timed(argv, runs), target)
    return rows


def _describe(source: Path | None) -> str | None:
    """The baseline tree's git commit (short) if it is a checkout, else its path; ``None`` without one."""
    if source is None:
        return None
    proc = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return f"commit {proc.stdout.strip()}" if proc.returncode == 0 else str(source)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--search-runs", type=int, default=0, help="runs of each search row (default --runs; its A/B needs more)"
    )
    parser.add_argument("--real", type=int, default=300, help="texts embedded for real when building")
    parser.add_argument("--path", default="", help="store directory, kept (reused if it already holds a store)")
    parser.add_argument("--note", default="", help="a line added to the report (e.g. 'machine shared')")
    parser.add_argument("--out", default="cli_latency", help="results file name (without extension)")
    parser.add_argument(
        "--baseline", default="", help="another source tree of the package: its `search` runs alternate with this one's"
    )
    args = parser.parse_args()
    tmp = None
    if args.path:
        path = Path(args.path).resolve()  # the commands run in the source tree's directory
    else:
        tmp = tempfile.TemporaryDirectory()
        path = Path(tmp.name) / "store"
    query_file = path.parent / (path.name + ".query")
    if path.exists() and query_file.exists():
        query = query_file.read_text(encoding="utf-8")
    else:
        query = build(path, args.size, args.real)
        query_file.write_text(query, encoding="utf-8")
    latin = next(q for q in CORPORA["common"](args.size, 300)[1] if query_script(q) == "latin")
    baseline = Path(args.baseline).resolve() if args.baseline else None
    search_runs = args.search_runs or args.runs
    if baseline is not None and not (baseline / "langchain_hindsight" / "__init__.py").is_file():
        parser.error(f"--baseline {baseline} holds no langchain_hindsight package")
    py = sys.executable
    cli = [py, "-m", "langchain_hindsight.cli.main"]
    rows = {
        "import chromadb (floor)": wall([py, "-c", "import chromadb"], args.runs),
        **stats_rows(cli, path, args.runs, query),
    }
    memory_id = a_memory_id(path)
    rows |= {
        f"hindsight {name}": wall([*cli, *argv, "--path", str(path)], args.runs, TARGETS[name], baseline)
        for name, argv in (("show", ["show", memory_id]), ("history", ["history", memory_id]), ("runs", ["runs"]))
    }
    # The last stats row's session kept no recall mirror: one search (untimed) opens the store, whose close
    # saves the snapshots, so every timed search below finds what a store an agent searched leaves.
    timed([*cli, "search", query, "--path", str(path)], 1)
    rows |= {
        "hindsight search": wall(
            [*cli, "search", query, "--path", str(path)], search_runs, TARGETS["search"], baseline
        ),
        "hindsight search (a Latin-script query: both halves of the embedder load)": wall(
            [*cli, "search", latin, "--path", str(path)], search_runs, TARGETS["search"], baseline
        ),
    }
    loads = os.getloadavg()
    result = {
        "size": args.size,
        "runs": args.runs,
        "search_runs": search_runs,
        "query": query,
        "latin_query": latin,
        "load_average_after": [round(x, 2) for x in loads],
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "note": args.note,
        "baseline": _describe(baseline),
        "targets_s": TARGETS,
        "rows": rows,
    }
    out = ROOT / "results"
    (out / f"{args.out}.json").write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    lines = [
        f"# CLI wall time at {args.size} memories",
        "",
        f"Fresh processes, {args.runs} runs each"
        + (f" ({search_runs} of each search)" if search_runs != args.runs else "")
        + "; each `stats` run after a write follows its own untimed store "
        f"session (see `benchmarks/cli_latency.py`); wall p50 and min, CPU (user + sys) p50, in seconds. Store: `common` corpus, 5 % archived. "
        f"Load average after the run: {', '.join(f'{x:.2f}' for x in loads)} on {os.cpu_count()} CPUs."
        + (f" {args.note}" if args.note else ""),
        "",
        "| command | runs | p50 s | min s | CPU p50 s | target s |"
        + (" baseline p50 s | baseline min s | baseline CPU p50 s | p50 ratio | CPU ratio |" if baseline else ""),
        "|---|---|---|---|---|---|" + ("---|---|---|---|---|" if baseline else ""),
    ]
    for name, r in rows.items():
        command, _, case = name.partition(" (")
        label = f"`{command}`" + (f" ({case}" if case else "")
        target = "–" if r["target_s"] is None else f"{r['target_s']:g}"
        line = f"| {label} | {r['n']} | {r['p50_s']} | {r['min_s']} | {r['cpu_p50_s']} | {target} |"
        if baseline is not None:
            line += (
                " – | – | – | – | – |"
                if "ratio_p50" not in r
                else f" {r['baseline_p50_s']} | {r['baseline_min_s']} | {r['baseline_cpu_p50_s']} | {r['ratio_p50']}x"
                f" | {r['cpu_ratio_p50']}x |"
            )
        lines.append(line)
    if baseline is not None:
        lines += ["", f"Baseline: {_describe(baseline)}; its runs alternate with this tree's, one for one."]
    (out / f"{args.out}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
