"""What the agent did with the memories it was served: used, set aside, or no sign either way.

Being shown a memory is not using it. A run's outcome credits or debits a served
memory only when the run *used* it (:mod:`~langchain_hindsight.session._credit`):

* **followed** — its tool calls or its text carry the memory's prescription: a
  distinctive value of ``context.parameters`` or of a ``key=value`` its statement writes
  (``read_csv 需要指定 encoding='gbk'``), a tool of ``context.tools_used``, or most of the
  memory's own statement;
* **said applied** — the agent referred to it as what it went by: ``按第2条经验``,
  ``根据经验1``, ``following experience 1``, ``per experience 2``.

A memory the agent said does not apply — the block asks it to (``如果经验不适用，请忽略并说明原因``) —
is **set aside**: neither credit nor blame, and the agent's sentence (its reason) is journaled
as retrieval feedback. The statement is found by a number (``第2条经验不适用``, ``经验1与本任务无关``,
``Experience 2 doesn't apply because…``; a number beyond the block names nothing), by a word for
all of them (``以上经验都不适用``, ``none of the experiences apply``), or by a clause that quotes
or restates the memory (``"周报只统计本周一到周日"与发邮件无关``) next to a word of not applying. A set-aside
statement wins over any sign of use of the same memory (an agent that repeats a memory's words to reject
it did not follow it). Anything else is ``unclear``: no evidence of use, so no credit and no debit.

Decided on purpose:

* a *generic* parameter value (``utf-8``, ``true``, ``json``, ``0``…) or a bare number in the
  text is never evidence: an agent passes ``encoding="utf-8"`` whether or not it read the memory;
* an "avoid" lesson (tag ``avoid``) names what not to do: a run that repeats its call did not follow it;
* a word of not applying with nothing that names a memory (``该优惠券不适用于本订单``) sets nothing aside;
* the numbers are the block's: ``第N条`` is the N-th served memory (journal rank N); the numbers
  work across languages (a Chinese block, an English answer), a restatement only within one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from langchain_hindsight.runs import MemoryUse, RunRecord, UseVerdict
from langchain_hindsight.session._verdict import claim_of
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.types import MemoryUnit, Trajectory

__all__ = ["agent_text", "judge_run", "judge_uses", "statement_refs"]

_EVIDENCE_CHARS = 300
_STATEMENT_SHARE = 0.6
"""Share of a memory's statement tokens the agent's text must carry for the statement to count as followed."""
_QUOTE_SHARE = 0.5
"""Share of a memory's tokens a clause must carry to name it without a number (a restatement)."""
_REFERRED_SHARE = 0.3
"""... or, when the clause also says ``经验``/``experience``, this share (and the best of the memories)."""
_MIN_TOKENS = 3

_ZH_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_EN_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
}
_NUM = r"(?:\d{1,3}|[一二两三四五六七八九十]{1,3})"
_LIST_ZH = rf"{_NUM}(?:\s*(?:、|,|，|和|及|与|跟|/)\s*(?:第\s*)?{_NUM})*"
_EN_ORD = "|".join(_EN_ORDINALS)
_LIST_EN = r"#?\d{1,3}(?:\s*(?:,|and|&|/|or)\s*#?\d{1,3})*"
_REFS = (
    re.compile(rf"第\s*(?P<n>{_LIST_ZH})\s*(?:条|項|项|点)(?:经验|經驗)?"),
    re.compile(rf"(?:经验|經驗)\s*[（(#]?\s*(?P<n>{_LIST_ZH})(?![\d.])"),
    re.compile(rf"\b(?:experiences?|memor(?:y|ies)|lessons?|items?|tips?|entr(?:y|ies))\s*(?P<n>{_LIST_EN})\b", re.I),
    re.compile(rf"\b(?:the\s+)?(?P<o>{_EN_ORD})\s+(?:experience|memory|lesson|item|tip|one)\b", re.I),
)
_ALL = re.compile(
    r"(?:以上|上述|上面|这些|这几条|所有|全部|各条|相关)(?:的)?(?:历史)?经验|经验(?:都|均|全都|全部)"
    r"|\b(?:all|none|any|neither|both)\s+(?:of\s+)?(?:the\s+|these\s+|those\s+)?(?:above\s+|listed\s+|recalled\s+)?"
    r"(?:experiences|memories|lessons)\b"
    r"|\b(?:the|these|those)\s+(?:above\s+|listed\s+|recalled\s+|past\s+)?(?:experiences|memories|lessons)\b",
    re.I,
)
_ONE = re.compile(r"(?:该|这条|此条|这个|那条)经验|\b(?:this|that|the)\s+(?:experience|memory|lesson)\b", re.I)
_EXPERIENCE_WORD = re.compile(r"经验|經驗|\bexperiences?\b|\bmemor(?:y|ies)\b|\blessons?\b", re.I)

