"""The relevance floor per slice: old absolute default vs the calibrated rule, on a tuning and a held-out split.

Since issue 33 the shipped default is the ranking-scope rule (``benchmarks/floor_recall.py``); this script
measures the previous default, the candidate-scope rule ``FloorRule(scope="candidate")`` (``PREVIOUS_FLOOR``).

Data (benchmarks/data/README.md says how it was written): ``floor_tuning_*.jsonl``
(80 memories, 199 queries; :data:`~langchain_hindsight.recall.ranking.AUTO_FLOOR` was
chosen on it), ``floor_heldout_*.jsonl`` (80 memories, 223 queries; never used to
choose anything, but read by the round that designed the rule) and ``floor_heldoutc_*.jsonl``
(40 memories, 120 queries; written before the second round measured anything, scored once). Memories are task lessons and conversational memory (a person's
preferences, facts and plans) in Chinese and English; queries are short tasks, long
multi-clause tasks and chat transcripts (the last turns joined, ``用户：…`` /
``User: …`` lines), same-language and cross-language, plus unrelated queries (hard ones
share vocabulary: 报表, 周报, data, report).

Each split is one real ``MemoryStore`` on the default embedder (script-routed MiniLM +
USE, offline) and the real ``HindsightRetriever`` with its defaults (``k=5``, task type
inferred). Per slice (form × ``zh`` / ``en`` / ``cross``): for related queries the share
whose labelled memory is among the served memories, for unrelated queries the share that
are served nothing (unrelated queries have no answer language: their slices are ``zh``
and ``en``). Floors compared: ``min_relevance=0.18`` (the old default) and ``"auto"``.

A fourth form, ``last turn``, is derived from every chat transcript: its last ``用户：`` /
``User:`` line alone, which is what the agent middleware and the graph node recalled with
before this round (the last human message); a transcript is what a caller
passing the conversation as one text sends. A fifth, ``user turns``, keeps the transcript's user
lines and drops the assistant's: what the agent middleware and the graph recall node now recall with
(``capture.messages.recall_query``: the last two human turns; every transcript here has two). For related queries the ``auto`` misses are split
by kind: ``floor`` (the memory is among the best ``k`` without a floor, the rule dropped it) and
``retrieval`` (not even ranked in the best ``k`` without a floor: a floor cannot serve it). The
``margins`` table gives, per slice, the median ``floor_margin`` of the labelled memory (related,
when ranked) and of the best candidate (unrelated): where the two overlap no threshold separates them.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/floor_calibration.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from langchain_hindsight._script import query_script  # noqa: E402
from langchain_hindsight.embeddings.multilingual import default_embeddings  # noqa: E402
from langchain_hindsight.recall.ranking import DEFAULT_MIN_RELEVANCE, FloorRule  # noqa: E402
from langchain_hindsight.recall.retriever import HindsightRetriever  # noqa: E402
from langchain_hindsight.store.memory_store import MemoryStore  # noqa: E402
from langchain_hindsight.types import MemoryUnit  # noqa: E402

SPLITS = (("tuning", "floor_tuning"), ("held-out", "floor_heldout"), ("held-out C", "floor_heldoutc"))
FORMS = ("short", "long", "dialogue", "last turn", "user turns")
SPEAKERS = ("用户：", "User:")
LANGS = ("zh", "en", "cross")
PREVIOUS_FLOOR = FloorRule(scope="candidate")
"""The default of the release before issue 33 (``"auto"`` then): the rule judged per candidate."""
FLOORS: tuple[tuple[str, float | FloorRule], ...] = (
    ("old default 0.18", DEFAULT_MIN_RELEVANCE),
    ("auto", PREVIOUS_FLOOR),
)
TARGET = 0.95


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (ROOT / "data" / name).read_text(encoding="utf-8").splitlines() if line]


def user_turns(transcript: str) -> list[str]:
    """The user lines of a chat transcript, in order, without their speaker label."""
    out = []
    for line in transcript.splitlines():
        for label in SPEAKERS:
            if line.startswith(label):
                out.append(line[len(label) :].strip())
    return out or [transcript.strip()]


def last_turn(transcript: str) -> str:
    """The last user line of a chat transcript, without its speaker label (what the middleware recalls with)."""
    return user_turns(transcript)[-1]


def memory_units(memories: list[dict]) -> list[MemoryUnit]:
    """The labelled memories as stored units (one confidence and source for all, so only relevance differs)."""
    return [
        MemoryUnit(
            memory_id=m["id"],
            task_type=m["task_type"],
            content=m["content"],
            kind="fact" if m["kind"] == "conversation" else "experience",
            confidence=0.7,
            source="manual",
        )
        for m in memories
    ]


def with_last_turns(queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The queries plus, per chat transcript, its last user turn (``last turn``) and its user lines (``user turns``)."""
    derived = [
        {**q, "id": f"{q['id']}-{suffix}", "form": form, "query": text}
        for q in queries
        if q["form"] == "dialogue"
        for suffix, form, text in (
            ("last", "last turn", last_turn(q["query"])),
            ("user", "user turns", "\n".join(user_turns(q["query"]))),
        )
    ]
    return queries + derived


