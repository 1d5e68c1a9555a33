"""``HindsightStore``: LangGraph's ``BaseStore`` over a :class:`~langchain_hindsight.store.memory_store.MemoryStore`.

With it, ``create_agent(store=...)``, tools that take an ``InjectedStore`` and
LangMem's ``create_manage_memory_tool`` / ``create_search_memory_tool`` read and
write hindsight memory (any backend the store has). The mapping (see
``docs/adapters.md``, "LangGraph's store"):

- **Namespaces.** A LangGraph namespace tuple is our namespace joined with ``"."``
  (``("memories", "alice")`` → ``"memories.alice"``; ``("alice",)`` → ``"alice"``, the
  namespace reflection writes to). LangGraph forbids ``"."`` inside a label, so the
  join is one-to-one and every namespace of ours without an empty part reads back as
  a tuple.
- **Keys.** A key-addressed item is a chain of memory units. The first put stores a
  unit whose id is derived from the namespace and key (``lg_<digest>``); a later put
  on the key *supersedes* the current unit (history kept, the old version demoted
  and never served); ``get`` returns the newest unit of the chain. A unit that was
  not written through this class (a reflected lesson) is an item whose key is its
  memory id. A key-addressed put is the caller's identity: it is never merged into
  another key's unit, no write judge is asked, and the lifecycle's merge pass never
  folds it (it carries ``kept-apart``); a put of the value already stored writes nothing.
- **Values.** The caller's value is kept exactly (JSON) in the unit's
  ``context.parameters["langgraph"]`` beside the key and the item's creation time;
  the unit's content, the text recall searches, is ``value["content"]`` (as JSON when
  it is not a string), else the whole value as JSON (or the ``index`` paths' text). A unit written
  elsewhere reads as ``{"content", "kind", "task_type", "task_description", "source",
  "confidence", "tags", "evidence", "context"}``.
- **Search.** With a query: our hybrid recall (dense + BM25 fusion, then the weighted
  score with confidence and recency; task type inferred from the query), without the
  relevance floor by default. Without one: a listing, newest first. ``filter`` reads
  the value first, then our fields (``task_type``, ``kind``, ``source``, ``confidence``, ...).
- **Delete** (a put of ``None``) is our ``forget`` of every unit of the key's chain: a hard delete.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from langchain_hindsight._checks import is_int, refuse_unknown_keywords
from langchain_hindsight._text import informative
from langchain_hindsight._trust import MemorySource, trust_rank
from langchain_hindsight._unset import UNSET, Unset
from langchain_hindsight.errors import (
    ConfigurationError,
    HindsightError,
    MemoryNotFoundError,
    UninformativeMemoryError,
    WriteConflictError,
)
from langchain_hindsight.lifecycle import KEPT_APART_TAG
from langchain_hindsight.recall.engine import RecallSettings, recall
from langchain_hindsight.recall.ranking import FloorRule, MinRelevance
from langchain_hindsight.recall.scoring import ScoringWeights
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MAX_CONTENT_CHARS, MemoryContext, MemoryKind, MemoryUnit, utcnow
from langchain_hindsight.writes import REPLAN_ATTEMPTS

__all__ = [
    "LANGGRAPH_PARAMETER",
    "LANGGRAPH_TAG",
    "HindsightStore",
    "key_of",
    "namespace_name",
    "namespace_tuple",
    "value_of",
]

logger = logging.getLogger(__name__)

LANGGRAPH_PARAMETER = "langgraph"
"""The key of ``context.parameters`` that holds a put's ``{"key", "value", "created_at"}``."""
LANGGRAPH_TAG = "langgraph"
"""Tag of every unit written through :class:`HindsightStore`."""

_ID = re.compile(r"[A-Za-z0-9_\-.:]{1,128}")
_NAMESPACE_MAX = 256
_FIELDS = (
    "memory_id",
    "content",
    "task_type",
    "task_description",
    "kind",
    "source",
    "confidence",
    "tags",
    "evidence",
    "access_count",
    "status",
    "run_id",
    "supersedes",
)
"""Our fields a ``filter`` may name (read from the unit when the value lacks the key)."""
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_MISSING = object()