_ASIDE = re.compile(
    r"不适用|不適用|不太适用|不适合|不相关|无关|無關|没有关系|没关系|用不上|不需要参考|不必参考|无需参考|"
    r"没有按|没按|未按|不按|没有采用|未采用|没有参考|未参考|没有遵循|未遵循|"
    r"不参考|不采用|不予采用|不予考虑|不考虑|不符合|不涉及|忽略|搁置|不能套用|不宜套用|没有(?:一条)?(?:相关)?经验(?:适用|有用)"
    r"|\bnone\s+of\s+(?:the\s+|these\s+|those\s+)?(?:above\s+|listed\s+)?(?:experiences|memories|lessons)\s+"
    r"(?:\w+\s+)?(?:apply|applies|fits?|helps?|(?:is|are)\s+relevant)\b"
    r"|\b(?:does\s*n[o']t|do\s*n[o']t|did\s*n[o']t|doesn't|don't|didn't|does not|do not|did not|won't|will not|"
    r"can't|cannot)\s+(?:really\s+)?(?:apply|fit|match|hold|concern|relate|follow|use)"
    r"|\binstead\s+of\b|\brather\s+than\b"
    r"|\b(?:neither|none|no)\b[^.;]{0,40}\b(?:experiences?|memor(?:y|ies)|lessons?)\b[^.;]{0,20}"
    r"\b(?:appl(?:y|ies)|fits?|relevant|helps?)\b"
    r"|\bnot\s+(?:really\s+)?(?:applicable|relevant|related|useful|pertinent|used|using|follow(?:ed|ing)?)\b"
    r"|\b(?:is|are)\s*n't\s+(?:applicable|relevant|related)\b|\birrelevant\b|\bunrelated\b|\bnothing to do with\b"
    r"|\bignor(?:e|ed|es|ing)\b|\bdisregard(?:ed|ing)?\b|\bset(?:ting)?\s+aside\b|\bputting\s+aside\b"
    r"|\bskip(?:ped|ping)?\b|\bdoes\s+not\s+apply\b|\bdon't\s+apply\b",
    re.I,
)
_APPLIED = re.compile(
    r"按照|按|根据|依据|依照|参考|参照|遵循|遵照|采用|采纳|沿用|套用|应用了|用了|结合|借鉴"
    r"|\b(?:follow(?:ed|ing|s)?|per|according\s+to|as\s+(?:suggested|advised|noted|recommended)\s+(?:by|in)|"
    r"appl(?:y|ied|ying)|us(?:e|ed|ing)|based\s+on|in\s+line\s+with|guided\s+by|relied\s+on)\b"
    r"|适用|有用|有帮助|\bapplies\b|\bis\s+relevant\b|\bhelped\b",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[。！？!?\n])|(?<=[.;；])(?=\s|$)")
