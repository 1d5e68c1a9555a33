"""A blank query is refused where a caller asked for a search, and skipped where an agent's task is empty.

``hs.recall("")``, ``store.search("  ")``, a retriever invoked with ``""`` and ``hindsight search ''`` would
otherwise answer "no match", which reads as "nothing was learned about this". They raise a
:class:`ConfigurationError` (the CLI: one line, exit 2). An agent turn whose task has no text is not an error:
the session (under every adapter) skips recall with a DEBUG log and the agent runs on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from langchain_hindsight import Hindsight, HindsightRetriever, MemoryStore, MemoryUnit
from langchain_hindsight.cli.main import EXIT_USAGE, main
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.session import session_for


@pytest.fixture
def stored(memory_store: MemoryStore) -> MemoryStore:
    memory_store.add(MemoryUnit(task_type="data_cleaning", content="Read Chinese CSVs with encoding='utf-8-sig'."))
    return memory_store


BLANK_CALLS: dict[str, Callable[[MemoryStore, str], object]] = {
    "Hindsight.recall": lambda s, q: Hindsight(store=s).recall(q),
    "Hindsight.arecall": lambda s, q: asyncio.run(Hindsight(store=s).arecall(q)),
    "HindsightRetriever.invoke": lambda s, q: HindsightRetriever(store=s).invoke(q),
    "HindsightRetriever.ainvoke": lambda s, q: asyncio.run(HindsightRetriever(store=s).ainvoke(q)),
    "HindsightRetriever.recall_result": lambda s, q: HindsightRetriever(store=s).recall_result(q),
    "MemoryStore.search": lambda s, q: s.search(q),
    "MemoryStore.lexical_search": lambda s, q: s.lexical_search(q),
    "MemoryStore.hybrid_search": lambda s, q: s.hybrid_search(q, [0.0] * 8),
}


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "\u3000"])
@pytest.mark.parametrize("call", BLANK_CALLS.values(), ids=BLANK_CALLS.keys())
def test_a_blank_query_is_refused_with_a_one_line_reason(
    stored: MemoryStore, call: Callable[[MemoryStore, str], object], query: str
) -> None:
    with pytest.raises(ConfigurationError, match="the query is empty: give the task to search for") as caught:
        call(stored, query)
    assert "\n" not in str(caught.value)


def test_a_query_with_text_is_still_answered(stored: MemoryStore) -> None:
    assert Hindsight(store=stored).recall("读取中文 CSV 乱码 encoding", k=1)
    assert stored.search("CSV encoding", k=1)


def test_an_agent_turn_with_an_empty_task_skips_recall_and_logs_it_at_debug(
    stored: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    session = session_for(stored)
    with caplog.at_level(logging.DEBUG, logger="langchain_hindsight.session.loop"):
        served = session.serve("   ")
        aserved = asyncio.run(session.aserve(""))
    assert served.memories == []
    assert aserved.memories == []
    skipped = [r for r in caplog.records if "recall skipped" in r.getMessage()]
    assert len(skipped) == 2
    assert all(r.levelno == logging.DEBUG for r in skipped)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("query", ["", "   "])
def test_hindsight_search_refuses_a_blank_query_in_one_line(
    tmp_path: object, capsys: pytest.CaptureFixture[str], query: str
) -> None:
    code = main(["search", query, "--path", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == EXIT_USAGE
    assert out == ""
    assert err.startswith("hindsight: argument query: the query is empty"), err
    assert err.count("\n") == 1, err
    assert "no match" not in err
