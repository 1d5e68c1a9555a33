"""The give-up detector (``capture/_outcome.gives_up``) on the labelled final answers, per split and language.

Data: ``benchmarks/data/final_answers.jsonl`` (hand-written, zh and en). Each row is one final answer an
agent might give: a give-up or failure report (label ``give_up``), a hard negative (mentions failure but
succeeds: ``上次失败的原因已经修复，报告已生成``, ``The failing test now passes``), or a plain success.

Splits, in the order they were written:

* ``dev`` / ``heldout`` (A): written in one sitting; the patterns were written against ``dev`` only.
* ``dev_b`` (B), ``dev_c`` (C), ``dev_d`` (D): each written after the patterns were frozen, scored once
  (the first-score numbers below), then used to widen the patterns — so they are tuning data now.
* ``heldout_e`` (E): written after the fourth freeze, never used to change a pattern (its first score is
  below; the chat round narrowed two broad rules, which moved it).
* ``dev_chat``, ``dev_chat2``: conversational replies (``好的，我不会再用这个格式了。``, ``I can't wait to see
  it``), scored once each, then tuned on. ``heldout_chat``: written after that, scored once, never tuned on.
  E and ``heldout_chat`` are the honest estimates for phrasing the rules have not seen.

Run: ``.venv/bin/python benchmarks/outcome_detector.py`` (a second; writes ``results/outcome_detector.{json,md}``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_hindsight.capture import gives_up

DATA = Path(__file__).parent / "data" / "final_answers.jsonl"
RESULTS = Path(__file__).parent / "results"
HELD_OUT = ("heldout", "heldout_e", "heldout_chat")
"""Splits never used to choose a pattern (the first table)."""
SPLITS = ("dev", "heldout", "dev_b", "dev_c", "dev_d", "dev_chat", "dev_chat2", "heldout_e", "heldout_chat")
FIRST_SCORES = {
    "dev_b": {"precision": 0.538, "recall": 0.35, "note": "scored once with the first patterns, then tuned on"},
    "dev_c": {"precision": 0.7, "recall": 0.35, "note": "scored once with the second patterns, then tuned on"},
    "dev_d": {"precision": 0.8, "recall": 0.4, "note": "scored once with the third patterns, then tuned on"},
    "heldout_e": {"precision": 0.867, "recall": 0.65, "note": "first score (fourth patterns); never tuned on"},
    "dev_chat": {"precision": 0.429, "recall": 1.0, "note": "chat replies, fourth patterns, then tuned on"},
    "dev_chat2": {"precision": 0.556, "recall": 0.833, "note": "chat replies, fifth patterns, then tuned on"},
}
"""Recorded when B and C were first scored (before they became tuning data); the patterns differ since."""


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts, precision, recall and the false-alarm rate on hard negatives of ``rows``."""
    tp = fp = fn = hard_fp = 0
    for r in rows:
        predicted, gold = gives_up(r["text"]) is not None, r["label"] == "give_up"
        tp += predicted and gold
        fp += predicted and not gold
        fn += gold and not predicted
        hard_fp += predicted and r["kind"] == "hard_negative"
    hard = sum(r["kind"] == "hard_negative" for r in rows)
    return {
        "n": len(rows),
        "give_ups": tp + fn,
        "hard_negatives": hard,
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "hard_negative_false_alarms": hard_fp,
    }


def main() -> None:
    rows = [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    table: list[dict[str, Any]] = []
    for split in SPLITS:
        for lang in ("zh", "en", "all"):
            chosen = [r for r in rows if r["split"] == split and (lang == "all" or r["lang"] == lang)]
            table.append({"split": split, "lang": lang, **score(chosen)})
    result = {"rows": table, "first_scores": FIRST_SCORES, "total": len(rows)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "outcome_detector.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")

    def fmt(value: float | None) -> str:
        return "–" if value is None else f"{value:.3f}"

    lines = [
        "# outcome detector (give-ups in final answers)",
        "",
        f"{len(rows)} hand-written final answers (benchmarks/data/final_answers.jsonl); "
        "heldout (A) was written with dev, so it is optimistic; heldout_e and heldout_chat were written after the "
        "patterns were frozen and never tuned on.",
        "",
    ]
    header = [
        "| split | lang | answers | give-ups | hard negatives | precision | recall | hard-negative false alarms |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def row(r: dict[str, Any]) -> str:
        return (
            f"| {r['split']} | {r['lang']} | {r['n']} | {r['give_ups']} | {r['hard_negatives']} | "
            f"{fmt(r['precision'])} | {fmt(r['recall'])} | {r['hard_negative_false_alarms']} |"
        )

    lines += header + [row(r) for r in table if r["split"] in HELD_OUT]
    lines += ["", "## Every split (tuning splits score what they were tuned to)", "", *header]
    lines += [row(r) for r in table]
    lines += [
        "",
        "## First scores (before a split was tuned on, or before later rounds moved it)",
        "",
        "| split | precision | recall | note |",
        "|---|---|---|---|",
    ]
    lines += [f"| {s} | {v['precision']:.3f} | {v['recall']:.3f} | {v['note']} |" for s, v in FIRST_SCORES.items()]
    (RESULTS / "outcome_detector.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
