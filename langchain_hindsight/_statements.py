"""What a text says: when two texts make the same statement, and what it says as the claim rule reads it.

Base module under the write path, the merge pass and :mod:`langchain_hindsight._claims`.
:func:`statement_key` reduces a text to its statement (two texts with one key are true duplicates) and
:func:`lesson_key` does so once the values that only name a lesson's run are masked (:func:`generalise`,
:func:`mask_run_values`). :func:`statement` removes the fixed text of the templates in
:mod:`langchain_hindsight.prompts` that stored memories are made from (rule lessons, the user-correction
template) and their run-specific fields; :func:`units_of` turns a statement into the units the claim rule
aligns: English word stems, Chinese characters, literals such as ``utf-8-sig`` whole, every negation word as
:data:`NEG`, with filler and modal words dropped and relational words (``用``, ``按``, ``发给``, ``with``,
``is`` …) marked.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from langchain_hindsight._lexicon import CONCEPTS, GENERIC, VALUE_CLASSES, Value
from langchain_hindsight._text import clean_feedback
from langchain_hindsight.prompts import REFLECTION_EN, REFLECTION_ZH, REVIEW_EN, REVIEW_ZH
from langchain_hindsight.types import MemoryUnit

__all__ = [
    "CHANGE_MARKERS",
    "COMPARISON_PATTERNS",
    "CONDITION_PATTERNS",
    "DATE_MASK",
    "FILE_MASK",
    "ID_MASK",
    "NEG",
    "NUMBER_MASK",
    "PATH_MASK",
    "RULE_SOURCES",
    "TEMPLATE_FIELDS",
    "Frame",
    "Unit",
    "frame_of",
    "generalise",
    "learned_in_run",
    "lesson_key",
    "mask_run_values",
    "normal_text",
    "parse_template",
    "rule_made",
    "run_masked",
    "script_of",
    "statement",
    "statement_key",
    "units_of",
    "without_change_markers",
]


# ---------------------------------------------------------------- our templates' fixed parts
TEMPLATE_FIELDS: Mapping[str, tuple[str, ...]] = {
    # template attribute -> its run-specific fields (dropped: they are context, not the statement)
    "rule_user_feedback": ("task",),
    "rule_user_feedback_no_task": (),
    "rule_error_fix": ("task",),
    "rule_unstable_fixed": ("attempts",),
    "rule_unstable_failed": ("attempts",),
    "rule_avoid": (),
    "rule_feature": ("total", "count"),
    "rule_failures": ("total", "failed"),
}
"""Which of our templates a stored text may have been made from, and which of their fields are run-specific."""


@dataclass(frozen=True, slots=True)
class _Template:
    name: str
    pattern: re.Pattern[str]
    fields: tuple[str, ...]
    dropped: frozenset[str]


def normal_text(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def _compile(name: str, template: str, dropped: Sequence[str]) -> _Template:
    parts: list[str] = []
    fields: list[str] = []
    for literal, field_name, _spec, _conv in string.Formatter().parse(normal_text(template)):
        parts.append(r"\s*".join(re.escape(piece) for piece in literal.split(" ")))
        if field_name is not None:
            fields.append(field_name)
            parts.append(rf"(?P<{field_name}>.+?)")
    body = "".join(parts).rstrip()
    body = body.removesuffix(re.escape(".")).removesuffix(re.escape("。"))
    return _Template(name, re.compile(rf"^\s*{body}\s*[.。]?\s*$", re.DOTALL), tuple(fields), frozenset(dropped))


def _templates() -> tuple[_Template, ...]:
    out: list[_Template] = []
    for bundle in (REFLECTION_ZH, REFLECTION_EN, REVIEW_ZH, REVIEW_EN):
        for name, dropped in TEMPLATE_FIELDS.items():
            template = getattr(bundle, name, None)
            if isinstance(template, str) and "{" in template:
                out.append(_compile(name, template, dropped))
    # longer fixed text first: "用户纠正（任务：…）：" before "用户纠正：…"
    return tuple(sorted(out, key=lambda t: -len(t.pattern.pattern)))


_TEMPLATES = _templates()


def parse_template(text: str) -> tuple[str | None, dict[str, str]]:
    normal = normal_text(text)
    for template in _TEMPLATES:
        m = template.pattern.match(normal)
        if m is not None:
            return template.name, {k: v.strip() for k, v in m.groupdict().items() if k not in template.dropped}
    return None, {}


def statement(text: str) -> str:
    """``text`` without our templates' fixed parts and run-specific fields: what it says.

    A user's turn loses the words that only say it is a correction (``不对，`` /
    ``错了，`` / ``No,`` / ``Actually,``, as :func:`langchain_hindsight._text.clean_feedback`
    reads them), so the raw turn compares like the stored correction.

    Example:
        >>> statement("用户纠正（任务：生成本周的销售周报）：金额要用含税价")
        '金额要用含税价'
        >>> statement("User correction (task: weekly report): amounts include tax.")
        'amounts include tax'
        >>> statement("不对，金额要用含税价"), statement("Actually, amounts include tax.")
        ('金额要用含税价', 'amounts include tax.')
        >>> statement("客户甲公司希望通过邮件联系。")
        '客户甲公司希望通过邮件联系。'
    """
    name, fields = parse_template(text)
    if name is None:
        text = _LEAD_IN.sub("", clean_feedback(text) or text, count=1)
        return text.strip()
    return "，".join(v for v in fields.values() if v and v != "-")


_LEAD_IN = re.compile(
    r"^\s*(?:actually|in fact|well|hmm|sorry|其实|实际上|更正一下|纠正一下)\s*[,，:：]?\s*", re.IGNORECASE
)


# ---------------------------------------------------------------- units
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af\uf900-\ufaff"
_NEG_WORDS = (
    rf"而不是|而非|不是|不要|不需要|不用|不必|无需|不能|不可|不得|不按|不再|别|禁止|避免|切勿|勿|不(?=[{_CJK}])"
    r"|\bnot\b|\bnever\b|\bdon'?t\b|\bdoesn'?t\b|\bdo not\b|\bavoid\b|\bno longer\b|\binstead of\b|\brather than\b"
    r"|\bno\b(?=\s+[a-z])"
)
_UNIT = re.compile(
    rf"(?P<neg>{_NEG_WORDS})"
    r"|(?P<lit>[a-z0-9]+(?:[-/+:._][a-z0-9]+)+)"
    r"|(?P<word>[a-z0-9]+(?:'[a-z]+)?)"
    rf"|(?P<cjk>[{_CJK}])",
    re.IGNORECASE,
)
_EN_FILLER_WORDS = (
    "a an the of this that these those it its please also just should must shall need needs always "
    "will would can could may might 's s"
)
_EN_FILLER = frozenset(_EN_FILLER_WORDS.split())
_ZH_FILLER = frozenset("的了地得之着呢吧啊呀嘛")
_ZH_MODALS = re.compile(
    r"需要|应该|应当|必须|务必|一定要|要(?!求)|需(?!求)|应(?!用|付|收|对|该)|总是|都|(?<![首优事原])先|只|仅|就|也|还|直接"
)
"""Modal and focus words: they mark advice as advice without changing what it prescribes (dropped like filler)."""
_ANTONYMS: Mapping[str, str] = {
    "exclude": "include",
    "excludes": "include",
    "excluding": "include",
    "without": "with",
    "disable": "enable",
    "disabled": "enable",
    "forbid": "allow",
    "disallow": "allow",
}
"""English words read as a negation of their opposite (``exclude tax`` = ``¬ include tax``)."""
_ZH_RELATIONAL = re.compile(
    r"使用|采用|改用|改为|设为|设置为|设成|换成|按照|按(?!钮)|(?<![费信应作调])用(?![户量途])"
    r"|(?<![读获提选抽领采录争])取(?!消)|是(?!否)|(?<![因认成作])为(?!了)|希望|偏好|喜欢|倾向|发给|发送|发到|交给"
    r"|保留|通过|安排在|走|计入|计价|写成|(?<![编描改撰])写(?![作字])|和|与|跟|在|给|以(?![上下内前后外])|统一|默认"
)
"""Chinese words that introduce a value (``用X``, ``按X``, ``发给X``, ``是X``): what follows is the prescription."""
_EN_RELATIONAL_WORDS = (
    "is are was were be been prefer prefers preferred use uses using used cover covers go goes went send sends sent "
    "keep keeps round rounds store stores contact contacts ship ships export exports set sets meet meets run runs "
    "pay pays list lists include includes put puts decode decodes load loads call calls read reads answer answers "
    "with by via to as in on at from than into onto over under default defaults format formats group groups "
    "compare compares due"
)
_EN_RELATIONAL = frozenset(_EN_RELATIONAL_WORDS.split())
"""English words that introduce a value (``with X``, ``by X``, ``is X``, ``prefers X``)."""
NEG = "¬"
"""The unit every negation word becomes (``不要``, ``never``, ``而不是``, ``not``)."""


@dataclass(frozen=True, slots=True)
class Unit:
    text: str
    relational: bool
    literal: bool


def _stem(word: str) -> str:
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("oes", "ches", "shes", "xes", "zes", "sses")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _proper(text: str, start: int) -> bool:
    """A capitalised word inside a sentence is a name ("prefers Go"), not the verb it spells."""
    return start > 0 and text[start].isupper() and text[:start].rstrip()[-1:] not in ("", ".", "!", "?", ";", ":")


def _named_letter(text: str, start: int, end: int) -> bool:
    """A capital ``A`` run into Chinese text (``用A方法``) names something; it is not the article."""
    return text[start:end] == "A" and end < len(text) and not text[end].isspace() and not text[end].isascii()


def units_of(text: str) -> tuple[Unit, ...]:
    normal = unicodedata.normalize("NFKC", text)
    lowered = normal.lower()
    cased = normal if len(normal) == len(lowered) else lowered
    relational = [False] * len(lowered)
    for m in _ZH_RELATIONAL.finditer(lowered):
        for i in range(*m.span()):
            relational[i] = True
    modal = [False] * len(lowered)
    for m in _ZH_MODALS.finditer(lowered):
        for i in range(*m.span()):
            modal[i] = True
    out: list[Unit] = []
    for m in _UNIT.finditer(lowered):
        kind, piece = m.lastgroup, m.group()
        if kind == "neg":
            if not out or out[-1].text != NEG:
                out.append(Unit(NEG, False, False))
        elif kind == "word" or kind == "lit":
            if piece in _EN_FILLER and not _named_letter(cased, m.start(), m.end()):
                continue
            keyed = lowered[m.end() : m.end() + 1] == "="  # encoding='gbk': the key introduces a value
            if piece in _ANTONYMS:
                if not out or out[-1].text != NEG:
                    out.append(Unit(NEG, False, False))
                piece = _ANTONYMS[piece]
            if kind == "lit":
                out.append(Unit(piece.replace("'", ""), keyed, True))
            else:
                out.append(
                    Unit(
                        _stem(piece),
                        keyed or (piece in _EN_RELATIONAL and not _proper(cased, m.start())),
                        piece.isdigit(),
                    )
                )
        elif piece not in _ZH_FILLER and not modal[m.start()]:
            out.append(Unit(piece, relational[m.start()], False))
    return tuple(out)


def script_of(units: Sequence[Unit]) -> str:
    cjk = sum(1 for u in units if len(u.text) == 1 and "\u3400" <= u.text <= "\uffff" and u.text != NEG)
    latin = sum(1 for u in units if u.text.isascii() and u.text.isalpha())
    if cjk >= 2 and cjk >= latin:
        return "cjk"
    return "latin" if latin else "none"


# ---------------------------------------------------------------- conditions (when a piece of advice applies)
_NUMBER = r"[\d一二两三四五六七八九十百千万亿][\d.,一二两三四五六七八九十百千万亿]*"
CONDITION_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # a leading clause that scopes the advice: "If …,", "When …,", "For weekdays,", "On Windows,"
        r"^\s*(?:if|when|whenever|unless|once|for|on|in|under|over|after|before|while)\b[^,;:，；：。]{1,80}[,;:，；：]",
        # an inline clause: "… when the API returns 429", "… for files under 10k rows" (not "for 30 days", a
        # duration, and not past "is": "the language for replies | is English" names the value, not the case)
        r"\b(?:if|when|whenever|unless)\b[^,;:，；：。]{1,60}",
        r"\bfor\b(?!\s+\d)(?:(?!\b(?:is|are|was|were)\b)[^,;:，；：。]){1,60}",
        # 如果… / 当… / 对于… / 遇到… / 在…环境 at the start of the sentence or after a clause break
        r"(?:^|(?<=[，,；;。]))\s*(?:如果|若|假如|要是|当|对于|针对|遇到)[^，,；;。]{1,30}",
        r"(?:^|(?<=[，,；;。]))\s*在[^，,；;。]{1,12}?(?:环境|平台|系统|上|下|中|里)",
        # "…时" / "…的时候" clauses (not 小时, 同时, 实时, 超时, 时间 …)
        r"(?:^|(?<=[，,；;。]))[^，,；;。]{1,30}?(?<![小同及实按准临定适历超])(?:的时候|时)(?![间区刻长段效])",
    )
)
"""Spans that say *when* a piece of advice applies; two memories whose spans differ are complementary."""

COMPARISON_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b(?:under|over|above|below|less than|more than|fewer than|greater than|"
        rf"larger than|smaller than|bigger than|older than|newer than|exceeding|beyond|within)\s+"
        rf"(?:the\s+)?(?:last\s+|past\s+)?{_NUMBER}\s*[a-z%]*",
        rf"(?:少于|小于|低于|不足|不到|(?<!不)超过|大于|高于|多于|以内)\s*{_NUMBER}\s*[^\s，,。；;\d]{{0,3}}",
        rf"{_NUMBER}\s*[^\s，,。；;\d]{{0,3}}?(?:以上|以下|以内|之内|以前|之前|以后|之后|以外)",
    )
)
"""Thresholds ("under 10k rows", "超过1万行", "7天以前"): a threshold on one side only still scopes that advice.

