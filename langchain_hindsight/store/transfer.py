"""JSONL export and import of memory units (and, optionally, the run journal) that round-trip exactly.

A backup has one line per unit, ``MemoryUnit.to_dict()`` (every field, timestamps to the microsecond), and, made
with the journal, one ``{"run": {...}}`` line per run record as the journal stores it, so ``explain``, ``report``
and review work on the restored store. Vectors are derived data: an import re-embeds the content.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any, TypeVar

import numpy as np

from langchain_hindsight._text import informative
from langchain_hindsight.errors import ConfigurationError, InvalidMemoryError
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.store import _store_writes as _write_ops
from langchain_hindsight.store import reads as _read_ops
from langchain_hindsight.store._core import StoreCore, backend_errors
from langchain_hindsight.store._directory import Intent
from langchain_hindsight.store._naming import Role
from langchain_hindsight.types import MemoryUnit
from langchain_hindsight.writes import clamp_future, flag_suspicious

__all__ = ["ImportReport", "export_runs", "export_units", "finish_interrupted_import", "import_units", "read_backup"]

logger = logging.getLogger(__name__)

_K = TypeVar("_K")
Progress = Callable[[str, int, int], None]
Runs = dict[tuple[str, str], RunRecord]
"""Run records by ``(namespace, run_id)``."""

_BATCH = 256
_RUN_KEY = "run"
"""The one key of a run-record line in a backup (a memory line is the unit's own fields)."""


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What :func:`import_units` wrote, per namespace."""

    imported: int
    namespaces: dict[str, int] = field(default_factory=dict)
    unchanged: int = 0
    """Units already stored exactly as in the file (not written again)."""
    refused: int = 0
    """Units left out because their content carries no information (``"ok"``, ``"好的"``): never stored."""
    runs: int = 0
    """Run records written to the journal (a backup made with the journal)."""
    runs_unchanged: int = 0
    """Run records already in the journal exactly as in the file."""


def export_units(store: StoreCore, out: IO[str], *, namespaces: Iterable[str], progress: Progress | None = None) -> int:
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
            out.write(f'{{"{_RUN_KEY}": {record.to_json()}}}\n')
            count += 1
    return count


def read_backup(lines: Iterable[str]) -> tuple[list[MemoryUnit], list[RunRecord]]:
    """Parse a backup (JSONL): its memory units and its run records, every line validated, blank lines skipped.

    Raises:
        InvalidMemoryError: a line is not JSON, not a valid unit, or not a valid run record (the message names it).
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
            if isinstance(data, dict) and set(data) == {_RUN_KEY}:
                runs.append(RunRecord.model_validate(data[_RUN_KEY]))
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
    progress: Progress | None = None,
    replace: bool = False,
) -> ImportReport:
    """Write ``units`` (and the journal's ``runs``) exactly as given, all or nothing (``namespace``: into it).

    For restoring a backup or moving a store (``hindsight export``/``import``): no task-type normalisation,
    no dedupe, no confidence caps, archived units straight to the archive; only untrusted text that reads like
    an instruction is tagged ``suspicious`` and capped, as on every write, and a unit whose content carries no
    information (``"ok"``, ``"好的"``) is left out, logged and counted in ``refused``. Every unit and run record
    (``runs``: a backup made with ``--journal``) is checked before anything is written: one stored with the
    same data is skipped, one with other data refused unless ``replace=True``. An embedded store writes the
    units durably to a pending file first and rolls a killed import forward when the directory is reopened; a
    database embeds first, then checks again and writes in one transaction under the lock of every namespace
    involved (a killed import leaves nothing of itself).

    Raises:
        InvalidMemoryError: a unit is invalid (nothing was written).
        ConfigurationError: ids already stored with other data and ``replace`` is false (nothing was written).
        StoreError: the backend failed.
    """
    for name, given in (("units", units), ("runs", runs)):
        if isinstance(given, str | bytes | bytearray | MemoryUnit | RunRecord) or not isinstance(given, Iterable):
            raise ConfigurationError(f"import_units: {name} must be an iterable of records, got {type(given).__name__}")
    into = None if namespace is None else store.namespace_or_default(namespace)
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
        latest[unit.memory_id] = flagged if into is None else flagged.evolve(namespace=into)  # a later line wins
    if refused:
        logger.warning(
            "import: refused %d unit(s) whose content carries no information (e.g. %s)", len(refused), refused[0]
        )
    todo = list(latest.values())
    if into is not None:
        runs = (r.model_copy(update={"namespace": into}) for r in runs)
    records = {(r.namespace, r.run_id): r for r in runs}
    with store.lock:
        if store.backend.single_writer:
            fresh, new_runs = _to_write(store, todo, records, replace)
            pending = store.persist_directory if fresh else None
            if pending is not None:  # the units, durably, before the first write: a killed import rolls forward
                Intent.IMPORT.write(pending, "".join(_line(u) + "\n" for u in fresh).encode("utf-8"))
            per_ns = _write(store, fresh, functools.partial(_embed, store), progress)
            if pending is not None:
                Intent.IMPORT.clear(pending)
            store.run_records.write(new_runs)
        else:  # other processes write too: embed outside any lock, check again and write in one plan
            fresh, new_runs, per_ns = _import_in_one_plan(store, todo, records, replace, progress)
    if records:
        logger.info("import: %d run record(s) journaled, %d unchanged", len(new_runs), len(records) - len(new_runs))
    return ImportReport(
        imported=len(fresh),
        namespaces=per_ns,
        unchanged=len(todo) - len(fresh),
        refused=len(refused),
        runs=len(new_runs),
        runs_unchanged=len(records) - len(new_runs),
    )


