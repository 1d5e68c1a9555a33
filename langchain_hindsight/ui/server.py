"""Running the console: bind, print the URL with the access token first, serve until a signal, stop cleanly.

SIGTERM and SIGINT end :func:`serve` like a finished server: uvicorn shuts down
gracefully and the call returns the signal's name, so the caller's ``with`` block
closes the store and writes its clean-close stamp (the idea of
``sharing.mcp_server.run_server``). uvicorn re-raises a captured signal once it has
stopped; the handlers installed here receive it instead of the default one (which
would kill the process before the store is closed), and the previous handlers are
restored afterwards.
"""

from __future__ import annotations

import ipaddress
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import IO, Any

import uvicorn

from langchain_hindsight.errors import ConfigurationError

__all__ = ["is_loopback", "serve"]

logger = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``.

    Example:
        >>> is_loopback("127.0.0.1"), is_loopback("localhost"), is_loopback("0.0.0.0")
        (True, True, False)
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as e:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(app: Any, *, host: str, port: int, token: str, out: IO[str] | None = None) -> str | None:
    """Serve ``app`` on ``host:port`` (0: a free port) until a signal; returns its name (``None``: stopped otherwise).

    The first line written to ``out`` (stdout) is the URL with the access token.
    """
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    stream = out or sys.stdout
    stream.write(f"http://{shown}:{bound}/?token={token}\n")
    stream.flush()
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    stopped: list[str] = []

    def note(signum: int, frame: FrameType | None) -> None:
        stopped.append(signal.Signals(signum).name)

    main_thread = threading.current_thread() is threading.main_thread()
    previous: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {}
    if main_thread:
        previous = {s: signal.signal(s, note) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run(sockets=[sock])
    finally:
        if main_thread:
            for s, handler in previous.items():
                signal.signal(s, handler)
        sock.close()
    name = stopped[0] if stopped else None
    logger.info("console stopped%s", f" by {name}" if name else "")
    return name