_CLAUSE = re.compile(r"[，,；;：:。！？!?\n]|(?<=\D)\.(?=\s|$)|\bbut\b|\bwhile\b|但是|但|而是|而(?!不是|非)")
_CONTRAST = re.compile(r"\binstead\s+of\b|\brather\s+than\b|而不是|而非", re.I)
"""A choice inside one clause: what comes after it was set aside, what comes before is judged on its own words
(``followed experience 2 instead of experience 1``, ``按第2条经验而不是第1条``)."""
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[A-Za-z][A-Za-z0-9_\-]*|\d+(?:\.\d+)?")
_EN_STOP = frozenset(
    re.findall(
        r"\S+",
        "the a an and or of to in on for with by at from is are was were be been it this that these those as use "
        "used using when then than not no do does did should must can will would into its your you we they",
    )
)
_ZH_STOP = frozenset([*"的是了在和与及要时用把将对为就都也这那一个不", "经验", "任务", "当前"])
_GENERIC = frozenset(
    re.findall(
        r"\S+",
        "utf-8 utf8 utf_8 ascii latin-1 true false yes no none null nil default auto json csv txt xml yaml html "
        "text string en zh zh-cn en-us get post id name value data file path ok all any",
    )
)


@dataclass(frozen=True, slots=True)
class _Text:
    """What the agent of a run produced: its own text, and its tool calls."""

    said: str
    calls: list[tuple[str, dict[str, object]]]


def agent_text(trajectory: Trajectory) -> str:
    """The agent's own text in a run: its thoughts and its final answer (never the task, never tool results)."""
    parts = [s.content for s in trajectory.steps if s.type in ("thought", "final_answer") and s.content]
    answer = trajectory.final_answer or ""
    if answer and answer not in parts:
        parts.append(answer)
    return "\n".join(parts)


def _tokens(text: str) -> set[str]:
    """Words (en, lower-cased) and character bigrams (zh) without the empty ones."""
    out: set[str] = set()
    for tok in _TOKEN.findall(text):
        if re.match(rf"[{_CJK}]", tok):
            if len(tok) == 1:
                if tok not in _ZH_STOP:
                    out.add(tok)
                continue
            for i in range(len(tok) - 1):
                gram = tok[i : i + 2]
                if not (set(gram) <= _ZH_STOP) and gram not in _ZH_STOP:
                    out.add(gram)
        else:
            low = tok.lower()
            if low not in _EN_STOP and len(low) > 1:
                out.add(low)
    return out


def _share(memory: set[str], text: set[str]) -> float:
    return len(memory & text) / len(memory) if len(memory) >= _MIN_TOKENS else 0.0


def _number(token: str) -> int | None:
    token = token.strip().lstrip("#")
    if token.isdigit():
        return int(token)
    if token.lower() in _EN_ORDINALS:
        return _EN_ORDINALS[token.lower()]
    if token and all(c in _ZH_DIGITS for c in token):
        if token == "十":
            return 10
        if token.startswith("十"):
            return 10 + _ZH_DIGITS[token[1]]
        if len(token) == 3 and token[1] == "十":
            return _ZH_DIGITS[token[0]] * 10 + _ZH_DIGITS[token[2]]
        if len(token) == 2 and token[1] == "十":
            return _ZH_DIGITS[token[0]] * 10
        return _ZH_DIGITS[token[0]] if len(token) == 1 else None
    return None


def statement_refs(clause: str, count: int) -> tuple[set[int], bool]:
    """The block numbers (1-based) ``clause`` names, and whether it names every experience.

    A number beyond ``count`` (the block's length) names nothing.

    Example:
        >>> statement_refs("第1、3条经验不适用", 3)
        ({1, 3}, False)
        >>> statement_refs("Experience 5 does not apply", 2)
        (set(), False)
    """
    found: set[int] = set()
    for pattern in _REFS:
        for m in pattern.finditer(clause):
            if m.groupdict().get("o"):
                numbers = [_number(m.group("o"))]
            else:
                numbers = [_number(t) for t in re.split(r"\s*(?:、|,|，|和|及|与|跟|/|and|&|or|第)\s*", m.group("n"))]
            found.update(n for n in numbers if n is not None and 1 <= n <= count)
    return found, bool(_ALL.search(clause))


def _clauses(sentence: str) -> list[str]:
    return [c.strip() for c in _CLAUSE.split(sentence) if c and c.strip()]


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EVIDENCE_CHARS else text[: _EVIDENCE_CHARS - 1] + "…"


