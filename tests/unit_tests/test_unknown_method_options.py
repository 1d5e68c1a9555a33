"""A misspelt keyword on any public *method* is an ``UnknownOptionError`` naming the option it likely means.

The methods are discovered, not listed: every public method that this package defines on a class importable
from the root (inherited ones too), except those implementing another library's interface (LangChain's
``invoke``, callbacks, LangGraph's ``BaseStore``), which keep that library's contract. Each is called with
only a misspelling of its longest keyword: the call must fail on the keyword, before the body runs (no
positional argument is given, so a body that ran would fail otherwise).
"""

from __future__ import annotations

import asyncio
import inspect
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import langchain_hindsight
from langchain_hindsight import (
    Hindsight,
    HindsightMemory,
    HindsightMiddleware,
    HindsightRetriever,
    HindsightStore,
    Lifecycle,
    MemoryStore,
    MemoryUnit,
    Reflector,
    RunJournal,
    ScoringWeights,
    Step,
    Trajectory,
    TrajectoryRecorder,
)
from langchain_hindsight._checks import refuse_unknown_keywords
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.errors import ConfigurationError, InvalidMemoryError, UnknownOptionError
from langchain_hindsight.lifecycle.policy import LifecyclePolicy
from langchain_hindsight.prompts import get_templates
from langchain_hindsight.reflection.background import BackgroundReflector
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.store import ConfidencePolicy
from langchain_hindsight.taxonomy import TaskTypeVocabulary
from langchain_hindsight.types import ScoredMemory

_OURS = "langchain_hindsight"


def _root_classes() -> dict[str, type]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        names = [*langchain_hindsight.__all__, *langchain_hindsight._ALSO_IMPORTABLE]
        objects = {name: getattr(langchain_hindsight, name) for name in names}
    return {n: o for n, o in objects.items() if isinstance(o, type) and not issubclass(o, BaseException)}


def _public_methods(cls: type) -> Iterator[str]:
    """Public methods this package wrote for ``cls`` (not an override of a LangChain/LangGraph/pydantic method)."""
    for name in dir(cls):
        raw = inspect.getattr_static(cls, name)
        func = raw.__func__ if isinstance(raw, classmethod | staticmethod) else raw
        if name.startswith("_") or not inspect.isfunction(func):
            continue
        if not inspect.unwrap(func).__module__.startswith(_OURS):
            continue
        if any(name in vars(base) and not base.__module__.startswith(_OURS) for base in cls.__mro__[1:]):
            continue
        yield name


def _instances(store: MemoryStore) -> dict[str, Callable[[], object]]:
    unit = MemoryUnit(task_type="data_cleaning", content="Read Chinese CSVs with encoding='utf-8-sig'.")
    return {
        "Hindsight": lambda: Hindsight(store=store),
        "HindsightMemory": lambda: HindsightMemory(store=store),
        "HindsightMiddleware": lambda: HindsightMiddleware(store),
        "HindsightRetriever": lambda: HindsightRetriever(store=store),
        "HindsightStore": lambda: HindsightStore(store),
        "Lifecycle": lambda: Lifecycle(store),
        "MemoryStore": lambda: store,
        "MemoryUnit": lambda: unit,
        "MemoryContext": lambda: unit.context,
        "Reflector": lambda: Reflector(store=store),
        "BackgroundReflector": lambda: BackgroundReflector(Reflector(store=store)),
        "RunJournal": lambda: RunJournal(store),
        "RunRecord": lambda: RunRecord(run_id="r1"),
        "ScoringWeights": ScoringWeights,
        "Step": lambda: Step(type="tool_call", tool_name="read_csv"),
        "Trajectory": lambda: Trajectory(run_id="r1"),
        "TrajectoryRecorder": TrajectoryRecorder,
        "ConfidencePolicy": ConfidencePolicy,
        "LifecyclePolicy": LifecyclePolicy,
        "LocalEmbeddings": LocalEmbeddings,
        "PromptTemplates": lambda: get_templates("en"),
        "ScoredMemory": lambda: ScoredMemory(memory=unit, score=0.5),
        "TaskTypeVocabulary": TaskTypeVocabulary,
    }


def _stored(store: MemoryStore) -> str:
    return store.add(MemoryUnit(task_type="data_cleaning", content="Read Chinese CSVs with utf-8-sig.")).memory_id


# Methods whose ``**kwargs`` are data, checked by the method itself with the package's own typed error (which
# names the field it likely means: "contnet: unknown field (did you mean 'content'?)").
_OWN_CHECK: dict[str, tuple[type[Exception], Callable[[Any, MemoryStore], object]]] = {
    "MemoryStore.update": (InvalidMemoryError, lambda o, s: o.update(_stored(s), contnet="x")),  # a unit's fields
    "MemoryStore.aupdate": (InvalidMemoryError, lambda o, s: asyncio.run(o.aupdate(_stored(s), contnet="x"))),
    "MemoryUnit.evolve": (InvalidMemoryError, lambda o, s: o.evolve(contnet="x")),
    "HindsightRetriever.configure": (ConfigurationError, lambda o, s: o.configure(kk=3)),  # its recall options
    "Hindsight.memory": (ConfigurationError, lambda o, s: o.memory(memory_kye="x")),  # HindsightMemory's
}

METHODS = sorted(f"{c}.{m}" for c, cls in _root_classes().items() for m in _public_methods(cls))


