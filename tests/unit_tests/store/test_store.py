"""MemoryStore: persistence, dedup/conflicts, feedback, locking, validation (issue: foundation).

Backend-independent behaviour runs on both backends (the ``make_store``/``store``
fixtures are parametrised: embedded Chroma and the in-memory backend); the lock,
a fresh process and a Chroma server are Chroma-only (``make_chroma_store``).
"""

from __future__ import annotations

import pytest

from langchain_hindsight import MemoryUnit
from langchain_hindsight.errors import InvalidMemoryError
from tests.unit_tests.store.store_backends import chroma_store_factory, store_factory  # noqa: F401 - fixtures

# ---------------------------------------------------------------- add / get / reopen


# ---------------------------------------------------------------- conflicts and merges


# ---------------------------------------------------------------- feedback


# ---------------------------------------------------------------- listing, forgetting, namespaces


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"content": ""}, "content"),
        ({"content": "x", "confidence": 1.2}, "confidence"),
        ({"content": "x", "confidence": float("nan")}, "confidence"),
        ({"content": "x", "source": "oracle"}, "source"),
        ({"content": "x", "kind": "opinion"}, "kind"),
        ({"content": "x", "status": "deleted"}, "status"),
        ({"content": "x", "access_count": -1}, "access_count"),
        ({"content": "x", "created_at": "yesterday"}, "created_at"),
        ({"content": "x", "context": {"parameters": {"f": object()}}}, "context.parameters"),
        ({"content": "x", "memory_id": "has space"}, "memory_id"),
        ({"content": 42}, "content"),
    ],
)
def test_invalid_units_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(InvalidMemoryError, match=field.replace(".", r"\.")):
        MemoryUnit(**kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------- one process per directory
