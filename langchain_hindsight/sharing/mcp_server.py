"""An MCP server over the memory store: any MCP-capable agent can recall and remember.

``hindsight mcp --principal NAME`` serves one principal's view of a store
(:class:`~langchain_hindsight.sharing.access.ScopedMemory`): its own namespace plus the
namespaces its grants allow, never another tenant's. Transport: stdio by default,
streamable HTTP with ``--transport http --port N``.

Tools (names are part of the contract):

* ``recall(task, k=5, task_type=None)`` → the ``[相关经验]`` block plus the results
  with ids, scores, namespace and whether each is shared; the run id to give feedback on;
* ``remember(content, correction=False, task_type="general", tags=[], namespace=None)`` → the
  stored unit (``namespace``: one the principal may write, e.g. a shared pool);
* ``feedback(success, run_id=None, memory_ids=None, comment=None)`` → what changed;
* ``forget(memory_id)`` → how many copies were deleted (published copies included);
* ``explain(run_id)`` → which memories a run was shown and why.

Resources: ``hindsight://memories`` (the principal's own namespace) and
``hindsight://memories/{namespace}`` (any namespace it may read).

Errors (a denied grant, an unknown id, bad input) come back as MCP tool errors
with one readable line; the server keeps running.

Over HTTP, on every bind address: each request needs ``Authorization: Bearer
<token>`` (401 without it; ``hindsight mcp`` prints a fresh token at start, or
takes one from ``--token-file`` or ``$HINDSIGHT_MCP_TOKEN``), ``Host`` and
``Origin`` must name this server (421/403 otherwise: a DNS-rebinding page gets
nowhere), and a body over :data:`MAX_REQUEST_BYTES` gets 413. Each call is
bounded: at most :data:`MAX_IDS` ids, :data:`MAX_K` results, :data:`MAX_TAGS`
tags, labels of :data:`MAX_LABEL_CHARS` and comments of 4,000 characters, and a
``recall`` task is read up to :data:`MAX_TASK_CHARS` characters.
``feedback`` goes through the library's verdict path
(:meth:`~langchain_hindsight.session.loop.HindsightSession.feedback`): a run is
credited once however often it is confirmed, with the bounded-credit policy and
the caps, and only the principal's own memories change.

Requires the ``mcp`` extra: ``pip install "langchain-hindsight[mcp]"``.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import signal
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any, Literal, TypeVar

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from langchain_hindsight._checks import check_options, is_int, refuse_unknown_keywords
from langchain_hindsight.errors import ConfigurationError, HindsightError, UnknownOptionError
from langchain_hindsight.prompts import Locale
from langchain_hindsight.recall.injection import format_experiences
from langchain_hindsight.session.source import session_for
from langchain_hindsight.sharing.access import ScopedMemory, ScopedResult
from langchain_hindsight.types import MAX_CONTENT_CHARS, MemoryUnit, ScoredMemory

__all__ = [
    "MAX_IDS",
    "MAX_K",
    "MAX_LABEL_CHARS",
    "MAX_REQUEST_BYTES",
    "MAX_TASK_CHARS",
    "SERVER_NAME",
    "TOOL_NAMES",
    "HindsightMCP",
    "create_server",
    "new_token",
    "run_server",
]

logger = logging.getLogger(__name__)

SERVER_NAME = "hindsight"
TOOL_NAMES = ("recall", "remember", "feedback", "forget", "explain")
"""The pinned tool names."""
_INSTRUCTIONS = (
    "Experience memory. Call `recall` with the task before you start and read the [相关经验] block; "
    "call `remember` with a reusable lesson (or a user's correction) after it; call `feedback` with the "
    "run id recall returned once you know whether the task succeeded."
)
Transport = Literal["stdio", "http"]
_T = TypeVar("_T")

MAX_REQUEST_BYTES = 256 * 1024
"""Largest HTTP request body the server reads (413 beyond it); a lesson is at most 4,000 characters."""
MAX_TASK_CHARS = 4_000
"""``recall`` reads at most this many characters of the task (the rest is clipped, and the result says so)."""
MAX_IDS = 100
"""At most this many ids in one ``feedback`` call."""
MAX_K = 50
"""At most this many results from one ``recall``."""
MAX_TAGS = 32
"""At most this many tags in one ``remember`` call."""
MAX_LABEL_CHARS = 128
"""At most this many characters in a ``task_type`` (the store's own limit)."""
_MIN_TOKEN = 16
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD = ("0.0.0.0", "::", "")


def new_token() -> str:
    """A fresh bearer token for the HTTP transport (256 random bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def _check_token(token: str) -> str:
    if not isinstance(token, str) or len(token) < _MIN_TOKEN or not token.isascii() or not token.isprintable():
        raise ConfigurationError(f"the MCP token must be at least {_MIN_TOKEN} printable ASCII characters")
    if any(c.isspace() for c in token):
        raise ConfigurationError("the MCP token must not contain spaces")
    return token


def _host_names(host: str, allowed_hosts: Sequence[str]) -> list[str]:
    """The names a client may put in ``Host`` (and its page in ``Origin``) for a server bound to ``host``."""
    names = list(_LOOPBACK)
    if host not in _WILDCARD and host not in ("127.0.0.1", "localhost", "::1"):
        names.append(f"[{host}]" if ":" in host and not host.startswith("[") else host)
    if host in _WILDCARD:
        names.append(socket.gethostname().lower())
    for extra in allowed_hosts:
        if not isinstance(extra, str) or not extra.strip() or any(c in extra for c in "/ *"):
            raise ConfigurationError(f"allowed hosts are host names or addresses, got {extra!r}")
        names.append(extra.strip().lower())
    return list(dict.fromkeys(names))


def transport_security(host: str, allowed_hosts: Sequence[str] = ()) -> TransportSecuritySettings:
    """Host and Origin checks for a server bound to ``host``, on every bind (not only loopback).

    A wildcard bind (``0.0.0.0``, ``::``) accepts the loopback names and this machine's
    host name; any other name a client uses (a LAN address, a DNS name) must be listed
    in ``allowed_hosts``. A browser page from any other origin gets 403, one that
    reached the server through a rebound DNS name 421.
    """
    names = _host_names(host, allowed_hosts)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*names, *(f"{n}:*" for n in names)],
        allowed_origins=[f"{scheme}://{n}{port}" for n in names for scheme in ("http", "https") for port in ("", ":*")],
    )


class _Guard:
    """ASGI middleware in front of the whole HTTP app: Host/Origin first (421/403), then the bearer token (401)."""

    def __init__(self, app: ASGIApp, *, token: str, security: TransportSecuritySettings) -> None:
        self.app = app
        self._token = token.encode("ascii")
        self._checks = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        refused = await self._checks.validate_request(conn, is_post=False)
        if refused is None and not self._authorised(conn.headers.get("authorization", "")):
            refused = Response(
                "missing or wrong bearer token (see the token line hindsight mcp printed at start)\n",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="hindsight"'},
            )
        if refused is not None:
            logger.warning("MCP HTTP request refused with %d (%s)", refused.status_code, conn.url.path)
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _authorised(self, header: str) -> bool:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        try:
            given = value.strip().encode("ascii")
        except UnicodeEncodeError:
            return False
        return hmac.compare_digest(given, self._token)


class HindsightMCP(FastMCP):
    """The :class:`FastMCP` server :func:`create_server` returns: its HTTP app needs the bearer token.

    ``server.token`` is the token; ``server.run("streamable-http")``, ``server.run("sse")``
    and the apps (``streamable_http_app()``, ``sse_app()``, mounted in another ASGI app) are all guarded.
    """

    def __init__(self, *args: Any, token: str, security: TransportSecuritySettings, **kwargs: Any) -> None:
        super().__init__(*args, transport_security=security, **kwargs)
        self.token = _check_token(token)
        self._security = security

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool, refusing an argument it does not take (the tool's argument model would drop it).

        A misspelt or unsupported argument must not be ignored: ``recall(task=…, namespace="other")``
        would otherwise answer from the principal's own namespace as if it had been asked to.
        """
        tool = next((t for t in await self.list_tools() if t.name == name), None)
        if tool is not None:
            try:
                check_options(f"{name} tool", arguments, tool.inputSchema.get("properties", {}))
            except UnknownOptionError as e:
                logger.info("mcp: refused %s call: %s", name, e)
                raise ToolError(f"{type(e).__name__}: {e}") from e
        return await super().call_tool(name, arguments)

    def streamable_http_app(self) -> Starlette:
        """The streamable HTTP app behind the Host/Origin checks and the bearer token."""
        app = super().streamable_http_app()
        app.add_middleware(_Guard, token=self.token, security=self._security)
        return app

    def sse_app(self, mount_path: str | None = None) -> Starlette:
        """The (legacy) SSE app, guarded like :meth:`streamable_http_app`."""
        app = super().sse_app(mount_path)
        app.add_middleware(_Guard, token=self.token, security=self._security)
        return app


def _unit(unit: MemoryUnit) -> dict[str, Any]:
    return {
        "memory_id": unit.memory_id,
        "namespace": unit.namespace,
        "content": unit.content,
        "task_type": unit.task_type,
        "source": unit.source,
        "confidence": round(unit.score_confidence, 4),
        "access_count": unit.access_count,
        "status": unit.status,
        "tags": list(unit.tags),
    }


def _result(r: ScopedResult) -> dict[str, Any]:
    return {
        **_unit(r.memory),
        "score": round(r.scored.score, 4),
        "similarity": round(r.scored.similarity, 4),
        "shared": not r.own,
        "breakdown": {k: round(v, 4) for k, v in r.scored.breakdown.items()},
    }


async def _call(fn: Callable[[], _T]) -> _T:
    """Run blocking store work off the event loop; typed errors become one-line tool errors."""
    try:
        return await anyio.to_thread.run_sync(fn)
    except HindsightError as e:
        raise ToolError(f"{type(e).__name__}: {e}") from e


def _bounded_ids(memory_ids: object) -> list[str]:
    if not isinstance(memory_ids, list) or not all(isinstance(i, str) and 0 < len(i) <= 128 for i in memory_ids):
        raise ToolError("memory_ids must be a list of memory id strings")
    if len(memory_ids) > MAX_IDS:
        raise ToolError(f"memory_ids holds {len(memory_ids)} ids; at most {MAX_IDS} per call")
    return list(dict.fromkeys(memory_ids))


def _clipped_task(task: object) -> tuple[str, int | None]:
    """The task recall reads (at most :data:`MAX_TASK_CHARS`), and the original length when it was clipped."""
    if not isinstance(task, str) or not task.strip():
        raise ToolError("task must be a non-empty string")
    if len(task) <= MAX_TASK_CHARS:
        return task, None
    logger.info("MCP recall: a task of %d characters clipped to %d", len(task), MAX_TASK_CHARS)
    return task[:MAX_TASK_CHARS], len(task)


def _label(task_type: object) -> None:
    if task_type is not None and (not isinstance(task_type, str) or len(task_type) > MAX_LABEL_CHARS):
        raise ToolError(f"task_type must be a label of at most {MAX_LABEL_CHARS} characters")


def _feedback_run(memory: ScopedMemory, ids: list[str]) -> tuple[str | None, list[str]]:
    """A journaled run for feedback given on memory ids (no recall run): the own-namespace ones, the rest skipped.

    Every such run of a principal has the same task, so the bounded-credit policy
    counts repeated credits of one memory as repeats of one task (+0.05, then
    ×0.25 each, within the policy's window) instead of one full credit per call.
    """
    own = memory.principal.namespace
    units = memory.store.get_many(ids, namespace=own)
    found = {u.memory_id for u in units}
    skipped = [i for i in ids if i not in found]
    if not units:
        return None, skipped
    run_id = f"mcp-{uuid.uuid4().hex}"
    memory.journal.start(
        run_id,
        task=f"[{memory.principal.name}] feedback on memories",
        namespace=own,
        served=[ScoredMemory(memory=u, score=0.0, similarity=0.0) for u in units],
    )
    return run_id, skipped


@refuse_unknown_keywords
def create_server(
    memory: ScopedMemory,
    *,
    locale: Locale = "zh",
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
) -> HindsightMCP:
    """The MCP server for one principal's view of a store.

    Over HTTP every request needs ``Authorization: Bearer <token>`` (401 without
    it) and passes Host/Origin checks on every bind (403 for a foreign
    ``Origin``); bodies over :data:`MAX_REQUEST_BYTES` get 413. Stdio needs no token.

    Example:
        .. code-block:: python

            from langchain_hindsight import MemoryStore
            from langchain_hindsight.sharing.access import Principal, ScopedMemory
            from langchain_hindsight.sharing.mcp_server import create_server

            store = MemoryStore("./memory_db")
            server = create_server(ScopedMemory(store, Principal("analyst", "analyst", read={"shared"})))
            server.run("stdio")

    Args:
        memory: Whose view is served (the principal and its grants).
        locale: Language of the rendered block.
        host: Bind address for the HTTP transport (loopback by default).
        port: Port for the HTTP transport.
        token: The HTTP bearer token (default: a fresh one, :func:`new_token`; read it from ``server.token``).
        allowed_hosts: Further names clients may use in ``Host``/``Origin`` (e.g. a LAN address
            for a server bound to ``0.0.0.0``); see :func:`transport_security`.

    Raises:
        ConfigurationError: a token shorter than 16 characters or with spaces, or a malformed allowed host.
    """
    server = HindsightMCP(
        SERVER_NAME,
        instructions=_INSTRUCTIONS,
        host=host,
        port=port,
        log_level="WARNING",
        max_request_body_size=MAX_REQUEST_BYTES,
        token=new_token() if token is None else token,
        security=transport_security(host, allowed_hosts),
    )
    own = memory.principal.namespace
    session = session_for(memory.store, journal=memory.journal, namespace=own, reflect=False, locale=locale)

    @server.tool()
    async def recall(task: str, k: int = 5, task_type: str | None = None) -> dict[str, Any]:
        """Recall the experiences relevant to a task, best first, as a [相关经验] block and as data."""
        text, clipped = _clipped_task(task)
        _label(task_type)
        if not is_int(k, 1, MAX_K):
            raise ToolError(f"k must be a whole number from 1 to {MAX_K}, got {k!r}")
        run_id, results = await _call(lambda: memory.recall(text, k=k, task_type=task_type))
        block = format_experiences([r.scored for r in results], locale=locale, own_namespace=own)
        out: dict[str, Any] = {"run_id": run_id, "block": block, "results": [_result(r) for r in results]}
        if clipped is not None:
            out["task_clipped"] = {"from": clipped, "to": MAX_TASK_CHARS}
        return out

    @server.tool()
    async def remember(
        content: str,
        correction: bool = False,
        task_type: str = "general",
        tags: list[str] | None = None,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """Store a reusable lesson; correction=true when it is a user's correction of the agent.

        namespace: a namespace this agent may write (default: its own), e.g. a shared pool.
        """
        _label(task_type)
        if tags is not None and len(tags) > MAX_TAGS:
            raise ToolError(f"tags holds {len(tags)} tags; at most {MAX_TAGS} per call")
        unit = await _call(
            lambda: memory.remember(
                content, correction=correction, task_type=task_type, tags=tags or [], namespace=namespace
            )
        )
        return _unit(unit)

    @server.tool()
    async def feedback(
        success: bool,
        run_id: str | None = None,
        memory_ids: list[str] | None = None,
        comment: str | None = None,
    ) -> dict[str, Any]:
        """Report how a task went: on the memories a recall run served (run_id) or on memory ids.

        A run is credited once, however often it is confirmed; only this agent's own
        memories change (a shared one it was served is listed as skipped).
        """
        if not run_id and not memory_ids:
            raise ToolError("feedback needs run_id or memory_ids")
        if run_id and memory_ids:
            raise ToolError("give run_id (the memories a recall served) or memory_ids, not both")
        ids = _bounded_ids(memory_ids) if memory_ids else []
        if comment is not None and (not isinstance(comment, str) or len(comment) > MAX_CONTENT_CHARS):
            raise ToolError(f"comment must be a string of at most {MAX_CONTENT_CHARS} characters")

        def apply() -> dict[str, Any]:
            run, skipped = (run_id, []) if run_id else _feedback_run(memory, ids)
            if run is None:
                return {"updated": [], "skipped": skipped, "correction": None, "run_id": None}
            record = memory.journal.get(run, namespace=own)
            stored = {u.memory_id for u in memory.store.get_many(record.served_ids, namespace=own)}
            skipped += [i for i in record.served_ids if i not in stored and i not in skipped]
            trusted = memory.principal.trust == "user_feedback"  # only then is a comment a user's correction
            result = session.feedback(run, success=success, comment=comment if trusted else None, namespace=own)
            corrections = list(result.created)
            if comment and comment.strip() and not trusted:
                corrections.append(memory.remember(comment, correction=True))
                memory.journal.add_produced(run, [corrections[-1].memory_id], namespace=own)
            return {
                "run_id": run,
                "updated": [_unit(u) for u in result.updated],
                "skipped": skipped,
                "credited": bool(result.run.credit),
                "correction": _unit(corrections[0]) if corrections else None,
            }

        return await _call(apply)

    @server.tool()
    async def forget(memory_id: str) -> dict[str, Any]:
        """Hard-delete one of this agent's memories and every copy of it it published."""
        return {"deleted": await _call(lambda: memory.forget(memory_id))}

    @server.tool()
    async def explain(run_id: str) -> dict[str, Any]:
        """Which memories a recall run was shown, and the factor that ranked each."""
        explanation = await _call(lambda: memory.explain(run_id))
        return {
            "run_id": run_id,
            "task": explanation.record.task,
            "memories": [
                {
                    "memory_id": m.served.memory_id,
                    "rank": m.served.rank,
                    "score": round(m.served.score, 4),
                    "status": m.status,
                    "main_factor": m.main_factor,
                    "content": m.unit.content if m.unit is not None else None,
                }
                for m in explanation.memories
            ],
        }

    def listing(namespace: str | None) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        async def read() -> list[dict[str, Any]]:
            return [_unit(u) for u in await _call(lambda: memory.list_units(namespace=namespace))]

        return read

    @server.resource("hindsight://memories", mime_type="application/json")
    async def own_memories() -> list[dict[str, Any]]:
        """The active memories of this agent's own namespace (newest first, at most 100)."""
        return await listing(None)()

    @server.resource("hindsight://memories/{namespace}", mime_type="application/json")
    async def namespace_memories(namespace: str) -> list[dict[str, Any]]:
        """The active memories of a namespace this agent may read (newest first, at most 100)."""
        return await listing(namespace)()

    return server


_DISCONNECTS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
"""What the MCP SDK's HTTP transport raises in its writers when a client goes away mid-stream."""
_TRANSPORT_LOGGER = "mcp.server.streamable_http"


class _Disconnects(logging.Filter):
    """Demotes the transport's "Error in … writer" records caused by a client disconnect to DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if record.levelno >= logging.ERROR and isinstance(error, _DISCONNECTS):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            record.msg = f"{record.msg} (the client disconnected)"
            record.exc_info = record.exc_text = None
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)  # the level was checked as ERROR
        return True


class _Stopped(Exception):  # noqa: N818 - an internal control-flow signal, never raised to a caller
    """SIGTERM arrived: leave the server's event loop like Ctrl-C does."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signal.Signals(signum).name)


def _only_stops(error: BaseException) -> bool:
    if isinstance(error, BaseExceptionGroup):
        return all(_only_stops(e) for e in error.exceptions)
    return isinstance(error, KeyboardInterrupt | _Stopped)


@contextmanager
def _quiet_disconnects() -> Iterator[None]:
    quiet = _Disconnects()
    transport = logging.getLogger(_TRANSPORT_LOGGER)
    transport.addFilter(quiet)
    try:
        yield
    finally:
        transport.removeFilter(quiet)


def run_server(server: FastMCP, transport: Transport = "stdio") -> str | None:
    """Run ``server`` until its client closes it or the process is told to stop.

    SIGINT (Ctrl-C) and SIGTERM (what systemd, docker and ``kill`` send) end it like a
    closed client does: the call returns the signal's name instead of raising, so the
    caller's ``with`` blocks close the store (and write its clean-close stamp). A client
    that disconnects in the middle of a stream is logged at DEBUG, not as an error with a
    traceback. Both changes last only while the server runs: the previous SIGTERM handler
    and the transport logger's filters are restored afterwards.

    Args:
        server: A server from :func:`create_server`.
        transport: ``"stdio"`` or ``"http"`` (streamable HTTP on the server's host and port).

    Returns:
        ``"SIGINT"`` or ``"SIGTERM"`` when a signal stopped it, else ``None``.
    """
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop) if main_thread else None
    try:
        with _quiet_disconnects():
            server.run("streamable-http" if transport == "http" else "stdio")
    except BaseException as e:
        if not _only_stops(e):
            raise
        stopped = e if not isinstance(e, BaseExceptionGroup) else e.exceptions[0]
        name = "SIGINT" if isinstance(stopped, KeyboardInterrupt) else str(stopped) or "SIGTERM"
        logger.info("MCP server stopped by %s", name)
        return name
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
    return None
