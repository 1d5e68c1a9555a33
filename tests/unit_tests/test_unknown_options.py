"""A misspelt option is refused, never ignored nor a bare ``TypeError``: ``min_relevence=`` names ``min_relevance``.

Every public constructor and factory (the root's public names, the session, the reflectors, the policies, the
sharing and MCP entry points) refuses a keyword it does not take with an
:class:`~langchain_hindsight.errors.UnknownOptionError` naming the public class (or function) and the option the
keyword most likely misspells. That error is a :class:`ConfigurationError` (a ``ValueError``) and a ``TypeError``
(what Python raised before for a plain signature), so both kinds of ``except`` keep working. LangChain's own
retriever fields (``tags``, ``metadata``) keep working, and the decorated signatures stay what IDEs and mypy see.
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Callable
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

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
    build_task_prompt,
    format_experiences,
    recall_node,
    reflect_node,
    with_hindsight,
)
from langchain_hindsight._checks import check_options, closest_name, refuse_unknown_keywords
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.errors import ConfigurationError, InvalidMemoryError, UnknownOptionError
from langchain_hindsight.hindsight import HindsightOptions
from langchain_hindsight.lifecycle.policy import LifecyclePolicy
from langchain_hindsight.prompts import get_templates
from langchain_hindsight.recall.engine import RecallSettings
from langchain_hindsight.recall.ranking import FloorRule
from langchain_hindsight.recall.scoring import score_memory
from langchain_hindsight.reflection.background import BackgroundReflector
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.session import SessionConfig, build_config, session_for
from langchain_hindsight.sharing.access import ScopedMemory
from langchain_hindsight.sharing.mcp_server import create_server
from langchain_hindsight.sharing.principals import AccessPolicy, Principal
from langchain_hindsight.sharing.retriever import ScopedRetriever
from langchain_hindsight.store import ConfidencePolicy
from langchain_hindsight.taxonomy import TaskTypeVocabulary, normalize_task_type
from langchain_hindsight.types import MemoryContext, ScoredMemory


class _State(TypedDict):
    task: str


def _graph() -> Any:
    builder = StateGraph(_State)
    builder.add_node("noop", lambda state: {})
    builder.add_edge(START, "noop")
    builder.add_edge("noop", END)
    return builder.compile()


def _unit() -> MemoryUnit:
    return MemoryUnit(task_type="data_cleaning", content="Read Chinese CSVs with encoding='utf-8-sig'.")


def _alice() -> Principal:
    return Principal("alice", "alice")


# (public name in the message, misspelt keyword, the option it means, the call)
CASES: dict[str, tuple[str, str, str, Callable[[MemoryStore], object]]] = {
    "Hindsight": ("Hindsight", "min_relevence", "min_relevance", lambda s: Hindsight(store=s, min_relevence=0.3)),
    "Hindsight.middleware": (
        "Hindsight.middleware",
        "min_relevence",
        "min_relevance",
        lambda s: Hindsight(store=s).middleware(min_relevence=0.3),
    ),
    "Hindsight.wrap": (
        "Hindsight.wrap",
        "plcement",
        "placement",
        lambda s: Hindsight(store=s).wrap(_graph(), plcement="system_message"),
    ),
    "Hindsight.memory": (
        "HindsightMemory",
        "memory_kye",
        "memory_key",
        lambda s: Hindsight(store=s).memory(memory_kye="x"),
    ),
    "MemoryStore": (
        "MemoryStore",
        "merge_treshold",
        "merge_threshold",
        lambda s: MemoryStore(backend=s.backend, merge_treshold=0.9),
    ),
    "SessionConfig": (
        "SessionConfig",
        "min_relevence",
        "min_relevance",
        lambda s: SessionConfig(store=s, min_relevence=0.3),
    ),
    "build_config": (
        "build_config",
        "min_relevence",
        "min_relevance",
        lambda s: build_config(s, min_relevence=0.3),
    ),
    "HindsightSession.derive": (
        "HindsightSession.derive",
        "reflct",
        "reflect",
        lambda s: session_for(s).derive(reflct=False),
    ),
    "HindsightMiddleware": (
        "HindsightMiddleware",
        "max_pendng",
        "max_pending",
        lambda s: HindsightMiddleware(s, max_pendng=3),
    ),
    "HindsightMiddleware, a session option": (
        "HindsightMiddleware",
        "min_relevence",
        "min_relevance",
        lambda s: HindsightMiddleware(s, min_relevence=0.3),
    ),
    "recall_node": ("recall_node", "block_kye", "block_key", lambda s: recall_node(s, block_kye="x")),
    "reflect_node": ("reflect_node", "min_relevence", "min_relevance", lambda s: reflect_node(s, min_relevence=0.3)),
    "with_hindsight": (
        "with_hindsight",
        "min_relevence",
        "min_relevance",
        lambda s: with_hindsight(_graph(), s, min_relevence=0.3),
    ),
    "HindsightMemory": (
        "HindsightMemory",
        "min_relevence",
        "min_relevance",
        lambda s: HindsightMemory(store=s, min_relevence=0.3),
    ),
    "HindsightRetriever": (
        "HindsightRetriever",
        "min_relevence",
        "min_relevance",
        lambda s: HindsightRetriever(store=s, min_relevence=0.3),
    ),
    "ScopedRetriever": (
        "ScopedRetriever",
        "principl",
        "principal",
        lambda s: ScopedRetriever(store=s, principl=_alice()),
    ),
    "HindsightStore": (
        "HindsightStore",
        "min_relevence",
        "min_relevance",
        lambda s: HindsightStore(s, min_relevence=0.3),
    ),
    "Reflector": (
        "Reflector",
        "structured_ouput",
        "structured_output",
        lambda s: Reflector(store=s, structured_ouput=False),
    ),
    "BackgroundReflector": (
        "BackgroundReflector",
        "max_queu",
        "max_queue",
        lambda s: BackgroundReflector(Reflector(store=s), max_queu=3),
    ),
    "TrajectoryRecorder": (
        "TrajectoryRecorder",
        "max_finshed",
        "max_finished",
        lambda s: TrajectoryRecorder(max_finshed=3),
    ),
    "Lifecycle": ("Lifecycle", "polcy", "policy", lambda s: Lifecycle(s, polcy=LifecyclePolicy())),
    "LocalEmbeddings": ("LocalEmbeddings", "batch_sise", "batch_size", lambda s: LocalEmbeddings(batch_sise=8)),
    "LifecyclePolicy": ("LifecyclePolicy", "decay_factr", "decay_factor", lambda s: LifecyclePolicy(decay_factr=0.5)),
    "RunJournal": ("RunJournal", "namspace", "namespace", lambda s: RunJournal(s, namspace="alice")),
    "ScoringWeights": ("ScoringWeights", "similarty", "similarity", lambda s: ScoringWeights(similarty=0.4)),
    "RecallSettings": ("RecallSettings", "min_relevence", "min_relevance", lambda s: RecallSettings(min_relevence=0.3)),
    "FloorRule": ("FloorRule", "threshold_cjc", "threshold_cjk", lambda s: FloorRule(threshold_cjc=0.1)),
    "ConfidencePolicy": (
        "ConfidencePolicy",
        "success_delt",
        "success_delta",
        lambda s: ConfidencePolicy(success_delt=0.1),
    ),
    "TaskTypeVocabulary": (
        "TaskTypeVocabulary",
        "falback",
        "fallback",
        lambda s: TaskTypeVocabulary(falback="general"),
    ),
    "PromptTemplates": (
        "PromptTemplates",
        "block_heder",
        "block_header",
        lambda s: dataclasses.replace(get_templates("zh"), block_heder="x"),
    ),
    "Step": ("Step", "tool_nmae", "tool_name", lambda s: Step(type="tool_call", tool_nmae="read_csv")),
    "Trajectory": (
        "Trajectory",
        "final_anwser",
        "final_answer",
        lambda s: Trajectory(run_id="r1", final_anwser="done"),
    ),
    "Principal": ("Principal", "wirte", "write", lambda s: Principal("alice", "alice", wirte=frozenset({"shared"}))),
    "AccessPolicy": ("AccessPolicy", "principal", "principals", lambda s: AccessPolicy(principal=[_alice()])),
    "ScopedMemory": ("ScopedMemory", "journl", "journal", lambda s: ScopedMemory(s, _alice(), journl=None)),
    "create_server": (
        "create_server",
        "tokn",
        "token",
        lambda s: create_server(ScopedMemory(s, _alice()), tokn="t" * 32),
    ),
    "RunRecord": ("RunRecord", "namspace", "namespace", lambda s: RunRecord(run_id="r1", namspace="alice")),
    "ScoredMemory": (
        "ScoredMemory",
        "similarty",
        "similarity",
        lambda s: ScoredMemory(memory=_unit(), score=0.5, similarty=0.5),
    ),
    "score_memory": (
        "score_memory",
        "task_tpye",
        "task_type",
        lambda s: score_memory(_unit(), 0.5, task_tpye="data_cleaning"),
    ),
    "get_templates": ("get_templates", "locle", "locale", lambda s: get_templates(locle="en")),
    "normalize_task_type": (
        "normalize_task_type",
        "vocabulary_",
        "vocabulary",
        lambda s: normalize_task_type("清洗", vocabulary_=None),
    ),
    "format_experiences": (
        "format_experiences",
        "max_lnes",
        "max_lines",
        lambda s: format_experiences([], max_lnes=3),
    ),
    "build_task_prompt": (
        "build_task_prompt",
        "locle",
        "locale",
        lambda s: build_task_prompt("清洗 data.csv", [], locle="en"),
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_misspelt_keyword_names_the_public_callable_and_the_meant_option(
    memory_store: MemoryStore, case: tuple[str, str, str, Callable[[MemoryStore], object]]
) -> None:
    public, wrong, meant, make = case
    with pytest.raises(UnknownOptionError) as caught:
        make(memory_store)
    assert str(caught.value) == f"unknown {public} option {wrong!r} (did you mean {meant!r}?)"
    # a ConfigurationError (so a ValueError) for this package's callers, a TypeError for Python's
    assert isinstance(caught.value, ConfigurationError)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, TypeError)


def test_every_public_callable_at_the_root_is_covered() -> None:
    """A class or function added to the root without the check (or without a case here) fails this test.

    The root's public names and the names still importable from it (deprecated there, public in their module).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        public = {name: getattr(langchain_hindsight, name) for name in langchain_hindsight.__all__}
        public |= {name: getattr(langchain_hindsight, name) for name in langchain_hindsight._ALSO_IMPORTABLE}
    callables = {
        name
        for name, obj in public.items()
        if callable(obj) and not (isinstance(obj, type) and issubclass(obj, Exception))
    }
    unchecked = {
        "MemoryUnit",  # pydantic's extra="forbid" refuses, with the unit's own InvalidMemoryError: below
        "MemoryContext",  # the same, as a unit's context
    }
    assert callables - unchecked <= CASES.keys()
    assert unchecked <= callables  # the exceptions are real names


