"""Red-team counts for the docs: generated poisoning attacks per channel, and what got through.

Delivers every attack of ``tests/redteam.py`` (the first round's 26 payloads and this round's 183
payload families × 16 disguises, 135 attacks through each of twelve channels: 1,620) to a fresh
embedded store on the real offline embedder, recalls, renders and judges, and writes
``benchmarks/results/redteam.json``. ``docs/build_readme.py`` renders it into ``docs/storage.md``
against ``redteam_baseline.json`` (the same harness against the main the round started from:
``--label "main @ <sha>" --output benchmarks/results/redteam_baseline.json`` run on that tree). The
same harness runs in the tests (``tests/unit_tests/test_redteam.py``), which assert the goals: 0
structure changes and 0 untrusted units shown as trusted.

Run: ``.venv/bin/python benchmarks/redteam.py [--output PATH] [--label TEXT] [--no-overflow-claim]``
(``--no-overflow-claim`` replaces the ``access_count=2**63`` claims by ``10**9``, to measure code that
predates the bound, where one such unit makes every later read of the namespace fail).
"""

from __future__ import annotations

import argparse
import json
import logging
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_hindsight import MemoryStore
from langchain_hindsight.embeddings.local import LocalEmbeddings
from tests import redteam

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=RESULTS / "redteam.json")
    parser.add_argument("--label", default="this branch")
    parser.add_argument("--no-overflow-claim", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # every attack logs a warning by design
    attacks = redteam.generate()
    if args.no_overflow_claim:
        redteam.ACCESS_CLAIMS[-1] = 10**9
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(Path(tmp) / "db", embeddings=LocalEmbeddings()) as store:
        outcome = redteam.run(store, attacks)
    result = {
        "meta": {
            "label": args.label,
            "python": platform.python_version(),
            "seconds": round(time.perf_counter() - start, 1),
            "overflow_claim": not args.no_overflow_claim,
        },
        **redteam.summary(outcome),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, dict | list)}))


if __name__ == "__main__":
    main()
