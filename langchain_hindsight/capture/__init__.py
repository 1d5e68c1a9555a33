"""Capture: trajectories recorded from callback events and from message lists.

* :mod:`~langchain_hindsight.capture.recorder`: :class:`TrajectoryRecorder`, a callback handler;
* :mod:`~langchain_hindsight.capture.messages`: trajectories from message lists, the task and
  recall query of a chat, and where the ``[相关经验]`` block goes (:func:`inject`);
* how a final answer's outcome is read (:func:`answer_outcome`, :func:`gives_up`) and a message's text
  (:func:`message_text`) live in private modules and are public from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.capture._outcome import OUTCOME_REASON_KEY, answer_outcome, gives_up
    from langchain_hindsight.capture._text import message_text
    from langchain_hindsight.capture.messages import (
        BLOCK_ID_PREFIX,
        INJECTED_MARKER,
        RECALL_TURNS,
        Placement,
        check_placement,
        find_task,
        inject,
        namespace_from_config,
        recall_query,
        task_key,
        trajectory_from_intermediate_steps,
        trajectory_from_messages,
    )
    from langchain_hindsight.capture.recorder import SERVED_KEY, TrajectoryRecorder

_EXPORTS: dict[str, str] = {
    "BLOCK_ID_PREFIX": ".messages",
    "INJECTED_MARKER": ".messages",
    "OUTCOME_REASON_KEY": "._outcome",
    "Placement": ".messages",
    "RECALL_TURNS": ".messages",
    "SERVED_KEY": ".recorder",
    "TrajectoryRecorder": ".recorder",
    "answer_outcome": "._outcome",
    "check_placement": ".messages",
    "find_task": ".messages",
    "gives_up": "._outcome",
    "inject": ".messages",
    "message_text": "._text",
    "recall_query": ".messages",
    "namespace_from_config": ".messages",
    "task_key": ".messages",
    "trajectory_from_intermediate_steps": ".messages",
    "trajectory_from_messages": ".messages",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "BLOCK_ID_PREFIX",
    "INJECTED_MARKER",
    "OUTCOME_REASON_KEY",
    "RECALL_TURNS",
    "SERVED_KEY",
    "Placement",
    "TrajectoryRecorder",
    "answer_outcome",
    "check_placement",
    "find_task",
    "gives_up",
    "inject",
    "message_text",
    "namespace_from_config",
    "recall_query",
    "task_key",
    "trajectory_from_intermediate_steps",
    "trajectory_from_messages",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
