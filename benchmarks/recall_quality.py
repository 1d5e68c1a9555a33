"""Recall quality per language slice, per embedder candidate, on a tuning and a held-out split.

Data (benchmarks/data/README.md says how each file was made):

* tuning split: ``recall_memories.jsonl`` (120 lessons, 60 zh + 60 en) with
  ``recall_queries.jsonl`` (114 queries: same-language, cross-language, no-answer).
  The old fusion default was chosen on this set, and so are the new weights.
* held-out split: ``heldout_memories.jsonl`` (64 lessons, 32 zh + 32 en) with
  ``heldout_queries.jsonl`` (70 queries), written after the tuning choices
  were fixed in :data:`DESIGNS` and never used to choose anything.

Slices: a query's slice is its language → the language of its relevant
memory (``zh→zh``, ``en→en``, ``zh→en``, ``en→zh``); ``none`` are the no-answer
queries. Rankings come from the real ``MemoryStore`` + ``HindsightRetriever``
with the candidate embedder passed in. Two rankings:

* ``relevance``: the fused relevance alone (no task type; the headline);
* ``typed``: the full weighted score with the query's labelled task type;
* ``inferred``: the full weighted score with the task type inferred from the query
  (``langchain_hindsight.taxonomy.infer_task_type``, when the build has it).

Phases:

* ``--phase tune`` sweeps the dense weight alpha per embedder on the tuning
  split only and writes ``results/recall_quality_tuning.json`` (what
  :data:`DESIGNS` was chosen from);
* ``--phase report`` (default) runs the fixed :data:`DESIGNS` on both splits,
  calibrates the relevance floor on the tuning split and applies it to the
  held-out split, and writes ``results/recall_quality.json`` and ``.md``.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/recall_quality.py [--phase tune|report]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from _candidates import (  # type: ignore[import-not-found]
    NOW,
    ROOT,
    Design,
    build_embedders,
    mean,
    open_store,
    pct,
    retriever_for,
)

from langchain_hindsight.recall import query_script
from langchain_hindsight.types import MemoryUnit

SLICES = ("zh→zh", "en→en", "zh→en", "en→zh")
ALPHAS = tuple(round(0.1 * i, 1) for i in range(11))
SWEEP_EMBEDDERS = ("minilm", "use-m3", "minilm+use@0.3", "minilm+use@0.5", "minilm+use@0.7")

OLD_DEFAULT = Design("old default", "minilm", 0.3)
# The designs compared. The new default and its weights were chosen by benchmarks/fusion_sweep.py on the
# tuning split only (results/fusion_sweep.md); "USE, sweep rule" is the same rule restricted to USE alone;
# the other rows are the old default and simpler alternatives for comparison.
DESIGNS: tuple[Design, ...] = (
    OLD_DEFAULT,
    Design("USE, one alpha", "use-m3", 0.7),
    Design("USE, routed", "use-m3", 0.5, 0.7, cross_script=0.4),
    Design("USE, sweep rule", "use-m3", 0.6, 0.8),
    Design("MiniLM+USE concat", "minilm+use@0.5", 0.7),
    Design("script-routed MiniLM+USE", "routed@0.8", 0.5, 0.2, cross_script=2.0),
)
NEW_DEFAULT = "script-routed MiniLM+USE"
try:  # serve-time task type inference, when this build has it
    from langchain_hindsight import taxonomy as _taxonomy

    INFER: Callable[[str], str] | None = _taxonomy.infer_task_type  # type: ignore[attr-defined]
except AttributeError:  # older builds
    INFER = None
MODES = ("relevance", "typed", "inferred") if INFER is not None else ("relevance", "typed")
FLOOR_GRID = (0.10, 0.12, 0.14, 0.16, 0.18, 0.20, 0.22, 0.25)


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ROOT / "data" / name).read_text(encoding="utf-8").splitlines() if line]


def split(name: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    memories = load(f"{name}_memories.jsonl")
    queries = load(f"{name}_queries.jsonl")
    lang = {m["id"]: m["lang"] for m in memories}
    for q in queries:
        rel_langs = {lang[r] for r in q["relevant"]}
        if not rel_langs:
            q["slice"] = "none"
        elif q["lang"] in rel_langs:
            q["slice"] = f"{q['lang']}→{q['lang']}"
        else:
            q["slice"] = f"{q['lang']}→{sorted(rel_langs)[0]}"
    return memories, queries


def units(memories: Sequence[dict[str, Any]]) -> list[MemoryUnit]:
    return [
        MemoryUnit(
            memory_id=m["id"],
            task_type=m["task_type"],
            task_description=m["task_description"],
            content=m["content"],
            tags=m["tags"],
            confidence=0.7,
            source="manual",
            created_at=NOW,
            last_accessed_at=NOW,
        )
        for m in memories
    ]


# ---------------------------------------------------------------- metrics
def per_query(ranking: list[tuple[str, float]], relevant: list[str]) -> dict[str, float]:
    """MRR@10, R@1, R@5 of one ranking, plus the relevance of the first relevant hit and of the top hit."""
    ids = [i for i, _ in ranking]
    out: dict[str, float] = {"top_rel": ranking[0][1] if ranking else 0.0}
    if not relevant:
        return out
    rel = set(relevant)
    first = next((r for r, i in enumerate(ids[:10], 1) if i in rel), 0)
    out["mrr"] = 1.0 / first if first else 0.0
    for k in (1, 5):
        out[f"r@{k}"] = len(set(ids[:k]) & rel) / min(k, len(rel))
    out["first_rel"] = next((s for i, s in ranking[:5] if i in rel), 0.0)
    out["top1_correct"] = float(bool(ids) and ids[0] in rel)
    return out


def summarise(rows: dict[str, dict[str, float]], queries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    answerable = [q for q in queries if q["relevant"]]
    groups: dict[str, list[dict[str, Any]]] = {"all": answerable}
    for s in SLICES:
        groups[s] = [q for q in answerable if q["slice"] == s]
    for g, qs in groups.items():
        if not qs:
            continue
        out[g] = {
            "n": len(qs),
            "mrr": round(mean([rows[q["id"]]["mrr"] for q in qs]), 4),
            "r@1": round(mean([rows[q["id"]]["r@1"] for q in qs]), 4),
            "r@5": round(mean([rows[q["id"]]["r@5"] for q in qs]), 4),
        }
    out["macro_mrr"] = round(mean([out[s]["mrr"] for s in SLICES if s in out]), 4)
    out["min_slice_r@5"] = round(min(out[s]["r@5"] for s in SLICES if s in out), 4)
    return out


def run_queries(
    recall: Callable[[str, str | None], Any], queries: Sequence[dict[str, Any]]
) -> dict[str, dict[str, float]]:
    rows = {}
    for q in queries:
        got = recall(q["query"], q["task_type"])
        rows[q["id"]] = per_query([(s.memory.memory_id, s.similarity) for s in got], q["relevant"])
    return rows


# ---------------------------------------------------------------- relevance floor
def floor_stats(rows: dict[str, dict[str, float]], queries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Top-hit relevance of correct answers vs the best hit of no-answer queries."""
    correct = [rows[q["id"]]["top_rel"] for q in queries if q["relevant"] and rows[q["id"]]["top1_correct"]]
    first = [rows[q["id"]]["first_rel"] for q in queries if q["relevant"] and rows[q["id"]]["first_rel"] > 0]
    negative = [rows[q["id"]]["top_rel"] for q in queries if not q["relevant"]]
    return {
        "correct_top1": {
            "n": len(correct),
            "min": round(min(correct), 4),
            "p05": round(pct(correct, 0.05), 4),
            "p10": round(pct(correct, 0.10), 4),
            "median": round(pct(correct, 0.5), 4),
        },
        "first_relevant_in_top5": {"n": len(first), "min": round(min(first), 4), "p05": round(pct(first, 0.05), 4)},
        "no_answer_best": {
            "n": len(negative),
            "max": round(max(negative), 4),
            "median": round(pct(negative, 0.5), 4),
            "values": sorted(round(v, 4) for v in negative),
        },
    }


