"""The one place a session's parts are built and its defaults filled.

Every door ends here: ``Hindsight(...)`` (through :func:`open_store`, :func:`recall_settings` and
:func:`build_config`), the adapters given a bare store or a :class:`SessionConfig`
(:func:`~langchain_hindsight.session.source.session_for`), an adapter's own options
(:meth:`HindsightSession.derive <langchain_hindsight.session.loop.HindsightSession.derive>`) and the
MCP server's feedback session. :class:`~langchain_hindsight.session.loop.HindsightSession` itself
builds nothing: it receives a :class:`SessionConfig` whose parts (retriever, reflector, journal) are
already here.

Each default lives in one settings object and is only read here:

* recall's options (``k``, ``task_type``, the relevance floor ``min_relevance``, the fusion weights) in
  :class:`~langchain_hindsight.recall.engine.RecallSettings` — the floor's default nowhere else;
* the loop's options (``max_lines``, ``locale``, ``on_error``, ...) in :class:`SessionConfig`;
* where the store lives in :func:`~langchain_hindsight.settings.store_target` (the caller's store,
  else ``$HINDSIGHT_DATABASE_URL`` / ``$HINDSIGHT_SERVER`` / ``$HINDSIGHT_PATH``, else ``./memory_db``);
* the store's own options (namespace, thresholds) in :class:`MemoryStore`.

Example:
    >>> from langchain_hindsight.store.backend.inmemory import InMemoryBackend
    >>> config = build_config(MemoryStore(backend=InMemoryBackend()), k=3)
    >>> config.retriever.k, config.retriever.min_relevance == RecallSettings().min_relevance
    (3, True)
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, Unpack
from urllib.parse import urlsplit

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight._unset import Unset
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.prompts import Locale
from langchain_hindsight.recall.engine import RecallSettings
from langchain_hindsight.recall.retriever import HindsightRetriever
from langchain_hindsight.reflection.reflector import Reflector
from langchain_hindsight.session.config import PROMPT_LOCALE, SessionConfig, SessionOptions
from langchain_hindsight.settings import DEFAULT_DIRECTORY, store_target
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.writes import LLMWriteJudge, WriteJudge

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel

__all__ = ["build_config", "open_store", "recall_settings", "server_client", "write_judge"]


def server_client(server: str) -> ClientAPI:
    """A chromadb ``HttpClient`` for ``"http://host:port"`` (or ``"host:port"``).

    Raises:
        ConfigurationError: not a server address.
    """
    import chromadb  # only a server target needs the HTTP client

    parts = urlsplit(server if "://" in server else f"http://{server}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"server must look like 'http://host:port', got {server!r}")
    port = parts.port or (443 if parts.scheme == "https" else 8000)
    return chromadb.HttpClient(host=parts.hostname, port=port, ssl=parts.scheme == "https")


def open_store(
    *,
    directory: str | os.PathLike[str] | None = None,
    client: ClientAPI | None = None,
    server: str | None = None,
    database_url: str | None = None,
    embeddings: Embeddings | None = None,
    namespace: str | None = None,
    judge: WriteJudge | Literal["rules"] = "rules",
) -> MemoryStore:
    """Open the store a ``Hindsight`` works on: the one given, else the environment's (one function decides).

    ``client`` (a chromadb client) counts as a named store; otherwise
    :func:`~langchain_hindsight.settings.store_target` picks among ``directory``, ``server``,
    ``database_url`` and the environment. ``namespace=None`` keeps :class:`MemoryStore`'s default.

    Raises:
        ConfigurationError: more than one of ``client``, ``server`` and ``database_url`` (a directory
            given with one of them is ignored, as the store it names is not a directory).
    """
    if sum(x is not None for x in (client, server, database_url)) > 1:
        raise ConfigurationError("give at most one of store, client, server and database_url")
    own: dict[str, Any] = {} if namespace is None else {"namespace": namespace}
    judged = None if judge == "rules" else judge
    if client is not None:
        return MemoryStore(client=client, embeddings=embeddings, judge=judged, **own)
    named = directory if server is None and database_url is None else None
    target = store_target(directory=named, server=server, database_url=database_url)
    if target.server is not None:
        return MemoryStore(client=server_client(target.server), embeddings=embeddings, judge=judged, **own)
    return MemoryStore(
        target.directory or DEFAULT_DIRECTORY,
        database_url=target.database_url,
        embeddings=embeddings,
        judge=judged,
        **own,
    )


def write_judge(
    judge: WriteJudge | Literal["auto", "rules"],
    model: BaseChatModel | None,
    *,
    locale: Locale,
    structured_output: bool,
) -> WriteJudge | Literal["rules"]:
    """``judge="auto"`` made concrete: with a model one bounded call to it, else the rule."""
    if judge != "auto":
        return judge
    return LLMWriteJudge(model, locale=locale, structured_output=structured_output) if model else "rules"


def recall_settings(
    base: RecallSettings | None = None,
    /,
    *,
    relevance_check: BaseChatModel | None = None,
    locale: Locale | None = None,
    **options: Any,
) -> RecallSettings:
    """The one :class:`RecallSettings` of a bundle: ``base`` (default ``RecallSettings()``) with ``options`` changed.

    ``options`` are :class:`RecallSettings` options (``k``, ``task_type``, ``min_relevance``, ...); one left
    out keeps ``base``'s value, which is that class's default when no ``base`` is given (the relevance floor's
    only home). ``relevance_check``: a chat model asked once per recall (its prompts in ``locale``).
    """
    if relevance_check is not None:
        options.update(relevance_check=relevance_check, locale=locale or PROMPT_LOCALE)
    return RecallSettings.from_options(base, **options)


@refuse_unknown_keywords
def build_config(source: SessionConfig | MemoryStore, /, **options: Unpack[SessionOptions]) -> SessionConfig:
    """A :class:`SessionConfig` with every part built: the one place a session's missing parts are made.

    ``options`` change the config's options (checked, a misspelt one refused). A missing
    retriever becomes a :class:`HindsightRetriever` over :func:`recall_settings` (recall's defaults from
    :class:`RecallSettings`), a missing reflector a rule-based :class:`Reflector` (when the session
    reflects), a missing journal ``RunJournal(store)``. A ``min_relevance`` given for a session whose
    retriever has another floor gives this session a copy of the retriever with that floor (the shared
    one keeps its own).

    Raises:
        ConfigurationError: an invalid option.
        UnknownOptionError: a misspelt option.
    """
    if isinstance(source, SessionConfig):
        config = replace(source, **options) if options else source
    else:
        config = SessionConfig(store=source, **options)
    store, locale = config.store, config.locale or PROMPT_LOCALE
    floor: dict[str, Any] = {} if isinstance(config.min_relevance, Unset) else {"min_relevance": config.min_relevance}
    retriever = config.retriever
    if retriever is None:
        settings = recall_settings(k=config.k, task_type=config.task_type, **floor)
        retriever = HindsightRetriever(store=store, settings=settings, locale=locale)
    elif floor and retriever.min_relevance != floor["min_relevance"]:
        settings = RecallSettings.from_options(retriever.settings, **floor)
        retriever = retriever.model_copy(update={"settings": settings})
    reflector = config.reflector
    if reflector is None and config.reflect:
        reflector = Reflector(store=store, locale=locale)
    journal = config.journal if config.journal is not None else RunJournal(store)
    return replace(config, retriever=retriever, reflector=reflector, journal=journal)
