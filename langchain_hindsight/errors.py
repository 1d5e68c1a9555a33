"""Exceptions raised by langchain-hindsight.

The tree::

    HindsightError(Exception)
    ├── AccessDeniedError(HindsightError, PermissionError) a principal lacks the grant
    ├── ConfigurationError(HindsightError, ValueError)   bad option or argument
    │   ├── UnknownOptionError(ConfigurationError, TypeError) a keyword no option is called (misspelt)
    │   └── EmbedderMismatchError                         the store was embedded by another model
    ├── InvalidMemoryError(HindsightError, ValueError)   a memory unit failed validation
    │   └── UninformativeMemoryError                      its content carries no information ("ok", "好", "👍")
    ├── MemoryNotFoundError(HindsightError, KeyError)    no such memory id in the namespace
    ├── RunNotFoundError(HindsightError, KeyError)       no such run in the journal
    ├── FeedbackNotFoundError(HindsightError, LookupError) the run has no feedback to undo
    │   └── FeedbackAlreadyUndoneError                    every feedback of the run is already undone
    ├── StoreLockedError(HindsightError, RuntimeError)   another process holds the directory
    ├── StoreClosedError(HindsightError, RuntimeError)   the store was closed
    ├── StoreError(HindsightError, RuntimeError)         the backend failed (chained cause)
    │   ├── BackendError                                  the database itself failed (I/O, server, SQLite)
    │   │   └── DatabaseConnectionError(…, ConnectionError) the Postgres server could not be reached or refused us
    │   └── WriteConflictError                            other writers kept changing what a write read
    ├── ReflectionError(HindsightError, RuntimeError)    the reflection model call failed
    └── EmbeddingError(HindsightError, RuntimeError)     the embedder failed or returned unusable vectors

Every leaf also subclasses the builtin it refines, so ``except ValueError`` keeps
working for callers that do not know this package.
"""

from __future__ import annotations

__all__ = [
    "AccessDeniedError",
    "BackendError",
    "ConfigurationError",
    "DatabaseConnectionError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "FeedbackAlreadyUndoneError",
    "FeedbackNotFoundError",
    "HindsightError",
    "InvalidMemoryError",
    "MemoryNotFoundError",
    "ReflectionError",
    "RunNotFoundError",
    "StoreClosedError",
    "StoreError",
    "StoreLockedError",
    "UninformativeMemoryError",
    "UnknownOptionError",
    "WriteConflictError",
]


class HindsightError(Exception):
    """Root of every error this package raises on purpose."""


class ConfigurationError(HindsightError, ValueError):
    """An option or argument has a wrong type or value; the message names it."""


class UnknownOptionError(ConfigurationError, TypeError):
    """A keyword argument that no option of the constructor or function is called; the message names the closest one.

    ``Hindsight(min_relevence=0.3)`` raises it as ``unknown Hindsight option 'min_relevence' (did you mean
    'min_relevance'?)``. It is also a :class:`TypeError`, the builtin Python raises for an unexpected keyword
    argument, so code written against a plain signature (``except TypeError``) keeps catching it, and a
    :class:`ConfigurationError` (a :class:`ValueError`) for code catching this package's option errors.
    """


class InvalidMemoryError(HindsightError, ValueError):
    """A memory unit failed validation; the message names the field."""


class UninformativeMemoryError(InvalidMemoryError):
    """A unit's content carries no information (``"x"``, ``"ok"``, ``"好的"``, ``"thanks"``, emoji only).

    The store refuses to add it: such a "memory" would be recalled for
    unrelated tasks and teach nothing (see :func:`langchain_hindsight.writes.check_informative`).
    """


class MemoryNotFoundError(HindsightError, KeyError):
    """No memory with that id exists in the namespace that was searched."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable.
        return str(self.args[0]) if self.args else ""


class RunNotFoundError(HindsightError, KeyError):
    """No run with that id is recorded in the journal of the namespace that was searched."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class FeedbackNotFoundError(HindsightError, LookupError):
    """The run has no feedback ``undo_feedback`` could revert (none given, or journaled before its effects were)."""


class FeedbackAlreadyUndoneError(FeedbackNotFoundError):
    """Every feedback entry of the run was already undone: undoing twice changes nothing."""


class StoreLockedError(HindsightError, RuntimeError):
    """Another process (or store object) already holds the embedded store directory."""


class StoreClosedError(HindsightError, RuntimeError):
    """The store was used after :meth:`MemoryStore.close`."""


class StoreError(HindsightError, RuntimeError):
    """The storage backend failed; the original exception is chained as ``__cause__``."""


class BackendError(StoreError):
    """The database under the store failed (Chroma, SQLite, the file system, the server's HTTP connection).

    Raised by the storage backend layer for its own failures, with the backend's
    exception chained; a programming error (a bad argument) is not one.
    """


class WriteConflictError(StoreError):
    """Another process changed what a write was planned on, and kept doing so through every re-plan.

    A write that supersedes or replaces what it read re-reads and re-plans when another
    process changed that memory first (see ``writes.py``, ``plan_supersede``); after a bounded number of
    attempts it gives up with this error, having written nothing of the last attempt. Also
    raised by ``MemoryStore.add(unit, if_absent=True)`` when ``unit``'s id is already
    stored (another writer created it first); nothing is written then.
    """


class DatabaseConnectionError(BackendError, ConnectionError):
    """The first connection to the Postgres database failed; the store was not opened.

    The message names the host, port, database and user (never the password) and what to check for that
    kind of failure (nothing listening, no answer, an unknown host, refused credentials, a missing database).
    It is also a :class:`ConnectionError` (an ``OSError``) for code that catches the builtin.
    """


class ReflectionError(HindsightError, RuntimeError):
    """Reflection failed as a whole (e.g. the extraction model call raised) and the policy is to raise."""


class EmbedderMismatchError(ConfigurationError):
    """The store's vectors come from another embedder (name or dimension) than the one configured.

    Similarities between vectors of two models mean nothing, so the store refuses
    to mix them; the message names both embedders and the ``hindsight reembed``
    command that migrates the store.
    """


class EmbeddingError(HindsightError, RuntimeError):
    """The embedder failed to load or returned unusable vectors (all-zero, NaN, wrong count or length).

    Raised instead of storing such vectors: a unit stored with a zero vector can
    never be recalled, and a corrupt model would silently spoil the whole store.
    """


class AccessDeniedError(HindsightError, PermissionError):
    """A principal tried an operation its grants do not allow; nothing was changed."""
