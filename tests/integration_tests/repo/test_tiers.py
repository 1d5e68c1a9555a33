"""The suite's own rules (tests/conftest.py): tier markers, the unit tier's model guard, the isolated environment.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/repo/test_tiers.py``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from langchain_hindsight.embeddings.local import LocalEmbeddings


@pytest.mark.integration
def test_an_integration_test_may_start_a_child_and_load_the_real_model() -> None:
    assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0


@pytest.mark.integration
def test_an_integration_test_may_load_the_real_model(request: pytest.FixtureRequest) -> None:
    assert len(LocalEmbeddings().embed_query("read a CSV")) == 384
