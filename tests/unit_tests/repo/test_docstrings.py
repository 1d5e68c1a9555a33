"""The ``>>>`` examples in the package's docstrings run, and print what they say they print.

Every module of ``langchain_hindsight`` that has docstring examples is run with :mod:`doctest`
(``ELLIPSIS`` and ``NORMALIZE_WHITESPACE`` on), in a fresh working directory, offline.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import pytest

import langchain_hindsight

_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _module_names() -> list[str]:
    prefix = langchain_hindsight.__name__ + "."
    names = [langchain_hindsight.__name__]
    names += [m.name for m in pkgutil.walk_packages(langchain_hindsight.__path__, prefix)]
    return sorted(names)


def _with_examples() -> list[str]:
    """Modules whose source holds a ``>>>`` example (found without importing them)."""
    found = []
    for name in _module_names():
        spec = importlib.util.find_spec(name)
        assert spec is not None
        assert spec.origin is not None
        if ">>>" in Path(spec.origin).read_text(encoding="utf-8"):
            found.append(name)
    return found


MODULES = _with_examples()
LOADS_A_MODEL = {"langchain_hindsight.embeddings.local", "langchain_hindsight.embeddings.multilingual"}
"""Modules whose examples load a real embedder: the integration (slow) tier."""
CASES = [pytest.param(name, marks=pytest.mark.slow) if name in LOADS_A_MODEL else name for name in MODULES]


def test_the_package_has_docstring_examples() -> None:
    assert len(MODULES) >= 10
    assert set(MODULES) >= LOADS_A_MODEL


@pytest.mark.parametrize("name", CASES)
def test_docstring_examples_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder(exclude_empty=True).find(module, name) if t.examples]
    assert tests, f"{name} mentions >>> but doctest finds no example in its docstrings"
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    for test in tests:
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, f"{results.failed} of {results.attempted} docstring examples failed in {name}"


def test_package_text_states_rules_instead_of_citing_sections() -> None:
    """Docstrings, messages and help say what a rule is; none points at a section ("seed §3.4") users can't see."""
    root = Path(langchain_hindsight.__file__).parent
    citing = [
        f"{path.relative_to(root.parent)}:{number}"
        for path in sorted(root.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bseed\s*§|§\s*\d", line, re.IGNORECASE)
    ]
    assert citing == []
