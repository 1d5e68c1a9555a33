"""The Chroma :class:`~langchain_hindsight.store.backend.base.Backend`: embedded in a directory, or a server.

:meth:`ChromaBackend.embedded` opens ``chromadb.PersistentClient`` on a directory after taking the directory's
single-writer lock (two processes writing one embedded directory silently lose vectors); :meth:`ChromaBackend.server`
(or the constructor with any chromadb client) shares a ``chroma run`` server between processes. Every Chroma,
SQLite, file-system or HTTP failure becomes a :class:`~langchain_hindsight.errors.StoreError` naming the operation.

:meth:`ChromaBackend.erase` is what makes ``forget`` a hard delete in an embedded directory. Deleting a record
through Chroma's API is only logical. Measured on chromadb 1.5.9:

* the HNSW index marks the vector deleted but keeps its bytes in ``data_level0.bin``;
* ``chroma.sqlite3`` keeps the document text and metadata in freed pages, in the write-ahead ``embeddings_queue``
  until the vector segment catches up, and as trigrams in the FTS5 index until it is merged;
* ``delete_collection`` removes the rows but leaves the segment directory (with every vector) on disk;
* hnswlib allocates its element buffer without zeroing it and writes the whole capacity to ``data_level0.bin``:
  the unused slots hold whatever the process's heap held before, which can include the text of a memory just
  deleted.

So erasing means: rebuild each affected collection (copy the live records into a fresh collection, drop the old
one), then with the client closed merge the FTS index, ``VACUUM`` with ``secure_delete``, remove segment
directories that no collection owns, and zero the index files' unused slots. A crash mid-way is finished at the
next open (the store's scrub intent; :meth:`ChromaBackend.recover_interrupted` for a rebuild).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3
import struct
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langchain_hindsight.errors import BackendError, HindsightError, StoreError
from langchain_hindsight.store._directory import HeldDirectory, zero_tail
from langchain_hindsight.store.backend.base import Backend, Include, Metadata, Records, Rows, Vector

__all__ = ["REBUILD_SUFFIX", "ChromaBackend", "ChromaRecords"]

logger = logging.getLogger(__name__)

REBUILD_SUFFIX = "-rebuild"
"""Suffix of the temporary collection a rebuild copies into (canonical names end in a hex digest)."""
_FTS = "embedding_fulltext_search"
_SEGMENT_DIR = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
"""A segment directory's name: its segment's id (a UUID, as Chroma writes it)."""
_COLUMNS: tuple[Include, ...] = ("embeddings", "documents", "metadatas")


@contextlib.contextmanager
def backend_errors(what: str) -> Iterator[None]:
    """Re-raise a Chroma, SQLite, file-system or HTTP failure inside the block as :class:`BackendError`."""
    try:
        yield
    except HindsightError:
        raise
    except Exception as e:
        import httpx
        from chromadb.errors import ChromaError  # here: chromadb is imported on first use

        if isinstance(e, ChromaError | sqlite3.Error | OSError | httpx.HTTPError):
            raise BackendError(f"chroma {what} failed: {e}") from e
        raise


QUERY_RETRIES = 4
"""How many times :meth:`ChromaRecords.query` asks again (0.75 s in all) while Chroma's vector index is behind ids its
metadata holds ("Error finding id", as when another process writes on a shared server): failing the query would fail
the write whose dedupe asked it."""


def _open_client(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


class ChromaRecords(Records):
    """A chromadb collection behind the :class:`Records` interface (errors mapped to :class:`StoreError`).

    ``on_write`` is called with the collection's name before every write (the backend's record of where its
    session changed data).
    """

    def __init__(self, collection: Any, on_write: Callable[[str], None]) -> None:
        self.collection = collection
        self._on_write = on_write

    @property
    def name(self) -> str:
        """The collection's name."""
        return str(self.collection.name)

    @property
    def instance(self) -> str:
        """Chroma's id of the collection (a collection created again under the same name has another)."""
        return str(self.collection.id)

    @property
    def metadata(self) -> dict[str, Any]:
        """The collection's metadata (a copy)."""
        return dict(self.collection.metadata or {})

    @backend_errors("get")
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
        ids = None if ids is None else list(ids)
        rows = self.collection.get(
            ids=ids, where=where, where_document=where_document, include=list(include), limit=limit, offset=offset
        )
        return dict(rows)

    @backend_errors("query")
    def query(
        self,
        *,
        query_embeddings: Sequence[Vector],
        n_results: int,
        where: Mapping[str, Any] | None = None,
        include: Sequence[Include] = ("documents", "metadatas", "distances"),
    ) -> Rows:
        """See :meth:`Records.query` (asked again while Chroma's index is behind, see :data:`QUERY_RETRIES`)."""
        from chromadb.errors import InternalError

        vectors = np.asarray(query_embeddings, dtype=np.float32)
        attempt = 0
        while True:
            try:
                res = self.collection.query(
                    query_embeddings=vectors, n_results=n_results, where=where, include=list(include)
                )
                return dict(res)
            except InternalError as e:  # "Error finding id": the vector index has not caught up with its records
                if attempt == QUERY_RETRIES or "Error finding id" not in str(e):
                    raise
                logger.info("chroma query on %r: the index is behind its records (%s); asking again", self.name, e)
                time.sleep(0.05 * 2**attempt)
                attempt += 1

    def _write_columns(
        self,
        ids: Sequence[str],
        embeddings: Sequence[Vector] | Any | None,
        documents: Sequence[str] | None,
        metadatas: Sequence[Metadata] | None,
        *,
        whole: bool,
    ) -> None:
        """See :meth:`Records._write_columns` (noted first, as every write: one that fails may have written part)."""
        self._on_write(self.name)
        with backend_errors("upsert" if whole else "update"):
            write = self.collection.upsert if whole else self.collection.update
            write(ids=list(ids), embeddings=_float32(embeddings), documents=documents, metadatas=metadatas)

    def delete(self, *, ids: Sequence[str]) -> None:
        """See :meth:`Records.delete`."""
        self._on_write(self.name)
        with backend_errors("delete"):
            if ids:
                self.collection.delete(ids=list(ids))

    @backend_errors("count")
    def count(self) -> int:
        """See :meth:`Records.count`."""
        return int(self.collection.count())

    def modify(self, *, name: str | None = None, metadata: Metadata | None = None) -> None:
        """See :meth:`Records.modify`."""
        self._on_write(self.name)
        if name is not None:
            self._on_write(name)  # renamed: the collection now called ``name`` changed too
        with backend_errors("modify"):
            self.collection.modify(name=name, metadata=None if metadata is None else dict(metadata))


