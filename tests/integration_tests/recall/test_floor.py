"""The relevance floor: ``min_relevance="auto"`` (the calibrated :class:`FloorRule`), a number, ``None``.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/recall/test_floor.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit
from langchain_hindsight.recall.ranking import DEFAULT_MIN_RELEVANCE
from langchain_hindsight.testing import scripted_model
from tests.unit_tests.recall.test_floor import NOW, WEEKLY


# ------------------------------------------------------------------ the queries, default embedder
@pytest.fixture(scope="module")
def default_store(real_models: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryStore]:
    from langchain_hindsight.embeddings.multilingual import default_embeddings

    lessons = [
        MemoryUnit(memory_id="weekly", task_type="weekly_report", content=WEEKLY, source="user_feedback"),
        MemoryUnit(
            memory_id="monthly",
            task_type="monthly_report",
            content="月报的环比要和上一个自然月比较，不要和去年同月比较。",
        ),
        MemoryUnit(
            memory_id="csv", task_type="data_cleaning", content="用pandas读取含中文的CSV时要指定encoding='utf-8-sig'。"
        ),
        MemoryUnit(
            memory_id="peanut", task_type="general", kind="fact", content="用户对花生过敏，推荐菜谱时要避开含花生的菜。"
        ),
        MemoryUnit(
            memory_id="emma",
            task_type="general",
            kind="fact",
            content="Alice's daughter Emma starts school in September.",
        ),
        MemoryUnit(
            memory_id="retry",
            task_type="api_integration",
            content="Retry the payment webhook at most 5 times with exponential backoff.",
        ),
    ]
    with MemoryStore(tmp_path_factory.mktemp("floor") / "db", embeddings=default_embeddings()) as store:
        store.add_many(lessons, dedupe=False)
        yield store


@pytest.mark.parametrize(
    "query",
    [
        "生成本周的销售周报",
        "生成本周的销售周报（补充：按门店拆分）",
        "帮我做一下这周各门店的销售周报，按门店拆分，附上环比",
        "用户：周报做好了吗？\n助手：还没有，需要我现在生成吗？\n用户：嗯，这周各门店的销售周报，按门店拆分",
        "嗯，这周各门店的销售周报，按门店拆分",  # the last human turn alone: what the middleware recalls with
    ],
)
def test_the_weekly_report_tasks_get_the_weekly_lesson(default_store: MemoryStore, query: str) -> None:
    served = HindsightRetriever(store=default_store, k=5).recall(query, now=NOW)
    assert served
    assert served[0].memory.memory_id == "weekly"
    old = HindsightRetriever(store=default_store, k=5, min_relevance=DEFAULT_MIN_RELEVANCE).recall(query, now=NOW)
    assert served[0].breakdown["floor_margin"] >= 0
    assert len(served) >= len(old)


AUTUMN_GAP = pytest.mark.xfail(
    strict=True,
    reason="known gap (docs/recall.md, 'The relevance floor'): the default serves a ranking with any evidence, so "
    "that no relevant memory is lost (benchmarks/results/floor_recall.md); here the Chinese poem has a cosine of "
    "0.26 with the monthly-report lesson and the English one 0.09 with it across scripts (and 'a poem about autumn' "
    "0.21 with 'Emma starts school in September'), noise no cosine threshold separates from the weakest relevant "
    "matches. relevance_check (the chat model) silences it: test below",
)


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("写一首关于秋天的诗", marks=AUTUMN_GAP),
        pytest.param("write a haiku about autumn", marks=AUTUMN_GAP),
    ],
)
def test_an_autumn_poem_gets_nothing(default_store: MemoryStore, query: str) -> None:
    assert HindsightRetriever(store=default_store, k=5).recall(query, now=NOW) == []
    assert HindsightRetriever(store=default_store, k=5, min_relevance=None).recall(
        query, now=NOW
    )  # only the floor drops them


@pytest.mark.parametrize("query", ["写一首关于秋天的诗", "write a haiku about autumn"])
def test_the_relevance_check_silences_an_autumn_poem(default_store: MemoryStore, query: str) -> None:
    """Where a cosine cannot tell, the optional relevance check asks the chat model (scripted here): one call."""
    model = scripted_model("无" if query[0] > "~" else "none")
    retriever = HindsightRetriever(store=default_store, k=5, relevance_check=model)
    assert HindsightRetriever(store=default_store, k=5).recall(query, now=NOW)  # the floor alone serves them
    assert retriever.recall(query, now=NOW) == []
    assert model.calls == 1
