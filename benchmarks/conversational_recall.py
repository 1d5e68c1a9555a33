"""English multi-session conversational recall: turn-level evidence recall@10 per embedder design.

Why: a multilingual embedder that wins the bilingual lesson set can still lose
on long English dialogue (measured elsewhere on a public multi-session
benchmark: USE-multilingual dense 34.8 vs MiniLM dense 45.4 recall@10). This
set is our own: benchmarks/data/conversation_turns.jsonl (multi-session
dialogues between two people or a user and an assistant, one memory per turn,
``"Speaker: text"``) and conversation_questions.jsonl (questions about facts
stated sessions earlier, with the evidence turn ids; some facts are updated in
a later session and the question needs the update). Each split's dialogues are
pooled into one store, so other dialogues' turns are distractors too.

Every ranking comes from the real ``MemoryStore`` + ``HindsightRetriever``
(relevance only, k = 10). Designs: the single arms (dense of each embedder,
BM25) for reference, then the designs of ``recall_quality.DESIGNS``.

Phases: ``--phase tune`` sweeps alpha on the tuning dialogues only
(``results/conversational_recall_tuning.json``); ``--phase report`` (default)
runs the fixed designs on both splits and writes
``results/conversational_recall.json`` and ``.md``.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/conversational_recall.py [--phase tune|report]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from _candidates import NOW, ROOT, Design, build_embedders, mean, open_store, retriever_for  # type: ignore[import-not-found]
from recall_quality import ALPHAS, DESIGNS, NEW_DEFAULT, OLD_DEFAULT  # type: ignore[import-not-found]

from langchain_hindsight.types import MemoryUnit

SPLITS = ("tuning", "heldout")
REFERENCE = (
    Design("MiniLM dense only", "minilm", 1.0, fusion="dense"),
    Design("USE dense only", "use-m3", 1.0, fusion="dense"),
    Design("BM25 only", "minilm", 0.0, fusion="lexical"),
)


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ROOT / "data" / name).read_text(encoding="utf-8").splitlines() if line]


def turn_units(turns: Sequence[dict[str, Any]]) -> list[MemoryUnit]:
    return [
        MemoryUnit(
            memory_id=t["id"],
            task_type="conversation",
            content=f"{t['speaker']}: {t['text']}",
            confidence=0.7,
            source="manual",
            created_at=NOW,
            last_accessed_at=NOW,
        )
        for t in turns
    ]


def evaluate(store: Any, design: Design, questions: Sequence[dict[str, Any]]) -> dict[str, Any]:
    recall = retriever_for(store, design, typed=False, k=10)
    r10, rr, misses = [], [], []
    for q in questions:
        ids = [s.memory.memory_id for s in recall(q["question"], None)]
        ev = set(q["evidence"])
        r10.append(len(ev & set(ids[:10])) / len(ev))
        first = next((r for r, i in enumerate(ids[:10], 1) if i in ev), 0)
        rr.append(1.0 / first if first else 0.0)
        if r10[-1] < 1.0:
            misses.append(q["id"])
    return {"recall@10": round(100 * mean(r10), 1), "mrr@10": round(mean(rr), 3), "n": len(questions), "misses": misses}


def data() -> dict[str, tuple[list[MemoryUnit], list[dict[str, Any]]]]:
    turns = load("conversation_turns.jsonl")
    questions = load("conversation_questions.jsonl")
    return {
        s: (turn_units([t for t in turns if t["split"] == s]), [q for q in questions if q["split"] == s])
        for s in SPLITS
    }


def tune() -> None:
    units, questions = data()["tuning"]
    names = ("minilm", "use-m3", "minilm+use@0.5")
    emb = build_embedders(names)
    out: dict[str, Any] = {"split": "tuning", "sweep": {}}
    for name in names:
        with open_store(emb[name], units) as store:
            for alpha in ALPHAS:
                res = evaluate(store, Design("sweep", name, alpha), questions)
                out["sweep"].setdefault(name, {})[str(alpha)] = res
                print(f"{name:16s} a={alpha:.1f} R@10 {res['recall@10']:5.1f} MRR {res['mrr@10']:.3f}", flush=True)
    (ROOT / "results" / "conversational_recall_tuning.json").write_text(json.dumps(out, indent=1), encoding="utf-8")


def report() -> None:
    designs = (*REFERENCE, *DESIGNS)
    emb = build_embedders(tuple(dict.fromkeys(d.embedder for d in designs)))
    splits = data()
    results: dict[str, Any] = {
        "dataset": {
            s: {"turns": len(u), "questions": len(q), "dialogues": len({x["dialogue"] for x in q})}
            for s, (u, q) in splits.items()
        },
        "old_default": OLD_DEFAULT.name,
        "new_default": NEW_DEFAULT,
        "designs": [],
    }
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for ename in dict.fromkeys(d.embedder for d in designs):
        for s, (units, questions) in splits.items():
            with open_store(emb[ename], units) as store:
                for d in designs:
                    if d.embedder == ename:
                        rows[(d.name, s)] = evaluate(store, d, questions)
    for d in designs:
        results["designs"].append({"name": d.name, "design": d.describe(), **{s: rows[(d.name, s)] for s in SPLITS}})
    out = ROOT / "results"
    (out / "conversational_recall.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    ds = results["dataset"]
    lines = [
        "# English multi-session conversational recall (benchmarks/conversational_recall.py)",
        "",
        f"Tuning: {ds['tuning']['dialogues']} dialogues, {ds['tuning']['turns']} turns, "
        f"{ds['tuning']['questions']} questions. Held-out: {ds['heldout']['dialogues']} dialogues, "
        f"{ds['heldout']['turns']} turns, {ds['heldout']['questions']} questions. One memory per turn; "
        "turn-level evidence recall@10 (%) and MRR@10, relevance only, real MemoryStore + HindsightRetriever.",
        "",
        "| design | tuning R@10 | tuning MRR | held-out R@10 | held-out MRR |",
        "|---|---|---|---|---|",
    ]
    for e in results["designs"]:
        lines.append(
            f"| {e['name']} ({e['design']}) | {e['tuning']['recall@10']:.1f} | {e['tuning']['mrr@10']:.3f} | "
            f"{e['heldout']['recall@10']:.1f} | {e['heldout']['mrr@10']:.3f} |"
        )
    (out / "conversational_recall.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=("tune", "report"), default="report")
    args = parser.parse_args()
    tune() if args.phase == "tune" else report()


if __name__ == "__main__":
    main()
