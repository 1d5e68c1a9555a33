"""How the default design and fusion weights were chosen: a grid over the tuning data only.

For every query the signals are computed once with the real components (MiniLM
and USE vectors, the store's BM25 normalised by the query's idf mass, the
query's and each memory's script from ``langchain_hindsight.recall.fusion``), then
every grid point is scored the way the retriever fuses them:

* ``routed`` (script-routed MiniLM + USE in one vector, MiniLM share ``p``):
  Latin–Latin cosine ``p·cos_minilm + (1 − p)·cos_use``, CJK–CJK ``cos_use``,
  across scripts ``sqrt(1 − p)·cos_use``;
* ``use``: USE alone.

Relevance = ``alpha·cos + (1 − alpha)·share`` with ``alpha`` by the query's
script and, for a memory in the other script, ``share = max(bm25_share,
min(1, gain·cos))``. Every memory is a candidate here (the retriever takes the
union of each arm's top ``3k``), so numbers can differ slightly from
recall_quality.py, which re-scores the chosen designs end to end.

Selection rule: the highest macro MRR over the four language slices among
grid points whose en→en MRR is within 0.01 of the old default's and whose
English conversational recall@10 is at least the old default's on every
conversation split given. Two runs:

* ``tuning``: the tuning lessons + the tuning dialogues (what the design was chosen on);
* ``tuning+heldout``: the same rule after the first held-out split had been scored once, pooled with
  tuning, to check the choice (it picks the same point). Held-out B is never read here.

Writes results/fusion_sweep.json and .md.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/fusion_sweep.py
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections.abc import Sequence
from typing import Any

import numpy as np
from _candidates import ROOT, build_embedders, open_store  # type: ignore[import-not-found]
from conversational_recall import data as conversation_data  # type: ignore[import-not-found]
from recall_quality import SLICES, split, units  # type: ignore[import-not-found]

from langchain_hindsight.recall import query_script
from langchain_hindsight.types import MemoryUnit

GRID_ALPHA = tuple(round(0.1 * i, 1) for i in range(1, 10))
GRID_GAIN = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
GRID_P = (0.7, 0.8, 0.9)
Signals = tuple[Any, Any, Any, Any, bool]


def signals(emb: dict[str, Any], memories: Sequence[MemoryUnit], queries: Sequence[dict[str, Any]], field: str):  # type: ignore[no-untyped-def]
    docs = [u.content for u in memories]
    dm = np.array(emb["minilm"].embed_documents(docs))
    du = np.array(emb["use-m3"].embed_documents(docs))
    dm /= np.linalg.norm(dm, axis=1, keepdims=True)
    du /= np.linalg.norm(du, axis=1, keepdims=True)
    cjk_doc = np.array([query_script(d) == "cjk" for d in docs])
    out: dict[str, Signals] = {}
    with open_store(emb["minilm"], memories) as store:
        for q in queries:
            text = q[field]
            qm = np.array(emb["minilm"].embed_query(text))
            qu = np.array(emb["use-m3"].embed_query(text))
            lex = dict(store.lexical_search(text, k=len(docs), normalize=True))
            cjk = query_script(text) == "cjk"
            share = np.array([lex.get(u.memory_id, 0.0) for u in memories])
            out[q["id"]] = (dm @ (qm / np.linalg.norm(qm)), du @ (qu / np.linalg.norm(qu)), share, cjk != cjk_doc, cjk)
    return [u.memory_id for u in memories], out


def relevance(sig: Signals, point: tuple[str, float, float, float, float]) -> Any:
    cm, cu, share, other_script, cjk = sig
    design, alpha_latin, alpha_cjk, gain, p = point
    alpha = alpha_cjk if cjk else alpha_latin
    if design == "routed":
        same = cu if cjk else p * cm + (1 - p) * cu
        cos = np.clip(np.where(other_script, math.sqrt(1 - p) * cu, same), 0, 1)
    elif design == "use":
        cos = np.clip(cu, 0, 1)
    else:
        cos = np.clip(cm, 0, 1)
    share = np.where(other_script, np.maximum(share, np.minimum(1, gain * cos)), share)
    return alpha * cos + (1 - alpha) * share


def lesson_scores(sets: list[Any], point: Any) -> dict[str, tuple[float, float]]:
    per: dict[str, list[tuple[float, float]]] = {s: [] for s in SLICES}
    for queries, ids, sig in sets:
        for q in queries:
            if not q["relevant"]:
                continue
            order = np.argsort(-relevance(sig[q["id"]], point), kind="stable")
            top = [ids[i] for i in order[:10]]
            rel = set(q["relevant"])
            first = next((k for k, i in enumerate(top, 1) if i in rel), 0)
            per[q["slice"]].append((1 / first if first else 0.0, len(set(top[:5]) & rel) / min(5, len(rel))))
    return {s: (statistics.fmean(x for x, _ in v), statistics.fmean(y for _, y in v)) for s, v in per.items()}


def conversation_scores(convs: list[Any], point: Any) -> list[float]:
    out = []
    for questions, ids, sig in convs:
        r10 = []
        for q in questions:
            order = np.argsort(-relevance(sig[q["id"]], point), kind="stable")
            top = {ids[i] for i in order[:10]}
            r10.append(len(set(q["evidence"]) & top) / len(q["evidence"]))
        out.append(round(100 * statistics.fmean(r10), 1))
    return out


def sweep(emb: dict[str, Any], lesson_splits: Sequence[str], conv_splits: Sequence[str]) -> dict[str, Any]:
    sets = []
    for name in lesson_splits:
        memories, queries = split(name)
        ids, sig = signals(emb, units(memories), queries, "query")
        sets.append((queries, ids, sig))
    convs = []
    conv = conversation_data()
    for name in conv_splits:
        memories, questions = conv[name]
        ids, sig = signals(emb, memories, questions, "question")
        convs.append((questions, ids, sig))
    old = ("minilm", 0.3, 0.3, 0.0, 1.0)
    old_l, old_c = lesson_scores(sets, old), conversation_scores(convs, old)
    rows = []
    points = [("routed", a, c, g, p) for a, c, g, p in itertools.product(GRID_ALPHA, GRID_ALPHA, GRID_GAIN, GRID_P)]
    points += [("use", a, c, g, 1.0) for a, c, g in itertools.product(GRID_ALPHA, GRID_ALPHA, GRID_GAIN)]
    for point in points:
        sc = lesson_scores(sets, point)
        rows.append((statistics.fmean(sc[s][0] for s in SLICES), point, sc))
    rows.sort(key=lambda r: -r[0])
    eligible = []
    for macro, point, sc in rows:
        if sc["en→en"][0] < old_l["en→en"][0] - 0.01:
            continue
        conv_r = conversation_scores(convs, point)
        if any(c < o for c, o in zip(conv_r, old_c, strict=True)):
            continue
        eligible.append({"point": point, "macro_mrr": round(macro, 4), "slices": sc, "conversation_r@10": conv_r})
        if len(eligible) >= 10:
            break
    best_use = next(
        (
            {"point": p, "macro_mrr": round(m, 4), "slices": s, "conversation_r@10": conversation_scores(convs, p)}
            for m, p, s in rows
            if p[0] == "use" and s["en→en"][0] >= old_l["en→en"][0] - 0.01
        ),
        None,
    )
    return {
        "lesson_splits": list(lesson_splits),
        "conversation_splits": list(conv_splits),
        "old_default": {"slices": old_l, "conversation_r@10": old_c},
        "chosen": eligible[0] if eligible else None,
        "top_eligible": eligible,
        "best_use_only_ignoring_conversation": best_use,
    }


def fmt(entry: dict[str, Any]) -> str:
    sl = " ".join(f"{s} {entry['slices'][s][0]:.3f}/{entry['slices'][s][1]:.2f}" for s in SLICES)
    return f"{entry['point']} macro {entry['macro_mrr']:.3f} | {sl} | conv R@10 {entry['conversation_r@10']}"


def main() -> None:
    emb = build_embedders(("minilm", "use-m3"))
    results = {
        "tuning": sweep(emb, ["recall"], ["tuning"]),
        "tuning+heldout": sweep(emb, ["recall", "heldout"], ["tuning", "heldout"]),
    }
    (ROOT / "results" / "fusion_sweep.json").write_text(
        json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8"
    )
    lines = [
        "# Fusion sweep (benchmarks/fusion_sweep.py)",
        "",
        "Point = (embedder design, alpha latin, alpha cjk, "
        "cross-script gain, MiniLM share p). Cells: MRR@10 / R@5 per slice.",
        "",
    ]
    for name, r in results.items():
        old = {
            "point": ("minilm", 0.3, 0.3, 0.0, 1.0),
            "macro_mrr": statistics.fmean(r["old_default"]["slices"][s][0] for s in SLICES),
            **r["old_default"],
        }
        lines += [f"## {name}", "", f"- old default: {fmt(old)}", f"- **chosen**: {fmt(r['chosen'])}"]
        lines += [f"- {fmt(e)}" for e in r["top_eligible"][1:6]]
        if r["best_use_only_ignoring_conversation"]:
            lines.append(
                f"- best USE-only (conversation not required): {fmt(r['best_use_only_ignoring_conversation'])}"
            )
        lines.append("")
    (ROOT / "results" / "fusion_sweep.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
