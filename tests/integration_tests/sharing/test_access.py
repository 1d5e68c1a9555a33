"""Principals, grants and the sharing protocol (a cleaning agent publishes, an analysis agent reads).

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/sharing/test_access.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight import Hindsight, MemoryUnit
from langchain_hindsight.errors import AccessDeniedError, ConfigurationError, MemoryNotFoundError
from langchain_hindsight.sharing.access import ScopedMemory
from langchain_hindsight.sharing.principals import AccessPolicy, Principal, published_from
from langchain_hindsight.sharing.retriever import ScopedRetriever
from langchain_hindsight.store.memory_store import MemoryStore
from tests.fakes import GRANTS_TOML
from tests.unit_tests.sharing.test_access import (
    EN_LESSON,
    LESSON,
    _agent_seeing,
    _invoke,
    _publish,
)


@pytest.fixture
def store(make_store: Callable[..., MemoryStore], routed_embeddings: Embeddings) -> MemoryStore:
    """A store on the default (multilingual) embedder, whose relevance floor the recall uses."""
    return make_store("routed", embeddings=routed_embeddings)


@pytest.fixture
def views(store: MemoryStore, policy: AccessPolicy) -> dict[str, ScopedMemory]:
    return {p.name: ScopedMemory(store, p) for p in policy}


def test_publish_then_recall_in_one_call_labelled_shared(views: dict[str, ScopedMemory]) -> None:
    cleaner, analyst = views["cleaner"], views["analyst"]
    own = cleaner.remember(LESSON, task_type="data_cleaning")
    analyst.remember("汇总销售CSV的金额前，先检查金额列里有没有空值。", task_type="data_analysis")
    copy = cleaner.publish(own.memory_id, to="shared")
    assert copy.namespace == "shared"
    assert published_from(copy, "cleaner")
    _, results = analyst.recall("汇总销售CSV的金额，求和时报错了", k=5)
    shared = [r for r in results if r.memory.memory_id == own.memory_id]
    assert shared, [r.memory.content for r in results]
    assert shared[0].namespace == "shared"
    assert not shared[0].own
    assert any(r.own for r in results)


def test_without_a_grant_nothing_is_visible_or_changed(views: dict[str, ScopedMemory], store: MemoryStore) -> None:
    cleaner, outsider, analyst = views["cleaner"], views["outsider"], views["analyst"]
    own = cleaner.remember(LESSON)
    cleaner.publish(own.memory_id, to="shared")
    _, results = outsider.recall(LESSON, k=5)
    assert results == []
    for denied in (
        lambda: outsider.get(own.memory_id, namespace="shared"),
        lambda: outsider.list_units(namespace="shared"),
        lambda: outsider.list_units(namespace="cleaner"),
        lambda: outsider.remember("x", namespace="shared"),
        lambda: analyst.remember("写入共享池", namespace="shared"),
        lambda: analyst.publish(own.memory_id, to="shared"),
        lambda: outsider.unpublish(own.memory_id, from_namespace="shared"),
    ):
        with pytest.raises(AccessDeniedError):
            denied()
    assert store.count(namespace="shared") == 1
    assert store.count(namespace="outsider") == 0


def test_feedback_needs_write_access_and_says_what_it_skipped(
    views: dict[str, ScopedMemory], store: MemoryStore
) -> None:
    cleaner, analyst = views["cleaner"], views["analyst"]
    own = cleaner.remember(LESSON)
    cleaner.publish(own.memory_id, to="shared")
    before = store.get(own.memory_id, namespace="shared").score_confidence
    outcome = analyst.feedback([own.memory_id, "mem_missing"], success=False)
    assert outcome.updated == []
    assert outcome.skipped == [own.memory_id, "mem_missing"]
    assert store.get(own.memory_id, namespace="shared").score_confidence == before
    outcome = cleaner.feedback([own.memory_id], success=True)
    assert [u.namespace for u in outcome.updated] == ["cleaner"]


def test_forget_of_the_source_removes_published_copies(views: dict[str, ScopedMemory], store: MemoryStore) -> None:
    cleaner, analyst = views["cleaner"], views["analyst"]
    own = cleaner.remember(LESSON)
    cleaner.publish(own.memory_id, to="shared")
    assert cleaner.forget(own.memory_id) == 2
    for ns in ("cleaner", "shared"):
        with pytest.raises(MemoryNotFoundError):
            store.get(own.memory_id, namespace=ns)
    _, results = analyst.recall(LESSON, k=5)
    assert results == []


def test_unpublish_removes_only_the_copy(views: dict[str, ScopedMemory], store: MemoryStore) -> None:
    cleaner = views["cleaner"]
    own = cleaner.remember(LESSON)
    cleaner.publish(own.memory_id, to="shared")
    assert cleaner.unpublish(own.memory_id, from_namespace="shared") == 1
    assert store.get(own.memory_id, namespace="cleaner").content == own.content


def test_corrections_keep_the_callers_trust(store: MemoryStore) -> None:
    agent = ScopedMemory(store, Principal("bot", "bot"))
    relay = ScopedMemory(store, Principal("ui", "ui", trust="user_feedback"))
    assert agent.remember("周报只统计本周一到周日。", correction=True).source == "agent_inference"
    assert relay.remember("周报只统计本周一到周日。", correction=True).source == "user_feedback"


def test_recall_is_journaled_with_the_principal(views: dict[str, ScopedMemory]) -> None:
    cleaner = views["cleaner"]
    own = cleaner.remember(LESSON)
    run_id, results = cleaner.recall("清洗销售CSV的金额列", k=3)
    explanation = cleaner.explain(run_id)
    assert explanation.record.task.startswith("[cleaner]")
    assert [m.served.memory_id for m in explanation.memories] == [r.memory.memory_id for r in results]
    assert own.memory_id in explanation.record.served_ids


def test_readme_sharing_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, routed_embeddings: object
) -> None:
    import re

    doc = _sharing_page().read_text(encoding="utf-8")
    (toml,) = re.findall(r"```toml\n(.*?)```", doc, re.S)
    code = re.findall(r"```python\n(.*?)```", doc, re.S)[0]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grants.toml").write_text(toml, encoding="utf-8")
    code = code.replace('MemoryStore("./memory_db")', 'MemoryStore("./memory_db", embeddings=embeddings)')
    embeddings = routed_embeddings
    printed: list[str] = []

    def capture(*args: object) -> None:
        printed.append(" ".join(map(str, args)))

    exec(compile(code, "docs/readme/sharing_mcp.md", "exec"), {"embeddings": embeddings, "print": capture})
    assert any(line.startswith("shared shared 清洗销售CSV") for line in printed), printed


def test_the_block_labels_memories_from_other_namespaces(views: dict[str, ScopedMemory]) -> None:
    from langchain_hindsight.recall.injection import format_experiences

    cleaner, analyst = views["cleaner"], views["analyst"]
    cleaner.publish(cleaner.remember(LESSON).memory_id, to="shared")
    analyst.remember("汇总销售CSV的金额时，门店名称先统一成全称。")
    _, results = analyst.recall("汇总销售CSV的金额", k=5)
    block = format_experiences([r.scored for r in results], own_namespace="analyst", notice=False)
    lines = block.splitlines()[1:]
    assert any(line.endswith("（来自：shared）") and "千分位" in line for line in lines), block
    assert all("来自" not in line for line in lines if "门店" in line), block
    assert "来自" not in format_experiences([r.scored for r in results], notice=False)


def test_facade_agent_recalls_the_shared_pool_in_one_call_labelled(
    store: MemoryStore, grants: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zh, en = _publish(store, grants, LESSON, EN_LESSON)
    own_unit = store.add(MemoryUnit(content="汇总销售CSV的金额时，门店名称先统一成全称。"), namespace="analyst").unit
    confidence = {ns: store.get(zh, namespace=ns).score_confidence for ns in ("cleaner", "shared")}
    queries: list[str] = []
    embed_query = store.embeddings.embed_query
    monkeypatch.setattr(store.embeddings, "embed_query", lambda text: queries.append(text) or embed_query(text))
    seen: list[str] = []
    with Hindsight(store=store, principal="analyst", policy=grants) as analyst:
        run_id = _invoke(_agent_seeing(analyst, seen), "汇总销售CSV的金额，求和时报错了")
        assert len(queries) == 1  # own namespace and the shared pool: one query embedding
        record = analyst.journal.get(run_id)
        assert record.namespace == "analyst"
        assert zh in record.served_ids
        assert own_unit.memory_id in record.served_ids
        prompt = seen[0]
        shared_lines = [line for line in prompt.splitlines() if "千分位" in line]
        assert shared_lines, prompt
        assert shared_lines[0].endswith("（来自：shared）"), prompt
        assert all("来自" not in line for line in prompt.splitlines() if "门店" in line), prompt
        # the successful run credits the analyst's own memory only; the shared pool and the original are untouched
        assert store.get(own_unit.memory_id, namespace="analyst").access_count == 1
        analyst.feedback(run_id, success=False, comment="不对，金额要先按门店去重")
        for ns, before in confidence.items():
            assert store.get(zh, namespace=ns).score_confidence == before
        assert store.count(namespace="shared") == 2  # its run and its correction were written to its own namespace
        assert any("去重" in u.content for u in store.list_units(namespace="analyst"))
        # English works the same way, through the facade's recall
        found = {
            m.memory.memory_id: m.memory.namespace for m in analyst.recall("sum the amount column of the sales CSV")
        }
        assert found.get(en) == "shared"


def test_facade_without_the_grant_never_sees_the_shared_pool(store: MemoryStore, grants: Path) -> None:
    (zh,) = _publish(store, grants, LESSON)
    seen: list[str] = []
    with Hindsight(store=store, principal="outsider", policy=grants) as outsider:
        run_id = _invoke(_agent_seeing(outsider, seen), "汇总销售CSV的金额，求和时报错了")
        assert outsider.journal.get(run_id).served_ids == []
        assert "千分位" not in seen[0]
        assert "相关经验" not in seen[0]
        assert outsider.recall(LESSON) == []
        for denied in (
            lambda: outsider.recall(LESSON, namespace="shared"),
            lambda: outsider.recall(LESSON, namespace="cleaner"),
            lambda: outsider.feedback(run_id, success=False, namespace="cleaner"),
            lambda: outsider.session.serve(LESSON, namespace="shared"),
        ):
            with pytest.raises(AccessDeniedError):
                denied()
        retriever = outsider.scoped.as_retriever(k=5) if outsider.scoped else None
        assert retriever is not None
        assert retriever.invoke(LESSON) == []
        with pytest.raises(AccessDeniedError):
            retriever.invoke(LESSON, namespace="shared")
    assert store.count(namespace="shared") == 1
    assert store.get(zh, namespace="shared").access_count == 0


def test_scoped_retriever_reads_every_granted_namespace(store: MemoryStore, grants: Path, policy: AccessPolicy) -> None:
    (zh,) = _publish(store, grants, LESSON)
    analyst = ScopedMemory(store, policy.principal("analyst")).as_retriever(k=3)
    docs = analyst.invoke("清洗销售CSV的金额列")
    assert [(d.metadata["memory_id"], d.metadata["namespace"]) for d in docs][:1] == [(zh, "shared")]
    with pytest.raises(ConfigurationError):
        ScopedRetriever(store=store, principal=policy.principal("analyst"), namespace="shared")
    # the publisher reads its own original and the shared copy: served once, from its own namespace
    cleaner = ScopedMemory(store, policy.principal("cleaner"))
    _, results = cleaner.recall("清洗销售CSV的金额列", k=5)
    assert [(r.memory.memory_id, r.namespace, r.own) for r in results] == [(zh, "cleaner", True)]


def test_facade_principal_arguments(store: MemoryStore, grants: Path, policy: AccessPolicy) -> None:
    with pytest.raises(ConfigurationError, match="policy"):
        Hindsight(store=store, principal="analyst")
    with pytest.raises(ConfigurationError, match="principal"):
        Hindsight(store=store, policy=grants)
    with pytest.raises(ConfigurationError, match="namespace"):
        Hindsight(store=store, principal="analyst", policy=grants, namespace="other")
    with pytest.raises(ConfigurationError, match="unknown principal"):
        Hindsight(store=store, principal="nobody", policy=policy)
    with Hindsight(store=store, principal=policy.principal("analyst")) as hs:
        assert hs.session.namespace(None) == "analyst"
        assert isinstance(hs.retriever, ScopedRetriever)


def _sharing_page() -> Path:
    docs = Path(__file__).resolve().parents[3] / "docs"
    return next(p for p in (docs / "sharing.md", docs / "readme" / "sharing_mcp.md") if p.exists())


def test_docs_facade_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, routed_embeddings: Embeddings
) -> None:
    """The sharing page's facade example (docs/sharing.md), with a scripted model that records its prompt."""
    import re

    from langchain_hindsight.testing import ReactiveToolModel

    page = _sharing_page()
    (code,) = [
        c for c in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S) if "principal=" in c
    ]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grants.toml").write_text(GRANTS_TOML, encoding="utf-8")
    code = code.replace('MemoryStore("./memory_db")', 'MemoryStore("./memory_db", embeddings=embeddings)')
    prompts: list[str] = []
    printed: list[str] = []

    def respond(messages: list[Any]) -> str:
        prompts.append("\n".join(str(m.content) for m in messages))
        return "好的"

    namespace = {
        "embeddings": routed_embeddings,
        "model": ReactiveToolModel(respond=respond),
        "tools": [],
        "print": lambda *args: printed.append(" ".join(map(str, args))),
    }
    exec(compile(code, str(page), "exec"), namespace)
    assert any("千分位" in line and line.endswith("（来自：shared）") for line in prompts[0].splitlines()), prompts
    assert any(line.startswith("shared 清洗销售CSV") for line in printed), printed