def apply_floor(rows: dict[str, dict[str, float]], queries: Sequence[dict[str, Any]], floor: float) -> dict[str, Any]:
    """With ``min_relevance=floor``: no-answer queries that get no block; answers kept.

    An answer is kept when an answerable query's first relevant memory in its top 5
    (without the floor) is still at or above the floor; queries whose answer was not
    in the top 5 anyway are not counted.
    """
    neg = [q for q in queries if not q["relevant"]]
    pos = [q for q in queries if q["relevant"]]
    no_block = sum(rows[q["id"]]["top_rel"] < floor for q in neg)
    found = [q for q in pos if rows[q["id"]]["first_rel"] > 0]
    kept = sum(rows[q["id"]]["first_rel"] >= floor for q in found)
    lost = [q["id"] for q in pos if 0 < rows[q["id"]]["first_rel"] < floor]
    leaked = [q["id"] for q in neg if rows[q["id"]]["top_rel"] >= floor]
    return {
        "floor": floor,
        "no_answer_without_block": f"{no_block}/{len(neg)}",
        "answerable_keeping_answer": f"{kept}/{len(found)}",
        "answers_lost_to_floor": lost,
        "no_answer_leaks": leaked,
    }


def choose_floor(rows: dict[str, dict[str, float]], queries: Sequence[dict[str, Any]]) -> float:
    """The floor halfway between the best no-answer hit and the weakest answer found (tuning split).

    ``weakest answer found`` is the lowest relevance of an answerable query's first
    relevant memory in its top 5; halfway leaves the same margin on both sides.
    When the two distributions overlap, the midpoint still splits them where they meet.
    """
    found = [rows[q["id"]]["first_rel"] for q in queries if q["relevant"] and rows[q["id"]]["first_rel"] > 0]
    negative = [rows[q["id"]]["top_rel"] for q in queries if not q["relevant"]]
    return round((max(negative) + min(found)) / 2, 2)


