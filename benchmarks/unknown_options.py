"""What refusing a misspelt keyword costs a call that spells every keyword right.

Every public method of this package is wrapped by ``refuse_unknown_keywords`` (``_checks.py``). A closed
signature is checked only on the failure path (the wrapper calls the method and re-raises Python's
``TypeError`` typed), so the happy path costs one extra Python call; a ``**kwargs`` whose names are known
costs a subset test before the call besides. This script times, with ``timeit`` on CPU time
(``time.process_time``), in one process and alternating the arms round by round:

- a trivial function with recall's signature, undecorated and with the failure-path wrapper, and one with a
  ``**options`` of known names, undecorated and with the pre-call check; each with and without a keyword;
- two real public methods with the wrapper and with it peeled off (``__wrapped__``), same arguments:
  ``ConfidencePolicy.apply`` (pure Python, called per feedback) and ``MemoryStore.get`` (a read of one
  unit) on a 200-unit in-memory store.

Usage: .venv/bin/python benchmarks/unknown_options.py [--rounds 7] [--number 200000]
Writes benchmarks/results/unknown_options.json and .md.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight._checks import _on_failure, _Signature, _wrap
from langchain_hindsight.store import ConfidencePolicy
from langchain_hindsight.store.backend.inmemory import InMemoryBackend
from tests.fakes import NgramEmbeddings

RESULTS = Path(__file__).resolve().parent / "results"


def recall(query: str, *, k: int | None = None, task_type: str | None = None, namespace: str | None = None) -> str:
    """A method body that costs (almost) nothing, so the wrapper's cost is all that differs."""
    return query


def recall_options(query: str, **options: Any) -> str:
    """The same with a ``**kwargs`` whose names are known (``also``): checked before the call."""
    return query


def _arms(store: MemoryStore) -> dict[str, Callable[[], object]]:
    failing = _on_failure(recall, "recall", _Signature(recall, frozenset()))
    checked = _wrap(recall_options, "recall", _Signature(recall_options, frozenset({"k", "task_type", "namespace"})))
    policy = ConfidencePolicy()
    apply = type(policy).apply
    get = type(store).get
    memory_id = store.list_units(limit=1)[0].memory_id
    return {
        "trivial, no keyword: undecorated": lambda: recall("q"),
        "trivial, no keyword: failure-path": lambda: failing("q"),
        "trivial **kwargs, no keyword: undecorated": lambda: recall_options("q"),
        "trivial **kwargs, no keyword: pre-check": lambda: checked("q"),
        "trivial, k=3: undecorated": lambda: recall("q", k=3),
        "trivial, k=3: failure-path": lambda: failing("q", k=3),
        "trivial **kwargs, k=3: undecorated": lambda: recall_options("q", k=3),
        "trivial **kwargs, k=3: pre-check": lambda: checked("q", k=3),
        "ConfidencePolicy.apply: undecorated": lambda: apply.__wrapped__(policy, 0.5, success=True, rejected=False),  # type: ignore[attr-defined]
        "ConfidencePolicy.apply: decorated": lambda: apply(policy, 0.5, success=True, rejected=False),
        "MemoryStore.get: undecorated": lambda: get.__wrapped__(store, memory_id, namespace="default"),  # type: ignore[attr-defined]
        "MemoryStore.get: decorated": lambda: get(store, memory_id, namespace="default"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=200_000)
    args = parser.parse_args()
    store = MemoryStore(backend=InMemoryBackend(), embeddings=NgramEmbeddings())
    store.add_many(
        [
            MemoryUnit(task_type="data_cleaning", content=f"CSV file {i}: read with encoding utf-8-sig")
            for i in range(200)
        ],
        dedupe=False,
    )
    arms = _arms(store)
    numbers = {name: args.number if name.startswith("trivial") else max(1, args.number // 10) for name in arms}
    ns: dict[str, list[float]] = {name: [] for name in arms}
    for _ in range(args.rounds):  # alternate the arms round by round: noise hits all of them alike
        for name, call in arms.items():
            total = timeit.timeit(call, timer=time.process_time, number=numbers[name])
            ns[name].append(total / numbers[name] * 1e9)
    store.close()
    median = {name: statistics.median(values) for name, values in ns.items()}
    rows = []
    for subject in dict.fromkeys(name.split(": ")[0] for name in arms):
        base = median[f"{subject}: undecorated"]
        for name in arms:
            if name.startswith(subject + ":") and not name.endswith("undecorated"):
                rows.append(
                    {
                        "call": subject,
                        "arm": name.split(": ")[1],
                        "undecorated_ns": round(base, 1),
                        "decorated_ns": round(median[name], 1),
                        "overhead_ns": round(median[name] - base, 1),
                        "ratio": round(median[name] / base, 3),
                    }
                )
    result = {
        "what": "CPU ns per call, median of rounds; arms alternated in one process",
        "rounds": args.rounds,
        "number": numbers,
        "python": platform.python_version(),
        "rows": rows,
        "per_round_ns": {name: [round(v, 1) for v in values] for name, values in ns.items()},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "unknown_options.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [
        "# Cost of refusing misspelt keywords (per call, CPU time)",
        "",
        f"Median of {args.rounds} alternated rounds, Python {platform.python_version()}; "
        "written by `benchmarks/unknown_options.py`.",
        "",
        "| call | wrapper | undecorated (ns) | decorated (ns) | overhead (ns) | ratio |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['call']} | {r['arm']} | {r['undecorated_ns']:.0f} | {r['decorated_ns']:.0f} | "
            f"{r['overhead_ns']:.0f} | {r['ratio']:.2f}× |"
        )
    (RESULTS / "unknown_options.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
