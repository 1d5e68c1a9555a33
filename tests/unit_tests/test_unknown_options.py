"""A misspelt option is refused, never ignored: ``min_relevence=`` must not silently leave the default floor.

Constructors that pass their keywords on (pydantic fields, ``**options``) refuse an unknown name with a
:class:`ConfigurationError` that names the option it most likely meant; those with a plain signature refuse it
with Python's ``TypeError``. LangChain's own retriever fields (``tags``, ``metadata``) keep working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from langchain_hindsight import (
    Hindsight,
    HindsightMemory,
    HindsightMiddleware,
    HindsightRetriever,
    HindsightStore,
    Lifecycle,
    MemoryStore,
    Reflector,
    recall_node,
    reflect_node,
    with_hindsight,
)
from langchain_hindsight._checks import check_options
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.recall.engine import RecallSettings
from langchain_hindsight.session import HindsightSession, SessionConfig
from langchain_hindsight.sharing.principals import Principal
from langchain_hindsight.sharing.retriever import ScopedRetriever

MEANT = r"unknown .* option 'min_relevence' \(did you mean 'min_relevance'\?\)"


class _State(TypedDict):
    task: str


def _graph() -> Any:
    builder = StateGraph(_State)
    builder.add_node("noop", lambda state: {})
    builder.add_edge(START, "noop")
    builder.add_edge("noop", END)
    return builder.compile()


PASSING_ON: dict[str, Callable[[MemoryStore], object]] = {
    "HindsightRetriever": lambda s: HindsightRetriever(store=s, min_relevence=0.3),
    "ScopedRetriever": lambda s: ScopedRetriever(store=s, principal=Principal("alice", "alice"), min_relevence=0.3),
    "HindsightSession": lambda s: HindsightSession(s, min_relevence=0.3),
    "HindsightMiddleware": lambda s: HindsightMiddleware(s, min_relevence=0.3),
    "recall_node": lambda s: recall_node(s, min_relevence=0.3),
    "reflect_node": lambda s: reflect_node(s, min_relevence=0.3),
    "with_hindsight": lambda s: with_hindsight(_graph(), s, min_relevence=0.3),
    "HindsightMemory": lambda s: HindsightMemory(store=s, min_relevence=0.3),
}


@pytest.mark.parametrize("make", PASSING_ON.values(), ids=PASSING_ON.keys())
def test_a_misspelt_option_is_a_typed_error_naming_the_meant_one(
    memory_store: MemoryStore, make: Callable[[MemoryStore], object]
) -> None:
    with pytest.raises(ConfigurationError, match=MEANT) as caught:
        make(memory_store)
    assert isinstance(caught.value, ValueError)


PLAIN: dict[str, Callable[[MemoryStore], object]] = {
    "MemoryStore": lambda s: MemoryStore(backend=s.backend, merge_treshold=0.9),
    "Hindsight": lambda s: Hindsight(store=s, min_relevence=0.3),
    "SessionConfig": lambda s: SessionConfig(store=s, min_relevence=0.3),
    "HindsightStore": lambda s: HindsightStore(s, min_relevence=0.3),
    "Reflector": lambda s: Reflector(store=s, min_relevence=0.3),
    "Lifecycle": lambda s: Lifecycle(s, min_relevence=0.3),
}


@pytest.mark.parametrize("make", PLAIN.values(), ids=PLAIN.keys())
def test_a_plain_signature_refuses_a_misspelt_option_too(
    memory_store: MemoryStore, make: Callable[[MemoryStore], object]
) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        make(memory_store)


def test_the_retriever_keeps_langchain_s_own_fields(memory_store: MemoryStore) -> None:
    retriever = HindsightRetriever(store=memory_store, tags=["exp"], metadata={"team": "a"}, k=2, min_relevance=None)
    assert (retriever.tags, retriever.metadata, retriever.k, retriever.settings.min_relevance) == (
        ["exp"],
        {"team": "a"},
        2,
        None,
    )
    assert retriever.invoke("清洗 data.csv") == []  # the store is empty: nothing recalled, nothing raised


def test_configure_and_settings_name_the_meant_option(memory_store: MemoryStore) -> None:
    retriever = HindsightRetriever(store=memory_store)
    with pytest.raises(ConfigurationError, match=r"'kk' \(did you mean 'k'\?\)"):
        retriever.configure(kk=3)
    assert retriever.k == RecallSettings().k  # nothing changed
    with pytest.raises(ConfigurationError, match=r"'fusion_alfa' \(did you mean 'fusion_alpha'\?\)"):
        RecallSettings.from_options(fusion_alfa=0.5)


def test_check_options_lists_every_unknown_name_and_guesses_only_when_close() -> None:
    check_options("recall", ["k"], ["k", "min_score"])  # known names pass
    with pytest.raises(ConfigurationError) as caught:
        check_options("recall", ["zzz", "min_scor", "k"], ["k", "min_score"])
    assert str(caught.value) == "unknown recall options 'min_scor' (did you mean 'min_score'?), 'zzz'"
