"""Bounded work: the ``[相关经验]`` block, conflict detection, the claims judge and the screen over growing inputs.

A block of 8 memories, each of ``size`` characters (250 to 4,000, the longest a memory may be), is
rendered cold (the claims cache cleared first) with the conflict note on and off, one pair of
memories of that size is judged by :func:`langchain_hindsight._claims.relation`, and one memory is
screened by :func:`langchain_hindsight._safety.looks_like_instruction` (what a write runs on
untrusted text) and rendered whole by :func:`~langchain_hindsight._safety.render_safe` (as reflection
and the review console render it; a line of the block renders only a head). The texts: a repetitive
Chinese lesson, a repetitive English one (the worst case of issue 35: eight such memories of ~4,000
characters took 45-49 s), varied text (the lessons of the recall benchmark joined), and four runs of
marks (brackets; quote markers; brackets and bars; line breaks between two words). Every time is the
median of ``--repeat`` runs; "per 1k chars" divides the block's time by its input size, so a flat
column is linear growth and a falling one a capped cost.

Run: ``.venv/bin/python benchmarks/render_scaling.py [--repeat N]`` (about a minute); writes
``benchmarks/results/render_scaling.json`` and ``.md`` (generated into ``docs/recall.md``).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_hindsight import MemoryUnit, format_experiences
from langchain_hindsight._claims import claim_of, relation
from langchain_hindsight._safety import looks_like_instruction, render_safe

ROOT = Path(__file__).parent
RESULTS = ROOT / "results"
SIZES = (250, 500, 1000, 2000, 4000)
LINES = 8
TARGET_SECONDS = 0.5
"""Issue 35: a block of 8 memories x 4,000 characters renders in under half a second."""


def _varied() -> str:
    rows = [json.loads(line) for line in (ROOT / "data" / "recall_memories.jsonl").read_text("utf-8").splitlines()]
    return " ".join(r["content"] for r in rows if r.get("content"))


KINDS: dict[str, Callable[[int, int], str]] = {
    "repetitive zh": lambda i, n: (f"周报的数据范围取上周一到周日的自然周，第{i}版用utf-8-sig读取CSV。" * 400)[:n],
    "repetitive en": lambda i, n: (f"Use encoding utf-8-sig when reading the csv file {i}. " * 400)[:n],
    "varied": lambda i, n: (_varied() * 4)[i * 97 : i * 97 + n],
    # Runs of marks (nested code, a quoted reply, a table of bars, blank lines): each was quadratic in the renderer
    # before. Matching a bracketed header from every bracket of a run; removing one quote marker a pass; walking out
    # over the brackets and bars around every one of the matches a text of them is made of; looking for a line's
    # marker across every blank line after it.
    "bracket run": lambda i, n: "(" * n,
    "quote markers": lambda i, n: ("> " * n)[:n],
    "brackets and bars": lambda i, n: ("]|" * n)[:n],
    "line breaks": lambda i, n: (f"第{i}条" + "\n" * n)[: n - 1] + "完",
}


def _median(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        claim_of.cache_clear()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(repeat: int) -> list[dict[str, object]]:
    """One row per kind of text and size."""
    format_experiences([MemoryUnit(content="warm up the confusables table", confidence=0.5)])
    rows: list[dict[str, object]] = []
    for kind, make in KINDS.items():
        for size in SIZES:
            units = [MemoryUnit(content=make(i, size), confidence=0.8) for i in range(LINES)]
            block = _median(lambda units=units: format_experiences(units), repeat)  # type: ignore[misc]
            plain = _median(lambda units=units: format_experiences(units, conflicts=False), repeat)  # type: ignore[misc]
            pair = _median(lambda units=units: relation(units[0].content, units[1].content), repeat)  # type: ignore[misc]
            screen = _median(lambda units=units: looks_like_instruction(units[0].content), repeat)  # type: ignore[misc]
            whole = _median(lambda units=units: render_safe(units[0].content), repeat)  # type: ignore[misc]
            rows.append(
                {
                    "kind": kind,
                    "chars_per_memory": size,
                    "block_seconds": round(block, 4),
                    "no_conflicts_seconds": round(plain, 4),
                    "relation_pair_seconds": round(pair, 4),
                    "screen_seconds": round(screen, 4),
                    "render_whole_seconds": round(whole, 4),
                    "block_ms_per_1k_chars": round(1000 * block / (LINES * size / 1000), 2),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(result: dict[str, object]) -> str:
    """The results page."""
    rows = result["rows"]
    assert isinstance(rows, list)
    out = [
        "# Bounded rendering (benchmarks/render_scaling.py)",
        "",
        f"A block of {LINES} memories of each size, rendered cold (conflict note on, and off), one pair "
        "judged by the claims rule, one memory screened as a write screens untrusted text, and one rendered whole "
        "(as reflection and the review console render it); medians. "
        "*per 1k chars*: the block's time over its input size (flat: linear; falling: capped)."
        f" Target: 8 x 4,000 characters in under {TARGET_SECONDS} s.",
        "",
        "| text | chars per memory | block | block, no conflicts | one pair judged | one memory screened "
        "| one memory rendered whole | block per 1k chars |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r['kind']} | {r['chars_per_memory']} | {r['block_seconds']:.3f} s | "
            f"{r['no_conflicts_seconds']:.3f} s | {1000 * r['relation_pair_seconds']:.1f} ms | "
            f"{1000 * r['screen_seconds']:.1f} ms | {1000 * r['render_whole_seconds']:.1f} ms | "
            f"{r['block_ms_per_1k_chars']:.1f} ms |"
        )
    worst = max(r["block_seconds"] for r in rows if r["chars_per_memory"] == max(SIZES))
    out += ["", f"Slowest block of {LINES} x {max(SIZES)} characters: {worst:.3f} s (target < {TARGET_SECONDS} s)."]
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = measure(args.repeat)
    result = {"meta": {"python": platform.python_version(), "repeat": args.repeat}, "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "render_scaling.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "render_scaling.md").write_text(markdown(result), encoding="utf-8")


if __name__ == "__main__":
    main()
