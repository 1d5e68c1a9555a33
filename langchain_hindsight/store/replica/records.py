"""The recall mirror: every active memory of one namespace in memory, so recall reads nothing per query.

An embedded store is the only writer of its directory, so it can hold derived
copies of what recall needs and keep them exact: the lexical index
(``replica.lexical``) and this mirror, which holds for each *active* unit of a
namespace its stored vector (the one Chroma holds) and its record (document and
metadata, kept as the bytes of one JSON array and decoded only for the
candidates of a query). With it the dense arm is an exact matrix-vector product
instead of a Chroma query, and the candidates of both arms are read from memory
instead of one Chroma ``get`` per query.

Like the lexical index it is derived data:

* built from one paged read of the namespace's active records (vectors
  included) the first time the namespace is searched, or loaded from its
  snapshot (``mirror/<collection>.npz``), written when the store closes and
  erased at the first write, as the lexical snapshot is;
* kept in step by every write of the store: a deleted or no longer active unit
  leaves it at once, a unit whose metadata changed is updated in place (its
  content, hence its vector, is the same), and a unit with new content or a new
  vector is marked *stale* and read again (one ``get``) before the next search;
* only for namespaces of at most :data:`MIRROR_MAX_ROWS` active memories: its
  memory cost is the vectors (``4 * dimension`` bytes a memory) plus the
  records; above it, recall queries Chroma's index as before.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langchain_hindsight.errors import BackendError
from langchain_hindsight.store._codec import unit_from_record, unit_to_metadata
from langchain_hindsight.store.backend import Include, Records
from langchain_hindsight.store.replica.files import (
    from_json_array,
    json_array,
    matches,
    read_header,
    read_snapshot,
    trust_fields,
    write_snapshot,
)
from langchain_hindsight.store.replica.lexical import LexicalIndex
from langchain_hindsight.types import MemoryUnit

__all__ = [
    "MIRROR_MAX_ROWS",
    "Mirror",
    "build_mirror",
    "load_mirror",
    "mirror_candidates",
    "record_bytes",
    "record_digest",
    "refresh_mirror",
    "replica_hybrid",
    "save_mirror",
]

logger = logging.getLogger(__name__)

MIRROR_MAX_ROWS = 30_000
"""Largest namespace (active memories) a store mirrors; above it recall queries Chroma's index.

