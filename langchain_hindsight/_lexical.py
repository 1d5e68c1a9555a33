"""The lexical arm of hybrid recall: an in-memory BM25 index and its change feed.

The index is derived data: rebuilt from the store when a namespace is first
searched and kept in step by the store on every write, so it never answers with a
deleted or superseded unit. English is split into words (with a light suffix
stemmer); Chinese (and other CJK text, which MiniLM mostly maps to ``[UNK]``)
into character unigrams and bigrams, which needs no dictionary and matches any
segmentation. ``benchmarks/recall_quality.py`` compares this with a dictionary
segmenter (rjieba) and picks the defaults.

When several stores share one Chroma server, each store's writes are announced
in a small side collection (:class:`ChangeFeed`): one record per writer holding
a revision counter and the ids its recent revisions touched. A reader compares
those counters with what its index has seen and re-reads only the changed ids,
or rebuilds when the log no longer covers the gap.
"""

from __future__ import annotations

import heapq
import json
import math
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_hindsight.types import MemoryUnit

__all__ = ["ChangeFeed", "LexicalIndex", "tokenize", "unit_text"]

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
    (``pandas.read_csv`` → ``pandas.read_csv``, ``pandas``, ``read``, ``csv``);
    English words lose plural and -ing/-ed endings.

    Example:
        >>> tokenize("用pandas读取CSV reports")
        ['用', 'pandas', '读', '取', '读取', 'csv', 'report']
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


_LOW_TRUST_SOURCES = frozenset({"tool_output"})
_HIDDEN_CHARS = 120
_HIDDEN_TAGS = 5


def unit_text(unit: MemoryUnit) -> str:
    """The text the lexical arm indexes for ``unit``: content, task, tags, tools.

    The task description, tags and tools are never shown to the model, so for
    a unit whose text came from a tool (``source="tool_output"``) or that was
    tagged ``suspicious`` only the content is indexed, and for other sources
    below ``manual`` these hidden fields are clipped (120 characters, 5 tags):
    stuffing them with common task words cannot pull a low-trust unit into
    unrelated recalls.
    """
    if unit.source in _LOW_TRUST_SOURCES or "suspicious" in unit.tags:
        return unit.content
    if unit.source in ("user_feedback", "manual"):
        return " ".join([unit.content, unit.task_description, " ".join(unit.tags), " ".join(unit.context.tools_used)])
    hidden = [unit.task_description[:_HIDDEN_CHARS], " ".join(unit.tags[:_HIDDEN_TAGS])]
    return " ".join([unit.content, *hidden, " ".join(unit.context.tools_used[:_HIDDEN_TAGS])])


class LexicalIndex:
    """Okapi BM25 over memory units, updated incrementally.

    Args:
        k1: Term-frequency saturation.
        b: Length normalisation (memories are short; ``benchmarks/recall_quality.py``
            measured the default).
        tokenizer: Text → tokens; :func:`tokenize` by default.
        full_scan_df: Query terms found in more memories than this (common
            Chinese characters in a large store) do not add new candidates; they
            only add to the scores of memories that rarer query terms matched.
            Exact BM25 while no term is that common; keeps 100k stores fast.
    """

    def __init__(
        self,
        *,
        k1: float = 1.2,
        b: float = 0.5,
        tokenizer: Callable[[str], list[str]] = tokenize,
        full_scan_df: int = 2000,
    ) -> None:
        self.k1 = k1
        self.b = b
        self.full_scan_df = full_scan_df
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
        mass = 0.0
        matched: list[tuple[int, str, dict[str, int]]] = []
        for term in set(self.tokenizer(query)):
            posting = self._postings.get(term)
            mass += self._idf(n, len(posting) if posting else 0)
            if posting:
                matched.append((len(posting), term, posting))
        matched.sort()  # rarest (most informative) terms first
        scores: dict[str, float] = {}
        for df, _, posting in matched:
            idf = self._idf(n, df)
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


@dataclass
class ChangeFeed:
    """Per-writer change markers in a side collection (shared-server consistency).

    Each writer (one store object) owns one record ``writer`` in ``collection``
    with metadata ``rev`` (its write counter) and ``log`` (JSON
    ``[[rev, [ids...]], ...]`` for its latest revisions, at most ``log_ids`` ids).
    Only the owner writes its record, so concurrent writers never overwrite each
    other's markers. Markers are published *after* the data is written, so a reader
    that sees a marker finds the data.

    Args:
        collection: The chromadb collection holding the markers.
        writer: This writer's record id.
        log_ids: How many changed ids the log keeps; a reader further behind rebuilds.
    """

    collection: Any
    writer: str = field(default_factory=lambda: f"w-{uuid.uuid4().hex}")
    log_ids: int = 256
    rev: int = 0
    _log: list[tuple[int, list[str]]] = field(default_factory=list)

    def publish(self, ids: Sequence[str]) -> None:
        """Announce that this writer changed ``ids`` (call after the data write)."""
        self.rev += 1
        changed = list(dict.fromkeys(ids))
        if len(changed) > self.log_ids:  # too many to list: readers behind this revision rebuild
            self._log = [(self.rev, ["*"])]
        else:
            self._log.append((self.rev, changed))
            while sum(len(i) for _, i in self._log) > self.log_ids and len(self._log) > 1:
                self._log.pop(0)
        self.collection.upsert(
            ids=[self.writer],
            embeddings=[[1.0]],
            metadatas=[{"rev": self.rev, "log": json.dumps(self._log)}],
        )

    def poll(self, seen: dict[str, int]) -> tuple[dict[str, int], set[str] | None]:
        """Compare other writers' markers with ``seen``.

        Returns:
            The new ``seen`` and the ids to re-read, or ``None`` when the logs no
            longer cover what changed (the caller rebuilds from the store).
        """
        rows = self.collection.get(include=["metadatas"])
        current = dict(seen)
        changed: set[str] | None = set()
        for writer, meta in zip(rows["ids"], rows["metadatas"] or [], strict=True):
            if writer == self.writer or not meta:
                continue
            rev = int(meta["rev"])
            before = seen.get(writer, 0)
            current[writer] = rev
            if rev <= before or changed is None:
                continue
            log = {int(r): ids for r, ids in json.loads(str(meta["log"]))}
            needed = range(before + 1, rev + 1)
            if any(r not in log or "*" in log[r] for r in needed):
                changed = None
            else:
                changed.update(i for r in needed for i in log[r])
        return current, changed

    def snapshot(self) -> dict[str, int]:
        """Every other writer's current revision (take it *before* reading the data)."""
        seen, _ = self.poll({})
        return seen
