"""Environment variables: read in one module, never written, and the optional OpenAI extra."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import langchain_hindsight
from langchain_hindsight import settings
from langchain_hindsight.errors import ConfigurationError
from tests import source
from tests.fakes import NgramEmbeddings

PACKAGE = Path(langchain_hindsight.__file__).parent
DEMO = PACKAGE.parent / "hindsight_demo"


def _environ_uses(path: Path) -> list[tuple[int, str]]:
    """(line, kind) of every ``os.environ`` / ``os.getenv`` / ``os.putenv`` / ``os.unsetenv`` in ``path``."""
    found = []
    for node in source.nodes(path):
        if isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv", "putenv", "unsetenv", "environb"}:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [(node.lineno, a.name) for a in node.names if a.name in {"environ", "getenv", "putenv"}]
    return found


def test_only_the_settings_module_touches_the_environment() -> None:
    offenders = {
        str(path.relative_to(PACKAGE.parent)): uses
        for path in [*PACKAGE.rglob("*.py"), *DEMO.rglob("*.py")]
        if path.name != "settings.py" and (uses := _environ_uses(path))
    }
    assert offenders == {}
    assert _environ_uses(PACKAGE / "settings.py"), "the check must see the one module that reads the environment"


def test_settings_never_writes_the_environment() -> None:
    tree = ast.parse((PACKAGE / "settings.py").read_text(encoding="utf-8"))
    mutators = {"putenv", "unsetenv", "setdefault", "update", "pop", "popitem", "clear"}
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)]
    targets = [
        t
        for n in ast.walk(tree)
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.Delete))
        for t in (n.targets if isinstance(n, (ast.Assign, ast.Delete)) else [n.target])
    ]
    assert [ast.unparse(c) for c in calls if c.func.attr in mutators] == []
    assert [ast.unparse(t) for t in targets if isinstance(t, ast.Subscript) and "environ" in ast.unparse(t.value)] == []
    assert any(c.func.attr == "get" for c in calls), "the check must see the reads"


def test_read_environment_treats_empty_as_unset_and_keeps_no_key() -> None:
    env = settings.read_environment(
        {"HINDSIGHT_PATH": "/srv/mem", "HINDSIGHT_SERVER": "", "OPENAI_API_KEY": "sk-secret", "HINDSIGHT_MODEL": "m"}
    )
    assert env.store_path == "/srv/mem"
    assert env.server is None
    assert env.model == "m"
    assert env.has_openai_key is True
    assert "sk-secret" not in repr(env)
    assert settings.read_environment({}) == settings.Environment()


def test_cache_dir_resolution_order(tmp_path: Path) -> None:
    both = {"HINDSIGHT_CACHE_DIR": str(tmp_path / "own"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert settings.cache_dir(tmp_path / "arg", environ=both) == tmp_path / "arg"
    assert settings.cache_dir(environ=both) == tmp_path / "own"
    assert (
        settings.cache_dir(environ={"XDG_CACHE_HOME": str(tmp_path / "xdg")})
        == tmp_path / "xdg" / "langchain-hindsight"
    )
    assert settings.cache_dir(environ={"HINDSIGHT_CACHE_DIR": ""}) == Path.home() / ".cache" / "langchain-hindsight"


def test_openai_chat_model_needs_a_name_and_a_key_or_url(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HINDSIGHT_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert settings.openai_chat_model() is None
    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY"):
        settings.openai_chat_model("gpt-4o-mini")
    local = settings.openai_chat_model("qwen2.5", base_url="http://127.0.0.1:9/v1")  # never called
    assert getattr(local, "model_name", None) == "qwen2.5"
    monkeypatch.setenv("HINDSIGHT_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert getattr(settings.openai_chat_model(), "model_name", None) == "gpt-4o-mini"


def test_openai_chat_model_names_the_extra_when_langchain_openai_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_openai", None)  # import now raises ImportError
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(ImportError, match=r"langchain-hindsight\[openai\]"):
        settings.openai_chat_model("gpt-4o-mini")


def test_session_defaults_parse_and_name_the_variable() -> None:
    from langchain_hindsight.settings import session_defaults

    env = {
        "HINDSIGHT_K": "3",
        "HINDSIGHT_LOCALE": "en",
        "HINDSIGHT_MIN_RELEVANCE": "0.25",
        "HINDSIGHT_NAMESPACE": "alice",
        "HINDSIGHT_MAX_LINES": "4",
        "HINDSIGHT_MAX_LINE_CHARS": "120",
        "HINDSIGHT_MAX_BLOCK_CHARS": "off",
    }
    assert session_defaults(env) == {
        "k": 3,
        "locale": "en",
        "min_relevance": 0.25,
        "namespace": "alice",
        "max_lines": 4,
        "max_line_chars": 120,
        "max_block_chars": None,
    }
    assert session_defaults({"HINDSIGHT_MIN_RELEVANCE": "AUTO"}) == {"min_relevance": "auto"}
    assert session_defaults({"HINDSIGHT_MIN_RELEVANCE": "off", "HINDSIGHT_K": ""}) == {"min_relevance": None}
    for bad in (
        {"HINDSIGHT_K": "0"},
        {"HINDSIGHT_K": "three"},
        {"HINDSIGHT_LOCALE": "fr"},
        {"HINDSIGHT_MIN_RELEVANCE": "nan"},
        {"HINDSIGHT_MIN_RELEVANCE": "-1"},
        {"HINDSIGHT_MAX_LINES": "2.5"},
    ):
        with pytest.raises(ConfigurationError, match=next(iter(bad))):
            session_defaults(bad)


def test_hindsight_takes_its_defaults_from_the_environment_and_arguments_win(
    monkeypatch: pytest.MonkeyPatch, fake_embeddings: NgramEmbeddings
) -> None:
    from langchain_hindsight import Hindsight, MemoryStore
    from langchain_hindsight.store.backend import InMemoryBackend

    monkeypatch.setenv("HINDSIGHT_K", "2")
    monkeypatch.setenv("HINDSIGHT_LOCALE", "en")
    monkeypatch.setenv("HINDSIGHT_MAX_LINES", "3")
    monkeypatch.setenv("HINDSIGHT_MIN_RELEVANCE", "off")
    store = MemoryStore(backend=InMemoryBackend(), embeddings=fake_embeddings)
    hs = Hindsight(store=store)
    assert (hs.k, hs.locale, hs.session.config.max_lines, hs.retriever.min_relevance) == (2, "en", 3, None)
    hs = Hindsight(store=store, k=7, locale="zh", min_relevance=0.3)
    assert (hs.k, hs.locale, hs.retriever.min_relevance) == (7, "zh", 0.3)
    monkeypatch.setenv("HINDSIGHT_K", "many")
    with pytest.raises(ConfigurationError, match="HINDSIGHT_K"):
        Hindsight(store=store)
