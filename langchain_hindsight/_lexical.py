"""An in-memory BM25 index: the lexical arm of hybrid recall.

It is derived data: rebuilt from the store when a namespace is first searched
and kept in step by the store on every write, so it never answers with a
deleted or superseded unit. English is split into words; Chinese (and other
CJK text, which MiniLM mostly maps to ``[UNK]``) into character unigrams and
bigrams, which needs no dictionary and matches any segmentation.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable

from langchain_hindsight.types import MemoryUnit

__all__ = ["LexicalIndex", "tokenize"]

_WORD = re.compile(r"[a-z0-9]+(?:[._][a-z0-9]+)*|[\u3400-\u4dbf\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]+")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]")
_STOP_WORDS = (
    "a an and are as at be by for from has have in is it its of on or that the this to was were will with "
    "的 了 和 是 在 我 你 他 她 它 们 这 那 就 也 都 而 及 与 或 一个"
)
_STOP = frozenset(_STOP_WORDS.split())


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens; CJK runs become unigrams plus bigrams.

    Dotted or underscored identifiers are kept whole *and* split
    (``pandas.read_csv`` → ``pandas.read_csv``, ``pandas``, ``read``, ``csv``).

    Example:
        >>> tokenize("用pandas读取CSV")
        ['用', 'pandas', '读', '取', '读取', 'csv']
    """
    out: list[str] = []
    for match in _WORD.finditer(text.lower()):
        piece = match.group()
        if _CJK.match(piece):
            chars = [c for c in piece if c not in _STOP]
            out.extend(chars)
            out.extend(piece[i : i + 2] for i in range(len(piece) - 1))
            continue
        if piece in _STOP:
            continue
        out.append(piece)
        if "." in piece or "_" in piece:
            out.extend(p for p in re.split(r"[._]", piece) if p and p not in _STOP)
    return out


def unit_text(unit: MemoryUnit) -> str:
    """The text the lexical arm indexes for ``unit``: content, task, tags, tools."""
    return " ".join([unit.content, unit.task_description, " ".join(unit.tags), " ".join(unit.context.tools_used)])


class LexicalIndex:
    """Okapi BM25 over memory units, updated incrementally.

    Args:
        k1: Term-frequency saturation.
        b: Length normalisation (memories are short; a lower ``b`` suits them).
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.5) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[str, int]] = {}
        self._lengths: dict[str, int] = {}
        self._terms: dict[str, tuple[str, ...]] = {}
        self._total = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._lengths

    def upsert(self, units: Iterable[MemoryUnit]) -> None:
        """Index ``units``; active ones are (re)indexed, others removed."""
        for unit in units:
            self.delete([unit.memory_id])
            if unit.status != "active":
                continue
            counts = Counter(tokenize(unit_text(unit)))
            for term, tf in counts.items():
                self._postings.setdefault(term, {})[unit.memory_id] = tf
            length = sum(counts.values())
            self._lengths[unit.memory_id] = length
            self._terms[unit.memory_id] = tuple(counts)
            self._total += length

    def delete(self, memory_ids: Iterable[str]) -> None:
        """Forget ``memory_ids`` (unknown ids are ignored)."""
        for memory_id in memory_ids:
            length = self._lengths.pop(memory_id, None)
            if length is None:
                continue
            self._total -= length
            for term in self._terms.pop(memory_id):
                posting = self._postings[term]
                del posting[memory_id]
                if not posting:
                    del self._postings[term]

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best ``(memory_id, bm25_score)`` pairs, best first."""
        n = len(self._lengths)
        if n == 0 or k <= 0:
            return []
        avg = self._total / n
        scores: dict[str, float] = {}
        for term in set(tokenize(query)):
            posting = self._postings.get(term)
            if not posting:
                continue
            idf = math.log(1.0 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for memory_id, tf in posting.items():
                norm = self.k1 * (1.0 - self.b + self.b * self._lengths[memory_id] / avg)
                scores[memory_id] = scores.get(memory_id, 0.0) + idf * tf * (self.k1 + 1.0) / (tf + norm)
        return heapq.nlargest(k, scores.items(), key=lambda item: item[1])
