"""The store's derived data, one owner: every namespace's lexical index, recall mirror, cached units and files.

A :class:`Replica` belongs to one ``MemoryStore``. It holds, per namespace, the
copies recall reads from instead of the backend (the lexical index, the recall
mirror, the unit cache, the change feed of a shared Chroma server) and the state of
their snapshot files in an embedded store's directory. The store tells it what
it wrote (:meth:`Replica.reindex`), when a write may have stopped half-way
(:meth:`Replica.distrust`), when a namespace is dropped (:meth:`Replica.reset`),
what it counted for ``hindsight stats`` (:meth:`Replica.counted`) and when it
closes (:meth:`Replica.close`: the one moment a derived file is written, and the
stamp is told it may vouch for them); nothing else reads or writes a derived file.

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

from langchain_hindsight.embeddings.identity import EmbedderIdentity
from langchain_hindsight.errors import HindsightError, StoreError
from langchain_hindsight.store._collections import Collection, namespaces
from langchain_hindsight.store._naming import Role, collection_name
from langchain_hindsight.store.backend import Backend, ChromaBackend
from langchain_hindsight.store.replica.feed import ChangeFeed, open_change_feed
from langchain_hindsight.store.replica.files import DerivedFiles, drop_snapshot
from langchain_hindsight.store.replica.lexical import (
    LexicalIndex,
    active_texts,
    load_snapshot,
    record_text,
    refresh_lexical,
    save_snapshot,
)
from langchain_hindsight.store.replica.records import (
    MIRROR_MAX_ROWS,
    Mirror,
    build_mirror,
    load_mirror,
    refresh_mirror,
    save_mirror,
)
from langchain_hindsight.store.replica.summary import summary_entry
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
        reopen: Callable[[str], None] = lambda namespace: None,
    ) -> None:
        self.backend = backend
        held = backend.directory
        self.files = None if held is None else DerivedFiles(held.path, held.trusted)
        """The derived files of an embedded store's directory and the stamp's word at open (``None``: no directory)."""
        self.directory = None if held is None else held.path
        self._collection = collection
        self._checked = checked
        self._identity = identity
        self._fetch = fetch
        self._reopen = reopen
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
        self._counted: dict[str, tuple[dict[str, Any], int]] = {}  # statistics counted, and after how many writes

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
        self._counted.pop(namespace, None)
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
        return None if self.files is None else self.files.lexical_path(collection_name(namespace, "memories"))

    def mirror_path(self, namespace: str) -> Path | None:
        """Where an embedded store keeps ``namespace``'s recall mirror snapshot (``None`` without a directory)."""
        return None if self.files is None else self.files.mirror_path(collection_name(namespace, "memories"))

    def erase_unvouched(self) -> int:
        """Erase every derived file the stamp does not vouch for; return how many (for a scrub).

        Nothing is lost: such a file is never loaded (the next search rebuilds from the records), and a
        namespace held in memory from a rebuild is saved again at close. What it removes is text the data
        may no longer have, such as a unit forgotten through a Chroma server serving this directory.

        Raises:
            StoreError: a file could not be erased.
        """
        if self.files is None:
            return 0
        stale = self.files.unvouched()
        for path in stale:
            drop_snapshot(path)
        if stale:
            logger.info("erased %d derived file(s) the clean-close stamp did not vouch for", len(stale))
        return len(stale)

    def trusted(self, path: Path, namespace: str) -> bool:
        """Whether the snapshot at ``path`` may be loaded (the trust rule of the module docstring)."""
        return self.files is not None and namespace not in self._dropped and self.files.vouched(path)

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

    def counted(self, namespace: str, entry: Mapping[str, Any]) -> None:
        """The store counted ``namespace`` as ``hindsight stats`` prints it: kept for the summary at close."""
        if self.files is not None:
            self._counted[namespace] = (dict(entry), self._writes())

    def close(self, *, count: Callable[[str], dict[tuple[str, ...], int] | None], runs: Callable[[str], int]) -> None:
        """The store's close, before the backend closes: the one moment derived files are written.

        Saves the snapshots (:meth:`save`), rewrites or erases the statistics summary
        (:meth:`save_summary`), then vouches for what is on disk to the directory's stamp:
        a write that follows (through the backend, after this store closed) unvouches it.
        """
        self.save()
        if not self.save_summary(count=count, runs=runs):
            return
        held = self.backend.directory
        if held is not None:
            held.vouch(self._writes())

    def _writes(self) -> int:
        backend = self.backend
        return backend.write_count if isinstance(backend, ChromaBackend) else 0

    def save_summary(
        self, *, count: Callable[[str], dict[tuple[str, ...], int] | None], runs: Callable[[str], int]
    ) -> bool:
        """At close: rewrite the statistics summary this session leaves current, or erase it; ``False``: neither.

        See ``replica.summary`` for which entries are kept, counted again (``count``: a namespace's counts by
        status, task type and source, ``None`` when they cannot be had cheaply; ``runs``: its journalled runs),
        taken from what this session counted (:meth:`counted`) or dropped. A session that neither wrote nor
        counted leaves the file as it was. A summary that could be neither kept nor erased is logged, and
        the derived files then lose the stamp's word.
        """
        backend, files = self.backend, self.files
        if files is None or not isinstance(backend, ChromaBackend):
            return True
        if not backend.wrote and not self._counted:
            return True
        written = backend.written_collections if backend.wrote else frozenset()
        try:
            if written is None or self.write_failed:  # what changed is not known: nothing can be kept
                files.erase_summary()
                return True
            as_of = backend.write_count
            previous = files.summary()
            present = namespaces(backend)
            stats: dict[str, dict[str, Any]] = {}
            for ns in present:
                entry = previous.stats.get(ns) if previous is not None else None
                changed = {role for role in ("memories", "archive", "journal") if collection_name(ns, role) in written}
                fresh, counted_at = self._counted.get(ns, (None, -1))
                if fresh is not None and (counted_at == as_of or not changed):
                    stats[ns] = fresh
                elif entry is not None and not changed:
                    stats[ns] = entry
                elif entry is not None and changed == {"journal"}:
                    stats[ns] = {**entry, "runs": runs(ns)}
                else:
                    counts = count(ns)
                    if counts is not None:
                        stats[ns] = summary_entry(counts, runs(ns))
            files.erase_legacy()
            if stats:
                files.write_summary(present, stats, {ns: collection_name(ns, "memories") for ns in stats})
            else:
                files.erase_summary()
        except Exception:  # the summary is a shortcut: the close goes on without it
            logger.warning("statistics summary of %s not kept", files.directory, exc_info=True)
            try:
                files.erase_summary()
            except StoreError:
                logger.warning("could not erase the statistics summary of %s", files.directory, exc_info=True)
                return False
        return True

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
            return None  # the database answers the lexical arm itself
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
