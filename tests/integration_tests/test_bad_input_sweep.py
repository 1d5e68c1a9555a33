"""The large sweep of ``tests/unit_tests/test_bad_input.py``'s store properties, on the embedded Chroma store.

The unit tier draws a few dozen examples per property on the in-memory store; here the same property bodies
(``.hypothesis.inner_test``) draw many more, on a store in a temporary directory: every public method given
junk raises a typed error and alters nothing, any LLM answer stores only valid units; and the properties of
the memory model, the record codec and the recorder with 300 examples each.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_hindsight import MemoryStore
from tests.fakes import HashEmbeddings
from tests.unit_tests import test_bad_input as unit

SWEEP = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    """The unit tests' seeded store, on embedded Chroma (hash embeddings)."""
    with MemoryStore(tmp_path / "db", embeddings=HashEmbeddings()) as s:
        yield unit.seeded(s)


@SWEEP
@given(data=st.data())
def test_public_methods_raise_typed_errors_and_alter_nothing_sweep(store: MemoryStore, data: st.DataObject) -> None:
    unit.test_public_methods_raise_typed_errors_and_alter_nothing.hypothesis.inner_test(store, data)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answer=unit.llm_answers)
def test_any_llm_answer_stores_only_valid_units_sweep(store: MemoryStore, answer: str) -> None:
    unit.test_any_llm_answer_stores_only_valid_units.hypothesis.inner_test(store, answer)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(output=unit.tool_outputs, fails=st.booleans())
def test_any_tool_output_never_breaks_the_agent_or_the_recorder_sweep(
    store: MemoryStore, output: object, fails: bool
) -> None:
    unit.test_any_tool_output_never_breaks_the_agent_or_the_recorder.hypothesis.inner_test(store, output, fails)


MODEL_SWEEP = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@MODEL_SWEEP
@given(st.dictionaries(st.sampled_from([*unit.FIELDS, "bogus", "source_override"]), unit.junk, max_size=6))
def test_memory_unit_is_valid_or_raises_invalid_memory_error_sweep(data: dict[str, Any]) -> None:
    unit.test_memory_unit_is_valid_or_raises_invalid_memory_error.hypothesis.inner_test(data)


@MODEL_SWEEP
@given(unit.junk)
def test_from_dict_of_anything_is_valid_or_typed_sweep(value: Any) -> None:
    unit.test_from_dict_of_anything_is_valid_or_typed.hypothesis.inner_test(value)


@MODEL_SWEEP
@given(
    content=unit.words,
    task_type=unit.words,
    confidence=st.floats(0, 1),
    tags=st.lists(unit.words, max_size=4),
    access=st.integers(0, 10**6),
    params=st.dictionaries(unit.words, st.one_of(st.integers(), unit.words, st.booleans()), max_size=3),
)
def test_valid_units_round_trip_exactly_through_the_chroma_record_sweep(
    content: str, task_type: str, confidence: float, tags: list[str], access: int, params: dict[str, Any]
) -> None:
    unit.test_valid_units_round_trip_exactly_through_the_chroma_record.hypothesis.inner_test(
        content=content, task_type=task_type, confidence=confidence, tags=tags, access=access, params=params
    )


@MODEL_SWEEP
@given(
    st.one_of(st.none(), st.dictionaries(st.text(max_size=12), unit.junk, max_size=8)),
    st.one_of(st.none(), st.text()),
)
def test_corrupt_records_raise_store_error_sweep(metadata: dict[str, Any] | None, document: str | None) -> None:
    unit.test_corrupt_records_raise_store_error.hypothesis.inner_test(metadata, document)


@MODEL_SWEEP
@given(payload=unit.junk, other=unit.junk)
def test_recorder_callbacks_never_raise_on_malformed_events_sweep(payload: Any, other: Any) -> None:
    unit.test_recorder_callbacks_never_raise_on_malformed_events.hypothesis.inner_test(payload=payload, other=other)


@MODEL_SWEEP
@given(st.text(min_size=1, max_size=400).map(lambda t: "[" * (len(t) * 50) + t))
def test_absurdly_nested_llm_json_is_rejected_not_a_recursion_error_sweep(text: str) -> None:
    unit.test_absurdly_nested_llm_json_is_rejected_not_a_recursion_error.hypothesis.inner_test(text)
