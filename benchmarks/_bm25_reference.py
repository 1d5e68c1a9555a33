"""The pure-Python BM25 index the lexical arm used before it was vectorised (kept for comparison).

``recall_scale.py --quality`` ranks the labelled set with it and with the shipped
``LexicalIndex`` in the same run; ``tests/unit_tests/store/test_lexical.py`` compares
the scores on a corpus. Copied from the version it replaced; the one change since is ``prior_documents``,
the pseudo-documents the shipped index later added to a normalised search's idf (``tokens.PRIOR_DOCUMENTS``),
so the two can be compared with and without it.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterable

from langchain_hindsight.store.tokens import tokenize, unit_text
from langchain_hindsight.types import MemoryUnit

__all__ = ["ReferenceIndex"]


class ReferenceIndex:
    """The lexical arm as it was before vectorisation: pure-Python BM25 walking every posting.

    Args:
        k1: Term-frequency saturation.
        b: Length normalisation (memories are short; ``benchmarks/recall_quality.py``
            measured the default).
        tokenizer: Text → tokens; :func:`tokenize` by default.
        full_scan_df: Query terms found in more memories than this (common
            Chinese characters in a large store) do not add new candidates; they
            only add to the scores of memories that rarer query terms matched.
            Exact BM25 while no term is that common; keeps 100k stores fast.
        prior_documents: Pseudo-documents added to the corpus size in a normalised search's idf (0: as the
            index was before the shipped one added them).
    """

    def __init__(
        self,
        *,
        k1: float = 1.2,
        b: float = 0.5,
        tokenizer: Callable[[str], list[str]] = tokenize,
        full_scan_df: int = 2000,
        prior_documents: int = 0,
    ) -> None:
        self.k1 = k1
        self.b = b
        self.full_scan_df = full_scan_df
        self.prior_documents = prior_documents
        self.tokenizer = tokenizer
        self.seen: dict[str, int] = {}
        """Revisions of other writers already reflected here (see :class:`ChangeFeed`)."""
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
            counts = Counter(self.tokenizer(unit_text(unit)))
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

    def _idf(self, n: int, df: int) -> float:
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def search(self, query: str, k: int, *, normalize: bool = False) -> list[tuple[str, float]]:
        """The ``k`` best ``(memory_id, bm25_score)`` pairs, best first (ties by id).

        With ``normalize`` each score is divided by the query's idf mass (the sum
        of its distinct terms' idf, unseen terms counting as the rarest) and capped
        at 1: roughly the share of the query's information a memory matches. Unlike
        dividing by the best hit, an unrelated query keeps a low score.
        """
        n = len(self._lengths)
        if n == 0 or k <= 0:
            return []
        avg = self._total / n or 1.0
        corpus = n + self.prior_documents if normalize else n
        mass = 0.0
        matched: list[tuple[int, str, dict[str, int]]] = []
        for term in set(self.tokenizer(query)):
            posting = self._postings.get(term)
            mass += self._idf(corpus, len(posting) if posting else 0)
            if posting:
                matched.append((len(posting), term, posting))
        matched.sort()  # rarest (most informative) terms first
        scores: dict[str, float] = {}
        for df, _, posting in matched:
            idf = self._idf(corpus, df)
            if df <= self.full_scan_df or not scores:
                items: Iterable[tuple[str, int]] = posting.items()
            else:  # a very common term only re-scores candidates the rarer terms found
                items = [(i, posting[i]) for i in scores if i in posting]
            for memory_id, tf in items:
                norm = self.k1 * (1.0 - self.b + self.b * self._lengths[memory_id] / avg)
                scores[memory_id] = scores.get(memory_id, 0.0) + idf * tf * (self.k1 + 1.0) / (tf + norm)
        best = heapq.nsmallest(k, scores.items(), key=lambda item: (-item[1], item[0]))
        if normalize and mass > 0:
            return [(i, min(1.0, s / mass)) for i, s in best]
        return best
