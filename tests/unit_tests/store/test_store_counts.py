"""``MemoryStore.count_by``: counts from metadata alone agree with the units themselves."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from langchain_hindsight import ConfigurationError, MemoryStore, MemoryUnit
from langchain_hindsight.store.backend import Records
from tests.unit_tests.store.store_backends import fake_embedding_store  # noqa: F401 - fixture


def test_count_by_agrees_with_iterating_the_units(hash_store: MemoryStore) -> None:
    store = hash_store
    kinds = [("weekly_report", "agent_inference")] * 3 + [("api_call", "user_feedback")] * 2
    units = store.add_many(
        [MemoryUnit(task_type=t, source=s, content=f"lesson {i} 周报") for i, (t, s) in enumerate(kinds)],
        dedupe=False,
    )
    store.archive([units[0].memory_id])
    want = Counter((u.status, u.task_type, u.source) for u in store.iter_units())
    assert store.count_by("status", "task_type", "source") == dict(want)
    assert store.count_by("status") == {("active",): 4, ("archived",): 1}
    assert store.count_by("status", namespace="elsewhere") == {}
    with pytest.raises(ConfigurationError):
        store.count_by("content")
    with pytest.raises(ConfigurationError):
        store.count_by()


def _holder(store: MemoryStore, memory_id: str) -> Records:
    """The backend collection that holds ``memory_id``."""
    return next(col for col in store.backend.list_collections() if col.exists([memory_id]))


def test_count_by_counts_values_outside_the_known_sets_exactly(hash_store: MemoryStore) -> None:
    """A label the vocabulary does not know (an older store, a hand edit) is counted under its own value."""
    store = hash_store
    units = store.add_many(
        [
            MemoryUnit(task_type="weekly_report", content="周报只统计本周一到周日的数据", run_id="r1"),
            MemoryUnit(task_type="api_call", content="Retry the API call on HTTP 429", run_id="r1"),
            MemoryUnit(task_type="api_call", content="接口超时后重试三次", run_id="r2"),
            MemoryUnit(task_type="data_cleaning", content="Strip the BOM before parsing CSV"),
        ],
        dedupe=False,
    )
    _holder(store, units[0].memory_id).update(ids=[units[0].memory_id], metadatas=[{"task_type": "旧标签"}])
    _holder(store, units[1].memory_id).update(ids=[units[1].memory_id], metadatas=[{"source": "imported"}])
    store.archive([units[2].memory_id])
    counts = store.count_by("status", "task_type", "source")
    assert counts == {
        ("active", "旧标签", "agent_inference"): 1,
        ("active", "api_call", "imported"): 1,
        ("archived", "api_call", "agent_inference"): 1,
        ("active", "data_cleaning", "agent_inference"): 1,
    }
    assert sum(counts.values()) == store.count()
    assert store.count_by("run_id") == {("r1",): 2, ("r2",): 1, ("",): 1}
    assert store.count_by("task_type", "run_id")[("旧标签", "r1")] == 1


def test_count_by_reads_no_metadata_when_every_value_is_known(
    hash_store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Known values are counted from id-only reads: no unit's metadata is decoded."""
    store = hash_store
    store.add_many([MemoryUnit(task_type="api_call", content=f"lesson {i} 接口") for i in range(6)], dedupe=False)
    col = next(c for c in store.backend.list_collections() if c.count())
    includes: list[tuple[str, ...]] = []
    real_get = type(col).get

    def spy(self: Records, **kwargs: Any) -> Any:
        includes.append(tuple(kwargs.get("include", ("documents", "metadatas"))))
        return real_get(self, **kwargs)

    monkeypatch.setattr(type(col), "get", spy)
    assert store.count_by("status", "task_type", "source") == {("active", "api_call", "agent_inference"): 6}
    assert includes
    assert all("metadatas" not in inc for inc in includes)
    includes.clear()
    assert store.count_by("run_id") == {("",): 6}
    assert any("metadatas" in inc for inc in includes)