def namespace_name(namespace: tuple[str, ...]) -> str:
    """The namespace of ours that LangGraph's ``namespace`` tuple maps to: its labels joined with ``"."``.

    Raises:
        InvalidNamespaceError: empty, a label that is not a non-empty string without ``"."``,
            or a name that is not one of ours (over 256 characters, surrounding spaces).
    """
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    validate_op_namespace(GetOp(namespace, ""))
    name = ".".join(namespace)
    if len(name) > _NAMESPACE_MAX or name != name.strip():
        raise InvalidNamespaceError(
            f"namespace {namespace!r} joins to {name[:60]!r}, not a hindsight namespace "
            f"(at most {_NAMESPACE_MAX} characters, no surrounding spaces)"
        )
    return name


def namespace_tuple(name: str) -> tuple[str, ...] | None:
    """Inverse of :func:`namespace_name`; ``None`` for a name with an empty part (``"a..b"``): no tuple reaches it."""
    labels = tuple(name.split("."))
    return None if any(not label for label in labels) else labels


def _root_id(namespace: str, key: str) -> str:
    digest = hashlib.sha256(f"{namespace}\x00{key}".encode()).hexdigest()[:40]
    return f"lg_{digest}"


def _record(unit: MemoryUnit) -> dict[str, Any] | None:
    """A unit's ``{"key", "value", "created_at"}`` if it was written through :class:`HindsightStore`."""
    record = unit.context.parameters.get(LANGGRAPH_PARAMETER)
    if isinstance(record, dict) and isinstance(record.get("key"), str) and isinstance(record.get("value"), dict):
        return record
    return None


def key_of(unit: MemoryUnit) -> str:
    """The item key of ``unit``: the key it was put under, else its memory id."""
    record = _record(unit)
    return str(record["key"]) if record is not None else unit.memory_id


def value_of(unit: MemoryUnit) -> dict[str, Any]:
    """The item value of ``unit``: the value put (a fresh copy), else a view of the unit's fields."""
    record = _record(unit)
    if record is not None:
        value: dict[str, Any] = json.loads(json.dumps(record["value"], ensure_ascii=False))
        return value
    return {
        "content": unit.content,
        "kind": unit.kind,
        "task_type": unit.task_type,
        "task_description": unit.task_description,
        "source": unit.source,
        "confidence": unit.score_confidence,
        "tags": list(unit.tags),
        "evidence": unit.evidence,
        "context": unit.context.model_dump(mode="json"),
    }


def _created_at(unit: MemoryUnit) -> datetime:
    record = _record(unit)
    if record is not None and isinstance(record.get("created_at"), str):
        try:
            return datetime.fromisoformat(record["created_at"])
        except ValueError:
            pass
    return unit.created_at


def _item(namespace: tuple[str, ...], unit: MemoryUnit, key: str | None = None) -> Item:
    return Item(
        value=value_of(unit),
        key=key_of(unit) if key is None else key,
        namespace=namespace,
        created_at=_created_at(unit),
        updated_at=unit.created_at,
    )


def _search_item(namespace: tuple[str, ...], unit: MemoryUnit, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=namespace,
        key=key_of(unit),
        value=value_of(unit),
        created_at=_created_at(unit),
        updated_at=unit.created_at,
        score=score,
    )


def _field(unit: MemoryUnit, value: Mapping[str, Any], name: str) -> Any:
    if name in value:
        return value[name]
    if name in _FIELDS:
        return getattr(unit, name) if name != "confidence" else unit.score_confidence
    return _MISSING


