"""What a user's correction does to memory: scoped, superseding, journaled with reasons, and exactly undoable.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/session/test_verdict.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore
from tests.integration_tests.store.test_reliability_crash import LESSON as CSV
from tests.integration_tests.store.test_reliability_crash import PrefixEmbeddings, _run_child, check_consistent


@pytest.mark.slow
@pytest.mark.parametrize("nth", [1, 2], ids=["before-demotion", "before-clearing-the-mark"])
def test_store_supersede_killed_between_steps_is_completed_once(tmp_path: Path, nth: int) -> None:
    directory = tmp_path / "db"
    out = _run_child(
        f"""
        store = MemoryStore({str(directory)!r}, embeddings=PrefixEmbeddings())
        old = store.add(MemoryUnit(task_type="data_cleaning", content={CSV.format("gbk")!r}, confidence=0.8))
        print("OLD", old.memory_id, flush=True)
        die_on("update", {nth})
        new = MemoryUnit(task_type="data_cleaning", content={CSV.format("utf-8-sig")!r}, source="user_feedback")
        store.supersede([old.memory_id], new, reason="test")
        """
    )
    old_id = out.split("OLD ")[1].split()[0]
    with MemoryStore(directory, embeddings=PrefixEmbeddings()) as store:
        units = check_consistent(store)
        (new,) = [u for u in units if u.memory_id != old_id]
        assert new.supersedes == old_id
        assert store.get(old_id).status == "superseded"
        assert store.get(old_id).confidence == pytest.approx(0.4)  # demoted exactly once
        assert [u.memory_id for u in store.history(old_id)] == [new.memory_id, old_id]
