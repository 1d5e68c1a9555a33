"""How a write is decided, without I/O: the rules, the judges, and each write's plan.

The rules for each incoming unit, in order (``docs/storage.md`` tells them with examples):

1. **True duplicates merge**: the same statement after normalising Unicode (NFKC), case, whitespace and
   punctuation, in scope. No cosine similarity, however high, makes two different statements one.
2. **Similar units go to the judge**: the active neighbours above ``conflict_threshold``, and any of the five
   nearest whose statement the new one contradicts by the rules (a same-subject contradiction is often less
   similar: ``用户偏好用Go…`` / ``用户偏好用Rust…`` sit at 0.76), go to a :class:`WriteJudge`, whose answer
   (``add`` / ``duplicate`` / ``update`` / ``conflict``) is validated again (:func:`plan_add`).
3. **Provenance holds**: a less trusted unit never supersedes a more trusted one (both stay active), a less
   trusted echo adds no confidence to a merge, and a judged ``duplicate`` from a *more* trusted source
   supersedes instead of merging, so a user's own wording never vanishes into an inference's.

A store's write checks and prepares its units (:func:`prepare`), reads their stored neighbours, and hands them
here: :func:`plan_add`, :func:`plan_supersede` and :func:`plan_feedback` return what to write (a
:class:`WritePlan`, or the units as they will be) and :class:`WriteResult` says what was done and why. The store
writes the plan in crash-safe order. Nothing here reads or writes a store: the store is handed a judge and a
``ConfidencePolicy``, and the rules are the same for every backend.

Example:
    >>> from langchain_hindsight.writes import WriteResult
    >>> result = store.add(MemoryUnit(content="客户甲公司希望通过邮件联系。"))  # doctest: +SKIP
    >>> result.action, result.memory_id  # doctest: +SKIP
    ('added', 'mem_...')
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from langchain_hindsight._checks import check_namespace, is_int
from langchain_hindsight._json import response_payload, response_text, structured_runnable
from langchain_hindsight._safety import SUSPICIOUS_TAG, looks_like_instruction
from langchain_hindsight._text import informative
from langchain_hindsight._trust import TRUST_ORDER, TRUSTED_SOURCES, UNTRUSTED_SOURCES, trust_rank
from langchain_hindsight.confidence import ConfidencePolicy, corroborated, evidence_cap
from langchain_hindsight.errors import (
    ConfigurationError,
    InvalidMemoryError,
    MemoryNotFoundError,
    UninformativeMemoryError,
    WriteConflictError,
)
from langchain_hindsight.prompts import Locale, WriteJudgeTemplates, get_write_judge_templates
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MAX_ACCESS_COUNT, MemoryUnit, new_memory_id, utcnow

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable

__all__ = [
    "MERGE_THRESHOLD",
    "NEIGHBOURS",
    "REPLAN_ATTEMPTS",
    "JudgeOutput",
    "LLMWriteJudge",
    "Neighbour",
    "RuleWriteJudge",
    "SupersedeTargets",
    "Target",
    "WriteAction",
    "WriteDecision",
    "WriteJudge",
    "WritePlan",
    "WriteResult",
    "WriteRules",
    "check_informative",
    "check_premise",
    "check_unit",
    "check_update",
    "clamp_future",
    "demote",
    "flag_suspicious",
    "fresh_ids_for_taken",
    "merge_units",
    "plan_add",
    "plan_feedback",
    "plan_successor",
    "plan_supersede",
    "prepare",
]

logger = logging.getLogger(__name__)

WriteAction = Literal["added", "merged", "superseded"]
"""What :meth:`MemoryStore.add` did with a unit."""

Decision = Literal["add", "duplicate", "update", "conflict"]

_CONTENT_CHARS = 600
"""A lesson's text is cut to this many characters in the judge prompt (the call stays bounded)."""

MERGE_THRESHOLD = 0.95
"""The cosine similarity at or above which two units may become one: the default of the store's ``merge_threshold``
and of ``LifecyclePolicy``'s. Distinct sentences that differ in one entity or number still score near 1.0, so
similarity only selects candidates and the statement rule decides."""

