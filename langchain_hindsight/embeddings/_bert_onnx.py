"""A BERT encoder as an ONNX graph, built from its safetensors weights without torch.

The ONNX backend of :class:`~langchain_hindsight.embeddings.local.LocalEmbeddings`
needs the transformer as an ONNX graph. For BERT models (the packaged
all-MiniLM-L6-v2 is one) this module writes that graph directly with
``onnx.helper``: embeddings (word + position + token type, LayerNorm), then per
layer self-attention, output projection + LayerNorm, and the erf-GELU
feed-forward + LayerNorm, the operations and order of Hugging Face's
``BertModel``. ONNX Runtime fuses it as it fuses a ``torch.onnx.export`` of the
same model (LayerNormalization, BiasGelu, FusedMatMul), so queries are as fast.

:func:`reference_hidden` is the same network in numpy, written separately: a
built graph is accepted only if ONNX Runtime's output matches it (cosine
≥ 0.9999 after pooling, checked on every build by the caller). Neither needs
torch; other architectures still go through ``torch.onnx.export``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["INPUTS", "build", "load_weights", "reference_hidden", "supported"]

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
"""The graph's int64 ``(batch, sequence)`` inputs; its output is ``last_hidden_state`` ``(batch, sequence, hidden)``."""
_WEIGHTS = "model.safetensors"
_OPSET = 17  # LayerNormalization is a standard op from opset 17
_IR_VERSION = 8


