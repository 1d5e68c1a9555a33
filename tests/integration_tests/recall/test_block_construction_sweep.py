"""The large sweep of ``tests/unit_tests/recall/test_block_construction.py``'s block property.

The unit tier parses 50 generated blocks; here the same property body (``.hypothesis.inner_test``) parses
600: for arbitrary memories, parsing the rendered block gives back exactly what was written, and the
red-team judge finds nothing in a line's content that poses as structure.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langchain_hindsight import MemoryUnit
from tests.unit_tests.recall import test_block_construction as unit


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unit.memories(), st.integers(20, 120))
def test_parsing_the_block_gives_back_what_we_wrote_sweep(units: list[MemoryUnit], limit: int) -> None:
    unit.test_parsing_the_block_gives_back_what_we_wrote.hypothesis.inner_test(units, limit)
