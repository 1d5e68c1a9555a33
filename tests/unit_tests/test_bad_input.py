"""Bad input, property-based: malformed, truncated, huge, binary or wrongly typed values.

Whatever arrives (an LLM's answer, a tool's output, a caller's arguments) ends in a typed error from
``errors.py`` or a logged skip: never another exception, never a crash inside the agent, never an
invalid unit in the store, and a failed call never alters what is already stored.

The unit tier draws a few dozen examples per property on the in-memory store; the integration tier's
``tests/integration_tests/test_bad_input_sweep.py`` runs the store properties with many more, on embedded Chroma.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.tools import tool

from langchain_hindsight import HindsightError, MemoryStore, MemoryUnit, Reflector, Trajectory, TrajectoryRecorder
from langchain_hindsight.errors import InvalidMemoryError, StoreError
from langchain_hindsight.store._codec import unit_from_record, unit_to_metadata
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.testing import call, scripted_model
from langchain_hindsight.types import MemoryContext
from tests.fakes import HashEmbeddings

FIELDS = list(MemoryUnit.model_fields)
SETTINGS = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.binary(max_size=40),
    st.text(max_size=40),
    st.text(min_size=1, max_size=10).map(lambda t: t * (4100 // len(t))),  # too long for content
    st.lists(st.one_of(st.integers(), st.text(max_size=8), st.none()), max_size=4),
    st.dictionaries(st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=8), st.none()), max_size=3),
    st.just(object()),
)
not_a_string = junk.filter(lambda v: not isinstance(v, str))
bad_namespace = st.one_of(
    not_a_string.filter(lambda v: v is not None), st.sampled_from(["", " pad", "pad ", "x" * 300])
)


def seeded(s: MemoryStore) -> MemoryStore:
    """``s`` holding two units and an archived one (one with feedback)."""
    a = s.add(MemoryUnit(task_type="data_cleaning", content="Read Chinese CSVs with encoding='utf-8-sig'.")).unit
    s.add(MemoryUnit(task_type="api_call", content="Retry the geocoding API three times."))
    s.archive([s.add(MemoryUnit(content="An archived lesson about weekly reports.")).memory_id])
    s.record_feedback([a.memory_id], success=True)
    return s


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    """A fast store (hash embeddings, in memory) holding two units and an archived one.

    The same properties run on the embedded Chroma store, with many more examples, in the integration tier
    (tests/integration_tests/test_bad_input_sweep.py).
    """
    with MemoryStore(backend=InMemoryBackend(), embeddings=HashEmbeddings()) as s:
        yield seeded(s)


def snapshot(store: MemoryStore) -> list[tuple[str, str]]:
    return sorted(
        (u.memory_id, u.model_dump_json()) for ns in store.namespaces() for u in store.list_units(namespace=ns)
    )


# ---------------------------------------------------------------- the memory model


@SETTINGS
@given(st.dictionaries(st.sampled_from([*FIELDS, "bogus", "source_override"]), junk, max_size=6))
def test_memory_unit_is_valid_or_raises_invalid_memory_error(data: dict[str, Any]) -> None:
    try:
        unit = MemoryUnit(**data)
    except InvalidMemoryError as e:
        message = str(e)
        assert any(f in message for f in [*FIELDS, *data, "value"]), message  # names the field (or the unknown key)
        return
    assert MemoryUnit.from_dict(unit.to_dict()) == unit  # whatever is accepted is a complete, valid unit


@SETTINGS
@given(junk)
def test_from_dict_of_anything_is_valid_or_typed(value: Any) -> None:
    with contextlib.suppress(InvalidMemoryError):
        MemoryUnit.from_dict(value)


words = st.text(st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1, max_size=60).filter(str.strip)


@SETTINGS
@given(
    content=words,
    task_type=words,
    confidence=st.floats(0, 1),
    tags=st.lists(words, max_size=4),
    access=st.integers(0, 10**6),
    params=st.dictionaries(words, st.one_of(st.integers(), words, st.booleans()), max_size=3),
)
def test_valid_units_round_trip_exactly_through_the_chroma_record(
    content: str, task_type: str, confidence: float, tags: list[str], access: int, params: dict[str, Any]
) -> None:
    unit = MemoryUnit(
        content=content,
        task_type=task_type,
        confidence=confidence,
        tags=tags,
        access_count=access,
        context={"parameters": params},
    )
    assert unit_from_record(unit.memory_id, unit.content, unit_to_metadata(unit)) == unit


@SETTINGS
@given(st.one_of(st.none(), st.dictionaries(st.text(max_size=12), junk, max_size=8)), st.one_of(st.none(), st.text()))
def test_corrupt_records_raise_store_error(metadata: dict[str, Any] | None, document: str | None) -> None:
    if metadata is not None and "schema" not in metadata:
        metadata = {**metadata, "schema": 1}
    with contextlib.suppress(StoreError):
        unit_from_record("mem_x", document, metadata)


# ---------------------------------------------------------------- the store's public methods


def _calls(store: MemoryStore, ids: list[str]) -> dict[str, Callable[[Any, Any], Any]]:
    """Each public method with junk in one argument: ``(junk, other_junk) -> result``."""
    unit = MemoryUnit(content="A valid new unit.")
    return {
        "add": lambda j, _: store.add(j),
        "add namespace": lambda _, ns: store.add(unit, namespace=ns),
        "add dedupe": lambda j, _: store.add(unit, dedupe=j).unit if not isinstance(j, bool) else store.add(j).unit,
        "add_many": lambda j, _: store.add_many(j),
        "add_many mixed": lambda j, _: store.add_many([unit, j]),
        "get": lambda j, _: store.get(j),
        "get_many": lambda j, _: store.get_many([ids[0], j]),
        "get namespace": lambda _, ns: store.get(ids[0], namespace=ns),
        "update field": lambda j, k: store.update(ids[0], **{FIELDS[hash(repr(k)) % len(FIELDS)]: j}),
        "update_many": lambda j, _: store.update_many(j),
        "feedback ids": lambda j, _: store.record_feedback(j),
        "feedback success": lambda j, _: store.record_feedback(ids, success=j) if not isinstance(j, bool) else None,
        "feedback rejected": lambda j, _: store.record_feedback(ids, rejected=j) if not isinstance(j, bool) else None,
        "feedback now": lambda j, _: store.record_feedback(ids, now=j) if j is not None else None,
        "archive": lambda j, _: store.archive(j),
        "restore": lambda j, _: store.restore(j),
        "share": lambda j, ns: store.share(ids, to_namespace=ns),
        "forget": lambda j, _: store.forget(j, scrub=False),
        "forget scrub": lambda j, _: (
            store.forget(ids[0], scrub=j) if not isinstance(j, bool) and j is not None else None
        ),
        "history": lambda j, _: store.history(j),
        "search": lambda j, _: store.search(j),
        "search k": lambda j, _: store.search("csv", k=j),
        "lexical_search": lambda j, k: store.lexical_search(j, k=k) if isinstance(j, str) else store.lexical_search(j),
        "list_units": lambda j, _: store.list_units(status=j) if j is not None else None,
        "list limit": lambda j, _: store.list_units(limit=j) if j is not None else None,
        "list filters": lambda j, k: store.list_units(task_type=j, kind=k) if j is not None else None,
        "iter_units": lambda j, _: list(store.iter_units(batch_size=j)),
        "count": lambda j, _: store.count(status=j) if j is not None else None,
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_public_methods_raise_typed_errors_and_alter_nothing(store: MemoryStore, data: st.DataObject) -> None:
    ids = [u.memory_id for u in store.list_units()]
    calls = _calls(store, ids)
    name = data.draw(st.sampled_from(sorted(calls)), label="method")
    value = data.draw(not_a_string if name not in {"get", "history", "search", "lexical_search"} else junk)
    other = data.draw(bad_namespace if name in {"add namespace", "get namespace", "share"} else junk)
    before = snapshot(store)
    try:
        calls[name](value, other)
    except HindsightError:
        assert snapshot(store) == before, f"{name} failed but changed the store"
    except Exception as e:  # pragma: no cover - this is the failure being tested for
        pytest.fail(f"{name}({value!r:.80}) raised {type(e).__name__}: {e}")
    for unit in store.list_units():  # whatever happened, every stored unit is valid and complete
        assert store.get(unit.memory_id) == unit


@pytest.mark.parametrize(
    ("call_", "field"),
    [
        (lambda s: s.add_many([MemoryUnit(content="x"), "nope"]), "MemoryUnit"),
        (lambda s: s.record_feedback(["mem_1"], success="yes"), "success"),
        (lambda s: s.record_feedback(["mem_1"], now="2026-01-01"), "now"),
        (lambda s: s.list_units(status="deleted"), "status"),
        (lambda s: s.count(status="gone"), "status"),
        (lambda s: list(s.iter_units(batch_size=0)), "batch_size"),
        (lambda s: s.add(MemoryUnit(content="x"), dedupe="no"), "dedupe"),
        (lambda s: s.update_many(None), "units"),
        (lambda s: s.forget("mem_1", scrub="yes"), "scrub"),
        (lambda s: s.search("x", k=0), "k"),
        (lambda s: s.get("x", namespace=" x"), "namespace"),
    ],
)
def test_errors_name_the_offending_argument(
    store: MemoryStore, call_: Callable[[MemoryStore], Any], field: str
) -> None:
    with pytest.raises(HindsightError, match=field):
        call_(store)


def test_text_that_cannot_be_stored_is_refused_naming_the_field(store: MemoryStore) -> None:
    before = snapshot(store)
    lone = json.loads('"broken \\ud800 surrogate"')  # what json.loads makes of a bad escape in LLM output
    with pytest.raises(InvalidMemoryError, match=r"task_description|content"):
        store.add(MemoryUnit(content="fine text", task_description=lone))
    with pytest.raises(InvalidMemoryError, match="content"):
        store.add(MemoryUnit(content=lone))
    assert snapshot(store) == before


# ---------------------------------------------------------------- LLM output into the Reflector

SEED = json.dumps(
    {
        "experiences": [
            {
                "task_type": "data-clean",
                "content": "使用pandas读取CSV时，如果文件包含中文，需要指定encoding='utf-8-sig'。",
                "context": {"tools_used": ["pandas.read_csv"], "parameters": {"encoding": "utf-8-sig"}},
                "confidence": 0.8,
                "tags": ["csv", "encoding"],
            }
        ]
    },
    ensure_ascii=False,
)

llm_answers = st.one_of(
    st.text(max_size=300),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    st.integers(0, len(SEED)).map(lambda n: SEED[:n]),  # truncated JSON
    st.builds(
        lambda c, conf, tags, ctx, tt: json.dumps(
            {"experiences": [{"content": c, "confidence": conf, "tags": tags, "context": ctx, "task_type": tt}]}
        ),
        st.one_of(st.text(max_size=50), st.integers(), st.none(), st.lists(st.text(max_size=5), max_size=3)),
        st.one_of(st.floats(allow_nan=False), st.text(max_size=5), st.none(), st.integers()),
        st.one_of(st.text(max_size=5), st.lists(st.integers(), max_size=3), st.none()),
        st.one_of(
            st.lists(st.integers(), max_size=2),
            st.text(max_size=5),
            st.dictionaries(st.text(max_size=4), st.integers()),
        ),
        st.one_of(st.none(), st.integers(), st.text(max_size=10)),
    ),
    st.just('{"experiences": [{"content": "' + "很长的经验。" * 2000 + '"}]}'),  # huge
    st.just('{"experiences": [{"content": "bad escape \\ud800 here"}]}'),
    st.just("[" * 500 + "]" * 500),  # deep nesting
    st.just('{"experiences": "not a list"}'),
    st.just("```json\n" + SEED + "\n```"),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=llm_answers)
def test_any_llm_answer_stores_only_valid_units(store: MemoryStore, answer: str) -> None:
    reflector = Reflector(model=scripted_model(answer), store=store, rules=False)
    traj = Trajectory(run_id=str(uuid.uuid4()), task="清洗客户.csv数据", outcome="success")
    try:
        stored = reflector.reflect(traj)
    except HindsightError:
        stored = []
    for unit in stored:
        assert store.get(unit.memory_id) == unit
        assert unit.source == "agent_inference"


# ---------------------------------------------------------------- tool output into the recorder

tool_outputs = st.one_of(
    st.text(max_size=200),
    st.text(min_size=1, max_size=30).map(lambda t: t * (60_000 // len(t))),  # huge
    st.binary(max_size=100),
    st.integers(),
    st.none(),
    st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.binary(max_size=5)), max_size=3),
    st.just({"not": object()}),
)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(output=tool_outputs, fails=st.booleans())
def test_any_tool_output_never_breaks_the_agent_or_the_recorder(store: MemoryStore, output: Any, fails: bool) -> None:
    @tool
    def fetch(url: str) -> Any:
        """Fetch a URL."""
        if fails:
            raise ValueError(output if isinstance(output, str) else repr(output))
        return output

    from langchain.agents.middleware import ToolErrorMiddleware

    model = scripted_model(call("fetch", url="https://example.com/\x00"), "done")
    agent = create_agent(model, [fetch], middleware=[ToolErrorMiddleware(lambda e, r: f"{type(e).__name__}: {e}")])
    recorder = TrajectoryRecorder(max_content_chars=500)
    result = agent.invoke({"messages": [("user", "fetch it")]}, config={"callbacks": [recorder]})
    assert result["messages"][-1].content == "done"
    traj = recorder.last_trajectory
    assert traj is not None
    assert all(len(step.content) <= 1000 for step in traj.steps)
    for unit in Reflector(store=store).reflect(traj):  # rules only: whatever it keeps is a valid unit
        assert store.get(unit.memory_id) == unit


@SETTINGS
@given(payload=junk, other=junk)
def test_recorder_callbacks_never_raise_on_malformed_events(payload: Any, other: Any) -> None:
    recorder = TrajectoryRecorder()
    root, child = uuid.uuid4(), uuid.uuid4()
    recorder.on_chain_start(None, payload, run_id=root, parent_run_id=None, name=other)  # type: ignore[arg-type]
    recorder.on_tool_start({"name": other}, payload, run_id=child, parent_run_id=root, inputs=payload)  # type: ignore[arg-type]
    recorder.on_tool_end(payload, run_id=child, parent_run_id=root)
    recorder.on_tool_error(ValueError(repr(payload)), run_id=uuid.uuid4(), parent_run_id=root)
    recorder.on_llm_end(payload, run_id=uuid.uuid4(), parent_run_id=root)  # type: ignore[arg-type]
    recorder.on_chain_end(payload, run_id=root)  # type: ignore[arg-type]
    recorder.on_chain_end(payload, run_id=uuid.uuid4())  # an unknown run


def test_one_bad_llm_item_is_skipped_and_the_good_ones_kept(store: MemoryStore) -> None:
    answer = (
        '{"experiences": [{"content": "bad escape \\ud800 here"}, {"content": 5}, '
        '{"content": "Pass encoding=\'utf-8-sig\' when pandas reads a Chinese CSV.", "confidence": "high"}]}'
    )
    stored = Reflector(model=scripted_model(answer), store=store, rules=False).reflect(
        Trajectory(run_id=str(uuid.uuid4()), task="清洗客户.csv数据")
    )
    assert [u.content for u in stored] == ["Pass encoding='utf-8-sig' when pandas reads a Chinese CSV."]
    assert store.get(stored[0].memory_id) == stored[0]


# ----------------------------------------------------------------------------- round 2: the cases a red team found
def _nested(depth: int, kind: type = list) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if kind is list else {"a": value}
    return value


def _api_cases(store: MemoryStore) -> dict[str, Callable[[], object]]:
    from datetime import UTC, datetime

    from langchain_hindsight import HindsightRetriever, Lifecycle, RunJournal

    lc = Lifecycle(store)
    return {  # 23 cases
        "lone-surrogate namespace (count)": lambda: store.count(namespace="a\ud800"),
        "lone-surrogate namespace (add)": lambda: store.add(MemoryUnit(content="x"), namespace="a\ud800"),
        "lone-surrogate namespace (unit)": lambda: MemoryUnit(content="x", namespace="b\udfff"),
        "deep context list": lambda: MemoryUnit(content="x", context={"parameters": {"p": _nested(5000)}}),
        "deep context dict": lambda: MemoryUnit(content="x", context={"parameters": {"p": _nested(5000, dict)}}),
        "deep MemoryContext": lambda: MemoryContext(parameters={"p": _nested(100)}),
        "retriever k=-1": lambda: HindsightRetriever(store=store, k=-1),
        "retriever k=nan": lambda: HindsightRetriever(store=store, k=float("nan")),
        "retriever min_relevance=nan": lambda: HindsightRetriever(store=store, min_relevance=float("nan")),
        "maintain now='x'": lambda: lc.maintain(now="x"),  # type: ignore[arg-type]
        "decay now=nan": lambda: lc.decay(now=float("nan")),  # type: ignore[arg-type]
        "maintain naive now": lambda: lc.maintain(now=datetime(2026, 1, 1)),
        "review window nan": lambda: lc.review(window_days=float("nan")),
        "review window inf": lambda: lc.review(window_days=float("inf")),
        "review_if_due nan": lambda: lc.review_if_due(every_days=float("nan")),
        "review_if_due -1": lambda: lc.review_if_due(every_days=-1),
        "usage since 'x'": lambda: lc.usage_report(since="x"),  # type: ignore[arg-type]
        "usage naive since": lambda: lc.usage_report(since=datetime(2026, 1, 1)),
        "access_count 2**63": lambda: MemoryUnit(content="x", access_count=2**63),
        "16k tags": lambda: MemoryUnit(content="x", tags=[f"t{i}" for i in range(16_000)]),
        "journal run id with NUL": lambda: RunJournal(store).start("r\x00"),
        "feedback unknown run": lambda: RunJournal(store).add_feedback("no-such-run", text="x"),
        "utc-aware but absurd now": lambda: lc.maintain(now=datetime(1, 1, 1, tzinfo=UTC)),
    }


def test_each_bad_api_input_raises_a_typed_error_that_also_is_the_builtin(store: MemoryStore) -> None:
    cases = _api_cases(store)
    untyped = {}
    for name, call_ in cases.items():
        try:
            call_()
        except HindsightError as e:
            if not isinstance(e, ValueError | KeyError | RuntimeError):
                untyped[name] = f"{type(e).__name__} refines no builtin"
        except BaseException as e:
            untyped[name] = f"{type(e).__name__}: {e}"[:200]
    assert untyped == {}, "\n".join(f"{k}: {v}" for k, v in untyped.items())


@given(st.text(min_size=1, max_size=400).map(lambda t: "[" * (len(t) * 50) + t))
@SETTINGS
def test_absurdly_nested_llm_json_is_rejected_not_a_recursion_error(text: str) -> None:
    from langchain_hindsight._json import parse_json_text

    parse_json_text(text)  # whatever it returns, it does not raise
