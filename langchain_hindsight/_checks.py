"""Argument checks with typed errors: whole numbers, numbers in a range, and option names.

Every public option that must be a whole number (``k``, ``max_lines``, a batch size, a page size) is
checked by :func:`check_int`, every bounded number by :func:`check_number`; both refuse a ``bool``
(``True`` is an ``int`` to Python, never a count to a caller) and raise
:class:`~langchain_hindsight.errors.ConfigurationError` naming the option. Every constructor that takes
its options as keywords it passes on (a retriever's pydantic fields, ``**options``) refuses a name it does
not know through :func:`check_options`, naming the option it most likely meant: a misspelt
``min_relevence=`` must not be silently ignored.

Example:
    >>> check_int("k", 3)
    3
    >>> check_int("k", 0)
    Traceback (most recent call last):
    ...
    langchain_hindsight.errors.ConfigurationError: k must be a positive int, got 0
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable

from langchain_hindsight.errors import ConfigurationError

__all__ = ["check_int", "check_number", "check_options", "is_int"]


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


def check_options(what: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Refuse any name in ``given`` that is not in ``known``, naming the closest known one for each.

    Args:
        what: What the options configure, for the message (``"HindsightRetriever"``, ``"recall"``).
        given: The option names a caller passed.
        known: Every option name accepted.

    Raises:
        ConfigurationError: one or more unknown names; the message lists each, with ``did you mean``
            and the closest known name when one is close (:func:`difflib.get_close_matches`).

    Example:
        >>> check_options("recall", ["k", "min_scor"], ["k", "min_relevance", "min_score"])
        Traceback (most recent call last):
        ...
        langchain_hindsight.errors.ConfigurationError: unknown recall option 'min_scor' (did you mean 'min_score'?)
    """
    choices = sorted(set(known))
    unknown = sorted(set(given) - set(choices))
    if not unknown:
        return
    named = []
    for name in unknown:
        close = difflib.get_close_matches(name, choices, n=1)
        named.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    plural = "s" if len(unknown) > 1 else ""
    raise ConfigurationError(f"unknown {what} option{plural} {', '.join(named)}")
