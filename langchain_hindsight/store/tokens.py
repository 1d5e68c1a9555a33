"""The lexical arm's text, for every backend: what is indexed for a unit, its tokens, and the BM25 scheme.

English is split into words (with a light suffix stemmer); Chinese (and other CJK text, which MiniLM mostly maps
to ``[UNK]``) into character unigrams and bigrams, which needs no dictionary and matches any segmentation
(``benchmarks/recall_quality.py`` compares it with a dictionary segmenter). The in-process index and a database
that scores BM25 itself (:func:`lexical_scheme`) use the same tokens and constants, so their scores are equal.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from langchain_hindsight._trust import TRUSTED_SOURCES, UNTRUSTED_SOURCES
from langchain_hindsight.errors import StoreError
from langchain_hindsight.store.backend import LexicalScheme
from langchain_hindsight.types import MemoryUnit

__all__ = [
    "K1",
    "PRIOR_DOCUMENTS",
    "B",
    "indexed_text",
    "lexical_scheme",
    "record_text",
    "record_texts",
    "tokenize",
    "tokenizer_signature",
    "unit_text",
]

_CJK_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af"
_WORD = re.compile(rf"[a-z0-9]+(?:[._][a-z0-9]+)*|[{_CJK_RANGES}]+")
_CJK = re.compile(rf"[{_CJK_RANGES}]")
_STOP_WORDS = (
    "a an and are as at be by do does for from has have how i in is it its my of on or our that the this to "
    "was were what when where which will with "
    "的 了 和 是 在 我 你 他 她 它 们 这 那 就 也 都 而 及 与 或 一个 帮 吗 呢 吧 把"
)
_STOP = frozenset(_STOP_WORDS.split())
_SUFFIXES = ("ies", "ing", "ed", "es", "s")
_TOKENIZER_VERSION = 1
"""Bump when :func:`tokenize` changes in a way the constants above do not show (snapshots are then rebuilt)."""
K1 = 1.2
"""BM25's term-frequency saturation."""
B = 0.5
"""BM25's length normalisation (memories are short; ``benchmarks/recall_quality.py`` measured it)."""
PRIOR_DOCUMENTS = 50
"""Pseudo-documents, matching no query term, added to the corpus size in the idf of a normalised search.

The normalised score is the share of the query's idf mass a memory matches. In a store of a few memories every
matched term occurs in most of them and gets almost no idf, so a plainly related lesson scored as if it shared
nothing (“生成本周的销售周报” against the only weekly-report lesson: 0.06). The prior makes the share mean the
same in a new store as in a grown one; at thousands of memories it changes nothing.
"""


def _stem(word: str) -> str:
    """A light English stemmer: plural and -ing/-ed endings (``reports``→``report``)."""
    if len(word) <= 4 or not word.isalpha():
        return word
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "ies":
                return word[:-3] + "y"
            if suffix == "s" and word.endswith("ss"):
                return word
            return word[: -len(suffix)]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens; CJK runs become unigrams plus bigrams.

    Dotted or underscored identifiers are kept whole *and* split
    (``pandas.read_csv`` → ``pandas.read_csv``, ``panda``, ``read``, ``csv``);
    English words lose plural and -ing/-ed endings.

    Example:
        >>> tokenize("用pandas读取CSV reports")
        ['用', 'panda', '读', '取', '读取', 'csv', 'report']
        >>> tokenize("pandas.read_csv")
        ['pandas.read_csv', 'panda', 'read', 'csv']
    """
    out: list[str] = []
    for match in _WORD.finditer(text.lower()):
        piece = match.group()
        if _CJK.match(piece):
            out.extend(c for c in piece if c not in _STOP)
            out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
            continue
        if piece in _STOP:
            continue
        if "." in piece or "_" in piece:
            out.append(piece)
            out.extend(_stem(p) for p in re.split(r"[._]", piece) if p and p not in _STOP)
        else:
            out.append(_stem(piece))
    return out


_HIDDEN_CHARS = 120
_HIDDEN_TAGS = 5


def unit_text(unit: MemoryUnit) -> str:
    """The text the lexical arm indexes for ``unit`` (see :func:`indexed_text`)."""
    return indexed_text(unit.content, unit.task_description, unit.tags, unit.context.tools_used, unit.source)


def indexed_text(content: str, task_description: str, tags: Sequence[str], tools: Sequence[str], source: str) -> str:
    """The text the lexical arm indexes: content, task, tags, tools.

    The task description, tags and tools are never shown to the model, so for a unit whose text came from a tool
    or that was tagged ``suspicious`` only the content is indexed, and for other sources below ``manual`` these
    hidden fields are clipped (120 characters, 5 tags): stuffing them with common task words cannot pull a
    low-trust unit into unrelated recalls.
    """
    if source in UNTRUSTED_SOURCES or "suspicious" in tags:
        return content
    if source in TRUSTED_SOURCES:
        return " ".join([content, task_description, " ".join(tags), " ".join(tools)])
    hidden = [task_description[:_HIDDEN_CHARS], " ".join(tags[:_HIDDEN_TAGS])]
    return " ".join([content, *hidden, " ".join(tools[:_HIDDEN_TAGS])])


def tokenizer_signature() -> str:
    """A digest of :func:`tokenize`'s rules; a snapshot built under other rules is not reused."""
    rules = json.dumps([_TOKENIZER_VERSION, _WORD.pattern, _STOP_WORDS, _SUFFIXES], ensure_ascii=False)
    return hashlib.sha256(rules.encode()).hexdigest()[:16]


def record_text(document: str, metadata: Any) -> str:
    """:func:`unit_text` of a stored record, without building the unit (its fields are read as stored)."""
    tags = json.loads(metadata["tags"])
    tools = json.loads(metadata["context"]).get("tools_used") or []
    return indexed_text(document, metadata["task_description"], tags, tools, metadata["source"])


def record_texts(records: Iterable[tuple[str, str, Any]]) -> Iterator[tuple[str, str]]:
    """``(memory_id, indexed text)`` of stored ``(memory_id, document, metadata)`` records.

    Raises:
        StoreError: a record is corrupt (its metadata lacks what a unit's has).
    """
    for memory_id, document, metadata in records:
        try:
            yield memory_id, record_text(document, metadata)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise StoreError(f"record {memory_id!r} is corrupt: {e}") from e


def _record_tokens(document: str | None, metadata: Any) -> list[str] | None:
    """The lexical tokens of a stored *active* unit record (``None``: inactive, or not a unit record)."""
    if not isinstance(metadata, dict) or metadata.get("status") != "active" or document is None:
        return None
    try:
        return tokenize(record_text(document, metadata))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def lexical_scheme() -> LexicalScheme:
    """The lexical arm for a backend that scores BM25 itself: tokens, query terms, constants (``LexicalIndex``'s)."""
    return LexicalScheme(
        record_tokens=_record_tokens,
        query_terms=tokenize,
        signature=f"{tokenizer_signature()}:{_RECORD_TEXT_VERSION}",
        k1=K1,
        b=B,
        prior_documents=PRIOR_DOCUMENTS,
    )


_RECORD_TEXT_VERSION = 1
"""Version of what :func:`record_text` indexes (bump it when that changes)."""
