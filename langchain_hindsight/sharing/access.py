"""Principals and grants: which agent may read and write which namespaces.

A *principal* is an agent identity. It owns one namespace (read and write) and may
hold grants on others: ``read`` (recall from it) and ``write`` (publish into it;
write implies read). A :class:`ScopedMemory` is the store as one principal sees it:
every operation checks the grants first and raises :class:`AccessDeniedError`
(changing nothing) when they do not allow it. Adapters, the MCP server and the CLI
hand agents a :class:`ScopedMemory`, never the raw :class:`MemoryStore`, which stays
the operator's (trusted, unscoped) interface.

Sharing protocol:

* **publish** copies a unit from the principal's own namespace into a namespace it
  may write, keeping its id, and tags the copy ``from:<source namespace>`` so every
  reader can see where it came from. The copy goes through the target's
  duplicate handling like any write.
* **unpublish** removes the copy (only the publisher's own copies: the tag says whose).
* **forget** of the source also forgets every published copy, in every namespace:
  forgetting is the owner's right over its data, grants or not.
* **feedback** and **supersede** act on the copy a reader was served: the shared
  pool learns from its readers without rewriting the owner's original.

Grants come from code or a small TOML file::

    [principals.cleaner]
    namespace = "cleaner"
    write = ["shared"]

    [principals.analyst]
    namespace = "analyst"
    read = ["shared"]

Example:
    >>> policy = AccessPolicy.from_mapping({"analyst": {"namespace": "analyst", "read": ["shared"]}})
    >>> p = policy.principal("analyst")
    >>> p.readable, p.can_write("shared")
    (('analyst', 'shared'), False)
"""

from __future__ import annotations

import hashlib
import logging
import tomllib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from langchain_hindsight.errors import AccessDeniedError, ConfigurationError, MemoryNotFoundError
from langchain_hindsight.recall.retriever import HindsightRetriever
from langchain_hindsight.store.journal import RunExplanation, RunJournal
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryKind, MemorySource, MemoryUnit, ScoredMemory

__all__ = [
    "AccessPolicy",
    "FeedbackOutcome",
    "Principal",
    "ScopedMemory",
    "ScopedResult",
    "origin_tag",
    "published_from",
]

logger = logging.getLogger(__name__)

PUBLISHED_TAG = "from:"
"""Tag prefix a published copy carries: ``from:<source namespace>``."""

_TAG_MAX = 64
Operation = Literal["read", "write"]
_REMEMBER_SOURCES: frozenset[str] = frozenset({"agent_inference", "user_feedback", "manual", "tool_output"})


