"""The public surface is static and every exported name resolves."""

from __future__ import annotations

import importlib
import subprocess
import sys

import langchain_hindsight

EXPECTED = [
    "BackgroundReflector",
    "ConfidencePolicy",
    "ConfigurationError",
    "Hindsight",
    "HindsightError",
    "HindsightMemory",
    "HindsightMiddleware",
    "HindsightRetriever",
    "InvalidMemoryError",
    "Lifecycle",
    "LifecyclePolicy",
    "LocalEmbeddings",
    "MemoryContext",
    "MemoryNotFoundError",
    "MemoryStore",
    "MemoryUnit",
    "PromptTemplates",
    "ReflectionError",
    "Reflector",
    "RunJournal",
    "RunRecord",
    "ScoredMemory",
    "ScoringWeights",
    "Step",
    "StoreClosedError",
    "StoreError",
    "StoreLockedError",
    "TaskTypeVocabulary",
    "Trajectory",
    "TrajectoryRecorder",
    "__version__",
    "build_task_prompt",
    "format_experiences",
    "get_templates",
    "normalize_task_type",
    "recall_node",
    "reflect_node",
    "score_memory",
    "with_hindsight",
]


def test_all_is_pinned_and_sorted() -> None:
    assert langchain_hindsight.__all__ == EXPECTED
    assert sorted(EXPECTED) == EXPECTED


def test_every_name_resolves_from_its_module() -> None:
    for name in EXPECTED:
        value = getattr(langchain_hindsight, name)
        if name != "__version__":
            module = importlib.import_module(f"langchain_hindsight.{langchain_hindsight._EXPORTS[name]}")
            assert getattr(module, name) is value


def test_import_is_cheap_and_does_no_work() -> None:
    code = "import sys, langchain_hindsight; print('chromadb' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False"]


def test_errors_subclass_the_builtins_they_refine() -> None:
    from langchain_hindsight import errors

    assert issubclass(errors.ConfigurationError, ValueError)
    assert issubclass(errors.InvalidMemoryError, ValueError)
    assert issubclass(errors.MemoryNotFoundError, KeyError)
    assert issubclass(errors.StoreLockedError, RuntimeError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.HindsightError)
        assert not issubclass(errors.HindsightError, BaseException) or issubclass(errors.HindsightError, Exception)