def test_the_recorder_never_names_its_internal_base(memory_store: MemoryStore) -> None:
    with pytest.raises(UnknownOptionError) as caught:
        TrajectoryRecorder(bogus=1)  # type: ignore[call-arg]
    assert str(caught.value) == "unknown TrajectoryRecorder option 'bogus'"  # nothing close: no guess
    assert "RunRegistry" not in str(caught.value)


def test_a_memory_unit_field_misspelt_is_an_invalid_memory_naming_the_meant_field() -> None:
    """A unit is data as well as a constructor (``from_dict`` of an imported file): it keeps InvalidMemoryError."""
    with pytest.raises(InvalidMemoryError, match=r"contnet: unknown field \(did you mean 'content'\?\)"):
        MemoryUnit(contnet="Read Chinese CSVs with encoding='utf-8-sig'.")  # type: ignore[call-arg]
    with pytest.raises(InvalidMemoryError, match=r"tools_usd: unknown field \(did you mean 'tools_used'\?\)"):
        MemoryUnit.from_dict({"content": "Read CSVs with utf-8-sig.", "context": {"tools_usd": ["pandas"]}})
    with pytest.raises(InvalidMemoryError, match=r"input_sampel: unknown field \(did you mean 'input_sample'\?\)"):
        MemoryContext(input_sampel="a,b")  # type: ignore[call-arg]