# ---------------------------------------------------------------- phases
def tune() -> None:
    memories, queries = split("recall")
    emb = build_embedders(SWEEP_EMBEDDERS)
    out: dict[str, Any] = {"split": "tuning", "queries": len(queries), "sweep": {}}
    for name in SWEEP_EMBEDDERS:
        with open_store(emb[name], units(memories)) as store:
            for xs in (0.0, 1.0):
                sweep: dict[str, Any] = {}
                for alpha in ALPHAS:
                    rows = run_queries(
                        retriever_for(store, Design("sweep", name, alpha, cross_script=xs), typed=False), queries
                    )
                    s = summarise(rows, queries)
                    by_script = {}
                    for script in ("cjk", "latin"):
                        qs = [q for q in queries if q["relevant"] and query_script(q["query"]) == script]
                        by_script[script] = round(mean([rows[q["id"]]["mrr"] for q in qs]), 4)
                    s["mrr_by_script"] = by_script
                    sweep[str(alpha)] = s
                    print(
                        f"{name:16s} xs={int(xs)} a={alpha:.1f} MRR {s['all']['mrr']:.3f} macro {s['macro_mrr']:.3f} "
                        + " ".join(f"{sl} {s[sl]['mrr']:.3f}/{s[sl]['r@5']:.2f}" for sl in SLICES)
                        + f"  cjk {by_script['cjk']:.3f} latin {by_script['latin']:.3f}",
                        flush=True,
                    )
                out["sweep"][f"{name}|cross_script={xs}"] = sweep
    path = ROOT / "results" / "recall_quality_tuning.json"
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")


def report() -> None:
    names = tuple(dict.fromkeys(d.embedder for d in DESIGNS))
    emb = build_embedders(names)
    results: dict[str, Any] = {"designs": [], "new_default": NEW_DEFAULT}
    splits = {"tuning": split("recall"), "held-out": split("heldout"), "held-out B": split("heldoutb")}
    results["dataset"] = {
        s: {
            "memories": len(m),
            "queries": {sl: sum(q["slice"] == sl for q in qs) for sl in (*SLICES, "none")},
        }
        for s, (m, qs) in splits.items()
    }
    by_emb: dict[str, list[Design]] = {}
    for d in DESIGNS:
        by_emb.setdefault(d.embedder, []).append(d)
    rows_by: dict[tuple[str, str, str], dict[str, dict[str, float]]] = {}
    for ename, designs in by_emb.items():
        for sname, (memories, queries) in splits.items():
            with open_store(emb[ename], units(memories)) as store:
                for d in designs:
                    for mode in MODES:
                        t0 = time.perf_counter()
                        asked = queries
                        if mode == "inferred":
                            asked = [dict(q, task_type=INFER(q["query"])) for q in queries]  # type: ignore[misc]
                        rows = run_queries(retriever_for(store, d, typed=mode != "relevance"), asked)
                        rows_by[(d.name, sname, mode)] = rows
                        print(f"{d.name:28s} {sname:8s} {mode:9s} {time.perf_counter() - t0:.1f}s", flush=True)
    for d in DESIGNS:
        entry: dict[str, Any] = {"name": d.name, "design": d.describe()}
        for sname, (_, queries) in splits.items():
            for mode in MODES:
                entry[f"{sname}.{mode}"] = summarise(rows_by[(d.name, sname, mode)], queries)
        tq = splits["tuning"][1]
        rel_t = rows_by[(d.name, "tuning", "relevance")]
        entry["floor.tuning_distributions"] = floor_stats(rel_t, tq)
        floor = choose_floor(rel_t, tq)
        entry["floor.chosen_on_tuning"] = floor
        entry["floor.tuning"] = apply_floor(rel_t, tq, floor)
        for held in ("held-out", "held-out B"):
            hq = splits[held][1]
            rel_h = rows_by[(d.name, held, "relevance")]
            entry[f"floor.{held}"] = apply_floor(rel_h, hq, floor)
            entry[f"floor.{held}_distributions"] = floor_stats(rel_h, hq)
            entry[f"misses.{held}"] = {
                q["id"]: round(rel_h[q["id"]]["mrr"], 3) for q in hq if q["relevant"] and rel_h[q["id"]]["mrr"] < 1.0
            }
        entry["floor.sensitivity"] = {
            f"{f:.2f}": {
                sname: apply_floor(rows_by[(d.name, sname, "relevance")], qs, f) for sname, (_, qs) in splits.items()
            }
            for f in FLOOR_GRID
        }
        results["designs"].append(entry)
    out = ROOT / "results"
    (out / "recall_quality.json").write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    (out / "recall_quality.md").write_text(render(results), encoding="utf-8")
    print(render(results))


