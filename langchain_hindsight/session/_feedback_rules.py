"""The rules that tell a correction from a question, a request or an acknowledgement (zh and en).

A correction asserts that something in the previous answer should be different:
"不对，周报只统计本周一到周日", "收件人错了，应该是张经理", "No, the week starts on Monday",
"I said last week, not this week". The hard part is everything that *looks* like one:
a question that opens with the same characters (不对外公开的门店数据也要统计进周报吗？,
错了的订单要从周报里剔除吗？), a word that merely begins with them (不对称, 错误率, 有误差,
Nobody, Nothing, Wrongly, Wrong-way), a request for more (Actually, could you also add a
chart?), an acknowledgement (No problem, 不错).

The rules, in order (the first that fires names the result, see :attr:`FeedbackDetection.rule`):

1. ``opener:<verdict>`` — a verdict opens the turn (:data:`CORRECTION_PATTERNS`, after polite
   fillers such as 嗯/呃/hmm/well/sorry) **and is a word of its own**: punctuation, a space or the
   end follows it (不对， / 错了。 / No, / Wrong —; after an English verdict a plain space does not
   count: "No need…", "Wrong answers…"), never more letters (不对外, 错了的, Nobody, Wrong-way).
   "No, thanks" / "Nope, that's all" are acknowledgements; "不对吗？" is a question; a bare "No."
   is left undecided (``bare-no``, unsure: it may answer a question the agent asked).
2. ``verdict-clause`` — a clause of its own says that a part of the answer is wrong
   (日期不对 / 收件人错了 / 结果有误 / The total is wrong / You missed the Shenzhen store),
   unless the clause asks (是不是有错？ / Is the total wrong?).
3. ``redirect`` — the user restates what they asked for (我说的是上周 / 我要的是按门店拆分 /
   不是说好… / I said… / I meant… / That's not what I asked), or replaces a value
   (不是李经理，是张经理 / It's Zhang, not Li / Not Tuesday, Wednesday).
4. ``contrast`` and ``should-be`` — a statement that names the right value against the wrong one
   (…而不是… / …, not … / … instead / 应该用含税价 / It should be grouped by store), when it is
   not a question or a request for more ("also", 另外, 再, 顺便). Weaker evidence: the result
   says ``certain=False`` and a configured model may overrule it.
5. ``softener`` — Actually / 其实 followed by an instruction or by a contrast
   (Actually, use gbk / 其实不是周二，是周三); also ``certain=False``.
6. ``restated-value`` (context) — a short statement that repeats words of the previous run's task
   with another number or name ("发给张经理" after "把周报发给李经理"); ``certain=False``.

Everything else is not a correction; its :attr:`FeedbackDetection.kind` (question, request,
acknowledgement, other) is for the logs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from langchain_hindsight.errors import ConfigurationError

__all__ = [
    "ACK_PATTERNS",
    "CORRECTION_PATTERNS",
    "REQUEST_PATTERNS",
    "FeedbackDetection",
    "FeedbackKind",
    "classify_turn",
    "cleaned_statement",
    "compile_openers",
    "may_restate",
]

FeedbackKind = Literal["correction", "question", "request", "acknowledgement", "other"]
"""What a human turn is, relative to the previous run of its thread."""

CORRECTION_PATTERNS: tuple[str, ...] = (
    # Chinese verdicts. Each must be followed by a boundary (punctuation, space, end, or a particle
    # such as 啊/吧), so 不对外…, 错了的…, 有误差…, 不正确地… never match.
    r"不对(?:不对)?",
    r"不是这样(?:的|子)?",
    r"不是的",
    r"(?:你|这个|这|那)?(?:搞|弄|算|写|记|看|理解|说|填|发|查)?错(?:了|啦|咯)(?:错了)?",
    r"你错了",
    r"不正确",
    r"有误",
    r"不准确",
    r"不行",
    # English verdicts (the boundary rule keeps "Nobody", "Nothing", "Wrongly", "Wrong-way" out).
    r"no(?:\s*,?\s*no)*(?!\.?\s*\d)",  # not "No. 5 store" / "No.3门店"
    r"nope",
    r"nah",
    r"(?:that|this|it)(?:'s| is| was) (?:wrong|incorrect|not right|not correct|not quite right|off)",
    r"(?:that|this|it)(?:'s| is| was)(?:n't| not) (?:right|correct|what i (?:asked|meant|wanted)(?: for)?)",
    r"wrong",
    r"incorrect",
    r"not (?:quite|right|correct|exactly)",
    r"you(?:'ve| have)? got (?:it|that|this) wrong",
)
"""Verdicts (regular expressions, case-insensitive) that open a correcting turn.

