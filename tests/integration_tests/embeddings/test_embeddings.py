"""LocalEmbeddings: ONNX and torch backends give sentence-transformers' vectors, offline, with a sound fallback.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/embeddings/test_embeddings.py``.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import subprocess
import sys
import threading
import types
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from langchain_hindsight.embeddings import _onnx
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.models import default_model_path
from langchain_hindsight.errors import ConfigurationError
from tests.fakes import child_env
from tests.unit_tests.embeddings.test_embeddings import _symlinked_model

DOC = Path(__file__).resolve().parents[3] / "docs" / "embeddings.md"


REFERENCE = Path(__file__).resolve().parents[2] / "data" / "minilm_reference.npz"


BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


LONG_EN = "When the weekly report job calls the sales API it must page through every result set. " * 30


LONG_ZH = "清洗客户名单时先统一编码为utf-8-sig，再去掉重复的手机号，最后按地区汇总成周报。" * 12


TEXTS = [
    "read CSV with utf-8-sig",
    "周报取自然周",
    "用pandas读取含中文的CSV时要指定encoding='utf-8-sig'，否则表头第一列会带BOM乱码。",
    "The API returned 429; retry with exponential backoff (max 3 tries) before failing the task.",
    "Mixed 中英文 text: 用 requests.get(timeout=30) 调用接口",
    "",
    "   ",
    "word " * 254,  # 254 tokens + [CLS] + [SEP] = exactly max_seq_length (256)
    "word " * 255,  # one token over: truncated
    LONG_EN,
    LONG_ZH,
]


def _cosines(a: list[list[float]], b: list[list[float]]) -> np.ndarray:
    return np.einsum("ij,ij->i", np.asarray(a), np.asarray(b))


def _recorded(text: str) -> list[float]:
    """The vector sentence-transformers computed for ``text`` (one of the recorded texts), torch not needed."""
    recorded = np.load(REFERENCE)
    texts = [str(t) for t in recorded["texts"]]
    return [float(x) for x in recorded["vectors"][texts.index(text)]]


@contextmanager
def no_network() -> Iterator[list[Any]]:
    """Refuse every IP connection (and record the attempt) while the block runs."""
    attempts: list[Any] = []
    original = socket.socket.connect, socket.socket.connect_ex

    def refuse(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError(f"network disabled in this test: {address}")
        return original[0](self, address)

    socket.socket.connect = refuse  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse  # type: ignore[method-assign]
    try:
        yield attempts
    finally:
        socket.socket.connect, socket.socket.connect_ex = original  # type: ignore[method-assign]


def _hindsight_records(caplog: pytest.LogCaptureFixture, level: int) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("langchain_hindsight") and r.levelno == level]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory, real_models: None) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def loaded(onnx_cache: Path) -> tuple[LocalEmbeddings, list[Any]]:
    """An ONNX embedder exported into a fresh cache and loaded with no network."""
    fast = LocalEmbeddings(backend="onnx", query_cache_size=0, cache_dir=onnx_cache)
    with no_network() as attempts:
        fast.embed_query("load")
    return fast, attempts


@pytest.fixture(scope="module")
def fast(loaded: tuple[LocalEmbeddings, list[Any]]) -> LocalEmbeddings:
    return loaded[0]


@pytest.fixture(scope="module")
def reference(onnx_cache: Path) -> LocalEmbeddings:
    """sentence-transformers on torch over the packaged weights (the torch extra), loaded with no network."""
    pytest.importorskip("sentence_transformers", reason="the torch backend needs the torch extra")
    reference = LocalEmbeddings(backend="torch", query_cache_size=0)
    with no_network() as attempts:
        reference.embed_query("load")
    assert attempts == []
    return reference


def test_loading_and_exporting_never_touch_the_network(loaded: tuple[LocalEmbeddings, list[Any]]) -> None:
    fast, attempts = loaded
    assert attempts == []
    assert fast.active_backend == "onnx"


def test_onnx_equals_the_recorded_sentence_transformers_vectors(fast: LocalEmbeddings) -> None:
    """Without torch: the packaged 16-bit weights through ONNX give the vectors sentence-transformers
    computed on torch from the original 32-bit weights (``benchmarks/minilm_weights.py --write-reference``)."""
    recorded = np.load(REFERENCE)
    texts = [str(t) for t in recorded["texts"]]
    cosines = _cosines(fast.embed_documents(texts), recorded["vectors"].tolist())
    assert cosines.min() >= 0.99999, dict(zip(texts, cosines.round(7), strict=True))
    assert cosines.min() < 1.0 - 1e-9  # the 16-bit cast is visible: the recording is not our own output


def test_the_recorded_vectors_are_what_sentence_transformers_computes(reference: LocalEmbeddings) -> None:
    recorded = np.load(REFERENCE)
    texts = [str(t) for t in recorded["texts"]]
    assert _cosines(reference.embed_documents(texts), recorded["vectors"].tolist()).min() >= 0.99999


def test_onnx_queries_equal_sentence_transformers(reference: LocalEmbeddings, fast: LocalEmbeddings) -> None:
    expected = [reference.embed_query(t) for t in TEXTS]
    got = [fast.embed_query(t) for t in TEXTS]
    cosines = _cosines(got, expected)
    assert cosines.min() >= 0.9999, dict(zip(TEXTS, cosines.round(6), strict=True))
    assert all(len(v) == 384 for v in got)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_onnx_batches_equal_sentence_transformers_in_input_order(
    reference: LocalEmbeddings, fast: LocalEmbeddings
) -> None:
    texts = TEXTS * 3  # several length-sorted chunks of batch_size=16, output must keep input order
    cosines = _cosines(fast.embed_documents(texts), reference.embed_documents(texts))
    assert cosines.min() >= 0.9999
    assert fast.embed_documents([]) == []


def test_truncation_happens_at_the_models_max_seq_length(reference: LocalEmbeddings, fast: LocalEmbeddings) -> None:
    spec = _onnx.read_spec(default_model_path())
    assert spec.max_seq_length == 256 == reference._load().model.max_seq_length  # type: ignore[union-attr]
    for emb in (reference, fast):
        same = _cosines([emb.embed_query(LONG_EN)], [emb.embed_query(LONG_EN + " a completely different ending")])
        assert same[0] > 0.99999  # the tail is past token 256
        differs = _cosines([emb.embed_query("word " * 254)], [emb.embed_query("word " * 253 + "csv")])
        assert differs[0] < 0.999  # token 255 is still inside the window


def test_dimension_is_reported_by_both_backends(reference: LocalEmbeddings, fast: LocalEmbeddings) -> None:
    assert reference.dimension == fast.dimension == 384


@pytest.mark.integration  # a comparison with torch (imports torch and sentence-transformers when installed)
@pytest.mark.parametrize(
    ("st_mode", "mode"),
    [("mean", "mean"), ("cls", "cls"), ("max", "max"), ("mean_sqrt_len_tokens", "mean_sqrt_len")],
)
def test_numpy_pooling_matches_sentence_transformers_pooling(st_mode: str, mode: _onnx.Pooling) -> None:
    torch = pytest.importorskip("torch", reason="the torch extra")
    from sentence_transformers.sentence_transformer.modules import Pooling

    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(3, 7, 8)).astype(np.float32)
    mask = np.ones((3, 7), dtype=np.int64)
    mask[1, 4:] = 0
    mask[2, 2:] = 0
    hidden[1, 4:] = 100.0  # padding must not leak into any mode
    features = {"token_embeddings": torch.from_numpy(hidden), "attention_mask": torch.from_numpy(mask)}
    expected = Pooling(8, pooling_mode=st_mode)(features)["sentence_embedding"].numpy()
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(_onnx.pool(hidden, mask, mode), expected, atol=1e-5)


def test_unsupported_model_falls_back_to_torch_with_one_warning(
    tmp_path: Path, reference: LocalEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    # sentence-transformers lower-cases input itself here; the ONNX backend does not reproduce that.
    model = _symlinked_model(tmp_path, replace={"sentence_bert_config.json": {"do_lower_case": True}})
    with pytest.raises(ConfigurationError, match="do_lower_case"):
        LocalEmbeddings(model_path=str(model), backend="onnx", cache_dir=tmp_path / "cache").embed_query("x")
    caplog.set_level(logging.INFO)
    emb = LocalEmbeddings(model_path=str(model), cache_dir=tmp_path / "cache")
    vector = emb.embed_query("Read CSV With UTF-8-SIG")
    assert emb.active_backend == "torch"
    warnings = _hindsight_records(caplog, logging.WARNING)
    assert len(warnings) == 1
    assert "using torch" in warnings[0].getMessage()
    assert _cosines([vector], [reference.embed_query("read csv with utf-8-sig")])[0] > 0.9999
    assert not (tmp_path / "cache").exists()


def test_an_export_that_fails_verification_is_discarded_and_torch_is_used(
    tmp_path: Path, reference: LocalEmbeddings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_onnx, "_MIN_COSINE", 1.5)  # no export can pass: the verification step must reject it
    caplog.set_level(logging.INFO)
    emb = LocalEmbeddings(cache_dir=tmp_path)
    vector = emb.embed_query(TEXTS[1])
    assert emb.active_backend == "torch"
    warnings = _hindsight_records(caplog, logging.WARNING)
    assert len(warnings) == 1
    assert "disagrees with its reference" in warnings[0].getMessage()
    # neither the rejected model nor its temporary file stays (the memo of the weights' digest does)
    assert [p.suffix for p in tmp_path.iterdir()] == [".sha256"]
    assert vector == reference.embed_query(TEXTS[1])


def test_unwritable_cache_dir_keeps_the_export_in_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, real_models: None
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory's parent should be")
    caplog.set_level(logging.INFO)
    emb = LocalEmbeddings(cache_dir=blocker / "cache")
    vector = emb.embed_query(TEXTS[2])
    assert emb.active_backend == "onnx"
    warnings = _hindsight_records(caplog, logging.WARNING)
    assert len(warnings) == 1
    assert "not writable" in warnings[0].getMessage()
    assert _cosines([vector], [_recorded(TEXTS[2])])[0] >= 0.9999
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-directory"]


def test_export_is_cached_and_reused_across_instances(
    onnx_cache: Path, fast: LocalEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    files = sorted(onnx_cache.glob("sentence-model-*"))
    # one model file and the memo of its weights' digest, no temporary leftovers
    assert sorted(p.suffix for p in onnx_cache.iterdir()) == [".onnx", ".sha256"]
    assert files[0].name == f"sentence-model-{_onnx.cache_key(_onnx.read_spec(default_model_path()))}.onnx"
    before = files[0].stat()
    caplog.set_level(logging.INFO)
    again = LocalEmbeddings(cache_dir=onnx_cache)
    assert again.embed_query(TEXTS[0]) == fast.embed_query(TEXTS[0])
    assert _hindsight_records(caplog, logging.INFO) == []  # no "exporting" line
    after = files[0].stat()
    assert after.st_ino == before.st_ino  # not exported again (an export replaces the file: a new inode)
    assert after.st_mtime_ns >= before.st_mtime_ns  # its use is recorded (stale versions are pruned by age)


def test_a_corrupt_cache_file_is_exported_again(
    tmp_path: Path, fast: LocalEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / f"sentence-model-{_onnx.cache_key(_onnx.read_spec(default_model_path()))}.onnx"
    path.write_bytes(b"truncated garbage")
    caplog.set_level(logging.INFO)
    emb = LocalEmbeddings(cache_dir=tmp_path)
    assert _cosines([emb.embed_query(TEXTS[3])], [fast.embed_query(TEXTS[3])])[0] > 0.99999
    warnings = _hindsight_records(caplog, logging.WARNING)
    assert len(warnings) == 1
    assert "unreadable" in warnings[0].getMessage()
    assert path.stat().st_size > 1_000_000
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix != ".sha256") == [path.name]  # + the digest memo


def test_a_model_other_than_bert_is_exported_by_torch_and_matches_too(
    tmp_path: Path, reference: LocalEmbeddings, fast: LocalEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[Path] = []
    monkeypatch.setattr(_onnx._bert_onnx, "build", lambda *a: built.append(a[0]) or b"")  # must not be called
    monkeypatch.setattr(_onnx._bert_onnx, "supported", lambda _dir: False)  # as for, say, an MPNet model
    exported = LocalEmbeddings(backend="onnx", query_cache_size=0, cache_dir=tmp_path)
    vectors = exported.embed_documents(TEXTS[:5])
    assert built == []
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".onnx", ".sha256"]  # the graph, its weights' digest
    assert _cosines(vectors, reference.embed_documents(TEXTS[:5])).min() >= 0.9999
    assert _cosines(vectors, fast.embed_documents(TEXTS[:5])).min() >= 0.9999


@pytest.mark.parametrize("backend", ["onnx", "torch"])
def test_one_instance_is_safe_to_share_between_threads(
    backend: str, onnx_cache: Path, fast: LocalEmbeddings, request: pytest.FixtureRequest
) -> None:
    truth: LocalEmbeddings = fast if backend == "onnx" else request.getfixturevalue("reference")
    emb = LocalEmbeddings(backend=backend, cache_dir=onnx_cache, query_cache_size=8)  # not loaded yet
    expected = {t: truth.embed_query(t) for t in TEXTS[:5]}
    start = threading.Barrier(4)

    def worker(offset: int) -> list[tuple[str, list[float]]]:
        start.wait()  # all threads race the lazy load
        out = []
        for i in range(15):
            text = TEXTS[(i + offset) % 5]
            out.append((text, emb.embed_query(text)))
        out += list(zip(TEXTS[:5], emb.embed_documents(TEXTS[:5]), strict=True))
        return out

    with ThreadPoolExecutor(4) as pool:
        results = [pair for chunk in pool.map(worker, range(4)) for pair in chunk]
    assert len(results) == 80
    for text, vector in results:
        assert _cosines([vector], [expected[text]])[0] > 0.99999


def test_query_cache_returns_copies(onnx_cache: Path) -> None:
    emb = LocalEmbeddings(cache_dir=onnx_cache, query_cache_size=1)
    first = emb.embed_query("a")
    first[0] = 42.0
    assert emb.embed_query("a")[0] != 42.0
    emb.embed_query("b")  # evicts "a"
    assert emb.embed_query("a") == emb.embed_query("a")


async def test_async_twins_match_sync(fast: LocalEmbeddings) -> None:
    assert await fast.aembed_query(TEXTS[1]) == fast.embed_query(TEXTS[1])
    assert await fast.aembed_documents(TEXTS[:3]) == fast.embed_documents(TEXTS[:3])


def _run_python(code: str, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], env=child_env(**env), capture_output=True, text=True, check=True, timeout=120
    )
    return result.stdout.strip()


@pytest.mark.integration
def test_importing_the_package_loads_no_model_runtime() -> None:
    out = _run_python(
        "import sys, langchain_hindsight\n"
        "from langchain_hindsight import LocalEmbeddings\n"
        "LocalEmbeddings()\n"
        "heavy = ('torch', 'onnxruntime', 'sentence_transformers', 'transformers')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    assert out == "[]"


def test_an_empty_cache_builds_the_default_model_without_torch(tmp_path: Path, real_models: None) -> None:
    out = _run_python(
        "import json, sys\n"
        "from langchain_hindsight import LocalEmbeddings\n"
        "e = LocalEmbeddings()\n"
        "v = e.embed_query('read CSV with utf-8-sig')\n"
        "heavy = ('torch', 'transformers', 'sentence_transformers')\n"
        "print(json.dumps([e.active_backend, sorted(m for m in heavy if m in sys.modules), v]))",
        HINDSIGHT_CACHE_DIR=str(tmp_path),
    )
    backend, imported, vector = json.loads(out)
    assert (backend, imported) == ("onnx", [])
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".onnx", ".sha256"]  # the graph, its weights' digest
    assert _cosines([vector], [_recorded("read CSV with utf-8-sig")])[0] >= 0.9999


def test_a_cached_export_embeds_without_importing_torch(onnx_cache: Path, fast: LocalEmbeddings) -> None:
    out = _run_python(
        "import json, sys\n"
        "from langchain_hindsight import LocalEmbeddings\n"
        "e = LocalEmbeddings()\n"
        "v = e.embed_query('read CSV with utf-8-sig')\n"
        "print(json.dumps([e.active_backend, 'torch' in sys.modules, v]))",
        HINDSIGHT_CACHE_DIR=str(onnx_cache),
    )
    backend, imported_torch, vector = json.loads(out)
    assert (backend, imported_torch) == ("onnx", False)
    assert _cosines([vector], [fast.embed_query("read CSV with utf-8-sig")])[0] > 0.99999


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_examples_run(index: int, tmp_path: Path, onnx_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(BLOCKS) == 4
    if re.search(r'backend="torch"|HuggingFaceEmbeddings\(', BLOCKS[index]):
        pytest.importorskip("sentence_transformers", reason="this example uses the torch extra")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HINDSIGHT_CACHE_DIR", str(onnx_cache))
    module = types.ModuleType(f"embeddings_example_{index}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(BLOCKS[index], f"docs/embeddings.md#{index}", "exec"), module.__dict__)
