"""Opening the store a ``hindsight`` command works on, as the operator or as one principal.

Without ``--principal`` a command sees the whole store (the operator's view).
With ``--principal NAME`` (grants from ``--config grants.toml``) every read goes
through the principal's :class:`~langchain_hindsight.sharing.access.ScopedMemory`:
``--namespace`` must be one it may read (its own by default), ``--all`` means
every namespace it may read, and a memory in any other namespace does not exist
for it. This module (Chroma, the store) is imported only by the commands that
open a store, never by ``hindsight --help`` or a usage error, and chromadb only
when a store is actually opened.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_hindsight.errors import ConfigurationError, MemoryNotFoundError, StoreError
from langchain_hindsight.sharing.principals import AccessPolicy, Principal
from langchain_hindsight.store import DATA_FILE, holds_store
from langchain_hindsight.store.memory_store import MemoryStore

if TYPE_CHECKING:
    from langchain_hindsight.sharing.access import ScopedMemory
    from langchain_hindsight.types import MemoryUnit

__all__ = ["View", "open_store", "open_view", "principal_of"]


def principal_of(args: argparse.Namespace) -> Principal | None:
    """The principal of ``--principal`` (grants from ``--config``), or ``None``.

    Without ``--config`` the principal owns ``--namespace`` (default: its name) and
    holds no grants.

    Raises:
        ConfigurationError: ``--config`` without ``--principal``, an unreadable
            config, or a principal it does not define.
    """
    name, config = getattr(args, "principal", None), getattr(args, "config", None)
    if name is None:
        if config:
            raise ConfigurationError("--config needs --principal NAME (the agent whose grants apply)")
        return None
    if config:
        return AccessPolicy.from_file(config).principal(name)
    return Principal(name, args.namespace or name)


def _check_store_directory(path: Path) -> None:
    """Refuse a path that holds no store, before anything opens it (opening would create one there).

    Raises:
        MemoryNotFoundError: ``path`` does not exist, is not a directory, or holds no store.
    """
    if not path.is_dir():
        raise MemoryNotFoundError(f"no store at {str(path)!r} (only 'import' creates a store)")
    if not holds_store(path):
        raise MemoryNotFoundError(
            f"{str(path)!r} is a directory but holds no hindsight store (no {DATA_FILE}); nothing was written "
            "there (only 'import' creates a store)"
        )


@contextmanager
def open_store(args: argparse.Namespace) -> Iterator[MemoryStore]:
    """The store of ``--path``, ``--server`` or ``--database-url``, default namespace ``--namespace`` (closed after)."""
    database_url = args.database_url
    if not args.server and not database_url and not getattr(args, "creates_store", False):
        _check_store_directory(Path(args.path))
    namespace = args.namespace or "default"
    if database_url:
        store = MemoryStore(
            database_url=database_url, namespace=namespace, embeddings=getattr(args, "embeddings", None)
        )
    elif args.server:
        host, _, port = args.server.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c in host for c in "/ @?#"):
            raise ConfigurationError(f"--server must be HOST:PORT, got {args.server!r}")
        import chromadb  # here, not at the top: only --server needs the HTTP client
        from chromadb.config import Settings

        try:
            client = chromadb.HttpClient(host=host, port=int(port), settings=Settings(anonymized_telemetry=False))
        except Exception as e:  # connection refused, bad host name, not a Chroma server, ...
            raise StoreError(f"cannot reach a Chroma server at {args.server}: {' '.join(str(e).split())[:200]}") from e
        store = MemoryStore(client=client, namespace=namespace, embeddings=getattr(args, "embeddings", None))
    else:
        store = MemoryStore(args.path, namespace=namespace, embeddings=getattr(args, "embeddings", None))
    try:
        yield store
    finally:
        store.close()


@dataclass(frozen=True)
class View:
    """The store as a command may see it: whole (no principal) or through a principal's grants."""

    store: MemoryStore
    scoped: ScopedMemory | None = None

    @property
    def namespace(self) -> str:
        """The namespace the command works on (``--namespace``, else the principal's own or ``default``)."""
        return self.store.namespace

    def namespaces(self, every: bool) -> list[str]:
        """``[namespace]``, or with ``every`` (``--all``) every namespace this view may read."""
        if not every:
            return [self.namespace]
        if self.scoped is None:
            return self.store.namespaces()
        present = set(self.store.namespaces())
        return [ns for ns in self.scoped.principal.readable if ns in present]

    def get(self, memory_id: str, *, explicit: bool) -> MemoryUnit:
        """A memory of :attr:`namespace`; for a principal without ``--namespace``, of any namespace it may read."""
        if self.scoped is None or explicit:
            return self.store.get(memory_id, namespace=self.namespace)
        return self.scoped.find(memory_id)


@contextmanager
def open_view(args: argparse.Namespace) -> Iterator[View]:
    """Open the store for a reading command; with ``--principal``, through its grants.

    Raises:
        AccessDeniedError: ``--namespace`` is not one the principal may read (nothing is opened).
        MemoryNotFoundError: ``--namespace`` names a namespace the store does not hold (a typo
            must not look like an empty namespace).
    """
    principal = principal_of(args)
    if principal is None:
        with open_store(args) as store:
            _check_namespace(store, args.namespace)
            yield View(store)
        return
    namespace = args.namespace or principal.namespace
    principal.check("read", namespace)
    # Here, not at the top: a principal's view pulls in the retriever (and with it langchain_core's
    # runnables, ~0.3 s CPU), which stats/show/export for the operator never need.
    from langchain_hindsight.sharing.access import ScopedMemory

    scoped_args = argparse.Namespace(**{**vars(args), "namespace": namespace})
    with open_store(scoped_args) as store:
        _check_namespace(store, args.namespace)
        yield View(store, ScopedMemory(store, principal))


def _check_namespace(store: MemoryStore, namespace: str | None) -> None:
    """Refuse an explicit ``--namespace`` the store does not hold, naming the ones it does."""
    if namespace is None:
        return
    present = store.namespaces()
    if namespace not in present:
        known = ", ".join(repr(ns) for ns in present[:20]) or "none"
        more = f" and {len(present) - 20} more" if len(present) > 20 else ""
        raise MemoryNotFoundError(f"no namespace {namespace!r} in this store (it holds: {known}{more})")