NEIGHBOURS = 5
"""Stored neighbours a write reads per unit (the nearest active ones in scope): the rules look at all of them."""

REASON_NEW = "new: no similar active unit in scope"
REASON_NO_DEDUPE = "stored as given (dedupe=False)"
REASON_SAME_STATEMENT = "the same statement (after normalising case, whitespace and punctuation) was already stored"
REASON_LEARNED_AGAIN = "{reason}: learned again (evidence {evidence}, confidence {confidence:.2f})"
REASON_SAME_LESSON = (
    "the same lesson, only its run-specific values (a week or other ordinal, a date, an id, a file, a path) differ"
)
REASON_KEPT_BOTH = "a different statement: kept alongside its similar units"
REASON_OTHER_CONDITION = (
    "{reason}; but it applies under another condition than {old} ({why}): not a change of the same fact, "
    "both kept active, each with its condition (the newer ranks first)"
)
REASON_DUPLICATE_BELOW = (
    "judged a duplicate, but {similarity:.2f} is below merge_threshold {threshold}: kept alongside instead"
)
REASON_TRUSTED_REWORDING = "judged a duplicate ({reason}); the more trusted wording replaces the stored one"
REASON_SUPERSEDED = "{reason} ({old}: confidence {before:.2f} -> {after:.2f}, kept as superseded)"
REASON_LESS_TRUSTED = "a {source} unit never replaces a {other} one: both kept active, ranked by source"

Scope = Literal["task_type", "namespace"]


class WriteRules(Protocol):
    """The store's settings a write is decided by (``StoreCore`` holds them; ``MemoryStore`` documents them)."""

    namespace: str
    vocabulary: TaskTypeVocabulary
    policy: ConfidencePolicy
    judge: WriteJudge
    merge_threshold: float | None
    conflict_threshold: float | None
    conflict_scope: Scope


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


def check_unit(value: object) -> MemoryUnit:
    """``value`` if it is a :class:`MemoryUnit`, else a :class:`ConfigurationError`."""
    if not isinstance(value, MemoryUnit):
        raise ConfigurationError(f"unit must be a MemoryUnit, got {type(value).__name__}")
    return value


def check_informative(unit: MemoryUnit) -> MemoryUnit:
    """``unit``, unless its content carries no information (``"x"``, ``"ok"``, ``"好的"``, emoji only)."""
    if not informative(unit.content):
        raise UninformativeMemoryError(
            f"invalid memory unit: content: {unit.content[:40]!r} carries no information (at most two letters or "
            "one CJK character once punctuation, spaces and emoji are dropped, or only acknowledgements, "
            "greetings and function words such as 'ok', '好的', 'thanks', 'the'): not stored"
        )
    return unit


def flag_suspicious(unit: MemoryUnit, policy: ConfidencePolicy) -> MemoryUnit:
    """``unit``, if untrusted and instruction-like (or tagged), tagged ``suspicious``, capped at ``suspicious_cap``."""
    if unit.source in TRUSTED_SOURCES or not (
        SUSPICIOUS_TAG in unit.tags or looks_like_instruction(f"{unit.content}\n{unit.task_description}")
    ):
        return unit
    tags = list(dict.fromkeys([*unit.tags, SUSPICIOUS_TAG]))
    confidence = min(unit.score_confidence, policy.suspicious_cap)
    if tags == unit.tags and confidence == unit.confidence:
        return unit
    return unit.evolve(tags=tags, confidence=confidence)


def clamp_future(unit: MemoryUnit) -> MemoryUnit:
    """``unit`` with its times beyond now clamped to now: a future stamp would exempt it from decay forever."""
    now = utcnow()
    changes = {
        name: now
        for name in ("created_at", "last_accessed_at", "decayed_through")
        if getattr(unit, name) is not None and getattr(unit, name) > now
    }
    if not changes:
        return unit
    logger.info("memory %s: future timestamps clamped to now: %s", unit.memory_id, sorted(changes))
    return unit.evolve(**changes)


