"""Values of the hindsight session, re-exported by :mod:`langchain_hindsight.session.loop`.

Its options (:class:`SessionConfig`) and what feedback changed (:class:`FeedbackResult`);
what a task was served is :class:`~langchain_hindsight.types.Served` (re-exported here).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel

from langchain_hindsight._checks import check_int, refuse_unknown_keywords
from langchain_hindsight._unset import UNSET, Unset
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.prompts import Locale, get_templates
from langchain_hindsight.recall import DEFAULT_MAX_LINE_CHARS, check_block_size
from langchain_hindsight.recall.engine import DEFAULT_K, RecallSettings
from langchain_hindsight.recall.injection import DEFAULT_MAX_LINES
from langchain_hindsight.recall.ranking import FloorRule, MinRelevance
from langchain_hindsight.reflection.background import BackgroundReflector
from langchain_hindsight.reflection.reflector import Reflector
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.session._conversation import CorrectionDetector
from langchain_hindsight.session._feedback_rules import CORRECTION_PATTERNS
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit

if TYPE_CHECKING:
    from langchain_hindsight.recall.retriever import HindsightRetriever

__all__ = [
    "PROMPT_LOCALE",
    "AdapterOptions",
    "ErrorPolicy",
    "FeedbackResult",
    "SessionConfig",
    "SessionOptions",
    "new_run_id",
]


ErrorPolicy = Literal["log", "raise"]
"""What an adapter does when recall or reflection fails.