def test_facade_forget_of_the_source_removes_what_readers_recall(store: MemoryStore, grants: Path) -> None:
    zh, en = _publish(store, grants, LESSON, EN_LESSON)
    with Hindsight(store=store, principal="analyst", policy=grants) as analyst:
        assert zh in {m.memory.memory_id for m in analyst.recall("清洗销售CSV的金额列")}
        with Hindsight(store=store, principal="cleaner", policy=grants) as cleaner:
            assert cleaner.scoped is not None
            assert analyst.scoped is not None
            with pytest.raises(MemoryNotFoundError):
                analyst.scoped.forget(zh)  # a reader cannot forget the owner's lesson
            assert cleaner.scoped.forget(zh) == 2  # the original and its published copy
        assert zh not in {m.memory.memory_id for m in analyst.recall("清洗销售CSV的金额列")}
        assert en in {m.memory.memory_id for m in analyst.recall("strip the thousands separators of the amount")}


async def test_facade_async_agent_recalls_the_shared_pool_labelled(store: MemoryStore, grants: Path) -> None:
    from langchain_core.messages import HumanMessage

    (zh,) = _publish(store, grants, LESSON)
    seen: list[str] = []
    with Hindsight(store=store, principal="analyst", policy=grants, locale="en") as analyst:
        run_id = str(uuid.uuid4())
        await _agent_seeing(analyst, seen).ainvoke(
            {"messages": [HumanMessage("汇总销售CSV的金额，求和时报错了")]}, config={"run_id": run_id}
        )
        assert analyst.journal.get(run_id).served_ids == [zh]
        (line,) = [line for line in seen[0].splitlines() if "千分位" in line]
        assert line.endswith(" (from: shared)"), seen[0]