def settle_claims(unit: MemoryUnit) -> MemoryUnit:
    """``unit`` with the system-owned fields it may not claim on arrival settled.

    The store owns the clock (:func:`clamp_future`); an untrusted unit arrives unused, active, replacing and
    merged from nothing (the store's own operations set these).
    """
    unit = clamp_future(unit)
    changes: dict[str, object] = {}
    if unit.source in UNTRUSTED_SOURCES:
        changes = {"access_count": 0, "supersedes": None, "merged_from": [], "evidence": 1, "status": "active"}
        changes = {k: v for k, v in changes.items() if getattr(unit, k) != v}
    if not changes:
        return unit
    logger.info(
        "memory %s from %s: system-owned fields reset on arrival: %s", unit.memory_id, unit.source, sorted(changes)
    )
    return unit.evolve(**changes)


def prepare(unit: MemoryUnit, namespace: str | None, rules: WriteRules) -> MemoryUnit:
    """``unit`` as it will be stored: checked, claims settled, task type normalised, namespace and confidence set.

    No namespace named: the store's (never a shared "default"). Confidence capped by source, then flagged.
    """
    policy = rules.policy
    for name, value in unit.to_dict().items():  # text no backend stores: lone surrogates (a JSON escape in LLM output)
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidMemoryError(f"invalid memory unit: {name}: is not valid Unicode text ({e.reason})") from e
    unit = settle_claims(unit)
    changes: dict[str, Any] = {"task_type": rules.vocabulary.resolve(unit.task_type)}
    if namespace is not None:
        changes["namespace"] = check_namespace(namespace)
    elif "namespace" not in unit.model_fields_set:
        changes["namespace"] = rules.namespace
    confidence = unit.score_confidence
    if "confidence" not in unit.model_fields_set and unit.source in policy.initial:
        confidence = policy.initial[unit.source]  # none given: this store's policy default
    changes["confidence"] = min(confidence, policy.ceiling.get(unit.source, 1.0))  # a source not listed is uncapped
    unit = flag_suspicious(unit.evolve(**changes), policy)
    if SUSPICIOUS_TAG in unit.tags and unit.source not in TRUSTED_SOURCES:  # flagged (or arrived flagged)
        logger.warning(
            "memory %s from %s reads like an instruction: tagged %r", unit.memory_id, unit.source, SUSPICIOUS_TAG
        )
    return check_informative(unit)


def check_update(current: MemoryUnit, changes: Mapping[str, Any]) -> MemoryUnit:
    """``current`` with ``changes``, if allowed: a source is never raised (provenance is fixed on add)."""
    source = changes.get("source", current.source)
    if source in TRUST_ORDER and trust_rank(str(source)) < trust_rank(current.source):
        raise ConfigurationError(
            f"source cannot be raised from {current.source!r} to {source!r}: provenance is fixed when a "
            "unit is added (add a new unit with the trusted source instead)"
        )
    if "content" in changes:
        check_informative(current.evolve(content=changes["content"]))
    return current.evolve(**changes)


def check_premise(
    namespace: str, taken: set[str], continued: list[str], stored: set[str], ahead: list[MemoryUnit]
) -> None:
    """Check that what an ``if_absent`` write was planned on still holds, as its write plan re-read it.

    Its ids are free (none ``taken``); the units it ``continued`` are still ``stored`` and continued by no active
    unit yet (``ahead``: the stored units that continue them). Else :class:`WriteConflictError`: nothing is written.
    """
    where = f"in namespace {namespace!r}"
    if taken:
        why = f"memory {sorted(taken)[0]!r} is already stored {where} (another writer created it first)"
    elif gone := [i for i in continued if i not in stored]:
        why = f"memory {gone[0]!r} {where}, which this write continues, was forgotten by another writer"
    elif ahead := [u for u in ahead if u.status == "active"]:
        why = f"memory {ahead[0].supersedes!r} {where} was continued by another writer first ({ahead[0].memory_id})"
    else:
        return
    raise WriteConflictError(f"{why}; nothing was written")


def demote(unit: MemoryUnit, policy: ConfidencePolicy) -> MemoryUnit:
    """``unit`` superseded by a newer one: status ``superseded``, confidence × ``supersede_factor``."""
    return unit.evolve(status="superseded", confidence=round(unit.score_confidence * policy.supersede_factor, 6))


