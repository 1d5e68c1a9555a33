"""The in-process lexical arm of hybrid recall: a BM25 index over a namespace's active units, and its snapshot arrays.

Its tokens, indexed text and constants are ``store.tokens``' (shared with a database that scores BM25 itself).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from langchain_hindsight.store.backend.base import bm25_idf
from langchain_hindsight.store.replica.files import from_json_array, json_array
from langchain_hindsight.store.tokens import K1, PRIOR_DOCUMENTS, B, tokenize, tokenizer_signature, unit_text
from langchain_hindsight.types import MemoryUnit

__all__ = ["LexicalIndex", "RowTable"]

_MIN_DELTA = 20_000
"""Postings the delta may hold before it is folded into the compacted segment (at least)."""
_NO_DOCS = np.zeros(0, dtype=np.int32)
_NO_TFS = np.zeros(0, dtype=np.float64)


class RowTable:
    """Memory ids on numbered rows: the table :class:`LexicalIndex` and the recall mirror share.

    A removed id only clears its row's ``alive`` flag (a tombstone) until a compaction renumbers the live rows.
    """

    def __init__(self, capacity: int = 16) -> None:
        self._ids: list[str] = []  # row -> memory id (dead rows keep theirs until compaction)
        self._row: dict[str, int] = {}  # live memory id -> row
        self._alive = np.zeros(max(16, capacity), dtype=bool)
        self._dead = 0

    def __len__(self) -> int:
        return len(self._row)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._row

    @property
    def memory_ids(self) -> frozenset[str]:
        """The ids of every held (active) unit."""
        return frozenset(self._row)

    def _grow(self, rows: int) -> None:
        """Make room for ``rows`` more rows (a subclass grows its own arrays too)."""
        self._alive = np.concatenate([self._alive, np.zeros(rows, dtype=bool)])

    def _add_row(self, memory_id: str) -> int:
        """A new live row for ``memory_id`` (not held): its number."""
        row = len(self._ids)
        if row == len(self._alive):
            self._grow(max(16, row))
        self._ids.append(memory_id)
        self._row[memory_id] = row
        self._alive[row] = True
        return row

    def _drop_row(self, memory_id: str) -> int | None:
        """Tombstone ``memory_id``'s row: its number, or ``None`` if not held."""
        row = self._row.pop(memory_id, None)
        if row is not None:
            self._alive[row] = False
            self._dead += 1
        return row

    def _renumber(self, spare: int) -> np.ndarray:
        """Keep only the live rows, numbered densely, then ``spare`` free rows; returns the old rows' alive mask."""
        alive = self._alive[: len(self._ids)]
        self.set_rows([m for m, a in zip(self._ids, alive.tolist(), strict=True) if a], spare)
        return alive

    def set_rows(self, ids: list[str], spare: int) -> None:
        """Hold ``ids`` (distinct) on rows ``0..n-1``, all live, then ``spare`` free rows (a subclass sizes its own)."""
        self._ids = ids
        self._row = {m: i for i, m in enumerate(ids)}
        self._alive = np.zeros(len(ids) + spare, dtype=bool)
        self._alive[: len(ids)] = True
        self._dead = 0


