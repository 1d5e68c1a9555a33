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

Requires the ``mcp`` extra: ``pip install "langchain-hindsight[mcp]"``.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, Literal, TypeVar

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from langchain_hindsight.errors import HindsightError
from langchain_hindsight.prompts import Locale
from langchain_hindsight.recall.injection import format_experiences
from langchain_hindsight.sharing.access import ScopedMemory, ScopedResult
from langchain_hindsight.types import MemoryUnit

__all__ = ["SERVER_NAME", "TOOL_NAMES", "create_server", "run_server"]

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


def create_server(
    memory: ScopedMemory,
    *,
    locale: Locale = "zh",
    host: str = "127.0.0.1",
    port: int = 8000,
) -> FastMCP:
    """The MCP server for one principal's view of a store.

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
    """
    server = FastMCP(SERVER_NAME, instructions=_INSTRUCTIONS, host=host, port=port, log_level="WARNING")

    @server.tool()
    async def recall(task: str, k: int = 5, task_type: str | None = None) -> dict[str, Any]:
        """Recall the experiences relevant to a task, best first, as a [相关经验] block and as data."""
        run_id, results = await _call(lambda: memory.recall(task, k=k, task_type=task_type))
        block = format_experiences([r.scored for r in results], locale=locale, own_namespace=memory.principal.namespace)
        return {"run_id": run_id, "block": block, "results": [_result(r) for r in results]}

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
        """Report how a task went: on the memories a recall run served (run_id) or on memory ids."""

        def apply() -> dict[str, Any]:
            if not run_id and not memory_ids:
                raise ToolError("feedback needs run_id or memory_ids")
            ids = list(memory_ids or [])
            if run_id:
                ids += memory.journal.get(run_id, namespace=memory.principal.namespace).served_ids
            rejected = bool(comment) and not success
            outcome = memory.feedback(ids, success=success, rejected=rejected)
            correction = memory.remember(comment, correction=True) if comment else None
            if run_id:
                memory.journal.add_feedback(
                    run_id, text=comment or "", success=success, rejected=rejected, namespace=memory.principal.namespace
                )
            return {
                "updated": [_unit(u) for u in outcome.updated],
                "skipped": outcome.skipped,
                "correction": _unit(correction) if correction is not None else None,
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