def merge_units(existing: MemoryUnit, incoming: MemoryUnit, policy: ConfidencePolicy) -> MemoryUnit:
    """``existing`` after absorbing ``incoming``, the same statement (or a judged duplicate).

    The lesson was learned again: ``evidence`` adds up, confidence grows with it from the higher of the
    two (:mod:`~langchain_hindsight.confidence`), and the newest times are kept so recency says so.
    """
    merged_from = list(dict.fromkeys([*existing.merged_from, incoming.memory_id, *incoming.merged_from]))
    if trust_rank(incoming.source) > trust_rank(existing.source):
        # A less trusted echo corroborates nothing: record it, change nothing else.
        return existing.evolve(merged_from=merged_from)
    merged = existing.evolve(
        evidence=min(MAX_ACCESS_COUNT, existing.evidence + incoming.evidence),
        access_count=existing.access_count + incoming.access_count,
        tags=[*existing.tags, *incoming.tags],
        created_at=max(existing.created_at, incoming.created_at),
        last_accessed_at=max(existing.last_accessed_at, incoming.last_accessed_at),
        merged_from=merged_from,
        # Provenance: a user's word outranks an inference; never lower it.
        source=min((existing.source, incoming.source), key=trust_rank),
        confidence=max(existing.score_confidence, incoming.score_confidence),
    )
    cap = evidence_cap(merged, policy)
    grown = corroborated(merged.score_confidence, merged.source, incoming.evidence, ceiling=cap)
    return merged.evolve(confidence=grown) if grown != merged.score_confidence else merged


def _candidates(
    unit: MemoryUnit, stored: Sequence[Neighbour], plan: WritePlan, scope: Scope, similarities: Mapping[str, float]
) -> list[Neighbour]:
    """Active units in scope near ``unit``, most similar first: ``stored`` ones and the batch's own (``plan.new``).

    A stored unit rewritten in this batch is judged as rewritten; batch units only if in ``similarities``.
    """
    found: dict[str, Neighbour] = {}
    for n in stored:
        memory_id = n.unit.memory_id
        if memory_id == unit.memory_id or memory_id in plan.new:
            continue
        candidate = plan.changed.get(memory_id, n.unit)
        if candidate.status == "active":
            found[memory_id] = Neighbour(candidate, n.similarity)
    for memory_id, similarity in similarities.items():
        other = plan.new[memory_id][0]
        in_scope = scope != "task_type" or (other.task_type, other.kind) == (unit.task_type, unit.kind)
        if other.status == "active" and memory_id != unit.memory_id and in_scope:
            found[memory_id] = Neighbour(other, similarity)
    return sorted(found.values(), key=lambda n: -n.similarity)


@dataclass(slots=True)
class WritePlan:
    """What a write plan writes to a namespace's memories collection, and what it did (the store applies it)."""

    new: dict[str, tuple[MemoryUnit, list[float]]] = field(default_factory=dict)
    """Units (with vectors) to upsert, in batch order; includes demotions/merges of earlier batch units."""
    changed: dict[str, MemoryUnit] = field(default_factory=dict)
    """Already stored units to rewrite (merged into or demoted)."""
    superseding: set[str] = field(default_factory=set)
    """New units whose predecessor is an already stored unit (written marked ``pending``)."""
    results: list[WriteResult] = field(default_factory=list)
    """What happened to each incoming unit, aligned with the input."""

    def put(self, unit: MemoryUnit) -> None:
        """Record a new version of ``unit``, which is either new in this batch or already stored."""
        if unit.memory_id in self.new:
            self.new[unit.memory_id] = (unit, self.new[unit.memory_id][1])
        else:
            self.changed[unit.memory_id] = unit

    def supersede(
        self, unit: MemoryUnit, vector: list[float], old: Sequence[MemoryUnit], policy: ConfidencePolicy
    ) -> tuple[MemoryUnit, list[MemoryUnit]]:
        """Add ``unit`` as the successor of ``old``, which are demoted; return both as planned."""
        unit = unit.evolve(supersedes=old[0].memory_id)
        if old[0].memory_id not in self.new:
            self.superseding.add(unit.memory_id)
        demoted = [demote(u, policy) for u in old]
        for u in demoted:
            self.put(u)
        self.new[unit.memory_id] = (unit, vector)
        return unit, demoted


