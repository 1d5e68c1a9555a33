"""Argument checks with typed errors: whole numbers, numbers in a range, namespace names and option names.

Every public option that must be a whole number (``k``, ``max_lines``, a batch size, a page size) is
checked by :func:`check_int`, every bounded number by :func:`check_number`; both refuse a ``bool``
(``True`` is an ``int`` to Python, never a count to a caller) and raise
:class:`~langchain_hindsight.errors.ConfigurationError` naming the option. Every constructor that takes
its options as keywords refuses a name it does not know through :func:`check_options`, naming the option it
most likely meant: a misspelt ``min_relevence=`` must be neither silently ignored nor a bare ``TypeError``.
Public constructors and factories get that check from one decorator, :func:`refuse_unknown_keywords`, which
reads the names from the signature (a dataclass's fields, a pydantic model's fields, the keys of
``**options: Unpack[SomeTypedDict]``), so the signature stays typed and the one list of names.

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
import functools
import inspect
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar, Unpack, get_args, get_origin, overload

from langchain_hindsight.errors import ConfigurationError, UnknownOptionError

__all__ = [
    "check_int",
    "check_namespace",
    "check_number",
    "check_options",
    "check_query",
    "closest_name",
    "is_int",
    "refuse_unknown_keywords",
    "refuse_unknown_method_keywords",
]

_C = TypeVar("_C", bound=Callable[..., Any])
_T = TypeVar("_T", bound=type)
_UNPACK = re.compile(r"(?:typing(?:_extensions)?\.)?Unpack\[\s*([A-Za-z_][\w.]*)\s*\]")


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


def check_query(what: str, query: object) -> str:
    """``query`` when it is a string with text; a blank one (``""``, ``"  "``) is a :class:`ConfigurationError`.

    A search matches the words of its query: a blank query has none, so it could only answer "no match", which
    reads as "nothing was learned about this". The caller that may legitimately have no text (an agent turn
    with an empty task) skips the search instead: the adapters do, with a DEBUG log.

    Example:
        >>> check_query("recall", "  ")
        Traceback (most recent call last):
        ...
        langchain_hindsight.errors.ConfigurationError: recall: the query is empty: give the task to search for
    """
    if not isinstance(query, str):
        raise ConfigurationError(f"{what}: the query must be a str, got {type(query).__name__}")
    if not query.strip():
        raise ConfigurationError(f"{what}: the query is empty: give the task to search for")
    return query


def check_namespace(namespace: object) -> str:
    """``namespace`` if it is a valid namespace name, else a :class:`ConfigurationError`."""
    if not isinstance(namespace, str) or not namespace or namespace != namespace.strip() or len(namespace) > 256:
        raise ConfigurationError(f"namespace must be a non-empty string of at most 256 characters, got {namespace!r}")
    if any("\ud800" <= c <= "\udfff" for c in namespace):
        raise ConfigurationError(f"namespace must be valid Unicode text (no lone surrogates), got {namespace!r}")
    return namespace


def check_options(what: str, given: Iterable[str], known: Iterable[str]) -> None:
    """Refuse any name in ``given`` that is not in ``known``, naming the closest known one for each.

    Args:
        what: What the options configure, for the message (``"HindsightRetriever"``, ``"recall"``).
        given: The option names a caller passed.
        known: Every option name accepted.

    Raises:
        UnknownOptionError: one or more unknown names (a :class:`ConfigurationError` and a ``TypeError``); the
            message lists each, with ``did you mean`` and the closest known name when one is close
            (:func:`closest_name`).

    Example:
        >>> check_options("recall", ["k", "min_scor"], ["k", "min_relevance", "min_score"])
        Traceback (most recent call last):
        ...
        langchain_hindsight.errors.UnknownOptionError: unknown recall option 'min_scor' (did you mean 'min_score'?)
    """
    choices = set(known)
    unknown = sorted(set(given) - choices)
    if not unknown:
        return
    named = []
    for name in unknown:
        close = closest_name(name, choices)
        named.append(f"{name!r} (did you mean {close!r}?)" if close else repr(name))
    plural = "s" if len(unknown) > 1 else ""
    raise UnknownOptionError(f"unknown {what} option{plural} {', '.join(named)}")


def closest_name(name: str, choices: Iterable[str]) -> str | None:
    """The name in ``choices`` that ``name`` most likely misspells, or ``None`` when none is close.

    Case is ignored (``K`` → ``k``). Otherwise the candidates are those :func:`difflib.get_close_matches`
    finds with its default cutoff, and the one fewest typing slips away wins (a swapped pair of letters is one
    slip, so ``contnet`` means ``content``, not ``context``); a tie keeps difflib's order.

    Example:
        >>> closest_name("min_relevence", ["k", "min_relevance", "locale"])
        'min_relevance'
        >>> closest_name("contnet", ["context", "content"])
        'content'
    """
    ordered = sorted(choices)
    folded = [c for c in ordered if c.lower() == name.lower()]
    if folded:
        return folded[0]
    close = difflib.get_close_matches(name, ordered, n=3)
    return min(close, key=lambda c: _slips(name, c)) if close else None


def _slips(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps."""
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        earlier, before, row = before, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(before[j] + 1, row[j - 1] + 1, before[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], earlier[j - 2] + 1)
    return row[len(b)]


