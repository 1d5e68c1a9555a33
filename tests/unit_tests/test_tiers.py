"""The suite's own rules (tests/conftest.py): tier markers, the unit tier's model guard, the isolated environment."""

from __future__ import annotations

import os

import pytest

from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings
from tests import conftest


def test_a_unit_test_that_loads_a_real_model_fails_and_says_how_to_fix_it(request: pytest.FixtureRequest) -> None:
    assert request.node.get_closest_marker("integration") is None
    for embedder in (LocalEmbeddings(), MultilingualEmbeddings()):
        with pytest.raises(
            pytest.fail.Exception, match=r"in the unit tier: give it fake embeddings .*@pytest\.mark\.integration"
        ):
            embedder.embed_query("读取CSV read a CSV")


@pytest.mark.integration
def test_an_integration_test_may_load_the_real_model(request: pytest.FixtureRequest) -> None:
    assert len(LocalEmbeddings().embed_query("read a CSV")) == 384


def test_every_collected_test_on_a_real_model_or_server_is_integration(request: pytest.FixtureRequest) -> None:
    real = {"embeddings", "routed_embeddings", "make_store", "store", "real_models", "chroma_server"}
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


def test_a_test_sees_the_isolated_environment() -> None:
    leaked = [n for n in os.environ if n.startswith(conftest.CLEARED_PREFIXES) and n not in conftest.FIXED]
    assert leaked == []
    assert "XDG_CACHE_HOME" not in os.environ
    for name, value in conftest.FIXED.items():
        assert os.environ[name] == value
