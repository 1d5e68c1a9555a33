"""``hindsight search``'s quick path, and how a search's results are printed.

:func:`quick` answers from a cleanly closed embedded store's trusted snapshots
(:class:`~langchain_hindsight.store.replica.snapshot.StoreSnapshot`) without starting Chroma, while a
background thread loads the model and embeds the query; else it returns ``None`` and the command opens the
store (:mod:`~langchain_hindsight.cli.search`). Both rank with :func:`~langchain_hindsight.recall.engine.recall`,
as ``HindsightRetriever`` does. This module imports neither Chroma nor the store nor LangChain (the built-in
model comes without its LangChain base: :func:`~langchain_hindsight.embeddings.models.builtin_model`).
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
from pathlib import Path

from langchain_hindsight._text import clean_text
from langchain_hindsight.cli._output import clip, emit_json, table
from langchain_hindsight.embeddings.models import QueryEmbedder, builtin_model
from langchain_hindsight.recall.engine import RecallSettings, RecallSource, recall
from langchain_hindsight.recall.ranking import served_mask
from langchain_hindsight.store import holds_store
from langchain_hindsight.store.replica.files import DerivedFiles
from langchain_hindsight.store.replica.snapshot import StoreSnapshot
from langchain_hindsight.types import ScoredMemory

__all__ = ["print_results", "quick", "recall_for"]

logger = logging.getLogger(__name__)


def quick(args: argparse.Namespace) -> int | None:
    """``hindsight search`` answered from the store's trusted snapshot; ``None`` when it cannot be (open the store).

    Raises:
        StoreLockedError: the store is open in another process (as opening it would).
    """
    if args.server or args.database_url or getattr(args, "principal", None) or getattr(args, "config", None):
        return None
    path = Path(args.path)
    if not holds_store(path):
        return None  # opening it reports the missing store (nothing may be written there, not even a lock)
    namespace = args.namespace or "default"
    with DerivedFiles.closed_store(path) as derived:  # the reader the live store uses, under the lock
        identity = StoreSnapshot.identity_of(derived, namespace)
        embeddings = None if identity is None else getattr(args, "embeddings", None) or builtin_model(identity)
        if embeddings is None:
            return None
        warm = _embed_in_background(embeddings, args.query)
        snapshot = StoreSnapshot.load(derived, namespace, embeddings)
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
    return print_results(recall_for(snapshot, args, namespace), args, shared=False)


def print_results(scored: list[ScoredMemory], args: argparse.Namespace, *, shared: bool) -> int:
    """Print a search's results as ``hindsight search`` does (``shared``: a namespace column); returns 0.

    By default only the results the default floor (``RecallSettings().min_relevance``, the one
    place the default lives) would serve are listed (:func:`~langchain_hindsight.recall.ranking.served_mask`,
    the engine's own test) and stderr says how many more were found below it; ``--all`` lists
    those too, each marked ``served: no``.
    """
    pairs = list(zip(scored, served_mask(scored, RecallSettings().min_relevance), strict=True))
    below = sum(not ok for _, ok in pairs)
    if below and not getattr(args, "all", False):
        pairs = [(m, ok) for m, ok in pairs if ok]
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
                    "served": ok,
                    "breakdown": m.breakdown,
                }
                for m, ok in pairs
            ]
        )
        return 0
    rows = []
    for i, (m, ok) in enumerate(pairs, start=1):
        u = m.memory
        row = [i, f"{m.score:.3f}", f"{m.similarity:.3f}", "yes" if ok else "no"]
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
