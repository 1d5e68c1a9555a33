"""The recall computation, without the LangChain retriever stack: one implementation for every caller.

:func:`recall` is what a recall computes (steps 1–5 of
:mod:`langchain_hindsight.recall.retriever`): it checks the arguments, resolves the
task type (the caller's, else the keyword rules, else the optional classifier),
cleans the query, embeds it once, runs the hybrid search on the searched namespace
and every extra one, and ranks the candidates with
:func:`~langchain_hindsight.recall.ranking.rank_candidates` under the fusion weights
:func:`~langchain_hindsight.recall.fusion.fusion_weights_for` picks.
:class:`~langchain_hindsight.recall.retriever.HindsightRetriever` builds a
:class:`RecallSettings` from its fields and delegates here (it keeps the served log,
``on_served`` and the weak-match warning); ``hindsight search`` calls it on the opened store
directly, so the command never imports ``langchain_core.retrievers`` or
``langchain_core.language_models`` (whose import alone costs a few hundred milliseconds).

The source is anything with the store's recall surface (:class:`RecallSource`), such as a
:class:`~langchain_hindsight.store.memory_store.MemoryStore`.

Example:
    >>> from langchain_hindsight.recall.engine import RecallSettings, recall
    >>> recalled = recall(store, RecallSettings(k=3), "生成本周的销售周报")  # doctest: +SKIP
    >>> recalled.result.task_type, [m.memory.memory_id for m in recalled.result.memories]  # doctest: +SKIP
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, get_args

from langchain_hindsight._checks import check_int, check_number, check_options, refuse_unknown_keywords
from langchain_hindsight._script import FusionWeights
from langchain_hindsight._text import clean_text, informative
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.recall.fusion import Fusion, fusion_weights_for
from langchain_hindsight.recall.ranking import AUTO_FLOOR, FloorRule, MinRelevance, ScriptCache, rank_candidates
from langchain_hindsight.recall.relevance import RelevanceCheck, apply_relevance_check, as_relevance_check
from langchain_hindsight.recall.scoring import ScoringWeights
from langchain_hindsight.recall.task_type import (
    CLASSIFY_MAX_CHARS,
    TaskClassifier,
    as_classifier,
    pick_label,
    resolve_task_type,
)
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import MemoryUnit, ScoredMemory, TaskTypeSource, utcnow

if TYPE_CHECKING:
    from langchain_hindsight.embeddings.models import QueryEmbedder

__all__ = [
    "DEFAULT_K",
    "FUSION_OPTIONS",
    "RECALL_OPTIONS",
    "RecallResult",
    "RecallSettings",
    "RecallSource",
    "Recalled",
    "recall",
    "resolve_task",
]

logger = logging.getLogger(__name__)

Candidates = tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]
"""What one hybrid search returns: memory id → (memory, cosine), and memory id → BM25 score."""


class RecallSource(Protocol):
    """The recall surface of a store (a :class:`MemoryStore` has it)."""

    @property
    def embeddings(self) -> QueryEmbedder:
        """The store's embedder (its ``fusion_weights``, when declared, are the default fusion weights)."""
        ...

    @property
    def vocabulary(self) -> TaskTypeVocabulary:
        """The store's task-type vocabulary."""
        ...

    def namespace_or_default(self, namespace: str | None) -> str:
        """``namespace`` checked, or the default namespace when ``None``."""
        ...

    def hybrid_search(
        self, query: str, vector: Sequence[float], *, k: int = 10, namespace: str | None = None, normalize: bool = False
    ) -> Candidates:
        """Both arms' candidates for ``query`` in ``namespace``, ``k`` deep each."""
        ...


DEFAULT_K = 5
"""Memories recalled per task when no ``k`` is given (the retriever's, the session's and ``Hindsight``'s)."""


