"""How an adapter gets its session: from a ``Hindsight``, a session, a :class:`SessionConfig` or a bare store.

Adapters depend on the session, never on the facade that builds them: they take
a :data:`SessionSource` and call :func:`session_for`.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeAlias

from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.session.build import build_config
from langchain_hindsight.session.config import SessionConfig
from langchain_hindsight.session.loop import HindsightSession
from langchain_hindsight.store.memory_store import MemoryStore

__all__ = ["SessionOwner", "SessionSource", "session_for"]


class SessionOwner(Protocol):
    """Anything that owns a hindsight session, such as :class:`~langchain_hindsight.Hindsight`.

    Adapters take one through :func:`session_for` and only ever use its ``session``,
    so they depend on the session, not on the facade that builds them.
    """

    @property
    def session(self) -> HindsightSession:
        """The session the owner's adapters run on."""
        ...


SessionSource: TypeAlias = SessionOwner | HindsightSession | SessionConfig | MemoryStore
"""What an adapter accepts: a ``Hindsight`` (its session), a session, a :class:`SessionConfig` or a bare store."""


def session_for(target: SessionSource | object, /, **options: Any) -> HindsightSession:
    """The session an adapter runs on.

    Args:
        target: A :class:`~langchain_hindsight.Hindsight` (its session), a
            :class:`HindsightSession`, a :class:`SessionConfig` or a :class:`MemoryStore`.
        **options: :class:`SessionConfig` options to change for this adapter only; every part and
            option not given is filled by :func:`~langchain_hindsight.session.build.build_config`.

    Raises:
        ConfigurationError: ``target`` is none of these, or an option is unknown.
    """
    session = getattr(target, "session", target)
    if isinstance(session, HindsightSession):
        return session.derive(**options)
    if isinstance(target, SessionConfig | MemoryStore):
        return HindsightSession(build_config(target, **options))
    raise ConfigurationError(f"expected a Hindsight, a HindsightSession or a MemoryStore, got {type(target).__name__}")
