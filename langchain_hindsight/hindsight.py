"""``Hindsight``: one object bundling store, retriever, recorder, reflector and journal.

A thin facade for applications: build the parts once, then get the adapters
and the feedback call as one-liners.

Example:
    .. code-block:: python

        from langchain_hindsight import Hindsight

        with Hindsight(persist_directory="./memory_db") as hs:
            agent = create_agent(model, tools, middleware=[hs.middleware()])
            agent.invoke(inputs, config={"run_id": run_id})
            hs.feedback(run_id, success=False, comment="不对，周报只统计本周一到周日的数据")
"""

from __future__ import annotations

import asyncio
import os
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from langchain_core.callbacks import BaseCallbackHandler

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight._unset import UNSET, Unset
from langchain_hindsight.adapters.graph import OutcomeFn, with_hindsight
from langchain_hindsight.adapters.middleware import HindsightMiddleware
from langchain_hindsight.capture.messages import Placement
from langchain_hindsight.capture.recorder import TrajectoryRecorder
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.prompts import Locale
from langchain_hindsight.recall.engine import RecallSettings
from langchain_hindsight.recall.explain import RunExplanation, explain_run
from langchain_hindsight.recall.ranking import FloorRule, MinRelevance
from langchain_hindsight.recall.retriever import HindsightRetriever
from langchain_hindsight.reflection.background import BackgroundReflector
from langchain_hindsight.reflection.reflector import Reflector
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.session.build import build_config, open_store, recall_settings, write_judge
from langchain_hindsight.session.config import PROMPT_LOCALE, AdapterOptions, ErrorPolicy, FeedbackResult, SessionConfig
from langchain_hindsight.session.loop import HindsightSession
from langchain_hindsight.settings import SESSION_VARIABLES, session_defaults
from langchain_hindsight.sharing.access import ScopedMemory
from langchain_hindsight.sharing.principals import AccessPolicy, Principal, resolve_principal
from langchain_hindsight.sharing.retriever import ScopedRetriever
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import ScoredMemory
from langchain_hindsight.writes import WriteJudge

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel
    from langgraph.graph.state import CompiledStateGraph

    from langchain_hindsight.adapters.memory import HindsightMemory

__all__ = ["Hindsight", "HindsightOptions"]


class HindsightOptions(TypedDict, total=False):
    """The options ``Hindsight(...)`` takes one by one, each handed to the one object that owns it.

    None has a default here: an option left out is filled by its owner, through
    :mod:`langchain_hindsight.session.build` (the one place a bundle is built), or by its
    ``HINDSIGHT_…`` variable (:func:`~langchain_hindsight.settings.session_defaults`) when it has one.

    ==========================================  ===================================================
    keyword                                     goes to (where its default lives)
    ==========================================  ===================================================
    ``client``, ``server``                      the store target (:func:`~langchain_hindsight.settings.store_target`)
    ``embeddings``, ``namespace``               :class:`MemoryStore`
    ``judge``                                   the store's write judge (default ``"auto"``)
    ``structured_output``                       :class:`Reflector`
    ``reflector``, ``background``               the reflector (default: ``Reflector(model=model)``, in the agent's
                                                thread)
    ``k``, ``task_type``, ``min_relevance``,    :class:`~langchain_hindsight.recall.engine.RecallSettings` (``k``
    ``relevance_check``                         and ``task_type`` are the session's too: one value)
    ``locale``, ``max_lines``,                  :class:`SessionConfig`
    ``max_line_chars``, ``max_block_chars``,
    ``conversation_feedback``,
    ``feedback_model``, ``on_error``
    ==========================================  ===================================================
    """

    client: ClientAPI
    server: str
    embeddings: Embeddings
    namespace: str
    judge: WriteJudge | Literal["auto", "rules"]
    structured_output: bool
    reflector: Reflector
    background: bool
    k: int
    task_type: str | None
    min_relevance: MinRelevance | FloorRule
    relevance_check: bool
    locale: Locale
    max_lines: int
    max_line_chars: int
    max_block_chars: int | None
    conversation_feedback: bool
    feedback_model: BaseChatModel | None
    on_error: ErrorPolicy


