"""langchain-hindsight: experience memory for LangChain and LangGraph agents.

After each task the agent distils what it learned into memory units; before the
next similar task it recalls the few that matter as a ``[相关经验]`` block.

Public names are imported lazily, so ``import langchain_hindsight`` is cheap and
optional extras (``langchain-classic``) are only needed for what uses them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_hindsight.capture import TrajectoryRecorder
    from langchain_hindsight.embeddings import LocalEmbeddings
    from langchain_hindsight.errors import (
        ConfigurationError,
        HindsightError,
        InvalidMemoryError,
        MemoryNotFoundError,
        ReflectionError,
        StoreClosedError,
        StoreError,
        StoreLockedError,
    )
    from langchain_hindsight.graph import recall_node, reflect_node, with_hindsight
    from langchain_hindsight.hindsight import Hindsight
    from langchain_hindsight.injection import build_task_prompt, format_experiences
    from langchain_hindsight.journal import RunJournal, RunRecord
    from langchain_hindsight.lifecycle import Lifecycle, LifecyclePolicy
    from langchain_hindsight.memory import HindsightMemory
    from langchain_hindsight.middleware import HindsightMiddleware
    from langchain_hindsight.prompts import PromptTemplates, get_templates
    from langchain_hindsight.reflection import BackgroundReflector, Reflector
    from langchain_hindsight.retriever import HindsightRetriever
    from langchain_hindsight.scoring import ScoringWeights, score_memory
    from langchain_hindsight.store import ConfidencePolicy, MemoryStore
    from langchain_hindsight.taxonomy import TaskTypeVocabulary, normalize_task_type
    from langchain_hindsight.types import MemoryContext, MemoryUnit, ScoredMemory, Step, Trajectory

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "BackgroundReflector": "reflection",
    "ConfidencePolicy": "store",
    "ConfigurationError": "errors",
    "Hindsight": "hindsight",
    "HindsightError": "errors",
    "HindsightMemory": "memory",
    "HindsightMiddleware": "middleware",
    "HindsightRetriever": "retriever",
    "InvalidMemoryError": "errors",
    "Lifecycle": "lifecycle",
    "LifecyclePolicy": "lifecycle",
    "LocalEmbeddings": "embeddings",
    "MemoryContext": "types",
    "MemoryNotFoundError": "errors",
    "MemoryStore": "store",
    "MemoryUnit": "types",
    "PromptTemplates": "prompts",
    "ReflectionError": "errors",
    "Reflector": "reflection",
    "RunJournal": "journal",
    "RunRecord": "journal",
    "ScoredMemory": "types",
    "ScoringWeights": "scoring",
    "Step": "types",
    "StoreClosedError": "errors",
    "StoreError": "errors",
    "StoreLockedError": "errors",
    "TaskTypeVocabulary": "taxonomy",
    "Trajectory": "types",
    "TrajectoryRecorder": "capture",
    "build_task_prompt": "injection",
    "format_experiences": "injection",
    "get_templates": "prompts",
    "normalize_task_type": "taxonomy",
    "recall_node": "graph",
    "reflect_node": "graph",
    "score_memory": "scoring",
    "with_hindsight": "graph",
}

__all__ = [
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'langchain_hindsight' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"langchain_hindsight.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
