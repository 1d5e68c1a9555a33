"""How large the store is, and how much of the package copies data or shaves start-up time, at two commits.

Counted the same way at both commits, from git (``git show REF:PATH``), never from the working tree:

* **store**: every line (``wc -l``) of every ``.py`` file under ``langchain_hindsight/store/``;
* **machinery**: every line of the modules whose job is a copy of data the store already holds, or the
  start-up time of a command — listed in :data:`MACHINERY` by path pattern, whole files (a module that
  moves keeps its line in the table only if its new path matches a pattern; rename the pattern with it).

Run: ``.venv/bin/python benchmarks/store_size.py [--before REF] [--after REF]`` (default: ``c351316``, the
commit the store-simplification issue was read at, against ``HEAD``); writes ``results/store_size.{json,md}``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"

MACHINERY: dict[str, str] = {
    "langchain_hindsight/store/replica/*.py": "copies of the store's data recall reads instead of the backend",
    "langchain_hindsight/store/backend/chroma_file.py": "a reader of Chroma's private SQLite file (start-up)",
    "langchain_hindsight/cli/_search.py": "`hindsight search`'s quick path (start-up)",
    "langchain_hindsight/cli/_stats.py": "`hindsight stats`'s quick path (start-up)",
    "langchain_hindsight/embeddings/_use_cache.py": "marshalled tokenizer caches (start-up)",
}


def _files(ref: str) -> list[str]:
    out = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", ref, "langchain_hindsight"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [p for p in out.splitlines() if p.endswith(".py")]


def _lines(ref: str, path: str) -> int:
    text = subprocess.run(["git", "show", f"{ref}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return text.count("\n")


def measure(ref: str) -> dict[str, Any]:
    """Line counts at ``ref``: the store, the machinery per pattern (with its files), the package."""
    files = _files(ref)
    lines = {p: _lines(ref, p) for p in files}
    machinery = {pattern: {p: lines[p] for p in files if fnmatch.fnmatch(p, pattern)} for pattern in MACHINERY}
    commit = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    return {
        "ref": ref,
        "commit": commit,
        "package": sum(lines.values()),
        "store": sum(n for p, n in lines.items() if p.startswith("langchain_hindsight/store/")),
        "store_files": sum(1 for p in files if p.startswith("langchain_hindsight/store/")),
        "machinery": sum(sum(m.values()) for m in machinery.values()),
        "machinery_by_pattern": machinery,
    }


def render(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The Markdown table of the two counts."""
    rows = [
        "# Store size",
        "",
        f"Lines (`wc -l`) at `{before['commit']}` and `{after['commit']}`, counted from git the same way "
        "(`benchmarks/store_size.py`). Machinery: whole modules whose job is a copy of data the store already "
        "holds or a command's start-up time.",
        "",
        f"| what | {before['commit']} | {after['commit']} | target |",
        "|---|---|---|---|",
        f"| `store/` (lines) | {before['store']} | {after['store']} | ≤ 8000 |",
        f"| `store/` (files) | {before['store_files']} | {after['store_files']} | – |",
        f"| machinery (lines) | {before['machinery']} | {after['machinery']} | ≤ 1500 |",
        f"| package (lines) | {before['package']} | {after['package']} | – |",
    ]
    rows += [
        "",
        "| machinery pattern | why | " + before["commit"] + " | " + after["commit"] + " |",
        "|---|---|---|---|",
    ]
    for pattern, why in MACHINERY.items():
        b = sum(before["machinery_by_pattern"][pattern].values())
        a = sum(after["machinery_by_pattern"][pattern].values())
        rows.append(f"| `{pattern}` | {why} | {b} | {a} |")
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="c351316")
    parser.add_argument("--after", default="HEAD")
    args = parser.parse_args()
    before, after = measure(args.before), measure(args.after)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "store_size.json").write_text(json.dumps({"before": before, "after": after}, indent=1) + "\n")
    (RESULTS / "store_size.md").write_text(render(before, after), encoding="utf-8")
    print(render(before, after))


if __name__ == "__main__":
    main()
