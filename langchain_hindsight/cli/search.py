"""``hindsight search``: the one reading command that embeds (it loads the embedding model).

The command first tries its quick path (:func:`langchain_hindsight.cli._search.quick`:
a cleanly closed store answered from its snapshot, without Chroma); :func:`search`
is the rest: it opens the store as every other command does (a server, a principal,
a store written since) and ranks with the same
engine, so both answers are the retriever's. The command never imports the
LangChain retriever and chat-model stack (only a principal's view, which recalls
through its ``ScopedRetriever``, loads it).
"""

from __future__ import annotations

import argparse

from langchain_hindsight.cli._search import print_results, recall_for
from langchain_hindsight.cli._store import open_view

__all__ = ["search"]


def search(args: argparse.Namespace) -> int:
    """``hindsight search QUERY`` through the opened store: what recall would serve, with each factor of its score.

    Prints as :func:`~langchain_hindsight.cli._search.print_results` does (the quick path's output).
    """
    with open_view(args) as view:
        if view.scoped is None:
            scored = recall_for(view.store, args, view.namespace)
        else:  # the principal's own namespace (or --namespace) first, then every one it may read
            retriever = view.scoped.as_retriever(k=args.k, min_relevance=None)
            scored = retriever.recall(args.query, k=args.k, task_type=args.task_type, namespace=view.namespace)
    shared = view.scoped is not None and any(m.memory.namespace != view.namespace for m in scored)
    return print_results(scored, args, shared=shared)