``"log"`` (default): log a warning with the traceback and let the agent go on
(without experiences, or without learning from this run). ``"raise"``: raise
the typed error (for tests and debugging).
"""


PROMPT_LOCALE: Locale = "zh"
"""The language of the model prompts (reflection, feedback) when no ``locale`` is set."""


def new_run_id() -> str:
    """A fresh run id (a UUID4 string, like LangChain's)."""
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """What :meth:`HindsightSession.feedback` changed.

    Attributes:
        run: The run's journal record, with the feedback appended.
        updated: Served memories whose confidence changed.
        created: New ``user_feedback`` memories made from the comment.
    """

    run: RunRecord
    updated: list[MemoryUnit] = field(default_factory=list)
    created: list[MemoryUnit] = field(default_factory=list)


class AdapterOptions(TypedDict, total=False):
    """The :class:`SessionConfig` options an adapter changes for itself, as keywords.

    Every option but ``namespace``, which adapters (``hs.middleware()``, ``hs.wrap()``, the graph
    nodes) take as their own parameter (a fixed namespace or a template).

    Typed so that a type checker catches a misspelt option (``**options: Unpack[AdapterOptions]``);
    each key means what the :class:`SessionConfig` field of the same name means.
    """

    retriever: HindsightRetriever | None
    reflector: Reflector | BackgroundReflector | None
    journal: RunJournal | None
    k: int
    task_type: str | None
    min_relevance: MinRelevance | FloorRule
    locale: Locale | None
    max_lines: int
    max_line_chars: int
    max_block_chars: int | None
    namespace_key: str | None
    recall: bool
    reflect: bool
    apply_outcome: bool
    conversation_feedback: bool
    correction_patterns: tuple[str, ...]
    feedback_model: BaseChatModel | None
    on_error: ErrorPolicy


class SessionOptions(AdapterOptions, total=False):
    """Every :class:`SessionConfig` option as keywords (``HindsightSession(store, **options)``).

    A test keeps its keys equal to :meth:`SessionConfig.option_names`.
    """

    namespace: str | None


@refuse_unknown_keywords
@dataclass(frozen=True, kw_only=True)
class SessionConfig:
    """Every option of the hindsight loop, in one place (adapters never repeat them).

    Attributes:
        store: The memory store (the single source of truth).
        retriever: Recall component; default ``HindsightRetriever(store=store, k=k, task_type=task_type,
            locale=locale)`` (with ``min_relevance`` when given).
        reflector: A ``Reflector`` (runs when the task ends) or a ``BackgroundReflector``
            (queued, never delays the agent); default a rule-based ``Reflector(store=store)``.
        journal: The run journal; default ``RunJournal(store)`` (the journal is always on).
        k: Experiences recalled per task.
        task_type: A fixed task type for recall and reflection; ``None`` infers it from each task's text.
        min_relevance: Relevance floor of recall (results below it are dropped; nothing
            relevant → no block): ``"auto"`` the calibrated rule, a number an absolute floor,
            a :class:`~langchain_hindsight.recall.ranking.FloorRule` your own thresholds, ``None``
            switches the floor off. Not given (:data:`~langchain_hindsight._unset.UNSET`): the
            retriever keeps its own floor (``"auto"`` unless it was built with another).
        locale: ``"zh"`` or ``"en"``: the block's frame and every prompt in that language.
            ``None`` (default): the block's frame (header, ``[当前任务]``, the closing
            instruction) follows the language of the memories it shows
            (:func:`~langchain_hindsight.recall.injection.block_locale`), a user's correction is
            stored in the language it was typed in, and the model prompts (reflection,
            feedback) are in Chinese (:data:`PROMPT_LOCALE`).
        max_lines: At most this many memory lines in the block.
        max_line_chars: At most this many characters of one memory's text in the block; a longer
            one is cut and its line says so, naming ``hindsight show <memory_id>``.
        max_block_chars: At most this many characters in the whole block (trailing lines are
            left out first); ``None`` (default): bounded by the two options above only.
        namespace_key: ``config["configurable"]`` key (or runtime context attribute) naming the
            namespace of a run; ``None`` disables.
        namespace: Pin every run to this namespace (an agent acting as one principal): a run
            that names another one is refused with ``AccessDeniedError``. ``None`` (default):
            a run uses the namespace it names, else the store's default.
        recall: ``False`` learns without injecting (e.g. the baseline arm of an A/B test).
        reflect: ``False`` never reflects.
        apply_outcome: ``False`` leaves the served memories' confidence to explicit feedback.
        conversation_feedback: A human turn in the same thread that corrects the previous answer
            ("不对，…", "No, …") is feedback on the previous run; questions, requests for more and
            acknowledgements are not (see :mod:`langchain_hindsight.session._feedback_rules`).
        correction_patterns: Verdicts (regular expressions) that open a correcting turn; each counts
            only when punctuation or the end follows it (also a space, after a Chinese verdict), so
            "不对外…", "Nobody…" never match (default ``CORRECTION_PATTERNS``). Only the openers are
            replaced: the other rules (a verdict clause, a redirect, a contrast) still apply.
        feedback_model: A chat model asked, in one bounded call, whether a turn is a correction
            when the rules are unsure (a contrast, a "should be", a softener such as "Actually",
            or the previous task's words with another value); a failed call or a garbage answer
            keeps the rules' result. ``None`` (default): rules only.
        on_error: :data:`ErrorPolicy`.
    """

    store: MemoryStore
    retriever: HindsightRetriever | None = None
    reflector: Reflector | BackgroundReflector | None = None
    journal: RunJournal | None = None
    k: int = DEFAULT_K
    task_type: str | None = None
    min_relevance: MinRelevance | FloorRule | Unset = UNSET
    locale: Locale | None = None
    max_lines: int = DEFAULT_MAX_LINES
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS
    max_block_chars: int | None = None
    namespace_key: str | None = "user_id"
    namespace: str | None = None
    recall: bool = True
    reflect: bool = True
    apply_outcome: bool = True
    conversation_feedback: bool = True
    correction_patterns: tuple[str, ...] = CORRECTION_PATTERNS
    feedback_model: BaseChatModel | None = None
    on_error: ErrorPolicy = "log"

    def __post_init__(self) -> None:
        if not isinstance(self.store, MemoryStore):
            raise ConfigurationError(f"store must be a MemoryStore, got {type(self.store).__name__}")
        if self.on_error not in ("log", "raise"):
            raise ConfigurationError(f"on_error must be 'log' or 'raise', got {self.on_error!r}")
        check_int("k", self.k)
        check_block_size(
            max_lines=self.max_lines, max_line_chars=self.max_line_chars, max_block_chars=self.max_block_chars
        )
        if not isinstance(self.min_relevance, Unset):
            RecallSettings(min_relevance=self.min_relevance)  # the one check of a floor
        if self.locale is not None:
            get_templates(self.locale)  # validates the locale
        if isinstance(self.correction_patterns, str):
            raise ConfigurationError("correction_patterns must be a sequence of regular expressions, not one string")
        CorrectionDetector(self.correction_patterns)  # validates the patterns
        if self.feedback_model is not None and not isinstance(self.feedback_model, BaseChatModel):
            raise ConfigurationError(
                f"feedback_model must be a LangChain chat model or None, got {type(self.feedback_model).__name__}"
            )

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of option ``name``: this class is the one place a session option's default is written.

        Example:
            >>> SessionConfig.default("max_lines")
            8
        """
        return cls.__dataclass_fields__[name].default

    @classmethod
    def option_names(cls) -> frozenset[str]:
        """Names of the options (every field but ``store``)."""
        return frozenset(f.name for f in fields(cls)) - {"store"}
