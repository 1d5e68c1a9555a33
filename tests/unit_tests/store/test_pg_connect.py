"""A wrong Postgres URL fails at once, typed, in one line naming the server (never the password), without pool noise.

No server is needed: nothing listens on port 1 of the loopback address, so the connection is refused at once.
The failures that need a server (a database or user it does not have) are in
``tests/integration_tests/store/test_postgres.py``.
"""

from __future__ import annotations

import logging

import pytest

from langchain_hindsight import MemoryStore
from langchain_hindsight.cli.main import EXIT_ERROR, main
from langchain_hindsight.errors import BackendError, DatabaseConnectionError
from langchain_hindsight.store.backend._pg_connect import _hint, connect_kwargs, describe

pytest.importorskip("psycopg", reason="psycopg 3 (postgres extra)")

WRONG_PORT = "postgresql://nobody:s3cret-pw@127.0.0.1:1/hindsight_db"


def test_a_refused_connection_raises_at_once_naming_host_port_database_user(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG), pytest.raises(DatabaseConnectionError) as caught:
        MemoryStore(database_url=WRONG_PORT)
    message = str(caught.value)
    assert message == (
        'cannot connect to the Postgres database "hindsight_db" at 127.0.0.1:1 as nobody: '
        "nothing accepts connections there: is the server running, and is the port right?"
    )
    assert "s3cret-pw" not in message
    assert isinstance(caught.value, BackendError)
    assert isinstance(caught.value, ConnectionError)  # the builtin, for callers that do not know this package
    # the pool was never opened: none of its retry warnings
    assert not [r for r in caplog.records if r.name.startswith("psycopg") and r.levelno >= logging.WARNING]


def test_the_cli_prints_one_line_and_exits_1_without_a_traceback(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        code = main(["stats", "--database-url", WRONG_PORT])
    out, err = capsys.readouterr()
    assert code == EXIT_ERROR
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith('hindsight: error: cannot connect to the Postgres database "hindsight_db" at 127.0.0.1:1')
    assert "Traceback" not in err
    assert "s3cret-pw" not in err
    assert not caplog.records  # no pool warnings either


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://alice:pw@db.example.com:6543/mem", 'database "mem" at db.example.com:6543 as alice'),
        ("postgresql://alice@db.example.com/", 'database "alice" at db.example.com:5432 as alice'),
        ("host=/run/pg dbname=mem user=bob password=pw", 'database "mem" at /run/pg (Unix socket, port 5432) as bob'),
        ("postgresql:///mem", 'database "mem" at localhost:5432'),
    ],
)
def test_the_server_is_described_without_the_password(url: str, expected: str) -> None:
    assert describe(url) == expected


@pytest.mark.parametrize(
    ("libpq", "hint"),
    [
        ('FATAL:  password authentication failed for user "alice"', "check the user name and the password"),
        ('FATAL:  database "memz" does not exist', "no such database: check its name, or create it"),
        ('FATAL:  role "alicee" does not exist', "no such user: check the user name in the URL"),
        ("connection timeout expired", "no answer within 5 s: check the host and port"),
        ("failed to resolve host 'db.exmaple.com': [Errno -2] Name or service not known", "does not resolve"),
        ('connection to server on socket "/run/pg/.s.PGSQL.5432" failed: No such file or directory', "Unix socket"),
        ("something new\nDETAIL: more", "something new"),
    ],
)
def test_each_kind_of_failure_says_what_to_check(libpq: str, hint: str) -> None:
    assert hint in _hint(libpq, 5.0)


def test_the_connect_timeout_is_short_and_a_url_may_set_its_own() -> None:
    assert connect_kwargs("postgresql://a@h/db", 5.0) == {"autocommit": True, "connect_timeout": 5}
    assert connect_kwargs("postgresql://a@h/db", 0.5)["connect_timeout"] == 2  # libpq's minimum
    assert connect_kwargs("postgresql://a@h/db?connect_timeout=30", 5.0) == {"autocommit": True}