def _named(clause: str, n: int, tokens: Sequence[set[str]], previous: set[int]) -> set[int]:
    """The block numbers a clause names: by number, by 'all', by 'this one', or by restating a memory."""
    refs, every = statement_refs(clause, n)
    if refs:
        return refs
    if every:
        return set(range(1, n + 1))
    if _ONE.search(clause):
        if n == 1:
            return {1}
        if previous:
            return set(previous)
    own = _tokens(clause)
    shares = [_share(t, own) for t in tokens]
    best = max(shares, default=0.0)
    if best <= 0:
        return set()
    floor = _REFERRED_SHARE if _EXPERIENCE_WORD.search(clause) else _QUOTE_SHARE
    return {i + 1 for i, s in enumerate(shares) if s >= floor and s == best}


def _statements(said: str, n: int, tokens: Sequence[set[str]]) -> tuple[dict[int, str], dict[int, str]]:
    """``(set aside, said applied)``: block number → the agent's sentence."""
    aside: dict[int, str] = {}
    applied: dict[int, str] = {}
    for sentence in _SENTENCE.split(said):
        if not sentence.strip():
            continue
        previous: set[int] = set()
        pending: set[int] = set()  # named by the clause before, which said nothing of it yet
        for clause in _clauses(sentence):
            contrast = _CONTRAST.search(clause)
            if contrast:
                rejected = _named(clause[contrast.end() :], n, tokens, set())
                head = clause[: contrast.start()]
                chosen = _named(head, n, tokens, previous) - rejected if head.strip() else set()
                if rejected or chosen:
                    for i in rejected:
                        aside.setdefault(i, _clip(sentence))
                    judged = aside if _ASIDE.search(head) else applied if _APPLIED.search(head) else None
                    if judged is not None:
                        for i in chosen:
                            judged.setdefault(i, _clip(sentence))
                    if chosen:  # else what the clause before named still waits for a word ("2, rather than 1, fits")
                        pending = chosen if judged is None else set()
                    previous = chosen | rejected
                    continue
            named = _named(clause, n, tokens, previous)
            if not named:
                if not pending:
                    continue
                named = pending  # "第2条经验：与本任务无关" / "Experience 2: not relevant"
            pending = set()
            if _ASIDE.search(clause):
                for i in named:
                    aside.setdefault(i, _clip(sentence))
            elif _APPLIED.search(clause):
                for i in named:
                    applied.setdefault(i, _clip(sentence))
            else:
                pending = named
            previous = named
    return aside, applied


def _scalars(value: object) -> Iterable[object]:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, list | tuple | set):
        for v in value:
            yield from _scalars(v)
    else:
        yield value


def _norm(value: object) -> str:
    return str(value).strip().lower()


def _distinctive(value: object) -> bool:
    """Whether a parameter value can show use: not a bool, not a small number, not a generic word."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return abs(value) >= 2
    text = _norm(value)
    if text in _GENERIC or len(text) < 2 or re.fullmatch(r"-?\d+(?:\.\d+)?", text):
        return False
    return len(text) >= 3 or bool(re.search(rf"[{_CJK}]", text))


_STATED_PARAMETER = re.compile(r"\b([A-Za-z_][\w.-]{1,40})\s*[=＝]\s*(['\"‘“]?)([^\s'\"’”,，;；)）]{1,80})\2")
"""``encoding='gbk'`` / ``sep=";"`` written in a memory's statement: a parameter it prescribes."""


def _parameters(unit: MemoryUnit) -> list[tuple[str, object]]:
    """What ``unit`` prescribes as parameters: its ``context.parameters`` and the ``key=value`` its text states."""
    found: list[tuple[str, object]] = list(unit.context.parameters.items())
    found += [(m.group(1), m.group(3)) for m in _STATED_PARAMETER.finditer(claim_of(unit))]
    return found