def _typed_dict_keys(func: Callable[..., Any], annotation: object) -> frozenset[str] | None:
    """The keys of ``TD`` when ``annotation`` is ``Unpack[TD]`` (also as a string, under postponed annotations)."""
    if isinstance(annotation, str):
        match = _UNPACK.fullmatch(annotation.strip())
        if match is None:
            return None
        owner: Any = getattr(inspect.unwrap(func), "__globals__", {})
        for part in match.group(1).split("."):
            owner = owner.get(part) if isinstance(owner, dict) else getattr(owner, part, None)
        if owner is None:  # a programming error of this package: the tests of every public constructor catch it
            raise TypeError(f"cannot resolve {annotation} of {func.__qualname__} at run time")
        annotation = owner
    elif get_origin(annotation) is Unpack:
        annotation = get_args(annotation)[0]
    else:
        return None
    required = getattr(annotation, "__required_keys__", None)
    optional = getattr(annotation, "__optional_keys__", None)
    if required is None or optional is None:
        return None
    return frozenset(required | optional)


def _signature_names(func: Callable[..., Any]) -> frozenset[str] | None:
    """Every name ``func`` takes as a keyword, or ``None`` when a bare ``**kwargs`` takes any."""
    names: set[str] = set()
    for param in inspect.signature(func).parameters.values():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.POSITIONAL_ONLY):
            continue  # a positional-only name given as a keyword is no option: refused like a misspelt one
        if param.kind is not inspect.Parameter.VAR_KEYWORD:
            names.add(param.name)
            continue
        keys = _typed_dict_keys(func, param.annotation)
        if keys is None:
            return None
        names |= keys
    return frozenset(names)


def _model_names(fields: dict[str, Any]) -> frozenset[str]:
    """A pydantic model's field names (its ``__pydantic_fields__``) and their string aliases."""
    names = set(fields)
    for info in fields.values():
        names.update(a for a in (info.alias, info.validation_alias) if isinstance(a, str))
    return frozenset(names)


