"""The suite's own rules (tests/conftest.py): tier markers, the unit tier's model guard, the isolated environment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
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


@pytest.mark.integration
def test_an_integration_test_may_start_a_child_and_load_the_real_model() -> None:
    assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0


@pytest.mark.integration
def test_an_integration_test_may_load_the_real_model(request: pytest.FixtureRequest) -> None:
    assert len(LocalEmbeddings().embed_query("read a CSV")) == 384


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
