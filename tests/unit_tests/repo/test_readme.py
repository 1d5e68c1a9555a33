"""README.md and docs/*.md cannot drift: their examples run, their numbers come from the benchmarks.

The conventions are described in docs/development.md ("Writing docs"):

* a fenced block right after a ``<!-- runnable -->`` line is executed here: a page's runnable
  ``python`` blocks run in order in one namespace (like a notebook), in a fresh working directory;
  its runnable ``bash`` blocks run each line with ``hindsight`` as ``python -m langchain_hindsight.cli``
  and must exit 0; a comment ``# → TEXT`` in a runnable python block says the block prints TEXT, and
  the test checks that it does;
* every other ``python`` block is either executed by a feature test that names its page
  (``docs/<page>.md``), or follows a ``<!-- not-run: reason -->`` line;
* measured numbers live only between ``<!-- results: ... -->`` markers, filled by docs/build_readme.py.
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
TESTS = ROOT / "tests"


def _builder() -> Any:
    spec = importlib.util.spec_from_file_location("build_readme", ROOT / "docs" / "build_readme.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _builder()
PAGES: list[Path] = BUILD.pages()
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^```$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    page: Path
    lang: str
    code: str
    line: int
    marker: str  # the HTML comment on the line before the fence, or ""

    @property
    def runnable(self) -> bool:
        return self.marker == "<!-- runnable -->"

    @property
    def label(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for m in _FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        marker = before if before.startswith("<!--") else ""
        line = text.count("\n", 0, m.start()) + 2
        found.append(Block(page, m["lang"], m["code"], line, marker))
    return found


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_readme_examples_cover_every_use_case() -> None:
    readme = ROOT / "README.md"
    code = "\n".join(b.code for b in blocks(readme) if b.runnable)
    for use in ("hs.middleware()", "hs.wrap(", "HindsightRetriever(", "hs.memory()", "ScopedMemory(", "hindsight "):
        assert use in code, use
    assert "scripted_model" in code  # offline: no API key needed to run the README


def test_every_python_example_is_executed_somewhere() -> None:
    """A python block is runnable here, run by a feature test that names its page, or says why not."""
    tests_text = "\n".join(p.read_text(encoding="utf-8") for p in TESTS.rglob("*.py") if p.name != Path(__file__).name)
    unexecuted = [
        b.label
        for page in PAGES
        for b in blocks(page)
        if b.lang == "python"
        and not b.runnable
        and not b.marker.startswith("<!-- not-run:")
        and f"docs/{page.name}" not in tests_text
        and f'"{page.name}"' not in tests_text
    ]
    assert unexecuted == []


# --------------------------------------------------------------------------- the quick start
def test_quick_start_has_exactly_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count("\n## Quick start") == 1
    assert "Quickstart" not in readme
    head, section = readme.split("## Quick start", 1)
    assert len(head.splitlines()) < 15  # on the first screen
    section = section.split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo:", makefile, re.M)
    assert re.search(r"^test:", makefile, re.M)
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_is_short() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) < 200


# ------------------------------------------------------------------------------------ numbers
def test_pages_are_up_to_date() -> None:
    stale = [str(p.relative_to(ROOT)) for p, text in BUILD.build().items() if p.read_text(encoding="utf-8") != text]
    assert stale == [], "run: python docs/build_readme.py"


_MEASURED = re.compile(
    r"\b\d+(?:[.,]\d+)?\s?(?:ms|µs|s|MiB|MB|GiB|GB)\b"  # a time or a size
    r"|\b\d+(?:\.\d+)?[×x](?!\w)"  # a ratio such as 2.5× or 3x
    r"|texts/s"
)


def _prose(text: str) -> str:
    return _FENCE.sub("", BUILD.outside_markers(text))


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_no_measured_number_is_typed_by_hand(page: Path) -> None:
    typed = _MEASURED.findall(_prose(page.read_text(encoding="utf-8")))
    assert typed == [], "measured numbers go between <!-- results: ... --> markers (docs/build_readme.py)"


def test_the_detector_finds_typed_numbers() -> None:
    for typed in ("a query takes about 4 ms", "2.5× faster", "about 300 texts/s", "a 2 GB venv", "in 6 s"):
        assert _MEASURED.search(_prose(typed)), typed
    for rule in ("confidence × 0.5", "3 × k", "every 30 days", "`max_lines=8`", "over 45%"):
        assert not _MEASURED.search(_prose(rule)), rule


def test_benchmark_tables_come_from_the_results_files() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    markers = list(BUILD.MARKER.finditer(page))
    assert len(markers) >= 8
    for m in markers:
        table = BUILD.render(m["name"], m["heading"])
        assert table.startswith("|")
        assert table in m["body"], m["name"]
    redteam = (ROOT / "docs" / "storage.md").read_text(encoding="utf-8")
    assert BUILD.redteam_table() in redteam


def test_a_hand_edited_table_is_caught() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    first = next(BUILD.MARKER.finditer(page))
    row = first["body"].strip().splitlines()[-1]
    edited = page.replace(row, re.sub(r"\d", "9", row), 1)
    assert edited != page
    assert BUILD.expand(edited) == page


# ------------------------------------------------------------------------------- links, words
_LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def _slug(heading: str) -> str:
    text = heading.strip().lower().replace("`", "")
    text = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_links_resolve(page: Path) -> None:
    broken = []
    for m in _LINK.finditer(_FENCE.sub("", page.read_text(encoding="utf-8"))):
        target = m["target"]
        if re.match(r"[a-z]+:", target):
            continue  # an external address
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        missing_anchor = bool(anchor) and resolved.suffix == ".md" and anchor not in _anchors(resolved)
        if not resolved.exists() or missing_anchor:
            broken.append(target)
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_no_section_citations(page: Path) -> None:
    """The article is cited by title; a rule is stated, never pointed at as "seed §x.y"."""
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"\bseed\b|§", text)


@pytest.mark.parametrize("notebook", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_no_section_citations_in_notebooks(notebook: Path) -> None:
    """The notebooks' prose states the rule too (their markdown cells; outputs are computed)."""
    import json

    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    prose = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert prose
    assert not re.search(r"\bseed\b|§", prose)


