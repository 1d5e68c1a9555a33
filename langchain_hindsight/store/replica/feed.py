"""The change feed that keeps several stores sharing one Chroma server consistent (see :class:`ChangeFeed`)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_hindsight.errors import StoreError
from langchain_hindsight.store._naming import collection_name
from langchain_hindsight.store.backend import Backend, Records

__all__ = ["ChangeFeed", "open_change_feed"]


@dataclass
class ChangeFeed:
    """Per-writer change markers in a side collection (``collection``) of a shared server.

    Each writer (one store object) owns one record ``writer`` with metadata ``rev`` (its write counter) and
    ``log`` (JSON ``[[rev, [ids...]], ...]`` of its latest revisions, at most ``log_ids`` ids; a reader further
    behind rebuilds). Only the owner writes it, so writers never overwrite each other's markers. Markers are
    published *after* the data is written, so a reader that sees one finds the data.
    """

    collection: Records
    writer: str = field(default_factory=lambda: f"w-{uuid.uuid4().hex}")
    log_ids: int = 256
    rev: int = 0
    _log: list[tuple[int, list[str]]] = field(default_factory=list)

    def publish(self, ids: Sequence[str]) -> None:
        """Announce that this writer changed ``ids`` (call after the data write)."""
        self.rev += 1
        changed = list(dict.fromkeys(ids))
        if len(changed) > self.log_ids:  # too many to list: readers behind this revision rebuild
            self._log = [(self.rev, ["*"])]
        else:
            self._log.append((self.rev, changed))
            while sum(len(i) for _, i in self._log) > self.log_ids and len(self._log) > 1:
                self._log.pop(0)
        marker: dict[str, int | str] = {"rev": self.rev, "log": json.dumps(self._log)}
        self.collection.upsert(ids=[self.writer], embeddings=[[1.0]], metadatas=[marker])

    def poll(self, seen: dict[str, int]) -> tuple[dict[str, int], set[str] | None]:
        """Other writers' markers against ``seen``: the new ``seen`` and the ids to read again (``None``: the logs
        no longer cover what changed, the caller rebuilds).
        """  # noqa: D205
        rows = self.collection.get(include=["metadatas"])
        current = dict(seen)
        changed: set[str] | None = set()
        for writer, meta in zip(rows["ids"], rows["metadatas"] or [], strict=True):
            if writer == self.writer or not meta:
                continue
            rev = int(meta["rev"])
            before = seen.get(writer, 0)
            current[writer] = rev
            if rev <= before or changed is None:
                continue
            log = {int(r): ids for r, ids in json.loads(str(meta["log"]))}
            needed = range(before + 1, rev + 1)
            if any(r not in log or "*" in log[r] for r in needed):
                changed = None
            else:
                changed.update(i for r in needed for i in log[r])
        return current, changed

    def snapshot(self) -> dict[str, int]:
        """Every other writer's current revision (take it *before* reading the data)."""
        return self.poll({})[0]


def open_change_feed(backend: Backend, namespace: str) -> ChangeFeed:
    """The lexical change feed of ``namespace`` on a shared server (a collection of its own beside the memories)."""
    name = "hslex" + collection_name(namespace, "memories")[2:]
    try:
        col = backend.get_or_create(name, {"hindsight_namespace": namespace, "hindsight_role": "lexical_feed"})
    except StoreError as e:
        raise StoreError(f"could not open the change feed of namespace {namespace!r}: {e}") from e
    return ChangeFeed(col)