def render(results: dict[str, Any]) -> str:
    ds = results["dataset"]
    lines = [
        "# Recall quality per language slice (benchmarks/recall_quality.py)",
        "",
        *(
            f"{name}: {ds[name]['memories']} lessons; queries "
            + ", ".join(f"{k} {v}" for k, v in ds[name]["queries"].items())
            + "."
            for name in ds
        ),
        "Real MemoryStore + HindsightRetriever with the candidate embedder. `relevance` = fused relevance only "
        "(no task type); `typed` = full weighted score with the labelled task type; `inferred` (when this build "
        "has `taxonomy.infer_task_type`) = full score with the task type inferred from the query text, what "
        "agents get. Cells: MRR@10 / R@5.",
        f"New default: **{results['new_default']}**.",
        "",
    ]
    for sname in ("held-out B", "held-out", "tuning"):
        for mode in MODES:
            lines += [
                f"## {sname}, {mode}",
                "",
                "| design | all | " + " | ".join(SLICES) + " |",
                "|---|---|" + "---|" * len(SLICES),
            ]
            for e in results["designs"]:
                s = e[f"{sname}.{mode}"]
                cells = [f"{s[g]['mrr']:.3f} / {s[g]['r@5']:.3f}" for g in ("all", *SLICES)]
                lines.append(f"| {e['name']} ({e['design']}) | " + " | ".join(cells) + " |")
            lines.append("")
    lines += [
        "## Relevance floor (min_relevance), chosen on tuning, applied to held-out",
        "",
        "No-answer queries that get no block (all results below the floor) / answers kept (the first relevant "
        "memory in the top 5 stays at or above the floor, among queries whose answer was in the top 5).",
        "",
        "| design | floor | tuning: no block / kept | held-out: no block / kept | held-out B: no block / kept "
        "| tuning weakest answer found / p05 | tuning no-answer max |",
        "|---|---|---|---|---|---|---|",
    ]
    for e in results["designs"]:
        t, h, b, dist = e["floor.tuning"], e["floor.held-out"], e["floor.held-out B"], e["floor.tuning_distributions"]
        lines.append(
            f"| {e['name']} | {e['floor.chosen_on_tuning']:.2f} | {t['no_answer_without_block']} / "
            f"{t['answerable_keeping_answer']} | {h['no_answer_without_block']} / {h['answerable_keeping_answer']} | "
            f"{b['no_answer_without_block']} / {b['answerable_keeping_answer']} | "
            f"{dist['first_relevant_in_top5']['min']:.3f} / {dist['first_relevant_in_top5']['p05']:.3f} | "
            f"{dist['no_answer_best']['max']:.3f} |"
        )
    new = next(e for e in results["designs"] if e["name"] == results["new_default"])
    lines += [
        "",
        f"### Floor sensitivity for the new default ({new['name']}); not used to choose the floor",
        "",
        "| floor | " + " | ".join(f"{s}: no block / kept" for s in ("tuning", "held-out", "held-out B")) + " |",
        "|---|---|---|---|",
    ]
    for f, by in new["floor.sensitivity"].items():
        cells = [
            f"{by[s]['no_answer_without_block']} / {by[s]['answerable_keeping_answer']}"
            for s in ("tuning", "held-out", "held-out B")
        ]
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--phase", choices=("tune", "report"), default="report")
    args = parser.parse_args()
    tune() if args.phase == "tune" else report()


if __name__ == "__main__":
    main()
