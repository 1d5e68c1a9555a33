"""Fill the measured numbers of README.md and docs/*.md from benchmarks/results/.

A page carries a measured number only between two markers::

    <!-- results: NAME.md # HEADING -->

    | ... |

    <!-- /results -->

``python docs/build_readme.py`` rewrites what lies between them, in place: the first Markdown table
of ``benchmarks/results/NAME.md`` (after the heading, or at the table whose first header cell,
starts with ``HEADING`` when one is given), exactly as the benchmark script wrote it.
``<!-- results: redteam.json -->`` renders the red-team counts of ``redteam.json`` against
``redteam_baseline.json``. Re-running a benchmark and then this script is the only way a number in
the docs changes: ``tests/unit_tests/repo/test_readme.py`` fails when a page differs from what this
script would write, and when a measured number (ms, µs, s, MiB, GB, ×) is typed outside the markers.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs"
OWNED_ELSEWHERE = {"DESIGN.md", "CHANGELOG.md"}  # written by hand, without generated tables (the changelog: history)

MARKER = re.compile(
    r"^<!-- results: (?P<name>[\w.-]+\.(?:md|json))(?: # (?P<heading>[^>]+?))? -->\n"
    r"(?P<body>.*?)"
    r"^<!-- /results -->$",
    re.M | re.S,
)

REDTEAM_CHANNELS = {
    "direct_add": "direct add (tool text, confidence 1.0, stuffed hidden fields)",
    "reflection": "reflection by a compromised model",
    "error_fix": "error → fix rule (payload in the tool's error)",
    "avoid": "avoid rule (payload in the run's error)",
    "unstable": "retry rule (payload in a transient error)",
    "user_feedback": "user feedback (trusted author: structure only)",
    "manual_add": "manual add (trusted author: structure only)",
    "access_claim": "access-count claims (up to 2⁶³)",
    "import": "import of tool-output units (confidence 0.95)",
    "mcp_remember": "MCP `remember` by an agent",
    "mcp_comment": "MCP `feedback` comment by an agent",
    "publish": "publish to a shared namespace",
    "tool_result": "a tool result passed on by the reflection model",
    "agent_answer": "an agent answer passed on by the reflection model",
    "store_put": "`HindsightStore` put",
}
_TRUSTED_AUTHORS = {"user_feedback", "manual_add"}  # "untrusted shown as trusted" does not apply to their own words


def pages() -> list[Path]:
    """Every page whose numbers this script fills: the README and the docs/ pages."""
    docs = sorted(p for p in DOCS.glob("*.md") if p.name not in OWNED_ELSEWHERE)
    return [ROOT / "README.md", *docs]


def _starts_table(line: str, heading: str) -> bool:
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    return line.startswith("|") and cells[0].startswith(heading)


def results_table(name: str, heading: str | None = None) -> str:
    """The first Markdown table of a results file (after ``heading`` when given)."""
    lines = (RESULTS / name).read_text(encoding="utf-8").splitlines()
    start = 0
    if heading:
        heading = heading.strip()
        start = next(
            i
            for i, line in enumerate(lines)
            if (line.startswith("#") and line.lstrip("#").strip().startswith(heading)) or _starts_table(line, heading)
        )
    first = next(i for i in range(start, len(lines)) if lines[i].startswith("|"))
    end = next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[first:end])


def redteam_table() -> str:
    """The red-team counts per channel, now and before the hardening (``benchmarks/redteam.py``)."""
    now = json.loads((RESULTS / "redteam.json").read_text(encoding="utf-8"))
    before = json.loads((RESULTS / "redteam_baseline.json").read_text(encoding="utf-8"))
    rows = [
        "| channel | attacks | structure changes | untrusted shown as trusted (top 5) | refused at the door "
        "| before: structure / untrusted |",
        "|---|---|---|---|---|---|",
    ]
    for key, label in REDTEAM_CHANNELS.items():
        n, b = now["per_channel"][key], before["per_channel"].get(key)
        trusted = key in _TRUSTED_AUTHORS
        untrusted = "—" if trusted else str(n["untrusted_as_trusted_top5"])
        was = (
            "— (new)"
            if b is None
            else f"{b['structure_changes']} / {'—' if trusted else b['untrusted_as_trusted_top5']}"
        )
        rows.append(f"| {label} | {n['attacks']} | {n['structure_changes']} | {untrusted} | {n['refused']} | {was} |")
    rows.append(
        f"| **total** | **{now['attacks']}** | **{now['structure_changes']}** | "
        f"**{now['untrusted_as_trusted_top5']}** | {now['refused']} | "
        f"{before['structure_changes']} / {before['untrusted_as_trusted_top5']} |"
    )
    return "\n".join(rows)


def render(name: str, heading: str | None = None) -> str:
    """What a marker stands for."""
    if name == "redteam.json":
        return redteam_table()
    if name.endswith(".json"):
        raise ValueError(f"no renderer for {name}: point the marker at a .md results file")
    return results_table(name, heading)


def expand(text: str) -> str:
    """``text`` with every marker region refilled from the results files."""

    def fill(m: re.Match[str]) -> str:
        opening = m.group(0).split("\n", 1)[0]
        return f"{opening}\n\n{render(m['name'], m['heading'])}\n\n<!-- /results -->"

    return MARKER.sub(fill, text)


def outside_markers(text: str) -> str:
    """``text`` without its generated regions (what a person typed)."""
    return MARKER.sub("", text)


def build() -> dict[Path, str]:
    """Every page as this script would write it."""
    return {page: expand(page.read_text(encoding="utf-8")) for page in pages()}


if __name__ == "__main__":
    for page, text in build().items():
        if page.read_text(encoding="utf-8") != text:
            page.write_text(text, encoding="utf-8")
            sys.stdout.write(f"updated {page.relative_to(ROOT)}\n")
