"""When two texts make the same statement: the rule shared by the write path and the merge pass."""

from __future__ import annotations

import unicodedata

__all__ = ["statement_key"]


def statement_key(text: str) -> str:
    """``text`` reduced to its statement: two texts with the same key are true duplicates.

    NFKC (full-width letters, digits and punctuation become their ASCII forms),
    case-folded; punctuation (Chinese 。，、「」 included) and whitespace runs
    become one separator, kept only between two word characters of a spaced
    script (Latin, digits), so ``"你好，世界。"`` and ``"你好世界"`` match while
    ``"no tone"`` and ``"not one"`` do not. Punctuation that is part of a number
    (``1.5``, ``-5``, ``1,000``) is kept: ``"1.5"`` and ``"15"`` differ.

    Example:
        >>> statement_key("Read  GBK CSVs with encoding='gbk'.") == statement_key("read gbk csvs with encoding=gbk")
        True
        >>> statement_key("客户甲公司希望通过邮件联系。") == statement_key("客户乙公司希望通过邮件联系。")
        False
    """
    t = unicodedata.normalize("NFKC", text).casefold()
    chars: list[str] = []
    for i, ch in enumerate(t):
        category = unicodedata.category(ch)
        if category.startswith("P"):
            nxt = t[i + 1] if i + 1 < len(t) else ""
            prev = t[i - 1] if i else ""
            chars.append(ch if nxt.isdigit() and (prev.isdigit() or ch in "-+.") else " ")
        elif ch.isspace() or category[0] in "ZC":
            chars.append(" ")
        else:
            chars.append(ch)
    out: list[str] = []
    for token in "".join(chars).split():
        if out and _spaced(out[-1][-1]) and _spaced(token[0]):
            out.append(" ")
        out.append(token)
    # A text of punctuation only keeps its punctuation: "..." and "!!!" are not the same statement.
    return "".join(out) or " ".join(t.split())


def _spaced(ch: str) -> bool:
    """A word character of a script that separates words with spaces (not CJK)."""
    return ch.isalnum() and unicodedata.east_asian_width(ch) not in ("W", "F")