def _to_write(
    store: StoreCore, todo: list[MemoryUnit], records: Runs, replace: bool
) -> tuple[list[MemoryUnit], list[RunRecord]]:
    """The units and run records not already stored exactly as given; a clash is refused unless ``replace``."""
    stored = _stored(store, todo)
    journaled = {(ns, r.run_id): r for ns, ids in _chunks(records) for r in store.run_records.read(ns, ids=ids)}
    clashes = [u.memory_id for u in todo if u.memory_id in stored and stored[u.memory_id] != u]
    clashes += [r.run_id for key, r in records.items() if key in journaled and journaled[key] != r]
    if clashes and not replace:
        raise ConfigurationError(
            f"{len(clashes)} id(s) already stored with other data (e.g. {clashes[0]}); nothing was "
            "imported. Pass replace=True (hindsight import --replace) to overwrite them"
        )
    return [u for u in todo if stored.get(u.memory_id) != u], [r for k, r in records.items() if journaled.get(k) != r]


def _import_in_one_plan(
    store: StoreCore, todo: list[MemoryUnit], records: Runs, replace: bool, progress: Progress | None
) -> tuple[list[MemoryUnit], list[RunRecord], dict[str, int]]:
    """Import into a store other processes write (a database): embed outside any lock, then one write plan.

    The plan holds the lock of every namespace involved (one transaction) and checks the ids again, so a unit
    another process stored meanwhile is a clash like any other. Returns what it wrote.
    """
    fresh, _ = _to_write(store, todo, records, replace)  # refused before anything is embedded
    vectors: dict[str, tuple[str, Any]] = {}
    for start in range(0, len(fresh), _BATCH):
        batch = fresh[start : start + _BATCH]
        embedded = np.asarray(_embed(store, batch), dtype=np.float32)
        vectors.update((u.memory_id, (u.content, v)) for u, v in zip(batch, embedded, strict=True))
        if progress is not None:
            progress("embed", start + len(batch), len(fresh))
    for u in todo:  # the collections a plan writes are created (committed) before it
        store.collection(u.namespace, "archive" if u.status == "archived" else "memories", create=True)
    for ns, _ in records:
        store.collection(ns, "journal", create=True)

    def plan() -> tuple[list[MemoryUnit], list[RunRecord], dict[str, int]]:
        now, new_runs = _to_write(store, todo, records, replace)
        late = [u for u in now if u.memory_id not in vectors or vectors[u.memory_id][0] != u.content]
        if late:  # changed since the first check (only with replace): embedded under the lock
            logger.info("import: %d unit(s) changed by another process meanwhile; embedding them now", len(late))
            vectors.update({u.memory_id: (u.content, v) for u, v in zip(late, _embed(store, late), strict=True)})
        per_ns = _write(store, now, lambda batch: [vectors[u.memory_id][1] for u in batch], progress)
        store.run_records.write(new_runs)
        return now, new_runs, per_ns

    keys = {u.namespace for u in todo} | {ns for ns, _ in records}
    written, new_runs, per_ns = store.backend.atomic_all(sorted(keys), plan)
    logger.info("import: %d unit(s) written in one transaction (%d already stored as given)",
                len(written), len(todo) - len(written))  # fmt: skip
    return written, new_runs, per_ns


