"""Sharing: principals, grants, scoped memory, and the MCP server.

* :mod:`~langchain_hindsight.sharing.principals`: :class:`Principal` and :class:`AccessPolicy`;
* :mod:`~langchain_hindsight.sharing.access`: :class:`ScopedMemory`, a store seen by one principal;
* :mod:`~langchain_hindsight.sharing.retriever`: :class:`ScopedRetriever`;
* :mod:`~langchain_hindsight.sharing.mcp_server`: the MCP server, an entry point (not named here: the
  layers below it import this package).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_hindsight._lazy import lazy_exports

if TYPE_CHECKING:
    from langchain_hindsight.sharing.access import FeedbackOutcome, ScopedMemory, ScopedResult
    from langchain_hindsight.sharing.principals import (
        AccessPolicy,
        Operation,
        Principal,
        origin_tag,
        published_from,
        resolve_principal,
    )
    from langchain_hindsight.sharing.retriever import ScopedRetriever

_EXPORTS: dict[str, str] = {
    "AccessPolicy": ".principals",
    "FeedbackOutcome": ".access",
    "Operation": ".principals",
    "Principal": ".principals",
    "ScopedMemory": ".access",
    "ScopedResult": ".access",
    "ScopedRetriever": ".retriever",
    "origin_tag": ".principals",
    "published_from": ".principals",
    "resolve_principal": ".principals",
}
"""Each public name and the module defining it (imported on first use)."""

__all__ = [
    "AccessPolicy",
    "FeedbackOutcome",
    "Operation",
    "Principal",
    "ScopedMemory",
    "ScopedResult",
    "ScopedRetriever",
    "origin_tag",
    "published_from",
    "resolve_principal",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
