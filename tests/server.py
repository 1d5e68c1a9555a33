"""A throwaway Chroma server for tests: ``chroma run`` on a free loopback port.

Nothing to install or start by hand: the ``chroma`` command ships with the
``chromadb`` package (next to the test interpreter). Use the ``chroma_server``
fixture (tests/conftest.py makes it available to every test module, and marks the tests that use it
``integration``) or the :func:`running_chroma_server` context manager (mark such a test
``@pytest.mark.integration`` yourself)::

    with running_chroma_server(tmp_path / "srv") as server:
        client = server.client()
        store = MemoryStore(client=client, embeddings=...)
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["ChromaServer", "chroma_server", "free_port", "running_chroma_server"]

_HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        return int(sock.getsockname()[1])


def _chroma_executable() -> str:
    beside = Path(sys.executable).parent / "chroma"
    if beside.exists():
        return str(beside)
    found = shutil.which("chroma")
    if found is None:
        pytest.skip("the `chroma` command (from the chromadb package) is not installed")
    return found


@dataclass
class ChromaServer:
    """A running ``chroma run`` process."""

    host: str
    port: int
    path: Path
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:54321``."""
        return f"http://{self.host}:{self.port}"

    def client(self) -> Any:
        """A new ``chromadb.HttpClient`` for this server."""
        import chromadb
        from chromadb.config import Settings

        return chromadb.HttpClient(host=self.host, port=self.port, settings=Settings(anonymized_telemetry=False))

    def heartbeat(self) -> bool:
        """True when the server answers its heartbeat endpoint."""
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/heartbeat", timeout=2) as resp:
                return bool(json.loads(resp.read()))
        except (OSError, urllib.error.URLError, ValueError):
            return False

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 10 s) and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@contextlib.contextmanager
def running_chroma_server(path: Path, *, startup_timeout: float = 60.0) -> Iterator[ChromaServer]:
    """Start ``chroma run --path PATH`` on a free loopback port; stop it on exit."""
    path.mkdir(parents=True, exist_ok=True)
    log = path.parent / f"{path.name}.chroma.log"
    port = free_port()
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "NO_COLOR": "1"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [_chroma_executable(), "run", "--path", str(path), "--host", _HOST, "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    server = ChromaServer(host=_HOST, port=port, path=path, process=process, log=log)
    try:
        deadline = time.monotonic() + startup_timeout
        while not server.heartbeat():
            if process.poll() is not None:
                raise RuntimeError(f"chroma run exited with {process.returncode}:\n{log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"chroma run did not answer within {startup_timeout}s:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield server
    finally:
        server.stop()


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[ChromaServer]:
    """A fresh Chroma server on a free loopback port, stopped after the test."""
    with running_chroma_server(tmp_path / "chroma-server") as server:
        yield server