class LexicalIndex(RowTable):
    """Okapi BM25 over memory units (:func:`tokenize`'s tokens): sparse postings scored in vectorised code.

    Postings live in a compressed term-major segment plus a small append-only delta; a removed unit leaves a
    tombstone. When the delta or the tombstones outgrow a share of the index, both fold into a fresh segment
    (:meth:`compact`). A query scores its terms' postings with numpy, never a Python loop over them, and keeps the
    best ``k`` by partial selection: exact BM25 at a cost that follows the query's posting lengths.
    """

    def __init__(self) -> None:
        super().__init__()
        self._vocab: dict[str, int] = {}
        self._lengths = np.zeros(16, dtype=np.float64)
        self._total = 0.0
        # compacted segment: postings of term t are [_indptr[t], _indptr[t + 1]) of _docs/_tfs
        self._indptr = np.zeros(1, dtype=np.int64)
        self._docs, self._tfs = _NO_DOCS, _NO_TFS  # never changed in place: compaction and loads replace them
        # delta: term id -> (slots, counts) of units indexed since the last compaction
        self._delta: dict[int, tuple[list[int], list[int]]] = {}
        self._delta_postings = 0

    def upsert(self, units: Iterable[MemoryUnit]) -> None:
        """Index ``units``; active ones are (re)indexed, others removed."""
        units = list(units)
        self.delete(u.memory_id for u in units)
        self.add_texts((u.memory_id, unit_text(u)) for u in units if u.status == "active")

    def add_texts(self, items: Iterable[tuple[str, str]]) -> None:
        """Index ``(memory_id, text)`` pairs of active units (replacing any earlier entry of the id)."""
        for memory_id, text in items:
            self.delete([memory_id])
            counts = Counter(tokenize(text))
            slot = self._add_row(memory_id)
            length = sum(counts.values())
            self._lengths[slot] = length
            self._total += length
            for term, tf in counts.items():
                tid = self._vocab.setdefault(term, len(self._vocab))
                posting = self._delta.get(tid)
                if posting is None:
                    posting = self._delta[tid] = ([], [])
                posting[0].append(slot)
                posting[1].append(tf)
            self._delta_postings += len(counts)
        if self._delta_postings > max(_MIN_DELTA, len(self._docs) // 8):
            self.compact()

    def _grow(self, rows: int) -> None:
        super()._grow(rows)
        self._lengths = np.concatenate([self._lengths, np.zeros(rows, dtype=np.float64)])

    def delete(self, memory_ids: Iterable[str]) -> None:
        """Forget ``memory_ids`` (unknown ids are ignored)."""
        for memory_id in memory_ids:
            slot = self._drop_row(memory_id)
            if slot is not None:
                self._total -= float(self._lengths[slot])
        if self._dead and self._dead * 4 > len(self._ids):
            self.compact()

    def compact(self) -> None:
        """Fold the delta and the tombstones into one dense segment: nothing of a removed unit (id, counts, terms only
        it had) remains.
        """  # noqa: D205
        n_slots, n = len(self._ids), len(self._row)
        alive = self._renumber(max(16, n))
        new_slot = np.cumsum(alive, dtype=np.int64) - 1
        terms = [np.repeat(np.arange(len(self._indptr) - 1, dtype=np.int64), np.diff(self._indptr))]
        docs = [self._docs.astype(np.int64)]
        tfs = [self._tfs]
        for tid, (slots, counts) in self._delta.items():
            terms.append(np.full(len(slots), tid, dtype=np.int64))
            docs.append(np.asarray(slots, dtype=np.int64))
            tfs.append(np.asarray(counts, dtype=np.float64))
        old_docs = np.concatenate(docs)
        live = alive[old_docs]
        all_terms = np.concatenate(terms)[live]
        all_docs = new_slot[old_docs[live]]
        all_tfs = np.concatenate(tfs)[live]
        used = np.zeros(len(self._vocab), dtype=bool)
        used[all_terms] = True
        new_tid = np.cumsum(used, dtype=np.int64) - 1
        all_terms = new_tid[all_terms]
        order = np.lexsort((all_docs, all_terms))
        n_terms = int(used.sum())
        self._docs = all_docs[order].astype(np.int32)
        self._tfs = all_tfs[order]
        self._indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(np.bincount(all_terms, minlength=n_terms), out=self._indptr[1:])
        self._vocab = {t: int(new_tid[i]) for t, i in self._vocab.items() if used[i]}
        self._lengths = np.concatenate([self._lengths[:n_slots][alive], np.zeros(max(16, n), dtype=np.float64)])
        self._total = float(self._lengths[:n].sum())
        self._delta = {}
        self._delta_postings = 0

    def _postings(self, tid: int) -> tuple[np.ndarray, np.ndarray]:
        """Live ``(slots, counts)`` of term ``tid``."""
        in_segment = tid < len(self._indptr) - 1  # else a term new since the last compaction: only in the delta
        start, end = (self._indptr[tid], self._indptr[tid + 1]) if in_segment else (0, 0)
        docs, tfs = self._docs[start:end], self._tfs[start:end]
        extra = self._delta.get(tid)
        if extra is not None:
            docs = np.concatenate([docs, np.asarray(extra[0], dtype=np.int32)])
            tfs = np.concatenate([tfs, np.asarray(extra[1], dtype=np.float64)])
        if self._dead:
            live = self._alive[docs]
            docs, tfs = docs[live], tfs[live]
        return docs, tfs

    def search(self, query: str, k: int, *, normalize: bool = False) -> list[tuple[str, float]]:
        """The ``k`` best ``(memory_id, bm25_score)`` pairs, best first (ties by id).

        With ``normalize`` each score is divided by the query's idf mass (the sum of its distinct terms' idf, unseen
        terms counting as the rarest) and capped at 1: roughly the share of the query's information a memory
        matches. Unlike dividing by the best hit, an unrelated query keeps a low score.
        """
        n = len(self._row)
        if n == 0 or k <= 0:
            return []
        avg = self._total / n or 1.0
        corpus = n + PRIOR_DOCUMENTS if normalize else n
        mass = 0.0
        matched: list[tuple[int, str, float, np.ndarray, np.ndarray]] = []
        for term in set(tokenize(query)):
            tid = self._vocab.get(term)
            docs, tfs = self._postings(tid) if tid is not None else (_NO_DOCS, _NO_TFS)
            idf = bm25_idf(corpus, len(docs))
            mass += idf
            if len(docs):
                matched.append((len(docs), term, idf, docs, tfs))
        if not matched:
            return []
        matched.sort(key=lambda m: (m[0], m[1]))  # rarest first, as the scores are summed
        weights = []
        for _, _, idf, docs, tfs in matched:
            norm = K1 * (1.0 - B + B * self._lengths[docs] / avg)
            weights.append(idf * tfs * (K1 + 1.0) / (tfs + norm))
        slots = np.concatenate([docs for _, _, _, docs, _ in matched])
        scores = np.bincount(slots, weights=np.concatenate(weights), minlength=len(self._ids))
        found = np.flatnonzero(scores)
        values = scores[found]
        if len(found) > k:  # partial selection: everything scoring at least the k-th best (ties included)
            kth = np.partition(values, len(values) - k)[len(values) - k]
            top = values >= kth
            found, values = found[top], values[top]
        pairs = zip((self._ids[i] for i in found.tolist()), values.tolist(), strict=True)
        best = sorted(pairs, key=lambda item: (-item[1], item[0]))[:k]
        return [(i, min(1.0, s / mass)) for i, s in best] if normalize and mass > 0 else best

    @classmethod
    def scheme(cls) -> dict[str, Any]:
        """What a snapshot's postings were built under (the tokenizer's signature, the BM25 constants)."""
        return {"tokenizer": tokenizer_signature(), "k1": K1, "b": B}

    def arrays(self, rows: Mapping[str, int]) -> dict[str, np.ndarray]:
        """The index (compacted first) as snapshot arrays, each unit on its row of ``rows`` (one per held unit)."""
        self.compact()
        n = len(self._ids)
        moved = np.fromiter((rows[m] for m in self._ids), dtype=np.int64, count=n)
        lengths = np.zeros(n, dtype=np.int64)
        lengths[moved] = self._lengths[:n]
        return {
            "vocab": json_array(sorted(self._vocab, key=self._vocab.__getitem__)),
            "lengths": lengths,
            "indptr": self._indptr,
            "docs": moved[self._docs].astype(np.int32),
            "tfs": self._tfs.astype(np.int32),
        }

    @classmethod
    def restore(cls, ids: list[str], arrays: Mapping[str, np.ndarray]) -> LexicalIndex:
        """The index :meth:`arrays` saved, its units on ``ids``' rows."""
        index = cls()
        n = len(ids)
        index.set_rows(list(ids), max(16, n))
        index._lengths = np.concatenate([arrays["lengths"].astype(np.float64), np.zeros(max(16, n))])
        index._indptr = arrays["indptr"].astype(np.int64)
        index._docs = arrays["docs"].astype(np.int32)
        index._tfs = arrays["tfs"].astype(np.float64)
        index._vocab = {t: i for i, t in enumerate(from_json_array(arrays["vocab"]))}
        index._total = float(index._lengths[:n].sum())
        return index
