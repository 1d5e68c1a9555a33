"""Recall: candidate fusion, the weighted score, the recall engine, the retriever and the injected block.

* :mod:`~langchain_hindsight.recall.retriever`: :class:`HindsightRetriever`, a LangChain retriever;
* :mod:`~langchain_hindsight.recall.engine`: one recall (:class:`RecallResult`, :class:`RecallSettings`);
* :mod:`~langchain_hindsight.recall.fusion`: dense and lexical candidates fused (:func:`fuse`); the
  query's script (:func:`query_script`) and its :class:`FusionWeights` are public from here;
* :mod:`~langchain_hindsight.recall.ranking`: the relevance floor (:class:`FloorRule`);
* :mod:`~langchain_hindsight.recall.scoring`: the weighted score (:class:`ScoringWeights`);
* :mod:`~langchain_hindsight.recall.task_type`: the task-type classifier;
* :mod:`~langchain_hindsight.recall.injection`: the ``[相关经验]`` block (:func:`format_experiences`);
  its size limits (:func:`check_block_size`) are public from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight._script import FusionWeights, Script, query_script
    from langchain_hindsight.recall._block import (
        DEFAULT_MAX_LINE_CHARS,
        MIN_BLOCK_CHARS,
        MIN_LINE_CHARS,
        check_block_size,
    )
    from langchain_hindsight.recall.engine import RecallResult, RecallSettings
    from langchain_hindsight.recall.fusion import Fusion, fuse
    from langchain_hindsight.recall.injection import DEFAULT_MAX_LINES, build_task_prompt, format_experiences
    from langchain_hindsight.recall.ranking import AUTO_FLOOR, DEFAULT_LOW_RELEVANCE, DEFAULT_MIN_RELEVANCE, FloorRule
    from langchain_hindsight.recall.retriever import HindsightRetriever, ServedRecord
    from langchain_hindsight.recall.scoring import ScoringWeights, score_memory
    from langchain_hindsight.recall.task_type import TaskClassifier

_EXPORTS: dict[str, str] = {
    "AUTO_FLOOR": ".ranking",
    "DEFAULT_LOW_RELEVANCE": ".ranking",
    "DEFAULT_MAX_LINES": ".injection",
    "DEFAULT_MAX_LINE_CHARS": "._block",
    "DEFAULT_MIN_RELEVANCE": ".ranking",
    "FloorRule": ".ranking",
    "Fusion": ".fusion",
    "FusionWeights": "langchain_hindsight._script",
    "HindsightRetriever": ".retriever",
    "MIN_BLOCK_CHARS": "._block",
    "MIN_LINE_CHARS": "._block",
    "RecallResult": ".engine",
    "RecallSettings": ".engine",
    "ScoringWeights": ".scoring",
    "Script": "langchain_hindsight._script",
    "ServedRecord": ".retriever",
    "TaskClassifier": ".task_type",
    "build_task_prompt": ".injection",
    "check_block_size": "._block",
    "format_experiences": ".injection",
    "fuse": ".fusion",
    "query_script": "langchain_hindsight._script",
    "score_memory": ".scoring",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "AUTO_FLOOR",
    "DEFAULT_LOW_RELEVANCE",
    "DEFAULT_MAX_LINES",
    "DEFAULT_MAX_LINE_CHARS",
    "DEFAULT_MIN_RELEVANCE",
    "MIN_BLOCK_CHARS",
    "MIN_LINE_CHARS",
    "FloorRule",
    "Fusion",
    "FusionWeights",
    "HindsightRetriever",
    "RecallResult",
    "RecallSettings",
    "ScoringWeights",
    "Script",
    "ServedRecord",
    "TaskClassifier",
    "build_task_prompt",
    "check_block_size",
    "format_experiences",
    "fuse",
    "query_script",
    "score_memory",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
