"""``add_many``'s cost beyond embedding, on a shared machine: wall, CPU of every thread, CPU of the calling thread.

Issue 34's target (``add_many`` of 300 new units within 1.3x of embedding the same texts alone,
``postgres_scale.py``) is a wall-clock ratio, which a loaded machine swamps (the same code measured
0.9x-2.6x at a load average of 15). This script adds two clocks to it, for the embedded Chroma store:
the CPU time of the whole process (every thread: the total work) and of the calling thread (what
``add_many`` does in line, beside the embedder's own threads: on an idle machine with a free core, the
work that lengthens the call). Each rep embeds 300 texts alone, then ``add_many`` s the same texts (dedupe
on) into a fresh store, with the same texts as ``postgres_scale.py``'s comparison.

With ``--baseline DIR`` (a checkout of another commit, e.g. ``git worktree add /tmp/base main``) the
measurement runs in turn in a process importing that checkout and one importing this one, ``--rounds``
times, so both see the same machine load; the table shows the medians of each.

On a loaded machine run it at a high priority (``nice -n -20``, as root) so the wall clock means
something; the niceness is in the table's header.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/add_many_overhead.py [--reps 3] [--rounds 3]
     [--baseline /tmp/base] [--out add_many_overhead]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _trees import MACHINE, measure_in, save
from _trees import arms as checkouts

ROOT = Path(__file__).resolve().parent


def measure(reps: int, n: int, tree: str | None = None) -> list[dict[str, Any]]:
    """``reps`` pairs (embedding alone, then ``add_many``), each clock's ratio and the seconds beyond embedding.

    ``tree``: the checkout whose package (and benchmark helpers) to import; this one when ``None``.
    """
    sys.path.insert(0, str(Path(tree) / "benchmarks" if tree else ROOT))
    from _corpus import experiences
    from recall_scale import default_embedder  # puts its checkout first on sys.path

    import langchain_hindsight
    from langchain_hindsight import MemoryStore, MemoryUnit
    from langchain_hindsight._safety import looks_like_instruction

    real = default_embedder()
    real.embed_documents(["warm-up: the embedder loads its model at its first call"])
    looks_like_instruction("warm-up: the screen compiles its patterns at its first call")

    def clocks() -> tuple[float, float, float]:
        return time.perf_counter(), time.process_time(), time.thread_time()

    rows = []
    for rep in range(reps):
        lessons = experiences(n, seed=100 + rep)
        start = clocks()
        real.embed_documents([text for _, text in lessons])
        embed = [b - a for a, b in zip(start, clocks(), strict=True)]
        with tempfile.TemporaryDirectory() as tmp:
            store = MemoryStore(Path(tmp) / "store", embeddings=real)
            store.count()  # opened before the clock
            units = [MemoryUnit(task_type=t, content=text) for t, text in lessons]
            start = clocks()
            store.add_many(units)
            add = [b - a for a, b in zip(start, clocks(), strict=True)]
            store.close()
        row: dict[str, Any] = {"load_avg": round(os.getloadavg()[0], 1), "package": langchain_hindsight.__file__}
        for i, clock in enumerate(("wall", "cpu", "thread")):
            row[f"{clock}_ratio"] = add[i] / embed[i]
            row[f"{clock}_beyond_s"] = add[i] - embed[i]
        rows.append(row)
    return rows


def run_in(tree: Path, reps: int, n: int) -> list[dict[str, Any]]:
    """:func:`measure` in a process importing the package from ``tree``."""
    return measure_in(tree, "add_many_overhead", f"measure({reps}, {n}, {str(tree)!r})")  # type: ignore[no-any-return]


def markdown(results: dict[str, Any]) -> str:
    arms = results["arms"]
    lines = [
        "# `add_many` beyond embedding: wall and CPU clocks",
        "",
        f"{results['machine']}; {results['units']} new units into a fresh embedded Chroma store (dedupe on) against "
        f"embedding the same texts alone, {results['reps']} reps × {results['rounds']} rounds per arm, the arms in "
        f"turn, at niceness {results.get('nice', 0)}. Medians (ranges below); *thread* is the CPU time of the calling "
        "thread, *CPU* that of every thread of the process.",
        "",
        "| arm | wall ratio | CPU ratio | thread ratio | CPU beyond embedding | thread beyond embedding | load avg |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, rows in arms.items():

        def med(key: str, rows: list[dict[str, Any]] = rows) -> float:
            return statistics.median(r[key] for r in rows)

        loads = [r["load_avg"] for r in rows]
        lines.append(
            f"| {name} | {med('wall_ratio'):.2f}x | {med('cpu_ratio'):.2f}x | {med('thread_ratio'):.2f}x "
            f"| {med('cpu_beyond_s'):.2f} s | {med('thread_beyond_s'):.2f} s | {min(loads):.1f}–{max(loads):.1f} |"
        )
    lines.append("")
    for name, rows in arms.items():
        ranges = ", ".join(
            f"{clock} {min(r[f'{clock}_ratio'] for r in rows):.2f}–{max(r[f'{clock}_ratio'] for r in rows):.2f}x"
            for clock in ("wall", "cpu", "thread")
        )
        lines.append(f"- {name} (n={len(rows)}): {ranges}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=300)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="a checkout to measure in turn with this one")
    parser.add_argument("--out", default="add_many_overhead")
    args = parser.parse_args()

    arms: dict[str, list[dict[str, Any]]] = {}
    for r in range(args.rounds):
        for name, tree in checkouts(args.baseline).items():
            arms.setdefault(name, []).extend(run_in(tree, args.reps, args.units))
            print(f"round {r} {name}: {arms[name][-args.reps :]}", flush=True)
    results = {
        "machine": MACHINE,
        "units": args.units,
        "reps": args.reps,
        "rounds": args.rounds,
        "nice": os.nice(0),
        "arms": arms,
    }
    save(args.out, results, markdown)


if __name__ == "__main__":
    main()
