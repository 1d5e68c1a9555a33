"""The per-task loop every adapter shares: serve, finish, feedback.

* :mod:`~langchain_hindsight.session.loop`: :class:`HindsightSession`;
* :mod:`~langchain_hindsight.session.config`: its options (:class:`SessionConfig`) and what feedback
  changed (:class:`FeedbackResult`);
* :mod:`~langchain_hindsight.session.source`: how an adapter finds its session (:func:`session_for`);
* :mod:`~langchain_hindsight.session.build`: the one place a session's parts are built and defaults
  filled (:func:`build_config`);
* which turns are corrections (:class:`CorrectionDetector`) and how a verdict is undone
  (:func:`revert_feedback`, for ``hindsight undo-feedback``) and what an agent did with each served memory
  (:func:`judge_uses`: used, set aside, unclear) live in private modules and are public from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.session._conversation import CorrectionDetector
    from langchain_hindsight.session._use import judge_uses
    from langchain_hindsight.session._verdict import revert_feedback
    from langchain_hindsight.session.build import build_config
    from langchain_hindsight.session.config import (
        AdapterOptions,
        ErrorPolicy,
        FeedbackResult,
        SessionConfig,
        SessionOptions,
        new_run_id,
    )
    from langchain_hindsight.session.loop import HindsightSession
    from langchain_hindsight.session.source import SessionOwner, SessionSource, session_for

_EXPORTS: dict[str, str] = {
    "AdapterOptions": ".config",
    "CorrectionDetector": "._conversation",
    "ErrorPolicy": ".config",
    "FeedbackResult": ".config",
    "HindsightSession": ".loop",
    "SessionConfig": ".config",
    "SessionOptions": ".config",
    "SessionOwner": ".source",
    "SessionSource": ".source",
    "build_config": ".build",
    "judge_uses": "._use",
    "new_run_id": ".config",
    "revert_feedback": "._verdict",
    "session_for": ".source",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "AdapterOptions",
    "CorrectionDetector",
    "ErrorPolicy",
    "FeedbackResult",
    "HindsightSession",
    "SessionConfig",
    "SessionOptions",
    "SessionOwner",
    "SessionSource",
    "build_config",
    "judge_uses",
    "new_run_id",
    "revert_feedback",
    "session_for",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