def _decide(
    unit: MemoryUnit, near: list[Neighbour], rules: WriteRules, judge: WriteJudge, key: Callable[[MemoryUnit], str]
) -> tuple[WriteDecision, Neighbour | None]:
    """The validated decision for ``unit`` and the neighbour it concerns (``None`` for a plain add)."""
    # Here, not at the top: the claim and statement parsers are the write path's, and a store opened only to
    # read (``hindsight show``) never loads them.
    from langchain_hindsight._claims import claim_of, relation_of, scoped_apart
    from langchain_hindsight._statements import statement_key

    own = key(unit)
    same = next((n for n in near if key(n.unit) == own), None)
    if same is not None:
        masked = statement_key(same.unit.content) != statement_key(unit.content)
        return WriteDecision(
            "duplicate", same.unit.memory_id, REASON_SAME_LESSON if masked else REASON_SAME_STATEMENT
        ), same
    if rules.conflict_threshold is None:
        return WriteDecision("add", reason=REASON_NEW), None
    # Candidates: above conflict_threshold, or contradicted by the rules whatever the cosine (rule 2 above); each
    # shown with what the rules said, so the rule judge does not ask again.
    new = claim_of(unit.content)
    near = [replace(n, contradicts=relation_of(claim_of(n.unit.content), new) == "contradicts") for n in near]
    similar = [n for n in near if n.similarity > rules.conflict_threshold or n.contradicts]
    if not similar:
        return WriteDecision("add", reason=REASON_NEW), None
    decision = judge.judge(unit, similar)
    target = next((n for n in similar if n.unit.memory_id == decision.target_id), None)
    if decision.decision == "add" or target is None:
        if decision.decision != "add":
            logger.warning("write judge named %r, not a neighbour it was shown: stored as new", decision.target_id)
        return WriteDecision("add", reason=decision.reason or REASON_KEPT_BOTH), None
    duplicate, threshold = decision.decision == "duplicate", rules.merge_threshold
    apart = scoped_apart(claim_of(target.unit.content), new)
    if apart is not None:
        # Only a change of the same fact under the same condition supersedes (or merges): advice for another
        # case (小于1万行 / 大于1万行, On Windows / On Linux, for Alice / for Bob) stands beside it, whoever judged.
        reason = REASON_OTHER_CONDITION.format(reason=decision.reason, old=target.unit.memory_id, why=apart)
    elif duplicate and (threshold is None or target.similarity < threshold):
        reason = REASON_DUPLICATE_BELOW.format(similarity=target.similarity, threshold=threshold)
    elif not duplicate and trust_rank(unit.source) > trust_rank(target.unit.source):
        # Provenance: a less trusted unit never replaces a more trusted one; both stay, ranked by source.
        reason = REASON_LESS_TRUSTED.format(source=unit.source, other=target.unit.source)
    elif duplicate and trust_rank(unit.source) < trust_rank(target.unit.source):
        # Merging keeps the stored wording: a more trusted source's own words replace a less trusted one's instead.
        reworded = REASON_TRUSTED_REWORDING.format(reason=decision.reason)
        return WriteDecision("update", target.unit.memory_id, reworded), target
    else:
        return decision, target
    return WriteDecision("add", reason=reason), None


