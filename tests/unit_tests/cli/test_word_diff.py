"""The word-level diff and the wrapping ``hindsight history`` prints with (issue 33, point 7)."""

from __future__ import annotations

import unicodedata

from langchain_hindsight._diff import tokens
from langchain_hindsight.cli._diff import word_diff, wrap
from tests.unit_tests.cli.test_history_diff import JAVA_ZH, PY_EN, PY_ZH


def _cols(line: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)


def test_word_diff_is_cjk_aware_and_lossless() -> None:
    assert word_diff("周报只统计本周一到周日", "周报统计本周一到周五") == "周报[-只-]统计本周一到周[-日-]{+五+}"
    assert word_diff("金额用不含税价", "金额要用含税价") == "金额{+要+}用[-不-]含税价"
    assert word_diff("Read CSVs with encoding='gbk'", "Read CSVs with encoding='utf-8-sig'") == (
        "Read CSVs with encoding='[-gbk-]{+utf-8-sig+}'"
    )
    for text in (JAVA_ZH, PY_EN, "pandas.read_csv(path, encoding='utf-8-sig')  第3周"):
        assert "".join(tokens(text)) == text
        assert word_diff(text, text) == text


def test_wrap_never_cuts_and_never_breaks_a_marker() -> None:
    text = word_diff(JAVA_ZH, PY_ZH) + " " + "x" * 70
    lines = wrap(text, 30)
    assert all(_cols(line) <= 30 for line in lines)
    assert "".join(line.strip() for line in lines).replace(" ", "") == text.replace(" ", "")
    assert not any(line.rstrip().endswith(("[", "{")) for line in lines)