def test_every_docs_page_is_listed_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in PAGES[1:] if f"(docs/{p.name})" not in readme]
    assert missing == []


# ------------------------------------------------------------------- documented defaults
def _fmt(value: float) -> str:
    return f"{value:g}"


def test_documented_defaults_are_the_codes() -> None:
    """The rules the pages state with numbers are the code's defaults (a changed default fails here)."""
    from langchain_hindsight import ScoringWeights
    from langchain_hindsight.lifecycle.policy import LifecyclePolicy
    from langchain_hindsight.recall.ranking import DEFAULT_MIN_RELEVANCE
    from langchain_hindsight.store import ConfidencePolicy

    c, life, w = ConfidencePolicy(), LifecyclePolicy(), ScoringWeights()
    period, idle = _fmt(life.decay_period_days), _fmt(life.archive_idle_days)
    stated = {
        "docs/concepts.md": [
            f"(+{_fmt(c.success_delta)})",
            f"(−{_fmt(c.failure_delta)})",
            f"(× {_fmt(c.repeat_factor)})",
            f"within {_fmt(c.repeat_window.total_seconds() / 3600)} hours either side",
        ],
        "docs/adapters.md": [
            f"(success +{_fmt(c.success_delta)}, failure −{_fmt(c.failure_delta)})",
            f"(confidence × {_fmt(c.rejection_factor)})",
        ],
        "docs/recall.md": [
            f"`DEFAULT_MIN_RELEVANCE` ({_fmt(DEFAULT_MIN_RELEVANCE)})",
            f"score = ({_fmt(w.similarity)}·relevance + {_fmt(w.task_type)}·[task type matches] "
            f"+ {_fmt(w.confidence)}·confidence",
            f"min(access_count/{_fmt(w.access_scale)}, {_fmt(w.access_cap)}) + {_fmt(w.source)}·source_trust)",
            f"× max({_fmt(w.time_floor)}, 1 − days_since_created/{_fmt(w.time_horizon_days)})",
        ],
        "docs/lifecycle.md": [
            f"confidence × {_fmt(life.decay_factor)} for every full {period} days without access",
            f"confidence < {_fmt(life.archive_below)} and idle > {idle} days",
            f"≥ {_fmt(life.merge_threshold)} similar",
            f"`review(window_days={_fmt(life.review_window_days)}, now=)`",
            f"with at most {life.review_max_runs} runs in the prompt",
            f"(confidence capped at {_fmt(life.review_confidence_cap)})",
        ],
    }
    missing = [
        (page, text)
        for page, texts in stated.items()
        for text in texts
        if text not in (ROOT / page).read_text(encoding="utf-8").replace("\n", " ")
    ]
    assert missing == []


_VARIABLE = re.compile(r"\b(?:HINDSIGHT|OPENAI)_[A-Z_]+\b|\bXDG_CACHE_HOME\b")


def test_every_environment_variable_read_is_documented() -> None:
    """The variables the code names are in docs/configuration.md, and it names no other of ours."""
    code = "\n".join(
        p.read_text(encoding="utf-8")
        for folder in ("langchain_hindsight", "hindsight_demo")
        for p in (ROOT / folder).rglob("*.py")
    )
    name = r"[\"']((?:HINDSIGHT|OPENAI)_[A-Z_]+|XDG_CACHE_HOME)[\"']"
    # a constant holding the name (settings.CACHE_DIR = "HINDSIGHT_CACHE_DIR"), or a direct read
    in_code = set(re.findall(r"^\w+ = " + name, code, re.M)) | set(
        re.findall(r"(?:environ\.get\(|environ\[|getenv\()" + name, code)
    )
    documented = set(_VARIABLE.findall((ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")))
    assert {"HINDSIGHT_PATH", "HINDSIGHT_CACHE_DIR"} <= in_code
    assert in_code - documented == set()
    assert {v for v in documented if v.startswith("HINDSIGHT_")} - in_code == set()
