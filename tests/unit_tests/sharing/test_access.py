"""Principals, grants and the sharing protocol (a cleaning agent publishes, an analysis agent reads)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from langchain_hindsight import Hindsight
from langchain_hindsight.errors import AccessDeniedError, ConfigurationError
from langchain_hindsight.sharing.principals import AccessPolicy, origin_tag
from langchain_hindsight.store.memory_store import MemoryStore

LESSON = "清洗销售CSV时，金额列先去掉千分位逗号再转成数字，否则求和会报ValueError。"


def test_policy_file_and_grants(policy: AccessPolicy) -> None:
    analyst = policy.principal("analyst")
    assert analyst.readable == ("analyst", "shared")
    assert analyst.can_read("shared")
    assert not analyst.can_write("shared")
    assert policy.principal("cleaner").can_read("shared")  # write implies read
    with pytest.raises(ConfigurationError, match="unknown principal"):
        policy.principal("nobody")


@pytest.mark.parametrize(
    "bad",
    [{"a": {"read": "shared"}}, {"a": {"namespace": ""}}, {"a": {"grants": []}}, {"a": {"trust": "root"}}],
)
def test_malformed_policies_are_configuration_errors(bad: dict[str, dict[str, object]]) -> None:
    with pytest.raises(ConfigurationError):
        AccessPolicy.from_mapping(bad)  # type: ignore[arg-type]


def test_origin_tag_fits_the_tag_rules() -> None:
    assert origin_tag("cleaner") == "from:cleaner"
    long_tag = origin_tag("Team-" + "x" * 200)
    assert len(long_tag) <= 64
    assert long_tag.startswith("from:#")


# ----------------------------------------------------------------------------- the facade and the retriever
EN_LESSON = "When cleaning the sales CSV, strip the thousands separators from the amount column before summing."


def _agent_seeing(hs: Any, seen: list[str]) -> Any:
    """A create_agent agent on a scripted model that records every prompt it is sent, then answers."""
    from langchain.agents import create_agent

    from langchain_hindsight.testing import ReactiveToolModel

    def respond(messages: list[Any]) -> str:
        seen.append("\n".join(str(m.content) for m in messages))
        return "汇总完成 / done"

    return create_agent(ReactiveToolModel(respond=respond), tools=[], middleware=[hs.middleware()])


def _invoke(agent: Any, text: str) -> str:
    from langchain_core.messages import HumanMessage

    run_id = str(uuid.uuid4())
    agent.invoke({"messages": [HumanMessage(text)]}, config={"run_id": run_id})
    return run_id


def _publish(store: MemoryStore, grants: Path, *lessons: str) -> list[str]:
    """The cleaning agent remembers each lesson and publishes it to the shared pool."""
    with Hindsight(store=store, principal="cleaner", policy=grants) as cleaner:
        assert cleaner.scoped is not None
        ids = [cleaner.scoped.remember(text, task_type="data_cleaning").memory_id for text in lessons]
        for memory_id in ids:
            cleaner.scoped.publish(memory_id, to="shared")
    return ids


# ----------------------------------------------------------------------------- unit tier (fake embedder, no model)
def test_unit_facade_agents_share_through_grants_only(
    memory_store: MemoryStore, grants: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole protocol on the fake embedder: publish, recall in one embedding labelled, no grant → nothing."""
    zh, en = _publish(memory_store, grants, LESSON, EN_LESSON)
    queries: list[str] = []
    embed_query = memory_store.embeddings.embed_query
    monkeypatch.setattr(memory_store.embeddings, "embed_query", lambda text: queries.append(text) or embed_query(text))
    seen: list[str] = []
    with Hindsight(store=memory_store, principal="analyst", policy=grants, min_relevance=None) as analyst:
        run_id = _invoke(_agent_seeing(analyst, seen), "清洗销售CSV的金额列，千分位逗号")
        assert queries == ["清洗销售CSV的金额列，千分位逗号"]
        assert zh in analyst.journal.get(run_id).served_ids
        (line,) = [line for line in seen[0].splitlines() if "千分位" in line and "（置信度" in line]
        assert line.endswith("（来自：shared）"), seen[0]
        assert en in {m.memory.memory_id for m in analyst.recall("strip the thousands separators amount column")}
    seen.clear()
    with Hindsight(store=memory_store, principal="outsider", policy=grants, min_relevance=None) as outsider:
        run_id = _invoke(_agent_seeing(outsider, seen), "清洗销售CSV的金额列，千分位逗号")
        assert outsider.journal.get(run_id).served_ids == []
        assert "[相关经验]" not in seen[0]
        assert outsider.recall(EN_LESSON) == []
        with pytest.raises(AccessDeniedError):
            outsider.recall(EN_LESSON, namespace="shared")
