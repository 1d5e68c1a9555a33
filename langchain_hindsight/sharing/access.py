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
  reader can see where it came from, and ``origin:<digest>`` naming the unit it was
  made from (:func:`~langchain_hindsight.sharing.principals.unit_origin_tag`). The
  copy goes through the target's duplicate handling like any write: it may be
  stored under a new id (the old one is taken, e.g. by an archived earlier copy)
  or merged into the same statement already there, which then carries both tags.
* **unpublish** removes the copies (only the publisher's own copies: the tags say whose).
* **forget** of the source also forgets every copy derived from it, in every
  namespace and whatever id it has (found by the origin tag; a copy from before
  origin tags by its id and ``from:`` tag): forgetting is the owner's right over
  its data, grants or not.
* **remember** refuses provenance-like tags (``from:…``, ``origin:…``, ``来自：…`` in
  any case, width or lookalike script): only publish sets them.
* **feedback** and **supersede** act on the copy a reader was served: the shared
  pool learns from its readers without rewriting the owner's original.

Grants (:class:`Principal`, :class:`AccessPolicy`) come from code or a small TOML
file; see :mod:`langchain_hindsight.sharing.principals`. To recall for a principal
from LangChain, use :meth:`ScopedMemory.as_retriever` (a
:class:`~langchain_hindsight.sharing.retriever.ScopedRetriever`), or give the
principal to the facade: ``Hindsight(..., principal="analyst", policy="grants.toml")``.

Example:
    >>> from langchain_hindsight.sharing import AccessPolicy
    >>> policy = AccessPolicy.from_mapping({"analyst": {"namespace": "analyst", "read": ["shared"]}})
    >>> policy.principal("analyst").readable
    ('analyst', 'shared')
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight._trust import MemorySource
from langchain_hindsight.errors import AccessDeniedError, ConfigurationError, InvalidMemoryError, MemoryNotFoundError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.recall.explain import ExplainedMemory, RunExplanation, explain_run
from langchain_hindsight.recall.retriever import HindsightRetriever
from langchain_hindsight.sharing.principals import (
    ORIGIN_TAG,
    PUBLISHED_TAG,
    Operation,
    Principal,
    origin_tag,
    provenance_like,
    published_from,
    unit_origin_tag,
)
from langchain_hindsight.sharing.retriever import ScopedRetriever
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryKind, MemoryUnit, ScoredMemory

__all__ = ["FeedbackOutcome", "ScopedMemory", "ScopedResult"]

logger = logging.getLogger(__name__)


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


@refuse_unknown_keywords
class ScopedMemory:
    """The store as one principal sees it; every operation checks the grants first.

    Args:
        store: The shared :class:`MemoryStore` (not closed by this view).
        principal: Whose view this is.
        retriever: Recall settings (default: a :class:`ScopedRetriever` with the
            retriever's defaults); a plain :class:`HindsightRetriever` keeps its
            settings and is scoped to the principal.
        journal: Where reads and writes are recorded (default: the principal's
            namespace of ``RunJournal(store)``).
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
        self.retriever: ScopedRetriever = self._scoped(retriever)
        self.journal = journal if journal is not None else RunJournal(store, namespace=principal.namespace)

    def _scoped(self, retriever: HindsightRetriever | None, **options: Any) -> ScopedRetriever:
        if isinstance(retriever, ScopedRetriever) and retriever.principal == self.principal and not options:
            return retriever
        kept: dict[str, Any] = {}
        if retriever is not None:
            if retriever.store is not self.store:
                raise ConfigurationError("the retriever must read the same store as the ScopedMemory")
            unscoped = {"store", "principal", "namespace", "extra_namespaces"}
            kept = {name: getattr(retriever, name) for name in retriever.model_fields_set - unscoped}
        return ScopedRetriever(store=self.store, principal=self.principal, **{**kept, **options})

    def as_retriever(self, **options: Any) -> ScopedRetriever:
        """A LangChain retriever over what this principal may read (own namespace first, then the granted ones).

        Args:
            **options: :class:`~langchain_hindsight.recall.retriever.HindsightRetriever`
                settings (``k``, ``min_relevance``, ...) on top of this view's retriever.
        """
        return self._scoped(self.retriever, **options)

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
        own = self.principal.namespace
        recalled = self.retriever.recall_result(query, k=k, task_type=task_type, now=now)
        results = [ScopedResult(m, m.memory.namespace, m.memory.namespace == own) for m in recalled.memories]
        run = run_id or f"mcp-{uuid.uuid4().hex}"
        self.journal.start(
            run,
            task=f"[{self.principal.name}] {query}",
            task_type=task_type,
            namespace=self.principal.namespace,
            served=[r.scored for r in results],
            withheld=recalled.withheld,
        )
        return run, results

    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryUnit:
        """One unit from a readable namespace."""
        return self.store.get(memory_id, namespace=self._ns(namespace, "read"))

    def list_units(self, *, namespace: str | None = None, limit: int = 100) -> list[MemoryUnit]:
        """Active units of a readable namespace (at most ``limit``)."""
        return self.store.list_units(namespace=self._ns(namespace, "read"), status="active", limit=limit)

    def find(self, memory_id: str) -> MemoryUnit:
        """A unit by id from the first namespace this principal may read that holds it (own first).

        Raises:
            MemoryNotFoundError: no readable namespace holds it (whether another one does is not said).
        """
        ns = self._locate(memory_id)
        if ns is None:
            raise MemoryNotFoundError(
                f"no memory {memory_id!r} in a namespace principal {self.principal.name!r} may read"
            )
        return self.store.get(memory_id, namespace=ns)

    def history(self, memory_id: str, *, namespace: str | None = None) -> list[MemoryUnit]:
        """The supersede chain through a unit of a readable namespace, newest first."""
        return self.store.history(memory_id, namespace=self._ns(namespace, "read"))

    def explain(self, run_id: str, *, namespace: str | None = None) -> RunExplanation:
        """Why a run was shown what it was shown, from the journal of a readable namespace (default: own).

        A served memory that is not in that namespace (a shared one) is shown as it
        is now in the first readable namespace that holds it.
        """
        explanation = explain_run(self.journal, run_id, namespace=self._ns(namespace, "read"))
        memories: list[ExplainedMemory] = []
        for m in explanation.memories:
            if m.unit is None:
                for ns in (n for n in self.principal.readable if n != explanation.record.namespace):
                    found = self.store.get_many([m.served.memory_id], namespace=ns)
                    if found:
                        m = m.model_copy(update={"unit": found[0], "status": found[0].status})
                        break
            memories.append(m)
        return explanation.model_copy(update={"memories": memories})

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
        forged = [t for t in tags if provenance_like(str(t))]
        if forged:
            raise InvalidMemoryError(
                f"tag {forged[0]!r} reads as a provenance tag ({PUBLISHED_TAG}…, {ORIGIN_TAG}…): "
                "only publish sets those"
            )
        source: MemorySource = self.principal.trust
        if correction and source != "user_feedback":
            logger.info("principal %s may not write user corrections: stored as %s", self.principal.name, source)
        ns = self._ns(namespace, "write")
        unit = MemoryUnit(
            content=content,
            source=source,
            kind=kind,
            task_type=task_type,
            tags=list(tags),
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
        """Hard-delete a unit of the principal's own namespace and every copy derived from it, whatever its id.

        A copy is found by its origin tag (see :meth:`publish`), so a copy re-published
        under a new id, or the unit a copy merged into, is erased too; a copy made
        before origin tags by its id and ``from:`` tag.
        """
        own = self.principal.namespace
        self.store.get(memory_id, namespace=own)  # MemoryNotFoundError before anything changes
        deleted = self.store.forget(memory_id, namespace=own)
        for ns in self.store.namespaces():
            if ns != own:
                deleted += self._drop_copies(memory_id, ns, why="its original was forgotten")
        return deleted

    def _copies(self, memory_id: str, ns: str) -> list[MemoryUnit]:
        """Every unit of ``ns`` (archive included) derived from this principal's unit ``memory_id``."""
        own = self.principal.namespace
        tag = unit_origin_tag(own, memory_id)
        return [
            u
            for u in self.store.iter_units(namespace=ns)
            if tag in u.tags or (u.memory_id == memory_id and published_from(u, own))
        ]

    def _drop_copies(self, memory_id: str, ns: str, *, why: str) -> int:
        copies = self._copies(memory_id, ns)
        if not copies:
            return 0
        ids = [u.memory_id for u in copies]
        deleted = self.store.forget(ids, namespace=ns)
        logger.info(
            "principal %s: %d cop%s of %s in %s hard-deleted (%s): %s",
            self.principal.name,
            deleted,
            "y" if deleted == 1 else "ies",
            memory_id,
            ns,
            why,
            ids,
        )
        return deleted

    def publish(self, memory_id: str, *, to: str) -> MemoryUnit:
        """Copy one of the principal's own units into ``to`` (a namespace it may write).

        The copy is tagged ``from:<own namespace>`` and with the unit's origin tag,
        so :meth:`forget` and :meth:`unpublish` find it whatever id it ends up with.
        """
        dst = self._ns(to, "write")
        own = self.principal.namespace
        if dst == own:
            raise ConfigurationError("publish needs a namespace other than the principal's own")
        unit = self.store.get(memory_id, namespace=own)
        kept = [t for t in unit.tags if not t.startswith((PUBLISHED_TAG, ORIGIN_TAG))]
        copy = unit.evolve(
            namespace=dst,
            status="active",
            supersedes=None,
            merged_from=[],
            tags=[*kept, origin_tag(own), unit_origin_tag(own, memory_id)],
        )
        stored = self.store.add(copy, namespace=dst).unit
        logger.info("principal %s published %s to %s as %s", self.principal.name, memory_id, dst, stored.memory_id)
        return stored

    def unpublish(self, memory_id: str, *, from_namespace: str) -> int:
        """Remove this principal's copies of its unit ``memory_id`` (or the copy with that id) from ``from_namespace``.

        Raises:
            MemoryNotFoundError: ``from_namespace`` holds no such copy or unit.
            AccessDeniedError: the unit with that id there was not published by this principal.
        """
        ns = self._ns(from_namespace, "write")
        if self._copies(memory_id, ns):
            return self._drop_copies(memory_id, ns, why="unpublished")
        self.store.get(memory_id, namespace=ns)  # MemoryNotFoundError when there is nothing of that id
        raise AccessDeniedError(f"{memory_id!r} in {ns!r} was not published by {self.principal.name!r}")
