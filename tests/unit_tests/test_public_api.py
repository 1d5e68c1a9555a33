"""The public surface is static, small, and every exported name resolves."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import langchain_hindsight

PINNED = [  # the Public API block of the shared design notes: must stay importable from the root
    "MemoryUnit", "Trajectory", "Step", "MemoryStore", "ScoringWeights", "HindsightRetriever",
    "TrajectoryRecorder", "Reflector", "HindsightMiddleware", "HindsightMemory", "recall_node",
    "reflect_node", "with_hindsight", "format_experiences", "build_task_prompt", "Hindsight",
    "Lifecycle", "RunJournal", "HindsightError",
]  # fmt: skip

EXTRAS = [
    "ConfigurationError", "MemoryNotFoundError", "RunNotFoundError", "StoreLockedError", "__version__",
    "HindsightStore",
]  # fmt: skip
"""Names exported at the root beyond the pinned ones (errors a caller catches, the version, LangGraph's store)."""

EXPECTED = [  # sorted(PINNED + EXTRAS), written out: a change to the root's __all__ must change this list
    "ConfigurationError",
    "Hindsight",
    "HindsightError",
    "HindsightMemory",
    "HindsightMiddleware",
    "HindsightRetriever",
    "HindsightStore",
    "Lifecycle",
    "MemoryNotFoundError",
    "MemoryStore",
    "MemoryUnit",
    "Reflector",
    "RunJournal",
    "RunNotFoundError",
    "ScoringWeights",
    "Step",
    "StoreLockedError",
    "Trajectory",
    "TrajectoryRecorder",
    "__version__",
    "build_task_prompt",
    "format_experiences",
    "recall_node",
    "reflect_node",
    "with_hindsight",
]


def test_all_is_pinned_sorted_and_small() -> None:
    assert langchain_hindsight.__all__ == EXPECTED
    assert sorted(PINNED + EXTRAS) == EXPECTED  # nothing exported that is neither pinned nor a listed extra
    assert len(set(PINNED + EXTRAS)) == len(EXPECTED)  # and no name listed twice
    assert len(EXPECTED) <= 25


def test_every_name_resolves_from_its_module() -> None:
    for name in EXPECTED:
        value = getattr(langchain_hindsight, name)
        if name != "__version__":
            module = importlib.import_module(f"langchain_hindsight.{langchain_hindsight._EXPORTS[name]}")
            assert getattr(module, name) is value


def test_names_moved_off_the_root_still_import_from_it_and_their_module() -> None:
    for name, module_name in langchain_hindsight._ALSO_IMPORTABLE.items():
        assert name not in langchain_hindsight.__all__
        module = importlib.import_module(f"langchain_hindsight.{module_name}")
        with pytest.warns(DeprecationWarning, match=f"import it from langchain_hindsight.{module_name}"):
            via_root = getattr(langchain_hindsight, name)
        assert via_root is getattr(module, name)


def test_documented_errors_are_exported() -> None:
    from langchain_hindsight import RunNotFoundError, errors

    assert RunNotFoundError is errors.RunNotFoundError  # Hindsight.feedback documents it
    assert "RunNotFoundError" in (langchain_hindsight.hindsight.Hindsight.feedback.__doc__ or "")


def test_testing_module_is_public() -> None:
    from langchain_hindsight.testing import ReactiveToolModel, ScriptedToolModel, call, scripted_model

    model = scripted_model(call("lookup", q="x"), "done")
    assert isinstance(model, ScriptedToolModel)
    assert model.invoke("hi").tool_calls[0]["name"] == "lookup"
    assert model.invoke("hi").content == "done"
    assert issubclass(ReactiveToolModel, ScriptedToolModel)


def test_no_user_document_imports_the_test_suite() -> None:
    root = Path(__file__).resolve().parents[2]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    assert len(pages) > 1  # the README and at least one page under docs/: the scan below is not vacuous
    offending = [str(p.relative_to(root)) for p in pages if "from tests" in p.read_text(encoding="utf-8")]
    assert offending == []


def test_errors_subclass_the_builtins_they_refine() -> None:
    from langchain_hindsight import errors

    assert issubclass(errors.ConfigurationError, ValueError)
    assert issubclass(errors.InvalidMemoryError, ValueError)
    assert issubclass(errors.MemoryNotFoundError, KeyError)
    assert issubclass(errors.RunNotFoundError, KeyError)
    assert issubclass(errors.StoreLockedError, RuntimeError)
    assert errors.HindsightError.__bases__ == (Exception,)
    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == errors.__name__
    }
    assert defined == set(errors.__all__)  # every error the module defines is exported, and only those
    unrefined = []
    for name in errors.__all__:
        error = getattr(errors, name)
        assert issubclass(error, errors.HindsightError), name
        # every error below the root also refines a builtin (ValueError, KeyError, ...), directly or through
        # its parent: Exception itself does not count
        builtins_refined = [
            c for c in error.__mro__ if c.__module__ == "builtins" and c not in (Exception, BaseException, object)
        ]
        if error is not errors.HindsightError and not builtins_refined:
            unrefined.append(name)
    assert unrefined == []