@overload
def refuse_unknown_keywords(obj: _C, /) -> _C: ...
@overload
def refuse_unknown_keywords(*, also: Iterable[str]) -> Callable[[_C], _C]: ...
def refuse_unknown_keywords(obj: _C | None = None, /, *, also: Iterable[str] = ()) -> _C | Callable[[_C], _C]:
    """Decorate a public class or function so a keyword it does not take raises :class:`UnknownOptionError`.

    The message names the public class (``type(self).__name__``, so an inherited ``__init__`` never shows an
    internal base), the method (``MemoryStore.search``) or the function (its qualified name,
    ``Hindsight.middleware``) and the option the keyword most likely misspells. The names come from the
    signature (a dataclass's generated ``__init__`` included, and the keys of ``**options:
    Unpack[SomeTypedDict]``), from a pydantic model's fields (whose ``extra="ignore"`` would drop a misspelt
    field silently), and from ``also`` (keywords an ``__init__`` packs into a field). A bare ``**kwargs: Any``
    without pydantic fields or ``also`` is left alone: it cannot know the names. Apply it last (outermost),
    above ``@dataclass``.

    On a class it also guards every public method the class or a base of this package defines (plain, class
    and static methods, sync and async), except a method that implements an interface of another library
    (LangChain's ``invoke``, a callback's ``on_*``, LangGraph's ``BaseStore.batch``): those keep their
    library's contract. An async twin whose signature is a bare ``**kwargs`` forwarded to its sync twin
    (``aforget`` → ``forget``) takes the sync twin's names.

    A signature without ``**kwargs`` is checked only when the call fails: the wrapper calls the function and,
    when Python's binding raises its ``TypeError`` for an unexpected keyword, re-raises it typed. A name the
    signature does not take means the call never bound, so a ``TypeError`` raised inside the body passes
    through untouched. The happy path costs one wrapper call (``benchmarks/unknown_options.py`` measures
    it); a ``**kwargs`` whose names are known (a TypedDict, ``also``, a twin) costs a subset test besides.

    The decorated object keeps its type and signature (``inspect.signature`` follows ``__wrapped__``), so
    IDEs and mypy see the typed parameters unchanged.

    Example:
        >>> @refuse_unknown_keywords
        ... def recall(query: str, *, k: int = 3) -> str:
        ...     return query
        >>> recall("q", kk=2)
        Traceback (most recent call last):
        ...
        langchain_hindsight.errors.UnknownOptionError: unknown recall option 'kk' (did you mean 'k'?)
    """
    extra = frozenset(also)

    def decorate(target: _C) -> _C:
        if isinstance(target, type):
            return _checked_class(target, extra)  # type: ignore[return-value]  # the same class, methods wrapped
        return _checked_function(target, target.__qualname__, _Signature(target, extra))

    return decorate if obj is None else decorate(obj)


class _Signature:
    """The keywords a callable takes (plus ``extra``), read from its signature at the first call that passes any.

    Not at decoration time: under postponed annotations ``Unpack[SomeTypedDict]`` is a name in a module that
    may still be executing. ``twin`` is the sync twin whose names an async ``**kwargs`` forwarder takes.
    """

    __slots__ = ("_extra", "_func", "_names", "_open", "_twin")

    def __init__(self, func: Callable[..., Any], extra: frozenset[str], twin: Callable[..., Any] | None = None) -> None:
        self._func = func
        self._extra = extra
        self._twin = twin
        self._names: frozenset[str] | None = None
        self._open = False

    def names(self) -> tuple[frozenset[str], bool]:
        """``(names, open)``: ``open`` when a bare ``**kwargs`` takes any keyword and no ``extra`` names were given."""
        if self._names is None:
            names = _signature_names(self._func)
            extra = self._extra
            if names is None and self._twin is not None:
                twin = _signature_names(self._twin)
                if twin is not None:
                    own = inspect.signature(self._func).parameters.values()
                    extra = extra | twin | {p.name for p in own if p.kind in _NAMED}
            self._open = names is None and not extra
            self._names = (names or frozenset()) | extra
        return self._names, self._open

    def closed(self) -> bool:
        """Whether the signature itself takes no ``**kwargs`` (Python's binding refuses an unknown keyword).

        Read from the code's flags (``inspect.signature`` for every public method would cost the import).
        """
        code = getattr(inspect.unwrap(self._func), "__code__", None)
        if code is not None:
            return not code.co_flags & inspect.CO_VARKEYWORDS
        params = inspect.signature(self._func).parameters.values()
        return not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _refuse(what: str, kwargs: dict[str, Any], signature: _Signature) -> None:
    """Raise :class:`UnknownOptionError` when ``kwargs`` holds a name ``signature`` does not take."""
    names, open_ = signature.names()
    if not open_ and not kwargs.keys() <= names:
        check_options(what, kwargs, names)


def _checked_function(func: _C, what: str, signature: _Signature) -> _C:
    """``func`` wrapped (and marked so a class decorator does not wrap it twice)."""
    wrapped = _wrap(func, what, signature)
    wrapped._refuses_unknown_keywords = True  # type: ignore[attr-defined]
    return wrapped


