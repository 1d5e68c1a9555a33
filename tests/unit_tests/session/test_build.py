"""One place builds a session, one settings object holds each default, one function picks the store (issue 34).

* the relevance floor's default lives only in ``RecallSettings``: change it there and every door
  (``Hindsight``, ``HindsightRetriever``, ``HindsightStore``, the middleware, ``session_for``,
  ``hindsight search``, the review console) follows;
* where the store lives is decided by ``settings.store_target`` for ``Hindsight()`` and every
  ``hindsight`` command (the console and the MCP server included);
* ``HindsightSession`` receives built parts (``build_config``) and builds none itself.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from langchain_hindsight import Hindsight, HindsightMiddleware, HindsightRetriever, HindsightStore, MemoryStore
from langchain_hindsight.cli import _store as cli_store
from langchain_hindsight.cli import search as search_command
from langchain_hindsight.cli.main import EXIT_ERROR, main, resolve_store_target
from langchain_hindsight.errors import ConfigurationError, StoreError
from langchain_hindsight.recall.engine import RecallSettings
from langchain_hindsight.session import build as session_build
from langchain_hindsight.session.build import build_config
from langchain_hindsight.session.config import SessionConfig
from langchain_hindsight.session.loop import HindsightSession
from langchain_hindsight.session.source import session_for
from langchain_hindsight.settings import DEFAULT_DIRECTORY, StoreTarget, store_target
from langchain_hindsight.store.backend.inmemory import InMemoryBackend
from langchain_hindsight.types import ScoredMemory
from langchain_hindsight.ui import views
from tests.fakes import NgramEmbeddings

MOVED_FLOOR = 0.4242
"""A floor no door writes itself: if a door shows it, it took its default from ``RecallSettings``."""


@pytest.fixture
def moved_floor(monkeypatch: pytest.MonkeyPatch) -> float:
    """``RecallSettings``' default floor changed to :data:`MOVED_FLOOR` for the test (its one home)."""
    init = inspect.unwrap(RecallSettings.__init__)
    names = [p.name for p in inspect.signature(init).parameters.values() if p.default is not inspect.Parameter.empty]
    defaults = list(init.__defaults__ or ())
    assert defaults[names.index("min_relevance")] == RecallSettings.__dataclass_fields__["min_relevance"].default
    defaults[names.index("min_relevance")] = MOVED_FLOOR
    monkeypatch.setattr(init, "__defaults__", tuple(defaults))
    assert RecallSettings().min_relevance == MOVED_FLOOR
    return MOVED_FLOOR


