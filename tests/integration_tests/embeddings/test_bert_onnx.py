"""The BERT graph built without torch: equal to its numpy reference and to Hugging Face's BertModel.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/embeddings/test_bert_onnx.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from langchain_hindsight.embeddings import _bert_onnx
from tests.unit_tests.embeddings.test_bert_onnx import CONFIG, _feeds, _run, _tensors, _tiny_bert


@pytest.mark.slow
def test_built_graph_equals_hugging_face_bert(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model_dir = _tiny_bert(tmp_path)
    bert = transformers.BertModel(transformers.BertConfig(**CONFIG), add_pooling_layer=False).eval()
    missing, unexpected = bert.load_state_dict({k: torch.from_numpy(v) for k, v in _tensors().items()}, strict=False)
    assert [m for m in missing if not m.endswith("position_ids")] == []
    assert unexpected == []
    feeds = _feeds()
    with torch.no_grad():
        expected = bert(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state.numpy()
    got = _run(_bert_onnx.build(model_dir, _bert_onnx.load_weights(model_dir)), feeds)
    real = feeds["attention_mask"].astype(bool)  # padded positions' outputs are never pooled
    np.testing.assert_allclose(got[real], expected[real], atol=2e-5)
