"""Every environment variable langchain-hindsight reads, in one place; nothing here writes one.

The package never writes ``os.environ``. It reads these variables, each at the
moment it is needed (not at import), and only through this module:

============================  ==========================================================
``HINDSIGHT_CACHE_DIR``       where the one-time ONNX export of a sentence-transformers
                              model is kept (:func:`cache_dir`)
``XDG_CACHE_HOME``            its fallback parent: ``$XDG_CACHE_HOME/langchain-hindsight``,
                              else ``~/.cache/langchain-hindsight``
``HINDSIGHT_PATH``            the default store directory (:func:`store_target`)
``HINDSIGHT_SERVER``          the default Chroma server (:func:`store_target`)
``HINDSIGHT_DATABASE_URL``    a PostgreSQL database (``postgresql://...``): the default store
                              (:func:`store_target`) when no other store is given
``HINDSIGHT_MODEL``           an OpenAI-compatible chat model name for
                              :func:`openai_chat_model` when none is given
``OPENAI_BASE_URL``           that model's endpoint when none is given
``OPENAI_API_KEY``            only checked for presence (``ChatOpenAI`` reads it itself)
``HINDSIGHT_K``               ``Hindsight(k=...)`` when not given: experiences per task
``HINDSIGHT_LOCALE``          ``Hindsight(locale=...)``: ``zh`` or ``en``
``HINDSIGHT_MIN_RELEVANCE``   ``Hindsight(min_relevance=...)``: ``auto``, ``off`` (no floor) or a number
``HINDSIGHT_NAMESPACE``       ``Hindsight(namespace=...)``: the default namespace
``HINDSIGHT_MAX_LINES``       ``Hindsight(max_lines=...)``: memory lines in the block
``HINDSIGHT_MAX_LINE_CHARS``  ``Hindsight(max_line_chars=...)``: characters of one memory's text
``HINDSIGHT_MAX_BLOCK_CHARS`` ``Hindsight(max_block_chars=...)``: characters of the whole block (``off``: unbounded)
``HINDSIGHT_MCP_TOKEN``       the bearer token ``hindsight mcp --transport http`` requires
                              (:func:`mcp_token`; else it generates one and prints it)
============================  ==========================================================

Where the store lives is decided by one function, :func:`store_target`, for every door (``Hindsight()``,
every ``hindsight`` command, the console and the MCP server, which the CLI opens).

An argument given to ``Hindsight(...)`` always wins over its variable; a variable wins over the
default. A malformed value is a :class:`~langchain_hindsight.errors.ConfigurationError` naming the
variable (see :func:`session_defaults`).

:func:`read_environment` and :func:`cache_dir` take an optional ``environ``
mapping (default ``os.environ``), so a caller or a test can pass its own instead
of changing the process's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight.errors import ConfigurationError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "CACHE_DIR",
    "DATABASE_URL",
    "DEFAULT_DIRECTORY",
    "LOCALE",
    "MAX_BLOCK_CHARS",
    "MAX_LINES",
    "MAX_LINE_CHARS",
    "MCP_TOKEN",
    "MIN_RELEVANCE",
    "MODEL",
    "NAMESPACE",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_EXTRA",
    "SERVER",
    "SESSION_VARIABLES",
    "STORE_PATH",
    "XDG_CACHE_HOME",
    "Environment",
    "K",
    "StoreTarget",
    "cache_dir",
    "mcp_token",
    "openai_chat_model",
    "read_environment",
    "session_defaults",
    "store_target",
]

CACHE_DIR = "HINDSIGHT_CACHE_DIR"
XDG_CACHE_HOME = "XDG_CACHE_HOME"
STORE_PATH = "HINDSIGHT_PATH"
SERVER = "HINDSIGHT_SERVER"
DATABASE_URL = "HINDSIGHT_DATABASE_URL"
MODEL = "HINDSIGHT_MODEL"
OPENAI_BASE_URL = "OPENAI_BASE_URL"
OPENAI_API_KEY = "OPENAI_API_KEY"
MCP_TOKEN = "HINDSIGHT_MCP_TOKEN"

K = "HINDSIGHT_K"
LOCALE = "HINDSIGHT_LOCALE"
MIN_RELEVANCE = "HINDSIGHT_MIN_RELEVANCE"
NAMESPACE = "HINDSIGHT_NAMESPACE"
MAX_LINES = "HINDSIGHT_MAX_LINES"
MAX_LINE_CHARS = "HINDSIGHT_MAX_LINE_CHARS"
MAX_BLOCK_CHARS = "HINDSIGHT_MAX_BLOCK_CHARS"
SESSION_VARIABLES: dict[str, str] = {
    "k": K,
    "locale": LOCALE,
    "min_relevance": MIN_RELEVANCE,
    "namespace": NAMESPACE,
    "max_lines": MAX_LINES,
    "max_line_chars": MAX_LINE_CHARS,
    "max_block_chars": MAX_BLOCK_CHARS,
}
"""``Hindsight(...)`` option → the variable that gives its default."""
_OFF = frozenset({"off", "none"})

OPENAI_EXTRA = "pip install 'langchain-hindsight[openai]'"
"""How to install what :func:`openai_chat_model` needs (``langchain-openai`` is an optional extra)."""


@refuse_unknown_keywords
@dataclass(frozen=True, slots=True)
class Environment:
    """The values of the variables above; an empty string counts as unset (``None``).

    Attributes:
        cache_dir: ``HINDSIGHT_CACHE_DIR``.
        xdg_cache_home: ``XDG_CACHE_HOME``.
        store_path: ``HINDSIGHT_PATH``.
        server: ``HINDSIGHT_SERVER``.
        database_url: ``HINDSIGHT_DATABASE_URL``.
        model: ``HINDSIGHT_MODEL``.
        openai_base_url: ``OPENAI_BASE_URL``.
        has_openai_key: Whether ``OPENAI_API_KEY`` is set (its value is never kept).
    """

    cache_dir: str | None = None
    xdg_cache_home: str | None = None
    store_path: str | None = None
    server: str | None = None
    database_url: str | None = None
    model: str | None = None
    openai_base_url: str | None = None
    has_openai_key: bool = False


def read_environment(environ: Mapping[str, str] | None = None) -> Environment:
    """Read every variable this package uses from ``environ`` (default ``os.environ``) now."""
    env = os.environ if environ is None else environ

    def get(name: str) -> str | None:
        return env.get(name) or None

    return Environment(
        cache_dir=get(CACHE_DIR),
        xdg_cache_home=get(XDG_CACHE_HOME),
        store_path=get(STORE_PATH),
        server=get(SERVER),
        database_url=get(DATABASE_URL),
        model=get(MODEL),
        openai_base_url=get(OPENAI_BASE_URL),
        has_openai_key=bool(get(OPENAI_API_KEY)),
    )


DEFAULT_DIRECTORY = "./memory_db"
"""The store directory when neither the caller nor the environment names a store."""


@dataclass(frozen=True, slots=True)
class StoreTarget:
    """Where a store lives: exactly one of the three fields is set (:func:`store_target` builds it).

    Attributes:
        directory: An embedded store's directory.
        server: A Chroma server address (``"host:port"`` or ``"http://host:port"``).
        database_url: A PostgreSQL database (``"postgresql://..."``).
    """

    directory: str | None = None
    server: str | None = None
    database_url: str | None = None


def store_target(
    *,
    directory: str | os.PathLike[str] | None = None,
    server: str | None = None,
    database_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> StoreTarget:
    """The store a door opens: the one the caller names, else the environment's, else ``./memory_db``.

    The one place the store target is read from the environment: ``Hindsight()``, every ``hindsight``
    command (``--path``, ``--server``, ``--database-url``), the console (``hindsight ui``) and the MCP
    server (``hindsight mcp``) call it. A store the caller names always wins over every variable; with
    none, ``$HINDSIGHT_DATABASE_URL`` wins over ``$HINDSIGHT_SERVER``, which wins over ``$HINDSIGHT_PATH``.

    Example:
        >>> store_target(environ={"HINDSIGHT_DATABASE_URL": "postgresql://u@h/db"}).database_url
        'postgresql://u@h/db'
        >>> store_target(directory="./mine", environ={"HINDSIGHT_DATABASE_URL": "postgresql://u@h/db"})
        StoreTarget(directory='./mine', server=None, database_url=None)
        >>> store_target(environ={}).directory
        './memory_db'

    Raises:
        ConfigurationError: more than one of ``directory``, ``server`` and ``database_url``.
    """
    given = [value for value in (directory, server, database_url) if value is not None]
    if len(given) > 1:
        raise ConfigurationError("give at most one of a directory, a server and a database URL")
    if directory is not None:
        return StoreTarget(directory=os.fspath(directory))
    if server is not None or database_url is not None:
        return StoreTarget(server=server, database_url=database_url)
    env = read_environment(environ)
    if env.database_url:
        return StoreTarget(database_url=env.database_url)
    if env.server:
        return StoreTarget(server=env.server)
    return StoreTarget(directory=env.store_path or DEFAULT_DIRECTORY)


def _positive_int(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError as e:
        raise ConfigurationError(f"${name} must be a positive whole number, got {text!r}") from e
    if value < 1:
        raise ConfigurationError(f"${name} must be a positive whole number, got {text!r}")
    return value


def _min_relevance(name: str, text: str) -> float | str | None:
    lowered = text.strip().lower()
    if lowered == "auto":
        return "auto"
    if lowered in _OFF:
        return None
    try:
        value = float(lowered)
    except ValueError as e:
        raise ConfigurationError(f"${name} must be 'auto', 'off' or a number, got {text!r}") from e
    if value != value or value < 0:  # NaN or negative
        raise ConfigurationError(f"${name} must be 'auto', 'off' or a number >= 0, got {text!r}")
    return value


def session_defaults(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The ``Hindsight(...)`` options the environment sets (:data:`SESSION_VARIABLES`), parsed and checked.

    Only variables that are set (non-empty) appear. Example:
        >>> session_defaults({"HINDSIGHT_K": "3", "HINDSIGHT_LOCALE": "en", "HINDSIGHT_MIN_RELEVANCE": "off"})
        {'k': 3, 'locale': 'en', 'min_relevance': None}

    Raises:
        ConfigurationError: a value that does not parse, naming the variable.
    """
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for option, name in SESSION_VARIABLES.items():
        text = (env.get(name) or "").strip()
        if not text:
            continue
        if option == "locale":
            if text not in ("zh", "en"):
                raise ConfigurationError(f"${name} must be 'zh' or 'en', got {text!r}")
            out[option] = text
        elif option == "namespace":
            out[option] = text
        elif option == "min_relevance":
            out[option] = _min_relevance(name, text)
        elif option == "max_block_chars" and text.lower() in _OFF:
            out[option] = None
        else:
            out[option] = _positive_int(name, text)
    return out


