"""Periodic review: cross-task patterns from the run journal, by one LLM call or by rules.

Pure helpers (:func:`format_runs`, :func:`parse_experiences`, :func:`rule_patterns`)
plus :func:`run_review`, which :meth:`Lifecycle.review` calls.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from langchain_hindsight._json import json_items, parse_json_text
from langchain_hindsight._safety import render_safe
from langchain_hindsight._text import clip_text
from langchain_hindsight.errors import InvalidMemoryError, ReflectionError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.lifecycle.policy import LifecyclePolicy, ReviewReport
from langchain_hindsight.prompts import (
    REVIEW_SET_ASIDE_EN,
    REVIEW_SET_ASIDE_ZH,
    Locale,
    ReviewTemplates,
    get_review_templates,
)
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.taxonomy import FALLBACK_TASK_TYPE
from langchain_hindsight.types import MemoryUnit

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["format_runs", "parse_experiences", "review_id", "rule_patterns", "run_review"]

_TASK_CHARS = 200
_MEMORY_CHARS = 120
_MEMORIES_PER_RUN = 3
_FEATURES_PER_TYPE = 3


def review_id(namespace: str, task_type: str, content: str) -> str:
    """A deterministic memory id for a review unit: the same pattern is never stored twice."""
    digest = hashlib.sha256(f"{namespace}\x00{task_type}\x00{content}".encode()).hexdigest()[:32]
    return f"mem_review_{digest}"


def _clip(text: str, limit: int) -> str:
    return clip_text(render_safe(text), limit, "…")[0] if text else ""


def format_runs(
    runs: Sequence[RunRecord], units: Mapping[str, MemoryUnit], templates: ReviewTemplates, locale: Locale = "zh"
) -> str:
    """The runs as the review prompt shows them, one line each, oldest first (memory texts made safe).

    A memory the run's agent said does not apply is not listed as used: it is named after
    the line (:data:`~langchain_hindsight.prompts.REVIEW_SET_ASIDE_ZH`), so the review sees
    which memories were served and set aside.
    """
    aside_line = REVIEW_SET_ASIDE_ZH if locale == "zh" else REVIEW_SET_ASIDE_EN

    def memories(ids: Sequence[str]) -> str:
        texts = [_clip(units[i].content, _MEMORY_CHARS) for i in ids if i in units][:_MEMORIES_PER_RUN]
        return templates.memory_separator.join(texts) if texts else templates.none

    def line(r: RunRecord) -> str:
        aside = set(r.set_aside_ids)
        text = templates.run_line.format(
            date=r.started_at.strftime("%Y-%m-%d"),
            task_type=r.task_type or FALLBACK_TASK_TYPE,
            outcome=templates.outcome_labels.get(r.judged_outcome, r.judged_outcome),
            task=_clip(r.task, _TASK_CHARS) or templates.none,
            served=memories([i for i in r.served_ids if i not in aside]),
            produced=memories(r.produced),
        )
        if aside:
            text += aside_line.format(served=memories([i for i in r.served_ids if i in aside]))
        return text

    return "\n".join(line(r) for r in sorted(runs, key=lambda r: r.started_at))


def parse_experiences(text: str) -> list[dict[str, Any]]:
    """The ``experiences`` list of a JSON answer (bare, fenced, or with prose around it).

    Raises:
        ReflectionError: no JSON object with an ``experiences`` list is found.
    """
    payload, ok = parse_json_text(text)
    items = json_items(payload) if ok else None
    if items is not None:
        return [e for e in items if isinstance(e, dict)]
    raise ReflectionError(f"the review model did not answer with JSON experiences: {text[:200]!r}")


def rule_patterns(
    runs: Sequence[RunRecord],
    units: Mapping[str, MemoryUnit],
    policy: LifecyclePolicy,
    templates: ReviewTemplates,
) -> list[tuple[str, str, str]]:
    """``(task_type, content, feature)`` patterns found without a model.

    Per task type with at least ``review_min_runs`` runs: every tag or tool of
    the memories a run used or produced that appears in at least
    ``review_share`` of the runs (top three), and a failure rate of half or more.
    """
    by_type: dict[str, list[RunRecord]] = {}
    for r in runs:
        by_type.setdefault(r.task_type or FALLBACK_TASK_TYPE, []).append(r)
    out: list[tuple[str, str, str]] = []
    for task_type, group in sorted(by_type.items()):
        total = len(group)
        if total < policy.review_min_runs:
            continue
        counts: Counter[str] = Counter()
        for r in group:
            features: set[str] = set()
            aside = set(r.set_aside_ids)  # the agent said it does not apply: not a feature of the run
            for i in [*r.served_ids, *r.produced]:
                if i in units and i not in aside:
                    features.update(units[i].tags)
                    features.update(units[i].context.tools_used)
            counts.update(features)
        needed = max(policy.review_min_runs, math.ceil(policy.review_share * total))
        common = sorted((kv for kv in counts.items() if kv[1] >= needed), key=lambda kv: (-kv[1], kv[0]))
        for feature, count in common[:_FEATURES_PER_TYPE]:
            content = templates.rule_feature.format(total=total, count=count, task_type=task_type, feature=feature)
            out.append((task_type, content, feature))
        failed = sum(r.judged_outcome == "failure" for r in group)
        if failed >= 2 and failed * 2 >= total:
            out.append((task_type, templates.rule_failures.format(total=total, failed=failed, task_type=task_type), ""))
    return out


def _model_units(
    store: MemoryStore,
    model: BaseChatModel,
    policy: LifecyclePolicy,
    templates: ReviewTemplates,
    runs: Sequence[RunRecord],
    units: Mapping[str, MemoryUnit],
    ns: str,
    locale: Locale = "zh",
) -> list[MemoryUnit]:
    prompt = templates.prompt.format(
        task_types=", ".join(store.vocabulary.labels), runs=format_runs(runs, units, templates, locale)
    )
    try:
        answer = model.invoke(prompt)
    except Exception as e:
        raise ReflectionError(f"the review model call failed: {e}") from e
    content = answer.content if isinstance(answer.content, str) else json.dumps(answer.content, ensure_ascii=False)
    cap = policy.review_confidence_cap
    out: list[MemoryUnit] = []
    for item in parse_experiences(content):
        text = item.get("content")
        if not isinstance(text, str) or not text.strip():
            continue
        task_type = store.vocabulary.normalize(str(item.get("task_type") or FALLBACK_TASK_TYPE))
        raw = item.get("confidence")
        confidence = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else cap
        tags = [str(t) for t in item.get("tags") or [] if isinstance(t, str | int)]
        try:
            out.append(
                MemoryUnit(
                    memory_id=review_id(ns, task_type, text.strip()),
                    task_type=task_type,
                    content=text,
                    confidence=min(cap, max(0.0, confidence)),
                    source="review",
                    tags=tags,
                    namespace=ns,
                )
            )
        except InvalidMemoryError:
            continue  # one bad item does not spoil the others; the rest are still stored
    return out


def run_review(
    store: MemoryStore,
    journal: RunJournal,
    model: BaseChatModel | None,
    policy: LifecyclePolicy,
    locale: Locale,
    *,
    window_days: float,
    now: datetime,
    namespace: str,
) -> ReviewReport:
    """One review of ``namespace`` over ``[now - window_days, now)``; see :meth:`Lifecycle.review`."""
    runs = journal.list_runs(namespace=namespace, since=now - timedelta(days=window_days), until=now, kind="run")
    if len(runs) < policy.review_min_runs:
        return ReviewReport(namespace=namespace, runs=len(runs), skipped="too few runs")
    runs = runs[: policy.review_max_runs]  # newest first: bounded prompt, bounded cost
    ids = list(dict.fromkeys(i for r in runs for i in [*r.served_ids, *r.produced]))
    units = {u.memory_id: u for u in store.get_many(ids, namespace=namespace)} if ids else {}
    templates = get_review_templates(locale)
    if model is not None:
        candidates = _model_units(store, model, policy, templates, runs, units, namespace, locale)
    else:
        candidates = [
            MemoryUnit(
                memory_id=review_id(namespace, task_type, content),
                task_type=task_type,
                content=content,
                confidence=policy.review_confidence,
                source="review",
                tags=[feature] if feature else [],
                namespace=namespace,
            )
            for task_type, content, feature in rule_patterns(runs, units, policy, templates)
        ]
    candidates = list({u.memory_id: u for u in candidates}.values())
    known = {u.memory_id for u in store.get_many([u.memory_id for u in candidates], namespace=namespace)}
    fresh = [u.evolve(created_at=now, last_accessed_at=now) for u in candidates if u.memory_id not in known]
    created = [r.unit for r in store.add_many(fresh, namespace=namespace)] if fresh else []
    record = RunRecord(
        run_id=f"review-{now.strftime('%Y%m%dT%H%M%S%fZ')}",
        kind="review",
        task=templates.review_task.format(days=f"{window_days:g}"),
        namespace=namespace,
        outcome="success",
        started_at=now,
        ended_at=now,
        produced=[u.memory_id for u in created],
    )
    journal.record(record)
    return ReviewReport(
        namespace=namespace, runs=len(runs), created=created, used_model=model is not None, review_id=record.run_id
    )
