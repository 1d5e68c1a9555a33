"""Test helpers shared by the suite.

- the scripted chat models (from :mod:`langchain_hindsight.testing`) and a write-judge model;
- two fake embedders that load no model: :class:`NgramEmbeddings` (similarity-preserving, for the unit
  tier) and :class:`HashEmbeddings` (one unrelated vector per exact text);
- the grants TOML of the sharing and MCP tests.

Child processes started by tests import this module as ``tests.fakes`` (the repository root on
``sys.path``, see :data:`REPO_ROOT`).
"""

from __future__ import annotations

import hashlib
import math
import re
import zlib
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage

from langchain_hindsight.testing import (
    ReactiveToolModel,
    ScriptedToolModel,
    ScriptExhaustedError,
    Turn,
    call,
    scripted_model,
    to_message,
)

__all__ = [
    "GRANTS_TOML",
    "REPO_ROOT",
    "HashEmbeddings",
    "NgramEmbeddings",
    "ReactiveToolModel",
    "ScriptExhaustedError",
    "ScriptedToolModel",
    "Turn",
    "call",
    "judge_model",
    "scripted_model",
    "to_message",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
"""The repository root: put it first on a child process's ``sys.path`` to import ``tests.fakes`` there."""

_WORD = re.compile(r"[^\W\u3000-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")


class NgramEmbeddings(Embeddings):
    """A deterministic, similarity-preserving fake embedder: hashed words and character n-grams.

    Latin-script text contributes its lower-cased words (weight 1) and their character 3-grams
    (weight 0.5, with word-boundary marks, so ``encoding``/``encodings`` stay close); CJK text
    contributes its characters and character bigrams. Each feature adds its weight, with a sign,
    to one of ``dimensions`` buckets chosen by CRC32 (stable across processes, unlike ``hash``);
    the sum is L2-normalised. Texts that share words or characters get a high cosine, unrelated
    texts about 0, a text itself exactly 1. Paraphrases with no shared words, and Chinese vs
    English, are NOT similar: tests of semantic recall belong in the integration tier with the
    real model.

    Thousands of texts a second, no model, no thread, no network.

    Args:
        dimensions: Vector length (default 384, MiniLM's).
    """

    def __init__(self, dimensions: int = 384) -> None:
        if dimensions < 8:
            raise ValueError(f"dimensions must be >= 8, got {dimensions}")
        self.dimensions = dimensions

    @staticmethod
    def features(text: str) -> list[tuple[str, float]]:
        """The weighted features of ``text`` (exposed so a test can explain a similarity)."""
        lowered = text.lower()
        out: list[tuple[str, float]] = []
        for word in _WORD.findall(lowered):
            out.append(("w:" + word, 1.0))
            marked = f"<{word}>"
            out.extend(("g:" + marked[i : i + 3], 0.5) for i in range(len(marked) - 2))
        for run in _CJK_RUN.findall(lowered):
            out.extend(("c:" + ch, 1.0) for ch in run)
            out.extend(("b:" + run[i : i + 2], 1.0) for i in range(len(run) - 1))
        return out

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        features = self.features(text) or [("empty:" + text, 1.0)]  # punctuation-only text: still a unit vector
        for feature, weight in features:
            h = zlib.crc32(feature.encode("utf-8"))
            vector[h % self.dimensions] += weight if (h >> 31) & 1 else -weight
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:  # features cancelled out exactly: fall back to the text's own bucket
            vector[zlib.crc32(text.encode("utf-8")) % self.dimensions] = 1.0
            return vector
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


class HashEmbeddings(Embeddings):
    """Deterministic pseudo-random unit vectors: every distinct text gets its own, unrelated vector.

    For tests that need no similarity at all (every write is new, nothing is merged) or that look
    for a known vector's bytes on disk.

    Args:
        dimensions: Vector length (default 384).
    """

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions

    def _vec(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dimensions)
        return [float(x) for x in v / np.linalg.norm(v)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


def judge_model(decision: str, *, reason: str = "scripted") -> ReactiveToolModel:
    """A chat model for ``LLMWriteJudge`` that answers ``decision`` about the first neighbour it is shown.

    ``MemoryStore(judge=LLMWriteJudge(judge_model("conflict")))`` supersedes the nearest similar unit
    on every write that has one (``"add"`` names no neighbour).
    """

    def respond(messages: list[BaseMessage]) -> Turn:
        shown = re.findall(r"id=(mem_\w+)", str(messages[-1].content))
        target = None if decision == "add" or not shown else shown[0]
        return call("JudgeOutput", decision=decision, target_id=target, reason=reason)

    return ReactiveToolModel(respond=respond)


GRANTS_TOML = """
[principals.cleaner]
namespace = "cleaner"
write = ["shared"]

[principals.analyst]
namespace = "analyst"
read = ["shared"]

[principals.outsider]
namespace = "outsider"
"""
"""A cleaning agent that publishes to ``shared``, an analysis agent that reads it, and one with no grant."""
