"""The console's access control: a one-time access token, sessions bound to a secret path, and CSRF tokens.

The server prints one URL carrying an access token (like Jupyter). Opening it
exchanges the token for a session made of two secrets:

* a random **path key**: every page of the session lives under ``/s/<key>/``;
* a random **cookie value**, in an ``HttpOnly``, ``SameSite=Strict`` cookie whose
  name is this console's own (``hindsight_console_<id>``) and whose ``Path`` is the
  session's prefix.

Browsers do not scope cookies by port: a cookie with ``Path=/`` set by the console
on ``127.0.0.1:8766`` is sent to *any* other listener on ``127.0.0.1`` the browser
visits, which could replay it. Bound to ``/s/<key>/``, the cookie is sent only to
requests for that secret path, which no other listener can make the browser ask
for without knowing the key (``Referrer-Policy: same-origin`` keeps the key out of
the ``Referer`` sent to another port, which is another origin). A request needs
both: the key alone (in the browser history) opens nothing without the cookie, the
cookie alone (without its path) nothing either. A per-console cookie name and path
keep two consoles opened side by side from logging each other out.

Each session has a CSRF token that every form posts back. A generated token works
once (a URL left in the browser history or a terminal log opens nothing later); a
*configured* token (``--token-file``, needed to bind a non-loopback address) may be
exchanged again. Secrets are compared in constant time. Sessions live in this
process only: a restart logs everyone out.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

__all__ = ["COOKIE_PREFIX", "PATH_PREFIX", "Session", "TokenGate"]

COOKIE_PREFIX = "hindsight_console_"
"""Session cookies are named this plus the console's random id (one name per console)."""

PATH_PREFIX = "/s/"
"""Every page of a session lives under ``/s/<path key>/``."""

_SESSION_SECONDS = 12 * 3600
"""A session expires 12 hours after the token was exchanged."""

_MIN_TOKEN_CHARS = 16


@dataclass
class Session:
    """One browser's session: its secrets, its CSRF token and messages to show on the next page."""

    key: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    """The secret path segment: the session's pages are under ``/s/<key>/``."""
    secret: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    """The cookie value."""
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    created: float = field(default_factory=time.monotonic)
    flash: list[str] = field(default_factory=list)
    undo: list[dict[str, str]] = field(default_factory=list)
    """The last action's undo (at most one form: action name and its fields), shown with its message."""

    @property
    def prefix(self) -> str:
        """The URL prefix of the session's pages (no trailing slash)."""
        return f"{PATH_PREFIX}{self.key}"


class TokenGate:
    """Checks the access token and keeps the sessions it opened.

    Args:
        token: The access token; ``None`` generates one (single use).
        reusable: The token may be exchanged more than once (a configured token).

    Raises:
        ValueError: a configured token shorter than 16 characters.
    """

    def __init__(self, token: str | None = None, *, reusable: bool = False) -> None:
        if token is not None and len(token) < _MIN_TOKEN_CHARS:
            raise ValueError(f"the access token must be at least {_MIN_TOKEN_CHARS} characters")
        self.token = token or secrets.token_urlsafe(32)
        self.reusable = reusable or token is not None
        self.cookie = COOKIE_PREFIX + secrets.token_hex(6)
        """This console's session cookie name (another console on the same host has another)."""
        self._used = False
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def exchange(self, offered: str) -> Session | None:
        """A new session for the right token (``None``: wrong, or a single-use token already exchanged)."""
        with self._lock:
            if (self._used and not self.reusable) or not hmac.compare_digest(offered.encode(), self.token.encode()):
                return None
            self._used = True
            session = Session()
            self._sessions[session.key] = session
            return session

    def session(self, key: str | None, secret: str | None) -> Session | None:
        """The live session of a path key and its cookie value, or ``None`` (missing, wrong or expired)."""
        if not key or not secret:
            return None
        with self._lock:
            found = self._sessions.get(key)
            if found is None or not hmac.compare_digest(secret.encode(), found.secret.encode()):
                return None
            if time.monotonic() - found.created > _SESSION_SECONDS:
                del self._sessions[key]
                return None
            return found

    @staticmethod
    def csrf_ok(session: Session, offered: str | None) -> bool:
        """Whether a posted CSRF value is the session's (constant-time)."""
        return bool(offered) and hmac.compare_digest(str(offered).encode(), session.csrf.encode())