At 30k memories of the default 896-d embedder the vectors take ~110 MB and an
exact search ~5 ms; ``benchmarks/recall_scale.py`` measures both paths."""


def record_bytes(document: str, metadata: Mapping[str, Any]) -> bytes:
    """One stored record (document and metadata) as canonical JSON bytes (what a mirror row holds)."""
    return json.dumps([document, dict(metadata)], ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def record_digest(record: bytes) -> str:
    """A short digest of :func:`record_bytes` (what a snapshot's consistency sample compares)."""
    return hashlib.sha256(record).hexdigest()[:16]


class Mirror:
    """The active units of one namespace: ids, stored vectors (float32 rows) and records.

    Not thread-safe on its own: the store calls it under its lock.

    Args:
        dimension: Length of the vectors.
        identity: The embedder identity of the vectors (``"name (N-d)"``), recorded in the snapshot.
    """

    def __init__(self, dimension: int, identity: str) -> None:
        self.dimension = int(dimension)
        self.identity = identity
        self.stale: set[str] = set()
        """Ids written since the mirror was filled whose record must be read again before it answers."""
        self._ids: list[str] = []
        self._row: dict[str, int] = {}
        self._vectors = np.zeros((16, self.dimension), dtype=np.float32)
        self._alive = np.zeros(16, dtype=bool)
        self._records: list[bytes] = []
        self._dead = 0

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row

    @property
    def memory_ids(self) -> frozenset[str]:
        """The ids of the mirrored (active) units."""
        return frozenset(self._row)

    # ------------------------------------------------------------------ upkeep
    def put(self, memory_id: str, vector: Sequence[float] | np.ndarray, record: bytes) -> None:
        """Mirror (or replace) one active unit: its stored vector and :func:`record_bytes` of its record."""
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vec.shape[0] != self.dimension:
            raise ValueError(f"vector of length {vec.shape[0]} in a mirror of {self.dimension}-d vectors")
        self.discard([memory_id])
        n = len(self._ids)
        if n == len(self._alive):
            grow = max(16, n)
            self._vectors = np.concatenate([self._vectors, np.zeros((grow, self.dimension), dtype=np.float32)])
            self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
        self._vectors[n] = vec
        self._alive[n] = True
        self._ids.append(memory_id)
        self._records.append(record)
        self._row[memory_id] = n
        self.stale.discard(memory_id)

    def put_record(self, memory_id: str, record: bytes) -> bool:
        """Replace the record of a mirrored unit, keeping its vector; ``False`` if it is not mirrored."""
        row = self._row.get(memory_id)
        if row is None:
            return False
        self._records[row] = record
        return True

    def apply(self, units: Iterable[MemoryUnit]) -> None:
        """Bring written units in.

        Inactive ones leave; active ones with the mirrored content are updated in place; any other (new
        content, so a new vector, or a unit not mirrored yet) is marked :attr:`stale`.
        """
        for unit in units:
            if unit.status != "active":
                self.discard([unit.memory_id])
                self.stale.discard(unit.memory_id)
                continue
            found = self.record(unit.memory_id)
            if found is not None and found[0] == unit.content:  # Chroma merges metadata keys on update
                self._records[self._row[unit.memory_id]] = record_bytes(
                    unit.content, {**found[1], **unit_to_metadata(unit)}
                )
            else:
                self.discard([unit.memory_id])
                self.stale.add(unit.memory_id)

    def discard(self, memory_ids: Iterable[str]) -> None:
        """Drop units (deleted, or no longer active); unknown ids are ignored."""
        for memory_id in memory_ids:
            row = self._row.pop(memory_id, None)
            if row is not None:
                self._alive[row] = False
                self._records[row] = b""
                self._dead += 1
        if self._dead > 1024 and self._dead * 4 > len(self._ids):
            self.compact()

    def forget(self, memory_ids: Iterable[str]) -> None:
        """:meth:`discard` and no longer refresh them (deleted ids)."""
        ids = list(memory_ids)
        self.discard(ids)
        self.stale.difference_update(ids)

    def compact(self) -> None:
        """Drop the rows of discarded units (their memory is released)."""
        keep = [r for r in range(len(self._ids)) if self._alive[r]]
        self._vectors = self._vectors[keep].copy() if keep else np.zeros((16, self.dimension), dtype=np.float32)
        self._ids = [self._ids[r] for r in keep]
        self._records = [self._records[r] for r in keep]
        self._alive = np.ones(len(self._vectors), dtype=bool)
        self._alive[len(keep) :] = False
        self._row = {m: i for i, m in enumerate(self._ids)}
        self._dead = 0

    # ------------------------------------------------------------------ reads
    def check_query(self, vector: Sequence[float]) -> None:
        """Refuse a query vector whose length is not the mirrored vectors' (as Chroma refuses it).

        Raises:
            BackendError: ``vector`` has another length.
        """
        if len(vector) != self.dimension:
            raise BackendError(
                f"the query vector has {len(vector)} dimensions, the stored vectors {self.dimension}: "
                "was the store written with another embedder?"
            )

    def nearest(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """The ``k`` mirrored units with the highest dot product with ``vector`` (exact), best first.

        Stored vectors are unit length (cosine space), so the dot product is the
        cosine similarity Chroma's index approximates. Ties go to the smaller id.
        """
        n = len(self._ids)
        if not self._row or k <= 0:
            return []
        sims = self._vectors[:n] @ np.asarray(vector, dtype=np.float32)
        sims[~self._alive[:n]] = -np.inf
        k = min(k, len(self._row))
        top = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
        best = [(self._ids[r], float(sims[r])) for r in top if self._alive[r]]
        best.sort(key=lambda item: (-item[1], item[0]))
        return best[:k]

    def similarities(self, vector: Sequence[float], memory_ids: Sequence[str]) -> dict[str, float]:
        """The dot product of ``vector`` with each mirrored unit among ``memory_ids`` (others skipped)."""
        rows = [(m, r) for m in memory_ids if (r := self._row.get(m)) is not None]
        if not rows:
            return {}
        sims = self._vectors[[r for _, r in rows]] @ np.asarray(vector, dtype=np.float32)
        return {m: float(s) for (m, _), s in zip(rows, sims.tolist(), strict=True)}

    def vector(self, memory_id: str) -> np.ndarray | None:
        """The stored vector of a mirrored unit (a copy), or ``None``."""
        row = self._row.get(memory_id)
        return None if row is None else self._vectors[row].copy()

    def record(self, memory_id: str) -> tuple[str, dict[str, Any]] | None:
        """The stored document and metadata of a mirrored unit, or ``None``."""
        row = self._row.get(memory_id)
        if row is None:
            return None
        document, metadata = json.loads(self._records[row])
        return str(document), dict(metadata)

    def document(self, memory_id: str) -> str | None:
        """The stored document (content) of a mirrored unit, or ``None``."""
        found = self.record(memory_id)
        return None if found is None else found[0]

    def unit(self, memory_id: str) -> MemoryUnit | None:
        """The mirrored unit, rebuilt from its record (:class:`~langchain_hindsight.errors.StoreError` if corrupt)."""
        found = self.record(memory_id)
        return None if found is None else unit_from_record(memory_id, *found)

    def records(self) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """``(memory_id, document, metadata)`` of every mirrored unit."""
        for memory_id, row in list(self._row.items()):
            document, metadata = json.loads(self._records[row])
            yield memory_id, str(document), dict(metadata)

    def digest(self, memory_id: str) -> str:
        """:func:`record_digest` of a mirrored unit's record (``KeyError`` if it is not mirrored)."""
        return record_digest(self._records[self._row[memory_id]])

    # ------------------------------------------------------------------ snapshots
    def save(self, path: Path, *, meta: Mapping[str, Any]) -> None:
        """Write the mirror (compacted first, without stale rows) to ``path`` as a ``mirror`` snapshot.

        ``meta`` (the trust check's record count, active count and sample) goes into the header, with the
        dimension and the embedder identity (``replica.files``: the one snapshot format).

        Raises:
            ValueError: the mirror has stale rows (read them first).
        """
        if self.stale:
            raise ValueError("a mirror with stale rows cannot be saved")
        self.compact()
        n = len(self._ids)
        lengths = np.fromiter((len(r) for r in self._records), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        fields = {**meta, "dimension": self.dimension, "identity": self.identity}
        arrays = {
            "ids": json_array(self._ids),
            "vectors": self._vectors[:n],
            "offsets": offsets,
            "records": np.frombuffer(b"".join(self._records), dtype=np.uint8),
        }
        write_snapshot(path, "mirror", fields, arrays)

    @staticmethod
    def read_identity(path: Path) -> str | None:
        """The embedder identity recorded in the snapshot at ``path`` (its header only), or ``None``."""
        header = read_header(path, "mirror")
        identity = None if header is None else header.get("identity")
        return identity if isinstance(identity, str) else None

    @classmethod
    def load(cls, path: Path) -> tuple[Mirror, dict[str, Any]] | None:
        """The mirror saved at ``path`` and its header; ``None`` if absent, unreadable or of another format."""
        loaded = read_snapshot(path, "mirror", ("ids", "vectors", "offsets", "records"))
        if loaded is None:
            return None
        header, arrays = loaded
        try:
            ids = [str(i) for i in from_json_array(arrays["ids"])]
            vectors = np.ascontiguousarray(arrays["vectors"], dtype=np.float32)
            offsets = arrays["offsets"].astype(np.int64)
            blob = arrays["records"].tobytes()
            mirror = cls(int(header["dimension"]), str(header["identity"]))
        except (KeyError, TypeError, ValueError):  # a damaged snapshot is rebuilt, never trusted
            logger.warning("ignoring unreadable recall mirror snapshot %s", path, exc_info=True)
            return None
        n = len(ids)
        if vectors.shape != (n, mirror.dimension) or len(offsets) != n + 1 or int(offsets[-1]) != len(blob):
            return None
        bounds = offsets.tolist()
        mirror._ids = ids
        mirror._records = [blob[bounds[r] : bounds[r + 1]] for r in range(n)]
        mirror._row = {m: r for r, m in enumerate(mirror._ids)}
        if len(mirror._row) != n:
            return None
        mirror._vectors = vectors if n else np.zeros((16, mirror.dimension), dtype=np.float32)
        mirror._alive = np.ones(len(mirror._vectors), dtype=bool)
        mirror._alive[n:] = False
        return mirror, header


def mirror_candidates(
    mirror: Mirror,
    vector: Sequence[float],
    lexical: Mapping[str, float],
    k: int,
    unit_of: Callable[[str], MemoryUnit],
) -> dict[str, tuple[MemoryUnit, float]]:
    """Hybrid recall's candidates from a mirror: the ``k`` nearest units and every lexical match, with cosines.

    The same set :meth:`MemoryStore.hybrid_search` assembles from Chroma: the
    dense arm's ``k`` best (here exact) and each lexical match the dense arm did
    not return, scored by the dot product of its stored vector with ``vector``.

    Args:
        mirror: The namespace's mirror.
        vector: The query embedding.
        lexical: The lexical arm's matches (id → score).
        k: Depth of the dense arm.
        unit_of: The unit of a mirrored id (a cache, or :meth:`Mirror.unit`).

    Raises:
        BackendError: ``vector`` is not as long as the mirrored vectors.
    """
    mirror.check_query(vector)
    found = {i: (unit_of(i), sim) for i, sim in mirror.nearest(vector, k)}
    rest = [i for i in lexical if i not in found]
    sims = mirror.similarities(vector, rest) if rest else {}
    found.update((i, (unit_of(i), sims[i])) for i in rest if i in sims)
    return found


def replica_hybrid(
    index: LexicalIndex,
    mirror: Mirror,
    query: str,
    vector: Sequence[float],
    *,
    k: int,
    normalize: bool,
    unit_of: Callable[[str], MemoryUnit],
) -> tuple[dict[str, tuple[MemoryUnit, float]], dict[str, float]]:
    """Hybrid recall from a namespace's replica: the lexical arm from ``index``, the candidates from ``mirror``.

    The one replica path: the live store calls it with the replica it keeps in step with the backend,
    :class:`~langchain_hindsight.store.replica.snapshot.StoreSnapshot` with the same two classes loaded from
    the files a clean close left. Returns what ``MemoryStore.hybrid_search`` returns.

    Raises:
        BackendError: ``vector`` is not as long as the mirrored vectors.
    """
    lexical = dict(index.search(query, k, normalize=normalize))
    return mirror_candidates(mirror, vector, lexical, k, unit_of), lexical


# ---------------------------------------------------------------- the store's side
_SCAN_PAGE = 2000


def build_mirror(col: Records, identity: str, dimension: int | None, max_rows: int) -> Mirror | None:
    """A mirror of every active record of ``col``, read in pages; ``None`` if it would exceed ``max_rows``.

    Args:
        col: The namespace's memories collection.
        identity: The embedder identity recorded with the vectors.
        dimension: Their length when known (needed for an empty namespace).
        max_rows: The largest mirror to build.
    """
    if col.count() > max_rows:
        return None
    mirror: Mirror | None = None if dimension is None else Mirror(dimension, identity)
    include: list[Include] = ["documents", "metadatas", "embeddings"]
    for rows in col.pages(include=include, where={"status": "active"}, size=_SCAN_PAGE):
        embeddings = rows.get("embeddings")
        if embeddings is None:
            return None
        if mirror is None:
            mirror = Mirror(len(embeddings[0]), identity)
        for memory_id, document, metadata, vector in zip(
            rows["ids"], rows["documents"] or [], rows["metadatas"] or [], embeddings, strict=True
        ):
            mirror.put(memory_id, vector, record_bytes(document, metadata))
        if len(mirror) > max_rows:
            return None
    return mirror


def refresh_mirror(mirror: Mirror, col: Records) -> None:
    """Read the :attr:`~Mirror.stale` units of ``mirror`` again (one ``get``); the inactive or gone leave."""
    if not mirror.stale:
        return
    ids = sorted(mirror.stale)
    rows = col.get(ids=ids, include=["documents", "metadatas", "embeddings"])
    embeddings = rows.get("embeddings")
    kept: set[str] = set()
    for j, memory_id in enumerate(rows["ids"]):
        metadata = rows["metadatas"][j] or {}
        if metadata.get("status") == "active" and embeddings is not None:
            mirror.put(memory_id, embeddings[j], record_bytes(rows["documents"][j], metadata))
            kept.add(memory_id)
    mirror.forget([i for i in ids if i not in kept])  # gone, or no longer active


def _stored_digest(document: str, metadata: Mapping[str, Any]) -> str:
    return record_digest(record_bytes(document, metadata))


def save_mirror(mirror: Mirror, path: Path, col: Records) -> bool:
    """Write ``mirror`` to ``path`` with what :func:`load_mirror` checks; ``False`` if it was not saved.

    Stale rows are read first. A sample of rows is compared with the backend before writing
    (``files.trust_fields``, the check every kind shares): a mirror that differs from the data is never
    saved (logged). Failures are logged, never raised: the snapshot is an optimisation.
    """
    try:
        refresh_mirror(mirror, col)
        fields = trust_fields(col, mirror.memory_ids, _stored_digest, own=mirror.digest)
        if fields is None:
            logger.warning("recall mirror %s not saved: it differs from the stored records", path.name)
            return False
        mirror.save(path, meta=fields)
    except Exception:
        logger.warning("could not save the recall mirror snapshot %s", path, exc_info=True)
        return False
    return True


def load_mirror(
    path: Path, col: Records, identity: str, *, count: int | None = None, skip: Iterable[str] = ()
) -> Mirror | None:
    """The mirror saved at ``path`` if it is consistent with ``col``, else ``None`` (the caller rebuilds).

    Consistent: same embedder identity, and ``files.matches`` (the check every kind shares): as many
    records as when it was saved, and a sample of its units still stored, active, with the same record.

    Args:
        path: The snapshot file.
        col: The namespace's memories collection.
        identity: The store's embedder identity.
        count: The record count to compare with instead of ``col.count()`` (before a write that just happened).
        skip: Ids that write changed: not compared.
    """
    loaded = Mirror.load(path)
    if loaded is None:
        return None
    mirror, header = loaded
    if mirror.identity != identity or not matches(
        header, col, mirror.memory_ids, _stored_digest, count=count, skip=skip
    ):
        logger.debug("recall mirror %s is stale: rebuilding", path.name)
        return None
    return mirror