Matched at the start of the turn after polite fillers; a match counts only when a
boundary follows it (see the module docstring). Overridable with
``SessionConfig(correction_patterns=...)``."""

ACK_PATTERNS: tuple[str, ...] = (
    r"(?:no|nope|nah)\W*(?:thanks?|thank you|problem|worries|need to worry|rush|hurry|"
    r"that'?s (?:all|it|everything|fine)|nothing (?:else|to add|more)|i'?m (?:good|fine)|all good|more|further)",
    r"不对的?话?就算了",
    r"不行就算了",
)
"""Turns that open like a verdict but close the conversation ("No, thanks", "Nope, that's all")."""

REQUEST_PATTERNS: tuple[str, ...] = (
    r"\balso\b",
    r"\bas well\b",
    r"\badditionally\b",
    r"\bone more thing\b",
    r"\b(?:could|can|would|will) you\b",
    r"另外",
    r"顺便",
    r"再(?:加|把|帮|给|做|算|出|列|补)",
    r"还(?:要|想|需要|得)",
    r"也(?:要|帮|加|算|列|做)",
    r"能不能|可不可以|可以.{0,20}吗",
)
"""Markers of a request for more: with one, a contrast or a "should be" is not taken for a correction."""

_FILLERS = re.compile(
    r"^(?:[\s\"'“”‘’「」『』*]|(?:嗯+|呃+|额+|啊+|哦+|噢+|唉+|诶+|欸+|等等|等一下|稍等)[，,、\s!！。.…~～]*|"
    r"(?:hmm+|um+|uh+|oh+|oops|well|sorry|wait|hold on|hang on|ah+)\b[,，!.…\s]*)*",
    re.IGNORECASE,
)
_BOUNDARY = re.compile(r"(?:[啊呀吧哦啦呢嘛]*)(?=$|[\s,，。.!！:：;；、—–…~～)）\]】]|-\s|\s-)")
"""After a Chinese verdict: end, punctuation, a space, or a spaced dash (never more characters)."""
_BARE_NO = re.compile(r"^(?:no|nope|nah)\W*$", re.IGNORECASE)
_LATIN_BOUNDARY = re.compile(r"(?=\s*(?:$|[,，。.!！:：;；…)—–]|-(?![\w-])))")
"""After an English verdict: end or punctuation, never a plain space ("No need…", "Wrong answers…") or a
hyphenated compound ("Wrong-way")."""
_NO_QUESTION = re.compile(r"^[吗么嘛]")
_PUNCT = re.compile(r"^[\s,，。.!！:：;；、—–…~～\-]+")
_CLAUSES = re.compile(r"[，,。.!！;；：:\n—–]+|\s+-\s+|…+")
_QUESTION_END = re.compile(r"[?？]\s*$|(?:吗|呢|么|嘛)[\s。.!！~～]*$")
_ZH_ASKS = re.compile(r"吗|呢|是不是|是否|有没有|对不对|哪|什么|为什么|怎么|多少|几[个次天]|难道")
_EN_ASKS = re.compile(
    r"^(?:is|are|was|were|do|does|did|should|shall|could|can|would|will|may|might|what|why|how|when|where|which|who)\b",
    re.IGNORECASE,
)
_ZH_VERDICT_CLAUSE = re.compile(
    r"^.{0,14}?(?:不对|(?:搞|弄|算|写|记|看|理解|说|填|发|查|翻译|译)?错(?:了|啦)|(?:搞|弄|算|写|发|填|选|用|看|记)错[^，,。？?]{1,4}了|有误|不正确|不准确|漏掉?了|没(?:去掉|算|统计|包含|加上?)[^，,。]{0,8})"
    r"(?:[啊呀吧哦啦]*)$"
)
_ZH_VERDICT_WORD = re.compile(r"不对|错|有误|不正确|不准确|漏|没(?:去掉|算|统计|包含|加)")
_EN_VERDICT_CLAUSE = re.compile(
    r"^(?:the|this|that|these|those|your|its|my|our|all the)?\s*[\w\s'./-]{0,40}?\b(?:is|are|was|were|looks?|seems?)\s+"
    r"(?:wrong|incorrect|off|not right|not correct|missing|mixed up|swapped)\b"
    r"|^you(?:'ve| have)?\s+(?:missed|forgot|left out|dropped|skipped|mixed up|swapped|used the wrong|got the wrong)\b"
    r"|^(?:you(?:'ve| have)? )?mis(?:read|understood|spelled|spelt|typed|counted|calculated|translated|labell?ed)\b"
    r"|\byou(?:'ve| have)? got (?:it|that|this|these|those|the [\w ]{1,20}?) wrong\b"
    r"|^(?:the )?(?:numbers|figures|totals?|dates?) (?:don'?t|do not) (?:add up|match)\b"
    r"|^(?:that'?s|this is|it'?s) the wrong\b",
    re.IGNORECASE,
)
_EN_WRONG_THING = re.compile(
    r"^(?:the |that'?s the )?wrong (?!(?:or|and|to|in|on|at|for|with|of|is|are|was|were|be|not|way|answers?)\b)"
    r"[a-z][\w-]*(?: (?!(?:or|and|to|in|on|at|for|with|of|is|are|was|were)\b)[a-z][\w-]*)?(?: again)?$",
    re.IGNORECASE,
)
"""A clause that is only "Wrong supplier" / "Wrong format" / "wrong address" (not in a question)."""
_EN_CHECKS = re.compile(r"\b(?:whether|if|check|verify|see|find|make sure|in case|let me know|tell me)\b", re.I)
_ZH_REDIRECT = re.compile(
    r"^(?:我(?:说|要|指|问|想要)的是|我的意思是|我是说|我是要|不是说(?:好|了|过)|我不是说|我不是要|你理解错|说好的是|我刚才说的是)"
    r"|^不是(?!很|太|特别|所有|每|都|一定|说|吗|吧|的|这样)[^，,。？?]{1,20}[，,]\s*(?:而)?是"
    r"|^不是这[个些次]"
)
_EN_REDIRECT = re.compile(
    r"^(?:i (?:said|meant|asked (?:for|about)|wanted|was asking (?:for|about))\b"
    r"|what i (?:meant|asked for|wanted|need) (?:was|is)\b|(?:didn'?t|did not) i (?:say|ask|tell you|mention|specify)\b"
    r"|i told you\b|as i said\b)"
    r"|^(?:it|that|this|they|he|she)(?:'s| is| was| are|'re) [\w .'-]{1,30}, not\b"
    r"|^not (?!bad|sure|yet|now|really|much|a problem|at all|only|just|necessarily|exactly|quite|right|correct|"
    r"all|every|many|enough|too|so|that|very|always|one of)"
    r"[\w .'-]{1,25}[,，;] ?(?:but )?\w",
    re.IGNORECASE,
)
_CONTRAST = re.compile(
    r"而不是|而非|不是[^，,。？?]{1,20}[，,]\s*而?是|[，,]\s*不是"
    r"|(?:^|[^\w])rather than\b|\binstead\b|,\s*not\b|\bnot\s+\w+[\w ]{0,20}\s+but\b",
    re.IGNORECASE,
)
_ZH_SHOULD = re.compile(
    r"^(?:应该|应当|要|得|需要)(?:是|用|按|只|从|改成|改为|放在|发给|写成|以|统计|包含|剔除|去掉|扣掉|排除)"
)
_EN_SHOULD = re.compile(
    r"^(?:it|this|that|they|the [\w -]{1,30}?) (?:should|must|needs? to|has to|have to) "
    r"(?:be|have|use|start|end|only|include|exclude|cover|go)\b"
    r"|^(?:use|exclude|include|drop|remove|start|group|sort|send|round|count) .{1,60}\binstead\b",
    re.IGNORECASE,
)
_SOFTENER = re.compile(r"^(?:actually|in fact|其实|实际上|事实上)[\s,，:：]*", re.IGNORECASE)
_EN_IMPERATIVE = re.compile(
    r"^(?:no[,.]?\s*)?(?:use|exclude|include|drop|remove|start|group|sort|send|round|count|change|switch|make it|"
    r"put|set|keep|skip|filter|only)\b",
    re.IGNORECASE,
)
_ZH_IMPERATIVE = re.compile(r"^(?:不是|应该|应当|要用|要按|要先|只统计|只要|改成|换成|是)")
_ACK = re.compile(
    r"^(?:好的?|好滴|行|谢谢|多谢|感谢|辛苦了|可以了?|没问题|很好|挺好|不错|收到|明白|知道了|完美|对的?|正确|就这样|不用了|"
    r"ok(?:ay)?|thanks?|thank you|thx|great|good|nice|perfect|cool|fine|yes|yep|yeah|right|correct|got it|"
    r"looks? (?:good|great|fine)|that'?s (?:great|good|fine|perfect|correct|right)|no problem|no worries|"
    r"nothing else|all good)\b",
    re.IGNORECASE,
)
_ACK_BODY = re.compile(
    r"^(?:这样就?(?:挺好|很好|可以|行)的?|that looks (?:great|good|fine)|looks? (?:good|great|fine))", re.IGNORECASE
)
_NUMBERISH = re.compile(
    r"\d+(?:\.\d+)?|(?<=[a-z0-9,] )[A-Z][a-z]+|[张王李赵刘陈杨黄周吴][经总老]理?|周[一二三四五六日天]"
)
_CHANGE = re.compile(
    r"改成|改为|换成|换到|改到|改用|换用|应该|而不是|\binstead\b|\bchange\b|\bswitch\b|\bshould be\b", re.I
)
_CJK = re.compile(r"[\u4e00-\u9fff]")
_EN_WORD = re.compile(r"[a-z][a-z0-9'-]{2,}", re.IGNORECASE)
_STOP = frozenset(
    r"the and for with this that you your from into all are was were will not but can could please also then".split()  # noqa: SIM905
)
_SCAN_CHARS = 600
"""The rules read at most this many characters of a turn (its head; the question mark is read at its end),
so a pasted document costs no more than a sentence. The corrected statement keeps the whole turn."""
_MAX_CONTEXT_TURN = 40
"""A context-only correction ("发给张经理" after "把周报发给李经理") must be at most this many characters."""


@dataclass(frozen=True, slots=True)
class FeedbackDetection:
    """What a human turn is, relative to the previous run of its thread.

    Attributes:
        is_correction: The turn says something in the previous answer should be different.
        kind: ``"correction"``, ``"question"``, ``"request"``, ``"acknowledgement"`` or ``"other"``.
        rule: What decided it, for the logs and the journal (``"opener:不对"``, ``"verdict-clause"``,
            ``"question"``, ``"model:correction"``…).
        correction: The corrected statement in the user's words, cleaned of the opening verdict
            ("周报只统计本周一到周日"); ``None`` when the turn is not a correction or is only a
            verdict ("不对", "错了。").
        certain: ``False`` when only weak evidence decided it (a contrast, a softener, the previous
            task); a configured feedback model is asked then.
    """

    is_correction: bool
    kind: FeedbackKind
    rule: str
    correction: str | None = None
    certain: bool = True


def compile_openers(patterns: Sequence[str]) -> list[tuple[str, re.Pattern[str]]]:
    """Each verdict pattern compiled (case-insensitive), paired with its source text.

    Raises:
        ConfigurationError: a pattern is not a string or not a valid regular expression.
    """
    out: list[tuple[str, re.Pattern[str]]] = []
    for p in patterns:
        if not isinstance(p, str) or not p:
            raise ConfigurationError(f"correction_patterns must be non-empty strings, got {p!r}")
        try:
            out.append((p, re.compile(p, re.IGNORECASE)))
        except re.error as e:
            raise ConfigurationError(f"correction pattern {p!r} is not a valid regular expression: {e}") from e
    return out


_ACKS = compile_openers(ACK_PATTERNS)
_REQUESTS = [r for _, r in compile_openers(REQUEST_PATTERNS)]


def _statement(text: str) -> str | None:
    """``text`` without leading punctuation, first letter upper-cased when Latin; ``None`` if nothing is left."""
    body = _PUNCT.sub("", text).strip()
    if not body or not re.search(r"\w", body):
        return None
    return body[0].upper() + body[1:] if body[0].isascii() else body


def _asks(text: str) -> bool:
    return bool(_QUESTION_END.search(text))


def _requests(text: str) -> bool:
    return any(r.search(text) for r in _REQUESTS)


def _opener(head: str, openers: Sequence[tuple[str, re.Pattern[str]]]) -> tuple[str, str] | None:
    """``(verdict, rest)`` for the longest verdict that opens ``head`` as a word of its own."""
    best: tuple[str, int] | None = None
    for _source, regex in openers:
        m = regex.match(head)
        if m is None or not m.group(0):
            continue
        end = m.end()
        b = (_LATIN_BOUNDARY if m.group(0).isascii() else _BOUNDARY).match(head, end)
        if b is None or _NO_QUESTION.match(head[b.end() :]):
            continue
        if best is None or b.end() > best[1]:
            best = (m.group(0).lower(), b.end())
    if best is None:
        return None
    return best[0], head[best[1] :]


def _en_verdict(clause: str, asks: bool) -> bool:
    if _EN_VERDICT_CLAUSE.search(clause) and not (_EN_ASKS.match(clause) or _EN_CHECKS.search(clause)):
        return True
    return not asks and _EN_WRONG_THING.match(clause) is not None


def _verdict_clause(text: str, asks: bool) -> bool:
    for clause in _CLAUSES.split(text):
        clause = clause.strip()
        if not clause:
            continue
        if _CJK.search(clause):
            if _ZH_VERDICT_CLAUSE.match(clause) and not _ZH_ASKS.search(clause):
                return True
        elif _en_verdict(clause, asks):
            return True
    return False


def _terms(text: str) -> set[str]:
    """Content terms of a text: CJK bigrams and Latin words (lower-cased, no stop words)."""
    terms = {w.lower() for w in _EN_WORD.findall(text)} - _STOP
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        terms.update(run[i : i + 2] for i in range(len(run) - 1))
    return terms


def _restates(turn: str, previous_task: str | None) -> bool:
    """A short statement sharing words with the previous task but naming another value, or a change of it."""
    if not previous_task or len(turn) > _MAX_CONTEXT_TURN:
        return False
    if not (_terms(turn) & _terms(previous_task)):
        return False
    if _CHANGE.search(turn):
        return True
    mine = set(_NUMBERISH.findall(turn))
    theirs = set(_NUMBERISH.findall(previous_task))
    return bool(mine - theirs) and bool(theirs - mine)


def may_restate(turn: str) -> bool:
    """Whether the previous task could make ``turn`` a ``restated-value`` correction (it is short and names a value).

    The session looks the previous run up only for such a turn, a correction, or (with a model) an unsure one.
    """
    text = " ".join(turn.split())
    head = _FILLERS.sub("", text, count=1).strip() or text
    soft = _SOFTENER.match(head)
    body = head[soft.end() :] if soft else head
    return len(body) <= _MAX_CONTEXT_TURN and bool(_CHANGE.search(body) or _NUMBERISH.search(body))


def _other_kind(text: str) -> tuple[FeedbackKind, str]:
    if _requests(text):
        return "request", "request"
    if _asks(text) or (not _CJK.search(text) and _EN_ASKS.match(text)):
        return "question", "question"
    if _ACK.match(text) or _ACK_BODY.match(text) or any(r.match(text) for _, r in _ACKS):
        return "acknowledgement", "acknowledgement"
    return "other", "no-rule"


_DEFAULT_OPENERS = compile_openers(CORRECTION_PATTERNS)


def cleaned_statement(turn: str) -> str | None:
    """``turn`` without fillers, a softener and an opening verdict: the statement a correction makes.

    Example:
        >>> cleaned_statement("嗯，不对，应该按自然月统计"), cleaned_statement("Actually no, exclude internal orders")
        ('应该按自然月统计', 'Exclude internal orders')
        >>> cleaned_statement("错了。") is None
        True
    """
    text = " ".join(turn.split())
    head = _FILLERS.sub("", text, count=1).strip() or text
    soft = _SOFTENER.match(head)
    body = head[soft.end() :] if soft else head
    found = _opener(body, _DEFAULT_OPENERS)
    return _statement(found[1] if found else body)


def classify_turn(
    turn: str, openers: Sequence[tuple[str, re.Pattern[str]]], *, previous_task: str | None = None
) -> FeedbackDetection:
    """Classify one human turn by the rules of this module (see the module docstring).

    Args:
        turn: The human turn.
        openers: Compiled verdict patterns (:func:`compile_openers` of :data:`CORRECTION_PATTERNS`).
        previous_task: The task of the run the turn answers, when known (the context rule needs it).
    """
    text = " ".join(turn.split()) if isinstance(turn, str) else ""
    if not text:
        return FeedbackDetection(False, "other", "empty")
    head = _FILLERS.sub("", text[:_SCAN_CHARS], count=1).lstrip() or text[:_SCAN_CHARS]
    full = head + text[_SCAN_CHARS:]  # the statement keeps the whole turn; the rules read ``head``
    asks = _asks(head if len(text) <= _SCAN_CHARS else text[-_SCAN_CHARS:])
    soft = _SOFTENER.match(head)
    body = head[soft.end() :] if soft else head
    found = _opener(head, openers) or (_opener(body, openers) if soft else None)
    if found is not None:
        verdict, rest = found
        if any(r.match(head) or r.match(body) for _, r in _ACKS):
            return FeedbackDetection(False, "acknowledgement", "acknowledgement")
        if not _statement(rest) and _BARE_NO.match(head):
            # A bare "No." may answer a question the agent asked as well as judge its answer.
            return FeedbackDetection(False, "other", "bare-no", certain=False)
        return FeedbackDetection(True, "correction", f"opener:{verdict}", _statement(full[len(head) - len(rest) :]))
    whole = _statement(full[len(head) - len(body) :])  # the turn without fillers and a softener
    if _verdict_clause(head, asks):
        return FeedbackDetection(True, "correction", "verdict-clause", _statement(full))
    if _ZH_REDIRECT.search(body) or _EN_REDIRECT.search(body):
        return FeedbackDetection(True, "correction", "redirect", whole)
    if asks or _requests(body) or _ACK.match(body) or _ACK_BODY.match(body):
        kind, rule = _other_kind(body)
        return FeedbackDetection(False, kind, rule)
    if _CONTRAST.search(body):
        return FeedbackDetection(True, "correction", "contrast", whole, certain=False)
    if _ZH_SHOULD.match(body) or _EN_SHOULD.search(body):
        return FeedbackDetection(True, "correction", "should-be", whole, certain=False)
    if soft and (_EN_IMPERATIVE.match(body) or _ZH_IMPERATIVE.match(body)):
        return FeedbackDetection(True, "correction", "softener", whole, certain=False)
    if _restates(body, previous_task):
        return FeedbackDetection(True, "correction", "restated-value", whole, certain=False)
    kind, rule = _other_kind(body)
    return FeedbackDetection(False, kind, rule, certain=not soft and not _ZH_VERDICT_WORD.search(body))
