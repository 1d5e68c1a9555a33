"""What the default serving decision costs: recall@5 and @10 with the default floor vs no floor, per slice.

The acceptance of issue 33: on every held-out slice the defaults (``RecallSettings()``, whatever its
``min_relevance`` default is) are within 2 points of ``min_relevance=None`` at R@5 and R@10. Silence
for unrelated queries (served nothing at ``k=5``) is the second objective, reported per slice.

Splits (``benchmarks/data/README.md`` says how each corpus was written; nothing is tuned on held-out):

* ``dev``: ``floor_tuning_*`` (task lessons and conversational memory; short tasks, long multi-clause
  tasks, chat transcripts; zh / en / cross-language), ``floor_dialogue_dev_*`` (an archive of long event
  memories, the current multi-turn dialogue as the query: zh, en, zh→en, en→zh) and
  ``floor_nearid_dev_*`` (many near-identical lessons);
* ``held-out``: ``floor_heldout_*`` + ``floor_heldoutc_*``, ``floor_dialogue_heldout_*``,
  ``floor_nearid_heldout_*`` (other topics, names, places and settings).

Each corpus (or archive) is one real ``MemoryStore`` on the default embedder; every query runs through
the real ``HindsightRetriever`` four times (``k`` 5 and 10, default floor and none). Recall@k of a query:
relevant memories among the served ``k`` over ``min(|relevant|, k)`` (a near-identical query has many
relevant lessons). ``cut`` counts the rankings the default floor served shorter than the unfloored one.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/floor_recall.py
"""

from __future__ import annotations

import json
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
PREVIOUS_FLOOR = FloorRule(scope="candidate")
"""The default before issue 33 (each memory judged alone), reported for comparison."""
MAX_COST = 2.0
"""Points of R@5 / R@10 the default may cost against no floor, per held-out slice."""

SPLITS: dict[str, list[tuple[str, str]]] = {
    "dev": [("labelled", "floor_tuning"), ("generated", "floor_dialogue_dev"), ("generated", "floor_nearid_dev")],
    "held-out": [
        ("labelled", "floor_heldout"),
        ("labelled", "floor_heldoutc"),
        ("generated", "floor_dialogue_heldout"),
        ("generated", "floor_nearid_heldout"),
    ],
}
FORM_NAMES = {"short": "short task", "long": "long task", "dialogue": "chat transcript"}


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ROOT / "data" / name).read_text(encoding="utf-8").splitlines() if line]


def archives(kind: str, stem: str) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """(memories, queries) per store, each query with its ``slice``."""
    memories = load(f"{stem}_memories.jsonl")
    queries = load(f"{stem}_queries.jsonl")
    if kind == "generated":
        names = sorted({m["archive"] for m in memories})
        return [([m for m in memories if m["archive"] == a], [q for q in queries if q["archive"] == a]) for a in names]
    lang = {m["id"]: m["lang"] for m in memories}
    for q in queries:
        answer = lang[q["relevant"][0]] if q["relevant"] else q["lang"]
        pair = q["lang"] if answer == q["lang"] else f"{q['lang']}→{answer}"
        q["slice"] = f"{FORM_NAMES[q['form']]} {pair}"
    return [(memories, queries)]


def units(memories: list[dict[str, Any]]) -> list[MemoryUnit]:
    """The memories as stored units (one confidence and source for all: only relevance differs)."""
    return [
        MemoryUnit(
            memory_id=m["id"],
            task_type=m.get("task_type", "general"),
            content=m["content"],
            kind="fact" if m.get("kind") == "conversation" else "experience",
            confidence=0.7,
            source="manual",
        )
        for m in memories
    ]


def recall_at(served: list[str], relevant: list[str], k: int) -> float:
    return len(set(served[:k]) & set(relevant)) / min(len(relevant), k)


