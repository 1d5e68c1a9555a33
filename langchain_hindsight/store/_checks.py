"""Argument checks shared by the store's public methods (ids, search depth, page size)."""

from __future__ import annotations

from langchain_hindsight.errors import ConfigurationError

__all__ = ["check_k", "is_int"]

_MAX_K = 1 << 30
"""Largest search depth ``k``: the over-fetched query depth (``k`` and half again) must fit a backend's
32-bit count."""


def is_int(value: object, low: int, high: int | None = None) -> bool:
    """Whether ``value`` is an ``int`` (not a ``bool``) in ``[low, high]`` (``high`` ``None``: no upper bound)."""
    return not isinstance(value, bool) and isinstance(value, int) and value >= low and (high is None or value <= high)


def check_k(k: object) -> None:
    """Refuse a search depth that is not an int in ``[1, 2**30]`` (a store's or a snapshot's search)."""
    if not is_int(k, 1, _MAX_K):
        raise ConfigurationError(f"k must be an int from 1 to {_MAX_K}, got {k!r}")
