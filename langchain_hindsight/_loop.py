"""Compatibility alias: the per-task loop is :class:`langchain_hindsight.session.HindsightSession`.

``HindsightLoop(store, **options)`` is ``HindsightSession(store, **options)``.
"""

from __future__ import annotations

from langchain_hindsight.session import ErrorPolicy, HindsightSession, Served, new_run_id

__all__ = ["ErrorPolicy", "HindsightLoop", "Served", "new_run_id"]

HindsightLoop = HindsightSession
"""Alias of :class:`~langchain_hindsight.session.HindsightSession` (kept for code written against it)."""
