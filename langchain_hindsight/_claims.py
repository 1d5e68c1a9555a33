"""What a statement says, and how two statements relate: the one rule for conflicts and corrections.

:func:`relation` compares two memory texts (or a memory and a user's
correction) by rules only, in Chinese, English or both, deterministically and
in well under a millisecond a pair, and answers one of:

* ``"same"`` — a restatement (other punctuation, spacing, case or filler words;
  two rule lessons that differ only in the run they were learned in);
* ``"contradicts"`` — the same subject with a different prescription
  (``用户偏好用Java…`` / ``用户偏好用Python…``; ``encoding='utf-8-sig'`` /
  ``encoding='gbk'`` for the same failure; "do X" / "never do X"; a correction
  that names the old value it replaces, ``…发给张经理而不是李经理``);
* ``"compatible"`` — the same subject, advice for different cases (``< 10k`` /
  ``> 10k rows``, ``On Windows`` / ``On macOS``) or an elaboration that only adds;
* ``"unrelated"`` — different subjects (another entity, another field);
* ``"unsure"`` — the rules cannot tell; callers then keep both.

Our own templates are never a subject: the fixed parts of the rule lessons and
of the user-correction template (read from :mod:`langchain_hindsight.prompts`,
never copied) are stripped first, and run-specific fields (the task a lesson
was learned in, an attempt count) are dropped, so three corrections
``用户纠正（任务：生成本周的销售周报）：…`` on different points are unrelated and
five BOM lessons that differ only in ``（任务：统计 …/<file>.csv）`` are the same.

How it decides, for two statements ``a`` and ``b`` (see :class:`Claim`). Both
become unit sequences (English word stems, Chinese characters, literals such as
``utf-8-sig`` or ``UTC+8`` whole, every negation as one unit ``¬``, filler and
modal words such as 要/需要/should dropped, relational words such as ``用``, ``按``,
``是``, ``发给``, ``with``, ``by``, ``is``, ``prefers`` marked), which are aligned; the
differing spans ("hunks") are then read in this order:

1. no difference → same;
2. a Chinese and an English statement → only their frames compare (below);
   anything else is unsure (never same: a translation is not merged);
3. one side negated, the other not, and otherwise the same words (``include`` /
   ``put`` / ``带上`` / ``加上`` read as one act, prepositions ignored: "Always
   include X in Y" / "Never put X in Y", "请求头里要带上X" / "不要在请求头里带X") →
   contradicts;
4. one side only adds → compatible (an elaboration), or contradicts when what
   it adds is a negation (``…张经理而不是李经理`` against ``…李经理``);
5. a difference at the start, or before the first relational word, names
   another subject (客户甲公司 / 客户乙公司) → unrelated, or compatible when the
   two are scoped to different cases; so does sharing under 30 % of the units;
6. advice scoped to different cases (conditions such as ``如果…`` / ``when …`` /
   ``for <case>`` / ``…时`` that differ, or a threshold on one side only) →
   compatible (``for 30 days`` is a duration, not a case);
7. no shared aspect (no relational word in common, no two-unit block in common
   after the opening) → unrelated;
8. a negation on one side only, of something the other says → contradicts;
9. one number for another in the second half of the statement, all else and
   the conditions equal (``每天最多调用接口[100]次`` / ``[200]次``) → contradicts; two
   values differing at once (``用[Python]写[脚本]`` / ``用[PyCharm]写[代码]``), a span
   on one side only that opens with its own relational word (``在周五下午``), or a
   condition on one side only → unsure (both kept: perhaps another case);
   otherwise at most two differing spans, each a value on both sides inside the
   prescription (after a relational word, or next to a shared verb:
   ``周报[按最近7天滚动窗口]统计[销售额]``), the same relational words, and no
   typed values of different kinds (``按门店拆分`` is a split, ``按最近7天`` a
   window: other aspects) → contradicts;
10. otherwise, a change marker ("… instead", "rather than", "switch to", "from
    now on", ``改用``, ``换成``, ``改成``, ``以后…都``, ``不要再…``) on either side,
    both in one script, read without the markers: → contradicts when the two
    differ in one value of one slot and nothing else — one run of at most four
    content units on each side, followed by the same word (``[bar] chart`` /
    ``[line] chart``, ``[柱状]图`` / ``[折线]图``) or preceded by the same word and
    relational words (``report as [a PDF]`` / ``report as [an Excel file]``), not
    before the prescription, each side keeping half of its content and two units
    in common, the same cases (a case that only restates the other's subject,
    "… for the monthly report", is none), and what a negation on one side names
    ("instead of *a bar chart*") said by the other. So "No, the monthly report
    needs a bar chart" / "No, use a line chart in the monthly report instead"
    contradicts, while the same marker on another subject (客户乙公司), another
    aspect ("covers the calendar month") or another case ("When the file is over
    1GB, use spark instead") does not; the marker is never a case itself;
11. otherwise, when steps 5–9 answered unrelated, unsure or compatible (not
    for different cases), the frames decide: → contradicts when both name values
    of one and the same class (a period, a clock time, a duration, an encoding,
    a language, a currency, a person by title …, read by
    :mod:`langchain_hindsight._lexicon`), the values differ, neither is negated
    or limited by a threshold, and the concepts around the values are the same
    after the bilingual lexicon (``周报`` = ``weekly report``, ``偏好`` =
    ``prefers``; one side may add only a soft word such as "sales"). So "No, the
    weekly report only covers Monday to Sunday" contradicts "The weekly sales
    report uses a rolling 7-day window", and ``库存报表每天早上8点生成`` contradicts
    "Generate the inventory report at 6pm every day";
12. anything else → the answer of steps 4–9 (unsure when none).

The lexicon only aligns frames: it never produces ``contradicts`` unless the
frame and the differing value are both aligned.

``contradicts`` is the precise answer (a wrong one demotes a good memory): the
labelled pairs in ``tests/unit_tests/data/claim_pairs_{tuning,heldout,heldout_c}.jsonl``
measure it (``tests/unit_tests/test_claims.py``).

Example:
    >>> relation("用户偏好用Java写后端服务。", "用户偏好用Python写后端服务。")
    'contradicts'
    >>> relation("用户纠正（任务：生成本周的销售周报）：周报只统计本周一到周日的数据",
    ...          "用户纠正（任务：生成本周的销售周报）：金额要用含税价")
    'unrelated'
    >>> relation("Use pandas for files under 10k rows.", "Use duckdb for files over 10k rows.")
    'compatible'
    >>> relation("用户偏好用Java写后端服务。", "The user prefers Python for backend services.")
    'contradicts'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from difflib import Match, SequenceMatcher
from functools import cached_property, lru_cache
from typing import Literal

from langchain_hindsight._lexicon import SOFT, Value
from langchain_hindsight._statements import (
    CHANGE_MARKERS,
    COMPARISON_PATTERNS,
    CONDITION_PATTERNS,
    NEG,
    Frame,
    Unit,
    frame_of,
    normal_text,
    parse_template,
    script_of,
    statement,
    units_of,
    without_change_markers,
)

__all__ = ["Claim", "Relation", "claim_of", "relation", "relation_of", "scoped_apart"]

Relation = Literal["same", "contradicts", "compatible", "unrelated", "unsure"]
"""How two statements relate (see :func:`relation`)."""


def _condition_key(span: str) -> frozenset[str]:
    return frozenset(u.text for u in units_of(span))


class Claim:
    """One statement as the rules see it (parsed once, compared many times).

    Attributes:
        text: The text as given.
        body: :func:`statement` of it (our templates' fixed parts removed).
        template: The template it was made from (``"rule_error_fix"`` …), or ``None``.
        fields: That template's statement fields (run-specific ones dropped).
    """

    __slots__ = ("__dict__", "body", "fields", "template", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.template, self.fields = parse_template(text)
        self.body = statement(text)

    @cached_property
    def units(self) -> tuple[Unit, ...]:
        """The body's units: English stems, Chinese characters, literals whole, negations as ``¬``."""
        return units_of(self.body)

    @cached_property
    def key(self) -> tuple[str, ...]:
        """The units as strings: equal keys are the same statement."""
        return tuple(u.text for u in self.units)

    @cached_property
    def script(self) -> str:
        """``"cjk"``, ``"latin"`` or ``"none"`` (see :func:`relation`)."""
        return script_of(self.units)

    @cached_property
    def marked(self) -> bool:
        """Whether the user says it replaces an earlier word ("… instead", "switch to", 改用, 以后…都, 不要再 …)."""
        return CHANGE_MARKERS.search(self.body) is not None

    @cached_property
    def plain_units(self) -> tuple[Unit, ...]:
        """The units of the body without its change markers ("switch to X" read as "use X", 改用X as 用X)."""
        return units_of(without_change_markers(self.body)) if self.marked else self.units

    @cached_property
    def _scope(self) -> tuple[frozenset[frozenset[str]], bool]:
        text = without_change_markers(self.body) if self.marked else self.body  # "… when X instead": the case is X
        spans = [m.group() for p in CONDITION_PATTERNS for m in p.finditer(text) if m.end() > m.start()]
        thresholds = [m.group() for p in COMPARISON_PATTERNS for m in p.finditer(text)]
        # each distinct span once: a repetitive text repeats its conditions (the same set, in linear time)
        return frozenset(_condition_key(s) for s in {*spans, *thresholds}) - {frozenset()}, bool(thresholds)

    @cached_property
    def frame(self) -> Frame:
        """Its typed values and the concepts around them (:func:`langchain_hindsight._statements.frame_of`)."""
        return frame_of(self.body)

    @property
    def conditions(self) -> frozenset[frozenset[str]]:
        """The spans that say when the advice applies (each as a set of units)."""
        return self._scope[0]

    @property
    def has_threshold(self) -> bool:
        """Whether a threshold ("under 10k rows") limits the advice."""
        return self._scope[1]


@lru_cache(maxsize=4096)
def claim_of(text: str) -> Claim:
    """The :class:`Claim` of ``text`` (cached: the same texts are compared again and again)."""
    return Claim(text)


# ---------------------------------------------------------------- the rule
def relation(a: str, b: str) -> Relation:
    """How statement ``b`` relates to statement ``a`` (symmetric); see the module docstring.

    Args:
        a: A memory's content (or any statement).
        b: Another memory's content, or a user's correction.

    Example:
        >>> relation("weekly report covers the last 7 days", "the weekly report covers Monday to Sunday only")
        'contradicts'
        >>> relation("客户甲公司希望通过邮件联系。", "客户乙公司希望通过邮件联系。")
        'unrelated'
        >>> relation("Read the ERP export with encoding='gbk'.", "read the ERP export with encoding=gbk")
        'same'
        >>> relation("The weekly sales report uses a rolling 7-day window.",
        ...          "No, the weekly report only covers Monday to Sunday of this week")
        'contradicts'
        >>> relation("No, the monthly report needs a bar chart", "No, use a line chart in the monthly report instead")
        'contradicts'
        >>> relation("Customer Acme prefers email", "Customer Beta prefers email instead")
        'unrelated'
    """
    return relation_of(claim_of(a), claim_of(b))


def relation_of(a: Claim, b: Claim) -> Relation:
    """:func:`relation` of two parsed claims."""
    if a.template is not None and a.template == b.template:
        structured = _same_template(a, b)
        if structured is not None:
            return structured
    return _free(a, b)


_ARG = re.compile(r"([A-Za-z_][\w.]*)\s*=\s*('[^']*'|\"[^\"]*\"|[^,，、]+)")


def _args(text: str) -> dict[str, str]:
    return {k: v.strip().strip("'\"").lower() for k, v in _ARG.findall(unicodedata.normalize("NFKC", text))}


_PATHLIKE = re.compile(r"(?:[\w.-]*[/\\])+[\w.-]+|\b[\w-]+\.(?:csv|xlsx?|json|txt|parquet|tsv|log|xml|pdf)\b")


def _error_kind(text: str) -> str:
    head = unicodedata.normalize("NFKC", text).split(":", 1)[0].strip().lower()
    return _PATHLIKE.sub("<path>", head)


def _same_template(a: Claim, b: Claim) -> Relation | None:
    """Two lessons made from the same rule template, compared field by field (``None``: read them as text)."""
    fa, fb = a.fields, b.fields
    if a.template == "rule_error_fix":
        if normal_text(fa.get("tool", "")).lower() != normal_text(fb.get("tool", "")).lower():
            return "unrelated"
        fixed_a, fixed_b = _args(fa.get("fixed", "")), _args(fb.get("fixed", ""))
        if fixed_a == fixed_b:
            return "same"
        if not fixed_a or not fixed_b or not set(fixed_a) & set(fixed_b):
            return "compatible"  # the same tool, a different parameter fixed
        same_case = _args(fa.get("failed", "")) == _args(fb.get("failed", "")) and _error_kind(
            fa.get("error", "")
        ) == _error_kind(fb.get("error", ""))
        return "contradicts" if same_case else "unsure"
    if a.template in ("rule_unstable_fixed", "rule_unstable_failed"):
        same_tool = normal_text(fa.get("tool", "")).lower() == normal_text(fb.get("tool", "")).lower()
        return "same" if same_tool else "unrelated"
    return None


def _complementary(a: Claim, b: Claim) -> bool:
    """Advice for different cases: both scoped and the scopes differ, or a threshold on one side only."""
    if a.conditions == b.conditions:
        return False
    return bool(a.conditions and b.conditions) or a.has_threshold != b.has_threshold


def scoped_apart(a: Claim, b: Claim) -> str | None:
    """Why ``a`` and ``b`` apply under different conditions (advice for different cases), or ``None``.

    Both are scoped and the scopes differ (``数据量小于1万行时…`` / ``数据量大于1万行时…``,
    ``On Windows, …`` / ``On Linux, …``), or a threshold limits one side only. Such
    statements stand side by side, each with its condition: a newer one never
    supersedes (or merges into) the other, whatever a judge said.

    Example:
        >>> scoped_apart(claim_of("数据量小于1万行时用pandas。"), claim_of("数据量大于1万行时用spark。"))
        'different conditions'
        >>> scoped_apart(claim_of("用户偏好用Java。"), claim_of("用户偏好用Python。")) is None
        True
    """
    if not _complementary(a, b):
        return None
    return "different conditions" if a.conditions and b.conditions else "a threshold limits one of them only"


def _content(units: Sequence[Unit]) -> list[Unit]:
    return [u for u in units if u.text != NEG]


_EARLY = 0.25
"""Without a relational word to go by, a difference in the first quarter of a statement names another subject."""
_MIN_SHARED = 0.3
"""Two statements that share less than this share of the shorter one's units are about different things."""
_MAX_VALUE_HUNKS = 2
"""At most this many differing spans still read as "the same frame, other values" (more is a different statement)."""


_MAX_ALIGNMENT = 2**15
"""At most this many unit pairs (the product of the two statements' lengths) are aligned unit by unit.

The alignment (``difflib.SequenceMatcher``) is super-linear, cubic on repetitive text: two repetitive
4,000-character memories took 45 s to compare. Longer pairs skip steps 3–9 (they read as ``unsure`` there;
the linear steps and the frames still decide): a statement is a sentence or two, and the labelled pairs
align at most ~900 unit pairs, so no decision on a statement of ordinary length changes."""


_CHOICE_VERBS = frozenset({"use", "prefer", "choose", "pick", "用", "使", "采", "改"})
"""Verbs whose object is the prescription itself (``Use tabs …``): every other leading verb or preposition
(``Round amounts to …``, ``给项目…``, ``在测试环境…``) opens the subject, not the prescription."""


def _first_relational(units: Sequence[Unit]) -> int | None:
    """Where the prescription begins: the first relational word (a leading one only if it is a choice verb)."""
    for i, u in enumerate(units):
        if u.relational and (i > 0 or u.text in _CHOICE_VERBS):
            return i
    return None


def _subject_hunk(a: Sequence[Unit], b: Sequence[Unit], i1: int, j1: int, *, leading_verb: bool = False) -> bool:
    """Whether a difference at ``a[i1]`` / ``b[j1]`` comes before the prescription: another subject.

    ``leading_verb``: a statement whose only relational word is its leading verb ("keep the first record …")
    is a prescription from its second unit on (a marked change names its subject in what both share).
    """
    if i1 == 0 or j1 == 0:
        return True
    rel_a, rel_b = _first_relational(a), _first_relational(b)
    if leading_verb:
        rel_a = 0 if rel_a is None and a[0].relational else rel_a
        rel_b = 0 if rel_b is None and b[0].relational else rel_b
    if rel_a is not None and rel_b is not None:
        return i1 < rel_a and j1 < rel_b
    return i1 / len(a) < _EARLY and j1 / len(b) < _EARLY


def _free(a: Claim, b: Claim) -> Relation:
    """The rule on two statements' text (see the module docstring), then their frames."""
    if not a.units or not b.units:
        return "unsure"
    if a.key == b.key:
        return "same"
    if a.script != b.script and "none" not in (a.script, b.script):
        # a Chinese and an English statement: only their frames compare (the lexicon aligns the words)
        return "contradicts" if _frame_relation(a, b) == "contradicts" else "unsure"
    if _negation_flip(a.units, b.units):
        return "contradicts"
    found = _text(a, b)
    if found == "contradicts" and _frame_relation(a, b) == "unaligned":
        return "unsure"  # other values, but also other concepts around them: perhaps another case
    if found != "same" and _marked_change(a, b):
        return "contradicts"  # "… needs a bar chart" / "use a line chart in … instead": the user changed it
    if found in ("same", "contradicts") or _complementary(a, b):
        return found
    return "contradicts" if _frame_relation(a, b) == "contradicts" else found


_FLIP_SYNONYMS = frozenset({"include", "put", "add", "attach", "带", "加", "附", "放"})
"""Verbs that put something in (``include`` / ``put`` / ``带上`` / ``加上``): "always include X" and "never put X"
speak of one act."""
_FLIP_DROP = frozenset({"to", "in", "into", "on", "at", "在", "里", "中"})
"""Prepositions a negated sentence reorders ("不要在请求头里带X" / "请求头里要带上X")."""


def _flip_key(units: Sequence[Unit]) -> tuple[str, ...]:
    out: list[str] = []
    for u in units:
        if u.text == NEG or u.text in _FLIP_DROP:
            continue
        if u.text == "上" and out and out[-1] == "include":
            continue  # 带上 / 加上
        out.append("include" if u.text in _FLIP_SYNONYMS else u.text)
    return tuple(out)


def _negation_flip(ua: Sequence[Unit], ub: Sequence[Unit]) -> bool:
    """One side negated, the other not, and otherwise the same words: "always include X" / "never put X"."""
    neg_a, neg_b = sum(u.text == NEG for u in ua), sum(u.text == NEG for u in ub)
    if (neg_a == 0) == (neg_b == 0):
        return False
    key_a = _flip_key(ua)
    return len(key_a) >= 2 and key_a == _flip_key(ub)


def _values_differ(va: frozenset[Value], vb: frozenset[Value]) -> bool:
    """Every value of one side disagrees with every value of the other (a kind, or a stated detail, differs)."""
    return all(x[1] != y[1] or (x[2] and y[2] and x[2] != y[2]) for x in va for y in vb)


def _frame_relation(a: Claim, b: Claim) -> Literal["contradicts", "unaligned"] | None:
    """How two frames compare: ``"contradicts"``, ``"unaligned"`` or ``None`` (nothing to say).

    ``"contradicts"``: both name values of exactly one and the same class, none of
    them agree, neither is negated or limited by a threshold, and the concepts
    around the values are the same (one side may add only
    :data:`langchain_hindsight._lexicon.SOFT` ones). ``"unaligned"``: the same,
    except that other concepts differ too ("dark mode *in the editor*" / "light mode
    *in the terminal*", on both sides), so the other value may belong to another case.
    """
    fa, fb = a.frame, b.frame
    if fa.negated or fb.negated or a.has_threshold or b.has_threshold:
        return None
    if len(fa.classes) != 1 or fa.classes != fb.classes or not _values_differ(fa.values, fb.values):
        return None
    ca, cb = set(fa.concepts), set(fb.concepts)
    if not ca & cb or not (ca ^ cb) <= SOFT:
        both = bool(ca - cb - SOFT) and bool(cb - ca - SOFT)  # one side only adds: an elaboration ("four spaces")
        return "unaligned" if both else None
    return "contradicts"


def _text(a: Claim, b: Claim) -> Relation:
    """The rule on two statements' units (steps 3–9 of the module docstring)."""
    ua, ub = a.units, b.units
    if len(ua) * len(ub) > _MAX_ALIGNMENT:
        return "unsure"  # too long to align in bounded time: the rules cannot tell (callers keep both)
    matcher = SequenceMatcher(None, a.key, b.key, autojunk=False)
    blocks = [blk for blk in matcher.get_matching_blocks() if blk.size]
    if not blocks:
        return "unrelated"
    hunks = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    substantive = [h for h in hunks if _content(ua[h[1] : h[2]]) or _content(ub[h[3] : h[4]])]
    matched = sum(blk.size for blk in blocks)
    # 1. one side only adds: an elaboration, unless what it adds is a negation ("…而不是李经理", "never …")
    if all(i1 == i2 for _t, i1, i2, _j1, _j2 in hunks) or all(j1 == j2 for _t, _i1, _i2, j1, j2 in hunks):
        added = [u for _t, i1, i2, j1, j2 in hunks for u in (*ua[i1:i2], *ub[j1:j2])]
        if any(u.text == NEG for u in added):
            return "contradicts"
        return "compatible"
    if matched / min(len(ua), len(ub)) < _MIN_SHARED:
        return "compatible" if _complementary(a, b) else "unrelated"
    # 2. a difference at the start, or before the prescription, names another subject
    for _tag, i1, i2, j1, j2 in substantive:
        starts_relational = (i2 > i1 and ua[i1].relational) or (j2 > j1 and ub[j1].relational)
        if (i1 == 0 or j1 == 0 or not starts_relational) and _subject_hunk(ua, ub, i1, j1):
            return "compatible" if _complementary(a, b) else "unrelated"
    # 3. advice for different cases
    if _complementary(a, b):
        return "compatible"
    # 4. the common frame must share an aspect: a relational word, or a shared two-unit block after the opening
    frame = [ua[blk.a + k] for blk in blocks for k in range(blk.size)]
    opening = blocks[0] if blocks[0].a == 0 and blocks[0].b == 0 else None
    if not any(u.relational for u in frame) and not any(blk.size >= 2 for blk in blocks if blk is not opening):
        return "unrelated"  # also with one number for another: "lesson 1" / "lesson 2" are two items, not a change
    # 5. a negation on one side only, of something the other says: "do X" / "never do X"
    targets_a, targets_b = _negated(ua), _negated(ub)
    if bool(targets_a) != bool(targets_b) and (targets_a & set(b.key) or targets_b & set(a.key)):
        return "contradicts"
    # 6. the same frame with other values: each differing span sits in the prescription, after a relational
    #    word or between shared blocks ("用户偏好用[Java]写…", "周报[按最近7天…]统计[销售额]")
    if _late_number_swap(ua, ub, substantive) and a.conditions == b.conditions:
        return "contradicts"  # the same statement with another number in its prescription ("最多调用[100]次")
    if len(substantive) > _MAX_VALUE_HUNKS or not any(i1 < i2 and j1 < j2 for _t, i1, i2, j1, j2 in substantive):
        return "unsure"
    if len(substantive) > 1 and any(_added_aspect(ua[i1:i2], ub[j1:j2]) for _t, i1, i2, j1, j2 in substantive):
        return "unsure"  # one side adds an aspect the other lacks ("在周五下午"): not the same prescription changed
    swapped = [h for h in substantive if _values(ua[h[1] : h[2]]) and _values(ub[h[3] : h[4]])]
    if len(swapped) > 1 and _frame_relation(a, b) != "contradicts":
        return "unsure"  # two values differ ("用[Python]写[脚本]" / "用[PyCharm]写[代码]"): another case, perhaps
    if _first_relational(ua) is None and _first_relational(ub) is None:
        return "unsure"  # no word says where the prescription begins: any span may be the subject
    first_relational = _first_relational(ua)
    first_relational = len(ua) if first_relational is None else first_relational
    for _tag, i1, i2, j1, j2 in substantive:
        if i1 < i2 and j1 < j2 and not (_values(ua[i1:i2]) and _values(ub[j1:j2])):
            return "unsure"  # a function word for another ("to" / "through"): no value differs
        rel_a = {u.text for u in ua[i1:i2] if u.relational}
        rel_b = {u.text for u in ub[j1:j2] if u.relational}
        if rel_a and rel_b and rel_a != rel_b:
            return "unsure"  # another relation ("covers …" / "goes to …"): another aspect, perhaps
        in_prescription = i1 > first_relational or (i1 < i2 and ua[i1].relational) or (j1 < j2 and ub[j1].relational)
        if not in_prescription and not _between_shared(blocks, i1, i2):
            return "unsure"
    if a.frame.classes and b.frame.classes and not a.frame.classes & b.frame.classes:
        return "unsure"  # values of different kinds ("按门店拆分" / "按最近7天…统计"): other aspects
    if a.conditions != b.conditions:
        return "unsure"  # scoped on one side only ("… for scripting" / "… as the IDE"): perhaps another case
    return "contradicts"


_MAX_CHANGED = 4
"""A marked change replaces one value of at most this many units ("bar" → "line", 柱状 → 折线): more is more."""
_MIN_KEPT = 0.5
"""A marked change keeps at least this share of each side's content units (its subject and the slot it changes)."""


def _replaced(units: Sequence[Unit]) -> tuple[list[int], set[str]]:
    """The content units (indices: no negation, relational or case word) and what a negation names as the old value.

    "use a line chart instead of a bar chart": content ``line chart``, old value ``{bar, chart}``;
    "不要用柱状图了，用折线图": content ``折线图``, old value ``{柱, 状, 图}``.
    """
    content: list[int] = []
    old: set[str] = set()
    i = 0
    while i < len(units):
        if units[i].text != NEG:
            if not units[i].relational and units[i].text not in _CASE_WORDS:
                content.append(i)
            i += 1
            continue
        i += 1
        while i < len(units) and units[i].relational:
            i += 1
        while i < len(units) and units[i].text != NEG and not units[i].relational:
            old.add(units[i].text)
            i += 1
    return content, old


def _marked_change(a: Claim, b: Claim) -> bool:
    """Whether one of two statements says, with a change marker, that it replaces the other's value.

    At least one side is marked (:data:`langchain_hindsight._statements.CHANGE_MARKERS`); read without the
    markers, both are in one script, at most one is negated (and then what it negates is what the other
    says: "use a line chart instead of *a bar chart*"), their cases agree (a case on one side that only
    restates the other's words — "… for the monthly report" / "the monthly report needs …" — is the subject,
    not a case), and their content units differ in exactly one run on each side — at most
    :data:`_MAX_CHANGED` units, not before the prescription (another subject: "customer Acme" / "customer Beta")
    — while each side keeps :data:`_MIN_KEPT` of its content and two units or more in common: "the monthly
    report needs a bar chart" / "use a line chart in the monthly report instead".
    """
    if not (a.marked or b.marked) or a.script != b.script:
        return False
    ua, ub = a.plain_units, b.plain_units
    (ca, old_a), (cb, old_b) = _replaced(ua), _replaced(ub)
    if any(u.text == NEG for u in ua) and any(u.text == NEG for u in ub):
        return False
    ka, kb = [ua[i].text for i in ca], [ub[j].text for j in cb]
    if not old_a <= set(kb) or not old_b <= set(ka):
        return False  # the old value it names is not what the other says: a change of something else
    if a.has_threshold != b.has_threshold or _own_cases(a, kb) != _own_cases(b, ka):
        return False  # advice for another case ("数据量大于1万行时改用B方法"): both stand
    shared = set(ka) & set(kb)
    if len(shared) < 2 or any(len(shared) < _MIN_KEPT * len(set(k)) for k in (ka, kb)):
        return False
    only_a = [x for x, t in enumerate(ka) if t not in shared]
    only_b = [y for y, t in enumerate(kb) if t not in shared]
    for run, units, content in ((only_a, ua, ca), (only_b, ub, cb)):
        if not run or len(run) > _MAX_CHANGED or run[-1] - run[0] != len(run) - 1:
            return False  # nothing replaced on one side, or differences in two places (another subject and value)
        if any(u.relational or u.text == NEG for u in units[content[run[0]] : content[run[-1]]]):
            return False  # a relational word inside: two slots ("[收入]用[柱状]图" / "[成本]用[折线]图")
    if not _one_slot((ua, ca, ka, only_a), (ub, cb, kb, only_b)):
        return False
    return not _subject_hunk(ua, ub, ca[only_a[0]], cb[only_b[0]], leading_verb=True)


_Side = tuple[Sequence[Unit], list[int], list[str], list[int]]
"""One side of a marked change: its units, the indices of its content units, their texts, the replaced run."""


def _one_slot(a: _Side, b: _Side) -> bool:
    """Whether the two replaced runs fill one slot.

    The same word follows both ("[bar] chart" / "[line] chart", "[柱状]图" / "[折线]图"), or the same word and
    the same relational words precede both ("report as [a PDF]" / "report as [an Excel file]"). "covers [the
    calendar month]" / "needs [a line chart]" are two aspects.
    """
    (ua, ca, ka, ra), (ub, cb, kb, rb) = a, b
    after_a = ka[ra[-1] + 1] if ra[-1] + 1 < len(ka) else None
    after_b = kb[rb[-1] + 1] if rb[-1] + 1 < len(kb) else None
    if after_a is not None and after_a == after_b:
        return True
    if ra[0] == 0 or rb[0] == 0 or ka[ra[0] - 1] != kb[rb[0] - 1]:
        return False
    rel_a = {u.text for u in ua[ca[ra[0] - 1] : ca[ra[0]]] if u.relational}
    rel_b = {u.text for u in ub[cb[rb[0] - 1] : cb[rb[0]]] if u.relational}
    return bool(rel_a) and rel_a == rel_b


def _own_cases(claim: Claim, other: Sequence[str]) -> frozenset[frozenset[str]]:
    """``claim``'s cases except those that only restate words of ``other`` (its subject, not another case)."""
    words = set(other)
    return frozenset(c for c in claim.conditions if not {w for w in c if w not in _CASE_WORDS} <= words)


_CASE_WORDS = frozenset({"for", "when", "if", "on", "in", "时", "的", "候", "里", "中"})
"""Words that only open a case or a place ("for …", "when …", "…时", "…里"): not what a change replaces, and a
case restates the other's subject when the rest of it does."""


def _late_number_swap(ua: Sequence[Unit], ub: Sequence[Unit], hunks: Sequence[tuple[str, int, int, int, int]]) -> bool:
    """One number for another in the second half, all else equal ("每天最多调用接口[100]次" / "[200]次")."""
    if len(hunks) != 1:
        return False
    _tag, i1, i2, j1, j2 = hunks[0]
    numbers = i2 - i1 == 1 and j2 - j1 == 1 and ua[i1].text.isdigit() and ub[j1].text.isdigit()
    return numbers and i1 / len(ua) >= 0.5 and j1 / len(ub) >= 0.5


_CONJUNCTIONS = frozenset({"和", "与", "跟", "and"})


def _added_aspect(span_a: Sequence[Unit], span_b: Sequence[Unit]) -> bool:
    """A span on one side only that opens with its own relational word and value (``在周五下午``, ``on Friday``)."""
    if bool(span_a) == bool(span_b):
        return False
    span = span_a or span_b
    return span[0].relational and span[0].text not in _CONJUNCTIONS and bool(_values(span))


def _values(units: Sequence[Unit]) -> list[Unit]:
    """The units of a span that can be a value: not a negation, not a relational word."""
    return [u for u in units if u.text != NEG and not u.relational]


def _negated(units: Sequence[Unit]) -> set[str]:
    """What each negation in ``units`` applies to: the first content unit after it that is not a relational word."""
    out: set[str] = set()
    for i, u in enumerate(units):
        if u.text != NEG:
            continue
        for v in units[i + 1 : i + 4]:
            if v.text != NEG and not v.relational:
                out.add(v.text)
                break
    return out


def _between_shared(blocks: Sequence[Match], i1: int, i2: int) -> bool:
    """Whether a shared block of two units or more (not the opening) is next to ``[i1, i2)``: a shared verb."""
    before = next((blk for blk in blocks if blk.a + blk.size == i1), None)
    after = next((blk for blk in blocks if blk.a == i2), None)
    return (before is not None and before.a > 0 and before.size >= 2) or (after is not None and after.size >= 2)