def plan_add(
    units: Sequence[MemoryUnit],
    vectors: Sequence[list[float]],
    stored: Sequence[Sequence[Neighbour]],
    rules: WriteRules,
    *,
    dedupe: bool,
    judge: WriteJudge | None = None,
) -> WritePlan:
    """Decide, unit by unit, between merge, supersede and plain insert (``dedupe=False``: insert each).

    ``stored`` holds each unit's :data:`NEIGHBOURS` nearest stored active units in scope, as the write read
    them; earlier units of the batch are candidates too. ``judge`` stands in for ``rules.judge``.
    """
    if not dedupe:
        return WritePlan(
            new={u.memory_id: (u, v) for u, v in zip(units, vectors, strict=True)},
            results=[WriteResult("added", u, (), REASON_NO_DEDUPE) for u in units],
        )
    from langchain_hindsight._statements import lesson_key  # the write path's (see _decide)

    conflict_threshold = rules.conflict_threshold
    asked = rules.judge if judge is None else judge
    keys: dict[tuple[str, str], str] = {}

    def key(u: MemoryUnit) -> str:  # statement keys (run-specific values masked), computed once per text in the batch
        if (u.memory_id, u.content) not in keys:
            keys[u.memory_id, u.content] = lesson_key(u)
        return keys[u.memory_id, u.content]

    plan = WritePlan()
    # The batch so far as one matrix: a unit's similarity to every earlier one is one matrix-vector product.
    # Only earlier units that could matter become candidates: the same statement, or above conflict_threshold.
    batch = np.asarray(vectors, dtype=np.float64)
    matrix = np.zeros_like(batch)
    order: list[str] = []  # the ids on the matrix's rows
    by_key: dict[str, list[int]] = {}

    def admit(unit: MemoryUnit, i: int) -> None:
        plan.new[unit.memory_id] = (unit, vectors[i])
        matrix[len(order)] = batch[i]
        by_key.setdefault(key(unit), []).append(len(order))
        order.append(unit.memory_id)

    for i, (unit, near_stored) in enumerate(zip(units, stored, strict=True)):
        sims = matrix[: len(order)] @ batch[i]
        picked = set(by_key.get(key(unit), ()))
        if conflict_threshold is not None:
            picked.update(np.flatnonzero(sims > conflict_threshold).tolist())
            # the nearest few whatever the cosine, as for stored units: the rules may find a contradiction there
            picked.update(np.argsort(-sims, kind="stable")[:NEIGHBOURS].tolist())
        near = _candidates(unit, near_stored, plan, rules.conflict_scope, {order[r]: float(sims[r]) for r in picked})
        decision, target = _decide(unit, near, rules, asked, key)
        if target is None:
            admit(unit, i)
            kept = tuple(
                n.unit.memory_id for n in near if conflict_threshold is not None and n.similarity > conflict_threshold
            )
            plan.results.append(WriteResult("added", unit, kept, decision.reason))
        elif decision.decision == "duplicate":
            merged = merge_units(target.unit, unit, rules.policy)
            plan.put(merged)
            evidence, confidence = merged.evidence, merged.score_confidence
            reason = REASON_LEARNED_AGAIN.format(reason=decision.reason, evidence=evidence, confidence=confidence)
            plan.results.append(WriteResult("merged", merged, (merged.memory_id,), reason, (target.unit,)))
        else:
            unit, (demoted,) = plan.supersede(unit, vectors[i], [target.unit], rules.policy)
            admit(unit, i)
            # what it takes to undo it: the old unit's confidence before (status back to "active")
            old, before, after = target.unit.memory_id, target.unit.score_confidence, demoted.score_confidence
            reason = REASON_SUPERSEDED.format(reason=decision.reason, old=old, before=before, after=after)
            plan.results.append(WriteResult("superseded", unit, (old,), reason, (target.unit,)))
    # Final values for units written in this batch (a later unit may have merged into an earlier one).
    final = {**plan.changed, **{i: u for i, (u, _) in plan.new.items()}}
    plan.results = [replace(r, unit=final[r.memory_id]) for r in plan.results]
    return plan


REPLAN_ATTEMPTS = 8
"""How many times a caller's read-plan-write loop re-reads and re-plans before it raises ``WriteConflictError``."""


@dataclass(frozen=True, slots=True)
class Target:
    """One unit a write asked to supersede, as its write plan finds it.

    ``now``: as stored now (``None``: forgotten); ``head``: the active head of its chain (``None``: none is active).
    """

    requested: str
    now: MemoryUnit | None
    head: MemoryUnit | None


@dataclass(frozen=True, slots=True)
class SupersedeTargets:
    """What a supersede replaces after re-planning, and why (one note per target that moved)."""

    replace: tuple[MemoryUnit, ...]
    notes: tuple[str, ...] = ()


