"""What a write did, and who decides it: :class:`WriteResult` and the write judges.

The rules for each incoming unit, in order (``docs/storage.md`` tells them with examples):

1. **True duplicates merge**: the same statement after normalising Unicode (NFKC), case, whitespace and
   punctuation, in scope. No cosine similarity, however high, makes two different statements one.
2. **Similar units go to the judge**: the active neighbours above ``conflict_threshold``, and any of the five
   nearest whose statement the new one contradicts by the rules (a same-subject contradiction is often less
   similar: ``用户偏好用Go…`` / ``用户偏好用Rust…`` sit at 0.76), go to a :class:`WriteJudge`, whose answer
   (``add`` / ``duplicate`` / ``update`` / ``conflict``) the store validates again.
3. **Provenance holds**: a less trusted unit never supersedes a more trusted one (both stay active), a less
   trusted echo adds no confidence to a merge, and a judged ``duplicate`` from a *more* trusted source
   supersedes instead of merging, so a user's own wording never vanishes into an inference's.

Example:
    >>> from langchain_hindsight.writes import WriteResult
    >>> result = store.add(MemoryUnit(content="客户甲公司希望通过邮件联系。"))  # doctest: +SKIP
    >>> result.action, result.memory_id  # doctest: +SKIP
    ('added', 'mem_...')
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, ValidationError

from langchain_hindsight._checks import is_int
from langchain_hindsight._json import response_payload, response_text, structured_runnable
from langchain_hindsight._trust import trust_rank
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import Locale, WriteJudgeTemplates, get_write_judge_templates
from langchain_hindsight.types import MemoryUnit

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable

__all__ = [
    "JudgeOutput",
    "LLMWriteJudge",
    "Neighbour",
    "RuleWriteJudge",
    "WriteAction",
    "WriteDecision",
    "WriteJudge",
    "WriteResult",
]

logger = logging.getLogger(__name__)

WriteAction = Literal["added", "merged", "superseded"]
"""What :meth:`MemoryStore.add` did with a unit."""

Decision = Literal["add", "duplicate", "update", "conflict"]

_CONTENT_CHARS = 600
"""A lesson's text is cut to this many characters in the judge prompt (the call stays bounded)."""


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What one write did.

    Attributes:
        action: ``"added"``: stored as a new unit. ``"merged"``: the same statement was already stored; ``unit``
            is that stored unit after absorbing this one. ``"superseded"``: stored as a new unit that replaced
            the units in ``related_ids`` (now ``superseded``).
        unit: The stored unit that now carries the lesson.
        related_ids: ``"merged"``: the id merged into. ``"superseded"``: the superseded id. ``"added"``: similar
            active units it was kept alongside (possibly none).
        reason: Why, in one sentence (also logged at INFO).
        previous: The stored units this write rewrote (merged into, or superseded), as they were before it
            (what an undo restores).
    """

    action: WriteAction
    unit: MemoryUnit
    related_ids: tuple[str, ...] = ()
    reason: str = ""
    previous: tuple[MemoryUnit, ...] = ()

    @property
    def memory_id(self) -> str:
        """Id of :attr:`unit`."""
        return self.unit.memory_id


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A stored active unit similar to the incoming one, as shown to a judge.

    ``contradicts``: whether the rules find its statement contradicted by the incoming one (``None``: not asked).
    """

    unit: MemoryUnit
    similarity: float
    contradicts: bool | None = None


@dataclass(frozen=True, slots=True)
class WriteDecision:
    """A judge's verdict on one incoming unit.

    Attributes:
        decision: ``"add"``: store it alongside. ``"duplicate"``: same lesson as ``target_id`` in other words
            (merge). ``"update"``: corrects or completes ``target_id`` (supersede). ``"conflict"``: contradicts
            ``target_id`` for the same subject; the newer wins (supersede).
        target_id: The neighbour concerned (``None`` for ``"add"``).
        reason: One sentence, for the caller and the log.
    """

    decision: Decision
    target_id: str | None = None
    reason: str = ""


@runtime_checkable
class WriteJudge(Protocol):
    """Decides how a new unit relates to its similar stored neighbours (rule 2 above).

    Called at most once per incoming unit, with the candidates of rule 2 (best first). It must not raise for a
    bad model answer but return ``"add"``; the store validates the decision again (an unknown id means ``"add"``).
    """

    def judge(self, unit: MemoryUnit, neighbours: Sequence[Neighbour]) -> WriteDecision:
        """The decision for ``unit`` given ``neighbours`` (non-empty, most similar first)."""
        ...


class RuleWriteJudge:
    """The default judge, without a model: a contradiction supersedes, anything else keeps both (rule 2 above).

    A contradiction is the same subject with a different prescription, by the rules of ``_claims``: e.g.
    ``用户偏好用Python写后端服务。`` supersedes ``用户偏好用Java写后端服务。``. Restatements, advice for other cases,
    other subjects, or anything the rules are unsure of stay beside it (recency and the conflict note decide).
    """

    def judge(self, unit: MemoryUnit, neighbours: Sequence[Neighbour]) -> WriteDecision:
        """``"conflict"`` with the nearest contradicted neighbour (one it may replace first), else ``"add"``."""
        # Here, not at the top: the claim parser is a write's, and a store opened only to read never loads it.
        from langchain_hindsight._claims import claim_of, relation_of

        new = claim_of(unit.content)
        contradicted = [
            n
            for n in neighbours
            if n.contradicts or (n.contradicts is None and relation_of(claim_of(n.unit.content), new) == "contradicts")
        ]
        if contradicted:
            # prefer a neighbour the new unit may replace (not more trusted than it); the store checks again (rule 3)
            allowed = [n for n in contradicted if trust_rank(n.unit.source) >= trust_rank(unit.source)]
            target = (allowed or contradicted)[0]
            reason = (
                f"contradicts {target.unit.memory_id} ({target.similarity:.2f}): the same subject with a "
                "different prescription (rule judge); the newer statement supersedes it"
            )
            return WriteDecision("conflict", target.unit.memory_id, reason)
        best = neighbours[0]
        reason = (
            f"similar to {best.unit.memory_id} ({best.similarity:.2f}) but no contradiction the rules are sure "
            "of: both kept active (recency and the conflict note decide at recall)"
        )
        return WriteDecision("add", reason=reason)


