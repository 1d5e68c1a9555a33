"""``HindsightStore`` under random puts, deletes and maintenance, against a dictionary of what was put.

The conformance suite (``basestore_conformance``) runs fixed scenarios; here a Hypothesis state machine puts
values (the same lesson under several keys, contradicting lessons, values other than a lesson) into a few
namespaces, deletes keys, runs the lifecycle and reopens the store, and after each step compares what LangGraph's
contract fixes with a plain ``dict``: every key reads back its last value, a listing holds exactly the live keys of
its namespaces (with and without a filter), and ``list_namespaces`` names exactly the namespaces holding one. A key
is the caller's identity: no write rule, judge or merge pass may fold two keys into one.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from langchain_hindsight import HindsightStore, Lifecycle, MemoryStore
from langchain_hindsight.store.backend import InMemoryBackend
from tests.fakes import NgramEmbeddings

NAMESPACES = [("alice",), ("memories", "alice"), ("memories", "bob")]
KEYS = ["report-window", "encoding", "contact", "language"]
LESSONS = [
    "周报统计上周一到上周日的数据。",
    "周报只统计本周一到本周日的数据。",
    "客户甲公司希望通过邮件联系。",
    "客户甲公司希望通过电话联系。",
    "Read the ERP export with encoding='gbk'.",
    "read the ERP export with encoding=gbk",
    "The user prefers answers in Chinese.",
]
VALUES = st.one_of(
    st.fixed_dictionaries({"content": st.sampled_from(LESSONS), "color": st.sampled_from(["red", "blue"])}),
    st.fixed_dictionaries({"title": st.sampled_from(["weekly report", "周报"]), "n": st.integers(0, 3)}),
)


class KeyedStore(RuleBasedStateMachine):
    """A ``HindsightStore`` and the dictionary of what was put into it."""

    def __init__(self) -> None:
        super().__init__()
        self.backend, self.embeddings = InMemoryBackend(), NgramEmbeddings()
        self._open()
        self.model: dict[tuple[tuple[str, ...], str], dict[str, Any]] = {}

    def _open(self) -> None:
        self.memory = MemoryStore(backend=self.backend, embeddings=self.embeddings)
        self.store = HindsightStore(self.memory)

    def teardown(self) -> None:
        self.memory.close()

    @rule(namespace=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS), value=VALUES)
    def put(self, namespace: tuple[str, ...], key: str, value: dict[str, Any]) -> None:
        self.store.put(namespace, key, value)
        self.model[namespace, key] = value

    @rule(namespace=st.sampled_from(NAMESPACES), key=st.sampled_from(KEYS))
    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        self.store.delete(namespace, key)
        self.model.pop((namespace, key), None)

    @rule()
    def maintain(self) -> None:
        for namespace in {".".join(ns) for ns, _ in self.model}:
            Lifecycle(self.memory).maintain(namespace=namespace)

    @rule()
    def reopen(self) -> None:
        self.memory.close()
        self._open()

    @invariant()
    def every_key_reads_back_its_last_value(self) -> None:
        for namespace in NAMESPACES:
            for key in KEYS:
                item = self.store.get(namespace, key)
                expected = self.model.get((namespace, key))
                assert (item.value if item is not None else None) == expected, (namespace, key)

    @invariant()
    def listings_hold_exactly_the_live_keys(self) -> None:
        for prefix in [("memories",), ("alice",), ("memories", "bob")]:
            live = sorted((ns, k) for ns, k in self.model if ns[: len(prefix)] == prefix)
            listed = self.store.search(prefix, limit=100)
            assert sorted((tuple(i.namespace), i.key) for i in listed) == live
            red = sorted((ns, k) for ns, k in live if self.model[ns, k].get("color") == "red")
            listed = self.store.search(prefix, filter={"color": "red"}, limit=100)
            assert sorted((tuple(i.namespace), i.key) for i in listed) == red
        assert self.store.list_namespaces() == sorted({ns for ns, _ in self.model})


def test_random_puts_and_deletes_read_back_as_a_dictionary() -> None:
    KeyedStore.TestCase.settings = settings(
        max_examples=60, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    KeyedStore.TestCase().runTest()
