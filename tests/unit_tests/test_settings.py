"""Environment variables: read in one module, never written, and the optional OpenAI extra."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

import langchain_hindsight
from langchain_hindsight import settings
from langchain_hindsight.errors import ConfigurationError

PACKAGE = Path(langchain_hindsight.__file__).parent
DEMO = PACKAGE.parent / "hindsight_demo"


def _environ_uses(path: Path) -> list[tuple[int, str]]:
    """(line, kind) of every ``os.environ`` / ``os.getenv`` / ``os.putenv`` / ``os.unsetenv`` in ``path``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
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
