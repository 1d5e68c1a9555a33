"""Lifecycle: decay, archive, merge, review and usage reports.

* :mod:`~langchain_hindsight.lifecycle.maintenance`: :class:`Lifecycle`, the maintenance pass;
* :mod:`~langchain_hindsight.lifecycle.policy`: :class:`LifecyclePolicy` and the reports a pass returns;
* the usage report (:class:`UsageReport`, :class:`MemoryUsage`), the merge pass's reading of a namespace
  (:func:`active_with_vectors`) and the tag of a unit kept out of merging (:data:`KEPT_APART_TAG`) live in
  private modules and are public from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.lifecycle._merge import KEPT_APART_TAG, active_with_vectors
    from langchain_hindsight.lifecycle._usage import MemoryUsage, UsageReport
    from langchain_hindsight.lifecycle.maintenance import Lifecycle
    from langchain_hindsight.lifecycle.policy import (
        ArchiveReport,
        DecayReport,
        LifecyclePolicy,
        MaintenanceReport,
        MergeReport,
        ReviewReport,
    )

_EXPORTS: dict[str, str] = {
    "ArchiveReport": ".policy",
    "DecayReport": ".policy",
    "KEPT_APART_TAG": "._merge",
    "Lifecycle": ".maintenance",
    "LifecyclePolicy": ".policy",
    "MaintenanceReport": ".policy",
    "MemoryUsage": "._usage",
    "MergeReport": ".policy",
    "ReviewReport": ".policy",
    "UsageReport": "._usage",
    "active_with_vectors": "._merge",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "KEPT_APART_TAG",
    "ArchiveReport",
    "DecayReport",
    "Lifecycle",
    "LifecyclePolicy",
    "MaintenanceReport",
    "MemoryUsage",
    "MergeReport",
    "ReviewReport",
    "UsageReport",
    "active_with_vectors",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
