"""``hindsight search``: the one reading command that embeds (it loads the embedding model).

It opens the store as every other command does and ranks with
:func:`~langchain_hindsight.recall.engine.recall`, as ``HindsightRetriever`` does, so its answer is
the retriever's. The command never imports the LangChain retriever and chat-model stack (only a
principal's view, which recalls through its ``ScopedRetriever``, loads it).
"""

from __future__ import annotations

import argparse
import sys

from langchain_hindsight.cli._output import clip, emit_json, table
from langchain_hindsight.cli._store import open_view
from langchain_hindsight.recall.engine import RecallSettings, recall
from langchain_hindsight.recall.ranking import served_mask
from langchain_hindsight.types import ScoredMemory

__all__ = ["print_results", "search"]


def search(args: argparse.Namespace) -> int:
    """``hindsight search QUERY`` through the opened store: what recall would serve, with each factor of its score.

    Prints as :func:`print_results` does.
    """
    with open_view(args) as view:
        if view.scoped is None:  # the retriever's defaults with no relevance floor: weak matches are shown too
            settings = RecallSettings(k=args.k, min_relevance=None)
            found = recall(view.store, settings, args.query, task_type=args.task_type, namespace=view.namespace)
            scored = found.result.memories
        else:  # the principal's own namespace (or --namespace) first, then every one it may read
            retriever = view.scoped.as_retriever(k=args.k, min_relevance=None)
            scored = retriever.recall(args.query, k=args.k, task_type=args.task_type, namespace=view.namespace)
    shared = view.scoped is not None and any(m.memory.namespace != view.namespace for m in scored)
    return print_results(scored, args, shared=shared)


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
