"""Engine values and sentences in the reader's language: statuses, sources, outcomes, reasons, dates.

Every string the engine produces that reaches a page passes through :class:`Words`:
closed vocabularies (status, source, kind, outcome, effect action, score factor)
through lookup tables, the journal's reason sentences through patterns of the
sentences the library writes (:data:`REASON_PATTERNS`). A reason no pattern knows
is never hidden: the page says so in the reader's language and shows the original
marked ``lang="en"`` with ``data-untranslated`` (the browser tests fail on any).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup, escape

from langchain_hindsight.taxonomy import DEFAULT_TASK_TYPES

__all__ = ["REASON_PATTERNS", "Words"]

_CJK = re.compile(r"[\u3400-\u9fff]")

VOCABULARY: Mapping[str, Mapping[str, tuple[str, str]]] = {
    "status": {
        "active": ("生效", "active"),
        "superseded": ("已被取代", "superseded"),
        "archived": ("已归档", "archived"),
        "forgotten": ("已删除", "deleted"),
    },
    "source": {
        "user_feedback": ("用户纠正", "user correction"),
        "manual": ("人工确认", "confirmed by a person"),
        "rule": ("规则", "rule"),
        "agent_inference": ("智能体总结", "agent's own lesson"),
        "review": ("复盘", "review"),
        "tool_output": ("工具输出", "tool output"),
    },
    "kind": {
        "experience": ("经验", "experience"),
        "fact": ("事实", "fact"),
        "entity": ("实体", "entity"),
        "run": ("运行", "run"),
        "review": ("复盘", "review"),
    },
    "outcome": {
        "success": ("成功", "success"),
        "failure": ("失败", "failure"),
        "unknown": ("未知", "unknown"),
    },
    "action": {
        "credited": ("加分", "credited"),
        "uncredited": ("收回加分", "credit taken back"),
        "debited": ("扣分", "debited"),
        "superseded": ("被取代", "superseded"),
        "created": ("新建", "created"),
        "merged": ("合并", "merged"),
        "archived": ("归档", "archived"),
        "restored": ("恢复", "restored"),
    },
    "factor": {
        "similarity": ("语义相似", "similarity"),
        "task_type": ("任务类型", "task type"),
        "confidence": ("置信度", "confidence"),
        "recency": ("新近程度", "recency"),
        "access": ("使用频率", "use"),
        "source": ("来源可信度", "source trust"),
        "dense": ("向量匹配", "vector match"),
        "lexical": ("关键词匹配", "keyword match"),
    },
    "how": {
        "fixed": ("调用方指定", "given by the caller"),
        "inferred": ("按关键词推断", "inferred from keywords"),
        "model": ("模型分类", "classified by the model"),
    },
    "tag": {
        "user_feedback": ("用户纠正", "user correction"),
        "correction": ("纠正", "correction"),
        "suspicious": ("可疑", "suspicious"),
        "confirmed": ("已确认", "confirmed"),
        "kept-apart": ("保持分开", "kept apart"),
    },
    "feedback_kind": {
        "verdict": ("用户评价", "user's verdict"),
        "undo": ("撤销", "undo"),
    },
}
"""Closed engine vocabularies: value → (zh, en)."""

_Z = "zh"

# Each pattern: the English sentence the library writes, and its zh / en renderings. Groups named like
# the template fields; a field named ``reason`` is itself a reason and is rendered recursively.
REASON_PATTERNS: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (re.compile(p, re.S), zh, en)
    for p, zh, en in (
        (
            r"the user confirmed that run (?P<run>\S+) succeeded: success credit"
            r"(?P<first> \(the outcome's failure debit taken back first\))?",
            "用户确认运行 {run} 成功：加分{first}",
            "the user confirmed run {run} succeeded: success credit{first}",
        ),
        (
            r"the user said run (?P<run>\S+) failed: its success credit \((?P<delta>[-+0-9.]+)\) taken back",
            "用户说运行 {run} 失败了：收回它带来的加分（{delta}）",
            "the user said run {run} failed: its success credit ({delta}) taken back",
        ),
        (
            r"the user said run (?P<run>\S+) failed, without saying what was wrong: failure debit "
            r"\(never applied to a user's own correction\)",
            "用户说运行 {run} 失败了，但没说错在哪里：扣分（用户自己的纠正不扣分）",
            "the user said run {run} failed without saying what was wrong: failure debit",
        ),
        (
            r"contradicted by the user's correction (?P<by>\S+) of run (?P<run>\S+): superseded",
            "与用户对运行 {run} 的纠正 {by} 矛盾：被取代",
            "contradicted by the user's correction {by} of run {run}: superseded",
        ),
        (
            r"the user's correction of run (?P<run>\S+) restates it: merged \((?P<reason>.*)\)",
            "用户对运行 {run} 的纠正与它说的是同一件事：已合并（{reason}）",
            "the user's correction of run {run} restates it: merged ({reason})",
        ),
        (
            r"the user's correction of run (?P<run>\S+)",
            "用户对运行 {run} 的纠正",
            "the user's correction of run {run}",
        ),
        (
            r"superseded when the user's correction (?P<by>\S+) of run (?P<run>\S+) was written \((?P<reason>.*)\)",
            "写入用户对运行 {run} 的纠正 {by} 时被取代（{reason}）",
            "superseded when the user's correction {by} of run {run} was written ({reason})",
        ),
        (
            r"undo of the feedback given at (?P<at>.+?) on run (?P<run>\S+): the correction it created is archived",
            "撤销 {at} 对运行 {run} 的反馈：它新建的纠正已归档",
            "undo of the feedback given at {at} on run {run}: the correction it created is archived",
        ),
        (
            r"undo of the feedback given at (?P<at>.+?) on run (?P<run>\S+) \((?P<action>\w+)\)",
            "撤销 {at} 对运行 {run} 的反馈（{action}）",
            "undo of the feedback given at {at} on run {run} ({action})",
        ),
        (
            r"success of run (?P<run>\S+)",
            "运行 {run} 成功",
            "success of run {run}",
        ),
        (
            r"failure of run (?P<run>\S+): (?P<reason>.*)",
            "运行 {run} 失败：{reason}",
            "failure of run {run}: {reason}",
        ),
        (
            r"merged by a reviewer in the console(?P<rest>.*)",
            "审阅者在审阅台合并{rest}",
            "merged by a reviewer in the console{rest}",
        ),
        (
            r"(?:same statement|the same statement)(?P<rest>.*)",
            "同一陈述{rest}",
            "the same statement{rest}",
        ),
    )
)
"""Reason sentences the library journals, as patterns with their zh and en renderings."""


def _fmt_delta(value: str) -> str:
    try:
        return f"{float(value):+.2f}"
    except ValueError:
        return value


class Words:
    """One locale's renderings of engine values (templates call it as ``w``).

    Example:
        >>> Words("zh").status("superseded"), Words("en").outcome("failure")
        ('已被取代', 'failure')
        >>> Words("zh").reason("success of run r1")
        ('运行 r1 成功', True)
    """

    def __init__(self, lang: str) -> None:
        self.lang = "en" if lang == "en" else "zh"
        self._i = 1 if self.lang == "en" else 0

    def _word(self, table: str, value: object) -> str:
        pair = VOCABULARY[table].get(str(value))
        return pair[self._i] if pair else str(value).replace("_", " ")

    def status(self, value: object) -> str:
        """A memory's status."""
        return self._word("status", value)

    def source(self, value: object) -> str:
        """Where a memory came from."""
        return self._word("source", value)

    def kind(self, value: object) -> str:
        """A memory's kind, or a journal record's kind."""
        return self._word("kind", value)

    def outcome(self, value: object) -> str:
        """How a run ended."""
        return self._word("outcome", value)

    def action(self, value: object) -> str:
        """What a feedback did to a memory."""
        return self._word("action", value)

    def factor(self, value: object) -> str:
        """A score factor's name."""
        return self._word("factor", value)

    def how(self, value: object) -> str:
        """How a recall chose its task type."""
        return self._word("how", value) if value else "–"

    def tags(self, values: list[str]) -> str:
        """A memory's tags: the engine's own in this language, the others as written."""
        known = VOCABULARY["tag"]
        return self.value([known[v][self._i] if v in known else v for v in values])

    def feedback_kind(self, value: object) -> str:
        """A feedback entry's kind."""
        return self._word("feedback_kind", value)

    def task_type(self, value: object) -> str:
        """A task type: its Chinese alias on zh pages when the vocabulary has one, else spaced words."""
        label = str(value or "")
        if not label:
            return "–"
        if self.lang == "zh":
            zh = next((a for a in DEFAULT_TASK_TYPES.get(label, ()) if _CJK.search(a)), None)
            if zh:
                return zh
        return label.replace("_", " ")

    def date(self, value: datetime | None) -> str:
        """A readable UTC date and time (``12月6日 05:20`` / ``6 Dec 2026, 05:20``); the year only when not this one."""
        if value is None:
            return "–"
        now = datetime.now(UTC)
        if self.lang == "zh":
            year = "" if value.year == now.year else f"{value.year}年"
            return f"{year}{value.month}月{value.day}日 {value:%H:%M}"
        year = "" if value.year == now.year else f" {value.year}"
        return f"{value.day} {value:%b}{year}, {value:%H:%M}"

    def value(self, value: Any) -> str:
        """A field value as people read it: no ``None``, ``[]`` or dict reprs."""
        if value is None or value == "" or value == [] or value == {}:
            return "–"
        if isinstance(value, bool):
            return ("是" if value else "否") if self.lang == "zh" else ("yes" if value else "no")
        if isinstance(value, float):
            return f"{value:.2f}"
        if isinstance(value, datetime):
            return self.date(value)
        if isinstance(value, list | tuple | set):
            return (
                "、".join(self.value(v) for v in value)
                if self.lang == "zh"
                else ", ".join(self.value(v) for v in value)
            )
        if isinstance(value, dict):
            sep = "；" if self.lang == "zh" else "; "
            parts = [f"{k}: {self.value(v)}" for k, v in value.items() if self.value(v) != "–"]
            return sep.join(parts) or "–"
        return str(value)

    def reason(self, text: str) -> tuple[str, bool]:
        """A journaled reason in this language, and whether every part of it was recognised."""
        text = text.strip()
        if not text:
            return "", True
        if "; " in text:
            parts = [self.reason(p) for p in text.split("; ")]
            sep = "；" if self.lang == "zh" else "; "
            return sep.join(p for p, _ in parts), all(ok for _, ok in parts)
        for pattern, zh, en in REASON_PATTERNS:
            found = pattern.fullmatch(text)
            if found is None:
                continue
            fields: dict[str, str] = {}
            ok = True
            for name, got in found.groupdict().items():
                got = got or ""
                if name == "reason":
                    got, inner = self.reason(got)
                    ok = ok and inner
                elif name == "delta":
                    got = _fmt_delta(got)
                elif name == "first":
                    got = (
                        ("（先收回结果带来的扣分）" if self.lang == "zh" else " (the outcome's debit taken back first)")
                        if got
                        else ""
                    )
                elif name == "action":
                    got = self.action(got)
                elif name == "rest":
                    got, inner = self.reason(got.lstrip(":; ")) if got.strip(":; ") else ("", True)
                    got = ("：" if self.lang == "zh" else ": ") + got if got else ""
                    ok = ok and inner
                fields[name] = got
            return (zh if self.lang == "zh" else en).format(**fields), ok
        if self.lang == "en":
            return text, True
        return text, False

    def reason_html(self, text: str) -> Markup:
        """:meth:`reason` as HTML: an unrecognised reason says so and keeps the original, marked ``lang="en"``."""
        said, ok = self.reason(text)
        if ok:
            return Markup(escape(said))
        note = "（引擎原文，尚无中文译文）" if self.lang == "zh" else "(engine text)"
        return Markup(f'<span data-untranslated="1">{escape(note)} <span lang="en">{escape(text)}</span></span>')
