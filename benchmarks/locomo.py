"""LoCoMo (snap-research/LoCoMo) as a recall benchmark: R@5 / R@10 with the default floor and with none.

The data is the public ``locomo10.json`` (10 long conversations, ~2k questions), licensed CC BY-NC:
it is read from the path given on the command line and never committed, nor is any excerpt of it;
this script writes only numbers (``benchmarks/results/locomo.json|md``).

Each dialogue turn is one memory (``speaker: text``; an image turn adds its caption), one store per
conversation; each question is a query and its turn-level evidence (``qa[].evidence``, e.g. ``D1:3``)
the relevant memories. Every question runs through the real ``HindsightRetriever`` four times
(``k`` 5 and 10; the default floor of ``RecallSettings``, ``min_relevance=None`` and, for comparison,
the previous default ``FloorRule(scope="candidate")``). Recall@k: evidence
turns among the served ``k`` over ``min(|evidence|, k)``; questions whose evidence names no turn of the
conversation are skipped (counted). Reported per question category (1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop, 5 adversarial) and overall; ``silent`` counts questions served nothing.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/locomo.py --data /work/data/locomo10.json [--limit N]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from langchain_hindsight.embeddings.multilingual import default_embeddings  # noqa: E402
from langchain_hindsight.recall.engine import RecallSettings  # noqa: E402
from langchain_hindsight.recall.ranking import FloorRule  # noqa: E402
from langchain_hindsight.recall.retriever import HindsightRetriever  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.types import MemoryUnit  # noqa: E402

RESULTS = ROOT / "results"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
MAX_COST = 2.0
PREVIOUS_FLOOR = FloorRule(scope="candidate")
"""The default before issue 33 (each memory judged alone), reported for comparison."""


def turns(conversation: dict[str, Any]) -> dict[str, str]:
    """Dialogue id (``D1:3``) → the memory text of that turn."""
    out: dict[str, str] = {}
    for key, value in conversation.items():
        if not re.fullmatch(r"session_\d+", key) or not isinstance(value, list):
            continue
        for turn in value:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [image: {turn['blip_caption']}]"
            out[turn["dia_id"]] = text
    return out


def evidence_ids(raw: list[str]) -> list[str]:
    """The turn ids of one question's evidence (some entries hold several ids separated by ``;`` or spaces)."""
    return [part for item in raw for part in re.split(r"[;,\s]+", item) if re.fullmatch(r"D\d+:\d+", part)]


def recall_at(served: list[str], relevant: set[str], k: int) -> float:
    return len(set(served[:k]) & relevant) / min(len(relevant), k)


def run(data: list[dict[str, Any]], limit: int | None) -> dict[str, Any]:
    embeddings = default_embeddings()
    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    skipped = memories = 0
    for sample in data:
        by_turn = turns(sample["conversation"])
        memories += len(by_turn)
        ids = {dia: f"t{i:05d}" for i, dia in enumerate(by_turn)}
        with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp, embeddings=embeddings) as store:
            store.add_many(
                [
                    MemoryUnit(
                        memory_id=ids[d], task_type="general", content=t, kind="fact", confidence=0.7, source="manual"
                    )
                    for d, t in by_turn.items()
                ],
                dedupe=False,
            )
            default = {k: HindsightRetriever(store=store, k=k, low_similarity_threshold=0.0) for k in (5, 10)}
            off = {
                k: HindsightRetriever(store=store, k=k, min_relevance=None, low_similarity_threshold=0.0)
                for k in (5, 10)
            }
            previous = {
                k: HindsightRetriever(store=store, k=k, min_relevance=PREVIOUS_FLOOR, low_similarity_threshold=0.0)
                for k in (5, 10)
            }
            for qa in sample["qa"][:limit]:
                relevant = {ids[e] for e in evidence_ids(qa.get("evidence", [])) if e in ids}
                question = str(qa.get("question", "")).strip()
                if not relevant or not question:
                    skipped += 1
                    continue
                category = CATEGORIES.get(qa.get("category"), str(qa.get("category")))
                for name, side in (("default", default), ("off", off), ("previous", previous)):
                    for k, retriever in side.items():
                        served = [m.memory.memory_id for m in retriever.recall(question)]
                        for key in (category, "all"):
                            rows[key][f"r{k}_{name}"].append(recall_at(served, relevant, k))
                            if k == 5 and name == "default":
                                rows[key]["silent"].append(float(not served))
    slices = {
        name: {"questions": len(row["r5_off"]), **{key: 100 * sum(v) / len(v) for key, v in row.items()}}
        for name, row in rows.items()
    }
    return {"conversations": len(data), "memories": memories, "skipped_questions": skipped, "slices": slices}


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# LoCoMo recall with the default floor vs no floor (benchmarks/locomo.py)",
        "",
        f"Public LoCoMo data (snap-research/LoCoMo `locomo10.json`, CC BY-NC, read from a local path, not "
        f"committed): {result['conversations']} conversations, {result['memories']} dialogue turns stored as "
        f"memories (one store per conversation), questions as queries, turn-level evidence as the relevant "
        f"memories ({result['skipped_questions']} questions without usable evidence skipped). Default embedder, "
        f"real `HindsightRetriever`; default floor `min_relevance={result['default_floor']!r}`. R@k in %; "
        f"`silent`: questions served nothing at k=5 with the default (every question here has an answer). "
        f"`previous default`: the rule before issue 33, each memory judged alone (`FloorRule(scope='candidate')`).",
        "",
        "| category | questions | R@5 default | R@5 no floor | R@10 default | R@10 no floor | silent | "
        "R@10 previous default |",
        "|---|---|---|---|---|---|---|---|",
    ]
    order = [*CATEGORIES.values(), "all"]
    for name in sorted(result["slices"], key=lambda n: order.index(n) if n in order else len(order)):
        s = result["slices"][name]
        lines.append(
            f"| {name} | {s['questions']} | {s['r5_default']:.1f} | {s['r5_off']:.1f} | {s['r10_default']:.1f} | "
            f"{s['r10_off']:.1f} | {s['silent']:.1f} | {s['r10_previous']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, type=Path, help="path to LoCoMo's locomo10.json (never committed)")
    parser.add_argument("--limit", type=int, default=None, help="questions per conversation (a quick run)")
    args = parser.parse_args()
    start = time.perf_counter()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    result = {
        "benchmark": "locomo",
        "default_floor": str(RecallSettings().min_relevance),
        **run(data, args.limit),
        "limit_per_conversation": args.limit,
        "seconds": round(time.perf_counter() - start, 1),
    }
    result["within_cost"] = all(
        s[f"r{k}_off"] - s[f"r{k}_default"] <= MAX_COST + 1e-9 for s in result["slices"].values() for k in (5, 10)
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "locomo.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "locomo.md").write_text(markdown(result) + "\n", encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
