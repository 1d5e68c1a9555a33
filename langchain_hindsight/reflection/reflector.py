"""``Reflector``: turn a :class:`Trajectory` into memory units, with an LLM, rules, or both.

* **LLM extraction** with the extraction prompt (:data:`~langchain_hindsight.prompts.EXTRACTION_PROMPT_ZH`),
  structured output validated by :class:`ExtractionOutput` (``with_structured_output`` when the
  model supports tool calling, otherwise JSON parsed from the text, fenced blocks included).
  Malformed items are repaired or rejected with one log line; "nothing worth keeping" is an
  empty list and stores nothing.
* **Rules** that need no LLM (``_rules``): error → fix, instability after retries, "avoid" after a
  failed task, and explicit user feedback (stored immediately with :meth:`Reflector.record_user_feedback`).

Candidates go through ``MemoryStore.add_many(dedupe=True)``, so a repeated lesson (the same
statement) merges into the stored one instead of duplicating it. :class:`BackgroundReflector` runs reflection off the
agent's hot path.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, Field

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight._json import json_items, response_payload, structured_runnable
from langchain_hindsight._safety import looks_like_instruction, render_safe
from langchain_hindsight._text import clip_text, informative
from langchain_hindsight.errors import ConfigurationError, InvalidMemoryError, ReflectionError
from langchain_hindsight.prompts import Locale, ReflectionTemplates, get_reflection_templates, get_templates
from langchain_hindsight.reflection._rules import RuleSettings, apply_rules, feedback_unit, json_safe
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MAX_CONTENT_CHARS, MemoryContext, MemoryUnit, Trajectory

__all__ = ["ExtractedExperience", "ExtractionOutput", "Reflector"]

logger = logging.getLogger(__name__)

_CONTEXT_KEYS = ("tools_used", "tools", "parameters", "input_sample", "output_sample")
_STEP_CHARS = 600


class ExtractedExperience(BaseModel):
    """One experience as the reflection LLM returns it (the extraction prompt's JSON shape)."""

    task_type: str = Field(default="", description="One label from the given task-type list.")
    content: str = Field(description="The reusable experience, specific, with key parameters and conditions.")
    context: dict[str, Any] = Field(
        default_factory=dict, description="tools_used, parameters, input_sample, output_sample"
    )
    confidence: float | None = Field(default=None, description="Confidence in this experience, 0-1.")
    tags: list[str] = Field(default_factory=list)


class ExtractionOutput(BaseModel):
    """Experiences distilled from one agent run. Return an empty list when nothing is worth keeping."""

    experiences: list[ExtractedExperience] = Field(default_factory=list)


# ---------------------------------------------------------------------- pure helpers (sync and async share them)
def render_trajectory(traj: Trajectory, templates: ReflectionTemplates, *, max_chars: int = 12000) -> str:
    """The trajectory as the extraction prompt shows it: task, outcome, numbered steps."""
    t = templates
    error = f"（{traj.error}）" if traj.error else ""
    lines = [
        t.trajectory_task.format(task=" ".join(traj.task.split())),
        t.trajectory_outcome.format(outcome=t.outcome_labels.get(traj.outcome, traj.outcome), error=error),
        t.trajectory_steps,
    ]
    for i, step in enumerate(traj.steps, 1):
        label = t.step_labels.get(step.type, step.type)
        if step.type == "tool_call":
            body = f"{step.tool_name}({json.dumps(json_safe(step.tool_args), ensure_ascii=False)})"
        elif step.type == "error":
            where = f"{step.tool_name}: " if step.tool_name else ""
            body = f"{where}{step.error_type or 'Error'}: {step.error_message or step.content}"
        elif step.type == "tool_result":
            body = f"{step.tool_name}: {step.content}"
        else:
            body = step.content
        body = clip_text(" ".join(body.split()), _STEP_CHARS, t.truncation_marker)[0]
        lines.append(f"{i}. [{label}] {body}")
    return clip_text("\n".join(lines), max_chars, t.truncation_marker)[0]


def _as_confidence(value: Any, default: float, band: tuple[float, float]) -> float:
    if isinstance(value, str):
        value = value.strip().rstrip("%")
        try:
            value = float(value)
        except (ValueError, RecursionError):  # RecursionError: absurdly nested JSON
            return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    if 1.0 < value <= 100.0:  # a percentage
        value = value / 100.0
    return round(min(band[1], max(band[0], float(value))), 4)


def _as_str_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in re.split(r"[,，;；、]", value) if v.strip()]
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if isinstance(v, str | int | float) and str(v).strip()]
    return []


