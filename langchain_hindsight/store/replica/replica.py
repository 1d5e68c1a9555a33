"""The store's derived data, one owner: every namespace's lexical index, recall mirror, cached units and files.

A :class:`Replica` belongs to one ``MemoryStore``. It holds, per namespace, the
copies recall reads from instead of the backend (the lexical index, the recall
mirror, the unit cache, the change feed of a shared server) and the state of
their snapshot files in an embedded store's directory. The store tells it what
it wrote (:meth:`Replica.reindex`), when a write may have stopped half-way
(:meth:`Replica.distrust`), when a namespace is dropped (:meth:`Replica.reset`)
and when it closes (:meth:`Replica.save`); nothing else reads or writes a
derived file.

The trust rule: a snapshot file is loaded only when the clean-close stamp found
at open vouches for it (written by a session that closed cleanly, unchanged
since; see ``store._directory``) and this store has not erased it since; the file's own
checks (record count, a sample of the indexed memories) come on top. Anything
else is rebuilt from the backend. The first write to a namespace erases its
snapshots (after applying the write to what was loaded), so a crash can leave a
missing file but never a stale one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_hindsight.embeddings.local import EmbedderIdentity
from langchain_hindsight.errors import HindsightError, StoreError
from langchain_hindsight.store._collections import Collection, Role, collection_name, namespaces
from langchain_hindsight.store._directory import SUMMARY_FILE
from langchain_hindsight.store.backend import Backend, ChromaBackend
from langchain_hindsight.store.replica.feed import ChangeFeed, open_change_feed
from langchain_hindsight.store.replica.files import drop_snapshot
from langchain_hindsight.store.replica.lexical import (
    LexicalIndex,
    active_texts,
    load_snapshot,
    record_text,
    refresh_lexical,
    save_snapshot,
    snapshot_path,
)
from langchain_hindsight.store.replica.records import (
    MIRROR_MAX_ROWS,
    Mirror,
    build_mirror,
    load_mirror,
    mirror_path,
    refresh_mirror,
    save_mirror,
)
from langchain_hindsight.store.replica.summary import read_summary, summary_entry, write_summary
from langchain_hindsight.store.replica.units import UnitCache
from langchain_hindsight.types import MemoryUnit

__all__ = ["Replica"]

logger = logging.getLogger(__name__)

_SnapshotKind = tuple[str, Mapping[str, Any], Callable[[str], Path | None], set[str], Callable[..., bool]]
"""What close saves of one kind of derived index: name, held indexes, snapshot path, fresh set, saver."""


class Replica:
    """Where recall reads from: the derived copies of one store's data (see the module docstring).

    Args:
        backend: The store's backend (its directory, whether it is the only writer, the stamp's word).
        collection: Opens a namespace's collection of a role without creating it (``None``: there is none).
        checked: The collection once its recorded embedder is the store's (raises otherwise).
        identity: The store's embedder identity.
        fetch: The stored units among some ids of a namespace (missing ones skipped).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        collection: Callable[[str, Role], Collection | None],
        checked: Callable[[Collection | None], Collection | None],
        identity: Callable[[], EmbedderIdentity],
        fetch: Callable[[list[str], str], list[MemoryUnit]],
    ) -> None:
        self.backend = backend
        self.directory = backend.persist_directory
        self._collection = collection
        self._checked = checked
        self._identity = identity
        self._fetch = fetch
        self.lexical: dict[str, LexicalIndex] = {}
        self.mirrors: dict[str, Mirror] = {}
        # recently recalled units; only with a single writer, whose writes all pass reindex (which evicts)
        self.units = UnitCache(4096 if backend.single_writer else 0)
        self.max_rows = MIRROR_MAX_ROWS
        """Largest namespace (active memories) mirrored for recall (0: never; see ``records``)."""
        self.write_failed = False
        """A write may have stopped half-way: the close refreshes no summary entry."""
        self.feeds: dict[str, ChangeFeed] = {}
        self._snapshot_fresh: set[str] = set()  # namespaces whose index equals its snapshot on disk
        self._mirror_fresh: set[str] = set()  # namespaces whose mirror equals its snapshot on disk
        self._dropped: set[str] = set()  # namespaces whose snapshots this store already erased
        self._open_counts: dict[str, int] = {}  # record count of a namespace with a snapshot, before any write
        self._mirror_off: set[str] = set()  # namespaces too large to mirror (checked once a session)

    # ------------------------------------------------------------------ namespaces
    def opened(self, namespace: str, col: Collection) -> None:
        """A memories collection was opened: note its count if it has snapshots (checked at the first write)."""
        paths = [self.snapshot_path(namespace), self.mirror_path(namespace)]
        if namespace not in self._open_counts and any(p is not None and p.exists() for p in paths):
            self._open_counts[namespace] = col.count()

    def reset(self, namespace: str) -> None:
        """``namespace`` was dropped: forget everything derived from it and erase its files."""
        self.lexical.pop(namespace, None)
        self.mirrors.pop(namespace, None)
        self._mirror_off.discard(namespace)
        self._open_counts.pop(namespace, None)
        self.units.clear(namespace)
        self._dropped.discard(namespace)
        self.drop(namespace)
        self.feeds.pop(namespace, None)

    def revector(self, namespace: str) -> None:
        """``namespace``'s vectors are about to change (a re-embedding): drop what holds the old ones."""
        self.drop(namespace)
        self.mirrors.pop(namespace, None)
        self.units.clear(namespace)

    def clear(self) -> None:
        """Let go of every derived copy held in memory (the store closed)."""
        self.lexical.clear()
        self.mirrors.clear()
        self.units.clear()

    # ------------------------------------------------------------------ files
    def snapshot_path(self, namespace: str) -> Path | None:
        """Where an embedded store keeps ``namespace``'s lexical snapshot (``None`` without a directory)."""
        if self.directory is None:
            return None
        return snapshot_path(self.directory, collection_name(namespace, "memories"))

    def mirror_path(self, namespace: str) -> Path | None:
        """Where an embedded store keeps ``namespace``'s recall mirror snapshot (``None`` without a directory)."""
        if self.directory is None:
            return None
        return mirror_path(self.directory, collection_name(namespace, "memories"))

    def trusted(self, path: Path, namespace: str) -> bool:
        """Whether the snapshot at ``path`` may be loaded (the trust rule of the module docstring)."""
        if self.directory is None or namespace in self._dropped:
            return False
        return path.relative_to(self.directory).as_posix() in self.backend.trusted_files

    def drop(self, namespace: str) -> None:
        """Erase ``namespace``'s snapshots once they no longer match the data (first write of this store)."""
        self._snapshot_fresh.discard(namespace)
        self._mirror_fresh.discard(namespace)
        if self.directory is not None and namespace not in self._dropped:
            for path in (self.snapshot_path(namespace), self.mirror_path(namespace)):
                if path is not None:
                    drop_snapshot(path)
            self._dropped.add(namespace)

    def distrust(self, namespaces: Iterable[str]) -> None:
        """After a failure that may have stopped a write half-way: forget the lexical indexes and recall mirrors
        (rebuilt from the data on use) and erase the snapshots of ``namespaces`` (every one the store opened),
        so none outlives data it no longer matches.
        """  # noqa: D205
        self.write_failed = True
        self.lexical.clear()
        self.mirrors.clear()
        self._mirror_fresh.clear()
        for namespace in set(namespaces):
            try:
                self.drop(namespace)
            except StoreError:
                logger.warning("could not erase the snapshots of %r", namespace, exc_info=True)

    def save(self) -> None:
        """Save each namespace's lexical index and recall mirror that differ from their snapshots.

        At close; failures are only logged (a snapshot is an optimisation: the next open rebuilds).
        """
        kinds: list[_SnapshotKind] = [
            ("lexical snapshot", self.lexical, self.snapshot_path, self._snapshot_fresh, save_snapshot),
            ("recall mirror", self.mirrors, self.mirror_path, self._mirror_fresh, self._save_mirror),
        ]
        for what, held, path_of, fresh, save in kinds:
            for namespace, derived in held.items():
                path = path_of(namespace)
                if path is None or namespace in fresh:
                    continue
                try:
                    col = self._collection(namespace, "memories")
                except HindsightError:
                    logger.warning("%s of %r not saved", what, namespace, exc_info=True)
                    continue
                if col is not None and save(derived, path, col):
                    fresh.add(namespace)

    def save_summary(
        self, *, count: Callable[[str], dict[tuple[str, ...], int] | None], runs: Callable[[str], int]
    ) -> None:
        """At close, before the backend closes: rewrite the statistics summary a writing session leaves current.

        See ``replica.summary`` for which entries are kept, counted again (``count``: a namespace's counts by
        status, task type and source, ``None`` when they cannot be had cheaply; ``runs``: its journalled runs)
        or dropped. Does nothing for a session that wrote nothing (the file stays as it was), a store without
        a directory, or another backend than Chroma. Failures are logged: without the backend's word the close
        removes the file.
        """
        backend, directory = self.backend, self.directory
        if not isinstance(backend, ChromaBackend) or directory is None or not backend.wrote:
            return
        written = backend.written_collections
        if written is None or self.write_failed:
            return
        as_of = backend.write_count
        try:
            previous = read_summary(directory) if SUMMARY_FILE in backend.trusted_files else None
            present = namespaces(backend)
            stats: dict[str, dict[str, Any]] = {}
            for ns in present:
                entry = previous.stats.get(ns) if previous is not None else None
                changed = {role for role in ("memories", "archive", "journal") if collection_name(ns, role) in written}
                if entry is not None and not changed:
                    stats[ns] = entry
                elif entry is not None and changed == {"journal"}:
                    stats[ns] = {**entry, "runs": runs(ns)}
                else:
                    counts = count(ns)
                    if counts is not None:
                        stats[ns] = summary_entry(counts, runs(ns))
            if not stats:
                return
            write_summary(directory, present, stats)
        except Exception:  # the summary is a shortcut: the close goes on without it
            logger.warning("statistics summary of %s not kept", directory, exc_info=True)
            return
        backend.summary_current(as_of)

    def _save_mirror(self, mirror: Mirror, path: Path, col: Collection) -> bool:
        """:func:`save_mirror`, unless writes took the namespace past :attr:`max_rows` (then erased)."""
        if len(mirror) + len(mirror.stale) > self.max_rows:
            drop_snapshot(path)
            return False
        return save_mirror(mirror, path, col)

    # ------------------------------------------------------------------ what recall reads
    def change_feed(self, namespace: str) -> ChangeFeed | None:
        """The namespace's change feed, or ``None`` when this store is the only writer."""
        if self.backend.single_writer:
            return None  # the directory lock (or memory) guarantees no other writer
        if self.backend.answers_lexical:
            return None  # the database answers the lexical arm: there is no in-process index to keep in step
        feed = self.feeds.get(namespace)
        if feed is None:
            feed = self.feeds[namespace] = open_change_feed(self.backend, namespace)
        return feed

    def recall_mirror(self, namespace: str) -> Mirror | None:
        """``namespace``'s recall mirror, current (loaded, or built on first use), or ``None`` when it has none.

        Only an embedded store mirrors (it is the only writer of its directory), and only namespaces of at
        most :attr:`max_rows` records. The embedder check runs first, as for any search.
        """
        path = self.mirror_path(namespace)
        if path is None or namespace in self._mirror_off or self.max_rows <= 0:
            return None
        col = self._checked(self._collection(namespace, "memories"))
        if col is None:
            return None
        mirror = self.mirrors.get(namespace)
        identity = self._identity()
        if mirror is None and self.trusted(path, namespace):
            mirror = load_mirror(path, col, str(identity))
            if mirror is not None:
                self._mirror_fresh.add(namespace)
        if mirror is None:
            mirror = build_mirror(col, str(identity), identity.dimension, self.max_rows)
            if mirror is None:
                self._mirror_off.add(namespace)
                return None
        self.mirrors[namespace] = mirror
        refresh_mirror(mirror, col)
        if len(mirror) > self.max_rows:  # the namespace grew past the limit: back to the backend's index
            self.mirrors.pop(namespace)
            self._mirror_fresh.discard(namespace)
            self._mirror_off.add(namespace)
            drop_snapshot(path)
            return None
        return mirror

    def held_mirror(self, namespace: str, *, load: bool) -> Mirror | None:
        """``namespace``'s recall mirror, current (stale rows read again), if held; with ``load``, also one
        loaded from a trusted snapshot. Never built (that would read every active record).
        """  # noqa: D205
        mirror = self.mirrors.get(namespace)
        path = self.mirror_path(namespace)
        if mirror is None and (not load or path is None or namespace in self._mirror_off or self.max_rows <= 0):
            return None
        col = self._collection(namespace, "memories")
        if col is None:
            return None
        if mirror is None:
            if path is None or not self.trusted(path, namespace):
                return None
            mirror = load_mirror(path, col, str(self._identity()))
            if mirror is None:
                return None
            self.mirrors[namespace] = mirror
            self._mirror_fresh.add(namespace)
        refresh_mirror(mirror, col)
        return mirror

    def lexical_index(self, namespace: str) -> LexicalIndex:
        """``namespace``'s lexical index, current: loaded from a trusted snapshot, or built (then kept in step)."""
        path = self.snapshot_path(namespace)
        if path is not None and namespace not in self.lexical and self.trusted(path, namespace):
            col = self._collection(namespace, "memories")
            index = load_snapshot(path, col) if col is not None else None
            if index is not None:
                self.lexical[namespace] = index
                self._snapshot_fresh.add(namespace)
                return index
        feed = self.change_feed(namespace)
        mirror = self.mirrors.get(namespace) if feed is None else None

        def scan() -> Any:
            if mirror is not None and not mirror.stale:  # the mirror holds every active record: no second read
                return ((i, record_text(d, m)) for i, d, m in mirror.records())
            return active_texts(self._collection(namespace, "memories"))

        index = self.lexical[namespace] = refresh_lexical(
            self.lexical.get(namespace),
            feed,
            namespace,
            fetch=lambda ids: self._fetch(ids, namespace),
            scan=scan,
        )
        return index

    # ------------------------------------------------------------------ the store wrote
    def reindex(self, namespace: str, upserts: Sequence[MemoryUnit] = (), deletes: Sequence[str] = ()) -> None:
        """The store wrote ``upserts`` and deleted ``deletes`` in ``namespace``: keep every copy in step.

        What is held (or, at the first write, loaded from a trusted snapshot as it was before the write) is
        patched; the snapshots on disk are erased; other writers of a shared server are told.
        """
        written = [*(u.memory_id for u in upserts), *deletes]
        index = self.lexical.get(namespace)
        mirror = self.mirrors.get(namespace)
        if mirror is None:
            mirror = self._mirror_before_write(namespace, written)
        if index is None:
            index = self._snapshot_before_write(namespace, written)
        if index is not None:  # not built yet: it will be built from the backend when first searched
            index.delete(deletes)
            index.upsert(upserts)
        if mirror is not None:
            mirror.forget(deletes)
            mirror.apply(upserts)
        self.units.evict(namespace, written)
        self.drop(namespace)
        feed = self.change_feed(namespace)
        if feed is not None:
            try:
                feed.publish(written)
            except StoreError as e:
                raise StoreError(f"could not publish the change to namespace {namespace!r}: {e}") from e

    def _snapshot_before_write(self, namespace: str, written: list[str]) -> LexicalIndex | None:
        """At the first write, the snapshot as it was before it (checked against the count at open), or ``None``.

        The write is then applied to it and the result saved at close, so a session
        that only writes still leaves a current snapshot.
        """
        path = self.snapshot_path(namespace)
        count = self._open_counts.get(namespace)
        if path is None or count is None or not self.trusted(path, namespace):
            return None
        col = self._collection(namespace, "memories")
        if col is None:
            return None
        index = load_snapshot(path, col, count=count, skip=written)
        if index is not None:
            self.lexical[namespace] = index
        return index

    def _mirror_before_write(self, namespace: str, written: list[str]) -> Mirror | None:
        """Like :meth:`_snapshot_before_write`, for the recall mirror."""
        path = self.mirror_path(namespace)
        count = self._open_counts.get(namespace)
        if path is None or count is None or not self.trusted(path, namespace):
            return None
        if namespace in self._mirror_off or self.max_rows <= 0:
            return None
        col = self._collection(namespace, "memories")
        if col is None:
            return None
        mirror = load_mirror(path, col, str(self._identity()), count=count, skip=written)
        if mirror is not None:
            self.mirrors[namespace] = mirror
        return mirror
