"""``MemoryStore.count_by``: counts from metadata alone agree with the units themselves."""

from __future__ import annotations

from collections import Counter

import pytest

from langchain_hindsight import ConfigurationError, MemoryStore, MemoryUnit
from tests.unit_tests.store_backends import fake_embedding_store  # noqa: F401 - fixture


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
