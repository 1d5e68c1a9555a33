"""The suite's own rules (tests/conftest.py): tier markers, the unit tier's model guard, the isolated environment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings
from tests import conftest


def test_a_unit_test_that_loads_a_real_model_fails_and_says_how_to_fix_it(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("integration") is None
    for embedder in (LocalEmbeddings(), MultilingualEmbeddings()):
        advice = r"loads the real .* model in the unit tier: give it fake embeddings .*@pytest\.mark\.integration"
        with pytest.raises(pytest.fail.Exception, match=advice):
            embedder.embed_query("读取CSV read a CSV")


@pytest.mark.parametrize(
    "argv",
    [[sys.executable, "-c", "pass"], f"{sys.executable} -c pass", [Path(sys.executable), "-V"], ["chroma", "run"]],
)
def test_a_unit_test_that_starts_a_python_or_chroma_child_fails(argv: Any) -> None:
    with pytest.raises(pytest.fail.Exception, match=r"starts a child process .* in the unit tier"):
        subprocess.run(argv, shell=isinstance(argv, str), check=False)


def test_other_programs_still_run_in_the_unit_tier() -> None:
    assert subprocess.run(["true"], check=False).returncode == 0


def test_every_collected_test_on_a_real_model_or_server_is_integration(request: pytest.FixtureRequest) -> None:
    real = {"embeddings", "routed_embeddings", "real_models", "chroma_server"}  # store/make_store need embeddings
    items = request.session.items
    assert any(item.nodeid == request.node.nodeid for item in items)
    unmarked = [i.nodeid for i in items if real & set(i.fixturenames) and not i.get_closest_marker("integration")]
    assert unmarked == []


def test_fake_stores_stay_in_the_unit_tier(request: pytest.FixtureRequest, fake_store: object) -> None:
    assert request.node.get_closest_marker("integration") is None


def test_isolation_removes_the_variables_the_package_and_its_clients_read() -> None:
    developer = {
        "HINDSIGHT_PATH": "/home/me/memory_db",
        "HINDSIGHT_SERVER": "db:8000",
        "HINDSIGHT_MODEL": "gpt-4o",
        "HINDSIGHT_CACHE_DIR": "/somewhere",
        "OPENAI_API_KEY": "sk-real",
        "OPENAI_BASE_URL": "http://proxy",
        "LANGSMITH_TRACING": "true",
        "LANGCHAIN_API_KEY": "ls-key",
        "CHROMA_SERVER_HOST": "db",
        "XDG_CACHE_HOME": "/cache",
        "PATH": "/usr/bin",
        "HOME": "/home/me",
    }
    removed, fixed = conftest._isolation(developer)
    assert sorted(removed) == sorted(set(developer) - {"PATH", "HOME"})
    assert fixed["HF_HUB_OFFLINE"] == "1"
    assert fixed["ANONYMIZED_TELEMETRY"] == "False"


def test_isolation_covers_every_variable_the_package_reads() -> None:
    """``langchain_hindsight.settings`` names every variable the package reads: none may leak into a test."""
    from langchain_hindsight import settings

    names = {
        value
        for name in settings.__all__
        if isinstance(value := getattr(settings, name), str) and re.fullmatch(r"[A-Z][A-Z0-9_]+", value)
    }
    assert {"HINDSIGHT_PATH", "HINDSIGHT_CACHE_DIR", "OPENAI_API_KEY", "XDG_CACHE_HOME"} <= names
    removed, _ = conftest._isolation(dict.fromkeys(names, "set by the developer"))
    assert set(removed) == names


def test_a_test_sees_the_isolated_environment() -> None:
    leaked = [n for n in os.environ if n.startswith(conftest.CLEARED_PREFIXES) and n not in conftest.FIXED]
    assert leaked == []
    assert "XDG_CACHE_HOME" not in os.environ
    for name, value in conftest.FIXED.items():
        assert os.environ[name] == value


def test_integration_tests_live_under_integration_tests(request: pytest.FixtureRequest) -> None:
    """No file under tests/unit_tests/ holds an integration test (only a parameter marked ``integration``).

    Checks what this run collected: ``make unit`` collects every unit file.
    """
    found = request.config.stash[conftest.MISPLACED]
    assert not found, "\n".join(found)


def _item(path: Path, fixtures: tuple[str, ...] = (), marker: str | None = None, by_parameter: bool = False) -> Any:
    marks = [pytest.mark.integration.mark] if by_parameter else []
    names = {marker} if marker else set()
    if by_parameter:
        names.add("integration")
    return SimpleNamespace(
        path=path,
        nodeid=f"{path.name}::test_x",
        fixturenames=list(fixtures),
        get_closest_marker=lambda name: name if name in names else None,
        callspec=SimpleNamespace(marks=marks) if by_parameter else None,
    )


def test_an_integration_test_under_unit_tests_is_reported_with_where_it_belongs() -> None:
    unit_file = conftest.UNIT_DIR / "store" / "test_x.py"
    for item, reason in [
        (_item(unit_file, fixtures=("make_store", "real_models")), "it uses the real_models fixture"),
        (_item(unit_file, fixtures=("postgres_server",)), "it uses the postgres_server fixture"),
        (_item(unit_file, marker="slow"), "it is marked slow"),
    ]:
        why = conftest.misplaced(item)
        assert why is not None
        assert reason in why
        assert why.endswith("move it to tests/integration_tests/")
    # Unit tests, integration tests in their folder, and a sweep's bigger parameter are where they belong.
    assert conftest.misplaced(_item(unit_file, fixtures=("fake_store",))) is None
    assert conftest.misplaced(_item(unit_file, by_parameter=True)) is None
    integration_file = conftest.INTEGRATION_DIR / "store" / "test_x.py"
    assert conftest.misplaced(_item(integration_file, fixtures=("real_models",), marker="slow")) is None
