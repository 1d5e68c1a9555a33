"""Shared fixtures, the environment every test runs in, and the two test tiers.

Tiers (both run by ``make test``):

- **unit** (``pytest -m "not integration"``): fake embeddings (:class:`tests.fakes.NgramEmbeddings`),
  no model load, no Chroma server, no subprocess, no notebook kernel. A unit test that loads a real
  embedding model or starts a Python, Chroma or ``hindsight`` child process fails with a message saying
  how to mark it.
- **integration** (``pytest -m integration``): the real models, Chroma servers, SIGKILL crash tests,
  notebooks, the CLI and MCP server in child processes.

Layout: tests mirror the package. ``tests/unit_tests/<subpackage>/`` and
``tests/integration_tests/<subpackage>/`` hold the tests of ``langchain_hindsight/<subpackage>/`` (tests of the
package's root modules sit at the top of each tier, ``repo/`` holds the checks of the repository as a whole: docs,
layers, notebooks, this suite's own rules; ``demo/`` the demo package's). A file under ``integration_tests/`` is
integration as a whole; a file under ``unit_tests/`` may still hold a few integration tests, selected as below.

A test is integration when it lives under ``tests/integration_tests/``, when it carries the ``integration``
marker (or ``slow``, ``server``, ``notebooks``, which imply it), or when it uses, directly or through another
fixture, one of :data:`INTEGRATION_FIXTURES`. Everything else is unit.

Environment: :func:`isolated_environment` (autouse) removes every variable the package or the
libraries it drives read (``HINDSIGHT_*``, ``OPENAI_*``, ``LANGCHAIN_*``/``LANGSMITH_*``,
``CHROMA_*``, ``XDG_CACHE_HOME``), so a developer's shell cannot change a test's outcome; a test
that needs one sets it with ``monkeypatch.setenv``.
"""

from __future__ import annotations

import gc
import os
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

# CI explores a fixed, reproducible set of examples (a red CI names an input anyone can replay); a developer's
# runs explore new ones each time, and what they find becomes an explicit regression example in the test.
hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    hypothesis_settings.load_profile("ci")

CLEARED_PREFIXES = ("HINDSIGHT_", "OPENAI_", "LANGCHAIN_", "LANGSMITH_", "CHROMA_")
"""Environment variables removed for the tests: the package's own (``HINDSIGHT_PATH``, ``HINDSIGHT_SERVER``,
``HINDSIGHT_MODEL``, ``HINDSIGHT_CACHE_DIR``), the OpenAI client's (the demo reads ``OPENAI_API_KEY``/
``OPENAI_BASE_URL``), LangSmith tracing (which would send runs over the network) and Chroma's settings."""

CLEARED = ("XDG_CACHE_HOME",)
"""Single variables removed for the tests (the ONNX cache falls back to ``$XDG_CACHE_HOME``)."""

_ONNX_CACHE = os.environ.get("HINDSIGHT_CACHE_DIR") or str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "langchain-hindsight"
)
"""Where the real model's ONNX export is kept for the session: the cache the developer's shell names,
resolved once before the variables are cleared (the export is keyed by a hash of the weights and written
atomically, so sharing it is safe and saves exporting it again every run). Tests of the cache's own rules
point ``HINDSIGHT_CACHE_DIR`` at a temporary directory themselves."""

FIXED = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "HINDSIGHT_CACHE_DIR": _ONNX_CACHE,
}
"""Variables every test sees with these values: offline model stacks, no Chroma telemetry, the session's cache."""


