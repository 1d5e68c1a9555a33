"""An in-memory :class:`~langchain_hindsight.store.backend.base.Backend`: dicts and a brute-force cosine search.

Same answers as Chroma for what the store asks (exact, where Chroma's HNSW index is approximate), no files, no
lock, nothing to import: unit tests run on it in milliseconds, and a throwaway store needs nothing else.

Example:
    >>> from langchain_hindsight.store.backend import InMemoryBackend
    >>> backend = InMemoryBackend()
    >>> col = backend.create_collection("notes", {"kind": "demo"})
    >>> col.upsert(ids=["a", "b"], embeddings=[[1.0, 0.0], [0.0, 1.0]], documents=["x", "y"],
    ...            metadatas=[{"n": 1}, {"n": 2}])
    >>> col.query(query_embeddings=[[0.9, 0.1]], n_results=1, where={"n": {"$gte": 1}})["ids"]
    [['a']]

A store on it (``MemoryStore(backend=InMemoryBackend())``) lives as long as the backend object: a second store on
the same backend sees the same data.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langchain_hindsight.errors import BackendError
from langchain_hindsight.store.backend.base import (
    Backend,
    Include,
    Metadata,
    Records,
    Rows,
    Vector,
    check_n_results,
    check_write,
)

__all__ = ["InMemoryBackend", "InMemoryRecords", "matches", "matches_document"]

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
    "$in": lambda a, b: any(_same_kind(a, o) and a == o for o in b),
    "$nin": lambda a, b: not any(_same_kind(a, o) and a == o for o in b),
}
"""Chroma's comparisons: only values of the same kind compare (``$ne`` holds across kinds, see :func:`matches`)."""


_COMBINE: dict[str, Callable[[Iterable[bool]], bool]] = {"$and": all, "$or": any}


def _same_kind(a: object, b: object) -> bool:
    numeric = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool)
    return (isinstance(a, numeric) and isinstance(b, numeric)) or type(a) is type(b)


def _holds(where: Mapping[str, Any] | None, clause: Callable[[str, Any], bool]) -> bool:
    """Whether every clause of a Chroma filter holds: ``$and`` / ``$or`` combine, ``clause`` judges the rest."""
    return all(
        _COMBINE[key](_holds(c, clause) for c in cond) if key in _COMBINE else clause(key, cond)
        for key, cond in (where or {}).items()
    )


def matches(metadata: Mapping[str, Any], where: Mapping[str, Any] | None) -> bool:
    """Whether a record's ``metadata`` satisfies a Chroma ``where`` clause (a missing field never matches)."""

    def field(key: str, cond: Any) -> bool:
        ops = cond if isinstance(cond, Mapping) else {"$eq": cond}
        unknown = [op for op in ops if op not in _COMPARE]
        if key.startswith("$") or unknown:
            raise ValueError(f"unsupported where operator {key if key.startswith('$') else unknown[0]!r}")
        value = metadata.get(key)
        return key in metadata and all(
            _COMPARE[op](value, x) if op in ("$in", "$nin") or _same_kind(value, x) else op == "$ne"
            for op, x in ops.items()
        )

    return _holds(where, field)


def matches_document(document: str | None, where: Mapping[str, Any] | None) -> bool:
    """Whether ``document`` satisfies a Chroma ``where_document`` clause (``$contains``/``$not_contains``)."""

    def text(key: str, cond: Any) -> bool:
        if key not in ("$contains", "$not_contains"):
            raise ValueError(f"unsupported where_document operator {key!r}")
        return (str(cond) in (document or "")) == (key == "$contains")

    return _holds(where, text)


@dataclass(slots=True)
class _Record:
    vector: np.ndarray
    document: str | None
    metadata: dict[str, Any]


