"""The prompt-injection screen alone: CPU time of ``looks_like_instruction`` per 300 texts.

``add_many`` screens every untrusted unit (``writes.py``'s ``suspicious``); this measures that screen
without the store: 300 lessons of ``add_many_overhead.py``'s corpus (legitimate text, the common case) and
300 red-team attacks (``tests/redteam.py``: flagged text, every disguise), each screened once warm per rep,
in process CPU time. With ``--baseline DIR`` (another checkout, e.g. ``git worktree add --detach /tmp/base
main``) a process importing that checkout and one importing this one run in turn, ``--rounds`` times, so
both see the same machine load; the table shows the medians and the ratio.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/screen_cost.py [--reps 5] [--rounds 3] [--baseline DIR]
     [--out screen_cost]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _trees import MACHINE, measure_in, save
from _trees import arms as checkouts

ROOT = Path(__file__).resolve().parent
N = 300


def measure(reps: int) -> dict[str, list[float]]:
    """Per rep and text set, the CPU seconds to screen its 300 texts (after one warm-up pass, which compiles)."""
    sys.path.insert(0, str(ROOT))
    from _corpus import experiences

    from langchain_hindsight._safety import looks_like_instruction
    from tests import redteam

    sets = {
        "lessons": [t for _, t in experiences(N, seed=100)],
        "attacks": [a.text for a in redteam.generate()][::7][:N],
    }
    out: dict[str, list[float]] = {name: [] for name in sets}
    for texts in sets.values():
        for t in texts:
            looks_like_instruction(t)
    for _ in range(reps):
        for name, texts in sets.items():
            start = time.process_time()
            for t in texts:
                looks_like_instruction(t)
            out[name].append(time.process_time() - start)
    return out


def run_in(tree: Path, reps: int) -> dict[str, list[float]]:
    """:func:`measure` in a process importing the package (and ``tests/redteam.py``) from ``tree``."""
    return measure_in(tree, "screen_cost", f"measure({reps})")  # type: ignore[no-any-return]


def markdown(results: dict[str, Any]) -> str:
    arms: dict[str, dict[str, list[float]]] = results["arms"]
    lines = [
        "# The prompt-injection screen alone: CPU per 300 texts",
        "",
        f"{results['machine']}; `looks_like_instruction` on {N} texts per set, warm, process CPU time, "
        f"{results['reps']} reps × {results['rounds']} rounds per arm, the arms in turn. Medians (ranges).",
        "",
        "| arm | lessons (legitimate) | attacks (flagged) |",
        "|---|---:|---:|",
    ]
    for name, sets in arms.items():
        cells = [
            f"{statistics.median(v) * 1000:.0f} ms ({min(v) * 1000:.0f}–{max(v) * 1000:.0f})" for v in sets.values()
        ]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    if len(arms) == 2:
        base, this = arms.values()
        ratios = [statistics.median(this[k]) / statistics.median(base[k]) for k in base]
        lines.append(f"| this tree / baseline | {ratios[0]:.2f}x | {ratios[1]:.2f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="a checkout to measure in turn with this one")
    parser.add_argument("--out", default="screen_cost")
    args = parser.parse_args()

    arms: dict[str, dict[str, list[float]]] = {}
    for r in range(args.rounds):
        for name, tree in checkouts(args.baseline).items():
            for key, values in run_in(tree, args.reps).items():
                arms.setdefault(name, {}).setdefault(key, []).extend(values)
            print(f"round {r} {name}: done", flush=True)
    results = {
        "machine": MACHINE,
        "reps": args.reps,
        "rounds": args.rounds,
        "arms": arms,
    }
    save(args.out, results, markdown)


if __name__ == "__main__":
    main()
