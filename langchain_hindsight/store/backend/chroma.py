"""The Chroma :class:`~langchain_hindsight.store.backend.base.Backend`: embedded in a directory, or a server.

:meth:`ChromaBackend.embedded` opens ``chromadb.PersistentClient`` on a directory
after taking the directory's single-writer lock (two processes writing one
embedded directory silently lose vectors); :meth:`ChromaBackend.server` (or the
constructor with any chromadb client) shares a ``chroma run`` server between
processes. Every Chroma, SQLite, file-system or HTTP failure becomes a
:class:`~langchain_hindsight.errors.StoreError` naming the operation.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from langchain_hindsight.errors import BackendError, HindsightError, StoreError
from langchain_hindsight.store._directory import HeldDirectory
from langchain_hindsight.store.backend import _scrub
from langchain_hindsight.store.backend.base import Backend, Include, Metadata, Records, Rows, Vector

__all__ = ["ChromaBackend", "ChromaRecords"]

logger = logging.getLogger(__name__)


_P = ParamSpec("_P")
_R = TypeVar("_R")


@contextmanager
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


def _writes(method: Callable[Concatenate[ChromaRecords, _P], _R]) -> Callable[Concatenate[ChromaRecords, _P], _R]:
    """A write of the collection: noted first (a write that fails may have written part), failures mapped."""

    @functools.wraps(method)
    def wrapper(self: ChromaRecords, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        self._on_write(self.name)
        with backend_errors(method.__name__):
            return method(self, *args, **kwargs)

    return wrapper


QUERY_RETRIES = 4
"""How many times :meth:`ChromaRecords.query` asks again while Chroma's index is behind its records (0.75 s)."""


def _index_behind(error: Exception) -> bool:
    """Whether ``error`` is Chroma's "Error finding id": its vector index has not caught up with its records yet."""
    from chromadb.errors import InternalError

    return isinstance(error, InternalError) and "Error finding id" in str(error)


def _open_client(path: Path) -> Any:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def _load_index(col: Any) -> None:
    """Load ``col``'s vector index (a nearest-neighbour query does), so a client writes it now if it will.

    Measured: a rebuilt index whose writes still wait in Chroma's log is persisted
    empty and written again by the next client that loads it, from an
    uninitialised buffer that can hold the text of a memory just forgotten (about
    one scrub in five left it on disk). Loading it before the last wipe of unused
    index space leaves nothing to rewrite.
    """
    first = col.get(limit=1, include=["embeddings"])
    embeddings = first.get("embeddings")
    if first["ids"] and embeddings is not None and len(embeddings):
        col.query(query_embeddings=[list(embeddings[0])], n_results=1, include=[])


class ChromaRecords(Records):
    """A chromadb collection behind the :class:`Records` interface (errors mapped to :class:`StoreError`).

    Args:
        collection: The chromadb collection.
        on_write: Called with the collection's name before every write (the backend's record that its
            session changed data, and where).
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
        rows = self.collection.get(
            ids=None if ids is None else list(ids),
            where=where,
            where_document=where_document,
            include=list(include),
            limit=limit,
            offset=offset,
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
        """See :meth:`Records.query`.

        A query Chroma answers with "Error finding id" is asked again, up to :data:`QUERY_RETRIES` times: Chroma
        raises it when its vector index has not yet caught up with ids its metadata already holds, as when another
        process writes the collection on a shared server at the same moment. Failing the query would fail the
        write whose dedupe asked it.
        """
        attempt = 0
        while True:
            try:
                res = self.collection.query(
                    query_embeddings=np.asarray(query_embeddings, dtype=np.float32),
                    n_results=n_results,
                    where=where,
                    include=list(include),
                )
                return dict(res)
            except Exception as e:
                if attempt == QUERY_RETRIES or not _index_behind(e):
                    raise
                logger.info("chroma query on %r: the index is behind its records (%s); asking again", self.name, e)
                time.sleep(0.05 * 2**attempt)
                attempt += 1

    @_writes
    def upsert(
        self,
        *,
        ids: Sequence[str],
        embeddings: Sequence[Vector] | Any,
        documents: Sequence[str] | None = None,
        metadatas: Sequence[Metadata] | None = None,
    ) -> None:
        """See :meth:`Records.upsert`."""
        self.collection.upsert(ids=list(ids), embeddings=_float32(embeddings), documents=documents, metadatas=metadatas)

    @_writes
    def update(
        self,
        *,
        ids: Sequence[str],
        embeddings: Sequence[Vector] | Any | None = None,
        documents: Sequence[str] | None = None,
        metadatas: Sequence[Metadata] | None = None,
    ) -> None:
        """See :meth:`Records.update`."""
        vectors = None if embeddings is None else _float32(embeddings)
        self.collection.update(ids=list(ids), embeddings=vectors, documents=documents, metadatas=metadatas)

    @_writes
    def delete(self, *, ids: Sequence[str]) -> None:
        """See :meth:`Records.delete`."""
        if ids:
            self.collection.delete(ids=list(ids))

    @backend_errors("count")
    def count(self) -> int:
        """See :meth:`Records.count`."""
        return int(self.collection.count())

    @_writes
    def modify(self, *, name: str | None = None, metadata: Metadata | None = None) -> None:
        """See :meth:`Records.modify`."""
        if name is not None:
            self._on_write(name)  # renamed: the collection now called ``name`` changed too
        self.collection.modify(name=name, metadata=None if metadata is None else dict(metadata))


def _float32(embeddings: Any) -> Any:
    """``embeddings`` as one float32 matrix, the values Chroma stores (a list it converts row by row in Python)."""
    try:
        matrix = np.asarray(embeddings, dtype=np.float32)
    except (TypeError, ValueError):  # ragged, or not numbers: Chroma's own validation reports it
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
        """Rebuild ``rebuild`` (``None``: every hindsight collection), then scrub the files (see ``_scrub``).

        The client is closed for the file scrub and a fresh one opened.
        """
        if self.directory is None:
            raise StoreError("only an embedded Chroma directory can be erased")
        self.directory.wrote(None)
        directory = self.directory.path
        with backend_errors("scrub"):
            if rebuild is None:
                rebuild = [c.name for c in self._client.list_collections() if "hindsight_role" in (c.metadata or {})]
            for name in rebuild:
                _scrub.rebuild_collection(self._client, self._client.get_collection(name, embedding_function=None))
            self._client.close()
            try:
                removed = _scrub.erase_files(directory)
            finally:
                self._client = _open_client(directory)
            for name in rebuild:  # see _load_index; close() zeroes whatever a later persist writes there
                _load_index(self._client.get_collection(name, embedding_function=None))
            _scrub.wipe_unused_index_space(directory)
        logger.debug(
            "scrubbed %s: rebuilt %d collection(s), removed %d segment dir(s)",
            directory,
            len(rebuild),
            len(removed),
        )

    def recover_interrupted(self) -> bool:
        """Finish or discard collection rebuilds a crash interrupted; True if there were any."""
        with backend_errors("recover"):
            recovered = _scrub.recover_rebuilds(self._client)
        if recovered:
            self._wrote(None)
        return recovered

    def close(self) -> None:
        """Close the client this backend opened, zero the index files' unused space, release the directory.

        The directory (:class:`~langchain_hindsight.store._directory.HeldDirectory`) is told whether the
        client closed without error.
        """
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
            _scrub.wipe_unused_index_space(self.directory.path)
        except OSError:
            logger.warning("could not wipe unused index space in %s", self.directory.path, exc_info=True)
        self.directory.close(clean=closed)
