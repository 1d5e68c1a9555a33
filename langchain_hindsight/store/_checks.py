"""The store's search-depth check (the int check itself is :func:`langchain_hindsight._checks.is_int`)."""

from __future__ import annotations

from langchain_hindsight._checks import is_int
from langchain_hindsight.errors import ConfigurationError

__all__ = ["check_k"]

_MAX_K = 1 << 30
"""Largest search depth ``k``: the over-fetched query depth (``k`` and half again) must fit a backend's
32-bit count."""


def check_k(k: object) -> None:
    """Refuse a search depth that is not an int in ``[1, 2**30]`` (a store's or a snapshot's search)."""
    if not is_int(k, 1, _MAX_K):
        raise ConfigurationError(f"k must be an int from 1 to {_MAX_K}, got {k!r}")