def _wrap(func: _C, what: str, signature: _Signature) -> _C:
    """Checked on the failure path when the signature is closed, before the call otherwise."""
    if signature.closed():
        return _on_failure(func, what, signature)

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            if kwargs:
                _refuse(what, kwargs, signature)
            return await func(*args, **kwargs)

        return checked_async  # type: ignore[return-value]  # functools.wraps keeps the signature

    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            names, open_ = signature.names()
            if not open_ and not kwargs.keys() <= names:
                check_options(what, kwargs, names)
        return func(*args, **kwargs)

    return checked  # type: ignore[return-value]  # functools.wraps keeps the signature


def _on_failure(func: _C, what: str, signature: _Signature) -> _C:
    """``func`` called as is; Python's ``TypeError`` for a keyword the signature lacks re-raised typed.

    The name check proves the error came from binding this call: a call with a keyword its closed signature
    does not take never enters the body, and a ``TypeError`` from a call that bound is re-raised unchanged.
    """
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def failing_async(*args: Any, **kwargs: Any) -> Any:
            try:
                running = func(*args, **kwargs)
            except TypeError:
                if kwargs:
                    _refuse(what, kwargs, signature)
                raise
            return await running

        return failing_async  # type: ignore[return-value]  # functools.wraps keeps the signature

    @functools.wraps(func)
    def failing(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except TypeError:
            if kwargs:
                _refuse(what, kwargs, signature)
            raise

    return failing  # type: ignore[return-value]  # functools.wraps keeps the signature


def _foreign_interface(cls: type, name: str) -> bool:
    """Whether ``name`` is a method of a base class outside this package (LangChain's, LangGraph's, pydantic's)."""
    return any(name in vars(base) and not base.__module__.startswith("langchain_hindsight") for base in cls.__mro__[1:])


def _public_methods(cls: type) -> Iterator[tuple[str, Any]]:
    """``(name, raw attribute)`` of every public method ``cls`` or a base of this package defines."""
    seen: set[str] = set()
    for owner in cls.__mro__:
        if owner is not cls and not owner.__module__.startswith("langchain_hindsight"):
            continue
        for name, raw in vars(owner).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            func = raw.__func__ if isinstance(raw, classmethod | staticmethod) else raw
            if inspect.isfunction(func) and not _foreign_interface(cls, name):
                yield name, raw


def _checked_methods(cls: type) -> None:
    """Guard every public method of ``cls`` (see :func:`refuse_unknown_keywords`), set on ``cls`` itself."""
    for name, raw in list(_public_methods(cls)):
        if getattr(raw, "__func__", raw).__dict__.get("_refuses_unknown_keywords"):
            continue  # decorated itself, or by a decorated base (named after that base)
        func = raw.__func__ if isinstance(raw, classmethod | staticmethod) else raw
        twin = getattr(cls, name[1:], None) if name.startswith("a") else None
        twin = getattr(twin, "__func__", twin) if callable(twin) else None
        wrapped = _checked_function(func, f"{cls.__name__}.{name}", _Signature(func, frozenset(), twin))
        setattr(cls, name, type(raw)(wrapped) if isinstance(raw, classmethod | staticmethod) else wrapped)


def refuse_unknown_method_keywords(cls: _T) -> _T:
    """Guard only the public methods of ``cls`` (as :func:`refuse_unknown_keywords` does), not its constructor.

    For a class whose constructor refuses unknown names its own way (a pydantic model with ``extra="forbid"``
    raising the package's data error).
    """
    _checked_methods(cls)
    return cls


def _checked_class(cls: type, extra: frozenset[str]) -> type:
    _checked_methods(cls)
    init = cls.__init__  # type: ignore[misc]  # the class's own or inherited __init__, wrapped below
    signature = _Signature(init, extra)

    @functools.wraps(init)
    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - it replaces __init__
        if kwargs:
            kind = type(self)
            names, open_ = signature.names()
            fields = getattr(kind, "__pydantic_fields__", None)  # per class: a subclass adds fields
            if isinstance(fields, dict):
                if not kwargs.keys() <= fields.keys() and not kwargs.keys() <= names:
                    check_options(kind.__name__, kwargs, names | _model_names(fields))
            elif not open_ and not kwargs.keys() <= names:
                check_options(kind.__name__, kwargs, names)
        init(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[misc]
    return cls