def origin_tag(namespace: str) -> str:
    """The tag a copy published from ``namespace`` carries.

    Tags are lower-case and at most 64 characters, so a namespace that does not
    fit as it is is named by a digest instead.

    Example:
        >>> origin_tag("cleaner")
        'from:cleaner'
    """
    tag = PUBLISHED_TAG + namespace
    if tag == tag.lower() and len(tag) <= _TAG_MAX and tag.strip() == tag:
        return tag
    return PUBLISHED_TAG + "#" + hashlib.sha256(namespace.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def published_from(unit: MemoryUnit, namespace: str) -> bool:
    """Whether ``unit`` is a copy published from ``namespace``."""
    return origin_tag(namespace) in unit.tags


def _names(value: object, what: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigurationError(f"{what} must be a list of namespace names, got {value!r}")
    names = list(value)
    if not all(isinstance(n, str) and n.strip() == n and n for n in names):
        raise ConfigurationError(f"{what} must hold non-empty namespace names, got {names!r}")
    return frozenset(names)


@dataclass(frozen=True, slots=True)
class Principal:
    """An agent identity: its own namespace plus read/write grants on others.

    Attributes:
        name: The identity (e.g. ``"analyst"``), recorded in the journal.
        namespace: Its own namespace (always readable and writable).
        read: Namespaces it may recall from.
        write: Namespaces it may publish into (write implies read).
        trust: The source its lessons are stored with. ``"user_feedback"`` lets it
            relay a human's corrections at full trust; the default,
            ``"agent_inference"``, stores everything it says as an agent's inference.
    """

    name: str
    namespace: str
    read: frozenset[str] = field(default_factory=frozenset)
    write: frozenset[str] = field(default_factory=frozenset)
    trust: MemorySource = "agent_inference"

    def __post_init__(self) -> None:
        for what, value in (("name", self.name), ("namespace", self.namespace)):
            if not isinstance(value, str) or not value or value.strip() != value:
                raise ConfigurationError(f"principal {what} must be a non-empty string, got {value!r}")
        if self.trust not in _REMEMBER_SOURCES:
            raise ConfigurationError(f"trust must be one of {sorted(_REMEMBER_SOURCES)}, got {self.trust!r}")
        object.__setattr__(self, "read", _names(self.read, "read"))
        object.__setattr__(self, "write", _names(self.write, "write"))

    def can_read(self, namespace: str) -> bool:
        """Whether this principal may read ``namespace``."""
        return namespace == self.namespace or namespace in self.read or namespace in self.write

    def can_write(self, namespace: str) -> bool:
        """Whether this principal may write ``namespace``."""
        return namespace == self.namespace or namespace in self.write

    @property
    def readable(self) -> tuple[str, ...]:
        """Every namespace it may read: its own first, then the others sorted."""
        return (self.namespace, *sorted((self.read | self.write) - {self.namespace}))

    def check(self, operation: Operation, namespace: str) -> None:
        """Raise :class:`AccessDeniedError` unless ``operation`` on ``namespace`` is granted."""
        allowed = self.can_read(namespace) if operation == "read" else self.can_write(namespace)
        if not allowed:
            raise AccessDeniedError(f"principal {self.name!r} has no {operation} grant on namespace {namespace!r}")


class AccessPolicy:
    """The principals of a deployment, by name (from code or a TOML file)."""

    def __init__(self, principals: Iterable[Principal]) -> None:
        self._principals: dict[str, Principal] = {}
        for p in principals:
            if not isinstance(p, Principal):
                raise ConfigurationError(f"principals must be Principal objects, got {type(p).__name__}")
            if p.name in self._principals:
                raise ConfigurationError(f"principal {p.name!r} is defined twice")
            self._principals[p.name] = p

    @classmethod
    def from_mapping(cls, data: Mapping[str, Mapping[str, Any]]) -> AccessPolicy:
        """Build from ``{name: {"namespace": ..., "read": [...], "write": [...]}}``."""
        if not isinstance(data, Mapping):
            raise ConfigurationError("the principals table must be a mapping of names to tables")
        principals = []
        for name, spec in data.items():
            if not isinstance(spec, Mapping):
                raise ConfigurationError(f"principal {name!r} must be a table")
            unknown = set(spec) - {"namespace", "read", "write", "trust"}
            if unknown:
                raise ConfigurationError(f"principal {name!r} has unknown keys {sorted(unknown)}")
            principals.append(
                Principal(
                    name=name,
                    namespace=spec.get("namespace", name),
                    read=_names(spec.get("read"), f"{name}.read"),
                    write=_names(spec.get("write"), f"{name}.write"),
                    trust=spec.get("trust", "agent_inference"),
                )
            )
        return cls(principals)

    @classmethod
    def from_file(cls, path: str | Path) -> AccessPolicy:
        """Load a TOML file with a ``[principals.NAME]`` table per principal.

        Raises:
            ConfigurationError: the file is missing, not TOML, or malformed.
        """
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise ConfigurationError(f"cannot read access config {str(path)!r}: {e}") from e
        return cls.from_mapping(data.get("principals", {}))

    def principal(self, name: str) -> Principal:
        """The principal called ``name``.

        Raises:
            ConfigurationError: no such principal.
        """
        try:
            return self._principals[name]
        except KeyError:
            raise ConfigurationError(
                f"unknown principal {name!r}; known: {', '.join(sorted(self._principals)) or 'none'}"
            ) from None

    def __iter__(self) -> Any:
        return iter(self._principals.values())


@dataclass(frozen=True, slots=True)
class FeedbackOutcome:
    """What a feedback call changed: the updated units, and the ids it left alone."""

    updated: list[MemoryUnit]
    skipped: list[str]


@dataclass(frozen=True, slots=True)
class ScopedResult:
    """One recalled memory and where it came from."""

    scored: ScoredMemory
    namespace: str
    own: bool

    @property
    def memory(self) -> MemoryUnit:
        """The recalled unit."""
        return self.scored.memory


class ScopedMemory:
    """The store as one principal sees it; every operation checks the grants first.

    Args:
        store: The shared :class:`MemoryStore` (not closed by this view).
        principal: Whose view this is.
        retriever: Recall settings (default: ``HindsightRetriever(store=store)``).
        journal: Where reads and writes are recorded (default: ``RunJournal(store)``).
    """

    def __init__(
        self,
        store: MemoryStore,
        principal: Principal,
        *,
        retriever: HindsightRetriever | None = None,
        journal: RunJournal | None = None,
    ) -> None:
        if not isinstance(principal, Principal):
            raise ConfigurationError(f"principal must be a Principal, got {type(principal).__name__}")
        self.store = store
        self.principal = principal
        self.retriever = retriever if retriever is not None else HindsightRetriever(store=store)
        self.journal = journal if journal is not None else RunJournal(store)

    def _ns(self, namespace: str | None, operation: Operation) -> str:
        ns = self.principal.namespace if namespace is None else namespace
        self.principal.check(operation, ns)
        return ns

    # ------------------------------------------------------------------ read
    def recall(
        self,
        query: str,
        *,
        k: int = 5,
        task_type: str | None = None,
        run_id: str | None = None,
        now: datetime | None = None,
    ) -> tuple[str, list[ScopedResult]]:
        """Recall from every readable namespace in one call, ranked together.

        The run is journaled in the principal's own namespace with the principal's
        name, so ``explain`` can say who read what.

        Returns:
            The run id and the results, best first.
        """
        results: list[ScopedResult] = []
        for ns in self.principal.readable:
            for scored in self.retriever.recall(query, k=k, task_type=task_type, namespace=ns, now=now):
                results.append(ScopedResult(scored, ns, ns == self.principal.namespace))
        results.sort(key=lambda r: (-r.scored.score, not r.own, r.memory.memory_id))
        results = results[:k]
        run = run_id or f"mcp-{uuid.uuid4().hex}"
        self.journal.start(
            run,
            task=f"[{self.principal.name}] {query}",
            task_type=task_type,
            namespace=self.principal.namespace,
            served=[r.scored for r in results],
        )
        return run, results

    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryUnit:
        """One unit from a readable namespace."""
        return self.store.get(memory_id, namespace=self._ns(namespace, "read"))

    def list_units(self, *, namespace: str | None = None, limit: int = 100) -> list[MemoryUnit]:
        """Active units of a readable namespace (at most ``limit``)."""
        return self.store.list_units(namespace=self._ns(namespace, "read"), status="active", limit=limit)

    def explain(self, run_id: str) -> RunExplanation:
        """Why a run of this principal was shown what it was shown (own journal only)."""
        return self.journal.explain(run_id, namespace=self.principal.namespace)

    # ------------------------------------------------------------------ write
    def remember(
        self,
        content: str,
        *,
        correction: bool = False,
        kind: MemoryKind = "experience",
        task_type: str = "general",
        tags: Sequence[str] = (),
        namespace: str | None = None,
    ) -> MemoryUnit:
        """Store a lesson, or a user's correction, in a namespace this principal may write.

        The unit's source is the principal's ``trust``: a correction is stored as
        ``user_feedback`` only when the principal is trusted to relay a human's words.

        Returns:
            The unit now stored that carries the lesson.
        """
        source: MemorySource = self.principal.trust
        if correction and source != "user_feedback":
            logger.info("principal %s may not write user corrections: stored as %s", self.principal.name, source)
        ns = self._ns(namespace, "write")
        unit = MemoryUnit(
            content=content,
            source=source,
            kind=kind,
            task_type=task_type,
            tags=[t for t in tags if not str(t).startswith(PUBLISHED_TAG)],
            namespace=ns,
        )
        stored = self.store.add(unit, namespace=ns).unit
        logger.info("principal %s remembered %s in %s", self.principal.name, stored.memory_id, ns)
        run = f"mcp-{uuid.uuid4().hex}"
        self.journal.start(run, task=f"[{self.principal.name}] remember", namespace=self.principal.namespace)
        self.journal.add_produced(run, [stored.memory_id], namespace=self.principal.namespace)
        return stored

    def feedback(
        self,
        memory_ids: Sequence[str],
        *,
        success: bool | None,
        rejected: bool = False,
    ) -> FeedbackOutcome:
        """Apply a task outcome to memories, wherever this principal may write them.

        Each id is looked up in the readable namespaces (own first). A memory found
        only in a namespace the principal may read but not write is left unchanged
        and listed in ``skipped``, as is an id found nowhere.
        """
        by_ns: dict[str, list[str]] = {}
        skipped: list[str] = []
        for memory_id in dict.fromkeys(memory_ids):
            ns = self._locate(memory_id)
            if ns is None or not self.principal.can_write(ns):
                skipped.append(memory_id)
            else:
                by_ns.setdefault(ns, []).append(memory_id)
        updated: list[MemoryUnit] = []
        for ns, ids in by_ns.items():
            updated += self.store.record_feedback(ids, success=success, rejected=rejected, namespace=ns)
        return FeedbackOutcome(updated=updated, skipped=skipped)

    def _locate(self, memory_id: str) -> str | None:
        for ns in self.principal.readable:
            try:
                self.store.get(memory_id, namespace=ns)
            except MemoryNotFoundError:
                continue
            return ns
        return None

    def forget(self, memory_id: str) -> int:
        """Hard-delete a unit of the principal's own namespace and every copy it published."""
        own = self.principal.namespace
        self.store.get(memory_id, namespace=own)  # MemoryNotFoundError before anything changes
        deleted = self.store.forget(memory_id, namespace=own)
        for ns in self.store.namespaces():
            if ns == own:
                continue
            try:
                copy = self.store.get(memory_id, namespace=ns)
            except MemoryNotFoundError:
                continue
            if published_from(copy, own):
                deleted += self.store.forget(memory_id, namespace=ns)
        return deleted

    def publish(self, memory_id: str, *, to: str) -> MemoryUnit:
        """Copy one of the principal's own units into ``to`` (a namespace it may write)."""
        dst = self._ns(to, "write")
        own = self.principal.namespace
        if dst == own:
            raise ConfigurationError("publish needs a namespace other than the principal's own")
        unit = self.store.get(memory_id, namespace=own)
        copy = unit.evolve(
            namespace=dst,
            status="active",
            supersedes=None,
            merged_from=[],
            tags=[*(t for t in unit.tags if not t.startswith(PUBLISHED_TAG)), origin_tag(own)],
        )
        return self.store.add(copy, namespace=dst).unit

    def unpublish(self, memory_id: str, *, from_namespace: str) -> int:
        """Remove this principal's published copy from ``from_namespace``."""
        ns = self._ns(from_namespace, "write")
        copy = self.store.get(memory_id, namespace=ns)
        if not published_from(copy, self.principal.namespace):
            raise AccessDeniedError(f"{memory_id!r} in {ns!r} was not published by {self.principal.name!r}")
        return self.store.forget(memory_id, namespace=ns)
