"""langchain-hindsight: experience memory for LangChain and LangGraph agents.

After each task the agent distils what it learned into memory units; before the
next similar task it recalls the few that matter as a ``[相关经验]`` block.

Public names are imported lazily, so ``import langchain_hindsight`` is cheap and
optional extras (``langchain-classic``) are only needed for what uses them.

The root exports the facade (:class:`Hindsight`), the adapters, the store, the
unit, the retriever, the recorder, the reflector, the lifecycle, the journal and
the errors callers catch; everything else is imported from its module
(``langchain_hindsight.session.loop``, ``.embeddings``, ``.taxonomy``, ``.testing``, ...).
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_hindsight.adapters.graph import recall_node, reflect_node, with_hindsight
    from langchain_hindsight.adapters.langgraph_store import HindsightStore
    from langchain_hindsight.adapters.memory import HindsightMemory
    from langchain_hindsight.adapters.middleware import HindsightMiddleware
    from langchain_hindsight.capture.recorder import TrajectoryRecorder
    from langchain_hindsight.errors import (
        ConfigurationError,
        HindsightError,
        MemoryNotFoundError,
        RunNotFoundError,
        StoreLockedError,
    )
    from langchain_hindsight.hindsight import Hindsight
    from langchain_hindsight.journal import RunJournal
    from langchain_hindsight.lifecycle.maintenance import Lifecycle
    from langchain_hindsight.recall.injection import build_task_prompt, format_experiences
    from langchain_hindsight.recall.retriever import HindsightRetriever
    from langchain_hindsight.recall.scoring import ScoringWeights
    from langchain_hindsight.reflection.reflector import Reflector
    from langchain_hindsight.store.memory_store import MemoryStore
    from langchain_hindsight.types import MemoryUnit, Step, Trajectory

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "ConfigurationError": "errors",
    "Hindsight": "hindsight",
    "HindsightError": "errors",
    "HindsightMemory": "adapters.memory",
    "HindsightMiddleware": "adapters.middleware",
    "HindsightRetriever": "recall.retriever",
    "HindsightStore": "adapters.langgraph_store",
    "Lifecycle": "lifecycle.maintenance",
    "MemoryNotFoundError": "errors",
    "MemoryStore": "store.memory_store",
    "MemoryUnit": "types",
    "Reflector": "reflection.reflector",
    "RunJournal": "journal",
    "RunNotFoundError": "errors",
    "ScoringWeights": "recall.scoring",
    "Step": "types",
    "StoreLockedError": "errors",
    "Trajectory": "types",
    "TrajectoryRecorder": "capture.recorder",
    "build_task_prompt": "recall.injection",
    "format_experiences": "recall.injection",
    "recall_node": "adapters.graph",
    "reflect_node": "adapters.graph",
    "with_hindsight": "adapters.graph",
}
"""The public names (``__all__``) and the module each lives in."""

_ALSO_IMPORTABLE: dict[str, str] = {
    "BackgroundReflector": "reflection.background",
    "ConfidencePolicy": "confidence",
    "InvalidMemoryError": "errors",
    "LifecyclePolicy": "lifecycle.policy",
    "LocalEmbeddings": "embeddings.local",
    "MemoryContext": "types",
    "PromptTemplates": "prompts",
    "ReflectionError": "errors",
    "RunRecord": "runs",
    "ScoredMemory": "types",
    "StoreClosedError": "errors",
    "StoreError": "errors",
    "TaskTypeVocabulary": "taxonomy",
    "get_templates": "prompts",
    "normalize_task_type": "taxonomy",
    "score_memory": "recall.scoring",
}
"""Names that were once at the root: still importable from it with a :class:`DeprecationWarning` naming their
module (where they are documented); removed from the root in 0.2."""

__all__ = [
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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None and name in _ALSO_IMPORTABLE:
        module = _ALSO_IMPORTABLE[name]
        warnings.warn(  # not cached in globals(): every first use at a call site says where the name lives
            f"importing {name} from the langchain_hindsight root is deprecated and will stop working in 0.2: "
            f"import it from langchain_hindsight.{module}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(f"langchain_hindsight.{module}"), name)
    if module is None:
        raise AttributeError(f"module 'langchain_hindsight' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"langchain_hindsight.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
