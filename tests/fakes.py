"""Test helpers: the scripted chat models (from :mod:`langchain_hindsight.testing`) and a write-judge model."""

from __future__ import annotations

import re

from langchain_core.messages import BaseMessage

from langchain_hindsight.testing import (
    ReactiveToolModel,
    ScriptedToolModel,
    ScriptExhaustedError,
    Turn,
    call,
    scripted_model,
    to_message,
)

__all__ = [
    "GRANTS_TOML",
    "ReactiveToolModel",
    "ScriptExhaustedError",
    "ScriptedToolModel",
    "Turn",
    "call",
    "judge_model",
    "scripted_model",
    "to_message",
]


def judge_model(decision: str, *, reason: str = "scripted") -> ReactiveToolModel:
    """A chat model for ``LLMWriteJudge`` that answers ``decision`` about the first neighbour it is shown.

    ``MemoryStore(judge=LLMWriteJudge(judge_model("conflict")))`` supersedes the nearest similar unit
    on every write that has one (``"add"`` names no neighbour).
    """

    def respond(messages: list[BaseMessage]) -> Turn:
        shown = re.findall(r"id=(mem_\w+)", str(messages[-1].content))
        target = None if decision == "add" or not shown else shown[0]
        return call("JudgeOutput", decision=decision, target_id=target, reason=reason)

    return ReactiveToolModel(respond=respond)


GRANTS_TOML = """
[principals.cleaner]
namespace = "cleaner"
write = ["shared"]

[principals.analyst]
namespace = "analyst"
read = ["shared"]

[principals.outsider]
namespace = "outsider"
"""
"""A cleaning agent that publishes to ``shared``, an analysis agent that reads it, and one with no grant."""
