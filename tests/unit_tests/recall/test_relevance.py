"""The optional relevance check (``relevance_check``): one bounded, validated, cached model call; serve on failure.

Scripted chat models stand in for the configured model; the store runs on fake embeddings. The two stored
memories both pass the default floor for the queries below (the floor serves a ranking with any evidence),
so what is served is the check's doing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight import Hindsight, HindsightRetriever, MemoryStore, MemoryUnit
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.recall.engine import RecallSettings
from langchain_hindsight.recall.relevance import (
    CHECK_MAX_MEMORY_CHARS,
    CHECK_MAX_TASK_CHARS,
    apply_relevance_check,
    parse_verdict,
)
from langchain_hindsight.testing import scripted_model
from langchain_hindsight.types import ScoredMemory

WEEKLY = "周报的数据范围取上周一到周日的自然周。"
TRIP = "用户下个月要去成都出差，需要提前订酒店。"


@pytest.fixture
def store(tmp_path: Path, fake_embeddings: Embeddings) -> Iterator[MemoryStore]:
    with MemoryStore(tmp_path / "db", embeddings=fake_embeddings) as s:
        s.add_many(
            [
                MemoryUnit(memory_id="weekly", task_type="weekly_report", content=WEEKLY),
                MemoryUnit(memory_id="trip", task_type="general", content=TRIP),
            ],
            dedupe=False,
        )
        yield s


def _ids(memories: Sequence[ScoredMemory]) -> list[str]:
    return [m.memory.memory_id for m in memories]


@pytest.mark.parametrize(
    ("answer", "count", "expected"),
    [
        ("1, 3", 3, [True, False, True]),
        ("2", 2, [False, True]),
        ("第1条和第2条", 2, [True, True]),
        ("1、2", 3, [True, True, False]),
        ("无", 2, [False, False]),
        ("None.", 2, [False, False]),
        ("0", 1, [False]),
        ("4", 3, None),  # out of range: no verdict
        ("maybe the first one", 2, None),
        ("", 2, None),
        (None, 2, None),
    ],
)
def test_the_answer_is_validated(answer: object, count: int, expected: list[bool] | None) -> None:
    assert parse_verdict(answer, count) == expected


def test_off_by_default(store: MemoryStore) -> None:
    assert RecallSettings().relevance_check is None
    assert HindsightRetriever(store=store).settings.relevance_check is None


def test_the_model_sets_aside_what_does_not_apply_and_the_rest_is_journaled(store: MemoryStore) -> None:
    unchecked = _ids(HindsightRetriever(store=store, k=5).recall("帮我订一张去北京的机票"))
    assert set(unchecked) == {"weekly", "trip"}  # the floor serves the whole ranking: it has evidence
    trip_rank = unchecked.index("trip") + 1
    model = scripted_model(str(trip_rank))
    retriever = HindsightRetriever(store=store, k=5, relevance_check=model)
    served = retriever.recall("帮我订一张去北京的机票")
    assert _ids(served) == ["trip"]
    assert served[0].breakdown["relevance_check"] == 1.0  # the journal stores the breakdown of what was served
    assert model.calls == 1


def test_none_apply_serves_nothing_and_the_verdict_is_cached(store: MemoryStore) -> None:
    model = scripted_model("无")  # one answer only: a second call would exhaust the script
    retriever = HindsightRetriever(store=store, k=5, relevance_check=model, locale="zh")
    assert retriever.recall("写一首关于秋天的诗") == []
    assert retriever.recall("写一首关于秋天的诗") == []  # the same task and candidates: answered from the cache
    assert model.calls == 1


@pytest.mark.parametrize("answer", ["maybe", "7"])
def test_no_valid_verdict_serves_what_the_floor_served(
    store: MemoryStore, answer: str, caplog: pytest.LogCaptureFixture
) -> None:
    floor_only = _ids(HindsightRetriever(store=store, k=5).recall("生成本周的销售周报"))
    caplog.set_level(logging.WARNING, logger="langchain_hindsight.recall.relevance")
    checked = HindsightRetriever(store=store, k=5, relevance_check=scripted_model(answer)).recall("生成本周的销售周报")
    assert _ids(checked) == floor_only
    assert "no valid verdict" in caplog.text


def test_a_failing_model_serves_what_the_floor_served(store: MemoryStore, caplog: pytest.LogCaptureFixture) -> None:
    floor_only = _ids(HindsightRetriever(store=store, k=5).recall("生成本周的销售周报"))
    caplog.set_level(logging.WARNING, logger="langchain_hindsight.recall.relevance")
    exhausted = scripted_model()  # raises on its first call
    checked = HindsightRetriever(store=store, k=5, relevance_check=exhausted).recall("生成本周的销售周报")
    assert _ids(checked) == floor_only
    assert "relevance check failed" in caplog.text


def test_the_call_is_bounded(store: MemoryStore) -> None:
    seen: list[tuple[str, list[str]]] = []

    def check(task: str, memories: Sequence[str]) -> list[bool]:
        seen.append((task, list(memories)))
        return [True] * len(memories)

    memories = HindsightRetriever(store=store, k=5, min_relevance=None).recall("周报")
    long = [m.model_copy(update={"memory": m.memory.model_copy(update={"content": "周" * 5000})}) for m in memories]
    kept, withheld = apply_relevance_check(check, "任务" * 5000, long)
    assert _ids(kept) == _ids(memories)
    assert withheld == []
    ((task, texts),) = seen
    assert len(task) <= CHECK_MAX_TASK_CHARS
    assert all(len(t) <= CHECK_MAX_MEMORY_CHARS for t in texts)


def test_a_bad_check_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="relevance_check"):
        RecallSettings(relevance_check="yes")  # type: ignore[arg-type]


def test_the_bundle_asks_its_own_model(store: MemoryStore) -> None:
    model = scripted_model("无")
    with Hindsight(store=store, model=model, relevance_check=True) as hs:
        assert hs.recall("写一首关于秋天的诗") == []
        assert model.calls == 1
    with Hindsight(store=store) as hs:
        assert hs.retriever.settings.relevance_check is None  # off by default
    with pytest.raises(ConfigurationError, match="relevance_check"):
        Hindsight(store=store, relevance_check=True)  # no model to ask


def test_what_the_check_set_aside_is_recorded_with_the_run_and_forgotten_with_the_memory(store: MemoryStore) -> None:
    unchecked = _ids(HindsightRetriever(store=store, k=5).recall("帮我订一张去北京的机票"))
    trip_rank = unchecked.index("trip") + 1
    model = scripted_model(str(trip_rank))
    with Hindsight(store=store, model=model, relevance_check=True) as hs:
        served = hs.session.serve("帮我订一张去北京的机票", run_id="run-trip")
        assert served.memory_ids == ("trip",)
        assert served.withheld == ["weekly"]  # passed the floor, set aside by the check: not served
        record = hs.journal.get("run-trip")
        assert record.served_ids == ["trip"]
        assert record.withheld == ["weekly"]
        assert hs.retriever.served()[-1].withheld == ["weekly"]
        hs.store.forget("weekly")
        assert hs.journal.get("run-trip").withheld == []  # forget leaves no reference in the journal


def test_when_none_apply_every_candidate_is_recorded_as_set_aside(store: MemoryStore) -> None:
    with Hindsight(store=store, model=scripted_model("无"), relevance_check=True) as hs:
        served = hs.session.serve("写一首关于秋天的诗", run_id="run-poem")
        assert served.memory_ids == ()
        assert sorted(hs.journal.get("run-poem").withheld) == ["trip", "weekly"]
