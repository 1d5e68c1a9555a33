"""ONNX Runtime backend of :class:`~langchain_hindsight.embeddings.local.LocalEmbeddings`.

A sentence-transformers model directory (Transformer → Pooling → optional
Normalize) is turned once into an ONNX graph in a cache directory, keyed by a
hash of the model's weights and config: a BERT (the packaged MiniLM) is built
from its weights without torch (:mod:`~langchain_hindsight.embeddings._bert_onnx`,
checked against a numpy reference); other architectures are exported with
``torch.onnx.export`` (the ``torch`` extra) and checked against torch. Later
processes load the cached file in a fraction of a second. Tokenisation uses the
model's own ``tokenizer.json`` through ``tokenizers`` (truncated at the model's
``max_seq_length``), and pooling + L2 normalisation are done in numpy exactly as
the model's pooling config says, so vectors match sentence-transformers'.

Cache directory (:func:`langchain_hindsight.settings.cache_dir`, where its
environment variables are read): ``cache_dir`` argument, else ``$HINDSIGHT_CACHE_DIR``,
else ``$XDG_CACHE_HOME/langchain-hindsight``, else ``~/.cache/langchain-hindsight``.
Files are written to a temporary name and renamed, so concurrent processes never
see a partial model; an unwritable directory keeps the export in memory.
"""

from __future__ import annotations

import hashlib
import inspect
import io
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from langchain_hindsight import settings
from langchain_hindsight.embeddings import _bert_onnx
from langchain_hindsight.embeddings._cache_files import used
from langchain_hindsight.embeddings._file_digest import file_sha256
from langchain_hindsight.errors import ConfigurationError

if TYPE_CHECKING:
    from numpy.typing import NDArray
    from tokenizers import Encoding, Tokenizer

__all__ = ["OnnxEncoder", "SentenceModelSpec", "cache_key", "load_encoder", "pool", "read_spec", "resolve_cache_dir"]

logger = logging.getLogger(__name__)

TORCH_EXTRA = "pip install 'langchain-hindsight[torch]'"
"""What models other than BERT (and the torch backend) need: torch, transformers, sentence-transformers."""
_FORMAT_VERSION = 1  # bump when the exported graph changes, so stale cache files are not reused
_OPSET = 17
_MIN_COSINE = 0.9999  # a graph whose output differs more from its reference (numpy or torch) is rejected
_PROBES = ("hindsight probe", "读取 CSV 文件时使用 utf-8-sig 编码，避免 BOM 导致列名错误。")
_WEIGHT_SUFFIXES = (".safetensors", ".bin")
Pooling = Literal["mean", "cls", "max", "mean_sqrt_len"]
_POOLING_KEYS: dict[str, Pooling] = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len",
}


@dataclass(frozen=True, slots=True)
class SentenceModelSpec:
    """What the ONNX backend needs to know about a sentence-transformers directory."""

    transformer_dir: Path
    max_seq_length: int
    pooling: Pooling
    dimension: int
    pad_token_id: int


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigurationError(f"cannot read {path}: {e}") from e


def read_spec(model_dir: str | os.PathLike[str]) -> SentenceModelSpec:
    """Describe a sentence-transformers directory, or refuse one the ONNX backend cannot reproduce.

    Raises:
        ConfigurationError: the directory is not Transformer → Pooling (→ Normalize), uses a
            pooling mode other than mean / cls / max / mean-sqrt-len, lower-cases its input in
            sentence-transformers, or lacks ``tokenizer.json``.
    """
    root = Path(model_dir)
    modules = _read_json(root / "modules.json")
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ConfigurationError(f"ONNX backend supports Transformer, Pooling[, Normalize] models, not {kinds}")
    transformer_dir = root / str(modules[0].get("path", ""))
    st_config = _read_json(transformer_dir / "sentence_bert_config.json")
    if st_config.get("do_lower_case"):
        raise ConfigurationError("ONNX backend does not reproduce sentence-transformers' do_lower_case")
    hf_config = _read_json(transformer_dir / "config.json")
    max_len = st_config.get("max_seq_length") or hf_config.get("max_position_embeddings")
    pooling_config = _read_json(root / str(modules[1].get("path", "")) / "config.json")
    modes = [mode for key, mode in _POOLING_KEYS.items() if pooling_config.get(key)]
    others = [k for k, v in pooling_config.items() if k.startswith("pooling_mode") and v and k not in _POOLING_KEYS]
    if len(modes) != 1 or others:
        raise ConfigurationError(f"ONNX backend needs exactly one supported pooling mode, got {pooling_config}")
    if not (transformer_dir / "tokenizer.json").is_file():
        raise ConfigurationError(f"ONNX backend needs {transformer_dir / 'tokenizer.json'}")
    return SentenceModelSpec(
        transformer_dir=transformer_dir,
        max_seq_length=int(max_len),
        pooling=modes[0],
        dimension=int(pooling_config.get("word_embedding_dimension") or hf_config["hidden_size"]),
        pad_token_id=int(hf_config.get("pad_token_id") or 0),
    )