def previous_margin(query: str, scored: Any) -> float:
    """The memory's evidence minus the threshold it needs under :data:`PREVIOUS_FLOOR` (``>= 0`` passes)."""
    b, script = scored.breakdown, query_script(query)
    blind = query_script(scored.memory.content) != script
    return float(PREVIOUS_FLOOR.margins([b["dense"]], [b["lexical"]], [blind], script)[0])


def median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def run_split(embeddings: Any, stem: str) -> dict[str, Any]:
    memories = load(f"{stem}_memories.jsonl")
    queries = with_last_turns(load(f"{stem}_queries.jsonl"))
    lang = {m["id"]: m["lang"] for m in memories}
    rows: dict[str, dict[str, list[bool]]] = {name: {} for name, _ in FLOORS}
    misses: dict[str, dict[str, int]] = {}
    margins: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(tmp, embeddings=embeddings) as store:
        store.add_many(memory_units(memories), dedupe=False)
        for name, floor in FLOORS:
            retriever = HindsightRetriever(store=store, k=5, min_relevance=floor, low_similarity_threshold=0.0)
            for q in queries:
                served = [m.memory.memory_id for m in retriever.recall(q["query"])]
                if q["relevant"]:
                    answer = lang[q["relevant"][0]]
                    key = f"{q['form']}/{q['lang'] if answer == q['lang'] else 'cross'}/related"
                    ok = any(r in served for r in q["relevant"])
                else:
                    key = f"{q['form']}/{q['lang']}/unrelated"
                    ok = not served
                rows[name].setdefault(key, []).append(ok)
        unfloored = HindsightRetriever(store=store, k=5, min_relevance=None, low_similarity_threshold=0.0)
        served_auto = HindsightRetriever(store=store, k=5, min_relevance=PREVIOUS_FLOOR, low_similarity_threshold=0.0)
        for q in queries:
            best = unfloored.recall(q["query"])
            if q["relevant"]:
                answer = lang[q["relevant"][0]]
                key = f"{q['form']}/{q['lang'] if answer == q['lang'] else 'cross'}/related"
                hit = [m for m in best if m.memory.memory_id in q["relevant"]]
                if hit:
                    margins.setdefault(key, []).append(previous_margin(q["query"], hit[0]))
                served = [m.memory.memory_id for m in served_auto.recall(q["query"])]
                if not any(r in served for r in q["relevant"]):
                    kind = "floor" if hit else "retrieval"
                    misses.setdefault(key, {"floor": 0, "retrieval": 0})[kind] += 1
            else:
                key = f"{q['form']}/{q['lang']}/unrelated"
                if best:
                    margins.setdefault(key, []).append(max(previous_margin(q["query"], m) for m in best))
    return {
        "memories": len(memories),
        "queries": len(queries),
        "unrelated": sum(1 for q in queries if not q["relevant"]),
        "slices": {name: {k: {"n": len(v), "rate": sum(v) / len(v)} for k, v in r.items()} for name, r in rows.items()},
        "auto_misses": misses,
        "margins": {k: {"n": len(v), "median": median(v)} for k, v in margins.items()},
    }


def cell(slices: dict[str, Any], key: str) -> str:
    s = slices.get(key)
    return "—" if s is None else f"{100 * s['rate']:.0f}% ({s['n']})"


