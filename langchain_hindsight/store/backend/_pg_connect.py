"""The Postgres backend's first connection: fail fast, in one line naming the server, and say what to check.

A pool opened on a wrong URL retries in the background and logs a warning per attempt, so the backend first makes
one plain connection (:func:`probe`) and opens the pool only once that worked. A failure names the host, port,
database and user (never the password) and what to check for that kind of failure (:data:`_HINTS`).
"""

from __future__ import annotations

import re
from typing import Any

from langchain_hindsight.errors import ConfigurationError, DatabaseConnectionError

__all__ = ["CONNECT_TIMEOUT", "POOL_WAIT", "connect_kwargs", "describe", "probe", "redact"]

CONNECT_TIMEOUT = 5.0
"""Seconds a new connection waits for the server (libpq's ``connect_timeout``; a URL may set its own)."""

POOL_WAIT = 10.0
"""Seconds a call waits at least for a free pooled connection (all of them busy with other calls), and for the
pool's first connections once the first plain connection succeeded."""

_HINTS = {  # a pattern of the driver's message (case-insensitive): what to check
    r"connection refused": "nothing accepts connections there: is the server running, and is the port right?",
    r"timeout expired|timed out": (
        "no answer within {timeout:g} s: check the host and port, a firewall or VPN in between "
        "(or raise connect_timeout in the URL)"
    ),
    r"could not translate host name|failed to resolve host|name or service not known|nodename nor servname": (
        "the host name does not resolve: check its spelling"
    ),
    r"password authentication failed|no password supplied|authentication failed": (
        "the server refused the credentials: check the user name and the password"
    ),
    r'role ".*" does not exist': "the server has no such user: check the user name in the URL",
    r'database ".*" does not exist': "the server has no such database: check its name, or create it (createdb)",
    r"no such file or directory": "no server listens on that Unix socket: is the server running, the path right?",
    r"pg_hba\.conf": "the server's pg_hba.conf does not admit this host, user or database",
}

_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:)(?P<secret>[^@\s]*)@")
_KEY_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|[^\s&'\"]+)", re.I)


def redact(text: str, url: str | None = None) -> str:
    """``text`` with every password it may quote replaced by ``***`` (``user:PASSWORD@`` and ``password=...``).

    The password of ``url`` (the URL the text is about) goes wherever it appears: a driver may quote it out of context.
    """
    secrets = [m.group("secret") for pattern in (_URL_PASSWORD, _KEY_PASSWORD) for m in pattern.finditer(url or "")]
    text = _KEY_PASSWORD.sub(lambda m: m.group("head") + "***", _URL_PASSWORD.sub(r"\g<head>***@", text))
    for secret in sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def _params(url: str) -> dict[str, Any]:
    """``url``'s connection parameters as libpq reads them (:class:`ConfigurationError` if malformed).

    The error never quotes the password; psycopg's own does.
    """
    from psycopg.conninfo import conninfo_to_dict

    try:
        return dict(conninfo_to_dict(url))
    except Exception as e:  # noqa: BLE001 - psycopg.ProgrammingError and whatever libpq reports: one typed error
        why = redact(str(e).splitlines()[0] if str(e) else type(e).__name__, url)
        raise ConfigurationError(
            f"database_url could not be parsed ({why}): expected postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
        ) from None


def describe(url: str) -> str:
    """``database "DB" at HOST:PORT as USER``, from a parsable URL or ``key=value`` string (never the password)."""
    params = _params(url)
    host = str(params.get("host") or params.get("hostaddr") or "localhost")
    port = str(params.get("port") or 5432)
    user = params.get("user")
    dbname = params.get("dbname") or user or "(the user's name)"
    where = f"{host} (Unix socket, port {port})" if host.startswith("/") else f"{host}:{port}"
    return f'database "{dbname}" at {where}' + (f" as {user}" if user else "")


def connect_kwargs(url: str, timeout: float) -> dict[str, Any]:
    """The keywords every connection takes: autocommit, and ``connect_timeout`` unless the URL sets its own."""
    kwargs: dict[str, Any] = {"autocommit": True}
    if "connect_timeout" not in _params(url):
        kwargs["connect_timeout"] = max(2, round(timeout))  # libpq's minimum: a 1 is treated as 2
    return kwargs


def _hint(message: str, timeout: float) -> str:
    for pattern, hint in _HINTS.items():
        if re.search(pattern, message, re.I):
            return hint.format(timeout=timeout)
    first = next((line.strip() for line in message.splitlines() if line.strip()), "")
    return first or "the server refused the connection"


def probe(psycopg: Any, url: str, timeout: float) -> None:
    """One plain connection to ``url`` (closed at once), waiting ``timeout`` s unless the URL sets its own.

    Raises:
        DatabaseConnectionError: the connection failed.
        ConfigurationError: ``url`` is malformed or names an option libpq does not know.
    """
    params = _params(url)
    try:
        psycopg.connect(url, **connect_kwargs(url, timeout)).close()
    except psycopg.OperationalError as e:
        password = params.get("password")
        hint = _hint(str(e), timeout)
        if password:
            hint = hint.replace(str(password), "***")
        raise DatabaseConnectionError(f"cannot connect to the Postgres {describe(url)}: {redact(hint, url)}") from e
    except psycopg.Error as e:  # a bad option in the URL (ProgrammingError): the driver's text quotes the URL
        raise ConfigurationError(
            f"database_url is not usable for the Postgres {describe(url)}: {redact(str(e).splitlines()[0], url)}"
        ) from None