class JudgeOutput(BaseModel):
    """Structured answer of the LLM write judge."""

    decision: Decision = Field(description="add, duplicate, update or conflict")
    target_id: str | None = Field(default=None, description="id of the stored lesson concerned; null for add")
    reason: str = Field(default="", description="one sentence")


class LLMWriteJudge:
    """A write judge that asks a chat model, once per write, over a few neighbours.

    Example:
        >>> from langchain_hindsight.writes import LLMWriteJudge
        >>> store = MemoryStore("./memory_db", judge=LLMWriteJudge(model))  # doctest: +SKIP

    Args:
        model: Any LangChain chat model.
        locale: ``"zh"`` (default) or ``"en"``: the prompt's language.
        templates: Override the prompt templates (see ``prompts.WRITE_JUDGE_ZH``).
        max_neighbours: At most this many neighbours go into the prompt (1-10).
        structured_output: Use ``with_structured_output`` when the model supports it; else parse JSON from the text.
        fallback: Judge used when the model fails or answers garbage (default :class:`RuleWriteJudge`). The first
            such failure is logged as a warning, later ones at debug level.
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        locale: Locale = "zh",
        templates: WriteJudgeTemplates | None = None,
        max_neighbours: int = 3,
        structured_output: bool = True,
        fallback: WriteJudge | None = None,
    ) -> None:
        if not is_int(max_neighbours, 1, 10):
            raise ConfigurationError(f"max_neighbours must be an int in [1, 10], got {max_neighbours!r}")
        self.model = model
        self.templates = templates or get_write_judge_templates(locale)
        self.max_neighbours = max_neighbours
        self.structured_output = structured_output
        self.fallback: WriteJudge = fallback or RuleWriteJudge()
        self._runnable: Runnable[Any, Any] | None = None
        self._lock = threading.Lock()
        self._warned = False

    def _prepare_prompt(self, unit: MemoryUnit, neighbours: Sequence[Neighbour]) -> str:
        t = self.templates

        def fields(u: MemoryUnit) -> dict[str, Any]:
            text = " ".join(u.content.split())
            content = text[:_CONTENT_CHARS] + "…" if len(text) > _CONTENT_CHARS else text
            created = u.created_at.date().isoformat()
            return {"task_type": u.task_type, "source": u.source, "created": created, "content": content}

        lines = [
            t.neighbour_line.format(memory_id=n.unit.memory_id, similarity=n.similarity, **fields(n.unit))
            for n in neighbours
        ]
        return t.prompt.format(new=t.unit_line.format(**fields(unit)), neighbours="\n".join(lines))

    def _prepare_runnable(self) -> Runnable[Any, Any]:
        with self._lock:
            if self._runnable is None:
                self._runnable = structured_runnable(self.model, JudgeOutput, structured=self.structured_output)
            return self._runnable

    def judge(self, unit: MemoryUnit, neighbours: Sequence[Neighbour]) -> WriteDecision:
        """One model call; a failed call or an invalid answer falls back to :attr:`fallback`."""
        from langchain_core.messages import HumanMessage

        shown = list(neighbours)[: self.max_neighbours]
        prompt = self._prepare_prompt(unit, shown)
        try:
            response = self._prepare_runnable().invoke([HumanMessage(content=prompt)])
        except Exception as e:  # noqa: BLE001 - a model failure must not lose the write: fall back, logged once
            return self._fall_back(unit, shown, f"the model call failed: {type(e).__name__}: {e}")
        decision = parse_decision(response, {n.unit.memory_id for n in shown})
        if decision is None:
            return self._fall_back(unit, shown, f"unusable answer: {str(response_text(response))[:200]!r}")
        return decision

    def _fall_back(self, unit: MemoryUnit, neighbours: Sequence[Neighbour], why: str) -> WriteDecision:
        with self._lock:
            first, self._warned = not self._warned, True
        log = logger.warning if first else logger.debug
        log("write judge fell back to %s for %s: %s", type(self.fallback).__name__, unit.memory_id, why)
        return self.fallback.judge(unit, neighbours)


def parse_decision(response: Any, allowed_ids: set[str]) -> WriteDecision | None:
    """A validated :class:`WriteDecision` from a model response, or ``None`` if it is unusable.

    Unusable: not a JSON object of :class:`JudgeOutput` shape, or a non-``add`` decision whose ``target_id`` is
    not among ``allowed_ids`` (the neighbours shown).
    """
    payload = response_payload(response)[0]
    if isinstance(payload, list) and len(payload) == 1:
        payload = payload[0]
    if not isinstance(payload, dict):
        return None
    if isinstance(payload.get("decision"), str):
        payload = {**payload, "decision": payload["decision"].strip().lower()}
    try:
        out = JudgeOutput.model_validate(payload)
    except ValidationError:
        return None
    if out.decision == "add":
        return WriteDecision("add", None, out.reason)
    target = (out.target_id or "").strip()
    return WriteDecision(out.decision, target, out.reason) if target in allowed_ids else None
