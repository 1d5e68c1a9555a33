"""What the read-path tests share: the units they store and a memories collection that counts its reads."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from langchain_hindsight import MemoryStore, MemoryUnit

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def lessons(n: int, prefix: str = "lesson") -> list[MemoryUnit]:
    """``n`` distinct CSV-encoding lessons of two task types, stamped :data:`NOW`."""
    return [
        MemoryUnit(
            task_type="data_cleaning" if i % 2 else "api_call",
            content=f"读取CSV文件时指定编码 {prefix} {i} about encoding and retries",
            created_at=NOW,
            last_accessed_at=NOW,
        )
        for i in range(n)
    ]


class Counting:
    """Wraps a backend collection; counts its reads (``get``, ``query``, ``pages``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append("get")
        return self.inner.get(*args, **kwargs)

    def query(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append("query")
        return self.inner.query(*args, **kwargs)

    def pages(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append("pages")
        return self.inner.pages(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def counting(store: MemoryStore) -> Counting:
    """Put a :class:`Counting` wrapper in place of ``store``'s memories collection and return it."""
    key = (store.namespace, "memories")
    wrapped = Counting(store._collections[key])
    store._collections[key] = wrapped
    return wrapped
