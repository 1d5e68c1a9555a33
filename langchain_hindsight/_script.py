"""The writing system of a text, and the per-script fusion weights an embedder declares.

Base module (below embeddings and recall): :func:`query_script` routes
``ScriptRoutedEmbeddings`` and picks the retriever's dense weight per query;
:class:`FusionWeights` is how an embedder declares the weights measured with it.
``langchain_hindsight.recall.fusion`` re-exports all three.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from langchain_hindsight.errors import ConfigurationError

__all__ = ["FusionWeights", "Script", "query_script", "reads_as_cjk"]

Script = Literal["cjk", "latin"]
"""The writing system a query is mostly in (see :func:`query_script`)."""

_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+")


@dataclass(frozen=True, slots=True)
class FusionWeights:
    """The fusion weights that suit one embedder (they were tuned together).

    An embedder can declare the weights measured for it as a ``fusion_weights``
    attribute; the retriever uses them for every weight the caller did not set
    (see :func:`fusion_weights_for`).

    Attributes:
        alpha: Dense-arm weight for a Latin-script query (for every query when
            ``alpha_cjk`` is ``None``).
        alpha_cjk: Dense-arm weight for a mostly-CJK query, or ``None``.
        cross_script: Gain of the lexical share imputed for a candidate written in
            another script than the query (see :func:`fuse`); 0 turns it off.

    Example:
        >>> FusionWeights(alpha=0.5, alpha_cjk=0.7, cross_script=0.4).alpha_cjk
        0.7
    """

    alpha: float = 0.3
    alpha_cjk: float | None = None
    cross_script: float = 0.0

    def __post_init__(self) -> None:
        for name, value in (("alpha", self.alpha), ("alpha_cjk", self.alpha_cjk)):
            if value is not None and (not math.isfinite(value) or not 0.0 <= value <= 1.0):
                raise ConfigurationError(f"{name} must be in [0, 1], got {value!r}")
        if not math.isfinite(self.cross_script) or self.cross_script < 0.0:
            raise ConfigurationError(f"cross_script must be a finite number >= 0, got {self.cross_script!r}")


def query_script(text: str) -> Script:
    """Whether ``text`` is mostly CJK (Chinese, Japanese, Korean) or Latin script.

    One CJK character counts as much as one Latin word, so a Chinese sentence
    that names an English product (``查一下ClickHouse里的日志``) is CJK and an
    English sentence quoting one Chinese term is Latin. Text with neither
    (digits, punctuation, empty) is Latin.

    The same rule routes :class:`~langchain_hindsight.embeddings.multilingual.ScriptRoutedEmbeddings`,
    so stored vectors depend on it: a changed rule needs a new embedder name (and
    ``hindsight reembed``).

    Args:
        text: The query (or any text).

    Returns:
        ``"cjk"`` or ``"latin"``.

    Example:
        >>> query_script("生成本周的销售周报")
        'cjk'
        >>> query_script("查一下ClickHouse里昨天的报错日志")
        'cjk'
        >>> query_script("Translate the 合同 into English")
        'latin'
        >>> query_script("42")
        'latin'
    """
    cjk = len(_CJK_CHAR.findall(text))
    latin = len(_LATIN_WORD.findall(text))
    return "cjk" if cjk > 0 and cjk >= latin else "latin"


CJK_SENTENCE_CHARS = 8
"""CJK characters that make a text a CJK reader's text whatever it quotes (see :func:`reads_as_cjk`)."""


def reads_as_cjk(text: str) -> bool:
    """Whether a CJK reader wrote ``text``: :func:`query_script` says CJK, or it has a CJK sentence of its own.

    A Chinese lesson that quotes a long English error message has more Latin words than
    Chinese characters, yet it is written for a Chinese reader; an English sentence quoting
    one Chinese term is not.

    Example:
        >>> reads_as_cjk("使用read_csv时默认参数会失败（UnicodeDecodeError: 'utf-8' codec can't decode byte "
        ...              "in position 17: invalid continuation byte），改为encoding='gbk'后成功")
        True
        >>> reads_as_cjk("Translate the 合同 into English"), reads_as_cjk("Read CSVs with encoding='gbk'.")
        (False, False)
    """
    return query_script(text) == "cjk" or len(_CJK_CHAR.findall(text)) >= CJK_SENTENCE_CHARS
