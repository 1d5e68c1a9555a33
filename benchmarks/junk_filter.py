"""The junk rule: what the store refuses as carrying no information, what it keeps, per split and language.

Each text is judged as the store's write path judges a unit's content (``MemoryUnit(content=text)`` then
:func:`langchain_hindsight.writes.check_informative`, both public): a text is refused when either
raises :class:`~langchain_hindsight.errors.InvalidMemoryError` (``UninformativeMemoryError`` is one).

Data: ``benchmarks/data/junk_texts.jsonl``, short texts labelled junk (acknowledgements, greetings,
fillers, bare verdicts, emoji, one character) or informative (short facts, preferences, settings,
names, dates, units), in Chinese, English and mixed. The ``tuning`` split holds the examples of
issue 20 and the texts the rule was written against; the ``heldout`` split was written after the
rule and scored once, without changing the rule. The last table runs the rule over every memory
the other benchmarks store (lessons, held-out lessons, conversation turns as ``"Speaker: text"``):
each one refused would be a real memory lost.

Run: ``.venv/bin/python benchmarks/junk_filter.py`` (no model, under a second).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_hindsight import MemoryUnit
from langchain_hindsight.errors import InvalidMemoryError
from langchain_hindsight.writes import check_informative

ROOT = Path(__file__).parent
RESULTS = ROOT / "results"
DATA = ROOT / "data"
STORED = {
    "lessons (recall_memories)": ("recall_memories.jsonl", "content"),
    "held-out lessons A (heldout_memories)": ("heldout_memories.jsonl", "content"),
    "held-out lessons B (heldoutb_memories)": ("heldoutb_memories.jsonl", "content"),
    "conversation turns (conversation_turns)": ("conversation_turns.jsonl", None),
}


def informative(text: str) -> bool:
    """Whether the store would keep a unit with this content (the public write-path check, not a copy of it)."""
    try:
        check_informative(MemoryUnit(content=text))
    except InvalidMemoryError:
        return False
    return True


def _load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def _slice(rows: list[dict[str, Any]]) -> dict[str, Any]:
    junk = [r for r in rows if r["junk"]]
    kept = [r for r in rows if not r["junk"]]
    refused_junk = [r["text"] for r in junk if not informative(r["text"])]
    lost = [r["text"] for r in kept if not informative(r["text"])]
    refused = len(refused_junk) + len(lost)
    return {
        "junk": len(junk),
        "informative": len(kept),
        "junk_refused": len(refused_junk),
        "informative_refused": len(lost),
        "junk_recall": round(len(refused_junk) / len(junk), 3) if junk else None,
        "refusal_precision": round(len(refused_junk) / refused, 3) if refused else None,
        "junk_served": [r["text"] for r in junk if informative(r["text"])],
        "informative_lost": lost,
    }


def main() -> None:
    rows = _load("junk_texts.jsonl")
    table: dict[str, dict[str, Any]] = {}
    for split in ("tuning", "heldout"):
        for lang in ("zh", "en", "mixed", "all"):
            part = [r for r in rows if r["split"] == split and (lang == "all" or r["lang"] == lang)]
            table[f"{split}/{lang}"] = _slice(part)
    stored: dict[str, dict[str, Any]] = {}
    for label, (name, key) in STORED.items():
        texts = [
            r[key] if key else f"{r['speaker']}: {r['text']}"
            for r in _load(name)
            if (r.get(key) if key else r.get("text"))
        ]
        refused = [t for t in texts if not informative(t)]
        stored[label] = {"memories": len(texts), "refused": len(refused), "examples": refused[:5]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "junk_filter.json").write_text(
        json.dumps({"slices": table, "stored": stored}, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    lines = [
        "# Junk rule: refused junk and kept information (benchmarks/junk_filter.py)",
        "",
        "The store's write-path check (`check_informative(MemoryUnit(content=text))`) on "
        "`benchmarks/data/junk_texts.jsonl`. Junk recall: share of junk texts refused. "
        "Precision: share of refused texts that are junk. Held-out: written after the rule, scored once.",
        "",
        "| split / language | junk | informative | junk refused | informative refused | junk recall | precision |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, s in table.items():
        recall = "–" if s["junk_recall"] is None else f"{s['junk_recall']:.3f}"
        precision = "–" if s["refusal_precision"] is None else f"{s['refusal_precision']:.3f}"
        lines.append(
            f"| {name} | {s['junk']} | {s['informative']} | {s['junk_refused']} | {s['informative_refused']} | "
            f"{recall} | {precision} |"
        )
    held = table["heldout/all"]
    lines += [
        "",
        f"Held-out junk the rule lets through: {', '.join(repr(t) for t in held['junk_served']) or 'none'}. "
        f"Held-out information it would refuse: {', '.join(repr(t) for t in held['informative_lost']) or 'none'}.",
        "",
        "## Stored memories of the other benchmarks",
        "",
        "| memories | count | refused |",
        "|---|---:|---:|",
    ]
    lines += [f"| {label} | {s['memories']} | {s['refused']} |" for label, s in stored.items()]
    (RESULTS / "junk_filter.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
