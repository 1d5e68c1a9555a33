"""Reflection: trajectories distilled into memory units by an LLM and by rules.

* :mod:`~langchain_hindsight.reflection.reflector`: :class:`Reflector` (the LLM when given one, the
  rules always) and its structured output (:class:`ExtractionOutput`);
* :mod:`~langchain_hindsight.reflection.background`: :class:`BackgroundReflector`, reflection off
  the agent's thread;
* the lesson a user's verdict teaches (:func:`feedback_unit`, which the session writes) is made by the
  rules' private module and public from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.reflection._rules import feedback_unit
    from langchain_hindsight.reflection.background import BackgroundReflector, SupportsReflect
    from langchain_hindsight.reflection.reflector import ExtractedExperience, ExtractionOutput, Reflector

_EXPORTS: dict[str, str] = {
    "BackgroundReflector": ".background",
    "ExtractedExperience": ".reflector",
    "ExtractionOutput": ".reflector",
    "Reflector": ".reflector",
    "SupportsReflect": ".background",
    "feedback_unit": "._rules",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "BackgroundReflector",
    "ExtractedExperience",
    "ExtractionOutput",
    "Reflector",
    "SupportsReflect",
    "feedback_unit",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