class InMemoryRecords(Records):
    """One in-memory collection (records in insertion order; a re-written record keeps its place)."""

    def __init__(
        self, lock: threading.RLock, collections: dict[str, InMemoryRecords], name: str, metadata: Metadata
    ) -> None:
        self._lock = lock
        self._collections = collections  # the backend's, by name: a rename moves this collection's entry
        self._name = name
        self._metadata = dict(metadata)
        self._rows: dict[str, _Record] = {}
        self._dim: int | None = None
        self._stacked: tuple[list[tuple[str, _Record]], np.ndarray] | None = None  # reset by every write

    @property
    def name(self) -> str:
        """The collection's name."""
        return self._name

    @property
    def metadata(self) -> dict[str, Any]:
        """The collection's metadata (a copy)."""
        return dict(self._metadata)

    def _vector(self, values: Vector | Any) -> np.ndarray:
        vector = np.asarray(values, dtype=np.float32).reshape(-1)
        if self._dim is None:
            self._dim = int(vector.shape[0])
        elif vector.shape[0] != self._dim:
            raise BackendError(
                f"collection {self._name!r} holds {self._dim}-dimensional vectors, got {vector.shape[0]} dimensions"
            )
        return vector

    def _rows_out(self, items: list[tuple[str, _Record]], include: Sequence[Include]) -> Rows:
        out: Rows = {"ids": [i for i, _ in items], "documents": None, "metadatas": None, "embeddings": None}
        if "documents" in include:
            out["documents"] = [r.document for _, r in items]
        if "metadatas" in include:
            out["metadatas"] = [dict(r.metadata) for _, r in items]
        if "embeddings" in include:
            dim = self._dim or 0
            out["embeddings"] = np.stack([r.vector for _, r in items]) if items else np.zeros((0, dim), np.float32)
        return out

    def get(
        self,
        *,
        ids: Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
        include: Sequence[Include] = ("documents", "metadatas"),
        limit: int | None = None,
        offset: int | None = None,
    ) -> Rows:
        """See :meth:`Records.get`."""
        with self._lock:
            pool = self._rows if ids is None else {i: self._rows[i] for i in ids if i in self._rows}
            found = [
                (i, r)
                for i, r in pool.items()
                if matches(r.metadata, where) and matches_document(r.document, where_document)
            ]
            return self._rows_out(found[offset or 0 :][:limit], include)

    def query(
        self,
        *,
        query_embeddings: Sequence[Vector],
        n_results: int,
        where: Mapping[str, Any] | None = None,
        include: Sequence[Include] = ("documents", "metadatas", "distances"),
    ) -> Rows:
        """See :meth:`Records.query` (exact cosine over every matching record)."""
        check_n_results(n_results)
        with self._lock:
            if self._stacked is None:  # every record's vector in one matrix, kept until the next write
                everything = list(self._rows.items())
                vectors = [r.vector for _, r in everything]
                self._stacked = (everything, np.stack(vectors) if vectors else np.zeros((0, 0), np.float32))
            pool, matrix = self._stacked
            if where:
                keep = [j for j, (_, r) in enumerate(pool) if matches(r.metadata, where)]
                pool, matrix = [pool[j] for j in keep], matrix[keep]
            norms = np.linalg.norm(matrix, axis=1)
            norms[norms == 0] = 1.0
            k = min(n_results, len(pool))
            out: Rows = {"ids": [], "documents": [], "metadatas": [], "embeddings": [], "distances": []}
            for q in query_embeddings:
                qv = self._vector(q) if self._dim is not None else np.asarray(q, dtype=np.float32)
                sims = (matrix @ qv) / (norms * (float(np.linalg.norm(qv)) or 1.0)) if pool else np.zeros(0)
                top = np.argpartition(-sims, k - 1)[:k] if k < len(pool) else np.arange(len(pool))
                chosen = top[np.lexsort((top, -sims[top]))].tolist()
                rows = self._rows_out([pool[j] for j in chosen], include)
                rows["distances"] = [float(1.0 - sims[j]) for j in chosen]
                for key, column in rows.items():
                    out[key].append(column)
            return {key: column if key == "ids" or key in include else None for key, column in out.items()}

    def _write_columns(
        self,
        ids: Sequence[str],
        embeddings: Sequence[Vector] | Any | None,
        documents: Sequence[str] | None,
        metadatas: Sequence[Metadata] | None,
        *,
        whole: bool,
    ) -> None:
        """See :meth:`Records._write_columns`."""
        ids = check_write(self._name, ids, embeddings, documents, metadatas)
        with self._lock:
            self._stacked = None
            vectors = None if embeddings is None else [self._vector(v) for v in embeddings]
            for j, memory_id in enumerate(ids):
                row = _Record(np.zeros(0, np.float32), None, {}) if whole else self._rows.get(memory_id)
                if row is None:
                    continue
                self._rows[memory_id] = row
                if vectors is not None:
                    row.vector = vectors[j]
                if documents is not None:
                    row.document = documents[j]
                if metadatas is not None:
                    row.metadata.update(metadatas[j])

    def delete(self, *, ids: Sequence[str]) -> None:
        """See :meth:`Records.delete`."""
        with self._lock:
            self._stacked = None
            for memory_id in ids:
                self._rows.pop(memory_id, None)

    def count(self) -> int:
        """See :meth:`Records.count`."""
        return len(self._rows)

    def modify(self, *, name: str | None = None, metadata: Metadata | None = None) -> None:
        """See :meth:`Records.modify`."""
        with self._lock:
            if name is not None and name != self._name:
                if name in self._collections:
                    raise BackendError(f"collection {name!r} already exists")
                self._collections[name] = self._collections.pop(self._name)
                self._name = name
            if metadata is not None:
                self._metadata = dict(metadata)


class InMemoryBackend(Backend):
    """Collections held in this object (see the module docstring). Thread-safe; lives as long as the object."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._collections: dict[str, InMemoryRecords] = {}

    def get_collection(self, name: str) -> InMemoryRecords | None:
        """See :meth:`Backend.get_collection`."""
        return self._collections.get(name)

    def create_collection(self, name: str, metadata: Metadata, *, like: Records | None = None) -> InMemoryRecords:
        """See :meth:`Backend.create_collection`."""
        with self.lock:
            if name in self._collections:
                raise BackendError(f"collection {name!r} already exists")
            col = self._collections[name] = InMemoryRecords(self.lock, self._collections, name, metadata)
            return col

    def list_collections(self) -> list[Records]:
        """See :meth:`Backend.list_collections`."""
        with self.lock:
            return list(self._collections.values())

    def delete_collection(self, name: str) -> None:
        """See :meth:`Backend.delete_collection`."""
        with self.lock:
            if self._collections.pop(name, None) is None:
                raise BackendError(f"collection {name!r} does not exist")

    @property
    def can_erase(self) -> bool:
        """True: a deleted record leaves no copy behind, so erasing needs nothing more."""
        return True