def _followed(unit: MemoryUnit, text: _Text, said_tokens: set[str]) -> str | None:
    """The evidence that the run followed ``unit`` (a parameter, a tool, its statement), or ``None``.

    An "avoid" lesson (tag ``avoid``: what failed, to be done otherwise) names what *not* to do:
    repeating its call is not following it, so nothing of it counts.
    """
    if "avoid" in unit.tags or "avoid" in unit.context.parameters:
        return None
    args = [(name, args) for name, args in text.calls]
    for key, value in _parameters(unit):
        for v in _scalars(value):
            if not _distinctive(v):
                continue
            for name, call in args:
                same_key = {_norm(k): a for k, a in call.items()}.get(_norm(key))
                if same_key is not None and _norm(same_key) == _norm(v):
                    return f"tool {name} called with {key}={v}"
                if isinstance(v, str) and any(_norm(v) in _norm(a) for a in _scalars(call) if isinstance(a, str)):
                    return f"tool {name} called with {v!r} ({key})"
            if isinstance(v, str) and _norm(v) in text.said.lower():
                return f"the agent's text carries {v!r} ({key})"
    tools = {t.strip().lower() for t in unit.context.tools_used if t.strip()}
    for name, _ in args:
        if name.lower() in tools:
            return f"tool {name} called (the memory's tool)"
    claim = _tokens(claim_of(unit))
    share = _share(claim, said_tokens | _tokens(" ".join(str(a) for _, c in args for a in _scalars(c))))
    if share >= _STATEMENT_SHARE:
        return f"the agent's text carries the memory's statement ({share:.0%} of its words)"
    return None


def judge_uses(
    served: Sequence[MemoryUnit], trajectory: Trajectory, *, numbers: Sequence[int] | None = None
) -> list[MemoryUse]:
    """What the agent of ``trajectory`` did with each of ``served``.

    Args:
        served: The served memories, in block order.
        trajectory: The finished run.
        numbers: The block number of each of ``served`` (the journal's ranks); default 1, 2, 3…

    Returns:
        One :class:`~langchain_hindsight.runs.MemoryUse` per served memory: ``set_aside``
        (the agent said it does not apply; wins over any sign of use), ``used`` (followed, or
        said applied) or ``unclear``; each with its evidence.
    """
    if not served:
        return []
    ranks = list(numbers) if numbers is not None else list(range(1, len(served) + 1))
    said = agent_text(trajectory)
    calls = [(s.tool_name, dict(s.tool_args or {})) for s in trajectory.steps if s.type == "tool_call" and s.tool_name]
    text = _Text(said=said, calls=calls)
    count = max(ranks)
    by_rank = dict(zip(ranks, served, strict=True))
    tokens = [_tokens(claim_of(by_rank[r])) if r in by_rank else set() for r in range(1, count + 1)]
    aside, applied = _statements(said, count, tokens)
    said_tokens = _tokens(said)
    out: list[MemoryUse] = []
    for i, unit in zip(ranks, served, strict=True):
        verdict: UseVerdict
        if i in aside:
            verdict, evidence = "set_aside", f"the agent said it does not apply: {aside[i]}"
        elif i in applied:
            verdict, evidence = "used", f"the agent said it applied it: {applied[i]}"
        elif (why := _followed(unit, text, said_tokens)) is not None:
            verdict, evidence = "used", why
        else:
            verdict, evidence = "unclear", "no sign of use in the run: neither credited nor debited"
        out.append(MemoryUse(memory_id=unit.memory_id, verdict=verdict, evidence=evidence))
    return out


def judge_run(store: MemoryStore, record: RunRecord, trajectory: Trajectory) -> list[MemoryUse] | None:
    """:func:`judge_uses` for the memories the journal says ``record`` was served (numbered by their rank).

    ``None`` when the run was served nothing. A served memory that no longer exists is left out.
    """
    if not record.served:
        return None
    ordered = sorted(record.served, key=lambda m: m.rank)
    units = {u.memory_id: u for u in store.get_many([m.memory_id for m in ordered], namespace=record.namespace)}
    kept = [m for m in ordered if m.memory_id in units]
    return judge_uses([units[m.memory_id] for m in kept], trajectory, numbers=[m.rank for m in kept])