def cache_dir(explicit: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None) -> Path:
    """The cache directory: ``explicit``, else ``$HINDSIGHT_CACHE_DIR``, else ``$XDG_CACHE_HOME/langchain-hindsight``,
    else ``~/.cache/langchain-hindsight``.

    Example:
        >>> cache_dir(environ={"HINDSIGHT_CACHE_DIR": "/srv/cache"}).as_posix()
        '/srv/cache'
        >>> cache_dir(environ={"XDG_CACHE_HOME": "/var/cache"}).as_posix()
        '/var/cache/langchain-hindsight'
    """  # noqa: D205 - the summary is the resolution order, which does not fit one line
    if explicit is not None:
        return Path(explicit).expanduser()
    env = read_environment(environ)
    if env.cache_dir:
        return Path(env.cache_dir).expanduser()
    base = Path(env.xdg_cache_home) if env.xdg_cache_home else Path.home() / ".cache"
    return base / "langchain-hindsight"


def mcp_token(environ: Mapping[str, str] | None = None) -> str | None:
    """The MCP HTTP bearer token from ``$HINDSIGHT_MCP_TOKEN`` (surrounding spaces dropped), or ``None``.

    Kept out of :class:`Environment`, so it is never shown with the other values.

    Example:
        >>> mcp_token(environ={"HINDSIGHT_MCP_TOKEN": " s3cret-token-for-tests "})
        's3cret-token-for-tests'
    """
    env = os.environ if environ is None else environ
    return (env.get(MCP_TOKEN) or "").strip() or None


