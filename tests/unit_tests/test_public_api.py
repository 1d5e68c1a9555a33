"""The public surface is static, small, and every exported name resolves."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import langchain_hindsight

EXPECTED = [
    "ConfigurationError",
    "Hindsight",
    "HindsightError",
    "HindsightMemory",
    "HindsightMiddleware",
    "HindsightRetriever",
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

PINNED = [  # the Public API block of the shared design notes: must stay importable from the root
    "MemoryUnit", "Trajectory", "Step", "MemoryStore", "ScoringWeights", "HindsightRetriever",
    "TrajectoryRecorder", "Reflector", "HindsightMiddleware", "HindsightMemory", "recall_node",
    "reflect_node", "with_hindsight", "format_experiences", "build_task_prompt", "Hindsight",
    "Lifecycle", "RunJournal", "HindsightError",
]  # fmt: skip


def test_all_is_pinned_sorted_and_small() -> None:
    assert langchain_hindsight.__all__ == EXPECTED
    assert sorted(EXPECTED) == EXPECTED
    assert set(PINNED) <= set(EXPECTED)
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
        assert getattr(langchain_hindsight, name) is getattr(module, name)


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


def test_no_readme_section_imports_the_test_suite() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs" / "readme"
    for page in docs.glob("*.md"):
        assert "from tests" not in page.read_text(encoding="utf-8"), page.name


def test_import_is_cheap_and_does_no_work() -> None:
    code = "import sys, langchain_hindsight; print('chromadb' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False"]


def test_errors_subclass_the_builtins_they_refine() -> None:
    from langchain_hindsight import errors

    assert issubclass(errors.ConfigurationError, ValueError)
    assert issubclass(errors.InvalidMemoryError, ValueError)
    assert issubclass(errors.MemoryNotFoundError, KeyError)
    assert issubclass(errors.RunNotFoundError, KeyError)
    assert issubclass(errors.StoreLockedError, RuntimeError)
    assert issubclass(errors.HindsightError, Exception)
    for name in errors.__all__:
        error = getattr(errors, name)
        assert issubclass(error, errors.HindsightError)
        if error is not errors.HindsightError:  # every leaf also refines a builtin
            assert any(base is not errors.HindsightError and issubclass(base, Exception) for base in error.__bases__)
