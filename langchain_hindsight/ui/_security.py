"""The console's access control: a one-time access token, HttpOnly session cookies, and CSRF tokens.

The server prints one URL carrying an access token (like Jupyter). Opening it
exchanges the token for a session: a random id in an ``HttpOnly``,
``SameSite=Strict`` cookie, and a per-session CSRF token that every form posts
back. A generated token works once (a URL left in the browser history or a
terminal log opens nothing later); a *configured* token (``--token-file``, needed
to bind a non-loopback address) may be exchanged again. Tokens and CSRF values
are compared in constant time. Sessions live in this process only: a restart
logs everyone out.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field

__all__ = ["COOKIE", "Session", "TokenGate"]

COOKIE = "hindsight_console"
"""Name of the session cookie."""

_SESSION_SECONDS = 12 * 3600
"""A session expires 12 hours after the token was exchanged."""

_MIN_TOKEN_CHARS = 16


@dataclass
class Session:
    """One browser's session: its CSRF token and messages to show on the next page."""

    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))
    created: float = field(default_factory=time.monotonic)
    flash: list[str] = field(default_factory=list)


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
        self._used = False
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def exchange(self, offered: str) -> str | None:
        """A new session id for the right token (``None``: wrong, or a single-use token already exchanged)."""
        with self._lock:
            if (self._used and not self.reusable) or not hmac.compare_digest(offered.encode(), self.token.encode()):
                return None
            self._used = True
            session_id = secrets.token_urlsafe(32)
            self._sessions[session_id] = Session()
            return session_id

    def session(self, session_id: str | None) -> Session | None:
        """The live session of a cookie value, or ``None`` (missing, unknown or expired)."""
        if not session_id:
            return None
        with self._lock:
            found = self._sessions.get(session_id)
            if found is not None and time.monotonic() - found.created > _SESSION_SECONDS:
                del self._sessions[session_id]
                return None
            return found

    @staticmethod
    def csrf_ok(session: Session, offered: str | None) -> bool:
        """Whether a posted CSRF value is the session's (constant-time)."""
        return bool(offered) and hmac.compare_digest(str(offered).encode(), session.csrf.encode())
