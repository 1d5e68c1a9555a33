"""The public surface is static, small, and every exported name resolves.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/test_public_api.py``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.unit_tests.test_public_api import PINNED


@pytest.mark.integration
def test_every_pinned_name_imports_from_the_root_in_a_fresh_process() -> None:
    code = f"from langchain_hindsight import {', '.join(PINNED)}; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "ok"


@pytest.mark.integration
def test_import_is_cheap_and_does_no_work() -> None:
    code = "import sys, langchain_hindsight; print('chromadb' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["False", "False"]