def test_known_keywords_and_stored_data_are_untouched(memory_store: MemoryStore) -> None:
    retriever = HindsightRetriever(store=memory_store, tags=["exp"], metadata={"team": "a"}, k=2, min_relevance=None)
    assert (retriever.tags, retriever.metadata, retriever.k, retriever.settings.min_relevance) == (
        ["exp"],
        {"team": "a"},
        2,
        None,
    )
    assert retriever.invoke("清洗 data.csv") == []  # the store is empty: nothing recalled, nothing raised
    # validation of stored data (not a keyword call) keeps pydantic's rule: a field a newer version wrote is ignored
    trajectory = Trajectory.model_validate({"run_id": "r1", "written_by_a_newer_version": 1})
    assert trajectory.run_id == "r1"
    assert dataclasses.replace(SessionConfig(store=memory_store), k=5).k == 5


def test_the_decorated_signatures_stay_typed_and_visible() -> None:
    assert "recall" in inspect.signature(Hindsight).parameters  # the settings object; the keywords are typed:
    assert "min_relevance" in HindsightOptions.__annotations__  # **options: Unpack[HindsightOptions]
    assert "merge_threshold" in inspect.signature(MemoryStore).parameters
    assert "max_finished" in inspect.signature(TrajectoryRecorder).parameters
    assert "block_key" in inspect.signature(recall_node).parameters
    assert next(iter(inspect.signature(SessionConfig).parameters)) == "store"
    assert Hindsight.middleware.__name__ == "middleware"


def test_a_positional_only_name_given_as_a_keyword_is_refused_too(memory_store: MemoryStore) -> None:
    with pytest.raises(UnknownOptionError, match="unknown HindsightMemory option 'hindsight'"):
        HindsightMemory(hindsight=Hindsight(store=memory_store))


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


@pytest.mark.parametrize(
    ("wrong", "meant"),
    [("contnet", "content"), ("K", "k"), ("min_relevence", "min_relevance"), ("namepsace", "namespace"), ("zzz", None)],
)
def test_the_closest_name_prefers_the_fewest_slips(wrong: str, meant: str | None) -> None:
    assert closest_name(wrong, ["content", "context", "k", "min_relevance", "min_score", "namespace"]) == meant


def test_a_bare_kwargs_is_left_to_the_callee() -> None:
    """Without fields, ``also`` or a TypedDict the decorator cannot know the names: it passes them on."""

    @refuse_unknown_keywords
    def passes_on(**kwargs: Any) -> dict[str, Any]:
        return kwargs

    assert passes_on(anything=1) == {"anything": 1}