A limit (``at most 500``, ``最多500次``, ``不超过``) is the prescription, not a case: not a threshold."""


# ---------------------------------------------------------------- change markers (a word replaces an earlier one)
_CHANGE_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), r)
    for p, r in (
        # "… instead" (not "instead of", a negation naming the old value: kept as one), "from now on", "going forward"
        (r"\binstead\b(?!\s+of\b)|\b(?:from now on|going forward|from here on)\b\s*[,，]?", " "),
        # "switch to X", "change it to X": a choice of X
        (r"\b(?:switch(?:es|ed|ing)?|chang(?:e|es|ed|ing))\s+(?:it\s+|them\s+)?(?:over\s+)?to\b", " use "),
        # 改用 / 换用 / 换成 / 改成 / 改为 / 改换成: a choice of what follows
        (r"改换成|改用|换用|换成|改成|改为", "用"),
        # 以后 / 今后 / 从现在起 … at the start of a clause (not 7天以后, a threshold); 都 is a modal word
        (r"(?:^|(?<=[，,；;。]))\s*(?:从今以后|从现在起|从现在开始|从今天起|以后|今后|往后)[，,]?", ""),
        # 不要再 / 别再 / 不再: the negation stays (it names the old value), 再 goes
        (r"(?<=不要)再|(?<=别)再|(?<=不)再", ""),
    )
)
CHANGE_MARKERS = re.compile(
    r"\binstead\b|\brather than\b|\bfrom now on\b|\bgoing forward\b|\bfrom here on\b"
    r"|\b(?:switch(?:es|ed|ing)?|chang(?:e|es|ed|ing))\s+(?:it\s+|them\s+)?(?:over\s+)?to\b"
    r"|改换成|改用|换用|换成|改成|改为|不要再|别再|不再"
    r"|(?:^|(?<=[，,；;。]))\s*(?:从今以后|从现在起|从现在开始|从今天起|以后|今后|往后)",
    re.IGNORECASE,
)
"""Words by which a user says a statement replaces an earlier one: "… instead", "rather than", "switch to",
"from now on", 改用, 换成, 改成, 以后…都, 不要再…. They are not a case (``… when removing duplicates instead``
is the case "when removing duplicates"); the claim rule reads them (:func:`langchain_hindsight._claims.relation`)."""


def without_change_markers(text: str) -> str:
    """``text`` with its change markers (:data:`CHANGE_MARKERS`) taken out, keeping what they prescribe.

    "… instead", "from now on" and 以后 go; "switch to X" and 改用X / 换成X become a plain choice ("use X", 用X);
    不要再 becomes 不要 (the negation names the old value); "instead of" and "rather than" stay (negations).

    Example:
        >>> without_change_markers("use a line chart in the monthly report instead").split()
        ['use', 'a', 'line', 'chart', 'in', 'the', 'monthly', 'report']
        >>> without_change_markers("以后月报都改用折线图"), without_change_markers("不要再用柱状图了")
        ('月报都用折线图', '不要用柱状图了')
    """
    for pattern, replacement in _CHANGE_REWRITES:
        text = pattern.sub(replacement, text)
    return text


# ---------------------------------------------------------------- frames (typed values and the concepts around them)
@dataclass(frozen=True, slots=True)
class Frame:
    """A statement read through :mod:`langchain_hindsight._lexicon`: what it names, in no particular language.

    Attributes:
        values: The typed values it names (``("period", "rolling", "7")``, ``("clock", "08:00", "")`` …).
        concepts: The other content, in order: a concept id where the lexicon knows the word, else the word
            (an English stem or a Chinese character); function words dropped.
        negated: Whether it contains a negation (frames of negated statements are not compared).
    """

    values: frozenset[Value]
    concepts: tuple[str, ...]
    negated: bool

    @property
    def classes(self) -> frozenset[str]:
        """The classes of its values (``{"period"}``)."""
        return frozenset(v[0] for v in self.values)


def _lexicon_terms() -> tuple[dict[str, tuple[str, ...]], dict[tuple[str, ...], tuple[str, ...]]]:
    zh: dict[str, list[str]] = {w: [] for w in GENERIC if re.search(f"[{_CJK}]", w)}  # function words: no concept
    en: dict[tuple[str, ...], list[str]] = {}
    for concept, words in CONCEPTS.items():
        for word in words:
            ids = (
                zh.setdefault(word, [])
                if re.search(f"[{_CJK}]", word)
                else en.setdefault(tuple(_stem(w) for w in word.split()), [])
            )
            if concept not in ids:
                ids.append(concept)
    return {k: tuple(v) for k, v in zh.items()}, {k: tuple(v) for k, v in en.items()}


_ZH_TERMS, _EN_TERMS = _lexicon_terms()
_ZH_LONGEST = max(map(len, _ZH_TERMS))
_EN_LONGEST = max(map(len, _EN_TERMS))
_GO = re.compile(r"(?<![A-Za-z])Go(?![A-Za-z])(?!\s+to\b)")
"""``Go`` capitalised is the language (``用Go写…``, ``prefers Go``); the verb is lowercase or "Go to …"."""
_FRAME_TOKEN = re.compile(rf"[a-z0-9]+(?:[-'][a-z0-9]+)*|[{_CJK}]")
_SKIP = re.compile(rf"{_NEG_WORDS}|{_ZH_MODALS.pattern}", re.IGNORECASE)


def frame_of(text: str) -> Frame:
    """The :class:`Frame` of a statement (its body, as :func:`statement` gives it).

    Example:
        >>> f = frame_of("库存报表每天早上8点生成。")
        >>> sorted(f.values), f.concepts
        ([('clock', '08:00', '')], ('inventory', 'report', 'daily', 'generate'))
        >>> frame_of("Generate the inventory report at 8am every day.").values == f.values
        True
    """
    working = unicodedata.normalize("NFKC", text)
    working = _GO.sub("golang", working).lower()
    values: set[Value] = set()
    for pattern, reader in VALUE_CLASSES:
        for m in pattern.finditer(working):
            if m.end() == m.start():
                continue
            value = reader(m)
            if value is not None:
                values.add(value)
                working = working[: m.start()] + " " * (m.end() - m.start()) + working[m.end() :]
    negated = False
    for m in _SKIP.finditer(working):
        negated = negated or bool(re.fullmatch(_NEG_WORDS, m.group(), re.IGNORECASE))
    working = _SKIP.sub(lambda m: " " * len(m.group()), working)
    tokens = [t.removesuffix("'s") for t in _FRAME_TOKEN.findall(working)]
    concepts: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if len(token) == 1 and not token.isascii():
            run = "".join(tokens[i : i + _ZH_LONGEST])
            size = next((n for n in range(len(run), 0, -1) if run[:n] in _ZH_TERMS), 0)
            if size:
                concepts.extend(_ZH_TERMS[run[:size]])
                i += size
                continue
            if token not in GENERIC and token not in _ZH_FILLER:
                concepts.append(token)
            i += 1
            continue
        stems = [_stem(t) for t in tokens[i : i + _EN_LONGEST]]
        size = next((n for n in range(len(stems), 0, -1) if tuple(stems[:n]) in _EN_TERMS), 0)
        if size:
            concepts.extend(_EN_TERMS[tuple(stems[:size])])
            i += size
            continue
        if token not in GENERIC and token not in _EN_FILLER and stems[0] not in GENERIC:
            concepts.append(stems[0])
        i += 1
    return Frame(frozenset(values), tuple(concepts), negated)


# ---------------------------------------------------------------- statement identity (the write path, the merge pass)
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