def _misspelt(func: Callable[..., Any]) -> tuple[str, str | None]:
    """A slip on the method's longest keyword (its first two letters swapped) and that keyword; no keyword: none."""
    params = inspect.signature(func).parameters.values()
    named = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"]
    if not named:
        return "bogus_option", None
    meant = max(named, key=lambda n: (len(n), n))
    wrong = meant[1] + meant[0] + meant[2:] if len(meant) > 1 else meant * 2
    return wrong, meant


def _call(method: Callable[..., Any], **kwargs: Any) -> None:
    result = method(**kwargs)
    if inspect.isawaitable(result):
        asyncio.run(result)  # type: ignore[arg-type]


def test_the_discovery_sees_the_methods_the_brief_names() -> None:
    assert len(METHODS) > 100
    named = ["Hindsight.recall", "Hindsight.arecall", "MemoryStore.search", "MemoryStore.add", "Lifecycle.maintain"]
    named += ["Reflector.reflect", "MemoryStore.record_feedback", "MemoryStore.forget", "MemoryStore.history"]
    assert set(named) <= set(METHODS)
    assert "HindsightStore.batch" not in METHODS  # LangGraph's BaseStore contract
    assert "TrajectoryRecorder.on_tool_end" not in METHODS  # LangChain's callback contract


@pytest.mark.parametrize("qualname", METHODS)
def test_every_public_method_refuses_a_misspelt_keyword_typed(memory_store: MemoryStore, qualname: str) -> None:
    owner, name = qualname.split(".")
    instances = _instances(memory_store)
    assert owner in instances, f"add an instance of {owner} to _instances()"
    obj = instances[owner]()
    if qualname in _OWN_CHECK:
        error, call = _OWN_CHECK[qualname]
        with pytest.raises(error, match="did you mean"):
            call(obj, memory_store)
        return
    method = getattr(obj, name)
    wrong, meant = _misspelt(method)
    with pytest.raises(UnknownOptionError) as caught:
        _call(method, **{wrong: None})
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, ConfigurationError)
    message = str(caught.value)
    assert message.startswith(f"unknown {owner}.{name} option {wrong!r}"), message
    if meant is not None:
        assert message.endswith(f"(did you mean {meant!r}?)"), message


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda s: Hindsight(store=s).recall("q", kk=3), "unknown Hindsight.recall option 'kk' (did you mean 'k'?)"),
        (
            lambda s: s.search("q", namspace="x"),
            "unknown MemoryStore.search option 'namspace' (did you mean 'namespace'?)",
        ),
        (
            lambda s: s.add(MemoryUnit(task_type="t", content="Read CSVs with utf-8-sig."), dedup=False),
            "unknown MemoryStore.add option 'dedup' (did you mean 'dedupe'?)",
        ),
        (lambda s: Lifecycle(s).maintain(nw=None), "unknown Lifecycle.maintain option 'nw' (did you mean 'now'?)"),
        (
            lambda s: HindsightRetriever(store=s).invoke("q", kk=3),
            "unknown HindsightRetriever.invoke option 'kk' (did you mean 'k'?)",
        ),
        (
            lambda s: asyncio.run(HindsightRetriever(store=s).ainvoke("q", kk=3)),
            "unknown HindsightRetriever.ainvoke option 'kk' (did you mean 'k'?)",
        ),
        (
            lambda s: asyncio.run(s.aforget("m1", namspace="x")),
            "unknown MemoryStore.aforget option 'namspace' (did you mean 'namespace'?)",
        ),
        (
            lambda s: asyncio.run(Hindsight(store=s).arecall("q", kk=3)),
            "unknown Hindsight.arecall option 'kk' (did you mean 'k'?)",
        ),
    ],
)
def test_the_named_slips(memory_store: MemoryStore, call: Callable[[MemoryStore], object], expected: str) -> None:
    with pytest.raises(UnknownOptionError) as caught:
        call(memory_store)
    assert str(caught.value) == expected


def test_the_retriever_keeps_langchains_run_time_keywords(memory_store: MemoryStore) -> None:
    retriever = HindsightRetriever(store=memory_store)
    assert retriever.invoke("清洗 data.csv", k=2, verbose=True, namespace="default") == []


def test_a_type_error_raised_inside_the_body_passes_through_unchanged() -> None:
    """Only a keyword the signature lacks is re-raised typed: a call that bound never is."""

    class Tool:
        def run(self, text: str, *, k: int = 1) -> str:
            return text + k  # type: ignore[operator]  # a TypeError from the body

    checked = refuse_unknown_keywords(Tool)
    with pytest.raises(TypeError) as caught:
        checked().run("q", k=2)
    assert not isinstance(caught.value, UnknownOptionError)
    assert "can only concatenate str" in str(caught.value)
    with pytest.raises(UnknownOptionError, match=r"unknown Tool.run option 'kk' \(did you mean 'k'\?\)"):
        checked().run("q", kk=2)  # type: ignore[call-arg]


def test_decorated_methods_keep_their_signature_and_kind() -> None:
    assert list(inspect.signature(MemoryStore.search).parameters)[:2] == ["store", "query"]  # store.search's
    assert inspect.iscoroutinefunction(Hindsight.arecall)
    assert inspect.iscoroutinefunction(MemoryStore.aforget)
    assert isinstance(inspect.getattr_static(RunRecord, "from_json"), classmethod)
    assert isinstance(inspect.getattr_static(ConfidencePolicy, "task_key"), staticmethod)
