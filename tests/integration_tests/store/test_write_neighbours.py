"""Where a write finds the stored units it may merge with or supersede: the embedded store's recall mirror.

An embedded store reads recall from its in-process mirror; a write's dedupe lookup reads the same mirror when it is
held (exact cosine), and asks Chroma (a filtered query) only when the mirror cannot answer alone. Whichever
answers, the write decides the same: each case here is written into a store that holds its mirror and one that
does not, and the results are compared. A task type the mirror's nearest units do not fill is read from every
mirrored row, its metadata matched exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.writes import WriteResult
from tests.fakes import NgramEmbeddings
from tests.integration_tests.store._reads import Counting, counting

SEED = [
    *(("data_cleaning", f"读取第{i}批销售CSV时先指定编码utf-8-sig，再去掉重复订单号。") for i in range(40)),
    *(("data_cleaning", f"Read sales batch {i} CSV with encoding utf-8-sig before dropping duplicate orders.")
      for i in range(40)),
    ("weekly_report", "周报的数据范围取上周一到周日的自然周，不要用最近7天滚动窗口。"),
    ("weekly_report", "Weekly reports cover Monday to Sunday of last week, not a rolling seven days."),
    ("api_call", "Slack chat.postMessage needs the channel ID, not the channel name."),
]  # fmt: skip
INCOMING = [
    ("data_cleaning", "读取第3批销售CSV时先指定编码utf-8-sig，再去掉重复订单号。"),  # the same statement: merged
    ("data_cleaning", "Read sales batch 7 CSV with encoding utf-8-sig before dropping duplicate orders."),
    ("weekly_report", "周报的数据范围取上周一到周日的自然周，不要用最近30天滚动窗口。"),  # a changed number
    ("weekly_report", "Weekly reports cover Monday to Sunday of last week, not a rolling 30 days."),
    ("api_call", "读取第5批销售CSV时先指定编码utf-8-sig，再去掉重复订单号。"),  # near 40 units of another task type
    ("data_cleaning", "清洗客户表前先统一手机号格式。"),  # new
]


def _seed(path: Path) -> MemoryStore:
    store = MemoryStore(path, embeddings=NgramEmbeddings(128))
    store.add_many([MemoryUnit(task_type=t, content=c) for t, c in SEED], dedupe=False)
    return store


def _summary(result: WriteResult, store: MemoryStore) -> tuple[str, str, list[str], str]:
    """What the write did, by content (the two stores give their units different ids)."""
    related = [store.get(i).content for i in result.related_ids]
    return result.action, result.unit.content, related, re.sub(r"mem_[0-9a-f]+", "<id>", result.reason)


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[MemoryStore, MemoryStore]]:
    with _seed(tmp_path / "mirror") as held, _seed(tmp_path / "backend") as unheld:
        vector = held.embeddings.embed_query("warm up")
        held.hybrid_search("warm up", vector, k=1)  # recall builds the mirror
        assert held.replica.holds(held.namespace)
        assert not unheld.replica.holds(unheld.namespace)
        yield held, unheld


def test_a_write_decides_the_same_from_the_mirror_as_from_the_backend(stores: tuple[MemoryStore, MemoryStore]) -> None:
    held, unheld = stores
    held_reads: Counting = counting(held)
    unheld_reads: Counting = counting(unheld)
    for task_type, content in INCOMING:
        held_reads.calls.clear()
        unheld_reads.calls.clear()
        from_mirror = held.add(MemoryUnit(task_type=task_type, content=content))
        from_backend = unheld.add(MemoryUnit(task_type=task_type, content=content))
        assert _summary(from_mirror, held) == _summary(from_backend, unheld), content
        assert "query" in unheld_reads.calls
        # 80 data_cleaning units: the mirror's nearest hold enough of them; the two weekly reports and the one api
        # call are fewer than a filtered query returns, with units of other task types nearer: the mirror reads
        # every row for them, and Chroma is never asked
        assert "query" not in held_reads.calls, content
    assert [r.action for r in (held.add(MemoryUnit(task_type=t, content=c)) for t, c in INCOMING[:2])] == [
        "merged",
        "merged",
    ]


def test_a_query_vector_that_is_not_unit_length_is_answered_by_the_backend(
    stores: tuple[MemoryStore, MemoryStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    held, _ = stores
    reads = counting(held)
    embed = held.embeddings.embed_documents
    monkeypatch.setattr(held.embeddings, "embed_documents", lambda texts: [[2 * x for x in v] for v in embed(texts)])
    held.add(MemoryUnit(task_type="data_cleaning", content="Read sales batch 9 CSV with encoding utf-8-sig first."))
    assert "query" in reads.calls  # the mirror's dot product is the cosine only for unit-length vectors
