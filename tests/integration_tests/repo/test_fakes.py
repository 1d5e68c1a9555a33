"""The unit tier's fake embedders behave as their docstrings say, and a store on them recalls by overlap.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/repo/test_fakes.py``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.fakes import NgramEmbeddings, child_env


@pytest.mark.integration  # a child process
def test_ngram_vectors_are_the_same_in_another_process() -> None:
    """CRC32, not the salted ``hash``: a child process (or a later run) embeds a text identically."""
    code = "from tests.fakes import NgramEmbeddings; print(NgramEmbeddings().embed_query('周报 weekly report'))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == str(NgramEmbeddings().embed_query("周报 weekly report"))