def _as_sample(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return clip_text(text, 500, "…")[0]


def _as_context(value: Any) -> MemoryContext:
    """Repair the model's ``context``: unknown keys fold into ``parameters``; non-dicts are dropped."""
    if not isinstance(value, dict):
        return MemoryContext()
    params = value.get("parameters")
    params = dict(params) if isinstance(params, dict) else {}
    for key, item in value.items():
        if key not in _CONTEXT_KEYS:
            params.setdefault(str(key), item)
    tools = value.get("tools_used", value.get("tools", []))
    return MemoryContext(
        tools_used=_as_str_list(tools),
        parameters=json_safe(params),
        input_sample=_as_sample(value.get("input_sample")),
        output_sample=_as_sample(value.get("output_sample")),
    )


# ---------------------------------------------------------------------- the reflector
@refuse_unknown_keywords
class Reflector:
    """Distils a trajectory into candidate memory units and stores them.

    Setup:
        Rules only (no LLM, no key needed) or with any LangChain chat model
        (``ChatOpenAI``, any OpenAI-compatible ``base_url``, or a fake in tests).

    Use:
        .. code-block:: python

            from langchain_hindsight import MemoryStore, Reflector, TrajectoryRecorder

            recorder = TrajectoryRecorder()
            agent.invoke(inputs, config={"callbacks": [recorder]})
            with MemoryStore("./memory_db") as store:
                units = Reflector(store=store).reflect(recorder.last_trajectory)   # rules only
                units = Reflector(store=store, model=chat_model).reflect(recorder.last_trajectory)

    Async:
        ``await reflector.areflect(traj)`` awaits the model and writes in a worker thread.

    Args:
        store: Where :meth:`reflect` writes (``add_many(dedupe=True)``). Optional for :meth:`extract`.
        model: A chat model for LLM extraction. Without one, only the rules run.
        rules: Apply the rules (also alongside a model: rules catch what a model misses).
        locale: ``"zh"`` (default) or ``"en"`` prompt and rule texts.
        vocabulary: Task-type vocabulary (default: the store's, else the built-in one).
        namespace: Namespace of produced units (default: the trajectory's).
        extraction_prompt: Override the extraction prompt; placeholders ``{trajectory}``
            (required) and ``{task_types}``.
        confidence_band: Model-given confidence is clamped into this band (self-report
            never exceeds 0.85 by default).
        default_confidence: Confidence of LLM units when the model gives none.
        retry_threshold: Attempts of one tool that count as instability (three).
        structured_output: Use ``with_structured_output`` when the model supports it.
        on_model_error: ``"raise"`` (default): a failing model call raises
            :class:`ReflectionError` and nothing is stored; ``"skip"``: log one warning and
            keep the rule-made units.
        max_trajectory_chars: The rendered trajectory is cut (head and tail) to this size.

    Raises:
        ConfigurationError: an invalid option.
    """

    def __init__(
        self,
        store: MemoryStore | None = None,
        model: BaseChatModel | None = None,
        *,
        rules: bool = True,
        locale: Locale = "zh",
        vocabulary: TaskTypeVocabulary | None = None,
        namespace: str | None = None,
        extraction_prompt: str | None = None,
        confidence_band: tuple[float, float] = (0.3, 0.85),
        default_confidence: float = 0.65,
        retry_threshold: int = 3,
        structured_output: bool = True,
        on_model_error: Literal["raise", "skip"] = "raise",
        max_trajectory_chars: int = 12000,
    ) -> None:
        if store is not None and not isinstance(store, MemoryStore):
            raise ConfigurationError(f"store must be a MemoryStore, got {type(store).__name__}")
        if model is not None and not isinstance(model, BaseChatModel):
            raise ConfigurationError(f"model must be a LangChain chat model, got {type(model).__name__}")
        if model is None and not rules:
            raise ConfigurationError("with no model, rules must be enabled: there would be nothing to reflect with")
        low, high = confidence_band
        if not 0.0 <= low <= high <= 1.0:
            raise ConfigurationError(f"confidence_band must satisfy 0 <= low <= high <= 1, got {confidence_band!r}")
        if not low <= default_confidence <= high:
            raise ConfigurationError(f"default_confidence must lie in confidence_band, got {default_confidence!r}")
        if isinstance(retry_threshold, bool) or not isinstance(retry_threshold, int) or retry_threshold < 2:
            raise ConfigurationError(f"retry_threshold must be an int >= 2, got {retry_threshold!r}")
        if on_model_error not in ("raise", "skip"):
            raise ConfigurationError(f"on_model_error must be 'raise' or 'skip', got {on_model_error!r}")
        if namespace is not None and (not isinstance(namespace, str) or not namespace.strip()):
            raise ConfigurationError("namespace must be a non-empty string or None")
        prompt = extraction_prompt if extraction_prompt is not None else get_templates(locale).extraction_prompt
        try:
            prompt.format(trajectory="", task_types="")
        except (KeyError, IndexError, ValueError) as e:
            raise ConfigurationError(f"extraction_prompt has an unknown placeholder or stray brace: {e}") from e
        if "{trajectory}" not in prompt:
            raise ConfigurationError("extraction_prompt must contain the {trajectory} placeholder")
        self.store = store
        self.model = model
        self.rules = rules
        self.locale = locale
        self.templates = get_reflection_templates(locale)
        self.vocabulary = vocabulary or (store.vocabulary if store is not None else TaskTypeVocabulary())
        self.namespace = namespace
        self.extraction_prompt = prompt
        self.confidence_band = (float(low), float(high))
        self.default_confidence = float(default_confidence)
        self.retry_threshold = retry_threshold
        self.structured_output = structured_output
        self.on_model_error = on_model_error
        self.max_trajectory_chars = max_trajectory_chars
        self._runnable: Runnable[Any, Any] | None = None

    # ------------------------------------------------------------------ shared pure steps
    def _check(self, traj: object) -> Trajectory:
        if not isinstance(traj, Trajectory):
            raise ConfigurationError(f"expected a Trajectory, got {type(traj).__name__}")
        return traj

    def _namespace(self, traj: Trajectory) -> str:
        return self.namespace or traj.namespace or (self.store.namespace if self.store else "default")

    def _task_type(self, traj: Trajectory) -> str:
        return self.vocabulary.normalize(traj.task_type or traj.task)

    def _prepare_messages(self, traj: Trajectory) -> list[BaseMessage]:
        rendered = render_trajectory(traj, self.templates, max_chars=self.max_trajectory_chars)
        labels = ", ".join(self.vocabulary.labels)
        return [HumanMessage(content=self.extraction_prompt.format(trajectory=rendered, task_types=labels))]

    def _prepare_runnable(self) -> Runnable[Any, Any]:
        """The model, wrapped for structured output when it supports it (built once)."""
        if self._runnable is None:
            assert self.model is not None
            self._runnable = structured_runnable(self.model, ExtractionOutput, structured=self.structured_output)
        return self._runnable

    def _parse_units(self, traj: Trajectory, response: Any) -> list[MemoryUnit]:
        """Validated units from a model response. Bad items are rejected; the verdict is one log line."""
        payload, ok = response_payload(response)
        items = json_items(payload) if ok else None
        if items is None:
            logger.warning("reflection of run %s: model output is not the expected JSON; nothing kept", traj.run_id)
            return []
        units: list[MemoryUnit] = []
        rejected: list[str] = []
        namespace = self._namespace(traj)
        for n, item in enumerate(items, 1):
            unit, why = self._unit_from_item(item, traj, namespace)
            if unit is None:
                rejected.append(f"#{n} {why}")
            else:
                units.append(unit)
        if rejected:
            logger.warning(
                "reflection of run %s: kept %d of %d item(s); rejected %s",
                traj.run_id,
                len(units),
                len(items),
                "; ".join(rejected),
            )
        return units

    def _unit_from_item(self, item: Any, traj: Trajectory, namespace: str) -> tuple[MemoryUnit | None, str]:
        if isinstance(item, BaseModel):
            item = item.model_dump()
        if not isinstance(item, dict):
            return None, f"not an object ({type(item).__name__})"
        content = item.get("content")
        if not isinstance(content, str) or not content.strip():
            return None, "no content"
        try:
            content.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate (a bad JSON escape): corrupt, not to be repaired silently
            return None, f"content is not valid Unicode text ({e.reason})"
        raw, content = content, render_safe(content)
        if len(content) > MAX_CONTENT_CHARS:
            return None, f"content too long ({len(content)} characters)"
        if not informative(content):
            return None, f"content {content[:40]!r} carries no information"
        if looks_like_instruction(raw) or looks_like_instruction(content):  # the raw text: before neutralisation
            return None, "content reads like an instruction (possible prompt injection)"
        raw_type = item.get("task_type")
        task_type = self.vocabulary.normalize(raw_type) if isinstance(raw_type, str) and raw_type.strip() else None
        try:
            unit = MemoryUnit(
                task_type=task_type or self._task_type(traj),
                task_description=clip_text(traj.task, 500, "…")[0],
                content=content,
                context=_as_context(item.get("context")),
                confidence=_as_confidence(item.get("confidence"), self.default_confidence, self.confidence_band),
                source="agent_inference",
                tags=_as_str_list(item.get("tags")),
                namespace=namespace,
                run_id=traj.run_id,
            )
        except InvalidMemoryError as e:
            return None, str(e)
        return unit, ""

    def _rule_units(self, traj: Trajectory, hint: Sequence[MemoryUnit] = ()) -> list[MemoryUnit]:
        if not self.rules:
            return []
        task_type = self._task_type(traj)
        if task_type == self.vocabulary.fallback and hint:
            task_type = hint[0].task_type  # the model classified the task; use its label for the rule units too
        settings = RuleSettings(
            templates=self.templates,
            task_type=task_type,
            namespace=self._namespace(traj),
            retry_threshold=self.retry_threshold,
        )
        units = apply_rules(traj, settings)
        kept = [u for u in units if informative(u.content)]
        if len(kept) < len(units):
            logger.info(
                "reflection of run %s: skipped %d rule unit(s) whose content carries no information",
                traj.run_id,
                len(units) - len(kept),
            )
        return kept

    def _model_failed(self, traj: Trajectory, error: Exception) -> None:
        if self.on_model_error == "raise":
            raise ReflectionError(f"reflection model call failed for run {traj.run_id}: {error}") from error
        logger.warning("reflection of run %s: model call failed (%s); keeping rule units only", traj.run_id, error)

    def _require_store(self) -> MemoryStore:
        if self.store is None:
            raise ConfigurationError("this Reflector has no store; pass store=... to write units")
        return self.store

    # ------------------------------------------------------------------ sync
    def extract(self, traj: Trajectory) -> list[MemoryUnit]:
        """Candidate units for ``traj`` (LLM items first, then rule units); nothing is stored.

        Raises:
            ReflectionError: the model call failed and ``on_model_error="raise"``.
        """
        traj = self._check(traj)
        llm_units: list[MemoryUnit] = []
        if self.model is not None:
            try:
                response = self._prepare_runnable().invoke(self._prepare_messages(traj))
            except Exception as e:  # noqa: BLE001 - any provider error becomes a typed ReflectionError or a warning
                self._model_failed(traj, e)
            else:
                llm_units = self._parse_units(traj, response)
        return [*llm_units, *self._rule_units(traj, llm_units)]

    def reflect(self, traj: Trajectory) -> list[MemoryUnit]:
        """Extract and store; returns the stored units (merged ones included). Empty when nothing was learned.

        Raises:
            ConfigurationError: no store.
            ReflectionError: the model call failed and ``on_model_error="raise"``.
            StoreError: the store failed.
        """
        store = self._require_store()
        units = self.extract(traj)
        return [r.unit for r in store.add_many(units, dedupe=True)] if units else []

    def record_user_feedback(
        self,
        text: str,
        *,
        task: str = "",
        task_type: str | None = None,
        namespace: str | None = None,
        run_id: str | None = None,
    ) -> list[MemoryUnit]:
        """Write an explicit user correction now (a strong signal, stored immediately).

        ``"不对，应该…"`` / ``"No, you should …"`` becomes a ``user_feedback`` unit with high
        confidence; a bare acknowledgement ("谢谢", "ok") stores nothing.

        Example:
            >>> reflector.record_user_feedback("不对，周报只统计本周一到周日的数据", task="生成周报")  # doctest: +SKIP

        Returns:
            The stored unit (as a one-element list), or ``[]``.
        """
        store = self._require_store()
        unit = self._feedback_unit(text, task=task, task_type=task_type, namespace=namespace, run_id=run_id)
        return [r.unit for r in store.add_many([unit], dedupe=True)] if unit is not None else []

    def _feedback_unit(
        self, text: str, *, task: str, task_type: str | None, namespace: str | None, run_id: str | None
    ) -> MemoryUnit | None:
        if not isinstance(text, str) or not text.strip():
            raise ConfigurationError("feedback text must be a non-empty string")
        unit = feedback_unit(
            text,
            templates=self.templates,
            task=task,
            task_type=self.vocabulary.normalize(task_type or task),
            namespace=namespace or self.namespace or (self.store.namespace if self.store else "default"),
            run_id=run_id,
        )
        if unit is None:
            logger.info(
                "user feedback on run %s stores no memory: %r is an acknowledgement or carries no correction",
                run_id,
                text[:60],
            )
        return unit

    # ------------------------------------------------------------------ async
    async def aextract(self, traj: Trajectory) -> list[MemoryUnit]:
        """Async :meth:`extract` (awaits the model)."""
        traj = self._check(traj)
        llm_units: list[MemoryUnit] = []
        if self.model is not None:
            try:
                response = await self._prepare_runnable().ainvoke(self._prepare_messages(traj))
            except Exception as e:  # noqa: BLE001 - see extract
                self._model_failed(traj, e)
            else:
                llm_units = self._parse_units(traj, response)
        return [*llm_units, *self._rule_units(traj, llm_units)]

    async def areflect(self, traj: Trajectory) -> list[MemoryUnit]:
        """Async :meth:`reflect` (awaits the model; the store write runs in a worker thread)."""
        store = self._require_store()
        units = await self.aextract(traj)
        if not units:
            return []
        return [r.unit for r in await asyncio.to_thread(store.add_many, units, dedupe=True)]

    async def arecord_user_feedback(
        self,
        text: str,
        *,
        task: str = "",
        task_type: str | None = None,
        namespace: str | None = None,
        run_id: str | None = None,
    ) -> list[MemoryUnit]:
        """Async :meth:`record_user_feedback` (the store write runs in a worker thread)."""
        store = self._require_store()
        unit = self._feedback_unit(text, task=task, task_type=task_type, namespace=namespace, run_id=run_id)
        if unit is None:
            return []
        return [r.unit for r in await asyncio.to_thread(store.add_many, [unit], dedupe=True)]
