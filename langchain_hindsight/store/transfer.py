"""JSONL export and import of memory units (and, optionally, the run journal) that round-trip exactly.

One line per unit, ``MemoryUnit.to_dict()``: every field, timestamps to the
microsecond, status and namespace. A backup that includes the journal adds one
line per run record, ``{"run": {...}}`` (the record as the journal stores it), so
``explain``, ``report`` and review work on the restored store; a file without
such lines is a memories-only export, as before. Import writes the units *as they are* — no
task-type normalisation, no dedupe, no confidence caps, archived units straight
into the archive — re-embedding only the content (vectors are derived data).

Import is all-or-nothing: every line is parsed and validated, and every id
checked, before the first write (an id already stored with other data is
refused unless ``replace=True``). For an embedded store it is crash-safe too:
the units are written durably to a pending file first and the import is rolled
forward from it when the directory is opened again after a kill. On a backend
other processes write (a database) the units are embedded first, then checked
again and written in one write plan holding every namespace's lock (one
transaction): a unit another process stored meanwhile with other data is a clash
like any other, and a killed import leaves nothing of itself.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, TypeVar

import numpy as np

from langchain_hindsight._text import informative
from langchain_hindsight.errors import ConfigurationError, InvalidMemoryError
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.store import _directory
from langchain_hindsight.store import _store_writes as _write_ops
from langchain_hindsight.store import reads as _read_ops
from langchain_hindsight.store._core import StoreCore, backend_errors
from langchain_hindsight.store._naming import Role
from langchain_hindsight.store.decide import clamp_future, flag_suspicious
from langchain_hindsight.types import MemoryUnit

__all__ = [
    "RUN_KEY",
    "ImportReport",
    "export_runs",
    "export_units",
    "finish_interrupted_import",
    "import_units",
    "read_backup",
]

logger = logging.getLogger(__name__)

_K = TypeVar("_K")

_BATCH = 256
"""The units of an import in progress, written durably before the first write; replayed on reopen."""
RUN_KEY = "run"
"""The one key of a run-record line in a backup (a memory line is the unit's own fields)."""


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What :func:`import_units` wrote, per namespace."""

    imported: int
    namespaces: dict[str, int] = field(default_factory=dict)
    unchanged: int = 0
    """Units already stored exactly as in the file (not written again)."""
    refused: int = 0
    """Units left out because their content carries no information (``"ok"``, ``"好的"``; see
    :func:`~langchain_hindsight._text.informative`): such junk is never stored, also not by an import."""
    runs: int = 0
    """Run records written to the journal (a backup made with the journal)."""
    runs_unchanged: int = 0
    """Run records already in the journal exactly as in the file."""


def export_units(
    store: StoreCore,
    out: IO[str],
    *,
    namespaces: Iterable[str],
    progress: Callable[[str, int, int], None] | None = None,
) -> int:
    """Write every unit of ``namespaces`` (all statuses) as JSONL; return how many."""
    count = 0
    for ns in namespaces:
        total = _read_ops.count(store, namespace=ns)
        for unit in _read_ops.iter_units(store, namespace=ns):
            out.write(_line(unit) + "\n")
            count += 1
            if progress is not None and count % 1000 == 0:
                progress(f"export {ns}", count, total)
    return count


def _line(unit: MemoryUnit) -> str:
    """A unit's JSONL line (an export's and the import pending file's): every field, keys sorted."""
    return json.dumps(unit.to_dict(), ensure_ascii=False, sort_keys=True)


def export_runs(store: StoreCore, out: IO[str], *, namespaces: Iterable[str]) -> int:
    """Write every run record of ``namespaces`` (runs and reviews) as ``{"run": ...}`` lines; return how many."""
    count = 0
    for ns in namespaces:
        with store.lock:
            records = [r for page in store.run_records.pages(ns) for r in page]
        for record in sorted(records, key=lambda r: (r.started_at, r.run_id)):
            # the record exactly as the journal stores it (key order kept: a breakdown's order is its rank order)
            out.write(f'{{"{RUN_KEY}": {record.to_json()}}}\n')
            count += 1
    return count


def read_backup(lines: Iterable[str]) -> tuple[list[MemoryUnit], list[RunRecord]]:
    """Parse a backup (JSONL): its memory units and its run records, every line validated, blank lines skipped.

    Raises:
        InvalidMemoryError: a line is not JSON, not a valid unit, or not a valid run record; the message
            names the line.
    """
    units: list[MemoryUnit] = []
    runs: list[RunRecord] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as e:
            raise InvalidMemoryError(f"line {number}: not JSON ({e})") from e
        except RecursionError as e:  # json parses nested arrays and objects recursively
            raise InvalidMemoryError(f"line {number}: JSON nested too deeply") from e
        try:
            if isinstance(data, dict) and set(data) == {RUN_KEY}:
                runs.append(RunRecord.model_validate(data[RUN_KEY]))
            else:
                units.append(MemoryUnit.from_dict(data))
        except (InvalidMemoryError, ValueError) as e:  # pydantic's ValidationError is a ValueError
            raise InvalidMemoryError(f"line {number}: {' '.join(str(e).split())[:300]}") from e
    return units, runs


@backend_errors
def import_units(
    store: StoreCore,
    units: Iterable[MemoryUnit],
    *,
    runs: Iterable[RunRecord] = (),
    namespace: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    replace: bool = False,
) -> ImportReport:
    """Write ``units`` (and the journal's ``runs``) exactly as given, all or nothing (``namespace``: into it).

    For restoring a backup or moving a store (see ``hindsight export``/``import``):
    no task-type normalisation, no dedupe, no confidence caps (but untrusted text that reads like an
    instruction is tagged ``suspicious`` and capped, as on every write); archived units go
    straight to the archive; only the content is re-embedded. Every unit is read
    and checked before anything is written. A unit whose id is already stored
    with the same data is skipped; with other data it is refused unless
    ``replace=True`` (an explicit overwrite): an import never silently replaces
    a stored unit. An embedded store writes the units to a pending file first and
    rolls a killed import forward when the directory is opened again; a database
    writes them in one transaction after checking the ids again under the lock of
    every namespace involved (a killed import leaves nothing of itself). A unit whose
    content carries no information (``"ok"``, ``"好的"``) is left out and counted in
    ``refused`` (logged), rather than failing the import.

    ``runs`` are run records of a backup made with the journal (``hindsight export
    --journal``): checked with the units (a run id already journaled with other data is
    refused unless ``replace``), written after them.

    Raises:
        InvalidMemoryError: a unit is invalid (nothing was written).
        ConfigurationError: ids already stored with other data and ``replace`` is false (nothing was written).
        StoreError: the backend failed.
    """
    for name, given in (("units", units), ("runs", runs)):
        if isinstance(given, str | bytes | bytearray | MemoryUnit | RunRecord) or not isinstance(given, Iterable):
            raise ConfigurationError(f"import_units: {name} must be an iterable of records, got {type(given).__name__}")
    latest: dict[str, MemoryUnit] = {}
    refused: list[str] = []
    for unit in units:
        if not isinstance(unit, MemoryUnit):
            raise ConfigurationError(f"import_units takes MemoryUnit objects, got {type(unit).__name__}")
        if not informative(unit.content):
            refused.append(unit.memory_id)
            continue
        unit = clamp_future(unit)  # a future stamp would never decay
        flagged = flag_suspicious(unit, store.policy)  # untrusted text that reads like an instruction
        if flagged is not unit:
            logger.warning("import: memory %s from %s reads like an instruction: tagged suspicious, capped",
                           unit.memory_id, unit.source)  # fmt: skip
            unit = flagged
        if namespace is not None:
            unit = unit.evolve(namespace=store.namespace_or_default(namespace))
        latest[unit.memory_id] = unit  # a later line wins
    if refused:
        logger.warning(
            "import: refused %d unit(s) whose content carries no information (e.g. %s)", len(refused), refused[0]
        )
    todo = list(latest.values())
    records = {
        (r.namespace, r.run_id): r
        for r in (
            r if namespace is None else r.model_copy(update={"namespace": store.namespace_or_default(namespace)})
            for r in runs
        )
    }
    with store.lock:
        fresh, new_runs = _to_write(store, todo, records, replace)
        if not store.backend.single_writer:  # other processes write too: check again and write in one plan
            done, per_ns, fresh, new_runs = _import_in_one_plan(store, todo, records, replace, fresh, progress)
        else:
            per_ns = {}
            pending = store.persist_directory if fresh else None
            if pending is not None:  # the units, durably, before the first write: a killed import rolls forward
                _directory.begin_import(pending, (_line(u) for u in fresh))
            done = 0
            for start in range(0, len(fresh), _BATCH):
                done += _import_batch(store, fresh[start : start + _BATCH], per_ns)
                if progress is not None:
                    progress("import", done, len(fresh))
            if pending is not None:
                _directory.end_import(pending)
            if new_runs:
                store.run_records.write(new_runs)
    if records:
        logger.info("import: %d run record(s) journaled, %d unchanged", len(new_runs), len(records) - len(new_runs))
    return ImportReport(
        imported=done,
        namespaces=per_ns,
        unchanged=len(todo) - len(fresh),
        refused=len(refused),
        runs=len(new_runs),
        runs_unchanged=len(records) - len(new_runs),
    )


def _to_write(
    store: StoreCore, todo: list[MemoryUnit], records: dict[tuple[str, str], RunRecord], replace: bool
) -> tuple[list[MemoryUnit], list[RunRecord]]:
    """The units and run records not already stored exactly as given; a clash is refused unless ``replace``.

    Raises:
        ConfigurationError: an id is already stored with other data and ``replace`` is false.
    """
    stored = _stored(store, todo)
    clashes = [u.memory_id for u in todo if u.memory_id in stored and stored[u.memory_id] != u]
    journaled = _journaled(store, list(records.values()))
    clashes += [r.run_id for key, r in records.items() if key in journaled and journaled[key] != r]
    if clashes and not replace:
        raise ConfigurationError(
            f"{len(clashes)} id(s) already stored with other data (e.g. {clashes[0]}); nothing was "
            "imported. Pass replace=True (hindsight import --replace) to overwrite them"
        )
    new_runs = [r for key, r in records.items() if journaled.get(key) != r]
    return [u for u in todo if stored.get(u.memory_id) != u], new_runs


def _import_in_one_plan(
    store: StoreCore,
    todo: list[MemoryUnit],
    records: dict[tuple[str, str], RunRecord],
    replace: bool,
    fresh: list[MemoryUnit],
    progress: Callable[[str, int, int], None] | None,
) -> tuple[int, dict[str, int], list[MemoryUnit], list[RunRecord]]:
    """Import into a store other processes write (a database): all of it in one write plan, or nothing.

    The units are embedded first, outside any lock; then one plan holding the lock of every
    namespace involved (on a database: one transaction) checks the ids again — a unit another
    process stored meanwhile with other data is a clash like any other, refused unless
    ``replace`` — and writes the units and run records. A process killed at any point leaves
    the store as it was before the import, or with all of it.
    """
    vectors = dict(zip((u.memory_id for u in fresh), _embed_all(store, fresh, progress), strict=True))
    for u in todo:  # the collections a plan writes are created (committed) before it
        store.collection(u.namespace, "archive" if u.status == "archived" else "memories", create=True)
    for ns, _ in records:
        store.collection(ns, "journal", create=True)

    def plan() -> tuple[int, dict[str, int], list[MemoryUnit], list[RunRecord]]:
        now, new_runs = _to_write(store, todo, records, replace)
        late = [u for u in now if u.memory_id not in vectors or vectors[u.memory_id][0] != u.content]
        if late:  # changed since the first check (only with replace): embedded under the lock
            logger.info("import: %d unit(s) changed by another process meanwhile; embedding them now", len(late))
            fresh_vectors = _write_ops.embed_batched(store, [u.content for u in late])
            vectors.update({u.memory_id: (u.content, v) for u, v in zip(late, fresh_vectors, strict=True)})
        per_ns: dict[str, int] = {}
        for start in range(0, len(now), _BATCH):
            batch = now[start : start + _BATCH]
            for ns, n in _write_ops.write_exact(store, batch, [vectors[u.memory_id][1] for u in batch]).items():
                per_ns[ns] = per_ns.get(ns, 0) + n
            if progress is not None:
                progress("import", start + len(batch), len(now))
        if new_runs:
            store.run_records.write(new_runs)
        return len(now), per_ns, now, new_runs

    keys = {u.namespace for u in todo} | {ns for ns, _ in records}
    done, per_ns, written, new_runs = store.backend.atomic_all(sorted(keys), plan)
    logger.info("import: %d unit(s) written in one transaction (%d already stored as given)", done, len(todo) - done)
    return done, per_ns, written, new_runs


def _embed_all(
    store: StoreCore, units: list[MemoryUnit], progress: Callable[[str, int, int], None] | None
) -> list[tuple[str, Any]]:
    """``(content, float32 vector)`` of every unit, embedded in batches (progress reported as ``embed``)."""
    out: list[tuple[str, Any]] = []
    for start in range(0, len(units), _BATCH):
        batch = units[start : start + _BATCH]
        vectors = np.asarray(_write_ops.embed_batched(store, [u.content for u in batch]), dtype=np.float32)
        out.extend((u.content, v) for u, v in zip(batch, vectors, strict=True))
        if progress is not None:
            progress("embed", start + len(batch), len(units))
    return out


def _chunks(pairs: Iterable[tuple[_K, str]]) -> Iterator[tuple[_K, list[str]]]:
    """The ids of ``(key, id)`` pairs grouped by key, at most 1000 at a time (one read each)."""
    by_key: dict[_K, list[str]] = {}
    for key, i in pairs:
        by_key.setdefault(key, []).append(i)
    for key, ids in by_key.items():
        for start in range(0, len(ids), 1000):
            yield key, ids[start : start + 1000]


def _journaled(store: StoreCore, records: list[RunRecord]) -> dict[tuple[str, str], RunRecord]:
    chunks = _chunks((r.namespace, r.run_id) for r in records)
    return {(ns, r.run_id): r for ns, ids in chunks for r in store.run_records.read(ns, ids=ids)}


def _stored(store: StoreCore, units: list[MemoryUnit]) -> dict[str, MemoryUnit]:
    chunks = _chunks((u.namespace, u.memory_id) for u in units)
    return {u.memory_id: u for ns, ids in chunks for u in store.get_many(ids, namespace=ns)}


def _in_other_collection(store: StoreCore, units: list[MemoryUnit]) -> set[str]:
    """Ids of ``units`` still stored in the collection they do not belong in (an import's move cut short).

    An import writes a unit into its collection (memories, or archive for ``archived``), then
    deletes it from the other one; a crash in between leaves the id in both, the new copy
    identical to the file's. The roll-forward must redo such a unit even though it reads as stored.
    """
    found: set[str] = set()
    others: list[tuple[tuple[str, Role], str]] = [
        ((u.namespace, "memories" if u.status == "archived" else "archive"), u.memory_id) for u in units
    ]
    for (ns, role), ids in _chunks(others):
        col = store.collection(ns, role)
        if col is not None:
            found.update(col.exists(ids))
    return found


def finish_interrupted_import(store: StoreCore) -> None:
    """Roll forward an import a crash interrupted (its pending file is still there)."""
    if store.persist_directory is None:
        return
    path = _directory.pending_import(store.persist_directory)
    if path is None:
        return
    with path.open(encoding="utf-8") as fh:
        units = list({u.memory_id: u for u in read_backup(fh)[0]}.values())  # a later line wins
    per_ns: dict[str, int] = {}
    with store.lock:
        stored = _stored(store, units)
        doubled = _in_other_collection(store, units)
        # what reached the store is not written twice, unless its move out of the other collection was cut short
        todo = [u for u in units if stored.get(u.memory_id) != u or u.memory_id in doubled]
        logger.warning(
            "finishing an interrupted import into %s: %d of %d unit(s) still to write",
            store.persist_directory,
            len(todo),
            len(units),
        )
        for start in range(0, len(todo), _BATCH):
            _import_batch(store, todo[start : start + _BATCH], per_ns)
    _directory.end_import(store.persist_directory)


def _import_batch(store: StoreCore, units: list[MemoryUnit], per_ns: dict[str, int]) -> int:
    vectors = _write_ops.embed_batched(store, [u.content for u in units])
    for ns, n in _write_ops.write_exact(store, units, vectors).items():
        per_ns[ns] = per_ns.get(ns, 0) + n
    return len(units)
