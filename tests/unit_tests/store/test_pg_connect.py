"""A wrong Postgres URL fails at once, typed, in one line naming the server (never the password), without pool noise.

No server is needed: nothing listens on port 1 of the loopback address, so the connection is refused at once.
The failures that need a server (a database or user it does not have) are in
``tests/integration_tests/store/test_postgres.py``.
"""

from __future__ import annotations

import logging

import pytest

from langchain_hindsight import MemoryStore
from langchain_hindsight.cli.main import EXIT_ERROR, EXIT_USAGE, main
from langchain_hindsight.errors import BackendError, ConfigurationError, DatabaseConnectionError
from langchain_hindsight.store.backend._pg_connect import _hint, connect_kwargs, describe, redact

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


UNPARSABLE = [
    "postgresql://nobody:s3cret-pw@127.0.0.1:1/db x",  # a space: libpq's parse error quotes the whole string
    "postgresql://nobody:s3cret-pw@127.0.0.1:1/db?bogus_option=1",
    "host=127.0.0.1 password=s3cret-pw port=1 dbname",
    "postgresql://nobody:s3cret-pw@[::1/db",
]


@pytest.mark.parametrize("url", UNPARSABLE)
def test_an_unparsable_url_is_a_configuration_error_that_never_quotes_the_password(url: str) -> None:
    """At c351316 psycopg's own error escaped, quoting the URL with its password."""
    with pytest.raises(ConfigurationError) as caught:
        MemoryStore(database_url=url)
    assert "s3cret-pw" not in str(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


@pytest.mark.parametrize("url", [*UNPARSABLE, "mysql://nobody:s3cret-pw@db/x"])
def test_the_cli_refuses_an_unparsable_url_in_one_line_without_the_password(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["stats", "--database-url", url])
    out, err = capsys.readouterr()
    assert code == EXIT_USAGE, err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert "s3cret-pw" not in out + err


def test_redact_removes_the_password_in_every_spelling() -> None:
    url = "postgresql://u:pa55w0rd@h/db"
    assert redact(f"bad {url} here", url) == "bad postgresql://u:***@h/db here"
    assert redact("host=h password='pa 55' dbname=x") == "host=h password=*** dbname=x"
    assert redact("invalid value pa55w0rd for port", url) == "invalid value *** for port"