def _float32(embeddings: Any) -> Any:
    """``embeddings`` as one float32 matrix, the values Chroma stores (a list it converts row by row in Python);
    ``None`` and what is not a matrix of numbers pass unchanged (Chroma's own validation reports the latter).
    """  # noqa: D205
    try:
        matrix = np.asarray(embeddings, dtype=np.float32)
    except (TypeError, ValueError):
        return embeddings
    return matrix if matrix.ndim == 2 and len(matrix) else embeddings


class ChromaBackend(Backend):
    """Chroma behind the :class:`~langchain_hindsight.store.backend.base.Backend` interface.

    Example:
        >>> backend = ChromaBackend.embedded("./memory_db")  # doctest: +SKIP
        >>> store = MemoryStore(backend=backend)  # doctest: +SKIP

    Args:
        client: A chromadb client (``HttpClient`` for a server, ``EphemeralClient`` for a throwaway
            database). Not closed by :meth:`close` unless the backend opened it.
    """

    def __init__(self, client: Any) -> None:
        self._client = client
        self._closed = False

    @classmethod
    def embedded(cls, path: str | os.PathLike[str]) -> ChromaBackend:
        """An embedded Chroma database in ``path``, holding the directory's single-writer lock until :meth:`close`.

        Raises:
            StoreLockedError: the directory is open elsewhere.
            StoreError: Chroma could not open it.
        """
        directory = Path(path).expanduser().resolve()
        try:
            held = HeldDirectory(directory)  # before the client opens: it touches chroma.sqlite3
        except OSError as e:  # the lock is released again; StoreLockedError passes
            raise BackendError(f"could not open Chroma at {directory}: {e}") from e
        try:
            client = _open_client(directory)
        except Exception as e:
            held.release()
            raise BackendError(f"could not open Chroma at {directory}: {e}") from e
        backend = cls(client)
        backend.directory = held
        return backend

    @classmethod
    def server(cls, host: str = "localhost", port: int = 8000) -> ChromaBackend:
        """A Chroma server (``chroma run --path DIR --port PORT``), shared by any number of processes."""
        import chromadb

        with backend_errors("connect"):
            return cls(chromadb.HttpClient(host=host, port=port))

    # ------------------------------------------------------------------ Backend
    def _wrote(self, name: str | None) -> None:
        """About to write the collection ``name`` (``None``: any collection may change): noted on the directory."""
        if self.directory is not None:
            self.directory.wrote(name)

    def _wrap(self, col: Any) -> ChromaRecords:
        return ChromaRecords(col, self._wrote)

    def get_collection(self, name: str) -> ChromaRecords | None:
        """See :meth:`Backend.get_collection`."""
        from chromadb.errors import ChromaError

        with backend_errors("get_collection"):
            try:
                return self._wrap(self._client.get_collection(name, embedding_function=None))
            except (ChromaError, ValueError):  # chroma raises several types for "missing"
                return None

    def create_collection(self, name: str, metadata: Metadata, *, like: Records | None = None) -> ChromaRecords:
        """See :meth:`Backend.create_collection`."""
        configuration = {"hnsw": {"space": "cosine"}}
        if isinstance(like, ChromaRecords):  # its index space and parameters (a re-embedding's side collection)
            configuration = like.collection.configuration
        self._wrote(name)
        with backend_errors("create_collection"):
            col = self._client.create_collection(
                name, metadata=dict(metadata) or None, configuration=configuration, embedding_function=None
            )
        return self._wrap(col)

    def get_or_create(self, name: str, metadata: Metadata) -> ChromaRecords:
        """See :meth:`Backend.get_or_create` (one Chroma call, counted as a write: the store calls it to create)."""
        self._wrote(name)
        with backend_errors("get_or_create"):
            col = self._client.get_or_create_collection(
                name, metadata=dict(metadata), configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
            )
        return self._wrap(col)

    @backend_errors("list_collections")
    def list_collections(self) -> list[Records]:
        """See :meth:`Backend.list_collections`."""
        return [self._wrap(c) for c in self._client.list_collections()]

    def delete_collection(self, name: str) -> None:
        """See :meth:`Backend.delete_collection`."""
        self._wrote(name)
        with backend_errors("delete_collection"):
            self._client.delete_collection(name)

    @property
    def max_batch_size(self) -> int:
        """Chroma's limit on records per write."""
        with backend_errors("get_max_batch_size"):
            return int(self._client.get_max_batch_size())

    @property
    def single_writer(self) -> bool:
        """True for an embedded directory (its lock excludes every other writer)."""
        return self.directory is not None

    def erase(self, rebuild: Sequence[str] | None) -> None:
        """See :meth:`Backend.erase` (``None``: every hindsight collection); a fresh client after the file scrub."""
        if self.directory is None:
            raise StoreError("only an embedded Chroma directory can be erased")
        self.directory.wrote(None)
        directory = self.directory.path
        with backend_errors("scrub"):
            if rebuild is None:
                rebuild = [c.name for c in self.list_collections() if "hindsight_role" in c.metadata]
            for name in rebuild:
                self._rebuild(name)
            self._client.close()
            try:
                _erase_files(directory)
            finally:
                self._client = _open_client(directory)
            for name in rebuild:  # see _load_index; close() zeroes whatever a later persist writes there
                _load_index(self._client.get_collection(name, embedding_function=None))
            _wipe_unused_index_space(directory)
        logger.debug("scrubbed %s: rebuilt %d collection(s)", directory, len(rebuild))

    def _rebuild(self, name: str) -> None:
        """Replace collection ``name`` by a fresh copy of its live records (same metadata and configuration).

        Copy first, drop second, rename third: until the old collection is dropped it stays authoritative;
        after that the complete copy is. :meth:`recover_interrupted` finishes or discards an interrupted rebuild.

        Raises:
            StoreError: the copy is incomplete (the original is left untouched).
        """
        col = self._wrap(self._client.get_collection(name, embedding_function=None))
        tmp_name = name + REBUILD_SUFFIX
        if self.get_collection(tmp_name) is not None:
            self.delete_collection(tmp_name)
        tmp = self.create_collection(tmp_name, col.metadata, like=col)
        for rows in col.pages(include=_COLUMNS, size=min(self.max_batch_size, 2000)):
            tmp.upsert(**{c: rows[c] for c in ("ids", *_COLUMNS)})
        if tmp.count() != col.count():
            self.delete_collection(tmp_name)
            raise StoreError(f"rebuild of collection {name!r} copied {tmp.count()} of {col.count()} records")
        self.delete_collection(name)
        tmp.modify(name=name)

    def recover_interrupted(self) -> bool:
        """Finish or discard collection rebuilds a crash interrupted; True if there were any."""
        with backend_errors("recover"):
            names = {c.name for c in self.list_collections()}
            interrupted = sorted(n for n in names if n.endswith(REBUILD_SUFFIX))
            for tmp_name in interrupted:
                base = tmp_name.removesuffix(REBUILD_SUFFIX)
                if base in names:  # the copy may be partial; the original is intact
                    logger.warning("discarding an interrupted rebuild of collection %r", base)
                    self.delete_collection(tmp_name)
                else:  # the original was dropped after a complete copy: finish the rename
                    logger.warning("completing an interrupted rebuild of collection %r", base)
                    self._wrap(self._client.get_collection(tmp_name, embedding_function=None)).modify(name=base)
        return bool(interrupted)

    def close(self) -> None:
        """Close the client this backend opened, zero the index files' unused space, release the directory."""
        if self._closed:
            return
        self._closed = True
        if self.directory is None:
            return
        closed = True
        try:
            self._client.close()
        except Exception:
            closed = False
            logger.debug("chroma client close failed", exc_info=True)
        try:  # hnswlib writes uninitialised heap bytes into unused slots: zero them
            _wipe_unused_index_space(self.directory.path)
        except OSError:
            logger.warning("could not wipe unused index space in %s", self.directory.path, exc_info=True)
        self.directory.close(clean=closed)


