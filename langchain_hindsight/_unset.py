"""``UNSET``: the marker of an option the caller did not give (an object, never a string).

An option whose default is "whatever the component below would choose" (the retriever's own relevance
floor, an environment variable's value) defaults to :data:`UNSET`; code asks ``value is UNSET``. A string
such as ``"default"`` cannot serve: it is a legitimate value elsewhere (the default namespace is named
``"default"``) and a type checker cannot tell the two apart.
"""

from __future__ import annotations

from typing import Final, final

__all__ = ["UNSET", "Unset"]


@final
class Unset:
    """The type of :data:`UNSET` (use that one instance; falsy; compare with ``is``; copies and pickles are it)."""

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False

    def __copy__(self) -> Unset:
        return self

    def __deepcopy__(self, memo: object) -> Unset:
        return self

    def __reduce__(self) -> str:
        return "UNSET"


UNSET: Final = Unset()
"""The option was not given: the component that owns its default decides."""
