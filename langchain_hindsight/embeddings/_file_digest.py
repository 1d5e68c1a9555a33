"""The SHA-256 of a large model file, computed once and remembered in the cache directory.

Naming a prepared model by the content it was made from (the MiniLM ONNX graph by its
45 MB of weights) means hashing that content in every process that loads it: about 40 ms
of CPU, and several times that on a helper thread, which must take the interpreter's
lock back after each chunk it hashes. The digest is therefore remembered in a small file
named by the weights file's identity on disk — its resolved path, device, inode, size,
and modification and change times in nanoseconds (what git's index trusts to tell a
file unchanged). Any write to the file changes its change time, which no program can
set back, so a rewritten file never finds the old digest; a file changed less than
:data:`SETTLE_S` seconds ago is hashed every time (a write within the same clock tick
could leave its times as they were). A remembered digest that is not 32 bytes is ignored
and rewritten. Memo files unused for 30 days are removed (:mod:`._cache_files`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from pathlib import Path

from langchain_hindsight.embeddings._cache_files import used

__all__ = ["SETTLE_S", "file_sha256", "memo_path"]

logger = logging.getLogger(__name__)

SETTLE_S = 2.0
"""A file changed more recently than this is hashed, not looked up (its times may not show a last write)."""
_PATTERN = "digest-*.sha256"


def memo_path(path: Path, cache_dir: Path) -> Path:
    """Where ``path``'s digest is remembered under ``cache_dir``: named by the file's identity on disk."""
    st = path.stat()
    identity = f"{path.resolve()}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"
    return cache_dir / f"digest-{hashlib.sha256(identity.encode()).hexdigest()[:32]}.sha256"


def file_sha256(path: Path, cache_dir: Path | None = None, *, now: float | None = None) -> bytes:
    """The SHA-256 of ``path``'s bytes, remembered under ``cache_dir`` (``None``: always computed).

    Raises:
        OSError: ``path`` cannot be read.
    """
    memo = None
    if cache_dir is not None and path.stat().st_ctime < (time.time() if now is None else now) - SETTLE_S:
        memo = memo_path(path, cache_dir)
        try:
            digest = memo.read_bytes()
        except OSError:
            digest = b""
        if len(digest) == hashlib.sha256().digest_size:
            used(memo, _PATTERN)
            return digest
    with path.open("rb") as f:
        digest = hashlib.file_digest(f, "sha256").digest()
    if memo is not None:
        _remember(memo, digest)
    return digest


def _remember(memo: Path, digest: bytes) -> None:
    """Write ``digest`` to ``memo`` atomically (best effort: an unwritable cache only means hashing again)."""
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=memo.parent, prefix=memo.stem + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(digest)
            os.replace(tmp, memo)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        logger.debug("digest of a model file not remembered at %s (%s)", memo, e)
        return
    used(memo, _PATTERN)
