"""``hindsight search``'s quick path, and how a search's results are printed.

A store that closed cleanly is searched from its derived files
(:class:`~langchain_hindsight.store.replica.snapshot.StoreSnapshot`: the lexical index
and the recall mirror, trusted through the clean-close stamp) without starting
Chroma, while a background thread loads the model and embeds the query. :func:`quick`
answers so, or returns ``None`` and the command opens the store
(:mod:`~langchain_hindsight.cli.search`: a server, a principal, a store written since).
Both ways rank with
:func:`~langchain_hindsight.recall.engine.recall`, the computation ``HindsightRetriever``
delegates to, so the answer is the retriever's. This module imports neither Chroma nor
the store nor LangChain: only the engine, the replica's readers and the store's built-in
model without its LangChain base
(:func:`~langchain_hindsight.embeddings.models.builtin_model`: the same vectors).
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from pathlib import Path

from langchain_hindsight._text import clean_text
from langchain_hindsight.cli._output import clip, emit_json, table
from langchain_hindsight.embeddings.models import QueryEmbedder
from langchain_hindsight.recall.engine import RecallSettings, RecallSource, recall
from langchain_hindsight.recall.ranking import served_mask
from langchain_hindsight.store import holds_store
from langchain_hindsight.store.replica.files import DerivedFiles
from langchain_hindsight.store.replica.snapshot import SnapshotFiles
from langchain_hindsight.types import ScoredMemory

__all__ = ["print_results", "quick", "recall_for"]

logger = logging.getLogger(__name__)


def quick(args: argparse.Namespace) -> int | None:
    """``hindsight search`` answered from the store's trusted snapshot; ``None`` when it cannot be (open the store).

    Raises:
        StoreLockedError: the store is open in another process (as opening it would).
    """
    scored = _from_snapshot(args)
    return None if scored is None else print_results(scored, args, shared=False)


def print_results(scored: list[ScoredMemory], args: argparse.Namespace, *, shared: bool) -> int:
    """Print a search's results as ``hindsight search`` does (``shared``: a namespace column); returns 0.

    By default only the results the default floor (``RecallSettings().min_relevance``, the one
    place the default lives) would serve are listed (:func:`~langchain_hindsight.recall.ranking.served_mask`,
    the engine's own test) and stderr says how many more were found below it; ``--all`` lists
    those too, each marked ``served: no``.
    """
    mask = served_mask(scored, RecallSettings().min_relevance)
    served = {id(m) for m, ok in zip(scored, mask, strict=True) if ok}

    def _served(m: ScoredMemory) -> bool:
        return id(m) in served

    below = sum(not _served(m) for m in scored)
    if below and not getattr(args, "all", False):
        scored = [m for m in scored if _served(m)]
        print(
            f"{below} more below the relevance floor (recall would not serve them): --all lists them", file=sys.stderr
        )
    if args.json:
        emit_json(
            [
                {
                    "memory": m.memory,
                    "score": m.score,
                    "similarity": m.similarity,
                    "served": _served(m),
                    "breakdown": m.breakdown,
                }
                for m in scored
            ]
        )
        return 0
    rows = []
    for i, m in enumerate(scored, start=1):
        u = m.memory
        row = [i, f"{m.score:.3f}", f"{m.similarity:.3f}", "yes" if _served(m) else "no"]
        row += [f"{u.score_confidence:.2f}", u.task_type, u.memory_id]
        rows.append([*row, *([u.namespace] if shared else []), clip(u.content)])
    headers = [
        "#",
        "score",
        "sim",
        "served",
        "conf",
        "task_type",
        "memory_id",
        *(["namespace"] if shared else []),
        "content",
    ]
    print(table(headers, rows) if rows else "no match")
    return 0


def _from_snapshot(args: argparse.Namespace) -> list[ScoredMemory] | None:
    """The operator's search of an embedded store answered from its trusted snapshot, or ``None`` (open it)."""
    if args.server or args.database_url or getattr(args, "principal", None) or getattr(args, "config", None):
        return None
    path = Path(args.path)
    if not holds_store(path):
        return None  # opening it reports the missing store (nothing may be written there, not even a lock)
    namespace = args.namespace or "default"
    with DerivedFiles.closed_store(path) as derived:  # the reader the live store uses, under the lock
        files = SnapshotFiles.locate(derived, namespace)
        if files is None:
            return None
        embeddings = getattr(args, "embeddings", None) or files.default_embeddings()
        if embeddings is None:
            return None
        warm = _embed_in_background(embeddings, args.query)
        snapshot = files.load(embeddings)
    if snapshot is not None and args.task_type is None:
        # recall will infer the query's task type: the vocabulary compiles its rules (~40 ms) on first use,
        # here while the model loads instead of after it
        snapshot.vocabulary.infer(args.query)
    warm.join()
    if snapshot is None:
        return None
    logger.debug("searching %s/%s from its snapshot", path, namespace)
    resident = getattr(args, "resident", None)
    if resident is not None:  # the program frees the snapshot and its models by ending (cli.main.run)
        resident.append(snapshot)
    return recall_for(snapshot, args, namespace)


def recall_for(source: RecallSource, args: argparse.Namespace, namespace: str | None) -> list[ScoredMemory]:
    """The search's recall: the retriever's defaults with no relevance floor (weak matches are shown too)."""
    settings = RecallSettings(k=args.k, min_relevance=None)
    return recall(source, settings, args.query, task_type=args.task_type, namespace=namespace).result.memories


def _embed_in_background(embeddings: QueryEmbedder, query: str) -> threading.Thread:
    """Start loading the model and embedding ``query`` (as recall will) while the files load.

    The embedders of this package remember recent queries, so recall then finds
    the vector ready; a failure here is left for recall to raise.
    """

    def run() -> None:
        try:
            embeddings.embed_query(clean_text(query))
        except Exception:  # recall embeds again and reports the error
            logger.debug("background query embedding failed", exc_info=True)

    thread = threading.Thread(target=run, name="hindsight-search-embed", daemon=True)
    thread.start()
    return thread
