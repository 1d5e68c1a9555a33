"""Argument checks with typed errors: the one place a whole number or a number in a range is validated.

Every public option that must be a whole number (``k``, ``max_lines``, a batch size, a page size) is
checked by :func:`check_int`, every bounded number by :func:`check_number`; both refuse a ``bool``
(``True`` is an ``int`` to Python, never a count to a caller) and raise
:class:`~langchain_hindsight.errors.ConfigurationError` naming the option.

Example:
    >>> check_int("k", 3)
    3
    >>> check_int("k", 0)
    Traceback (most recent call last):
    ...
    langchain_hindsight.errors.ConfigurationError: k must be a positive int, got 0
"""

from __future__ import annotations

import math

from langchain_hindsight.errors import ConfigurationError

__all__ = ["check_int", "check_number", "is_int"]


def is_int(value: object, low: int, high: int | None = None) -> bool:
    """Whether ``value`` is an ``int`` (not a ``bool``) in ``[low, high]`` (``high`` ``None``: no upper bound)."""
    return not isinstance(value, bool) and isinstance(value, int) and value >= low and (high is None or value <= high)


def check_int(name: str, value: object, low: int = 1, high: int | None = None) -> int:
    """``value`` when it is an ``int`` (not a ``bool``) in ``[low, high]``; else a :class:`ConfigurationError`.

    The message says what was expected: ``"a positive int"`` for ``low == 1`` without an upper bound,
    ``"an int >= low"`` otherwise, ``"an int from low to high"`` with one.
    """
    if is_int(value, low, high):
        return value  # type: ignore[return-value]  # is_int checked the type
    if high is not None:
        wanted = f"an int from {low} to {high}"
    else:
        wanted = "a positive int" if low == 1 else f"an int >= {low}"
    raise ConfigurationError(f"{name} must be {wanted}, got {value!r}")


def check_number(
    name: str, value: object, low: float = -math.inf, high: float = math.inf, *, open_low: bool = False
) -> float:
    """``value`` as a float when it is a finite real number (not a ``bool``) in ``[low, high]``.

    ``open_low`` excludes ``low`` itself (``(low, high]``).

    Raises:
        ConfigurationError: anything else, naming ``name`` and the range.
    """
    ok = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
    if ok and (value > low if open_low else value >= low) and value <= high:  # type: ignore[operator]
        return float(value)  # type: ignore[arg-type]
    bracket = "(" if open_low else "["
    raise ConfigurationError(f"{name} must be a number in {bracket}{low:g}, {high:g}], got {value!r}")