@refuse_unknown_keywords
@dataclass(frozen=True, slots=True)
class RecallSettings:
    """The options of a recall, with their defaults: the one place they are filled and checked.

    A :class:`~langchain_hindsight.recall.retriever.HindsightRetriever` holds one of these
    (``retriever.settings``; its keyword options such as ``k=`` or ``min_relevance=`` are
    packed into it by :meth:`from_options`), ``Hindsight(...)`` builds one from its options,
    and :func:`recall` reads it. Invalid values raise
    :class:`~langchain_hindsight.errors.ConfigurationError` at construction.

    Attributes:
        k: Memories returned per call (a per-call ``k`` overrides it).
        task_type: The task type scored against (normalised with the vocabulary); ``None`` infers it.
        namespace: Namespace to search; ``None`` uses the source's default.
        extra_namespaces: Namespaces recalled with it in the same call, in order.
        weights: The scoring weights.
        min_score: Drop memories whose weighted score is below this.
        min_relevance: The relevance floor (:data:`~langchain_hindsight.recall.ranking.MinRelevance`).
            **This is the one place its default lives**: ``Hindsight``, ``HindsightRetriever``,
            ``HindsightStore``, ``hindsight search`` and the console all take it from here.
            ``"auto"`` (default) applies :data:`~langchain_hindsight.recall.ranking.AUTO_FLOOR`:
            the best ``k`` are served when at least one of them has evidence (its cosine and
            lexical share against a threshold for the query's script), nothing when none has —
            when unsure, serve; the agent's model sets aside what does not apply. A number is an
            absolute floor on the fused relevance of each memory, a
            :class:`~langchain_hindsight.recall.ranking.FloorRule` is applied as given (its
            ``scope="candidate"`` judges each memory alone), ``None`` disables it.
        infer_task_type: ``False``: no inference (no task-type bonus unless a task type is given).
        classifier: Asked when the keyword rules recognise nothing (already a callable:
            :func:`~langchain_hindsight.recall.task_type.as_classifier` wraps a chat model).
        fusion: How the two arms combine.
        fusion_weights: The caller's fusion weights.
        explicit_fusion: Which of them the caller set (``fusion_alpha``, ``fusion_alpha_cjk``,
            ``fusion_cross_script``); the embedder's declared weights fill in the others.
        candidate_multiplier: Each arm fetches ``candidate_multiplier × k``.
        relevance_check: Off (``None``) by default. A chat model (asked once per recall with
            ``RELEVANCE_CHECK_PROMPT_*``, bounded, validated and cached) or a callable
            ``(task, memory texts) -> list[bool] | None`` (:mod:`~langchain_hindsight.recall.relevance`):
            after the floor, the memories it says cannot apply are not served; when it fails or
            gives no valid verdict everything the floor served is served.
    """

    k: int = DEFAULT_K
    task_type: str | None = None
    namespace: str | None = None
    extra_namespaces: tuple[str, ...] = ()
    weights: ScoringWeights = field(default_factory=ScoringWeights)
    min_score: float = 0.0
    min_relevance: MinRelevance | FloorRule = "auto"
    infer_task_type: bool = True
    classifier: TaskClassifier | None = None
    fusion: Fusion = "convex_idf"
    fusion_weights: FusionWeights = field(default_factory=FusionWeights)
    explicit_fusion: frozenset[str] = frozenset()
    candidate_multiplier: int = 3
    relevance_check: RelevanceCheck | None = None

    def __post_init__(self) -> None:
        check_int("k", self.k)
        check_int("candidate_multiplier", self.candidate_multiplier)
        for name in ("task_type", "namespace"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigurationError(f"{name} must be a string or None, got {value!r}")
        if not isinstance(self.extra_namespaces, tuple) or not all(isinstance(n, str) for n in self.extra_namespaces):
            raise ConfigurationError(f"extra_namespaces must be a tuple of strings, got {self.extra_namespaces!r}")
        if not isinstance(self.weights, ScoringWeights):
            raise ConfigurationError(f"weights must be ScoringWeights, got {type(self.weights).__name__}")
        check_number("min_score", self.min_score)
        floor = self.min_relevance
        if not (floor is None or floor == "auto" or isinstance(floor, FloorRule)):
            if isinstance(floor, str):
                raise ConfigurationError(f"min_relevance must be 'auto', a number in [0, 1] or None, got {floor!r}")
            check_number("min_relevance", floor, 0.0, 1.0)
        if not isinstance(self.infer_task_type, bool):
            raise ConfigurationError(f"infer_task_type must be a bool, got {self.infer_task_type!r}")
        if self.relevance_check is not None and not callable(self.relevance_check):
            raise ConfigurationError(
                f"relevance_check must be a chat model, a callable or None, got {type(self.relevance_check).__name__}"
            )
        if self.classifier is not None and not callable(self.classifier):
            raise ConfigurationError(f"classifier must be callable or None, got {type(self.classifier).__name__}")
        if self.fusion not in get_args(Fusion):
            raise ConfigurationError(f"fusion must be one of {get_args(Fusion)}, got {self.fusion!r}")
        if not isinstance(self.fusion_weights, FusionWeights):
            raise ConfigurationError(f"fusion_weights must be FusionWeights, got {type(self.fusion_weights).__name__}")
        unknown = self.explicit_fusion - FUSION_OPTIONS
        if unknown:
            raise ConfigurationError(f"explicit_fusion names unknown fusion options: {sorted(unknown)}")

    @classmethod
    def from_options(cls, base: RecallSettings | None = None, /, **options: Any) -> RecallSettings:
        """``base`` (default: all defaults) with the retriever's keyword options applied.

        The keywords are :data:`RECALL_OPTIONS`: every field of this class by name, plus
        ``fusion_alpha``, ``fusion_alpha_cjk`` and ``fusion_cross_script`` (the fields of
        :attr:`fusion_weights`; each one given is also recorded in :attr:`explicit_fusion`, so it
        wins over the embedder's declared weights), ``task_classifier`` (a chat model or a callable,
        wrapped into :attr:`classifier`), ``relevance_check`` (a chat model is wrapped into a
        check) and ``locale`` (the language a chat-model classifier or check is asked in; only
        read together with ``task_classifier`` or ``relevance_check``).

        Example:
            >>> s = RecallSettings.from_options(k=3, min_relevance=0.2, fusion_alpha=0.6)
            >>> s.k, s.min_relevance, s.fusion_weights.alpha, sorted(s.explicit_fusion)
            (3, 0.2, 0.6, ['fusion_alpha'])

        Raises:
            ConfigurationError: an unknown option or an invalid value.
        """
        check_options("recall", options, RECALL_OPTIONS)
        fusion = {name: options.pop(name) for name in FUSION_OPTIONS & options.keys()}
        locale = options.pop("locale", "zh")
        if "task_classifier" in options:
            options["classifier"] = as_classifier(options.pop("task_classifier"), locale)
        if options.get("relevance_check") is not None:
            options["relevance_check"] = as_relevance_check(options["relevance_check"], locale)
        if "extra_namespaces" in options and isinstance(options["extra_namespaces"], list):
            options["extra_namespaces"] = tuple(options["extra_namespaces"])
        if fusion:
            w = FusionWeights() if base is None else base.fusion_weights
            options["fusion_weights"] = FusionWeights(
                fusion.get("fusion_alpha", w.alpha),
                fusion.get("fusion_alpha_cjk", w.alpha_cjk),
                fusion.get("fusion_cross_script", w.cross_script),
            )
            options["explicit_fusion"] = (frozenset() if base is None else base.explicit_fusion) | fusion.keys()
        if base is None:
            return cls(**options)
        return replace(base, **options) if options else base


FUSION_OPTIONS = frozenset({"fusion_alpha", "fusion_alpha_cjk", "fusion_cross_script"})
"""The keyword options that set :attr:`RecallSettings.fusion_weights` (their explicit values win over the
embedder's declared weights)."""

RECALL_OPTIONS = frozenset(
    {f for f in RecallSettings.__dataclass_fields__ if f not in ("fusion_weights", "explicit_fusion")}
    | FUSION_OPTIONS
    | {"task_classifier", "locale"}
)
"""The keyword options :meth:`RecallSettings.from_options` (and a retriever's constructor) accept."""


@dataclass(frozen=True, slots=True)
class RecallResult:
    """One recall with its context: the memories and the task type they were scored against.

    Attributes:
        memories: Best first, at most ``k``; empty when nothing passed the relevance floor.
        task_type: The task type used in the score (``None`` only when inference is off
            and no ``task_type`` was given). The fallback label (``"general"``) when
            nothing was recognised: recorded, but it earns no task-type bonus.
        task_type_source: :data:`TaskTypeSource`, ``None`` together with ``task_type``.
        withheld: Ids that passed the floor but the optional relevance check set aside (not served).
    """

    memories: list[ScoredMemory]
    task_type: str | None
    task_type_source: TaskTypeSource | None
    withheld: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Recalled:
    """A :class:`RecallResult` with what a served record needs.

    Attributes:
        result: The memories and the task type.
        query: The cleaned query that was searched.
        namespace: The searched namespace (resolved).
        at: The clock the time decay used.
        searched: ``False`` for a blank query: nothing was searched (nothing to record as served).
    """

    result: RecallResult
    query: str
    namespace: str
    at: datetime
    searched: bool


def recall(
    source: RecallSource,
    settings: RecallSettings,
    query: str,
    *,
    k: int | None = None,
    task_type: str | None = None,
    namespace: str | None = None,
    now: datetime | None = None,
    scripts: ScriptCache | None = None,
    on_classifier_error: Callable[[], None] | None = None,
) -> Recalled:
    """The best memories of ``source`` for ``query``, scored, best first (at most ``k``; none below the floor).

    Args:
        source: Where to search (:class:`RecallSource`).
        settings: The recall options.
        query: The task description.
        k: Overrides ``settings.k``.
        task_type: Overrides ``settings.task_type``; when both are ``None`` the task type is inferred.
        namespace: Overrides ``settings.namespace``.
        now: The clock for time decay (aware datetime); defaults to now.
        scripts: The caller's content-script cache, kept across calls (``None``: a fresh one).
        on_classifier_error: Called inside the ``except`` block when the classifier raises (so it
            may log with ``exc_info``); the recall goes on with the rules' answer. ``None``: a warning.

    Raises:
        ConfigurationError: a bad argument.
        StoreError: the store failed.
    """
    limit, fixed, ns, when = _prepare(source, settings, query, k, task_type, namespace, now)
    chosen, origin = _resolve(source, settings, query, fixed, on_classifier_error)
    if not query.strip():
        return Recalled(RecallResult([], chosen, origin), query, ns, when, searched=False)
    query = clean_text(query)
    depth = limit * settings.candidate_multiplier
    normalize = settings.fusion == "convex_idf"
    vector = source.embeddings.embed_query(query)
    dense, lexical = source.hybrid_search(query, vector, k=depth, namespace=ns, normalize=normalize)
    for extra in dict.fromkeys(settings.extra_namespaces):
        if extra != ns:
            dense, lexical = dict(dense), dict(lexical)
            more, more_lexical = source.hybrid_search(query, vector, k=depth, namespace=extra, normalize=normalize)
            for i in more.keys() - dense.keys():
                dense[i] = more[i]
                if i in more_lexical:
                    lexical[i] = more_lexical[i]
    memories = rank_candidates(
        query,
        _informative_only(dense),
        lexical,
        limit=limit,
        task=(chosen, origin),
        fallback_task_type=source.vocabulary.fallback,
        fusion=settings.fusion,
        fusion_weights=fusion_weights_for(
            source.embeddings, settings.fusion_weights, explicit=settings.explicit_fusion
        ),
        weights=settings.weights,
        min_score=settings.min_score,
        min_relevance=AUTO_FLOOR if isinstance(settings.min_relevance, str) else settings.min_relevance,
        now=when,
        scripts={} if scripts is None else scripts,
    )
    withheld: list[str] = []
    if settings.relevance_check is not None:
        memories, withheld = apply_relevance_check(settings.relevance_check, query, memories)
    return Recalled(RecallResult(memories, chosen, origin, tuple(withheld)), query, ns, when, searched=True)


def _informative_only(dense: dict[str, tuple[MemoryUnit, float]]) -> dict[str, tuple[MemoryUnit, float]]:
    """The candidates whose content carries information: junk stored before the store refused it is never served."""
    junk = [i for i, (unit, _) in dense.items() if not informative(unit.content)]
    if not junk:
        return dense
    logger.debug("recall: %d stored unit(s) without information not served (e.g. %s)", len(junk), junk[0])
    return {i: v for i, v in dense.items() if i not in junk}


def resolve_task(
    source: RecallSource,
    settings: RecallSettings,
    query: str,
    task_type: str | None = None,
    *,
    on_classifier_error: Callable[[], None] | None = None,
) -> tuple[str | None, TaskTypeSource | None]:
    """The task type a recall of ``query`` would score against, and where it comes from.

    A given ``task_type`` (or ``settings.task_type``) wins and is normalised with the
    source's vocabulary; otherwise the keyword rules classify ``query``, then
    ``settings.classifier`` when the rules recognise nothing.

    Raises:
        ConfigurationError: ``query`` is not a string.
    """
    if not isinstance(query, str):
        raise ConfigurationError(f"query must be a string, got {type(query).__name__}")
    wanted = task_type if task_type is not None else settings.task_type
    fixed = None if wanted is None else source.vocabulary.resolve(wanted)
    return _resolve(source, settings, query, fixed, on_classifier_error)


def _resolve(
    source: RecallSource,
    settings: RecallSettings,
    query: str,
    fixed: str | None,
    on_error: Callable[[], None] | None,
) -> tuple[str | None, TaskTypeSource | None]:
    vocabulary = source.vocabulary
    classifier = settings.classifier
    classify = None if classifier is None else (lambda text: _classify(classifier, text, vocabulary, on_error))
    return resolve_task_type(query, fixed, vocabulary, infer=settings.infer_task_type, classify=classify)


def _classify(
    classifier: TaskClassifier, query: str, vocabulary: TaskTypeVocabulary, on_error: Callable[[], None] | None
) -> str | None:
    try:
        answer = classifier(query[:CLASSIFY_MAX_CHARS], vocabulary.labels)
    except Exception:  # a classifier failure must not cost the recall
        if on_error is None:
            logger.warning("task-type classifier failed; using the keyword rules' answer", exc_info=True)
        else:
            on_error()
        return None
    label = pick_label(answer, vocabulary)
    if label is None:
        logger.debug("task-type classifier answered %r, not a label of the vocabulary", answer)
    return label


def _prepare(
    source: RecallSource,
    settings: RecallSettings,
    query: object,
    k: int | None,
    task_type: str | None,
    namespace: str | None,
    now: datetime | None,
) -> tuple[int, str | None, str, datetime]:
    if not isinstance(query, str):
        raise ConfigurationError(f"query must be a string, got {type(query).__name__}")
    limit = settings.k if k is None else check_int("k", k)
    wanted = task_type if task_type is not None else settings.task_type
    wanted_type = None if wanted is None else source.vocabulary.resolve(wanted)
    ns = namespace if namespace is not None else settings.namespace
    when = now or utcnow()
    if not isinstance(when, datetime):
        raise ConfigurationError(f"now must be an aware datetime or None, got {type(when).__name__}")
    if when.tzinfo is None:
        raise ConfigurationError("now must be timezone-aware")
    return limit, wanted_type, source.namespace_or_default(ns), when
