"""The LangMem recipe of docs/adapters.md works end to end: what the guide's tools save, its middleware serves.

On c351316 the guide showed LangMem's ``("memories", "{langgraph_user_id}")`` and no middleware: memories
landed in ``memories.alice`` while ``hs.middleware()`` recalls from ``alice`` and never served them (issue 33,
point 7). This test reads the namespace and the middleware's template from the guide itself, so the guide and
the test cannot drift apart, and runs them with LangMem's real tools.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain.agents import create_agent

from langchain_hindsight import Hindsight, HindsightStore, MemoryStore
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.testing import call, scripted_model
from tests.fakes import NgramEmbeddings, Prompts

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "adapters.md"
FACT = "Alice's bank exports its CSV files in GBK: read them with encoding='gbk'"


def _recipe() -> tuple[tuple[str, ...], str]:
    """The LangMem tools' namespace and the middleware's namespace template, as the guide shows them."""
    text = GUIDE.read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "create_manage_memory_tool" in b)
    ns = re.search(r"^\s*ns = (\(.*?\))", block, re.M)
    template = re.search(r"hs\.middleware\(namespace=(\"[^\"]*\")\)", block)
    assert ns is not None, "the guide's LangMem example names the tools' namespace"
    assert template is not None, "the guide's LangMem example gives the middleware its namespace"
    return ast.literal_eval(ns.group(1)), ast.literal_eval(template.group(1))


@pytest.fixture
def hs() -> Iterator[Hindsight]:
    with (
        MemoryStore(backend=InMemoryBackend(), embeddings=NgramEmbeddings()) as store,
        Hindsight(store=store, min_relevance=None) as bundle,
    ):
        yield bundle


def test_what_the_guides_langmem_tools_save_its_middleware_serves(hs: Hindsight) -> None:
    pytest.importorskip("langmem")
    from langmem import create_manage_memory_tool, create_search_memory_tool

    ns, template = _recipe()
    store = HindsightStore(hs.store)
    middleware = hs.middleware(namespace=template)
    alice = {"configurable": {"langgraph_user_id": "alice"}}
    saving = create_agent(
        scripted_model(call("manage_memory", content=FACT), "Noted."),
        tools=[create_manage_memory_tool(namespace=ns), create_search_memory_tool(namespace=ns)],
        store=store,
        middleware=[middleware],
    )
    saving.invoke({"messages": [("user", "Remember how my bank's CSV files are encoded.")]}, config=alice)
    prompts = Prompts()
    working = create_agent(scripted_model("Done."), tools=[], store=store, middleware=[middleware])
    working.invoke(
        {"messages": [("user", "Read my bank's CSV export and total the amounts")]}, {**alice, "callbacks": [prompts]}
    )
    [prompt] = prompts.texts
    assert FACT in prompt  # served: the tools and the middleware share one namespace
    assert prompt.index("[Relevant experience]") < prompt.index(FACT)


def test_the_default_middleware_does_not_read_langmems_namespace(hs: Hindsight) -> None:
    """Why the guide names the middleware's namespace: ("memories", user) is hindsight's "memories.<user>"."""
    pytest.importorskip("langmem")
    from langmem import create_manage_memory_tool

    ns, template = _recipe()
    assert ".".join(ns).replace("{langgraph_user_id}", "alice") == template.format(langgraph_user_id="alice")
    saving = create_agent(
        scripted_model(call("manage_memory", content=FACT), "Noted."),
        tools=[create_manage_memory_tool(namespace=ns)],
        store=HindsightStore(hs.store),
    )
    saving.invoke({"messages": [("user", "Remember this.")]}, config={"configurable": {"langgraph_user_id": "alice"}})
    assert [u.content for u in hs.store.list_units(namespace=template.format(langgraph_user_id="alice"))] == [FACT]
    assert hs.store.list_units(namespace="alice") == []
