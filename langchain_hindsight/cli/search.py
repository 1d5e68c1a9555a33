"""``hindsight search``: the one reading command that embeds (it loads the embedding model)."""

from __future__ import annotations

import argparse

from langchain_hindsight.cli._output import clip, emit_json, table
from langchain_hindsight.cli._store import open_view
from langchain_hindsight.recall.retriever import HindsightRetriever

__all__ = ["search"]


def search(args: argparse.Namespace) -> int:
    """``hindsight search QUERY``: the best k memories with their relevance (below the serving floor too)."""
    with open_view(args) as view:
        if view.scoped is None:
            retriever = HindsightRetriever(store=view.store, k=args.k, min_relevance=None)
        else:  # the principal's own namespace (or --namespace) first, then every one it may read
            retriever = view.scoped.as_retriever(k=args.k, min_relevance=None)
        scored = retriever.recall(args.query, k=args.k, task_type=args.task_type, namespace=view.namespace)
    if args.json:
        emit_json(
            [
                {"memory": m.memory, "score": m.score, "similarity": m.similarity, "breakdown": m.breakdown}
                for m in scored
            ]
        )
        return 0
    shared = view.scoped is not None and any(m.memory.namespace != view.namespace for m in scored)
    rows = []
    for i, m in enumerate(scored, start=1):
        u = m.memory
        row = [i, f"{m.score:.3f}", f"{m.similarity:.3f}", f"{u.score_confidence:.2f}", u.task_type, u.memory_id]
        rows.append([*row, *([u.namespace] if shared else []), clip(u.content)])
    headers = ["#", "score", "sim", "conf", "task_type", "memory_id", *(["namespace"] if shared else []), "content"]
    print(table(headers, rows) if rows else "no match")
    return 0
