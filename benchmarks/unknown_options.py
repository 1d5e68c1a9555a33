"""What refusing a misspelt keyword costs a call that spells every keyword right.

Every public method of this package is wrapped by ``refuse_unknown_keywords`` (``_checks.py``). A closed
signature is checked only on the failure path (the wrapper calls the method and re-raises Python's
``TypeError`` typed), so the happy path costs one extra Python call; a ``**kwargs`` whose names are known
costs a subset test before the call besides. This script times, with ``timeit`` on CPU time
(``time.process_time``), in one process and alternating the arms round by round:

- a trivial function with recall's signature, undecorated and with the failure-path wrapper, and one with a
  ``**options`` of known names, undecorated and with the pre-call check; each with and without a keyword;
- a real public method with the wrapper and with it peeled off (``__wrapped__``), same arguments:
  ``ConfidencePolicy.apply`` (pure Python, called per feedback; a store read's own noise would hide the
  wrapper);
- how many guarded calls one ``Hindsight.recall`` makes (counted with a profile hook on the wrappers' code)
  and what they cost at the measured worst per-call overhead, as a share of that recall's own CPU time.

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

from langchain_hindsight import Hindsight, MemoryStore, MemoryUnit
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


def _arms() -> dict[str, Callable[[], object]]:
    failing = _on_failure(recall, "recall", _Signature(recall, frozenset()))
    checked = _wrap(recall_options, "recall", _Signature(recall_options, frozenset({"k", "task_type", "namespace"})))
    policy = ConfidencePolicy()
    apply = type(policy).apply
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
    }


def _wrapper_codes() -> set[Any]:
    """The code objects of every kind of wrapper ``_checks`` makes (all wrappers of a kind share one)."""

    def closed(*, k: int = 1) -> int:
        return k

    def opened(**options: Any) -> int:
        return len(options)

    async def aclosed(*, k: int = 1) -> int:
        return k

    async def aopened(**options: Any) -> int:
        return len(options)

    known = frozenset({"k"})
    return {_wrap(f, "x", _Signature(f, known)).__code__ for f in (closed, opened, aclosed, aopened)}


def _guarded_calls(call: Callable[[], object]) -> int:
    """How many guarded (wrapped) calls ``call`` makes."""
    codes = _wrapper_codes()
    count = 0

    def hook(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call" and frame.f_code in codes:
            count += 1

    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(None)
    return count


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
    arms = _arms()
    hs = Hindsight(store=store)
    recall_call: Callable[[], object] = lambda: hs.recall("读取 CSV encoding 乱码", k=3)  # noqa: E731
    recall_call()  # warm: the mirror and lexical index are built on the first recall
    guarded = _guarded_calls(recall_call)
    recall_ns = []
    numbers = {name: args.number if name.startswith("trivial") else max(1, args.number // 10) for name in arms}
    ns: dict[str, list[float]] = {name: [] for name in arms}
    for _ in range(args.rounds):  # alternate the arms round by round: noise hits all of them alike
        for name, call in arms.items():
            total = timeit.timeit(call, timer=time.process_time, number=numbers[name])
            ns[name].append(total / numbers[name] * 1e9)
        recall_ns.append(timeit.timeit(recall_call, timer=time.process_time, number=50) / 50 * 1e9)
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
    worst = max(r["overhead_ns"] for r in rows if r["call"].startswith("trivial"))
    per_recall = {
        "guarded_calls": guarded,
        "worst_overhead_ns_per_call": worst,
        "recall_cpu_ns": round(statistics.median(recall_ns)),
        "share_of_recall": round(guarded * worst / statistics.median(recall_ns), 6),
    }
    result = {
        "what": "CPU ns per call, median of rounds; arms alternated in one process",
        "rounds": args.rounds,
        "number": numbers,
        "python": platform.python_version(),
        "rows": rows,
        "hindsight_recall": per_recall,
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
    lines += [
        "",
        "## One Hindsight.recall (200 memories, in-memory store, n-gram test embedder)",
        "",
        "| guarded calls | worst overhead per call (ns) | their cost (µs) | recall CPU (µs) | share of recall |",
        "|---:|---:|---:|---:|---:|",
        f"| {guarded} | {worst:.0f} | {guarded * worst / 1000:.1f} | {per_recall['recall_cpu_ns'] / 1000:.0f} | "
        f"{per_recall['share_of_recall']:.2%} |",
    ]
    (RESULTS / "unknown_options.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