def _isolation(environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The variables to remove from ``environ`` and those to set, for an isolated test."""
    return [n for n in environ if n.startswith(CLEARED_PREFIXES) or n in CLEARED], FIXED


# The whole session runs isolated (module- and session-scoped fixtures too, and the model stacks read some
# of these at import); the autouse fixture below restores it before every test, whatever the last one did.
_removed, _fixed = _isolation(os.environ)
for _name in _removed:
    del os.environ[_name]
os.environ.update(_fixed)

from langchain_hindsight import MemoryStore  # noqa: E402 - the pinned public name
from langchain_hindsight.embeddings.local import LocalEmbeddings  # noqa: E402 - after the environment is set
from langchain_hindsight.embeddings.models import MiniLMModel, MultilingualModel  # noqa: E402
from langchain_hindsight.embeddings.multilingual import ScriptRoutedEmbeddings  # noqa: E402
from langchain_hindsight.sharing.principals import AccessPolicy  # noqa: E402
from langchain_hindsight.store.backend import InMemoryBackend  # noqa: E402
from tests.fakes import GBK_TEXT, GRANTS_TOML, NgramEmbeddings  # noqa: E402
from tests.postgres import postgres_server, postgres_url  # noqa: E402, F401 - fixtures for every test module
from tests.server import chroma_server  # noqa: E402, F401 - the fixture, available to every test module

INTEGRATION_FIXTURES = frozenset({"real_models", "chroma_server", "postgres_server"})
"""Fixtures that make a test integration when it uses them, directly or through another fixture: the real
models (every fixture that loads one requests ``real_models``) and a Chroma server."""

IMPLY_INTEGRATION = ("integration", "slow", "server", "notebooks")
"""Markers that make a test integration."""


INTEGRATION_DIR = Path(__file__).parent / "integration_tests"
"""Every test under this folder is integration."""

UNIT_DIR = Path(__file__).parent / "unit_tests"
"""The unit tier's folder: its tests are unit tests, save a parameter marked ``integration`` (see :func:`misplaced`)."""

MISPLACED: pytest.StashKey[list[str]] = pytest.StashKey()
"""The integration tests collected under :data:`UNIT_DIR` (``tests/unit_tests/repo/test_tiers.py`` fails on any)."""


def _integration_reason(item: Any) -> str | None:
    """Why ``item`` is an integration test (its folder, a fixture it uses, a marker), or None for a unit test."""
    if item.path.is_relative_to(INTEGRATION_DIR):
        return "its folder"
    if used := sorted(set(getattr(item, "fixturenames", ())) & INTEGRATION_FIXTURES):
        return f"it uses the {used[0]} fixture"
    if marker := next((m for m in IMPLY_INTEGRATION if item.get_closest_marker(m)), None):
        return f"it is marked {marker}"
    return None


def misplaced(item: Any) -> str | None:
    """Why ``item``, collected under ``tests/unit_tests/``, belongs in ``tests/integration_tests/`` (None: it does not).

    The unit tier compiles and collects every test of the files it runs, so an integration test in a unit file costs
    the unit tier even though it is deselected there. The one exception is a parameter marked
    ``pytest.param(..., marks=pytest.mark.integration)``: the same test body on a bigger sweep or another backend.
    """
    reason = _integration_reason(item)
    if reason is None or not item.path.is_relative_to(UNIT_DIR):
        return None
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(m.name in IMPLY_INTEGRATION for m in callspec.marks):
        return None
    return f"{item.nodeid}: an integration test ({reason}) under tests/unit_tests/; move it to tests/integration_tests/"


@pytest.hookimpl(tryfirst=True)  # before pytest applies -m
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark integration tests: by folder, by marker, or by the fixtures they use (directly or through others).

    An integration test found under ``tests/unit_tests/`` is still marked and run in the integration tier (no test is
    lost), and listed in ``config.stash[MISPLACED]`` for the repository test that fails on it.
    """
    found = []
    for item in items:
        if _integration_reason(item) is not None:
            item.add_marker(pytest.mark.integration)
        if (why := misplaced(item)) is not None:
            found.append(why)
    config.stash[MISPLACED] = found


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what import and collection built (modules, classes, collected items) out of the collector's reach.

    Those objects live until the session ends, yet every full collection during the tests would walk all of them
    again (about half a million objects); frozen, a collection walks only what the tests allocate. Freezing changes
    no test's outcome: reference counting still frees frozen objects, and the tests' own garbage is collected as
    before.
    """
    gc.freeze()


def pytest_unconfigure(config: pytest.Config) -> None:
    """Freeze everything left at the end, so the interpreter's exit does not walk it in its final collections.

    At exit Python clears every module and runs a full collection over all live objects several times: about 3 s
    of CPU for the unit tier, spent on objects the process is about to drop anyway.
    """
    gc.freeze()


def _is_integration(request: pytest.FixtureRequest) -> bool:
    return request.node.get_closest_marker("integration") is not None


@pytest.fixture(autouse=True)
def isolated_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts from the same environment, whatever the developer's shell exports."""
    removed, fixed = _isolation(os.environ)
    for name in removed:
        monkeypatch.delenv(name)
    for name, value in fixed.items():
        monkeypatch.setenv(name, value)


CHILD_PROGRAMS = ("python", "chroma", "hindsight", "jupyter")
"""Child processes the unit tier refuses to start (by the program's file name): the interpreter (CLI, MCP
server, crash children, notebook kernels), a Chroma server, the ``hindsight`` command."""


def _starts_a_child(args: Any) -> bool:
    """Whether ``subprocess.Popen(args)`` runs one of :data:`CHILD_PROGRAMS`."""
    if isinstance(args, str | bytes):
        words = os.fsdecode(args).split()
        program = words[0] if words else ""
    else:
        program = os.fsdecode(args if isinstance(args, os.PathLike) else next(iter(args), ""))
    return Path(program).name.startswith(CHILD_PROGRAMS)


@pytest.fixture(autouse=True)
def _unit_tier_guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In the unit tier, loading a real embedding model or starting a child process fails the test."""
    if _is_integration(request):
        return

    def refuse(what: str) -> None:
        pytest.fail(
            f"{request.node.nodeid} {what} in the unit tier: give it fake embeddings (the `fake_embeddings` "
            "fixture, tests.fakes.NgramEmbeddings) and no child process, or mark it @pytest.mark.integration",
            pytrace=False,
        )

    def no_model(self: object, *args: Any, **kwargs: Any) -> Any:
        refuse(f"loads the real {type(self).__name__} model")

    monkeypatch.setattr(MiniLMModel, "_load", no_model)  # LocalEmbeddings' too, and the CLI's quick path's
    monkeypatch.setattr(MultilingualModel, "_load", no_model)  # MultilingualEmbeddings' too

    popen_init = subprocess.Popen.__init__

    def no_child(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        if _starts_a_child(args):
            refuse(f"starts a child process ({args if isinstance(args, str) else ' '.join(map(str, args))[:80]})")
        popen_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", no_child)


@pytest.fixture
def gbk_csv(tmp_path: Path) -> Path:
    """A real GBK-encoded CSV (two rows): reading it as utf-8 raises UnicodeDecodeError for real."""
    path = tmp_path / "客户.csv"
    path.write_bytes(GBK_TEXT.encode("gbk"))
    return path


@pytest.fixture
def grants(tmp_path: Path) -> Path:
    """The example grants file (:data:`tests.fakes.GRANTS_TOML`: who may read and write which namespace)."""
    path = tmp_path / "grants.toml"
    path.write_text(GRANTS_TOML, encoding="utf-8")
    return path


@pytest.fixture
def policy(grants: Path) -> AccessPolicy:
    """The access policy the example grants file describes."""
    return AccessPolicy.from_file(grants)


@pytest.fixture(scope="session")
def fake_embeddings() -> NgramEmbeddings:
    """A deterministic, similarity-preserving fake embedder (hashed words and character n-grams, 384-d)."""
    return NgramEmbeddings()


@pytest.fixture(scope="session")
def real_models() -> None:
    """Request this from any fixture that loads a real embedding model: its tests become integration tests."""


@pytest.fixture(scope="session")
def embeddings(real_models: None) -> LocalEmbeddings:
    """The real packaged all-MiniLM-L6-v2, shared by the whole session (loads once). Integration tier."""
    return LocalEmbeddings()


@pytest.fixture(scope="session")
def routed_embeddings(embeddings: LocalEmbeddings) -> ScriptRoutedEmbeddings:
    """The default embedder (MiniLM + USE routed by script), sharing the session's MiniLM. Integration tier."""
    return ScriptRoutedEmbeddings(minilm=embeddings)


def _store_factory(directory: Path, embedder: Any) -> Iterator[Callable[..., MemoryStore]]:
    opened: list[MemoryStore] = []

    def factory(name: str = "db", **kwargs: Any) -> MemoryStore:
        kwargs.setdefault("embeddings", embedder)
        store = MemoryStore(directory / name, **kwargs)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def make_store(tmp_path: Path, embeddings: LocalEmbeddings) -> Iterator[Callable[..., MemoryStore]]:
    """Factory for embedded stores in a temporary directory on the real embedder; all closed afterwards."""
    yield from _store_factory(tmp_path, embeddings)


@pytest.fixture
def store(make_store: Callable[..., MemoryStore]) -> MemoryStore:
    """A fresh embedded store on the real embedder. Integration tier."""
    return make_store()


@pytest.fixture
def make_fake_store(tmp_path: Path, fake_embeddings: NgramEmbeddings) -> Iterator[Callable[..., MemoryStore]]:
    """Factory for embedded stores in a temporary directory on the fake embedder; all closed afterwards."""
    yield from _store_factory(tmp_path, fake_embeddings)


@pytest.fixture
def fake_store(make_fake_store: Callable[..., MemoryStore]) -> MemoryStore:
    """A fresh embedded store on the fake embedder. Unit tier."""
    return make_fake_store()


@pytest.fixture
def memory_store(fake_embeddings: NgramEmbeddings) -> Iterator[MemoryStore]:
    """A fresh store in memory (``InMemoryBackend``) on the fake embedder: for tests of logic, not of files. Unit tier.

    Opening an embedded Chroma store costs about fifteen times as much CPU; keep ``fake_store`` for what only a
    store directory has (its files, a reopen, the lock).
    """
    with MemoryStore(backend=InMemoryBackend(), embeddings=fake_embeddings) as store:
        yield store
