"""Run every benchmark script in turn (``make bench``); each writes benchmarks/results/<name>.{json,md}.

The machine is shared: run this when it is otherwise idle, and quote p95 as well as p50.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "store_throughput.py",
    "embed_latency.py",
    "recall_latency.py",
    "recall_quality.py",
    "conversational_recall.py",
    "floor_recall.py",
    "capture_overhead.py",
    "maintain.py",
    "forget_scrub.py",
    "outcome_detector.py",
    "use_judge.py",
    "junk_filter.py",
    "supersede_judge.py",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("scripts", nargs="*", metavar="SCRIPT", help=f"run only these (default, in order: {SCRIPTS})")
    args = parser.parse_args()
    if unknown := sorted(set(args.scripts) - set(SCRIPTS)):
        parser.error(f"not a script of this list: {', '.join(unknown)}")
    failed = []
    for name in args.scripts or SCRIPTS:
        start = time.perf_counter()
        print(f"== {name}", flush=True)
        code = subprocess.call([sys.executable, str(HERE / name)], cwd=HERE.parent)
        print(f"== {name}: exit {code} in {time.perf_counter() - start:.0f} s", flush=True)
        if code:
            failed.append(name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
