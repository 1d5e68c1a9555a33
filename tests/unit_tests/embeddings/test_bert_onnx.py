"""The BERT graph built without torch: equal to its numpy reference and to Hugging Face's BertModel."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from langchain_hindsight.embeddings import _bert_onnx

CONFIG = {
    "model_type": "bert",
    "hidden_act": "gelu",
    "hidden_size": 12,
    "num_attention_heads": 3,
    "num_hidden_layers": 2,
    "intermediate_size": 20,
    "max_position_embeddings": 16,
    "type_vocab_size": 2,
    "vocab_size": 40,
    "layer_norm_eps": 1e-12,
    "pad_token_id": 0,
}


def _tensors(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    d, f = CONFIG["hidden_size"], CONFIG["intermediate_size"]

    def rand(*shape: int) -> np.ndarray:
        return rng.normal(0.0, 0.5, shape).astype(np.float32)

    e = "embeddings."
    out = {
        e + "word_embeddings.weight": rand(CONFIG["vocab_size"], d),
        e + "position_embeddings.weight": rand(CONFIG["max_position_embeddings"], d),
        e + "token_type_embeddings.weight": rand(CONFIG["type_vocab_size"], d),
        e + "LayerNorm.weight": 1.0 + rand(d),
        e + "LayerNorm.bias": rand(d),
    }
    for i in range(CONFIG["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        shapes = {
            "attention.self.query": (d, d),
            "attention.self.key": (d, d),
            "attention.self.value": (d, d),
            "attention.output.dense": (d, d),
            "intermediate.dense": (f, d),
            "output.dense": (d, f),
        }
        for name, (rows, cols) in shapes.items():
            out[f"{p}{name}.weight"], out[f"{p}{name}.bias"] = rand(rows, cols), rand(rows)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[f"{p}{norm}.weight"], out[f"{p}{norm}.bias"] = 1.0 + rand(d), rand(d)
    return out


def _tiny_bert(directory: Path, *, prefix: str = "", config: dict[str, object] | None = None) -> Path:
    from safetensors.numpy import save_file

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config or CONFIG))
    save_file({prefix + k: v for k, v in _tensors().items()}, str(directory / "model.safetensors"))
    return directory


def _feeds() -> dict[str, np.ndarray]:
    """Two rows: 7 tokens, and 4 tokens padded to 7 (so the attention mask matters)."""
    ids = np.array([[2, 5, 9, 11, 3, 17, 1], [2, 8, 30, 1, 0, 0, 0]], dtype=np.int64)
    mask = (ids != 0).astype(np.int64)
    types = np.array([[0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0, 0]], dtype=np.int64)
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _run(model: bytes, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, feeds)[0])


@pytest.mark.parametrize("prefix", ["", "bert."])
def test_built_graph_equals_the_numpy_reference(tmp_path: Path, prefix: str) -> None:
    model_dir = _tiny_bert(tmp_path, prefix=prefix)
    assert _bert_onnx.supported(model_dir)
    weights = _bert_onnx.load_weights(model_dir)
    feeds = _feeds()
    got = _run(_bert_onnx.build(model_dir, weights), feeds)
    expected = _bert_onnx.reference_hidden(model_dir, weights, feeds)
    assert got.shape == expected.shape == (2, 7, CONFIG["hidden_size"])
    np.testing.assert_allclose(got, expected, atol=2e-5)


def test_padding_does_not_change_a_rows_real_tokens(tmp_path: Path) -> None:
    model_dir = _tiny_bert(tmp_path)
    weights = _bert_onnx.load_weights(model_dir)
    model = _bert_onnx.build(model_dir, weights)
    padded = _run(model, _feeds())
    alone = {k: v[1:, :4] for k, v in _feeds().items()}
    np.testing.assert_allclose(padded[1, :4], _run(model, alone)[0], atol=2e-5)


def test_the_reference_depends_on_the_last_layers_weights(tmp_path: Path) -> None:
    model_dir = _tiny_bert(tmp_path)
    weights = _bert_onnx.load_weights(model_dir)
    base = _bert_onnx.reference_hidden(model_dir, weights, _feeds())
    changed = dict(weights)
    bias = weights["encoder.layer.1.output.dense.bias"]  # not a constant shift: LayerNorm would cancel it
    changed["encoder.layer.1.output.dense.bias"] = bias + np.linspace(-1.0, 1.0, bias.size, dtype=np.float32)
    assert not np.allclose(base, _bert_onnx.reference_hidden(model_dir, changed, _feeds()), atol=1e-3)


def test_unsupported_configs_and_missing_tensors(tmp_path: Path) -> None:
    for key, value in (("model_type", "roberta"), ("hidden_act", "gelu_new"), ("position_embedding_type", "rotary")):
        assert not _bert_onnx.supported(_tiny_bert(tmp_path / key, config={**CONFIG, key: value}))
    assert not _bert_onnx.supported(tmp_path / "missing")
    broken = _tiny_bert(tmp_path / "broken", prefix="encoder_only.")
    with pytest.raises(KeyError, match="not a BERT encoder"):
        _bert_onnx.load_weights(broken)
