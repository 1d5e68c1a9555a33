"""The large sweep of ``tests/unit_tests/test_bad_input.py``'s store properties, on the embedded Chroma store.

The unit tier draws a few dozen examples per property on the in-memory store; here the same property bodies
(``.hypothesis.inner_test``) draw many more, on a store in a temporary directory: every public method given
junk raises a typed error and alters nothing, any LLM answer stores only valid units.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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
