"""When two texts make the same statement: the rule shared by the write path and the merge pass."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from langchain_hindsight.types import MemoryUnit

__all__ = [
    "DATE_MASK",
    "FILE_MASK",
    "ID_MASK",
    "NUMBER_MASK",
    "PATH_MASK",
    "RULE_SOURCES",
    "generalise",
    "learned_in_run",
    "lesson_key",
    "mask_run_values",
    "rule_made",
    "run_masked",
    "statement_key",
]


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


# ---------------------------------------------------------------------------- run-specific parts
_EXTENSIONS = (
    "csv|tsv|txt|json|jsonl|ndjson|xlsx|xlsm|xls|parquet|feather|avro|orc|xml|ya?ml|toml|ini|cfg|conf|md|rst|pdf|"
    "docx?|pptx?|log|sql|db|sqlite3?|html?|py|ipynb|js|ts|sh|zip|gz|bz2|xz|tar|7z|png|jpe?g|gif|webp|svg|mp[34]|wav|"
    "pkl|pickle|npy|npz|h5|hdf5|dat|bin"
)
_URL = re.compile(r"\b([a-z][a-z0-9+.-]*://[^/\s'\"<>()（）]+)(/[^\s'\"<>()（）]*)?", re.IGNORECASE)
_ASCII = r"[A-Za-z0-9_\-.~@]"
_WIDE = r"[A-Za-z0-9_\-.~@\u3400-\u9fff]"
_ROOT = r"(?:[A-Za-z]:[\\/]|~?/|\.{1,2}[\\/])?"
_EXT = rf"\.({_EXTENSIONS})(?![A-Za-z0-9_])"
# A delimited file name (after a space, quote, bracket or colon) may have CJK characters; one at the start
# or inside running Chinese text ("清洗客户.csv数据") is masked only in its ASCII part (the verb is never eaten).
_FILE = re.compile(
    rf"(?<=[\s'\"`“‘(（:：=,，、\[「『<])({_ROOT}(?:{_WIDE}+[\\/])*{_WIDE}*?[A-Za-z0-9_\u3400-\u9fff]){_EXT}"
    rf"|(?<![A-Za-z0-9_\-.~@/\\])({_ROOT}(?=[A-Za-z0-9.~])(?:{_ASCII}+[\\/])*{_ASCII}*?[A-Za-z0-9_]){_EXT}",
    re.IGNORECASE,
)
_PATH = re.compile(r"(?<![\w.*:/])(?:[A-Za-z]:\\|~/|\.{1,2}/|/)(?:[\w\-.~@\u3400-\u9fff]+[\\/]?)+")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
_HEX_ID = re.compile(r"\b(?:0x[0-9a-f]{6,}|(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{8,})\b", re.IGNORECASE)
_LONG_NUMBER = re.compile(r"(?<![\d.,=])\d{6,}(?![\d.,]\d)")
_DATE = re.compile(
    r"(?<![\d.-])\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"
    r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?!\d)"
    r"|\d{4}年\d{1,2}月(?:\d{1,2}[日号])?|(?<!\d)\d{1,2}月\d{1,2}[日号]|\b\d{1,2}:\d{2}:\d{2}\b"
)
_LOCATION = re.compile(
    r"(\b(?:position|pos|line|lines|column|col|row|offset|index|byte|char|character)s?\s*)(?:0x[0-9a-f]+|\d+)"
    r"(?:\s*[-:]\s*\d+)?"
    r"|(第\s*)(?:\d+|[一二两三四五六七八九十百零〇]+)"
    r"(\s*(?:批次|季度|阶段|字节|[行列个条周月天日季期批轮次章节页版步届场]))",
    re.IGNORECASE,
)
_ORDINAL = re.compile(
    r"\b(week|wk|day|month|quarter|sprint|batch|round|attempt|iteration|page|chapter|episode|ticket|issue|order|"
    r"invoice|build|job|release|step|phase|cycle|period|lot|shipment|pr|run)(s?\s*(?:#|no\.\s*)?\s*)\d+\b"
    r"|\b\d+(?:st|nd|rd|th)(\s+(?:week|day|month|quarter|sprint|batch|round|attempt|run|page|chapter|step))\b"
    r"|(?<![A-Za-z0-9_&])#\d+(?!\d)|(?<![A-Za-z0-9])Q[1-4](?![A-Za-z0-9])"
    r"|(?<![每隔\d.])(?:1[0-2]|0?[1-9])(月份?)(?![\d度底初中末])",
    re.IGNORECASE,
)
"""Ordinals that name the run's own object: ``第3周`` / ``week 3`` / ``the 3rd week`` / ``#42`` / ``Q3`` /
``3月份``. Never a quantity (``30秒``, ``500 per day``, ``端口8080``) nor a version (``v1.2.3``): those prescribe."""

FILE_MASK = "*.{ext}"
"""What a file name or path becomes in a rule-made lesson (the extension is kept: it is part of the lesson)."""
PATH_MASK = "<path>"
ID_MASK = "<id>"
NUMBER_MASK = "<n>"
DATE_MASK = "<date>"


def _location(match: re.Match[str]) -> str:
    if match.group(1) is not None:
        return f"{match.group(1)}{NUMBER_MASK}"
    return f"{match.group(2)}{NUMBER_MASK}{match.group(3)}"


def _ordinal(match: re.Match[str]) -> str:
    text = match.group()
    if match.group(1) is not None:
        return f"{match.group(1)}{match.group(2)}{NUMBER_MASK}"
    if tail := match.group(3) or match.group(4):  # "3rd week", "3月份": the noun after the number is kept
        return f"{NUMBER_MASK}{tail}"
    if text.startswith("#"):
        return f"#{NUMBER_MASK}"
    return f"{text[0]}{NUMBER_MASK}"  # Q3 -> Q<n>


_RUN_VALUES: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (_UUID, ID_MASK),
    (_DATE, DATE_MASK),
    (_LOCATION, _location),
    (_ORDINAL, _ordinal),
    (_HEX_ID, ID_MASK),
    (_LONG_NUMBER, ID_MASK),
)


def generalise(text: str) -> str:
    """``text`` with the parts that only identify one run masked: what a rule-made lesson says.

    File names and paths become ``*.csv`` (the extension kept), other absolute
    paths ``<path>``; a URL keeps its scheme and host; UUIDs, hexadecimal ids,
    runs of six or more digits, dates and clock times become ``<id>``/``<date>``;
    a number that only locates something in this run's input (``position 3``,
    ``line 12``, ``byte 0xc8``, ``第3行``) becomes ``<n>``. Every other number is
    kept: ``encoding='utf-8'``, ``timeout=30``, ``500 per day`` are the lesson.

    Example:
        >>> generalise("统计 data/sales_03.csv 的销售额")
        '统计 *.csv 的销售额'
        >>> generalise("[Errno 2] No such file or directory: '/srv/in/客户.xlsx'")
        "[Errno 2] No such file or directory: '*.xlsx'"
        >>> generalise("can't decode byte 0xc8 in position 17: invalid continuation byte")
        "can't decode byte <n> in position <n>: invalid continuation byte"
        >>> generalise("GET https://api.example.com/v1/orders/88231907 timed out after 30 s")
        'GET https://api.example.com/… timed out after 30 s'
        >>> generalise("每天最多调用500次，超过10次要等待")
        '每天最多调用500次，超过10次要等待'
    """
    out = _URL.sub(lambda m: f"{m.group(1)}/…" if m.group(2) and m.group(2) != "/" else m.group(1), text)
    out = _FILE.sub(lambda m: FILE_MASK.format(ext=(m.group(2) or m.group(4)).lower()), out)
    out = _PATH.sub(PATH_MASK, out)
    for pattern, mask in _RUN_VALUES:
        out = pattern.sub(mask, out)
    return out


RULE_SOURCES: frozenset[str] = frozenset({"rule", "tool_output"})
"""Sources of the lessons the reflection rules write (a lesson quoting a tool's error is ``tool_output``)."""


def rule_made(unit: MemoryUnit) -> bool:
    """``unit`` came out of the reflection rules of a run (a rule source and a run id), not from a person."""
    return unit.source in RULE_SOURCES and unit.run_id is not None


def learned_in_run(unit: MemoryUnit) -> bool:
    """``unit`` is a lesson the reflection model inferred from one run whose task is known."""
    return unit.source == "agent_inference" and unit.run_id is not None and bool(unit.task_description.strip())


def mask_run_values(text: str, task: str) -> str:
    """``text`` with the ids, dates and ordinals that also name the run's own task masked (as :func:`generalise`).

    Only a value the task names is run-specific here (``第3周`` in a lesson learned on
    ``把第3周的周报发给张经理``); the same kind of value elsewhere in the text is kept.

    Example:
        >>> mask_run_values("发送第3周周报前先压缩附件，第2步要确认收件人", "把第3周的周报发给张经理")
        '发送第<n>周周报前先压缩附件，第2步要确认收件人'
    """
    out = text
    for pattern, mask in _RUN_VALUES:
        named = {m.group() for m in pattern.finditer(task)}
        if named:
            out = pattern.sub(_masker(named, mask), out)
    return out


def _masker(named: set[str], mask: str | Callable[[re.Match[str]], str]) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        if m.group() not in named:
            return m.group()
        return mask if isinstance(mask, str) else mask(m)

    return replace


def run_masked(unit: MemoryUnit) -> str:
    """What ``unit`` says once the values that only name its run are masked (its content as is for anyone else).

    A rule-made lesson (see :func:`rule_made`): :func:`generalise`. A lesson the model inferred
    from a run (see :func:`learned_in_run`): the ids, dates and ordinals its task names
    (:func:`mask_run_values`). A person's fact: unchanged.
    """
    if rule_made(unit):
        return generalise(unit.content)
    if learned_in_run(unit):
        return mask_run_values(unit.content, unit.task_description)
    return unit.content


def lesson_key(unit: MemoryUnit) -> str:
    """The statement key under which ``unit`` folds with its duplicates: its text as :func:`run_masked` says it.

    So the same rule-made lesson learned on five files (stored before the rules masked file names)
    is one statement, as are four lessons inferred on ``把第N周的周报发给张经理`` that differ only in N;
    a person's numbers and names are the fact itself: ``"每天最多10次"`` never folds with ``"每天最多500次"``.
    """
    return statement_key(run_masked(unit))
