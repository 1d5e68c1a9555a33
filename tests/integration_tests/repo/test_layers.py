"""The package's shape: import contracts (layers, no cycles), module size, and the one source-trust table.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/repo/test_layers.py``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit_tests.repo.test_layers import OWN, PACKAGE, ROOT


# ---------------------------------------------------------------- the import contracts
def _lint_imports(workdir: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("import-linter is not installed (pip install import-linter)")
    return subprocess.run(
        [exe, "--config", str(workdir / ".importlinter"), "--no-cache"],
        cwd=workdir,
        env={"PYTHONPATH": str(workdir), "PATH": str(Path(sys.executable).parent)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    shutil.copytree(PACKAGE, tmp_path / OWN, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    return tmp_path


@pytest.mark.integration
def test_an_upward_import_breaks_the_layers(package_copy: Path) -> None:
    codec = package_copy / OWN / "store" / "_codec.py"
    codec.write_text(codec.read_text() + "\nfrom langchain_hindsight.session.loop import HindsightSession  # noqa\n")
    result = _lint_imports(package_copy)
    assert result.returncode != 0
    assert "langchain_hindsight.store is not allowed to import langchain_hindsight.session" in " ".join(
        result.stdout.split()
    )


@pytest.mark.integration
def test_a_cycle_inside_one_layer_is_refused_even_in_a_function(package_copy: Path) -> None:
    rules = package_copy / OWN / "reflection" / "_rules.py"  # reflector imports _rules
    late = "\n\ndef _late() -> None:\n    from langchain_hindsight.reflection import reflector  # noqa\n"
    rules.write_text(rules.read_text() + late)
    result = _lint_imports(package_copy)
    assert result.returncode != 0
    assert "No cycles are allowed in langchain_hindsight.reflection" in " ".join(result.stdout.split())


@pytest.mark.integration
def test_a_new_module_must_be_placed_in_a_layer(package_copy: Path) -> None:
    (package_copy / OWN / "_stray.py").write_text('"""A module nobody placed."""\n')
    result = _lint_imports(package_copy)
    assert result.returncode != 0
    assert "_stray" in result.stdout
