"""Lifecycle: decay, archive, merge, review and usage reports.

* :mod:`~langchain_hindsight.lifecycle.maintenance`: :class:`Lifecycle`, the maintenance pass;
* :mod:`~langchain_hindsight.lifecycle.policy`: :class:`LifecyclePolicy` and the reports a pass returns;
* the usage report (:class:`UsageReport`) is built in a private module and public from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.lifecycle._usage import UsageReport
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
    "Lifecycle": ".maintenance",
    "LifecyclePolicy": ".policy",
    "MaintenanceReport": ".policy",
    "MergeReport": ".policy",
    "ReviewReport": ".policy",
    "UsageReport": "._usage",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "ArchiveReport",
    "DecayReport",
    "Lifecycle",
    "LifecyclePolicy",
    "MaintenanceReport",
    "MergeReport",
    "ReviewReport",
    "UsageReport",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
