"""A small bilingual lexicon the claim rule aligns frames with: data, no model.

Base module under :mod:`langchain_hindsight._claims`. Two tables:

* :data:`VALUE_CLASSES` — typed values a prescription may name (a period such as
  ``rolling 7-day window`` / ``最近7天`` / ``Monday to Sunday`` / ``本周一到周日``, a
  clock time ``8am`` / ``早上8点``, a duration, an encoding, a natural or programming
  language, a currency, a theme, an indentation, a person by title), each read
  into a language-free ``(class, kind, detail)`` so ``早上8点`` and ``8am`` compare;
* :data:`CONCEPTS` — subject and frame words in Chinese and English mapped to one
  concept id (``周报`` / ``weekly report`` → ``weekly`` + ``report``, ``偏好`` /
  ``prefers`` → ``prefer``, ``保留`` / ``keep`` → ``retain``), so the words *around*
  the values of two statements can be compared across languages.

Neither table decides anything by itself: :mod:`langchain_hindsight._claims`
calls two statements contradictory through them only when both name a value of
the same class, the values differ, and every other concept of the two frames is
aligned. Extend the tables with care: a wrong synonym here can make two
different subjects look like one (the labelled pairs in
``tests/unit_tests/data/claim_pairs_*.jsonl`` measure it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

__all__ = ["CONCEPTS", "GENERIC", "SOFT", "VALUE_CLASSES", "Value"]

Value = tuple[str, str, str]
"""A typed value: ``(class, kind, detail)``; ``detail`` is ``""`` when the text leaves it open (a rolling window
of no stated length)."""

_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}


_EN_NUMBERS = {"one": 1, "two": 2, "three": 3, "five": 5, "seven": 7, "ten": 10, "fourteen": 14, "thirty": 30}


def _number(text: str) -> int | None:
    """``"12"`` → 12, ``"十二"`` → 12, ``"二十"`` → 20, ``"seven"`` → 7; ``None`` when it is not a small number."""
    if text.isdigit():
        return int(text)
    if text in _EN_NUMBERS:
        return _EN_NUMBERS[text]
    if not text or any(c not in _ZH_DIGITS and c != "十" for c in text):
        return None
    if "十" not in text:
        return _ZH_DIGITS[text] if len(text) == 1 else None
    tens, _, ones = text.partition("十")
    return (_ZH_DIGITS.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGITS.get(ones, 0) if ones else 0)


_NUM = r"(\d+|[一二两三四五六七八九十]+)"
_PM = frozenset({"下午", "晚上", "傍晚", "pm"})


def _clock(m: re.Match[str]) -> Value | None:
    hour = _number(m.group("h"))
    if hour is None or hour > 24:
        return None
    minute = _number(m.group("m") or "0") if m.group("m") != "半" else 30
    if (m.group("ap") or "") in _PM and hour < 12:
        hour += 12
    if (m.group("ap") or "") == "am" and hour == 12:
        hour = 0
    return ("clock", f"{hour:02d}:{minute or 0:02d}", "")


_DAYS = {"秒": 1 / 86400, "分钟": 1 / 1440, "小时": 1 / 24, "天": 1, "日": 1, "周": 7, "个月": 30, "月": 30, "年": 365}
_EN_DAYS = {"second": 1 / 86400, "sec": 1 / 86400, "minute": 1 / 1440, "hour": 1 / 24, "day": 1, "week": 7}
_EN_DAYS |= {"month": 30, "year": 365}


def _duration(m: re.Match[str]) -> Value | None:
    n = _number(m.group("n"))
    unit = m.group("u").rstrip("s") if m.group("u").isascii() else m.group("u")
    days = _DAYS.get(unit, _EN_DAYS.get(unit))
    if n is None or days is None:
        return None
    return ("duration", f"{n * days:g}", "")


def _rolling(m: re.Match[str]) -> Value:
    n = next((g for g in m.groups() if g), "")
    number = _number(n) if n else None
    return ("period", "rolling", "" if number is None else str(number))


def _fixed(cls: str, kind: str) -> Callable[[re.Match[str]], Value]:
    def value(m: re.Match[str]) -> Value:
        return (cls, kind, "")

    return value


def _named(cls: str, names: Mapping[str, str]) -> Callable[[re.Match[str]], Value]:
    def value(m: re.Match[str]) -> Value:
        return (cls, names[m.group(1).lower().replace(" ", "")], "")

    return value


_SURNAMES = {"张": "zhang", "李": "li", "王": "wang", "刘": "liu", "陈": "chen", "赵": "zhao", "杨": "yang"}
_SURNAMES |= {"黄": "huang", "周": "zhou", "吴": "wu", "孙": "sun", "钱": "qian"}
_ROLES = {"经理": "manager", "总监": "director", "总": "boss", "manager": "manager", "director": "director"}


def _person_zh(m: re.Match[str]) -> Value:
    return ("person", _SURNAMES[m.group(1)], _ROLES[m.group(2)])


def _person_en(m: re.Match[str]) -> Value:
    return ("person", m.group(2).lower(), _ROLES[m.group(1).lower()])


_B = r"(?<![a-z0-9])"
_E = r"(?![a-z0-9])"
_LANGS = {"english": "en", "英文": "en", "英语": "en", "german": "de", "德语": "de", "德文": "de", "french": "fr"}
_LANGS |= {"法语": "fr", "法文": "fr", "spanish": "es", "西班牙语": "es", "chinese": "zh", "中文": "zh"}
_LANGS |= {"汉语": "zh", "japanese": "ja", "日语": "ja", "日文": "ja", "korean": "ko", "韩语": "ko"}
_PROG_NAMES = "java python rust javascript typescript kotlin swift ruby php scala golang c++ c#"
_PROGS = {p: p for p in _PROG_NAMES.split()}
_DBS = {"postgresql": "postgresql", "postgres": "postgresql", "mysql": "mysql", "sqlite": "sqlite"}
_DBS |= {"mongodb": "mongodb", "oracle": "oracle"}
_CURRENCIES = {"usd": "usd", "美元": "usd", "eur": "eur", "欧元": "eur", "rmb": "cny", "cny": "cny", "人民币": "cny"}
_CURRENCIES |= {"jpy": "jpy", "日元": "jpy", "gbp": "gbp", "英镑": "gbp"}
_THEMES = {"dark": "dark", "深色": "dark", "暗色": "dark", "light": "light", "浅色": "light", "亮色": "light"}
_INDENTS = {"tab": "tab", "tabs": "tab", "制表符": "tab", "spaces": "space", "空格": "space"}


def _alternatives(names: Mapping[str, str]) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


VALUE_CLASSES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], Value | None]], ...] = tuple(
    (re.compile(pattern), reader)
    for pattern, reader in (
        # periods: a rolling window of N days, or a calendar week / month
        (
            rf"{_B}(?:a\s+)?rolling\s+(?:(\d+)[-\s]?days?\s+)?window(?:\s+of\s+(?:the\s+)?(?:last|past)\s+(\d+)\s+days)?",
            _rolling,
        ),
        (
            rf"{_B}(?:the\s+)?(?:last|past|trailing)\s+(?:rolling\s+)?(\d+|{'|'.join(_EN_NUMBERS)})\s+days{_E}",
            _rolling,
        ),
        (rf"最近\s*{_NUM}\s*天(?:的?滚动窗口)?|近\s*{_NUM}\s*天|过去\s*{_NUM}\s*天|滚动窗口()", _rolling),
        (
            rf"{_B}(?:the\s+)?(?:(?:previous|last|this)\s+)?(?:calendar\s+week|monday\s+(?:to|through|-)\s+sunday)"
            r"(?:\s+of\s+(?:this|the|last|the\s+previous)\s+week|\s+week)?",
            _fixed("period", "calendar_week"),
        ),
        (r"(?:本|上|这)?周一\s*(?:到|至|-|~)\s*(?:本|上)?周日(?:的?自然周)?|自然周", _fixed("period", "calendar_week")),
        (
            rf"{_B}(?:the\s+)?(?:(?:previous|last|prior)\s+)?calendar\s+month"
            r"|first\s+to\s+the\s+last\s+day\s+of\s+the\s+(?:previous|last|prior)\s+month",
            _fixed("period", "calendar_month"),
        ),
        (r"上个?自然月|自然月|上个?月的?第一天到最后一天", _fixed("period", "calendar_month")),
        # a split into groups ("按门店拆分", "split by store"): another aspect than a period
        (r"按\s*([\u4e00-\u9fff]{1,4}?)\s*(?:拆分|分组|划分|分开|分列|分表)", lambda m: ("grouping", m.group(1), "")),
        (
            rf"{_B}(?:split|group|grouped|broken\s+down|break\s+down)\s+(?:it\s+)?by\s+([a-z]+)"
            rf"|{_B}per\s+(store|region|department|product|channel|city)",
            lambda m: ("grouping", m.group(1) or m.group(2), ""),
        ),
        # clock times
        (rf"{_B}(?:at\s+)?(?P<h>\d{{1,2}})(?::(?P<m>\d{{2}}))?\s*(?P<ap>am|pm){_E}", _clock),
        (
            rf"(?P<ap>早上|上午|中午|下午|晚上|傍晚|凌晨)?\s*(?P<h>{_NUM[1:-1]})\s*点(?P<m>半|\d{{1,2}}(?=分)|)分?",
            _clock,
        ),
        (rf"{_B}(?:at\s+)?noon{_E}", _fixed("clock", "12:00")),
        (rf"{_B}(?:at\s+)?midnight{_E}", _fixed("clock", "00:00")),
        # durations
        (
            rf"{_B}(?:for\s+)?(?P<n>\d+)[-\s]?(?P<u>seconds?|secs?|minutes?|hours?|days?|weeks?|months?|years?){_E}",
            _duration,
        ),
        (r"(?P<n>\d+|[一二两三四五六七八九十]+)\s*(?P<u>秒|分钟|小时|天|周|个月|年)", _duration),
        # named values
        (
            rf"{_B}(utf-?8-sig|utf-?8|utf-?16|gbk|gb2312|gb18030|latin-?1|iso-8859-1|ascii|big5|cp1252){_E}",
            lambda m: ("encoding", m.group(1).replace("-", "").replace("utf8", "utf-8").replace("sig", "-sig"), ""),
        ),
        (rf"{_B}({_alternatives(_LANGS)}){_E}", _named("language", _LANGS)),
        (rf"{_B}({_alternatives(_PROGS)})(?![a-z0-9+#])", _named("code", _PROGS)),
        (rf"{_B}({_alternatives(_DBS)}){_E}", _named("database", _DBS)),
        (rf"{_B}({_alternatives(_CURRENCIES)}){_E}", _named("currency", _CURRENCIES)),
        (rf"({'|'.join(_SURNAMES)})(经理|总监|总)", _person_zh),
        (rf"{_B}(manager|director)\s+({'|'.join(p for p in _SURNAMES.values())}){_E}", _person_en),
        (
            r"(?<![a-z])(dark|light)\s+(?:mode|theme)(?![a-z])|(深色|暗色|浅色|亮色)(?:主题|模式)?",
            lambda m: ("theme", _THEMES[m.group(1) or m.group(2)], ""),
        ),
        (rf"{_B}(tabs?|spaces){_E}|(制表符|空格)", lambda m: ("indent", _INDENTS[m.group(1) or m.group(2)], "")),
    )
)
"""Typed values, read in order on the lowered text (an earlier pattern's span is not read again)."""

CONCEPTS: Mapping[str, tuple[str, ...]] = {
    # concept id -> Chinese words and English words (English as word stems, several words allowed)
    "user": ("用户", "user"),
    "prefer": ("偏好", "喜欢", "倾向于", "倾向", "prefer", "prefers", "preferred", "like", "likes"),
    "backend": ("后端服务", "后端", "backend", "backend service", "back-end", "back-end service"),
    "frontend": ("前端代码", "前端", "frontend", "frontend code", "front-end", "front-end code"),
    "cli": ("命令行工具", "命令行", "command-line tool", "cli", "cli tool"),
    "weekly": ("周报", "每周", "weekly", "every week"),
    "monthly": ("月报", "每月", "monthly", "every month"),
    "daily": ("日报", "每天", "每日", "daily", "every day", "each day"),
    "report": ("周报", "月报", "日报", "报表", "报告", "report"),
    "inventory": ("库存", "inventory", "stock"),
    "sales": ("销售额", "销售", "sales", "sale"),
    "data": ("数据", "data"),
    "log": ("日志", "log"),
    "backup": ("备份", "backup"),
    "retain": ("保留", "保存", "留存", "keep", "retain", "store"),
    "generate": ("生成", "generate", "produce", "create"),
    "send": ("发送给", "发送到", "发给", "发到", "发送", "交给", "send", "sent", "go"),
    "encoding": ("编码", "encoding", "encode"),
    "read": ("读取", "read", "load", "open"),
    "export": ("导出", "export"),
    "file": ("文件", "file"),
    "supplier": ("供应商", "supplier", "vendor"),
    "currency": ("币种", "货币", "currency"),
    "invoice": ("发票", "invoice"),
    "language": ("语言", "language"),
    "reply": ("回复", "reply", "replie", "answer", "response"),
    "indent": ("缩进", "indentation", "indent"),
    "theme": ("主题", "theme", "mode"),
    "database": ("数据库", "database", "db"),
    "editor": ("编辑器", "editor"),
    "email": ("邮件", "email", "e-mail", "mail"),
    "subject": ("标题", "subject"),
    "order": ("订单", "order"),
    "code": ("代码", "code"),
}
"""Subject and frame words, both languages, to one id each (a word may name two ids: ``周报`` is weekly + report)."""

_GENERIC_WORDS = (
    "用 按 是 为 写 统计 只 仅 要 请 的 了 在 里 中 通过 使用 采用 以 和 范围 统计范围 数据范围 取 覆盖 计算 做 "
    "use uses using used cover covers covered only be is are was were 's of for with by via to as in on at from "
    "write written should must always a an the this that it its please also just all"
)
GENERIC: frozenset[str] = frozenset(_GENERIC_WORDS.split())
"""Words that carry no part of the subject (relational and function words, the verbs of a value's frame)."""

SOFT: frozenset[str] = frozenset({"sales", "数据", "data"})
"""Concepts one side may name and the other leave out without changing the subject ("weekly *sales* report")."""