def _embed(store: StoreCore, units: list[MemoryUnit]) -> list[list[float]]:
    return _write_ops.embed_batched(store, [u.content for u in units])


def _write(
    store: StoreCore,
    units: list[MemoryUnit],
    vectors: Callable[[list[MemoryUnit]], list[Any]],
    progress: Progress | None,
) -> dict[str, int]:
    """Write ``units`` exactly as given, a batch at a time (``vectors(batch)``: theirs); return units per namespace."""
    per_ns: dict[str, int] = {}
    for start in range(0, len(units), _BATCH):
        batch = units[start : start + _BATCH]
        for ns, n in _write_ops.write_exact(store, batch, vectors(batch)).items():
            per_ns[ns] = per_ns.get(ns, 0) + n
        if progress is not None:
            progress("import", start + len(batch), len(units))
    return per_ns


def _chunks(pairs: Iterable[tuple[_K, str]]) -> Iterator[tuple[_K, list[str]]]:
    """The ids of ``(key, id)`` pairs grouped by key, at most 1000 at a time (one read each)."""
    by_key: dict[_K, list[str]] = {}
    for key, i in pairs:
        by_key.setdefault(key, []).append(i)
    for key, ids in by_key.items():
        for start in range(0, len(ids), 1000):
            yield key, ids[start : start + 1000]


def _stored(store: StoreCore, units: list[MemoryUnit]) -> dict[str, MemoryUnit]:
    chunks = _chunks((u.namespace, u.memory_id) for u in units)
    return {u.memory_id: u for ns, ids in chunks for u in store.get_many(ids, namespace=ns)}


def _in_other_collection(store: StoreCore, units: list[MemoryUnit]) -> set[str]:
    """Ids of ``units`` still stored in the collection they do not belong in (an import's move cut short).

    An import writes a unit into its collection (memories, or archive for ``archived``), then deletes it from
    the other one; a crash in between leaves the id in both, so the roll-forward redoes it though it reads as stored.
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
    directory = store.persist_directory
    if directory is None:
        return
    pending = Intent.IMPORT.read(directory)
    if pending is None:
        Intent.IMPORT.clear(directory)  # only a half-written copy can be there: the import had not started
        return
    lines = pending.decode("utf-8").split("\n")
    units = list({u.memory_id: u for u in read_backup(lines)[0]}.values())  # a later line wins
    with store.lock:
        stored = _stored(store, units)
        doubled = _in_other_collection(store, units)
        # what reached the store is not written twice, unless its move out of the other collection was cut short
        todo = [u for u in units if stored.get(u.memory_id) != u or u.memory_id in doubled]
        logger.warning(
            "finishing an interrupted import into %s: %d of %d unit(s) still to write", directory, len(todo), len(units)
        )
        _write(store, todo, functools.partial(_embed, store), None)
    Intent.IMPORT.clear(directory)
