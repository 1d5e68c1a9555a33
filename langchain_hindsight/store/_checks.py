"""The store's argument checks: search depth and query vector."""

from __future__ import annotations

from langchain_hindsight._checks import check_int
from langchain_hindsight.errors import ConfigurationError

__all__ = ["check_k", "check_vector"]

_MAX_K = 1 << 30
"""Largest search depth ``k``: the over-fetched query depth (``k`` and half again) must fit a backend's
32-bit count."""


def check_k(k: object) -> None:
    """Refuse a search depth that is not an int in ``[1, 2**30]`` (a store's or a snapshot's search)."""
    check_int("k", k, 1, _MAX_K)


def check_vector(method: str, vector: object) -> None:
    """Refuse a query vector that is not a non-empty sequence of real numbers (``None``, ``[]``, a string).

    Raises:
        ConfigurationError: naming ``method`` and what it got.
    """
    if isinstance(vector, str | bytes | bytearray | dict) or not hasattr(vector, "__len__"):
        raise ConfigurationError(f"{method}: vector must be a sequence of numbers, got {type(vector).__name__}")
    if len(vector) == 0:  # type: ignore[arg-type]
        raise ConfigurationError(f"{method}: vector is empty")
    try:
        first = vector[0]  # type: ignore[index]
    except (TypeError, KeyError, IndexError) as e:
        raise ConfigurationError(f"{method}: vector must be a sequence of numbers") from e
    if isinstance(first, bool) or (not isinstance(first, int | float) and not hasattr(first, "__float__")):
        raise ConfigurationError(f"{method}: vector must hold numbers, got {type(first).__name__}")