def cache_key(spec: SentenceModelSpec, cache_dir: Path | None = None) -> str:
    """Hash of everything the exported graph depends on: config, weights, export format.

    ``cache_dir``: where the weights files' digests are remembered between processes
    (:func:`~._file_digest.file_sha256`); ``None`` hashes them every time.
    """
    digest = hashlib.sha256(f"hindsight-onnx/{_FORMAT_VERSION}/opset{_OPSET}".encode())
    files = sorted(p for p in spec.transformer_dir.iterdir() if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
    if not files:
        raise ConfigurationError(f"no weight files (*.safetensors, *.bin) in {spec.transformer_dir}")
    for path in [spec.transformer_dir / "config.json", *files]:
        digest.update(path.name.encode() + b"\0" + file_sha256(path, cache_dir if path in files else None))
    return digest.hexdigest()[:32]


def resolve_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache directory: ``cache_dir``, ``$HINDSIGHT_CACHE_DIR``, ``$XDG_CACHE_HOME/...``, ``~/.cache/...``."""
    return settings.cache_dir(cache_dir)


def pool(hidden: NDArray[np.float32], mask: NDArray[np.int64], mode: Pooling) -> NDArray[np.float32]:
    """Pool token vectors ``(batch, seq, dim)`` as sentence-transformers does, then L2-normalise."""
    weights = mask[..., None].astype(np.float32)
    if mode == "cls":
        vectors = hidden[:, 0]
    elif mode == "max":
        vectors = np.where(weights > 0, hidden, np.float32(-1e9)).max(axis=1)
    else:
        counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
        vectors = (hidden * weights).sum(axis=1)
        vectors = vectors / (counts if mode == "mean" else np.sqrt(counts))
    norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), np.float32(1e-12))
    return np.asarray(vectors / norms, dtype=np.float32)


def _load_tokenizer(spec: SentenceModelSpec) -> Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(spec.transformer_dir / "tokenizer.json"))
    tokenizer.no_padding()  # batches are padded per chunk in _feeds
    tokenizer.enable_truncation(max_length=spec.max_seq_length)
    return tokenizer


def _encode(tokenizer: Tokenizer, texts: Sequence[str]) -> list[Encoding]:
    return tokenizer.encode_batch(list(texts)) if len(texts) > 1 else [tokenizer.encode(texts[0])]


def _feeds(
    encodings: Sequence[Encoding], pad_id: int, names: Sequence[str]
) -> tuple[dict[str, NDArray[np.int64]], NDArray[np.int64]]:
    width = max(len(e.ids) for e in encodings)
    ids = np.full((len(encodings), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    types = np.zeros((len(encodings), width), dtype=np.int64)
    for row, enc in enumerate(encodings):
        n = len(enc.ids)
        ids[row, :n] = enc.ids
        mask[row, :n] = 1
        types[row, :n] = enc.type_ids
    every = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    return {name: every[name] for name in names}, mask


def _session(source: str | bytes, threads: int | None) -> Any:
    import onnxruntime as ort  # type: ignore[import-untyped]

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads or 0  # 0: one per core
    options.inter_op_num_threads = 1
    # Spinning worker threads stall when another process holds the other core.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


class OnnxEncoder:
    """Tokenizer + ONNX Runtime sessions for one model; safe to call from several threads.

    Queries run on a session with ``query_threads`` intra-op threads; batches on a
    second session using every core, created on first use (when the two counts differ).
    """

    def __init__(self, spec: SentenceModelSpec, source: str | bytes, *, query_threads: int | None) -> None:
        self.spec = spec
        self._source = source
        self._tokenizer = _load_tokenizer(spec)
        self._query_session = _session(source, query_threads)
        self._names = [i.name for i in self._query_session.get_inputs()]
        self._batch_session: Any = None if query_threads is not None else self._query_session
        self._lock = threading.Lock()

    def _run(self, session: Any, encodings: Sequence[Encoding]) -> NDArray[np.float32]:
        feeds, mask = _feeds(encodings, self.spec.pad_token_id, self._names)
        hidden = session.run(None, feeds)[0]
        return pool(hidden, mask, self.spec.pooling)

    def encode_query(self, text: str) -> NDArray[np.float32]:
        """One L2-normalised vector."""
        vector: NDArray[np.float32] = self._run(self._query_session, [self._tokenizer.encode(text)])[0]
        return vector

    def encode_batch(self, texts: Sequence[str], *, batch_size: int) -> NDArray[np.float32]:
        """Vectors for ``texts`` (input order), in length-sorted chunks of ``batch_size``."""
        with self._lock:
            if self._batch_session is None:
                self._batch_session = _session(self._source, None)
            session = self._batch_session
        encodings = _encode(self._tokenizer, texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.spec.dimension), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._run(session, [encodings[i] for i in chunk])
        return out


def _export(spec: SentenceModelSpec, target: str | io.BytesIO) -> None:
    """Write the transformer as ONNX to ``target``: built without torch for BERT, else exported by torch."""
    if _bert_onnx.supported(spec.transformer_dir):
        _build(spec, target)
    else:
        _torch_export(spec, target)


def _check(
    spec: SentenceModelSpec,
    source: str | bytes,
    feeds: dict[str, NDArray[np.int64]],
    mask: NDArray[np.int64],
    expected: NDArray[np.float32],
) -> None:
    """Raise unless ONNX Runtime's pooled output on ``feeds`` matches ``expected`` (cosine ≥ ``_MIN_COSINE``)."""
    got = pool(_session(source, 1).run(None, feeds)[0], mask, spec.pooling)
    worst = float((got * expected).sum(axis=1).min())
    if worst < _MIN_COSINE:
        raise RuntimeError(
            f"the ONNX model of {spec.transformer_dir} disagrees with its reference (cosine {worst:.6f})"
        )


def _build(spec: SentenceModelSpec, target: str | io.BytesIO) -> None:
    """Build a BERT's graph from its weights and check it against the numpy reference on probe texts."""
    weights = _bert_onnx.load_weights(spec.transformer_dir)
    model = _bert_onnx.build(spec.transformer_dir, weights)
    # Two probes of different lengths: the batch is padded, so the attention-mask path is checked.
    feeds, mask = _feeds(_encode(_load_tokenizer(spec), _PROBES), spec.pad_token_id, _bert_onnx.INPUTS)
    expected = pool(_bert_onnx.reference_hidden(spec.transformer_dir, weights, feeds), mask, spec.pooling)
    _check(spec, model, feeds, mask, expected)
    if isinstance(target, io.BytesIO):
        target.write(model)
    else:
        Path(target).write_bytes(model)


def _torch_export(spec: SentenceModelSpec, target: str | io.BytesIO) -> None:
    """Export the transformer with ``torch.onnx.export`` and check it against torch on probe texts."""
    try:
        import torch
        from transformers import AutoModel
    except ImportError as e:
        raise ImportError(f"exporting {spec.transformer_dir} to ONNX needs torch: {TORCH_EXTRA}") from e

    # .float(): trace in 32 bits whatever the weights' storage type (16-bit weights would export a 16-bit graph).
    model = AutoModel.from_pretrained(str(spec.transformer_dir), local_files_only=True).float().eval()
    accepted = inspect.signature(model.forward).parameters
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted]
    # Two probes of different lengths: the traced batch is padded, so the attention-mask path is exported.
    feeds, mask = _feeds(_encode(_load_tokenizer(spec), _PROBES), spec.pad_token_id, names)

    class _Hidden(torch.nn.Module):  # type: ignore[misc]  # torch is Any where the torch extra is absent
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, inputs, strict=True))).last_hidden_state  # type: ignore[no-any-return]

    args = tuple(torch.from_numpy(feeds[n]) for n in names)
    axes = {n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer warnings about Python control flow on shapes
        expected = pool(_Hidden()(*args).numpy(), mask, spec.pooling)
        torch.onnx.export(
            _Hidden(),
            args,
            target,  # type: ignore[arg-type]  # the TorchScript exporter also writes to file objects
            dynamo=False,
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=_OPSET,
            do_constant_folding=True,
        )
    _check(spec, target.getvalue() if isinstance(target, io.BytesIO) else target, feeds, mask, expected)


def _export_to_cache(spec: SentenceModelSpec, path: Path) -> str | bytes:
    """Export into ``path`` atomically; when its directory is not writable, return the model bytes."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp")
        os.close(fd)
    except OSError as e:
        logger.warning("cache directory %s is not writable (%s); keeping the ONNX export in memory", path.parent, e)
        buffer = io.BytesIO()
        _export(spec, buffer)
        return buffer.getvalue()
    logger.info("writing the ONNX graph of %s to %s (once per model)", spec.transformer_dir, path)
    try:
        _export(spec, tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache may be shared
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return str(path)


def load_encoder(
    model_dir: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    query_threads: int | None = 1,
) -> OnnxEncoder:
    """An :class:`OnnxEncoder` for ``model_dir``, exporting it to the cache first if needed.

    Raises:
        ConfigurationError: the model cannot be reproduced by this backend.
        Exception: whatever the exporter or ONNX Runtime raise (callers fall back to torch).
    """
    spec = read_spec(model_dir)
    directory = resolve_cache_dir(cache_dir)
    path = directory / f"sentence-model-{cache_key(spec, directory)}.onnx"
    if path.is_file():
        try:
            encoder = OnnxEncoder(spec, str(path), query_threads=query_threads)
            used(path, "sentence-model-*.onnx")
            return encoder
        except Exception as e:  # noqa: BLE001 - ONNX Runtime's load errors share no base class
            logger.warning("cached ONNX model %s is unreadable (%s); exporting it again", path, e)
    source = _export_to_cache(spec, path)
    if isinstance(source, str):
        used(path, "sentence-model-*.onnx")
    return OnnxEncoder(spec, source, query_threads=query_threads)
