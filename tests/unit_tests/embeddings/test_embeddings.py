"""LocalEmbeddings: ONNX and torch backends give sentence-transformers' vectors, offline, with a sound fallback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from langchain_hindsight.embeddings import _onnx
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.models import default_model_path
from langchain_hindsight.errors import ConfigurationError


def _symlinked_model(tmp_path: Path, *, replace: dict[str, dict[str, Any]]) -> Path:
    """A copy of the packaged model made of symlinks, with some JSON files patched."""
    source = Path(default_model_path())
    target = tmp_path / "model"
    for path in source.rglob("*"):
        dest = target / path.relative_to(source)
        if path.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif path.relative_to(source).as_posix() in replace:
            dest.parent.mkdir(parents=True, exist_ok=True)
            data = {**json.loads(path.read_text()), **replace[path.relative_to(source).as_posix()]}
            dest.write_text(json.dumps(data))
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.symlink_to(path)
    return target


# -- equivalence -------------------------------------------------------------------------------


# -- backend selection and fallback ------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"backend": "gpu"},
        {"backend": "onnx", "device": "cuda"},
        {"batch_size": 0},
        {"query_cache_size": -1},
        {"query_threads": 0},
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        LocalEmbeddings(**kwargs)


def test_bert_support_is_read_from_the_config(tmp_path: Path) -> None:
    assert _onnx._bert_onnx.supported(Path(default_model_path()))
    for patch in ({"model_type": "mpnet"}, {"hidden_act": "gelu_new"}, {"position_embedding_type": "relative_key"}):
        model = _symlinked_model(tmp_path / next(iter(patch.values())), replace={"config.json": patch})
        assert not _onnx._bert_onnx.supported(model)


def test_cache_key_follows_the_model_files(tmp_path: Path) -> None:
    original = _onnx.cache_key(_onnx.read_spec(default_model_path()))
    patched = _symlinked_model(tmp_path, replace={"config.json": {"layer_norm_eps": 1e-6}})
    assert _onnx.cache_key(_onnx.read_spec(patched)) != original
    same = _symlinked_model(tmp_path / "same", replace={})
    assert _onnx.cache_key(_onnx.read_spec(same)) == original


def test_cache_dir_resolution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HINDSIGHT_CACHE_DIR")  # the isolated environment points it at the session's cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _onnx.resolve_cache_dir() == tmp_path / "xdg" / "langchain-hindsight"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert _onnx.resolve_cache_dir() == Path.home() / ".cache" / "langchain-hindsight"
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(tmp_path / "env"))
    assert _onnx.resolve_cache_dir() == tmp_path / "env"
    assert _onnx.resolve_cache_dir(tmp_path / "arg") == tmp_path / "arg"


# -- sharing, caching, laziness ----------------------------------------------------------------


# -- README section ------------------------------------------------------------------------------