def markdown(result: dict[str, Any]) -> str:
    rule = PREVIOUS_FLOOR
    lines = [
        "# Relevance floor per slice (benchmarks/floor_calibration.py)",
        "",
        f"Default embedder (script-routed MiniLM + USE), real MemoryStore + HindsightRetriever (k=5, task type inferred). "
        f"`auto` = `FloorRule`: same script `cosine + {rule.lexical_weight_cjk:g}·lexical share ≥ {rule.threshold_cjk:g}` "
        f"(zh query), `cosine + {rule.lexical_weight_latin:g}·lexical share ≥ {rule.threshold_latin:g}` (en query); "
        f"other script `cosine ≥ {rule.cross_script_cjk:g}` (zh query), `≥ {rule.cross_script:g}` (en query); "
        f"chosen on tuning only. Cells: related = right memory served; "
        f"unrelated = nothing served (query count). Target on held-out: ≥ {100 * TARGET:.0f}% / ≥ {100 * TARGET:.0f}%.",
        "",
    ]
    for split, _ in SPLITS:
        r = result["splits"][split]
        lines += [
            f"## {split}",
            "",
            f"{r['memories']} memories, {r['queries']} queries ({r['unrelated']} unrelated).",
            "",
            "| slice | related, old 0.18 | related, auto | unrelated, old 0.18 | unrelated, auto |",
            "|---|---|---|---|---|",
        ]
        old, new = r["slices"]["old default 0.18"], r["slices"]["auto"]
        met = sum(1 for v in new.values() if v["rate"] >= TARGET)
        lines[-4] += f" `auto` meets the {100 * TARGET:.0f} % target in {met} of {len(new)} slices."
        for form in FORMS:
            for lang in LANGS:
                rel, unrel = f"{form}/{lang}/related", f"{form}/{lang}/unrelated"
                lines.append(
                    f"| {form} {lang} | {cell(old, rel)} | {cell(new, rel)} | {cell(old, unrel)} | {cell(new, unrel)} |"
                )
        for name, slices in (("old 0.18", old), ("auto", new)):
            related = [v for k, v in slices.items() if k.endswith("/related")]
            unrelated = [v for k, v in slices.items() if k.endswith("/unrelated")]
            rate = sum(v["rate"] * v["n"] for v in related) / sum(v["n"] for v in related)
            silent = sum(v["rate"] * v["n"] for v in unrelated) / sum(v["n"] for v in unrelated)
            lines.append(f"| **all, {name}** | {100 * rate:.0f}% | | {100 * silent:.0f}% | |")
        lines += [
            "",
            f"### {split}: where `auto` falls short",
            "",
            "Related misses by kind (floor: ranked in the best 5 without a floor, dropped by the rule; retrieval: "
            "not ranked in the best 5 even without a floor) and the median `floor_margin` of the labelled memory "
            "(related, when ranked) and of the best candidate (unrelated); `>= 0` passes.",
            "",
            "| slice | related misses: floor | related misses: retrieval | median margin, related | "
            "median margin, unrelated |",
            "|---|---|---|---|---|",
        ]
        for form in FORMS:
            for lang in LANGS:
                miss = r["auto_misses"].get(f"{form}/{lang}/related", {"floor": 0, "retrieval": 0})
                has_related = f"{form}/{lang}/related" in new
                rel_m = r["margins"].get(f"{form}/{lang}/related", {}).get("median")
                unrel_m = r["margins"].get(f"{form}/{lang}/unrelated", {}).get("median")
                lines.append(
                    f"| {form} {lang} | {miss['floor'] if has_related else '—'} | "
                    f"{miss['retrieval'] if has_related else '—'} | "
                    f"{'—' if rel_m is None else f'{rel_m:+.3f}'} | {'—' if unrel_m is None else f'{unrel_m:+.3f}'} |"
                )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    start = time.perf_counter()
    embeddings = default_embeddings()
    result: dict[str, Any] = {"floor": {"auto": PREVIOUS_FLOOR.__repr__(), "old": DEFAULT_MIN_RELEVANCE}, "splits": {}}
    for split, stem in SPLITS:
        result["splits"][split] = run_split(embeddings, stem)
    result["seconds"] = round(time.perf_counter() - start, 1)
    out = ROOT / "results"
    (out / "floor_calibration.json").write_text(
        json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / "floor_calibration.md").write_text(markdown(result) + "\n", encoding="utf-8")
    print(markdown(result))


if __name__ == "__main__":
    main()
