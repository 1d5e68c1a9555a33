"""Test helpers shared by the suite.

- the scripted chat models (from :mod:`langchain_hindsight.testing`) and a write-judge model;
- two fake embedders that load no model: :class:`NgramEmbeddings` (similarity-preserving, for the unit
  tier) and :class:`HashEmbeddings` (one unrelated vector per exact text);
- tools and a scripted policy several test modules drive agents with, and a callback that records
  every prompt a chat model received;
- :func:`child_env`, the environment of a child Python process that imports this package and ``tests``;
- :func:`closing_factory`, the body of a fixture that builds ``Hindsight`` bundles and closes them after the test;
- the grants TOML of the sharing and MCP tests.

Child processes started by tests import this module as ``tests.fakes`` (the repository root on
``sys.path``, see :data:`REPO_ROOT`).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage
from langchain_core.tools import ToolException, tool

from langchain_hindsight.testing import (
    ReactiveToolModel,
    ScriptedToolModel,
    ScriptExhaustedError,
    Turn,
    call,
    scripted_model,
    to_message,
)

if TYPE_CHECKING:
    from langchain_hindsight import Hindsight

__all__ = [
    "GBK_TEXT",
    "GRANTS_TOML",
    "REPO_ROOT",
    "WEEKLY_REPORT_LESSON",
    "HashEmbeddings",
    "NgramEmbeddings",
    "Prompts",
    "ReactiveToolModel",
    "ScriptExhaustedError",
    "ScriptedToolModel",
    "Turn",
    "call",
    "child_env",
    "closing_factory",
    "judge_model",
    "query_sales",
    "read_file",
    "scripted_model",
    "to_message",
    "weekly_report_policy",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
"""The repository root: put it first on a child process's ``sys.path`` to import ``tests.fakes`` there."""


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python process: this one's, with the repository root first on ``PYTHONPATH``.

    The child imports this checkout's package and ``tests.*``; it inherits the test's isolated
    environment (see ``tests/conftest.py``). ``extra`` variables are added last.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


_WORD = re.compile(r"[^\W\u3000-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")

# fmt: off
_STOPWORDS = frozenset({
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "by", "from", "as", "is", "are",
    "was", "be", "it", "this", "that", "these", "those", "i", "you", "we", "he", "she", "they", "my", "your", "our",
    "its", "me", "us", "not", "no", "do", "does", "did", "can", "will", "should",
    "的", "了", "是", "在", "和", "与", "时", "要", "把", "被", "就", "也", "都", "个", "这", "那", "吗", "呢", "吧",
})
# fmt: on
"""Function words left out, so that two texts sharing only "the"/"with"/"的" are not similar."""


class NgramEmbeddings(Embeddings):
    """A deterministic, similarity-preserving fake embedder: hashed words and character n-grams.

    Latin-script text contributes its lower-cased words (weight 1; function words such as "the" and
    "的" are left out) and their character 3-grams
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
            if word in _STOPWORDS:
                continue
            out.append(("w:" + word, 1.0))
            marked = f"<{word}>"
            out.extend(("g:" + marked[i : i + 3], 0.5) for i in range(len(marked) - 2))
        for run in _CJK_RUN.findall(lowered):
            out.extend(("c:" + ch, 1.0) for ch in run if ch not in _STOPWORDS)
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


class Prompts(BaseCallbackHandler):
    """Every message list a chat model really received (from the callback event)."""

    def __init__(self) -> None:
        self.seen: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.seen.extend(list(m) for m in messages)

    @property
    def texts(self) -> list[str]:
        """Each prompt as one string (its messages' contents joined by newlines)."""
        return ["\n".join(str(m.content) for m in prompt) for prompt in self.seen]


@tool
def read_file(path: str, encoding: str = "utf-8") -> str:
    """Read a text file with the given encoding."""
    with open(path, encoding=encoding) as f:
        return f.read()


GBK_TEXT = "姓名,城市\n张三,北京\n李四,上海\n"
"""The content of the ``gbk_csv`` fixture's file (written GBK-encoded)."""

WEEKLY_REPORT_LESSON = "生成周报时，数据范围取上周一到上周日的自然周"
"""The lesson :func:`weekly_report_policy`'s first failure teaches."""


@tool
def query_sales(start: str, end: str) -> str:
    """Query sales between two dates."""
    if start == "rolling":
        raise ToolException("ValueError: start must be a date")
    return f"sales {start}..{end}: 42"


query_sales.handle_tool_error = True


def weekly_report_policy(messages: list[BaseMessage]) -> Turn:
    """A ``ReactiveToolModel`` policy for :func:`query_sales`: a bad start date, the retry, then the report.

    First call fails (``start="rolling"``), the retry with a natural week succeeds, then the answer:
    three model calls per task, and reflection learns error → fix.
    """
    last = messages[-1]
    if last.type == "tool":
        if "Error" in str(last.content):
            return call("query_sales", start="2024-06-03", end="2024-06-09")
        return "周报：销售额 42"
    return call("query_sales", start="rolling", end="today")


def closing_factory(build: Callable[..., Hindsight]) -> Iterator[Callable[..., Hindsight]]:
    """A fixture's body: yields ``factory(**options)``, which calls ``build(i, **options)`` (``i`` counts the
    bundles built so far, for a fresh directory each), and closes every bundle and its store after the test
    (a store handed to ``Hindsight(store=...)`` is the caller's to close; closing twice is harmless).

    Example: ``yield from closing_factory(lambda i, **kw: Hindsight(tmp_path / f"db{i}", **kw))``.
    """
    opened: list[Hindsight] = []

    def factory(**options: Any) -> Hindsight:
        hs = build(len(opened), **options)
        opened.append(hs)
        return hs

    yield factory
    for hs in opened:
        hs.close()
        hs.store.close()