def plan_supersede(targets: Sequence[Target], namespace: str, *, source: str) -> SupersedeTargets:
    """The units a supersede replaces, given its targets as the write plan re-read them.

    Another process may have replaced a target since the caller read it: then the active head of its chain is
    superseded instead (the newer statement wins; the other writer's version stays in ``history()``, a note says
    so); a target with no active version is skipped. (Feedback never moves along a chain: a credit stays with the
    version the run was shown.)

    Raises:
        MemoryNotFoundError: no target has an active version (a caller with its own plan re-plans, at most
            :data:`REPLAN_ATTEMPTS` times).
        ConfigurationError: a unit from ``source`` would replace a more trusted one.
    """
    heads: dict[str, MemoryUnit] = {}
    notes: list[str] = []
    for t in targets:
        if t.head is None:
            state = "forgotten" if t.now is None else t.now.status
            notes.append(f"{t.requested} is {state} and has no active version: skipped")
            continue
        if t.head.memory_id != t.requested:
            notes.append(
                f"{t.requested} was superseded by another write first: its newest version "
                f"{t.head.memory_id} is superseded instead"
            )
        heads.setdefault(t.head.memory_id, t.head)
    if not heads:
        asked = [t.requested for t in targets][:5]
        why = f" ({'; '.join(notes)})" if notes else ""
        raise MemoryNotFoundError(f"no active memory among {asked} in namespace {namespace!r}{why}")
    if weaker := [u.memory_id for u in heads.values() if trust_rank(source) > trust_rank(u.source)]:
        raise ConfigurationError(f"a {source} unit never replaces a more trusted one ({', '.join(weaker)})")
    return SupersedeTargets(tuple(heads.values()), tuple(notes))


def plan_successor(
    unit: MemoryUnit, vector: list[float], planned: SupersedeTargets, policy: ConfidencePolicy, reason: str
) -> WritePlan:
    """The write of ``unit`` (its id free) as the successor of ``planned.replace``, which are demoted."""
    plan = WritePlan()
    new, _ = plan.supersede(unit, vector, planned.replace, policy)
    why = f"{reason} (re-planned: {'; '.join(planned.notes)})" if planned.notes else reason
    related = tuple(u.memory_id for u in planned.replace)
    plan.results.append(WriteResult("superseded", new, related, why, planned.replace))
    return plan


def plan_feedback(
    current: Sequence[MemoryUnit],
    *,
    when: datetime,
    success: bool | None,
    rejected: bool,
    repeats: Mapping[str, int],
    policy: ConfidencePolicy,
) -> list[MemoryUnit]:
    """``current`` after one piece of feedback: one more access at ``when``, confidence moved by ``policy``.

    A credit never lifts a ``suspicious`` unit over ``policy.suspicious_cap``.
    """
    updated: list[MemoryUnit] = []
    for u in current:
        confidence = policy.apply(
            u.score_confidence, success=success, rejected=rejected, repeats=repeats.get(u.memory_id, 0)
        )
        if success is True and not rejected and SUSPICIOUS_TAG in u.tags:
            capped = max(u.score_confidence, policy.suspicious_cap)
            if confidence > capped:
                logger.info("memory %s is suspicious: its credit stops at %.2f", u.memory_id, capped)
                confidence = capped
        last = max(u.last_accessed_at, when)
        updated.append(u.evolve(access_count=u.access_count + 1, last_accessed_at=last, confidence=confidence))

    return updated


def fresh_ids_for_taken(units: list[MemoryUnit], taken: set[str]) -> list[MemoryUnit]:
    """``units`` with a new id for each whose id is already stored (or repeated in the batch).

    Naming a stored id never overwrites it (a less trusted duplicate could rewrite a more trusted one): ``update``,
    which checks provenance, does that.
    """
    out: list[MemoryUnit] = []
    seen = set(taken)
    for unit in units:
        if unit.memory_id in seen:
            fresh = new_memory_id()
            logger.warning("memory id %s is already stored: the incoming unit is added as %s", unit.memory_id, fresh)
            unit = unit.evolve(memory_id=fresh)
        seen.add(unit.memory_id)
        out.append(unit)
    return out