# ------------------------------------------------------------------ erasing an embedded directory
def _load_index(col: Any) -> None:
    """Load ``col``'s vector index (a nearest-neighbour query does), so a client writes it now if it will.

    Measured: a rebuilt index whose writes still wait in Chroma's log is persisted empty and written again by the
    next client that loads it, from an uninitialised buffer that can hold the text of a memory just forgotten (about
    one scrub in five left it on disk). Loading it before the last wipe of unused index space leaves nothing to
    rewrite.
    """
    first = col.get(limit=1, include=["embeddings"])
    embeddings = first.get("embeddings")
    if first["ids"] and embeddings is not None and len(embeddings):
        col.query(query_embeddings=[list(embeddings[0])], n_results=1, include=[])


def _erase_files(directory: Path) -> None:
    """The file steps of an erase (see the module docstring), in an embedded directory whose client is closed.

    Raises:
        StoreError: the database could not be scrubbed.
    """
    db = directory / "chroma.sqlite3"
    if not db.exists():
        return
    try:
        with contextlib.closing(sqlite3.connect(str(db), isolation_level=None, timeout=30)) as con:
            con.execute("PRAGMA secure_delete=ON")
            has_fts = con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (_FTS,)).fetchone()
            if has_fts:
                con.execute(f"INSERT INTO {_FTS}({_FTS}) VALUES('optimize')")
            live = {str(row[0]) for row in con.execute("SELECT id FROM segments")}
            con.execute("VACUUM")
    except sqlite3.Error as e:
        raise StoreError(f"could not scrub {db}: {e}") from e
    for child in directory.iterdir():
        if child.is_dir() and _SEGMENT_DIR.fullmatch(child.name) and child.name not in live:
            for path in child.rglob("*"):  # zeros first: best effort against file recovery
                if path.is_file():
                    zero_tail(path, 0)
            shutil.rmtree(child)
            logger.debug("removed segment directory %s (no live segment owns it)", child)


def _wipe_unused_index_space(directory: Path) -> None:
    """Zero the unused slots of every HNSW segment file under ``directory`` (client closed).

    ``header.bin`` (chroma-hnswlib, version 1) starts with ``int32 version, u64 offset_level0, u64 max_elements, u64
    cur_element_count, u64 size_data_per_element``. Slots at and beyond ``cur_element_count`` in ``data_level0.bin``
    (and their 4-byte entries in ``length.bin``) are never read by hnswlib; they are overwritten with zeros. Files of
    another layout are left alone.
    """
    for header in directory.glob("*/header.bin"):
        raw = header.read_bytes()
        if len(raw) < 36:
            continue
        version, _offset, max_elements, count, per_element = struct.unpack_from("<iQQQQ", raw)
        if version != 1 or per_element <= 0 or count > max_elements:
            logger.debug("unknown HNSW header layout in %s: not wiped", header)
            continue
        for name, width in (("data_level0.bin", per_element), ("length.bin", 4)):
            path = header.parent / name
            if path.exists() and path.stat().st_size % width == 0:
                zero_tail(path, count * width)