def _config(transformer_dir: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((transformer_dir / "config.json").read_text(encoding="utf-8"))
    return config


def supported(transformer_dir: Path) -> bool:
    """Whether ``transformer_dir`` holds a BERT this module reproduces (absolute positions, erf-GELU, safetensors)."""
    try:
        config = _config(transformer_dir)
    except (OSError, ValueError):
        return False
    return (
        config.get("model_type") == "bert"
        and config.get("hidden_act") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and config.get("hidden_size", 0) % max(config.get("num_attention_heads", 0), 1) == 0
        and (transformer_dir / _WEIGHTS).is_file()
    )


def load_weights(transformer_dir: Path) -> dict[str, NDArray[np.float32]]:
    """The model's float32 tensors by name, without a leading ``bert.`` (as ``BertModel`` names them).

    Raises:
        KeyError: a tensor the network needs is missing.
    """
    from safetensors.numpy import load_file

    tensors = load_file(str(transformer_dir / _WEIGHTS))
    weights = {k.removeprefix("bert."): np.asarray(v, dtype=np.float32) for k, v in tensors.items()}
    for name in (
        "embeddings.word_embeddings.weight",
        "embeddings.LayerNorm.weight",
        "encoder.layer.0.output.dense.bias",
    ):
        if name not in weights:
            raise KeyError(f"{transformer_dir / _WEIGHTS} has no tensor {name!r}: not a BERT encoder")
    return weights


def _layers(config: Mapping[str, Any]) -> range:
    return range(int(config["num_hidden_layers"]))


def build(transformer_dir: Path, weights: Mapping[str, NDArray[np.float32]]) -> bytes:
    """The serialized ONNX model (opset 17) of the BERT in ``transformer_dir`` with ``weights``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    config = _config(transformer_dir)
    heads, hidden = int(config["num_attention_heads"]), int(config["hidden_size"])
    head_dim, eps = hidden // heads, float(config["layer_norm_eps"])
    initializers: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, value: Any) -> str:
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(kind: str, *inputs: str, **attrs: Any) -> str:
        out = f"{kind}_{len(nodes)}"
        nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def linear(x: str, prefix: str) -> str:
        kernel = const(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)  # (in, out): x @ W^T
        return op("Add", op("MatMul", x, kernel), const(f"{prefix}.bias", weights[f"{prefix}.bias"]))

    def layer_norm(x: str, prefix: str) -> str:
        gamma, beta = (
            const(f"{prefix}.weight", weights[f"{prefix}.weight"]),
            const(f"{prefix}.bias", weights[f"{prefix}.bias"]),
        )
        return op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=eps)

    e = "embeddings."
    length = op(
        "Slice",
        op("Shape", "input_ids"),
        const("one", np.array([1], dtype=np.int64)),
        const("two", np.array([2], dtype=np.int64)),
    )
    positions = op(
        "Slice",
        const("positions", weights[e + "position_embeddings.weight"]),
        const("zero", np.array([0], dtype=np.int64)),
        length,
    )
    words = op("Gather", const("words", weights[e + "word_embeddings.weight"]), "input_ids")
    types = op("Gather", const("types", weights[e + "token_type_embeddings.weight"]), "token_type_ids")
    x = layer_norm(op("Add", op("Add", words, types), positions), e + "LayerNorm")

    # Padding gets the most negative float added to its attention scores, as BertModel does.
    unit = const("unit", np.array(1.0, dtype=np.float32))
    padding = op("Sub", unit, op("Cast", "attention_mask", to=TensorProto.FLOAT))
    lowest = const("lowest", np.array(np.finfo(np.float32).min, dtype=np.float32))
    bias = op("Unsqueeze", op("Mul", padding, lowest), const("axes_1_2", np.array([1, 2], dtype=np.int64)))
    split = const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge = const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    half, root2 = const("half", np.array(0.5, dtype=np.float32)), const("root2", np.array(math.sqrt(2), np.float32))
    for i in _layers(config):
        p = f"encoder.layer.{i}."

        def heads_of(name: str, perm: list[int], x: str = x, p: str = p) -> str:
            return op("Transpose", op("Reshape", linear(x, p + f"attention.self.{name}"), split), perm=perm)

        q, k, v = heads_of("query", [0, 2, 1, 3]), heads_of("key", [0, 2, 3, 1]), heads_of("value", [0, 2, 1, 3])
        scores = op("Add", op("Mul", op("MatMul", q, k), scale), bias)
        context = op("MatMul", op("Softmax", scores, axis=-1), v)
        context = op("Reshape", op("Transpose", context, perm=[0, 2, 1, 3]), merge)
        x = layer_norm(op("Add", linear(context, p + "attention.output.dense"), x), p + "attention.output.LayerNorm")
        h = linear(x, p + "intermediate.dense")
        # x * (1 + erf(x / sqrt 2)) * 0.5: the pattern ONNX Runtime fuses into one BiasGelu kernel.
        gelu = op("Mul", op("Mul", h, op("Add", op("Erf", op("Div", h, root2)), unit)), half)
        x = layer_norm(op("Add", linear(gelu, p + "output.dense"), x), p + "output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    graph = helper.make_graph(
        nodes,
        "bert_encoder",
        [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"]) for n in INPUTS],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])],
        initializers,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", _OPSET)], producer_name="langchain-hindsight"
    )
    model.ir_version = _IR_VERSION
    onnx.checker.check_model(model)
    serialized: bytes = model.SerializeToString()
    return serialized


def _erf(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """The error function to float32 precision (Abramowitz & Stegun 7.1.26, absolute error ≤ 1.5e-7): numpy has none."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return np.asarray(np.sign(x) * (1.0 - poly * np.exp(-a * a)), dtype=np.float32)


def reference_hidden(
    transformer_dir: Path, weights: Mapping[str, NDArray[np.float32]], feeds: Mapping[str, NDArray[np.int64]]
) -> NDArray[np.float32]:
    """``last_hidden_state`` of the BERT computed in numpy: the independent check of :func:`build`'s graph."""
    config = _config(transformer_dir)
    heads, hidden, eps = int(config["num_attention_heads"]), int(config["hidden_size"]), float(config["layer_norm_eps"])
    w: Callable[[str], NDArray[np.float32]] = weights.__getitem__
    ids, mask, types = feeds["input_ids"], feeds["attention_mask"], feeds["token_type_ids"]
    batch, length = ids.shape

    def norm(x: NDArray[np.float32], prefix: str) -> NDArray[np.float32]:
        centred = x - x.mean(-1, keepdims=True)
        scaled = centred / np.sqrt((centred * centred).mean(-1, keepdims=True) + eps)
        return np.asarray(scaled * w(prefix + ".weight") + w(prefix + ".bias"), dtype=np.float32)

    def dense(x: NDArray[np.float32], prefix: str) -> NDArray[np.float32]:
        return np.asarray(x @ w(prefix + ".weight").T + w(prefix + ".bias"), dtype=np.float32)

    def split(x: NDArray[np.float32]) -> NDArray[np.float32]:
        return x.reshape(batch, length, heads, hidden // heads).transpose(0, 2, 1, 3)

    e = "embeddings."
    x = (
        w(e + "word_embeddings.weight")[ids]
        + w(e + "position_embeddings.weight")[:length]
        + w(e + "token_type_embeddings.weight")[types]
    )
    x = norm(x, e + "LayerNorm")
    bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * np.finfo(np.float32).min
    for i in _layers(config):
        p = f"encoder.layer.{i}."
        q, k, v = (split(dense(x, p + f"attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(hidden // heads)) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = ((scores / scores.sum(-1, keepdims=True)) @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
        x = norm(dense(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        h = dense(x, p + "intermediate.dense")
        x = norm(
            dense(0.5 * h * (1.0 + _erf(h / np.float32(math.sqrt(2)))), p + "output.dense") + x, p + "output.LayerNorm"
        )
    return x