def _console_floor(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> object:
    seen: list[object] = []

    def spy(memories: Sequence[ScoredMemory], floor: object) -> list[bool]:
        seen.append(floor)
        return [True] * len(memories)

    monkeypatch.setattr(views, "served_mask", spy)
    views.Console(store).search(store.namespace, "生成本周的销售周报")
    (floor,) = seen
    return floor


def _search_floor(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> object:
    seen: list[object] = []

    def spy(memories: Sequence[ScoredMemory], floor: object) -> list[bool]:
        seen.append(floor)
        return [True] * len(memories)

    monkeypatch.setattr(search_command, "served_mask", spy)
    search_command.print_results([], argparse.Namespace(json=True, all=False), shared=False)
    capsys.readouterr()
    (floor,) = seen
    return floor


def test_every_door_takes_the_floor_default_from_recall_settings(
    moved_floor: float,
    memory_store: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    doors: dict[str, object] = {
        "Hindsight": Hindsight(store=memory_store).retriever.min_relevance,
        "HindsightRetriever": HindsightRetriever(store=memory_store).min_relevance,
        "HindsightStore": HindsightStore(memory_store).settings.min_relevance,
        "HindsightMiddleware": HindsightMiddleware(memory_store).session.retriever.min_relevance,
        "session_for": session_for(memory_store).retriever.min_relevance,
        "build_config": build_config(memory_store).retriever.min_relevance,  # type: ignore[union-attr]
        "hindsight search": _search_floor(monkeypatch, capsys),
        "console": _console_floor(memory_store, monkeypatch),
    }
    assert doors == dict.fromkeys(doors, moved_floor)


def test_the_doors_agree_on_the_real_default(memory_store: MemoryStore) -> None:
    default = RecallSettings.__dataclass_fields__["min_relevance"].default
    assert Hindsight(store=memory_store).retriever.min_relevance == default
    assert HindsightStore(memory_store).settings.min_relevance == default
    assert session_for(memory_store).retriever.min_relevance == default


# ------------------------------------------------------------------ the store target: one function
def test_store_target_order() -> None:
    env = {"HINDSIGHT_DATABASE_URL": "postgresql://u@h/db", "HINDSIGHT_SERVER": "h:1", "HINDSIGHT_PATH": "/p"}
    assert store_target(environ=env) == StoreTarget(database_url="postgresql://u@h/db")
    assert store_target(environ={**env, "HINDSIGHT_DATABASE_URL": ""}) == StoreTarget(server="h:1")
    assert store_target(environ={"HINDSIGHT_PATH": "/p"}) == StoreTarget(directory="/p")
    assert store_target(environ={}) == StoreTarget(directory=DEFAULT_DIRECTORY)
    assert store_target(directory="/mine", environ=env) == StoreTarget(directory="/mine")  # the caller's wins
    assert store_target(server="x:2", environ=env) == StoreTarget(server="x:2")
    with pytest.raises(ConfigurationError, match="at most one"):
        store_target(directory="/a", database_url="postgresql://u@h/db")


class _OpenedError(StoreError):
    """Raised by the spy instead of opening a store."""


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every door's store opening, recorded instead of done (no database is reached)."""
    calls: list[dict[str, Any]] = []

    def spy(*args: Any, **kwargs: Any) -> MemoryStore:
        calls.append({"directory": args[0] if args else None, **kwargs})
        raise _OpenedError("recorded")

    monkeypatch.setattr(session_build, "MemoryStore", spy)
    monkeypatch.setattr(cli_store, "MemoryStore", spy)
    return calls


URL = "postgresql://hindsight@127.0.0.1:1/memories"


def test_every_door_honours_the_environments_database(
    monkeypatch: pytest.MonkeyPatch, opened: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HINDSIGHT_DATABASE_URL", URL)
    with pytest.raises(_OpenedError):
        Hindsight()
    assert main(["stats", "--json"]) == EXIT_ERROR  # the CLI (stats' quick path does not apply to a database)
    assert main(["ui", "--port", "0"]) == EXIT_ERROR  # the review console
    assert main(["mcp", "--principal", "analyst"]) == EXIT_ERROR  # the MCP server
    capsys.readouterr()
    assert [call["database_url"] for call in opened] == [URL] * 4


def test_a_store_the_caller_names_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch, opened: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HINDSIGHT_DATABASE_URL", URL)
    with pytest.raises(_OpenedError):
        Hindsight(tmp_path / "db")
    monkeypatch.setattr(cli_store, "_check_store_directory", lambda path: None)  # the spy opens nothing
    assert main(["stats", "--path", str(tmp_path / "db")]) == EXIT_ERROR  # the spy's error, after the record
    capsys.readouterr()
    assert [(str(call["directory"]), call.get("database_url")) for call in opened] == [(str(tmp_path / "db"), None)] * 2
    args = argparse.Namespace(path=str(tmp_path / "db"), server=None, database_url=None)
    resolve_store_target(args)  # what every hindsight command does first
    assert (args.path, args.server, args.database_url) == (str(tmp_path / "db"), None, None)


def test_the_environments_directory_is_every_doors_default(
    monkeypatch: pytest.MonkeyPatch, opened: list[dict[str, Any]], tmp_path: Path
) -> None:
    monkeypatch.setenv("HINDSIGHT_PATH", str(tmp_path / "from-env"))
    with pytest.raises(_OpenedError):
        Hindsight()
    args = argparse.Namespace(path=None, server=None, database_url=None)
    resolve_store_target(args)
    assert opened[0]["directory"] == args.path == str(tmp_path / "from-env")


# ------------------------------------------------------------------ the session receives built parts
def test_a_session_receives_built_parts_and_builds_none(fake_embeddings: NgramEmbeddings) -> None:
    with MemoryStore(backend=InMemoryBackend(), embeddings=fake_embeddings) as store:
        with pytest.raises(ConfigurationError, match="built"):
            HindsightSession(SessionConfig(store=store))
        with pytest.raises(ConfigurationError, match="built SessionConfig"):
            HindsightSession(store)  # type: ignore[arg-type]
        config = build_config(store, k=2)
        session = HindsightSession(config)
        assert session.retriever is config.retriever
        assert session.journal is config.journal
        assert session.reflector is config.reflector
        assert session.retriever.k == 2


def test_an_adapters_floor_is_its_own_copy(memory_store: MemoryStore) -> None:
    hs = Hindsight(store=memory_store)
    own = hs.session.derive(min_relevance=None)
    assert own.retriever.min_relevance is None
    assert hs.retriever.min_relevance == RecallSettings().min_relevance  # the bundle's retriever is untouched
    assert own.journal is hs.journal
    assert own.reflector is hs.session.reflector


def test_hindsight_writes_no_default_of_its_own(memory_store: MemoryStore) -> None:
    """What ``Hindsight(...)`` is not given is its owner's default: ``RecallSettings``' and ``SessionConfig``'s."""
    hs = Hindsight(store=memory_store)
    assert hs.retriever.settings == RecallSettings()
    loop = ("k", "task_type", "locale", "max_lines", "max_line_chars", "max_block_chars", "conversation_feedback")
    for name in (*loop, "feedback_model", "on_error", "recall", "reflect", "apply_outcome"):
        assert getattr(hs.config, name) == SessionConfig.default(name), name


def test_a_recall_settings_object_is_explicit(memory_store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HINDSIGHT_K", "7")
    monkeypatch.setenv("HINDSIGHT_MAX_LINES", "3")
    hs = Hindsight(store=memory_store, recall=RecallSettings(k=2, min_relevance=None))
    assert (hs.k, hs.retriever.k, hs.retriever.min_relevance) == (2, 2, None)  # the object wins over HINDSIGHT_K
    assert hs.config.max_lines == 3  # a loop option still takes its variable
    assert Hindsight(store=memory_store, recall=RecallSettings(k=2), k=4).retriever.k == 4  # a keyword wins
    assert Hindsight(store=memory_store).k == 7