_STORE_OPTIONS = ("client", "server", "embeddings")
_SESSION_OPTIONS = (
    "locale",
    "max_lines",
    "max_line_chars",
    "max_block_chars",
    "conversation_feedback",
    "feedback_model",
    "on_error",
)
"""The :class:`HindsightOptions` that go to :class:`SessionConfig` as they are."""


@refuse_unknown_keywords
class Hindsight:
    """The composition root: store, retriever, reflector, journal and one session, and the adapters over them.

    Build it once; every adapter takes it (``HindsightMiddleware(hs)``,
    ``recall_node(hs)``, ``HindsightMemory(hs)``) or comes from it
    (``hs.middleware()``, ``hs.wrap(graph)``, ``hs.memory()``, ``hs.callbacks``), so
    the options below are given in one place and every path journals its runs.

    It takes a few parameters (``persist_directory``, ``store``, ``database_url``, ``model``,
    ``recall``, ``principal``, ``policy``); every other keyword is one of :class:`HindsightOptions`,
    handed to the object that owns it. No default is written here: what is left out is filled
    by its owner in :mod:`langchain_hindsight.session.build` (the one place a bundle is built).

    Args:
        persist_directory: Directory of the embedded store (ignored with ``store``,
            ``client`` or ``server``). A store named here (or by ``store``, ``client``, ``server``,
            ``database_url``) wins over the environment; with none,
            :func:`~langchain_hindsight.settings.store_target` (the one function every door, the
            CLI's included, uses) takes ``$HINDSIGHT_DATABASE_URL``, else ``$HINDSIGHT_SERVER``,
            else ``$HINDSIGHT_PATH``, else ``"./memory_db"``.
        store: An existing :class:`MemoryStore` (not closed by :meth:`close`).
        client: A chromadb client (e.g. ``chromadb.HttpClient(host=..., port=...)``)
            to open the store on.
        server: A Chroma server address, ``"http://host:port"``.
        database_url: A PostgreSQL database with pgvector (``"postgresql://user@host/db"``):
            any number of processes and hosts share it (the ``postgres`` extra). Left out (or
            ``None``): see ``persist_directory``.
        model: Chat model for reflection; ``None`` reflects with rules only.
        recall: Every recall option at once, as one
            :class:`~langchain_hindsight.recall.engine.RecallSettings` (the retriever holds it); a
            keyword below (``k``, ``task_type``, ``min_relevance``, ``relevance_check``) changes it, and
            ``HINDSIGHT_K`` / ``HINDSIGHT_MIN_RELEVANCE`` do not (a settings object is explicit).
            Default: ``RecallSettings()``, the one place recall's defaults live.
        structured_output: ``False`` asks ``model`` for JSON text instead of a
            forced tool call / structured output (e.g. a local llama.cpp server); default
            :class:`Reflector`'s (``True``).
        reflector: A prebuilt :class:`Reflector` (on this store) instead of
            ``model`` and ``structured_output``.
        judge: How a store this bundle opens decides a write that has similar
            neighbours (see :mod:`langchain_hindsight.writes`). ``"auto"``: with a
            ``model``, one bounded call to it (:class:`~langchain_hindsight.writes.LLMWriteJudge`:
            add, duplicate, update or conflict); without one, the conservative rule
            that keeps both. ``"rules"``: always the rule. Or any ``WriteJudge``.
        embeddings: Embedder for a new store (default: the offline one).
        namespace: Default namespace of a new store.
        k: Experiences recalled per task.
        task_type: A fixed task type for recall and reflection; ``None`` infers it
            from each task's text.
        min_relevance: Relevance floor for recall (nothing relevant → no block):
            ``"auto"`` (the default) serves the best ``k`` when any of them has evidence and
            nothing otherwise, a number an absolute floor on the fused relevance, ``None``
            switches it off. It goes into the one
            :class:`~langchain_hindsight.recall.engine.RecallSettings` this bundle builds,
            which the retriever holds and the recall engine reads. Leave it out for that
            object's default (the one place it lives).
        relevance_check: ``True`` asks ``model`` once per recall which of the served memories
            may apply and serves only those (bounded, validated, cached; on any failure all are
            served; :mod:`~langchain_hindsight.recall.relevance`). Default ``False``.
        locale: ``"zh"`` (default) or ``"en"``.
        max_lines: At most this many memory lines in the ``[相关经验]`` block.
        max_line_chars: At most this many characters of one memory's text in the block; a
            longer one is cut and its line says so, naming ``hindsight show <memory_id>``.
        max_block_chars: At most this many characters in the whole block (trailing lines are
            left out first); ``None`` (default): bounded by the two options above only.
        background: ``True``: reflect in a worker thread (never delays the agent); call
            :meth:`flush` before reading what was learned. Default: in the agent's thread.
        conversation_feedback: A turn in the same thread that corrects the
            previous answer ("不对，…", "No, …") is feedback on the previous run
            (questions, requests for more and acknowledgements are not).
        feedback_model: A chat model asked, in one bounded call, whether a turn is a
            correction when the rules are unsure; ``None`` (default): rules only. Not
            ``model`` by default, so no turn costs a model call unless you ask for it.
        on_error: ``"log"`` or ``"raise"`` for the adapters (default :class:`SessionConfig`'s, ``"log"``).

    ``namespace``, ``k``, ``min_relevance``, ``locale``, ``max_lines``, ``max_line_chars`` and
    ``max_block_chars`` take their default from an environment variable when not given
    (``HINDSIGHT_K``, …: see :mod:`langchain_hindsight.settings`); an argument always wins; with
    neither, the component that owns the option fills it (:class:`SessionConfig` for the
    session's, :class:`~langchain_hindsight.recall.engine.RecallSettings` for recall's,
    :class:`MemoryStore` for the namespace), and the parts are built in one place,
    :mod:`langchain_hindsight.session.build`.
        principal: Act as this agent identity (a :class:`~langchain_hindsight.sharing.principals.Principal`,
            or its name in ``policy``): every run recalls the principal's own namespace
            plus every namespace it may read, in one call, and memories from another
            namespace are labelled in the block (``（来自：shared）``); runs, lessons and
            feedback go to its own namespace only (a run naming another one is refused
            with :class:`~langchain_hindsight.errors.AccessDeniedError`), and a run's
            outcome credits only its own memories. :attr:`scoped` publishes and
            unpublishes. ``None`` (default): no grants apply.
        policy: The grants: an :class:`~langchain_hindsight.sharing.principals.AccessPolicy`
            or the path of its TOML file (needed when ``principal`` is a name).

    Example:
        .. code-block:: python

            hs = Hindsight(persist_directory="./memory_db")          # or server="http://localhost:8000"
            agent = create_agent(model, tools, middleware=[hs.middleware()])
            agent.invoke(inputs, config={"run_id": run_id})
            hs.feedback(run_id, success=False, comment="不对，周报只统计本周一到周日的数据")
            hs.close()

    Raises:
        ConfigurationError: more than one of ``store``, ``client``, ``server`` and ``database_url``,
            ``reflector`` together with ``model``, or a principal that is unknown,
            unreadable, or whose namespace differs from ``namespace``.
    """

    def __init__(
        self,
        persist_directory: str | os.PathLike[str] | Unset = UNSET,
        *,
        store: MemoryStore | None = None,
        database_url: str | Unset | None = UNSET,
        model: BaseChatModel | None = None,
        recall: RecallSettings | None = None,
        principal: Principal | str | None = None,
        policy: AccessPolicy | str | os.PathLike[str] | None = None,
        **options: Unpack[HindsightOptions],
    ) -> None:
        given = {name: options[name] for name in SESSION_VARIABLES if name in options}  # type: ignore[literal-required]
        env = session_defaults() if len(given) < len(SESSION_VARIABLES) else {}
        if recall is not None:  # a settings object is explicit: the recall variables do not override it
            env = {name: value for name, value in env.items() if name not in ("k", "min_relevance")}
        chosen: dict[str, Any] = {**env, **given}  # an argument wins over its variable
        language: Locale = chosen.get("locale") or PROMPT_LOCALE
        own_namespace: str | None = chosen.get("namespace")
        structured_output = options.get("structured_output", True)
        reflector = options.get("reflector")
        judge = options.get("judge", "auto")
        self._owns_store = store is None
        self.background: BackgroundReflector | None = None
        self.principal: Principal | None = None
        self.scoped: ScopedMemory | None = None  # the principal's view: publish, unpublish, forget with copies
        if principal is not None:
            self.principal = resolve_principal(principal, policy)
            if own_namespace is not None and own_namespace != self.principal.namespace:
                raise ConfigurationError(
                    f"principal {self.principal.name!r} acts in namespace {self.principal.namespace!r}, "
                    f"not {own_namespace!r}: leave namespace out"
                )
            own_namespace = self.principal.namespace
        elif policy is not None:
            raise ConfigurationError("policy= needs principal= (the name of the agent to act as)")
        if reflector is not None and (model is not None or "structured_output" in options):
            raise ConfigurationError("give either reflector or model/structured_output, not both")
        if reflector is not None and not isinstance(reflector, Reflector):
            raise ConfigurationError(f"reflector must be a Reflector, got {type(reflector).__name__}")
        if recall is not None and not isinstance(recall, RecallSettings):
            raise ConfigurationError(f"recall must be RecallSettings, got {type(recall).__name__}")
        url = None if isinstance(database_url, Unset) else database_url
        if store is not None:
            if url is not None or any(options.get(name) is not None for name in ("client", "server")):
                raise ConfigurationError("give at most one of store, client, server and database_url")
            if judge != "auto":
                raise ConfigurationError("judge applies to a store Hindsight opens; give it to MemoryStore(judge=...)")
            self.store = store
        else:  # where it lives: the one function every door uses (settings.store_target)
            self.store = open_store(
                directory=None if isinstance(persist_directory, Unset) else persist_directory,
                database_url=url,
                namespace=own_namespace,
                judge=write_judge(judge, model, locale=language, structured_output=structured_output),
                **{name: options[name] for name in _STORE_OPTIONS if name in options},  # type: ignore[literal-required]
            )
        try:
            self.reflector = reflector or Reflector(
                store=self.store, model=model, locale=language, structured_output=structured_output
            )
            self.background = BackgroundReflector(self.reflector) if options.get("background") else None
            # the one settings object of recall: min_relevance goes Hindsight -> settings -> retriever (-> ranking)
            relevance_check = options.get("relevance_check", False)
            if relevance_check is not False and (relevance_check is not True or model is None):
                raise ConfigurationError("relevance_check=True needs a model (the chat model it asks)")
            recall_options: dict[str, Any] = {n: chosen[n] for n in ("k", "min_relevance") if n in chosen}
            if "task_type" in options:
                recall_options["task_type"] = options["task_type"]
            settings = recall_settings(
                recall, relevance_check=model if relevance_check else None, locale=language, **recall_options
            )
            scope: dict[str, Any] = {}
            if self.principal is not None:
                own = self.principal.namespace
                retriever: HindsightRetriever = ScopedRetriever(
                    store=self.store, principal=self.principal, settings=settings, locale=language
                )
                journal = RunJournal(self.store, namespace=own)
                self.scoped = ScopedMemory(self.store, self.principal, retriever=retriever, journal=journal)
                scope = {"journal": journal, "namespace": own, "namespace_key": None}
            else:
                retriever = HindsightRetriever(store=self.store, settings=settings, locale=language)
            # the floor lives in the retriever's settings only; k and task_type are the same values for the loop
            loop = {name: chosen.get(name, options.get(name)) for name in _SESSION_OPTIONS}
            self.config = build_config(
                SessionConfig(store=self.store, reflector=self.background or self.reflector, retriever=retriever),
                **scope,
                k=settings.k,
                task_type=settings.task_type,
                **{name: value for name, value in loop.items() if name in chosen or name in options},  # given only
            )
            self.session = HindsightSession(self.config)
            self.recorder = TrajectoryRecorder(
                on_finish=self.session.on_trajectory, namespace=self.session.namespace(None)
            )
        except Exception:
            self.close()
            raise

    # ------------------------------------------------------------------ parts
    @property
    def retriever(self) -> HindsightRetriever:
        """The retriever (also usable on its own in LCEL: ``hs.retriever | format_docs``)."""
        return self.session.retriever

    @property
    def journal(self) -> RunJournal:
        """The run journal (always on)."""
        return self.session.journal

    @property
    def k(self) -> int:
        """Experiences recalled per task."""
        return self.session.k

    @property
    def task_type(self) -> str | None:
        """The fixed task type, or ``None``."""
        return self.session.task_type

    @property
    def locale(self) -> Locale:
        """The prompt language; with no locale set the block's frame follows the memories it shows."""
        return self.session.locale

    # ------------------------------------------------------------------ adapters
    @refuse_unknown_keywords
    def middleware(
        self,
        *,
        namespace: str | None = None,
        placement: Placement = "task_message",
        max_pending: int = 1024,
        **options: Unpack[AdapterOptions],
    ) -> HindsightMiddleware:
        """``HindsightMiddleware(self, ...)`` for ``create_agent`` (the same keywords, typed)."""
        return HindsightMiddleware(self, namespace=namespace, placement=placement, max_pending=max_pending, **options)

    @refuse_unknown_keywords
    def wrap(
        self,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        *,
        namespace: str | None = None,
        input_key: str = "messages",
        block_key: str | None = None,
        output_key: str | None = None,
        outcome: OutcomeFn | None = None,
        placement: Placement = "task_message",
        name: str | None = None,
        **options: Unpack[AdapterOptions],
    ) -> CompiledStateGraph[Any, Any, Any, Any]:
        """``with_hindsight(graph, self, ...)``: the graph with this bundle's recall and reflection (typed keywords)."""
        return with_hindsight(
            graph,
            self,
            namespace=namespace,
            input_key=input_key,
            block_key=block_key,
            output_key=output_key,
            outcome=outcome,
            placement=placement,
            name=name,
            **options,
        )

    def memory(self, **options: Any) -> HindsightMemory:
        """``HindsightMemory(self, **options)`` for classic chains (needs the ``classic`` extra)."""
        from langchain_hindsight.adapters.memory import HindsightMemory  # optional extra: langchain-classic

        return HindsightMemory(self, **options)

    @property
    def callbacks(self) -> list[BaseCallbackHandler]:
        """Callbacks that capture any runnable's run and journal, credit and reflect on it when it ends.

        Runs already handled by an adapter of this bundle (same run id in the
        journal) are not reflected twice.
        """
        return [self.recorder]

    # ------------------------------------------------------------------ recall and feedback
    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        task_type: str | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> list[ScoredMemory]:
        """``retriever.recall(query, ...)``: scored memories with their breakdowns, best first.

        Args:
            query: The task description.
            k: At most this many (default: this bundle's ``k``).
            task_type: The task type to score against (default: fixed, else inferred from ``query``).
            namespace: The namespace to recall from (default: the store's).
            now: The clock for time decay (aware datetime); defaults to now.

        Raises:
            ConfigurationError: a bad argument, or a blank ``query`` (no words to match).
            UnknownOptionError: a misspelt keyword (``kk=3``), naming the option it likely means.
        """
        return self.retriever.recall(query, k=k, task_type=task_type, namespace=namespace, now=now)

    async def arecall(
        self,
        query: str,
        *,
        k: int | None = None,
        task_type: str | None = None,
        namespace: str | None = None,
        now: datetime | None = None,
    ) -> list[ScoredMemory]:
        """Async :meth:`recall`."""
        return await self.retriever.arecall(query, k=k, task_type=task_type, namespace=namespace, now=now)

    def explain(self, run_id: str, *, namespace: str | None = None) -> RunExplanation:
        """Which memories shaped a run, and why they were ranked so (see :mod:`langchain_hindsight.recall.explain`).

        With a ``principal``, the run is read from a namespace it may read (default: its own), and a
        shared memory it was served is shown as it is now in the namespace that holds it.

        Raises:
            RunNotFoundError: the journal has no such run.
            AccessDeniedError: the principal may not read ``namespace``.
        """
        if self.scoped is not None:
            return self.scoped.explain(run_id, namespace=namespace)
        return explain_run(self.journal, run_id, namespace=namespace)

    async def aexplain(self, run_id: str, *, namespace: str | None = None) -> RunExplanation:
        """Async :meth:`explain`."""
        return await asyncio.to_thread(self.explain, run_id, namespace=namespace)

    def feedback(
        self,
        run_id: str,
        *,
        success: bool | None = None,
        comment: str | None = None,
        namespace: str | None = None,
    ) -> FeedbackResult:
        """Apply a user's verdict on a run to the memories that run used.

        ``success=False`` means the user says the result was wrong: the success
        credit the run gave is taken back. A ``comment`` with ``success`` not
        ``True`` becomes a new ``user_feedback`` memory (high trust) for the run's
        task, which supersedes only the served memories it contradicts; without a
        comment the served memories get the failure debit (never a user's own
        correction). ``success=True`` credits them (+0.05) once per run. Every
        change is journaled with its reason; :meth:`undo_feedback` reverts it.

        With a ``principal``, the run is looked up in its own journal and only its
        own memories change (shared ones it was served are left as they are).

        Raises:
            RunNotFoundError: the journal has no such run.
            ConfigurationError: nothing to record (no verdict and no comment).
            AccessDeniedError: ``namespace`` is not the principal's own.
        """
        return self.session.feedback(run_id, success=success, comment=comment, namespace=self._own(namespace))

    async def afeedback(
        self,
        run_id: str,
        *,
        success: bool | None = None,
        comment: str | None = None,
        namespace: str | None = None,
    ) -> FeedbackResult:
        """Async :meth:`feedback`."""
        return await self.session.afeedback(run_id, success=success, comment=comment, namespace=self._own(namespace))

    def undo_feedback(self, run_id: str, *, namespace: str | None = None) -> RunRecord:
        """Revert exactly what the run's newest feedback did (see :meth:`HindsightSession.undo_feedback`).

        Confidences and statuses come back as the journal recorded them, a memory
        the correction superseded is active again, the correction it created is
        archived (restorable), the run's credit is restored; the undo is journaled.

        Example:
            .. code-block:: python

                hs.feedback(run_id, success=False, comment="不对，周报只统计本周一到周日")
                hs.undo_feedback(run_id)   # as if the comment had never been given

        Raises:
            RunNotFoundError: the journal has no such run.
            FeedbackNotFoundError: the run has no feedback to undo.
            FeedbackAlreadyUndoneError: its feedback is already undone (nothing changed).
            AccessDeniedError: ``namespace`` is not the principal's own.
        """
        return self.session.undo_feedback(run_id, namespace=self._own(namespace))

    async def aundo_feedback(self, run_id: str, *, namespace: str | None = None) -> RunRecord:
        """Async :meth:`undo_feedback`."""
        return await self.session.aundo_feedback(run_id, namespace=self._own(namespace))

    def _own(self, namespace: str | None) -> str | None:
        """The namespace a feedback call may act on: any without a principal, else only the principal's own."""
        return namespace if self.principal is None else self.session.namespace(namespace)

    # ------------------------------------------------------------------ lifecycle
    def flush(self, timeout: float | None = None) -> bool:
        """Wait for background reflection (no-op without ``background=True``)."""
        return self.background.flush(timeout) if self.background is not None else True

    def close(self) -> None:
        """Finish background work and close the store this object opened (idempotent)."""
        background = getattr(self, "background", None)
        if background is not None:
            background.close()
        if self._owns_store and getattr(self, "store", None) is not None:
            self.store.close()

    def __enter__(self) -> Hindsight:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
