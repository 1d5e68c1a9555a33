"""Red-team counts for the docs: generated poisoning attacks per channel, and what got through.

Delivers every attack of ``tests/redteam.py`` (the first round's 26 payloads, the third round's 183
payload families and issue 35's payloads × 16 disguises: 155 attacks through each of fifteen channels,
2,325) to a fresh embedded store on the real offline embedder, recalls, renders and judges, and writes
``benchmarks/results/redteam.json`` and ``.md``. It also measures the detector on its own
(``looks_like_instruction``): on the labelled texts of ``benchmarks/data/instruction_texts.jsonl``
(per split and language; the held-out split was written before the rule and scored once) and, for the
false-positive rate, on every legitimate text of the repository's data (stored lessons, queries, tasks,
labelled claims, informative junk-set texts). ``docs/build_readme.py`` renders it into ``docs/storage.md``
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
from langchain_hindsight._safety import looks_like_instruction
from langchain_hindsight.embeddings.local import LocalEmbeddings
from tests import redteam

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
LEGIT_KEYS = ("content", "query", "task", "text", "a", "b")


def legitimate_texts() -> dict[str, list[str]]:
    """Every legitimate text of the repository's data, by file (dialogue transcripts and junk left out)."""
    out: dict[str, list[str]] = {}
    files = [*(ROOT / "benchmarks" / "data").glob("*.jsonl"), *(ROOT / "tests" / "unit_tests" / "data").glob("*.jsonl")]
    for path in sorted(files):
        if path.name == "instruction_texts.jsonl":
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            if row.get("form") == "dialogue" or row.get("junk"):
                continue
            texts = [v for k, v in row.items() if k in LEGIT_KEYS and isinstance(v, str)]
            out.setdefault(path.name, []).extend(texts)
    return out


def detection() -> dict[str, object]:
    """The detector on the labelled texts (per split and language) and on the legitimate texts."""
    rows = [
        json.loads(line)
        for line in (ROOT / "benchmarks" / "data" / "instruction_texts.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    ]
    slices: dict[str, dict[str, int]] = {}
    for r in rows:
        flagged = looks_like_instruction(r["text"])
        for key in (f"{r['split']}/{r['lang']}", f"{r['split']}/all"):
            s = slices.setdefault(key, {"instructions": 0, "flagged": 0, "hard_negatives": 0, "false_positives": 0})
            if r["instruction"]:
                s["instructions"] += 1
                s["flagged"] += flagged
            else:
                s["hard_negatives"] += 1
                s["false_positives"] += flagged
    legit = legitimate_texts()
    flagged_legit = {name: [t for t in texts if looks_like_instruction(t)] for name, texts in legit.items()}
    return {
        "labelled": dict(sorted(slices.items())),
        "legitimate_texts": sum(len(t) for t in legit.values()),
        "legitimate_flagged": sum(len(t) for t in flagged_legit.values()),
        "legitimate_by_file": {n: [len(legit[n]), len(flagged_legit[n])] for n in legit},
        "legitimate_flagged_examples": [t for ts in flagged_legit.values() for t in ts][:20],
    }


def markdown(result: dict[str, object]) -> str:
    """The results page: the detector's numbers (the per-channel table is rendered into the docs from the JSON)."""
    det = result["detection"]
    assert isinstance(det, dict)
    lines = [
        "# Red team (benchmarks/redteam.py)",
        "",
        f"{result['attacks']} attacks through {len(result['per_channel'])} channels: {result['structure_changes']} "  # type: ignore[arg-type]
        f"structure changes, {result['untrusted_as_trusted_stored']} untrusted units stored or shown as trusted, "
        f"{result['untrusted_as_trusted_top5']} in the top 5 recalled.",
        "",
        "## Detection",
        "",
        "| slice | instructions | flagged | hard negatives | false positives |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, s in det["labelled"].items():
        lines.append(
            f"| {name} | {s['instructions']} | {s['flagged']} | {s['hard_negatives']} | {s['false_positives']} |"
        )
    lines.append(
        f"| legitimate texts of the repository's data | — | — | {det['legitimate_texts']} | "
        f"{det['legitimate_flagged']} |"
    )
    return "\n".join(lines) + "\n"


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
    result["detection"] = detection()
    result["legitimate_flagged"] = result["detection"]["legitimate_flagged"]  # type: ignore[index]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.output == RESULTS / "redteam.json":
        (RESULTS / "redteam.md").write_text(markdown(result), encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, dict | list)}))


if __name__ == "__main__":
    main()
