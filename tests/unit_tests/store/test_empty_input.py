"""``None``, ``[]`` and ``""`` given to a public call end in a typed error from ``errors.py``, never a builtin one.

At c351316 a sweep of every public method of ``MemoryStore``, ``RunJournal`` and ``HindsightStore`` with
each of the three in each parameter found these raising an untyped ``TypeError`` or ``ValueError``
(``'NoneType' object is not iterable``, ``'<' not supported``, numpy's ``matmul`` complaint).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from langchain_hindsight.adapters.langgraph_store import HindsightStore
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit

CALLS: list[tuple[str, Callable[[MemoryStore, Any], object]]] = [
    ("MemoryStore.search_by_vector", lambda s, bad: s.search_by_vector(bad)),
    ("MemoryStore.hybrid_search", lambda s, bad: s.hybrid_search("csv 编码", bad)),
    ("MemoryStore.similarity_by_ids", lambda s, bad: s.similarity_by_ids(bad, ["mem_x"])),
    ("MemoryStore.import_units(units)", lambda s, bad: s.import_units(bad)),
    ("MemoryStore.import_units(runs)", lambda s, bad: s.import_units([], runs=bad)),
    ("RunJournal.start(served)", lambda s, bad: RunJournal(s).start("run_x", task="读取CSV", served=bad)),
    ("RunJournal.last_in_thread", lambda s, bad: RunJournal(s).last_in_thread("t1", exclude=bad)),
    ("RunJournal.list_runs", lambda s, bad: RunJournal(s).list_runs(limit=bad)),
    ("HindsightStore.batch", lambda s, bad: HindsightStore(s).batch(bad)),
    ("HindsightStore.search(limit)", lambda s, bad: HindsightStore(s).search(("users",), limit=bad)),
    ("HindsightStore.search(offset)", lambda s, bad: HindsightStore(s).search(("users",), offset=bad)),
    ("HindsightStore.list_namespaces(limit)", lambda s, bad: HindsightStore(s).list_namespaces(limit=bad)),
    ("HindsightStore.list_namespaces(max_depth)", lambda s, bad: HindsightStore(s).list_namespaces(max_depth=bad)),
]

BAD = {
    "MemoryStore.search_by_vector": [None, [], ""],
    "MemoryStore.hybrid_search": [None, [], ""],
    "MemoryStore.similarity_by_ids": [None, [], ""],
    "MemoryStore.import_units(units)": [None, ""],
    "MemoryStore.import_units(runs)": [None, ""],
    "RunJournal.start(served)": [None, ""],
    "RunJournal.last_in_thread": [None, ""],
    "RunJournal.list_runs": [[], ""],
    "HindsightStore.batch": [None],
    "HindsightStore.search(limit)": [None, [], ""],
    "HindsightStore.search(offset)": [None, [], ""],
    "HindsightStore.list_namespaces(limit)": [None, [], ""],
    "HindsightStore.list_namespaces(max_depth)": [[], ""],
}


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[n for n, _ in CALLS])
def test_none_empty_list_and_empty_string_are_configuration_errors(
    memory_store: MemoryStore, name: str, call: Callable[[MemoryStore, Any], object]
) -> None:
    memory_store.add(MemoryUnit(content="读取中文CSV时使用utf-8-sig编码。", memory_id="mem_x"), dedupe=False)
    for bad in BAD[name]:
        with pytest.raises(ConfigurationError):
            call(memory_store, bad)
    assert memory_store.count() == 1  # nothing was written
