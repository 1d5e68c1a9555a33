"""Compatibility shim: the scripted chat models live in :mod:`langchain_hindsight.testing`."""

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
    "ReactiveToolModel",
    "ScriptExhaustedError",
    "ScriptedToolModel",
    "Turn",
    "call",
    "scripted_model",
    "to_message",
]
