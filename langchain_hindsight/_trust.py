"""Memory sources and how far each is trusted: the one table the store, recall and lifecycle read.

Every number the package attaches to a unit's ``source`` lives in :data:`SOURCE_TRUST`,
row by row, most trusted first:

===================  =======  =======  =====  ========================  =========
source               initial  ceiling  prior  instruction-like wording  untrusted
===================  =======  =======  =====  ========================  =========
``user_feedback``    0.9      1.0      1.0    legitimate
``manual``           0.8      1.0      0.9    legitimate
``rule``             0.7      0.9      0.6    suspicious
``agent_inference``  0.65     0.9      0.5    suspicious
``review``           0.6      0.8      0.5    suspicious
``tool_output``      0.4      0.5      0.0    suspicious                yes
===================  =======  =======  =====  ========================  =========

A user's explicit correction is trusted most (a strong signal, stored at once);
the developer's own notes next. A rule-made lesson is derived from what the
trajectory shows happened (an error and the call that fixed it), so it ranks
above what the reflection model *inferred* (self-reported, started at 0.6-0.7);
a cross-task review pattern is weaker still, and text that came out of a tool is
untrusted. The trust order (merges keep the most trusted source, a less trusted
write never replaces a more trusted statement) follows the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

__all__ = [
    "DEFAULT_CONFIDENCE_CEILING",
    "DEFAULT_INITIAL_CONFIDENCE",
    "DEFAULT_SOURCE_PRIOR",
    "SOURCE_TRUST",
    "TRUSTED_SOURCES",
    "TRUST_ORDER",
    "UNTRUSTED_SOURCES",
    "USER_SOURCES",
    "MemorySource",
    "SourceTrust",
    "trust_rank",
]

MemorySource = Literal["user_feedback", "manual", "rule", "agent_inference", "review", "tool_output"]
"""Where a unit came from, most trusted first.

``user_feedback``: an explicit user correction (highest trust);
``manual``: written by the application developer; ``rule``: derived by
reflection rules from what the trajectory shows; ``agent_inference``: extracted
by the reflection LLM; ``review``: a cross-task pattern from periodic review;
``tool_output``: text that came from a tool (untrusted, ranks lowest).
"""


@dataclass(frozen=True, slots=True)
class SourceTrust:
    """How far one source is trusted.

    Attributes:
        initial_confidence: Confidence of a new unit that gives none.
        ceiling: Highest confidence a unit may *claim* on arrival (feedback can raise it later).
        prior: Trust in the recall score, in [0, 1] (multiplied by ``ScoringWeights.source``).
        may_instruct: Instruction-like wording is legitimate (a user telling the agent what to do).
    untrusted: The text came from outside (a tool): only its content is searchable, never its hidden fields.
    """

    initial_confidence: float
    ceiling: float
    prior: float
    may_instruct: bool = False
    untrusted: bool = False


SOURCE_TRUST: Mapping[MemorySource, SourceTrust] = MappingProxyType(
    {
        "user_feedback": SourceTrust(initial_confidence=0.9, ceiling=1.0, prior=1.0, may_instruct=True),
        "manual": SourceTrust(initial_confidence=0.8, ceiling=1.0, prior=0.9, may_instruct=True),
        "rule": SourceTrust(initial_confidence=0.7, ceiling=0.9, prior=0.6),
        "agent_inference": SourceTrust(initial_confidence=0.65, ceiling=0.9, prior=0.5),
        "review": SourceTrust(initial_confidence=0.6, ceiling=0.8, prior=0.5),
        "tool_output": SourceTrust(initial_confidence=0.4, ceiling=0.5, prior=0.0, untrusted=True),
    }
)
"""One row per :data:`MemorySource`, most trusted first (a test checks every source has one)."""

TRUST_ORDER: tuple[MemorySource, ...] = tuple(SOURCE_TRUST)
"""Sources, most trusted first."""

TRUSTED_SOURCES: frozenset[MemorySource] = frozenset(s for s, t in SOURCE_TRUST.items() if t.may_instruct)
"""Sources whose instruction-like wording is legitimate (a user telling the agent what to do)."""

UNTRUSTED_SOURCES: frozenset[MemorySource] = frozenset(s for s, t in SOURCE_TRUST.items() if t.untrusted)
"""Sources whose text came from outside the conversation (a tool's output)."""

USER_SOURCES: frozenset[MemorySource] = frozenset({"user_feedback", "manual"})
"""Sources that are a person's own words (a user's correction, a developer's fact): never debited by a failure,
and the later of two such words on one subject ranks first."""

DEFAULT_INITIAL_CONFIDENCE: dict[str, float] = {s: t.initial_confidence for s, t in SOURCE_TRUST.items()}
"""Initial confidence when none is given, by source (agent inference 0.65; user feedback high)."""

DEFAULT_CONFIDENCE_CEILING: dict[str, float] = {s: t.ceiling for s, t in SOURCE_TRUST.items() if t.ceiling < 1.0}
"""Highest confidence a unit may *claim* on arrival, by source (sources without a ceiling left out)."""

DEFAULT_SOURCE_PRIOR: Mapping[str, float] = MappingProxyType({s: t.prior for s, t in SOURCE_TRUST.items()})
"""Trust of each source in [0, 1] in the recall score, multiplied by ``ScoringWeights.source``."""


def trust_rank(source: str) -> int:
    """Rank of ``source``: 0 is the most trusted.

    Raises:
        ValueError: an unknown source.

    Example:
        >>> trust_rank("user_feedback"), trust_rank("rule") < trust_rank("agent_inference")
        (0, True)
    """
    return TRUST_ORDER.index(source)  # type: ignore[arg-type]