def _compare(actual: Any, wanted: Any) -> bool:
    """LangGraph's filter semantics (``InMemoryStore``'s and ``PostgresStore``'s): exact JSON match or operators."""
    if isinstance(wanted, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        if not isinstance(actual, dict):
            return False
        return all(_compare(actual.get(k, _MISSING), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return actual is not _MISSING and actual == wanted


def _operator(actual: Any, op: str, operand: Any) -> bool:
    if op not in _OPERATORS:
        raise ConfigurationError(f"unsupported filter operator {op!r}; use one of {', '.join(_OPERATORS)}")
    if op == "$eq":
        return actual is not _MISSING and actual == operand
    if op == "$ne":
        return actual is _MISSING or actual != operand
    try:
        left, right = float(actual), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field matches no comparison
    if op == "$gt":
        return left > right
    if op == "$gte":
        return left >= right
    if op == "$lt":
        return left < right
    return left <= right


def _matches(unit: MemoryUnit, flt: Mapping[str, Any] | None) -> bool:
    if not flt:
        return True
    value = value_of(unit)
    return all(_compare(_field(unit, value, name), wanted) for name, wanted in flt.items())


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ConfigurationError(f"unsupported match type {condition.match_type!r}")
    return all(p == "*" or n == p for n, p in pairs)


@dataclass(frozen=True, slots=True)
class _Found:
    """A key's chain: its newest unit (what ``get`` returns) and every unit id of the chain."""

    head: MemoryUnit
    chain: tuple[str, ...]


@refuse_unknown_keywords
class HindsightStore(BaseStore):
    """LangGraph's ``BaseStore`` over a :class:`MemoryStore`: LangGraph and LangMem read and write hindsight memory.

    Setup:
        Any :class:`MemoryStore` (embedded Chroma, a Chroma server, in memory, Postgres):
        the ``BaseStore`` is a view, the memory store owns the data and is closed by its owner.

    Instantiate:
        .. code-block:: python

            from langchain.agents import create_agent
            from langmem import create_manage_memory_tool, create_search_memory_tool

            from langchain_hindsight import HindsightStore, MemoryStore

            memory = MemoryStore(persist_directory="./memory_db")
            store = HindsightStore(memory)
            agent = create_agent(
                model,
                tools=[create_manage_memory_tool(("memories", "{langgraph_user_id}")),
                       create_search_memory_tool(("memories", "{langgraph_user_id}"))],
                store=store,
            )

    Semantics (see the module docstring and ``docs/adapters.md``): namespace tuples are
    our namespaces joined with ``"."``; a put on an existing key supersedes (history kept);
    a put of ``None`` / ``delete`` forgets the key's whole chain; ``search(query=...)`` is
    our hybrid recall; every item is indexed (``index=False`` only changes nothing: our
    units are always searchable, and ``index=[paths]`` picks the searched text). TTLs
    are not supported (``put(ttl=...)`` raises ``NotImplementedError``, as LangGraph's
    base class does for a store without them).

    Errors: a value whose text carries no information raises
    :class:`~langchain_hindsight.errors.UninformativeMemoryError` (nothing is written);
    a value that is not JSON, or nested too deep, :class:`~langchain_hindsight.errors.InvalidMemoryError`;
    a put that would replace a more trusted unit (a user's correction) with this
    store's ``source`` raises :class:`~langchain_hindsight.errors.ConfigurationError`.

    Args:
        store: The memory store to read and write.
        source: The provenance of what is put (default ``"agent_inference"``: an agent's
            tool wrote it); it sets the initial confidence and what the unit may replace.
        kind: The kind of a unit a put creates (default ``"fact"``); a value's own
            ``"kind"`` (one of ours) wins.
        task_type: The task type of a unit a put creates (default ``"general"``); a
            value's own string ``"task_type"`` wins (normalised with the store's vocabulary).
        min_relevance: The relevance floor of ``search(query=...)``. Default: the one default of
            every door, :class:`~langchain_hindsight.recall.engine.RecallSettings`'s (``"auto"``:
            a query that some item has evidence for gets the best ``limit`` items with their
            scores, in order, as LangGraph's stores return them; one that nothing has evidence
            for gets none). ``None`` always returns the best ``limit``; a number applies an
            absolute floor.
        weights: The scoring weights of a query search (default :class:`ScoringWeights`).
        scrub: Passed to :meth:`MemoryStore.forget` on delete (``None``: erase the bytes
            when the backend can).
    """

    supports_ttl = False

    def __init__(
        self,
        store: MemoryStore,
        *,
        source: MemorySource = "agent_inference",
        kind: MemoryKind = "fact",
        task_type: str = "general",
        min_relevance: MinRelevance | FloorRule | Unset = UNSET,
        weights: ScoringWeights | None = None,
        scrub: bool | None = None,
    ) -> None:
        if not isinstance(store, MemoryStore):
            raise ConfigurationError(f"store must be a MemoryStore, got {type(store).__name__}")
        if source not in get_args(MemorySource):
            raise ConfigurationError(f"source must be one of {get_args(MemorySource)}, got {source!r}")
        if kind not in get_args(MemoryKind):
            raise ConfigurationError(f"kind must be one of {get_args(MemoryKind)}, got {kind!r}")
        if not isinstance(task_type, str) or not task_type.strip():
            raise ConfigurationError(f"task_type must be a non-empty string, got {task_type!r}")
        if scrub is not None and not isinstance(scrub, bool):
            raise ConfigurationError(f"scrub must be True, False or None, got {scrub!r}")
        self.store = store
        self.source: MemorySource = source
        self.kind: MemoryKind = kind
        self.task_type = task_type
        self.scrub = scrub
        settings = RecallSettings(weights=weights or ScoringWeights())  # the floor's one default, checked
        if not isinstance(min_relevance, Unset):
            settings = RecallSettings.from_options(settings, min_relevance=min_relevance)
        self.settings = settings

    # ------------------------------------------------------------------ BaseStore
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order of reads first, then writes (LangGraph's batch semantics).

        As in LangGraph's stores, every get, search and listing of a batch sees the
        store as it was before the batch, and of several puts on one key the last wins.
        """
        if isinstance(ops, str | bytes) or not isinstance(ops, Iterable):
            raise ConfigurationError(f"ops must be an iterable of LangGraph store operations, got {type(ops).__name__}")
        ops = list(ops)
        for op in ops:
            if not isinstance(op, GetOp | SearchOp | ListNamespacesOp | PutOp):
                raise ConfigurationError(f"unknown operation type: {type(op).__name__}")
            validate_op_namespace(op)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        results: list[Result] = []
        with self.store.lock:
            for op in ops:
                if isinstance(op, GetOp):
                    results.append(self._get(op))
                elif isinstance(op, SearchOp):
                    results.append(self._search(op))
                elif isinstance(op, ListNamespacesOp):
                    results.append(self._list_namespaces(op))
                else:
                    namespace_name(op.namespace)  # refused before anything is written
                    puts.pop((op.namespace, op.key), None)
                    puts[(op.namespace, op.key)] = op
                    results.append(None)
            planned = [self._plan(op) for op in puts.values()]  # every put checked before any is written
            for op, content, found in planned:
                self._put_replanning(op, content, found)
        return results

    def _put_replanning(self, op: PutOp, content: tuple[dict[str, Any], str] | None, found: _Found | None) -> None:
        """:meth:`_put`, re-read and re-planned when another process changed the key first (bounded).

        The plan (:meth:`_plan`) was made on the key as read; the store refuses a write whose
        premise is gone (the head was forgotten or archived: ``MemoryNotFoundError``; the key's
        first version was created by another writer: ``WriteConflictError``) and writes nothing,
        so the put reads the key again and plans again (see ``writes.py``, ``plan_supersede``).

        Raises:
            WriteConflictError: the key kept changing through every attempt.
        """
        last: HindsightError | None = None
        for attempt in range(REPLAN_ATTEMPTS):
            try:
                self._put(op, content, found)
                return
            except (MemoryNotFoundError, WriteConflictError) as e:
                logger.info(
                    "HindsightStore put %s/%r: another writer changed the key first (%s); re-planning (attempt %d)",
                    namespace_name(op.namespace), op.key, e, attempt + 2,
                )  # fmt: skip
                last = e
                op, content, found = self._plan(op)
        raise WriteConflictError(
            f"HindsightStore put {op.namespace!r}/{op.key!r}: other writers changed the key through "
            f"{REPLAN_ATTEMPTS} attempts; the last one wrote nothing ({last})"
        ) from last

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch` in a worker thread (the memory store's calls block: embedding, the backend)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # ------------------------------------------------------------------ reads
    def _find(self, ns: str, key: str) -> _Found | None:
        """``key``'s chain in ``ns``: rooted at ``lg_<digest>`` (put here) or at the memory id ``key`` (elsewhere)."""
        candidates = [_root_id(ns, key)]
        if _ID.fullmatch(key) and key not in candidates:
            candidates.append(key)
        for memory_id in candidates:
            found = self.store.get_many([memory_id], namespace=ns)
            if not found or key_of(found[0]) != key:
                continue
            root = found[0]
            if root.status == "active":
                return _Found(root, (root.memory_id,))
            try:
                chain = self.store.history(memory_id, namespace=ns)
            except MemoryNotFoundError:  # forgotten by another writer since the read above: absent now
                continue
            return _Found(chain[0], tuple(u.memory_id for u in chain))
        return None

    def _get(self, op: GetOp) -> Item | None:
        ns = namespace_name(op.namespace)
        found = self._find(ns, op.key)
        if found is None or found.head.status == "superseded":
            return None
        return _item(op.namespace, found.head, op.key)

    def _namespaces(self) -> list[tuple[tuple[str, ...], str]]:
        """Every namespace of ours that holds an active unit and reads as a tuple, with its name."""
        out = []
        for name in self.store.namespaces():
            labels = namespace_tuple(name)
            if labels is not None and self.store.count(namespace=name, status="active"):
                out.append((labels, name))
        return out

    def _search(self, op: SearchOp) -> list[SearchItem]:
        _check_window(op.limit, op.offset)
        prefix = tuple(op.namespace_prefix)
        scope = [(labels, name) for labels, name in self._namespaces() if labels[: len(prefix)] == prefix]
        if not scope or op.limit == 0:
            return []
        if op.query:
            return self._recall(op, scope)
        units = [
            (labels, u)
            for labels, name in scope
            for u in self.store.iter_units(namespace=name, status="active")
            if _matches(u, op.filter)
        ]
        units.sort(key=lambda lu: (-lu[1].created_at.timestamp(), lu[0], key_of(lu[1])))
        return [_search_item(labels, u, None) for labels, u in units[op.offset : op.offset + op.limit]]

    def _recall(self, op: SearchOp, scope: list[tuple[tuple[str, ...], str]]) -> list[SearchItem]:
        """Our hybrid recall over ``scope``, fetched deeper until the filter leaves ``offset + limit`` or all seen."""
        assert op.query is not None
        names = [name for _, name in scope]
        labels_of = {name: labels for labels, name in scope}
        wanted = op.offset + op.limit
        total = sum(self.store.count(namespace=name, status="active") for name in names)
        k = wanted if not op.filter else min(total, max(wanted * 4, 20))
        while True:
            settings = RecallSettings(
                k=max(1, k),
                namespace=names[0],
                extra_namespaces=tuple(names[1:]),
                min_relevance=self.settings.min_relevance,
                weights=self.settings.weights,
            )
            memories = recall(self.store, settings, op.query).result.memories
            kept = [m for m in memories if _matches(m.memory, op.filter)]
            if len(kept) >= wanted or len(memories) < k or k >= total:
                break
            k = min(total, k * 4)
        return [
            _search_item(labels_of[m.memory.namespace], m.memory, m.score)
            for m in kept[op.offset : op.offset + op.limit]
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        _check_window(op.limit, op.offset)
        if op.max_depth is not None and not is_int(op.max_depth, 0):
            raise ConfigurationError(f"max_depth must be a non-negative int or None, got {op.max_depth!r}")
        found = [labels for labels, _ in self._namespaces()]
        if op.match_conditions:
            found = [ns for ns in found if all(_namespace_matches(c, ns) for c in op.match_conditions)]
        found = sorted({ns[: op.max_depth] for ns in found} if op.max_depth is not None else set(found))
        return found[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ writes
    def _plan(self, op: PutOp) -> tuple[PutOp, tuple[dict[str, Any], str] | None, _Found | None]:
        """A put checked against the store: its value, its unit content and the key's chain.

        Raises:
            ConfigurationError: the value is not JSON, or the put would replace a more trusted unit.
            UninformativeMemoryError: the value's text carries no information.
        """
        content = None if op.value is None else _prepared(op)
        found = self._find(namespace_name(op.namespace), op.key)
        head = None if found is None else found.head
        active = head is not None and head.status == "active"
        if content is not None and head is not None and active and trust_rank(self.source) > trust_rank(head.source):
            raise ConfigurationError(
                f"HindsightStore put {op.namespace!r}/{op.key!r}: a {self.source} unit never replaces a more "
                f"trusted one ({head.memory_id} is {head.source}); nothing was written"
            )
        return op, content, found

    def _put(self, op: PutOp, content: tuple[dict[str, Any], str] | None, found: _Found | None) -> None:
        ns = namespace_name(op.namespace)
        if op.value is None:
            if found is None:
                logger.info("HindsightStore delete %s/%r: no such item, nothing forgotten", ns, op.key)
                return
            n = self.store.forget(list(found.chain), namespace=ns, scrub=self.scrub, successors=True)
            logger.info("HindsightStore delete %s/%r: forgot %d unit(s) %s", ns, op.key, n, ", ".join(found.chain))
            return
        assert content is not None
        value, text = content
        if found is not None and _unchanged(found.head, op.key, value, text):
            logger.info("HindsightStore put %s/%r: the same value is stored as %s, nothing written", ns, op.key,
                        found.head.memory_id)  # fmt: skip
            return
        created = utcnow() if found is None else _created_at(found.head)
        unit = self._unit(value, text, op.key, created)
        if found is None:
            # if_absent: another writer that created the key first is a conflict (re-planned), not a second version
            result = self.store.add(
                unit.evolve(memory_id=_root_id(ns, op.key)), namespace=ns, dedupe=False, if_absent=True
            )
            what = f"added as {result.memory_id}"
        elif found.head.status == "active":
            result = self.store.supersede(
                [found.head.memory_id], unit, reason=f"LangGraph put on key {op.key!r}", namespace=ns
            )
            what = f"superseded {found.head.memory_id} by {result.memory_id}"
        else:  # archived (or superseded): the new version continues the chain, the old one stays as it is
            result = self.store.add(
                unit.evolve(supersedes=found.head.memory_id), namespace=ns, dedupe=False, if_absent=True
            )
            what = f"continued {found.head.status} {found.head.memory_id} with {result.memory_id}"
        logger.info("HindsightStore put %s/%r: %s", ns, op.key, what)

    def _unit(self, value: dict[str, Any], text: str, key: str, created: datetime) -> MemoryUnit:
        kind = value.get("kind") if value.get("kind") in get_args(MemoryKind) else self.kind
        task_type = value.get("task_type")
        if not isinstance(task_type, str) or not task_type.strip() or len(task_type) > 128:
            task_type = self.task_type
        tags = value.get("tags")
        own = [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
        record = {"key": key, "value": value, "created_at": created.isoformat()}
        return MemoryUnit(
            content=text,
            kind=kind,
            task_type=task_type,
            source=self.source,
            tags=[LANGGRAPH_TAG, KEPT_APART_TAG, *own],
            context=MemoryContext(parameters={LANGGRAPH_PARAMETER: record}),
        )


def _check_window(limit: object, offset: object) -> None:
    """``limit`` and ``offset`` of a search or listing: non-negative ints (``None``, ``[]``, ``""`` refused)."""
    if not is_int(limit, 0) or not is_int(offset, 0):
        raise ConfigurationError(f"limit and offset must be ints >= 0, got {limit!r} and {offset!r}")


def _unchanged(head: MemoryUnit, key: str, value: dict[str, Any], text: str) -> bool:
    """Whether ``head`` is an active unit put under ``key`` that already holds ``value`` as ``text``."""
    return (
        head.status == "active"
        and _record(head) is not None
        and key_of(head) == key
        and value_of(head) == value
        and head.content == text
    )


def _prepared(op: PutOp) -> tuple[dict[str, Any], str]:
    """A put's value as stored and its unit content, checked before anything of the batch is written.

    Raises:
        ConfigurationError: the value is not a JSON object.
        UninformativeMemoryError: its text carries no information (our write path would refuse it).
    """
    assert op.value is not None
    value = _json_value(op.value)
    text = _text(value, op.index)
    if not informative(text):
        raise UninformativeMemoryError(
            f"HindsightStore put {op.namespace!r}/{op.key!r}: the value's text {text[:40]!r} carries no "
            "information (acknowledgements, greetings, at most two letters or one CJK character): not stored"
        )
    return value, text


def _json_value(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` as the JSON it will read back as (so ``get`` returns exactly what a JSON store would)."""
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"value must be a mapping or None, got {type(value).__name__}")
    try:
        decoded = json.loads(json.dumps(dict(value), ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise ConfigurationError(f"value must be JSON-serialisable (string keys, finite numbers): {e}") from e
    if not isinstance(decoded, dict):  # pragma: no cover - a mapping dumps to an object
        raise ConfigurationError("value must be a JSON object")
    return decoded


def _text(value: Mapping[str, Any], index: Literal[False] | list[str] | None) -> str:
    """The unit content for ``value``: the ``index`` paths' text, else ``value["content"]`` as text, else the JSON."""
    if isinstance(index, list) and index:
        parts: list[str] = []
        for path in index:
            parts.extend(get_text_at_path(value, tokenize_path(path)))
        text = "\n".join(p for p in parts if p.strip())
        if text.strip():
            return _clip(text)
    content = value.get("content")
    if isinstance(content, str) and content.strip():
        return _clip(content)
    if content is not None and not isinstance(content, str):
        return _clip(json.dumps(content, ensure_ascii=False))
    return _clip(json.dumps(dict(value), ensure_ascii=False))


def _clip(text: str) -> str:
    """``text`` cut to what a unit holds (the full value is kept in the unit's parameters)."""
    text = text.strip()
    return text if len(text) <= MAX_CONTENT_CHARS else text[: MAX_CONTENT_CHARS - 1].rstrip() + "…"