def run_split(embeddings: Any, split: str) -> dict[str, Any]:
    rows: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    n_memories = n_queries = 0
    for kind, stem in SPLITS[split]:
        for memories, queries in archives(kind, stem):
            n_memories += len(memories)
            n_queries += len(queries)
            with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp, embeddings=embeddings) as store:
                store.add_many(units(memories), dedupe=False)
                default = {k: HindsightRetriever(store=store, k=k, low_similarity_threshold=0.0) for k in (5, 10)}
                off = {
                    k: HindsightRetriever(store=store, k=k, min_relevance=None, low_similarity_threshold=0.0)
                    for k in (5, 10)
                }
                previous = HindsightRetriever(
                    store=store, k=10, min_relevance=PREVIOUS_FLOOR, low_similarity_threshold=0.0
                )
                for q in queries:
                    row = rows[q["slice"]]
                    got = {
                        (name, k): [m.memory.memory_id for m in r.recall(q["query"])]
                        for name, side in (("default", default), ("off", off))
                        for k, r in side.items()
                    }
                    if q["relevant"]:
                        for (name, k), served in got.items():
                            row[f"r{k}_{name}"].append(recall_at(served, q["relevant"], k))
                        row["cut"].append(float(len(got["default", 10]) < len(got["off", 10])))
                        before = [m.memory.memory_id for m in previous.recall(q["query"])]
                        row["r10_previous"].append(recall_at(before, q["relevant"], 10))
                    else:
                        row["silent"].append(float(not got["default", 5]))
    slices = {
        name: {
            "related": len(row["r5_off"]),
            "unrelated": len(row["silent"]),
            **{key: 100 * sum(v) / len(v) for key, v in row.items() if key not in ("cut",) and v},
            "cut": int(sum(row["cut"])),
        }
        for name, row in sorted(rows.items())
    }
    return {"memories": n_memories, "queries": n_queries, "slices": slices}


def cost_ok(s: dict[str, Any]) -> bool:
    if not s["related"]:
        return True
    return all(s[f"r{k}_off"] - s[f"r{k}_default"] <= MAX_COST + 1e-9 for k in (5, 10))


def fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def markdown(result: dict[str, Any]) -> str:
    floor = result["default_floor"]
    lines = [
        "# Recall with the default floor vs no floor, per slice (benchmarks/floor_recall.py)",
        "",
        f"Default embedder (script-routed MiniLM + USE), real `MemoryStore` + `HindsightRetriever`; default floor: "
        f"`min_relevance={floor!r}` (`RecallSettings`). R@k: relevant memories among the served k over "
        f"min(|relevant|, k), in %. `cut`: rankings (of the related queries) the default served shorter than "
        f"no floor at k=10. `silent`: unrelated queries served nothing (k=5). `previous default`: the rule before "
        f"issue 33, each memory judged alone (`FloorRule(scope='candidate')`). Acceptance: on every held-out slice "
        f"the default costs at most {MAX_COST:g} points of R@5 and R@10.",
        "",
    ]
    for split, data in result["splits"].items():
        slices = data["slices"]
        ok = sum(cost_ok(s) for s in slices.values())
        lines += [
            f"## {split}",
            "",
            f"{data['memories']} memories, {data['queries']} queries; the default is within {MAX_COST:g} points of "
            f"no floor in {ok} of {len(slices)} slices.",
            "",
            "| slice | related | R@5 default | R@5 no floor | R@10 default | R@10 no floor | cut | unrelated | silent "
            "| R@10 previous default |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, s in slices.items():
            lines.append(
                f"| {name} | {s['related']} | {fmt(s.get('r5_default'))} | {fmt(s.get('r5_off'))} | "
                f"{fmt(s.get('r10_default'))} | {fmt(s.get('r10_off'))} | {s['cut']} | {s['unrelated'] or '—'} | "
                f"{fmt(s.get('silent')) if s['unrelated'] else '—'} | {fmt(s.get('r10_previous'))} |"
            )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    start = time.perf_counter()
    embeddings = default_embeddings()
    splits = {split: run_split(embeddings, split) for split in SPLITS}
    result = {
        "benchmark": "floor_recall",
        "default_floor": str(RecallSettings().min_relevance),
        "max_cost_points": MAX_COST,
        "splits": splits,
        "held_out_within_cost": all(cost_ok(s) for s in splits["held-out"]["slices"].values()),
        "seconds": round(time.perf_counter() - start, 1),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "floor_recall.json").write_text(
        json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    (RESULTS / "floor_recall.md").write_text(markdown(result) + "\n", encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
