"""``HindsightStore``: LangGraph's ``BaseStore`` over a ``MemoryStore``.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/adapters/test_langgraph_store.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from langchain_hindsight import (
    HindsightStore,
    MemoryStore,
)
from langchain_hindsight.store.backend import InMemoryBackend


# ---------------------------------------------------------------------- the real default embedder
@pytest.mark.integration
def test_search_is_our_recall_in_zh_en_and_across(routed_embeddings: Any) -> None:
    with MemoryStore(backend=InMemoryBackend(), embeddings=routed_embeddings) as memory:
        store = HindsightStore(memory)
        ns = ("memories", "alice")
        store.put(ns, "gbk", {"content": "银行导出的CSV文件是GBK编码，读取时要指定encoding='gbk'"})
        store.put(ns, "report", {"content": "The weekly sales report covers Monday to Sunday of this week"})
        store.put(ns, "tea", {"content": "Alice drinks green tea in the afternoon, never coffee"})
        store.put(ns, "email", {"content": "客户甲公司希望通过邮件联系，不要打电话"})
        best = {q: store.search(ns, query=q, limit=1)[0].key for q in (
            "读取银行的CSV文件时用什么编码",        # zh -> zh
            "which days does the weekly sales report cover",  # en -> en
            "how should I read the bank's CSV export",  # en -> zh
            "怎么联系甲公司的客户",                  # zh -> zh
        )}  # fmt: skip
        assert list(best.values()) == ["gbk", "report", "gbk", "email"]
        floored = HindsightStore(memory, min_relevance="auto")
        assert floored.search(ns, query="写一首关于秋天的诗") == []  # nothing related: the floor serves nothing
        assert [i.key for i in floored.search(ns, query="读取银行的CSV文件时用什么编码", limit=1)] == ["gbk"]
        unfloored = HindsightStore(memory, min_relevance=None)
        assert len(unfloored.search(ns, query="写一首关于秋天的诗")) == 4  # without a floor: the best `limit`
