"""``HindsightRetriever``: hybrid candidate generation, weighted scoring, served-id records.

One recall (similarity is one factor among several):

1. embed the query once;
2. dense arm: Chroma nearest neighbours, over-fetching ``candidate_multiplier × k``;
   lexical arm: BM25 over content, task description, tags and tools (Chinese
   and English tokenisation), same depth;
3. candidates found only lexically get their cosine similarity from their stored
   vectors, so every candidate has both signals;
4. :func:`~langchain_hindsight.recall.ranking.rank_candidates` fuses the two signals
   into one relevance in [0, 1] and drops candidates below the relevance floor
   (``min_relevance``: by default the calibrated rule
   :data:`~langchain_hindsight.recall.ranking.AUTO_FLOOR`, which judges each candidate's
   cosine and lexical share per script pair), so an unrelated task gets nothing (and the
   adapters inject no block);
5. it then adds the weighted score (:func:`~langchain_hindsight.recall.scoring.score_memory`,
   computed for all candidates at once by :func:`~langchain_hindsight.recall.scoring.score_many`):
   task type, confidence, access heat, source and time decay; the best ``k`` are returned.

The task type used in step 5 is the caller's ``task_type`` when given, else
inferred from the query text (:func:`~langchain_hindsight.taxonomy.infer_task_type`,
then an optional model classifier when the rules find nothing), as
:mod:`langchain_hindsight.recall.task_type` resolves it.

Only active units can come back: the dense arm and the id lookup drop
superseded units, archived ones live in another collection, and the lexical
index holds active units only. A unit whose content carries no information
(``"ok"``, ``"好"``: stored before the store refused such writes) is never served.
Every recall is logged at INFO (task, namespace, floor, each served id with its
score and relevance).

Steps 1–5 are computed by :func:`langchain_hindsight.recall.engine.recall`, the one
implementation of a recall (``hindsight search`` calls it without this module): the
retriever holds one :class:`~langchain_hindsight.recall.engine.RecallSettings` (its keyword
options are packed into it) and hands it to the engine on every call. This module keeps the
retriever (its options, the served log, ``on_served``, the diagnostics and the ``BaseRetriever``
hooks); every name it has exported
stays importable from here (:class:`RecallResult` is the engine's).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from langchain_hindsight._checks import (
    check_int,
    check_number,
    check_options,
    check_query,
    refuse_unknown_keywords,
)
from langchain_hindsight._text import clip_text
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import Locale, get_templates
from langchain_hindsight.recall.engine import RECALL_OPTIONS, Recalled, RecallResult, RecallSettings, resolve_task
from langchain_hindsight.recall.engine import recall as engine_recall
from langchain_hindsight.recall.fusion import Fusion
from langchain_hindsight.recall.ranking import (
    DEFAULT_LOW_RELEVANCE,
    FloorRule,
    LowRelevance,
    ScriptCache,
)
from langchain_hindsight.recall.scoring import ScoringWeights
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import ScoredMemory, Served, TaskTypeSource

__all__ = ["HindsightRetriever", "ServedRecord"]

logger = logging.getLogger(__name__)


ServedRecord = Served
"""What one recall served: the same type as the session's :class:`~langchain_hindsight.types.Served`
(``run_id`` empty, ``query`` = ``task``), under the name this module has always exported."""

_LOG_TASK_CHARS = 80
"""How much of the task the served-memories log line shows."""


def _to_document(scored: ScoredMemory) -> Document:
    unit = scored.memory
    return Document(
        id=unit.memory_id,
        page_content=unit.content,
        metadata={
            "memory_id": unit.memory_id,
            "task_type": unit.task_type,
            "kind": unit.kind,
            "confidence": unit.score_confidence,
            "source": unit.source,
            "namespace": unit.namespace,
            "tags": list(unit.tags),
            "score": scored.score,
            "similarity": scored.similarity,
            "breakdown": dict(scored.breakdown),
            "query_task_type": scored.query_task_type,
        },
    )


def _floor_label(floor: object) -> str:
    """The relevance floor as the recall log shows it: ``off``, ``auto`` (the calibrated rule) or the number."""
    if floor is None:
        return "off"
    if isinstance(floor, int | float) and not isinstance(floor, bool):
        return f"{floor:.3f}"
    return "auto" if floor == "auto" or isinstance(floor, FloorRule) else str(floor)


@refuse_unknown_keywords(also=RECALL_OPTIONS)  # LangChain's BaseRetriever (extra="ignore") would drop one
class HindsightRetriever(BaseRetriever):
    """Recall the memories that matter for a task (hybrid search + a weighted score).

    Setup:
        Needs a :class:`~langchain_hindsight.store.memory_store.MemoryStore`.

    Instantiate:
        .. code-block:: python

            from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit

            store = MemoryStore(persist_directory="./memory_db")
            store.add(MemoryUnit(task_type="weekly_report", content="周报的数据范围取上周一到周日的自然周。"))
            retriever = HindsightRetriever(store=store, k=5, task_type="weekly_report")

    Use:
        .. code-block:: python

            docs = retriever.invoke("生成本周的团队周报")          # Documents, best first
            docs[0].metadata["memory_id"], docs[0].metadata["breakdown"]
            memories = retriever.recall("生成本周的团队周报", k=3)  # typed: list[ScoredMemory]

    Async:
        .. code-block:: python

            docs = await retriever.ainvoke("生成本周的团队周报", k=3)
            memories = await retriever.arecall("生成本周的团队周报")

    The recall options (``k`` to ``candidate_multiplier`` below) are keywords of the constructor
    and attributes of the retriever, but the retriever holds them as ONE
    :class:`~langchain_hindsight.recall.engine.RecallSettings` (:attr:`settings`, also a keyword:
    ``HindsightRetriever(store=store, settings=RecallSettings(k=3))``) that the recall engine reads;
    the attributes read it, and assigning one (``retriever.k = 3``) replaces it, checked
    (:meth:`configure`).

    Attributes:
        store: Where memories live (read through on every call, never cached here).
        k: Memories returned per call; a per-call ``k`` keyword overrides it.
        task_type: Task type of the current task (normalised with the store's
            vocabulary); matching memories get the task-type bonus. ``None``
            (default) infers it from each query's text (``infer_task_type``).
        infer_task_type: ``False`` turns serve-time inference off (no task-type
            bonus unless a ``task_type`` is given).
        task_classifier: Optional model hook used when the keyword rules recognise
            nothing: a chat model (asked once with ``TASK_TYPE_PROMPT_*``, the task
            cut to 2,000 characters, its answer must name a vocabulary label) or a
            callable ``(text, labels) -> label | None``. Failures and answers outside
            the vocabulary fall back to ``"general"`` (logged, never raised).
        namespace: Namespace to search; ``None`` uses the store's default.
        extra_namespaces: Namespaces recalled together with the searched one, in the
            same call: one query embedding, every namespace's candidates ranked
            together, each result's unit carrying its namespace. A memory found in
            several (a published copy keeps its id) is served once, from the first:
            the searched namespace, then these in order. Access control is the
            caller's (see :class:`~langchain_hindsight.sharing.retriever.ScopedRetriever`).
        weights: The scoring weights (default: :class:`ScoringWeights`).
        min_score: Drop memories whose weighted score is below this.
        min_relevance: The relevance floor, so a task unrelated to everything stored gets
            no memories and no block. Default: :class:`~langchain_hindsight.recall.engine.RecallSettings`'s,
            the one place it lives (``"auto"``: :data:`AUTO_FLOOR`, which serves the best ``k`` when
            any of them has evidence of any kind — a weighted word in common or a cosine above a
            small threshold; the cosine for a memory in the other script — and nothing when none
            has: when unsure, serve, ``benchmarks/floor_recall.py``). A number is an absolute floor
            on the fused relevance of each memory (the similarity before confidence, task type,
            access, source and recency are added; :data:`DEFAULT_MIN_RELEVANCE`, 0.18, was an old
            default); a :class:`FloorRule` applies your own thresholds (``scope="candidate"``
            judges each memory alone); ``None`` disables the floor.
        relevance_check: Off by default. A chat model (or a callable) asked once per recall
            which of the served memories may apply; the others are not served, and on any failure
            everything is (:mod:`~langchain_hindsight.recall.relevance`).
        locale: Locale of the ``[相关经验]`` block the adapters render.
        fusion: How the dense and lexical arms combine (:data:`Fusion`).
        fusion_alpha: Weight of the dense arm in the convex fusions for a Latin-script query
            (and for every query when ``fusion_alpha_cjk`` is ``None``).
        fusion_alpha_cjk: Weight of the dense arm for a mostly-CJK query (Chinese has no word
            boundaries, so its lexical arm behaves differently); ``None`` uses ``fusion_alpha``.
        fusion_cross_script: For a candidate written in another script than the query (an English
            memory for a Chinese task), the lexical arm cannot match a word; its missing lexical
            share is filled with this multiple of its cosine (0 counts it as zero).
            The three fusion weights depend on the embedder: when the store's embedder
            declares ``fusion_weights`` (as the packaged embedders do, measured on the tuning
            split of ``benchmarks/recall_quality.py``), those are used for every fusion field
            not set here; otherwise the values above (0.3, ``None``, 0: measured for MiniLM).
        candidate_multiplier: Each arm fetches ``candidate_multiplier × k`` (default 3).
        low_similarity_threshold: When memories are served but even the best of
            them is a weak match, warn (once per retriever, then at debug level) that
            the embedder may not fit the domain or language. ``"auto"`` (default): weak
            means failing :data:`AUTO_FLOOR` (a negative ``floor_margin`` in the
            breakdown), so only a lowered or disabled floor lets weak memories through to
            warn about; a number: the best fused relevance is below it. Nothing served →
            no warning.
        on_served: Called after every recall with a :class:`ServedRecord`.
        served_log_size: How many :class:`ServedRecord` s :meth:`served` keeps.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as e:  # bad constructor arguments: a typed error, also a ValueError
            raise ConfigurationError(
                f"invalid HindsightRetriever argument: {e.errors()[0].get('loc')}: {e.errors()[0].get('msg')}"
            ) from e

    store: MemoryStore
    settings: RecallSettings = Field(default_factory=RecallSettings)
    """Every recall option in one object (the keyword options above are packed into it)."""
    locale: Locale = "zh"
    low_similarity_threshold: LowRelevance = DEFAULT_LOW_RELEVANCE
    on_served: Callable[[ServedRecord], None] | None = None
    served_log_size: int = 256

    _served: deque[ServedRecord] = PrivateAttr()
    _served_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _warned: bool = PrivateAttr(default=False)
    _classifier_warned: bool = PrivateAttr(default=False)
    _scripts: ScriptCache = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _pack(cls, data: Any) -> Any:
        """Pack the keyword recall options (``k=``, ``min_relevance=``, ...) into one :class:`RecallSettings`."""
        if not isinstance(data, dict):
            return data
        given = {name: data[name] for name in RECALL_OPTIONS if name in data and name != "locale"}
        if not given:
            return data
        base = data.get("settings")
        if base is not None and not isinstance(base, RecallSettings):
            raise ConfigurationError(f"settings must be RecallSettings, got {type(base).__name__}")
        if "task_classifier" in given or "relevance_check" in given:
            given["locale"] = data.get("locale", "zh")
        rest = {name: value for name, value in data.items() if name not in given}
        return {**rest, "settings": RecallSettings.from_options(base, **given)}

    def model_post_init(self, __context: Any) -> None:
        """Create the bounded served log."""
        self._served = deque(maxlen=self.served_log_size)

    @field_validator("served_log_size")
    @classmethod
    def _positive(cls, value: int) -> int:
        return check_int("served_log_size", value)

    @field_validator("low_similarity_threshold", mode="before")
    @classmethod
    def _level(cls, value: object) -> object:
        if value == "auto" and isinstance(value, str):
            return value
        if isinstance(value, str):
            raise ValueError(f"must be 'auto' or a number in [0, 1], got {value!r}")
        return check_number("low_similarity_threshold", value, 0.0, 1.0)

    # ------------------------------------------------------------------ the settings' options by their old names
    def configure(self, **options: Any) -> None:
        """Change recall options in place (``retriever.configure(k=3, min_relevance=None)``), checked.

        The same keywords as the constructor (:data:`~langchain_hindsight.recall.engine.RECALL_OPTIONS`);
        each assignment such as ``retriever.k = 3`` goes through here.

        Raises:
            ConfigurationError: an unknown option or an invalid value (nothing changes).
        """
        if "task_classifier" in options or "relevance_check" in options:
            options.setdefault("locale", self.locale)
        self.settings = RecallSettings.from_options(self.settings, **options)

    @property
    def k(self) -> int:
        """Memories returned per call (``settings.k``); a per-call ``k`` keyword overrides it."""
        return self.settings.k

    @k.setter
    def k(self, value: int) -> None:
        self.configure(k=value)

    @property
    def task_type(self) -> str | None:
        """The fixed task type (``settings.task_type``), or ``None`` (inferred per query)."""
        return self.settings.task_type

    @task_type.setter
    def task_type(self, value: str | None) -> None:
        self.configure(task_type=value)

    @property
    def namespace(self) -> str | None:
        """The namespace searched (``settings.namespace``); ``None``: the store's default."""
        return self.settings.namespace

    @namespace.setter
    def namespace(self, value: str | None) -> None:
        self.configure(namespace=value)

    @property
    def extra_namespaces(self) -> tuple[str, ...]:
        """Namespaces recalled with the searched one (``settings.extra_namespaces``)."""
        return self.settings.extra_namespaces

    @property
    def weights(self) -> ScoringWeights:
        """The scoring weights (``settings.weights``)."""
        return self.settings.weights

    @weights.setter
    def weights(self, value: ScoringWeights) -> None:
        self.configure(weights=value)

    @property
    def min_score(self) -> float:
        """Weighted-score floor (``settings.min_score``)."""
        return self.settings.min_score

    @min_score.setter
    def min_score(self, value: float) -> None:
        self.configure(min_score=value)

    @property
    def min_relevance(self) -> float | Literal["auto"] | FloorRule | None:
        """The relevance floor (``settings.min_relevance``)."""
        return self.settings.min_relevance

    @min_relevance.setter
    def min_relevance(self, value: float | Literal["auto"] | FloorRule | None) -> None:
        self.configure(min_relevance=value)

    @property
    def infer_task_type(self) -> bool:
        """Whether the task type is inferred when none is given (``settings.infer_task_type``)."""
        return self.settings.infer_task_type

    @property
    def fusion(self) -> Fusion:
        """How the two arms combine (``settings.fusion``)."""
        return self.settings.fusion

    @property
    def fusion_alpha(self) -> float:
        """Dense-arm weight for a Latin-script query (``settings.fusion_weights.alpha``)."""
        return self.settings.fusion_weights.alpha

    @property
    def fusion_alpha_cjk(self) -> float | None:
        """Dense-arm weight for a mostly-CJK query (``settings.fusion_weights.alpha_cjk``)."""
        return self.settings.fusion_weights.alpha_cjk

    @property
    def fusion_cross_script(self) -> float:
        """Cross-script lexical imputation gain (``settings.fusion_weights.cross_script``)."""
        return self.settings.fusion_weights.cross_script

    @property
    def candidate_multiplier(self) -> int:
        """Each arm fetches ``candidate_multiplier × k`` (``settings.candidate_multiplier``)."""
        return self.settings.candidate_multiplier

    @field_validator("locale")
    @classmethod
    def _locale(cls, value: Locale) -> Locale:
        get_templates(value)
        return value

    # ------------------------------------------------------------------ typed API
    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        task_type: str | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> list[ScoredMemory]:
        """The best memories for ``query``, scored, best first (at most ``k``; none below the relevance floor).

        Args:
            query: The task description.
            k: Overrides :attr:`k`.
            task_type: Overrides :attr:`task_type`; when both are ``None`` the task
                type is inferred from ``query`` (each result's ``query_task_type``
                says which one was used).
            namespace: Overrides :attr:`namespace`.
            now: The clock for time decay (aware datetime); defaults to now.

        Raises:
            ConfigurationError: a bad argument; a blank ``query`` (it has no words to match: a caller whose
                task may be empty skips recall, as the adapters do).
            StoreError: the store failed.
        """
        return self.recall_result(query, k=k, task_type=task_type, namespace=namespace, now=now).memories

    def recall_result(
        self,
        query: str,
        *,
        k: int | None = None,
        task_type: str | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> RecallResult:
        """:meth:`recall` plus the task type the memories were scored against (also when none were found).

        Adapters and the run journal use it to record the task type of a run.
        Arguments and errors as in :meth:`recall`.
        """
        check_query(f"{type(self).__name__}.recall", query)
        recalled = engine_recall(
            self.store,
            self._settings(),
            query,
            k=k,
            task_type=task_type,
            namespace=namespace,
            now=now,
            scripts=self._scripts,  # one attribute read: a pydantic private attribute costs a __getattr__ each
            on_classifier_error=self._classifier_failed,
        )
        if recalled.searched:
            self._record(recalled)
        return recalled.result

    async def arecall(
        self,
        query: str,
        *,
        k: int | None = None,
        task_type: str | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> list[ScoredMemory]:
        """Async :meth:`recall`: the blocking embedding and store work runs in a thread executor."""
        result = await self.arecall_result(query, k=k, task_type=task_type, namespace=namespace, now=now)
        return result.memories

    async def arecall_result(
        self,
        query: str,
        *,
        k: int | None = None,
        task_type: str | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> RecallResult:
        """Async :meth:`recall_result` (runs in a thread executor)."""
        return await run_in_executor(
            None, lambda: self.recall_result(query, k=k, task_type=task_type, namespace=namespace, now=now)
        )

    def resolve_task_type(self, query: str, task_type: str | None = None) -> tuple[str | None, TaskTypeSource | None]:
        """The task type a recall of ``query`` would score against, and where it comes from.

        A given ``task_type`` (or :attr:`task_type`) wins and is normalised with the
        store's vocabulary; otherwise the keyword rules classify ``query``, then
        :attr:`task_classifier` when the rules recognise nothing.

        Example:
            >>> retriever.resolve_task_type("生成本周的销售周报")  # doctest: +SKIP
            ('weekly_report', 'inferred')
        """
        return resolve_task(self.store, self._settings(), query, task_type, on_classifier_error=self._classifier_failed)

    def served(self) -> list[ServedRecord]:
        """The latest served records, oldest first (bounded by ``served_log_size``)."""
        with self._served_lock:
            return list(self._served)

    # ------------------------------------------------------------------ the engine's inputs and outputs
    def _settings(self) -> RecallSettings:
        """The one settings object this retriever holds (read on every call: :meth:`configure` replaces it)."""
        return self.settings

    def _classifier_failed(self) -> None:
        """The classifier raised (called inside the engine's ``except``): warn once per retriever, then debug."""
        with self._served_lock:
            first, self._classifier_warned = not self._classifier_warned, True
        (logger.warning if first else logger.debug)(
            "task-type classifier failed; using the keyword rules' answer", exc_info=True
        )

    def _record(self, recalled: Recalled) -> None:
        """Diagnose what was served, log it and hand it to ``on_served``."""
        result = recalled.result
        self._diagnose(result.memories)
        if logger.isEnabledFor(logging.INFO):
            self._log_served(recalled)
        record = Served(
            task=recalled.query,
            namespace=recalled.namespace,
            memories=result.memories,
            at=recalled.at,
            task_type=result.task_type,
            task_type_source=result.task_type_source,
            withheld=list(result.withheld),
        )
        with self._served_lock:
            self._served.append(record)
        if self.on_served is not None:
            self.on_served(record)

    def _log_served(self, recalled: Recalled) -> None:
        """One INFO line per recall: the task (clipped), where, the floor, and each served id with its numbers."""
        result = recalled.result
        served = ", ".join(
            f"{m.memory.memory_id} (score {m.score:.3f}, relevance {m.similarity:.3f})" for m in result.memories
        )
        logger.info(
            "recall %r in %r (task type %s, relevance floor %s): served %d%s",
            clip_text(" ".join(recalled.query.split()), _LOG_TASK_CHARS, "…")[0],
            recalled.namespace,
            result.task_type,
            _floor_label(self.min_relevance),
            len(result.memories),
            f": {served}" if served else " (nothing passed the floor)",
        )

    def _diagnose(self, result: Sequence[ScoredMemory]) -> None:
        """Warn when what is about to be injected is weak (nothing injected → nothing to warn about)."""
        if not result:
            return
        level = self.low_similarity_threshold
        if level == "auto":  # the calibrated rule's verdict, carried in the breakdown
            weak = max(s.breakdown.get("floor_margin", 0.0) for s in result) < 0.0
        else:
            weak = max(s.similarity for s in result) < level
        if weak:
            best = max(s.similarity for s in result)
            with self._served_lock:
                first, self._warned = not self._warned, True
            log = logger.warning if first else logger.debug
            log(
                "the best served memory's relevance is %.2f (below %s): the served memories are weak matches; if "
                "this is frequent, the embedding model may not fit this domain or language",
                best,
                "the calibrated floor" if level == "auto" else f"{level:.2f}",
            )

    # ------------------------------------------------------------------ BaseRetriever
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        return [_to_document(s) for s in self.recall(query, k=k, **_invoke_options("invoke", kwargs))]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None, **kwargs: Any
    ) -> list[Document]:
        return [_to_document(s) for s in await self.arecall(query, k=k, **_invoke_options("ainvoke", kwargs))]


_INVOKE_OPTIONS = frozenset({"task_type", "namespace", "now"})  # with ``k``: recall's keywords
_LANGCHAIN_INVOKE = frozenset({"verbose"})  # read by BaseRetriever.invoke itself, then passed on: not a recall option


def _invoke_options(method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The run-time keywords of ``invoke``/``ainvoke`` that :meth:`HindsightRetriever.recall` takes.

    LangChain passes every keyword of ``invoke`` but ``run_id`` on to the retriever; one that is neither a
    recall option nor LangChain's own is refused, naming the option it likely misspells (``kk=`` → ``k``).
    """
    if not kwargs:
        return kwargs
    check_options(f"HindsightRetriever.{method}", kwargs, _INVOKE_OPTIONS | _LANGCHAIN_INVOKE | {"k"})
    return {name: value for name, value in kwargs.items() if name not in _LANGCHAIN_INVOKE}