def openai_chat_model(model: str | None = None, base_url: str | None = None) -> BaseChatModel | None:
    """An OpenAI-compatible chat model (``temperature=0``), or ``None`` when no model is named.

    ``model`` defaults to ``$HINDSIGHT_MODEL`` and ``base_url`` to
    ``$OPENAI_BASE_URL`` (OpenAI itself when neither is given). Without
    ``OPENAI_API_KEY`` a local ``base_url`` still works (such servers usually
    ignore the key); with neither it raises before any request is made.

    Reads the process's environment (``ChatOpenAI`` reads ``OPENAI_API_KEY`` from it too).

    Raises:
        ConfigurationError: a model is named but there is no API key and no base URL.
        ImportError: ``langchain-openai`` is not installed (the ``openai`` extra).
    """
    env = read_environment()
    name = model or env.model
    if not name:
        return None
    url = base_url or env.openai_base_url
    options: dict[str, Any] = {"model": name, "temperature": 0}
    if url:
        options["base_url"] = url
    if not env.has_openai_key:
        if not url:
            raise ConfigurationError(f"model {name!r} needs OPENAI_API_KEY (or a local OpenAI-compatible base URL)")
        options["api_key"] = "not-needed"
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as e:
        raise ImportError(f"a named chat model needs langchain-openai: {OPENAI_EXTRA}") from e
    return ChatOpenAI(**options)
