"""JSONL export and import of memory units that round-trip exactly.

One line per unit, ``MemoryUnit.to_dict()``: every field, timestamps to the
microsecond, status and namespace. Import writes the units *as they are* — no
task-type normalisation, no dedupe, no confidence caps, archived units straight
into the archive — re-embedding only the content (vectors are derived data).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from langchain_hindsight._codec import unit_to_metadata
from langchain_hindsight.errors import InvalidMemoryError, StoreError
from langchain_hindsight.types import MemoryUnit

if TYPE_CHECKING:
    from langchain_hindsight.store import MemoryStore

__all__ = ["ImportReport", "export_units", "import_units", "read_jsonl"]

_BATCH = 256


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What :func:`import_units` wrote, per namespace."""

    imported: int
    namespaces: dict[str, int] = field(default_factory=dict)


def export_units(
    store: MemoryStore,
    out: IO[str],
    *,
    namespaces: Iterable[str],
    progress: Callable[[str, int, int], None] | None = None,
) -> int:
    """Write every unit of ``namespaces`` (all statuses) as JSONL; return how many."""
    count = 0
    for ns in namespaces:
        total = store.count(namespace=ns)
        for unit in store.iter_units(namespace=ns):
            out.write(json.dumps(unit.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
            if progress is not None and count % 1000 == 0:
                progress(f"export {ns}", count, total)
    return count


def read_jsonl(lines: Iterable[str]) -> Iterator[MemoryUnit]:
    """Parse JSONL lines into units (blank lines skipped).

    Raises:
        InvalidMemoryError: a line is not JSON or not a valid unit; the message names the line.
    """
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as e:
            raise InvalidMemoryError(f"line {number}: not JSON ({e})") from e
        try:
            yield MemoryUnit.from_dict(data)
        except InvalidMemoryError as e:
            raise InvalidMemoryError(f"line {number}: {e}") from e


def import_units(
    store: MemoryStore,
    units: Iterable[MemoryUnit],
    *,
    namespace: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> ImportReport:
    """Write ``units`` exactly as given (an existing id is overwritten); ``namespace`` overrides theirs."""
    batch: list[MemoryUnit] = []
    per_ns: dict[str, int] = {}
    done = 0
    for unit in units:
        if namespace is not None:
            unit = unit.evolve(namespace=store._ns(namespace))
        batch.append(unit)
        if len(batch) >= _BATCH:
            done += _write(store, batch, per_ns)
            batch = []
            if progress is not None:
                progress("import", done, 0)
    if batch:
        done += _write(store, batch, per_ns)
    return ImportReport(imported=done, namespaces=per_ns)


def _write(store: MemoryStore, units: list[MemoryUnit], per_ns: dict[str, int]) -> int:
    units = list({u.memory_id: u for u in units}.values())  # a later line wins
    vectors = store.embeddings.embed_documents([u.content for u in units])
    if len(vectors) != len(units):
        raise StoreError("the embedder returned a different number of vectors than texts")
    groups: dict[tuple[str, bool], list[int]] = {}
    for i, u in enumerate(units):
        groups.setdefault((u.namespace, u.status == "archived"), []).append(i)
    with store._lock:
        for (ns, archived), idx in groups.items():
            target = store._collection(ns, "archive" if archived else "memories")
            assert target is not None  # create=True always returns a collection
            other = store._collection(ns, "memories" if archived else "archive", create=False)
            batch = [units[i] for i in idx]
            ids = [u.memory_id for u in batch]
            try:
                target.upsert(
                    ids=ids,
                    embeddings=[vectors[i] for i in idx],
                    documents=[u.content for u in batch],
                    metadatas=[unit_to_metadata(u) for u in batch],
                )
                if other is not None:  # an id lives in one collection only
                    stale = other.get(ids=ids, include=[])["ids"]
                    if stale:
                        other.delete(ids=stale)
            except Exception as e:
                raise StoreError(f"chroma import failed: {e}") from e
            if archived:
                store._reindex(ns, deletes=ids)
            else:
                store._reindex(ns, upserts=batch)
            per_ns[ns] = per_ns.get(ns, 0) + len(batch)
    return len(units)
