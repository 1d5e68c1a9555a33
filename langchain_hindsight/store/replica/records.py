"""The recall mirror: every active memory of one namespace in memory, so recall reads nothing per query.

For each active unit the :class:`Mirror` holds its stored vector and its record (document and metadata as the
bytes of one JSON array, decoded only for a query's candidates): the dense arm is an exact matrix-vector product.
:class:`Held` pairs it with the namespace's lexical index, built by one paged read or loaded from one snapshot.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from langchain_hindsight.embeddings.identity import EmbedderIdentity
from langchain_hindsight.errors import BackendError, StoreError
from langchain_hindsight.store._codec import unit_from_record, unit_to_metadata
from langchain_hindsight.store.backend import Include, Records, Rows
from langchain_hindsight.store.replica.files import from_json_array, json_array, read_snapshot, write_snapshot
from langchain_hindsight.store.replica.lexical import LexicalIndex, RowTable
from langchain_hindsight.store.tokens import record_texts
from langchain_hindsight.types import MemoryUnit

__all__ = ["UNITS_KEPT", "Held", "Mirror", "record_bytes"]

logger = logging.getLogger(__name__)

UNITS_KEPT = 4096
"""Most rebuilt units a mirror keeps (each ~2 KB); all are let go when it is full."""
_SNAPSHOT_ARRAYS = ("ids", "vectors", "offsets", "records", "vocab", "lengths", "indptr", "docs", "tfs")
_WITH_VECTORS: list[Include] = ["documents", "metadatas", "embeddings"]
_SCAN_PAGE = 2000


def record_bytes(document: str, metadata: Mapping[str, Any]) -> bytes:
    """One stored record (document and metadata) as canonical JSON bytes (what a mirror row holds)."""
    return json.dumps([document, dict(metadata)], ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


class Mirror(RowTable):
    """The active units of one namespace: ids, stored vectors (float32 rows) and records.

    Not thread-safe on its own: the store calls it under its lock. ``identity`` (``"name (N-d)"``) is recorded in
    the snapshot; ``capacity`` rows are allocated at once (a build knows how many: no regrowth, no transient copy).
    """

    def __init__(self, dimension: int, identity: str, *, capacity: int = 16) -> None:
        super().__init__(capacity)
        self.dimension = int(dimension)
        self.identity = identity
        self.stale: set[str] = set()
        """Ids written since the mirror was filled whose record must be read again before it answers."""
        self._vectors = np.zeros((len(self._alive), self.dimension), dtype=np.float32)
        self._records: list[bytes] = []
        self._units: dict[str, MemoryUnit] = {}  # decoded rows (recall's candidates), dropped when a row changes

    def put(self, memory_id: str, vector: Sequence[float] | np.ndarray, record: bytes) -> None:
        """Mirror (or replace) one active unit: its stored vector and :func:`record_bytes` of its record."""
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if not self.dimension and not self._ids:  # built empty, length unknown
            self.dimension = vec.shape[0]
            self._vectors = np.zeros((len(self._alive), self.dimension), dtype=np.float32)
        if vec.shape[0] != self.dimension:
            raise ValueError(f"vector of length {vec.shape[0]} in a mirror of {self.dimension}-d vectors")
        self.discard([memory_id])
        row = self._add_row(memory_id)  # first: it may grow the vectors
        self._vectors[row] = vec
        self._records.append(record)

    def _grow(self, rows: int) -> None:
        super()._grow(rows)
        self._vectors = np.concatenate([self._vectors, np.zeros((rows, self.dimension), dtype=np.float32)])

    def apply(self, units: Iterable[MemoryUnit]) -> None:
        """Bring written units in: inactive ones leave, active ones with the mirrored content are updated in place,
        any other (new content, so a new vector, or a unit not mirrored yet) is marked :attr:`stale`.
        """  # noqa: D205
        for unit in units:
            found = self.record(unit.memory_id) if unit.status == "active" else None
            if found is not None and found[0] == unit.content:
                self._units.pop(unit.memory_id, None)
                metadata = {**found[1], **unit_to_metadata(unit)}  # Chroma merges metadata keys on update
                self._records[self._row[unit.memory_id]] = record_bytes(unit.content, metadata)
            else:
                self.discard([unit.memory_id])
                if unit.status == "active":
                    self.stale.add(unit.memory_id)

    def discard(self, memory_ids: Iterable[str]) -> None:
        """Drop units (deleted, or no longer active) and no longer refresh them; unknown ids are ignored."""
        for memory_id in memory_ids:
            self._units.pop(memory_id, None)
            self.stale.discard(memory_id)
            row = self._drop_row(memory_id)
            if row is not None:
                self._records[row] = b""
        if self._dead > 1024 and self._dead * 4 > len(self._ids):
            self.compact()

    def compact(self) -> None:
        """Drop the rows of discarded units (their memory is released)."""
        n_rows = len(self._ids)
        alive = self._renumber(0)
        self._vectors = self._vectors[:n_rows][alive]
        self._records = [r for r, a in zip(self._records, alive.tolist(), strict=True) if a]

    def _query(self, vector: Sequence[float]) -> np.ndarray:
        """``vector`` as float32, refused (as Chroma refuses it) if its length is not the mirrored vectors'."""
        if self.dimension and len(vector) != self.dimension:
            raise BackendError(
                f"the query vector has {len(vector)} dimensions, the stored vectors {self.dimension}: "
                "was the store written with another embedder?"
            )
        return np.asarray(vector, dtype=np.float32)

    def nearest(
        self, vector: Sequence[float], k: int, metadata: Mapping[str, str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``k`` units nearest ``vector`` by dot product (cosine: stored vectors are unit length), ties by id.

        With ``metadata``, among the units whose stored metadata holds each of its pairs, found exactly as the pair's
        own JSON text in a row's canonical :func:`record_bytes` (in the document and any other value, quotes are
        escaped).

        Raises:
            BackendError: ``vector`` is not as long as the mirrored vectors.
        """
        query = self._query(vector)
        n = len(self._ids)
        if not self._row or k <= 0:
            return []
        sims = self._vectors[:n] @ query
        keep, count = self._alive[:n], len(self._row)
        if metadata:
            rows = list(range(n))  # a dropped row's record is empty: it matches nothing
            for key, value in metadata.items():  # each pair reads only the rows the ones before it kept: rarest first
                pair = json.dumps({key: value}, ensure_ascii=False, separators=(",", ":"))[1:-1].encode()
                rows = [r for r in rows if pair in self._records[r]]
            keep, count = np.zeros(n, dtype=bool), len(rows)
            keep[rows] = True
        sims[~keep] = -np.inf
        if not (k := min(k, count)):
            return []
        top = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
        best = [(self._ids[r], float(sims[r])) for r in top if keep[r]]
        best.sort(key=lambda item: (-item[1], item[0]))
        return best[:k]

    def similarities(self, vector: Sequence[float], memory_ids: Sequence[str]) -> dict[str, float]:
        """The dot product of ``vector`` with each mirrored unit of ``memory_ids`` (raises as :meth:`nearest`)."""
        query = self._query(vector)
        rows = [(m, r) for m in memory_ids if (r := self._row.get(m)) is not None]
        if not rows:
            return {}
        sims = self._vectors[[r for _, r in rows]] @ query
        return {m: float(s) for (m, _), s in zip(rows, sims.tolist(), strict=True)}

    def vector(self, memory_id: str) -> list[float] | None:
        """The stored vector of a mirrored unit, or ``None``."""
        row = self._row.get(memory_id)
        return None if row is None else self._vectors[row].tolist()

    def record(self, memory_id: str) -> tuple[str, dict[str, Any]] | None:
        """The stored document and metadata of a mirrored unit, or ``None``."""
        row = self._row.get(memory_id)
        if row is None:
            return None
        document, metadata = json.loads(self._records[row])
        return str(document), dict(metadata)

    def unit(self, memory_id: str) -> MemoryUnit:
        """The mirrored unit, rebuilt from its record once and kept until its row changes (at most :data:`UNITS_KEPT`).

        A recall's candidates repeat across queries; a rebuild costs ~0.1 ms.

        Raises:
            StoreError: it is not mirrored (callers pass ids the mirror just returned), or its record is corrupt.
        """
        unit = self._units.get(memory_id)
        if unit is None:
            found = self.record(memory_id)
            if found is None:
                raise StoreError(f"memory {memory_id!r} is not in the recall mirror")
            unit = unit_from_record(memory_id, *found)
            if len(self._units) >= UNITS_KEPT:
                self._units.clear()
            self._units[memory_id] = unit
        return unit

    def records(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """``(memory_id, document, metadata)`` of every mirrored unit."""
        for memory_id, row in list(self._row.items()):
            document, metadata = json.loads(self._records[row])
            yield memory_id, str(document), dict(metadata)

    def arrays(self) -> tuple[list[str], dict[str, np.ndarray]]:
        """The mirror (compacted first) as snapshot arrays: its ids, row by row, and the rows' vectors and records.

        Raises:
            ValueError: the mirror has stale rows (read them first).
        """
        if self.stale:
            raise ValueError("a mirror with stale rows cannot be saved")
        self.compact()
        n = len(self._ids)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.fromiter((len(r) for r in self._records), dtype=np.int64, count=n), out=offsets[1:])
        records = np.frombuffer(b"".join(self._records), dtype=np.uint8)
        return list(self._ids), {"vectors": self._vectors[:n], "offsets": offsets, "records": records}

    @classmethod
    def restore(cls, ids: list[str], dimension: int, identity: str, arrays: Mapping[str, np.ndarray]) -> Mirror:
        """The mirror :meth:`arrays` saved, its units on ``ids``' rows."""
        mirror = cls(dimension, identity)
        mirror.set_rows(list(ids), 0)
        bounds = arrays["offsets"].tolist()
        blob = arrays["records"].tobytes()
        mirror._records = [blob[bounds[r] : bounds[r + 1]] for r in range(len(ids))]
        mirror._vectors = np.ascontiguousarray(arrays["vectors"], dtype=np.float32)
        return mirror


@dataclass
class Held:
    """One namespace held in memory: its lexical index and recall mirror (the same active units).

    Both are saved in one snapshot: the ids once, then the mirror's rows and the index's postings on the same rows.
    """

    index: LexicalIndex
    mirror: Mirror
    seen: dict[str, int] = field(default_factory=dict)
    """Revisions of other writers already reflected here (a shared server's change feed)."""
    saved: bool = False
    """Whether both equal the namespace's snapshot file (nothing to save at close)."""

    def save(self, path: Path) -> None:
        """Write both (compacted first) to ``path``, with the embedder identity and lexical scheme they need to load.

        Raises:
            ValueError: the mirror has stale rows, or the index does not hold the mirror's units.
        """
        ids, arrays = self.mirror.arrays()
        if self.index.memory_ids != self.mirror.memory_ids:
            raise ValueError("the lexical index and the mirror hold different units")
        arrays.update(self.index.arrays({m: r for r, m in enumerate(ids)}))
        fields = {"dimension": self.mirror.dimension, "identity": self.mirror.identity, **LexicalIndex.scheme()}
        write_snapshot(path, "mirror", fields, {"ids": json_array(ids), **arrays})

    @classmethod
    def load(cls, path: Path, identity: str) -> Held | None:
        """The namespace saved at ``path``; ``None``: absent, unreadable, another format, embedder or lexical scheme.

        Whether it may be loaded at all (the stamp's word, which vouches for its bytes) the caller asks first.
        """
        loaded = read_snapshot(path, "mirror", _SNAPSHOT_ARRAYS)
        if loaded is None:
            return None
        header, arrays = loaded
        if header.get("identity") != identity or any(header.get(k) != v for k, v in LexicalIndex.scheme().items()):
            logger.info("snapshot %s holds another embedder's vectors or another lexical scheme: rebuilt", path)
            return None
        ids = [str(i) for i in from_json_array(arrays["ids"])]
        mirror = Mirror.restore(ids, int(header["dimension"]), identity, arrays)
        return cls(LexicalIndex.restore(ids, arrays), mirror, saved=True)

    def hybrid(
        self, query: str, vector: Sequence[float], k: int, normalize: bool
    ) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
        """Hybrid recall as ``MemoryStore.hybrid_search`` returns it: the dense arm's ``k`` nearest (exact) and the
        lexical arm's ``k`` best, with every lexical match's cosine (raises as :meth:`Mirror.nearest`).
        """  # noqa: D205
        found = {i: (self.mirror.unit(i), sim) for i, sim in self.mirror.nearest(vector, k)}
        lexical = dict(self.index.search(query, k, normalize=normalize))
        rest = [i for i in lexical if i not in found]
        sims = self.mirror.similarities(vector, rest) if rest else {}
        found.update((i, (self.mirror.unit(i), sims[i])) for i in rest if i in sims)
        return found, lexical

    @classmethod
    def build(cls, col: Records, identity: EmbedderIdentity, seen: dict[str, int]) -> Held:
        """Both from every active record of ``col``, read in pages (vectors allocated once, index filled at the end).

        Raises:
            BackendError: the backend returned records without their vectors.
        """
        held = cls(LexicalIndex(), Mirror(identity.dimension or 0, str(identity), capacity=col.count()), seen)
        for rows in col.pages(include=_WITH_VECTORS, where={"status": "active"}, size=_SCAN_PAGE):
            if rows.get("embeddings") is None:
                raise BackendError(f"{col.name}: the backend returned records without their vectors")
            held._mirror_rows(rows)
        held.index.add_texts(record_texts(held.mirror.records()))
        return held

    def read_again(self, col: Records) -> None:
        """Read the :attr:`~Mirror.stale` units again from ``col`` (one ``get``): active ones anew, others leave."""
        if not self.mirror.stale:
            return
        ids = sorted(self.mirror.stale)
        kept = self._mirror_rows(col.get(ids=ids, include=_WITH_VECTORS))
        found = {i for i, _, _ in kept}
        gone = [i for i in ids if i not in found]
        self.mirror.discard(gone)
        self.index.delete(gone)
        self.index.add_texts(record_texts(kept))

    def _mirror_rows(self, rows: Rows) -> list[tuple[str, str, Any]]:
        """Mirror the active records of ``rows`` that came with their vectors; returns their id, document, metadata."""
        embeddings = rows.get("embeddings")
        kept: list[tuple[str, str, Any]] = []
        for j, memory_id in enumerate(rows["ids"]):
            document, metadata = rows["documents"][j], rows["metadatas"][j] or {}
            if metadata.get("status") == "active" and embeddings is not None:
                self.mirror.put(memory_id, embeddings[j], record_bytes(document, metadata))
                kept.append((memory_id, document, metadata))
        return kept
