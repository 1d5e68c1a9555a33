"""Simulated users: seeded zh and en conversations through the real middleware, invariants checked after every session.

Each simulated user talks to one ``create_agent`` agent with ``hs.middleware()`` and a scripted chat model
(:class:`~langchain_hindsight.testing.ReactiveToolModel`), in its own namespace (``config["configurable"]
["user_id"]``), one thread per session. A session is one of:

* ``task`` — a task of one of the user's kinds (weekly report, monthly report, data cleaning), answered;
* ``correction`` — a task, the answer, then a correction (``不对，金额要用含税价`` / ``No, amounts must include tax``);
* ``follow_up`` — a task, a follow-up question (``有误差的数据怎么处理？``), then a correction of the task;
* ``preference`` — a task and a preference (``不对，周报要用PDF格式``); a later one changes it (→ Excel);
  a third of the users are bilingual and say the change in their other language, where the claim rule cannot
  tell a change from a second fact: both stay, and the newer must rank first;
* ``conditional`` — a task and a fact with a condition (``数据量小于1万行时用A方法汇总``); its partner with the
  other condition comes in a later session, and the two must stand side by side;
* ``unrelated_fail`` — an e-mail task that fails (a tool error), with the week number changing between sessions
  (``把第7周的周报发给张经理``): repeated failures that differ only in a number;
* ``unrelated`` — a task of no kind the user has taught (a poem, a joke);
* ``cross_language`` — a task of a taught kind in the user's other language.

Invariants, checked after every session (each violation is recorded, none stops the run):

* ``statement_lost`` — a user statement (a correction, a preference, a conditional fact) the user never
  replaced is no longer active;
* ``statement_debited`` — a user statement's confidence fell below what it had when stored, with no verdict
  of the user's against it;
* ``correction_not_served`` — the first task of a kind after a statement about that kind was not served the
  statement (the newest version of a changed preference);
* ``superseded_served`` — a memory that was superseded when the session started was served in it;
* ``old_preference_first`` — both versions of a preference the user changed were served, the older above the
  newer (the store kept both: the newer must rank first);
* ``block_over_budget`` — a block longer than ``max_block_chars`` or with more than ``max_lines`` memory lines.

Each violation names the scenario and the issue-33 point whose fix it waits for (``OWNERS``), so the report
says which failures are whose. Rates: of the memories served to a task, the share about the task's kind
(served-relevant) and about another kind or served to an unrelated task (served-irrelevant), per slice.

Run: ``HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/simulated_users.py [--users 24] [--sessions 10] [--seed 33]
[--embedder default|fake]``; writes ``benchmarks/results/simulated_users.{json,md}`` (``python
docs/build_readme.py`` puts the table into docs/benchmarks.md). The default embedder is the package's own
(real models); ``fake`` is the tests' hashed n-gram embedder (no model: the in-suite seed uses it).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import StructuredTool, ToolException

from langchain_hindsight import Hindsight, MemoryStore
from langchain_hindsight.prompts import get_templates
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.testing import ReactiveToolModel, Turn, call

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"

Lang = Literal["zh", "en"]
Kind = Literal["weekly", "monthly", "cleaning"]
KINDS: tuple[Kind, ...] = ("weekly", "monthly", "cleaning")

INVARIANTS = (
    "statement_lost",
    "statement_debited",
    "correction_not_served",
    "superseded_served",
    "old_preference_first",
    "block_over_budget",
)
"""Every invariant the benchmark checks, in report order."""

OWNERS: dict[tuple[str, str], str] = {
    ("statement_lost", "conditional"): "point 3 (supersede only when subject and condition match)",
    ("statement_lost", "preference"): "point 3 (supersede only when subject and condition match)",
    ("statement_lost", "correction"): "point 3 (supersede only when subject and condition match)",
    ("statement_debited", "unrelated_fail"): "point 2 (credit only what was used)",
    ("statement_debited", "unrelated"): "point 2 (credit only what was used)",
    ("statement_debited", "task"): "point 2 (credit only what was used)",
    ("statement_debited", "cross_language"): "point 2 (credit only what was used)",
    ("correction_not_served", "cross_language"): "point 1 (relevance floor)",
    ("correction_not_served", "task"): "point 1 (relevance floor) or point 3 (a statement superseded)",
}
"""(invariant, the scenario of the session that broke it) → the issue-33 point whose fix it waits for."""

# ---------------------------------------------------------------------------- the users' words
TASKS: dict[Kind, dict[Lang, Sequence[str]]] = {
    "weekly": {
        "zh": ("生成本周的销售周报", "生成第{n}周的销售周报", "帮我做一下这周的销售周报"),
        "en": (
            "Write this week's sales report",
            "Write the sales report for week {n}",
            "Draft the weekly sales report",
        ),
    },
    "monthly": {
        "zh": ("生成{n}月的销售月报", "帮我做一下上个月的销售月报"),
        "en": ("Write the monthly sales report for month {n}", "Draft last month's sales report"),
    },
    "cleaning": {
        "zh": ("清洗sales_{n}.csv里的重复行", "把客户表里的缺失值清洗一下"),
        "en": ("Clean the duplicate rows in sales_{n}.csv", "Clean the missing values in the customer table"),
    },
}
FOLLOW_UP: dict[Lang, Sequence[str]] = {
    "zh": ("有误差的数据怎么处理？", "退款要算进去吗？", "不对外公开的门店数据也要统计吗？"),
    "en": ("How should we handle rows with rounding errors?", "Should refunds count?", "What about closed stores?"),
}
UNRELATED: dict[Lang, Sequence[str]] = {
    "zh": ("写一首关于秋天的诗", "讲一个关于猫的笑话", "推荐几本科幻小说"),
    "en": ("Write a poem about autumn", "Tell me a joke about cats", "Recommend a few science fiction novels"),
}
EMAIL: dict[Lang, str] = {"zh": "把第{n}周的周报发给张经理", "en": "Email the week {n} report to Manager Zhang"}


@dataclass(frozen=True)
class Statement:
    """One thing a user tells the agent: a correction (no subject change), a preference, a conditional fact."""

    kind: Kind
    subject: str
    text: dict[Lang, str]
    condition: str | None = None


CORRECTIONS: dict[Kind, tuple[Statement, ...]] = {
    "weekly": (
        Statement("weekly", "range", {"zh": "不对，周报只统计本周一到周日", "en": "No, the weekly report only covers Monday to Sunday"}),
        Statement("weekly", "price", {"zh": "不对，金额要用含税价", "en": "No, amounts must include tax"}),
    ),
    "monthly": (
        Statement("monthly", "range", {"zh": "不对，月报按自然月统计", "en": "No, the monthly report covers the calendar month"}),
    ),
    "cleaning": (
        Statement("cleaning", "encoding", {"zh": "不对，读取CSV时要用utf-8-sig编码", "en": "No, read the CSV files with encoding utf-8-sig"}),
    ),
}  # fmt: skip
PREFERENCES: dict[Kind, tuple[Statement, Statement]] = {
    "weekly": (
        Statement("weekly", "format", {"zh": "不对，周报要用PDF格式", "en": "No, send the weekly report as a PDF"}),
        Statement("weekly", "format", {"zh": "不对，周报改用Excel格式", "en": "No, send the weekly report as an Excel file instead"}),
    ),
    "monthly": (
        Statement("monthly", "chart", {"zh": "不对，月报里要用柱状图", "en": "No, the monthly report needs a bar chart"}),
        Statement("monthly", "chart", {"zh": "不对，月报里改用折线图", "en": "No, use a line chart in the monthly report instead"}),
    ),
    "cleaning": (
        Statement("cleaning", "dedupe", {"zh": "不对，去重时保留第一条记录", "en": "No, keep the first record when removing duplicates"}),
        Statement("cleaning", "dedupe", {"zh": "不对，去重时改为保留最新的记录", "en": "No, keep the newest record when removing duplicates instead"}),
    ),
}  # fmt: skip
CONDITIONALS: dict[Kind, tuple[Statement, Statement]] = {
    "weekly": (
        Statement("weekly", "method", {"zh": "不对，数据量小于1万行时用A方法汇总", "en": "No, when the data has fewer than 10,000 rows use method A"}, "small"),
        Statement("weekly", "method", {"zh": "不对，数据量大于1万行时用B方法汇总", "en": "No, when the data has more than 10,000 rows use method B"}, "large"),
    ),
    "monthly": (
        Statement("monthly", "recipient", {"zh": "不对，华东区的月报发给张经理", "en": "No, the East region's monthly report goes to Manager Zhang"}, "east"),
        Statement("monthly", "recipient", {"zh": "不对，华南区的月报发给李经理", "en": "No, the South region's monthly report goes to Manager Li"}, "south"),
    ),
    "cleaning": (
        Statement("cleaning", "nulls", {"zh": "不对，金额列的缺失值填0", "en": "No, fill missing values in the amount column with 0"}, "amount"),
        Statement("cleaning", "nulls", {"zh": "不对，日期列的缺失值直接删除该行", "en": "No, drop the row when the date column is missing"}, "date"),
    ),
}  # fmt: skip

Scenario = Literal[
    "task", "correction", "follow_up", "preference", "conditional", "unrelated_fail", "unrelated", "cross_language"
]
WEIGHTS: dict[Scenario, int] = {
    "task": 3,
    "correction": 2,
    "follow_up": 2,
    "preference": 2,
    "conditional": 2,
    "unrelated_fail": 2,
    "unrelated": 1,
    "cross_language": 2,
}


# ---------------------------------------------------------------------------- the agent side
class _Prompts(BaseCallbackHandler):
    """Every message list the chat model received."""

    def __init__(self) -> None:
        self.seen: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.seen.extend(list(m) for m in messages)


def _send_report(to: str, week: int) -> str:
    """Send a weekly report by e-mail."""
    raise ToolException(f"SMTP 550: mailbox of {to} unavailable (week {week} report not sent)")


SEND = StructuredTool.from_function(_send_report, name="send_report", handle_tool_error=True)


_TASK_HEADERS = (get_templates("zh").task_header, get_templates("en").task_header)
_WEEK = re.compile(r"第(\d+)周|week (\d+)")


def _task_text(message: BaseMessage) -> str:
    """The task of a human turn: what follows the block's task header, or the whole turn when none was injected."""
    text = str(message.content)
    for header in _TASK_HEADERS:
        if header in text:
            return text.rsplit(header, 1)[1].strip().split("\n", 1)[0]
    return text


def _cjk(text: str) -> bool:
    return any("\u4e00" <= c <= "\u9fff" for c in text)


def _respond(messages: list[BaseMessage]) -> Turn:
    """The scripted model: an e-mail task calls the failing tool, everything else is answered."""
    task = _task_text([m for m in messages if m.type == "human"][-1])
    if messages[-1].type == "tool":
        return "发送失败。" if _cjk(task) else "The e-mail failed."
    if ("周报发给张经理" in task or task.startswith("Email the week")) and (m := _WEEK.search(task)):
        return call("send_report", to="zhang@example.com", week=int(m.group(1) or m.group(2)))
    return "好的，已完成。" if _cjk(task) else "Done."


# ---------------------------------------------------------------------------- bookkeeping
@dataclass
class Known:
    """A user statement as stored, and what the scenario says should become of it."""

    memory_id: str
    user: str
    statement: Statement
    lang: Lang
    confidence: float
    replaced: bool = False
    replaced_by: str | None = None
    lost: bool = False


@dataclass
class Violation:
    invariant: str
    user: str
    session: int
    scenario: str
    detail: str
    owner: str


@dataclass
class Report:
    seed: int
    users: int
    sessions: int
    turns: int
    embedder: str
    seconds: float
    violations: list[Violation] = field(default_factory=list)
    served: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)
    """How much each invariant had to check (so a 0 is not a check that never ran)."""

    def counts(self) -> dict[str, int]:
        found = Counter(v.invariant for v in self.violations)
        return {name: found.get(name, 0) for name in INVARIANTS}

    def by_owner(self) -> dict[str, dict[str, int]]:
        out: dict[str, Counter[str]] = defaultdict(Counter)
        for v in self.violations:
            out[v.invariant][v.owner] += 1
        return {k: dict(c) for k, c in out.items()}

    def rates(self) -> dict[str, dict[str, float | int]]:
        out: dict[str, dict[str, float | int]] = {}
        for lang in ("zh", "en", "cross", "all"):
            rel = self.served[f"{lang}:relevant"]
            irr = self.served[f"{lang}:irrelevant"]
            total = rel + irr
            out[lang] = {
                "served": total,
                "served_relevant": round(rel / total, 3) if total else 0.0,
                "served_irrelevant": round(irr / total, 3) if total else 0.0,
                "unrelated_tasks": self.served[f"{lang}:unrelated_tasks"],
                "unrelated_silent": round(
                    self.served[f"{lang}:unrelated_silent"] / self.served[f"{lang}:unrelated_tasks"], 3
                )
                if self.served[f"{lang}:unrelated_tasks"]
                else 0.0,
            }
        return out


class Simulation:
    """Drives the simulated users through one :class:`Hindsight` bundle and checks the invariants."""

    def __init__(self, hs: Hindsight, *, seed: int, max_block_chars: int, max_lines: int) -> None:
        self.hs = hs
        self.rng = random.Random(seed)
        self.max_block_chars = max_block_chars
        self.max_lines = max_lines
        self.prompts = _Prompts()
        self.agent = create_agent(ReactiveToolModel(respond=_respond), tools=[SEND], middleware=[hs.middleware()])
        self.known: dict[str, Known] = {}
        self.pending: dict[tuple[str, Kind], set[str]] = defaultdict(set)
        self.kind_of: dict[str, str] = {}
        self.run_kind: dict[str, str] = {}
        self.turns = 0
        self.stored = 0
        self.blocks = 0
        self.headers = {get_templates(loc).block_header: get_templates(loc).task_header for loc in ("zh", "en")}

    # -- one turn
    def say(self, user: str, thread: str, text: str, kind: str) -> tuple[str, list[str], str]:
        """Send a turn; returns the run id, the ids served to it and the block the model saw."""
        run_id = str(uuid.uuid4())
        start = len(self.prompts.seen)
        config: Any = {
            "configurable": {"thread_id": thread, "user_id": user},
            "run_id": run_id,
            "callbacks": [self.prompts],
        }
        self.agent.invoke({"messages": [HumanMessage(text)]}, config=config)
        self.turns += 1
        self.run_kind[run_id] = kind
        record = self.hs.journal.get(run_id, namespace=user)
        for memory_id in record.produced:
            self.kind_of.setdefault(memory_id, kind)
        seen = self.prompts.seen[start:]
        human = [m for m in seen[0] if m.type == "human"][-1] if seen else None
        return run_id, list(record.served_ids), str(human.content) if human else ""

    def _statements(self, user: str) -> dict[str, float]:
        return {
            u.memory_id: u.score_confidence
            for u in self.hs.store.list_units(namespace=user, source="user_feedback", status="active")
        }

    def _block(self, prompt: str) -> str:
        for header, task_header in self.headers.items():
            if header in prompt:
                return header + prompt.split(header, 1)[1].split(task_header, 1)[0].rstrip()
        return ""

    # -- one session
    def session(self, user: str, lang: Lang, kinds: Sequence[Kind], n: int, scenario: Scenario, state: dict[str, Any],
                report: Report) -> None:  # fmt: skip
        thread = f"{user}-s{n}"
        rng = self.rng
        kind: Kind = rng.choice(list(kinds))
        superseded_before = {u.memory_id for u in self.hs.store.list_units(namespace=user, status="superseded")}
        statements_before = self._statements(user)
        turn_lang: Lang = lang
        if scenario == "cross_language":
            turn_lang = "en" if lang == "zh" else "zh"
        week = rng.randint(1, 52)
        if scenario in ("unrelated", "unrelated_fail"):
            task_kind = "unrelated"
            task = EMAIL[turn_lang].format(n=week) if scenario == "unrelated_fail" else rng.choice(UNRELATED[turn_lang])
        else:
            task_kind = kind
            task = rng.choice(TASKS[kind][turn_lang]).format(n=rng.randint(1, 12))
        _, served, prompt = self.say(user, thread, task, task_kind)
        self.check_block(prompt, user, n, scenario, report)
        self.check_superseded(served, superseded_before, user, n, scenario, report)
        self._rate(served, task_kind, lang, turn_lang, prompt, report)
        if task_kind != "unrelated":
            self._check_served(user, kind, served, n, scenario, report)
            self._check_order(user, served, n, scenario, report)
        said: Statement | None = None
        said_lang: Lang = lang
        if scenario in ("correction", "follow_up"):
            if scenario == "follow_up":
                _, served2, prompt2 = self.say(user, thread, rng.choice(FOLLOW_UP[lang]), kind)
                self.check_block(prompt2, user, n, scenario, report)
                self.check_superseded(served2, superseded_before, user, n, scenario, report)
            said = rng.choice(CORRECTIONS[kind])
        elif scenario == "preference":
            step = state.setdefault(f"pref:{kind}", 0)
            said = PREFERENCES[kind][min(step, 1)]
            state[f"pref:{kind}"] = step + 1
            if step >= 1 and state.get("changes_in_other_language"):  # a bilingual user changes it in the other
                said_lang = "en" if lang == "zh" else "zh"  # language: the claim rule is unsure, both stay
        elif scenario == "conditional":
            step = state.setdefault(f"cond:{kind}", 0)
            said = CONDITIONALS[kind][step % 2]
            state[f"cond:{kind}"] = step + 1
        if said is not None:
            before = set(self._statements(user))
            _, _, prompt3 = self.say(user, thread, said.text[said_lang], kind)
            self.check_block(prompt3, user, n, scenario, report)
            new = [i for i in self._statements(user) if i not in before]
            self._register(user, said_lang, said, new)
        self._check_statements(user, statements_before, n, scenario, report)

    def _register(self, user: str, lang: Lang, said: Statement, new: list[str]) -> None:
        for memory_id in new:
            unit = self.hs.store.get(memory_id, namespace=user)
            for old in self.known.values():  # a changed preference replaces the older one (same subject, no condition)
                if (
                    old.user == user
                    and old.statement.kind == said.kind
                    and old.statement.subject == said.subject
                    and old.statement.condition is None
                    and said.condition is None
                    and old.statement.text != said.text
                ):
                    old.replaced = True
                    old.replaced_by = memory_id
                    self.pending[(user, said.kind)].discard(old.memory_id)
            self.known[memory_id] = Known(memory_id, user, said, lang, unit.score_confidence)
            self.stored += 1
            self.kind_of[memory_id] = said.kind
            self.pending[(user, said.kind)].add(memory_id)

    # -- the invariants
    def _violate(self, report: Report, invariant: str, user: str, n: int, scenario: str, detail: str) -> None:
        owner = OWNERS.get((invariant, scenario), "")
        if not owner and invariant == "statement_lost":
            owner = "point 3 (supersede only when subject and condition match)"
        if not owner and invariant == "statement_debited":
            owner = "point 2 (credit only what was used)"
        if not owner and invariant in ("old_preference_first", "superseded_served"):
            owner = "point 3 (supersede only what truly changes; unsure: both stay, the newer first)"
        if not owner and invariant == "correction_not_served":
            owner = "point 1 (relevance floor) / point 4 (correction filed under the wrong task)"
        report.violations.append(Violation(invariant, user, n, scenario, detail, owner or "unassigned"))

    def check_block(self, prompt: str, user: str, n: int, scenario: str, report: Report) -> None:
        block = self._block(prompt)
        if not block:
            return
        self.blocks += 1
        lines = [line for line in block.splitlines()[1:] if line[:1].isdigit()]
        if len(block) > self.max_block_chars or len(lines) > self.max_lines:
            self._violate(report, "block_over_budget", user, n, scenario, f"{len(block)} chars, {len(lines)} lines")

    def check_superseded(self, served: list[str], before: set[str], user: str, n: int, scenario: str,
                          report: Report) -> None:  # fmt: skip
        report.checks["superseded at a session's start"] += len(before)
        for memory_id in served:
            if memory_id in before:
                self._violate(report, "superseded_served", user, n, scenario, memory_id)

    def _check_served(self, user: str, kind: Kind, served: list[str], n: int, scenario: str, report: Report) -> None:
        waiting = self.pending.pop((user, kind), set())
        for memory_id in sorted(waiting):
            known = self.known[memory_id]
            if known.replaced:
                continue
            report.checks["statements checked at the next task of their kind"] += 1
            if memory_id not in served:
                text = known.statement.text[known.lang]
                self._violate(report, "correction_not_served", user, n, scenario, f"{text!r} ({memory_id})")

    def _check_order(self, user: str, served: list[str], n: int, scenario: str, report: Report) -> None:
        """A changed preference whose old version is still served: the newer must rank first."""
        report.checks.setdefault("both versions of a changed preference served", 0)  # reported when 0 as well
        for known in self.known.values():
            new = known.replaced_by
            if known.user == user and new and known.memory_id in served and new in served:
                report.checks["both versions of a changed preference served"] += 1
                if served.index(known.memory_id) < served.index(new):
                    old, newer = known.statement.text[known.lang], self.known[new].statement.text[known.lang]
                    self._violate(report, "old_preference_first", user, n, scenario, f"{old!r} above {newer!r}")

    def _check_statements(self, user: str, before: dict[str, float], n: int, scenario: str, report: Report) -> None:
        now = {u.memory_id: u for u in self.hs.store.list_units(namespace=user, source="user_feedback")}
        for known in self.known.values():
            if known.user != user or known.replaced or known.lost:
                continue
            unit = now.get(known.memory_id)
            text = known.statement.text[known.lang]
            if unit is None or unit.status != "active":
                if known.memory_id in before or unit is not None:  # lost in this session (or never active)
                    status = "deleted" if unit is None else unit.status
                    self._violate(report, "statement_lost", user, n, scenario, f"{text!r} is {status}")
                    known.lost = True  # reported once
                continue
            if unit.score_confidence < known.confidence - 1e-9:
                self._violate(
                    report,
                    "statement_debited",
                    user,
                    n,
                    scenario,
                    f"{text!r}: {known.confidence:.2f} -> {unit.score_confidence:.2f}",
                )
                known.confidence = unit.score_confidence  # each debit reported once

    def _rate(self, served: list[str], task_kind: str, lang: Lang, turn_lang: Lang, prompt: str,
              report: Report) -> None:  # fmt: skip
        slice_ = "cross" if turn_lang != lang else lang
        for key in (slice_, "all"):
            if task_kind == "unrelated":
                report.served[f"{key}:unrelated_tasks"] += 1
                report.served[f"{key}:unrelated_silent"] += int(not served)
            for memory_id in served:
                relevant = task_kind != "unrelated" and self.kind_of.get(memory_id) == task_kind
                report.served[f"{key}:{'relevant' if relevant else 'irrelevant'}"] += 1


COVER: tuple[Scenario, ...] = (
    "correction",
    "follow_up",
    "preference",
    "preference",
    "conditional",
    "conditional",
    "unrelated_fail",
    "unrelated_fail",
    "cross_language",
)
"""Every user meets each of these (in a seeded order) before the weighted draws: a preference and a conditional
fact twice (so one changes and the other gets its partner), a failing e-mail twice (the week number changes)."""


def _plan(rng: random.Random, sessions: int) -> list[Scenario]:
    """A user's sessions: a first task, the covering scenarios shuffled, then scenarios drawn by weight (seeded)."""
    names = list(WEIGHTS)
    weights = [WEIGHTS[s] for s in names]
    cover = list(COVER)
    rng.shuffle(cover)
    plan: list[Scenario] = ["task", *cover]
    return (plan + rng.choices(names, weights=weights, k=max(0, sessions - len(plan))))[:sessions]


def simulate(
    *,
    users: int = 24,
    sessions: int = 10,
    seed: int = 33,
    embeddings: Embeddings | None = None,
    max_block_chars: int = 1500,
    max_lines: int = 6,
    k: int = 6,
    min_relevance: Any = "auto",
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Run ``users`` × ``sessions`` seeded sessions through the real middleware; every invariant checked.

    Args:
        users: Simulated users (half write Chinese, half English; each has one or two task kinds).
        sessions: Sessions (threads) per user.
        seed: The random seed: the same seed, the same conversations.
        embeddings: The store's embedder; ``None``: the package default (real models).
        max_block_chars: The block budget checked by ``block_over_budget`` (and given to the session).
        max_lines: The block's line budget.
        k: Memories recalled per task.
        min_relevance: The session's relevance floor (``"auto"``, the default; ``None`` switches it off).
        progress: Called with a line per user (``print`` for the command line).
    """
    rng = random.Random(seed)
    start = time.perf_counter()
    store = (
        MemoryStore(backend=InMemoryBackend(), embeddings=embeddings)
        if embeddings
        else MemoryStore(backend=InMemoryBackend())
    )
    name = type(store.embeddings).__name__
    report = Report(seed=seed, users=users, sessions=users * sessions, turns=0, embedder=name, seconds=0.0)
    options: dict[str, Any] = {"k": k, "max_lines": max_lines, "max_block_chars": max_block_chars}
    with Hindsight(store=store, min_relevance=min_relevance, **options) as hs:
        sim = Simulation(hs, seed=seed, max_block_chars=max_block_chars, max_lines=max_lines)
        for i in range(users):
            user = f"user{i:02d}"
            lang: Lang = "zh" if i % 2 == 0 else "en"
            kinds = rng.sample(list(KINDS), k=1 + (i % 3 == 0))
            state: dict[str, Any] = {"changes_in_other_language": i % 6 >= 4}  # 4 zh and 4 en users of 24
            for n, scenario in enumerate(_plan(rng, sessions)):
                sim.session(user, lang, kinds, n, scenario, state, report)
            if progress:
                progress(f"{user} ({lang}, {'+'.join(kinds)}): {len(report.violations)} violations so far")
        report.turns = sim.turns
        report.checks["user statements stored"] = sim.stored
        report.checks["user statements replaced by a changed preference"] = sum(k.replaced for k in sim.known.values())
        report.checks["blocks checked"] = sim.blocks
        report.checks["changed preferences whose old version is still active"] = sum(
            k.replaced and hs.store.get(k.memory_id, namespace=k.user).status == "active" for k in sim.known.values()
        )
    store.close()
    report.seconds = round(time.perf_counter() - start, 1)
    return report


# ---------------------------------------------------------------------------- output
def _markdown(report: Report) -> str:
    counts = report.counts()
    owners = report.by_owner()
    lines = [
        "# Simulated users",
        "",
        f"{report.users} users, {report.sessions} sessions, {report.turns} turns, seed {report.seed}, "
        f"embedder {report.embedder}, {report.seconds:.0f} s (`benchmarks/simulated_users.py`).",
        "",
        "## Invariants",
        "",
        "| invariant | violations | waits for |",
        "|---|---|---|",
    ]
    for name in INVARIANTS:
        who = "; ".join(f"{o}: {c}" for o, c in sorted(owners.get(name, {}).items())) or "-"
        lines.append(f"| `{name}` | {counts[name]} | {who} |")
    lines += ["", "## Served memories", "", "| slice | served | relevant | irrelevant | unrelated tasks | silent on them |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for slice_, r in report.rates().items():
        lines.append(
            f"| {slice_} | {r['served']} | {r['served_relevant']:.3f} | {r['served_irrelevant']:.3f} "
            f"| {r['unrelated_tasks']} | {r['unrelated_silent']:.3f} |"
        )
    lines += ["", "## What was checked", "", "| check | count |", "|---|---|"]
    lines += [f"| {name} | {count} |" for name, count in sorted(report.checks.items())]
    lines += ["", "## First violations of each invariant", ""]
    for name in INVARIANTS:
        for v in [v for v in report.violations if v.invariant == name][:5]:
            lines.append(f"- `{name}` {v.user} session {v.session} ({v.scenario}): {v.detail} — {v.owner}")
    return "\n".join(lines) + "\n"


def write(report: Report, name: str = "simulated_users") -> None:
    """Write ``benchmarks/results/<name>.{json,md}``."""
    RESULTS.mkdir(exist_ok=True)
    data = {
        "seed": report.seed,
        "users": report.users,
        "sessions": report.sessions,
        "turns": report.turns,
        "embedder": report.embedder,
        "seconds": report.seconds,
        "invariants": report.counts(),
        "owners": report.by_owner(),
        "rates": report.rates(),
        "checks": dict(report.checks),
        "violations": [asdict(v) for v in report.violations],
    }
    (RESULTS / f"{name}.json").write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    (RESULTS / f"{name}.md").write_text(_markdown(report), encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=24)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--embedder", choices=["default", "fake"], default="default")
    args = parser.parse_args(argv)
    embeddings: Embeddings | None = None
    if args.embedder == "fake":
        from tests.fakes import NgramEmbeddings

        embeddings = NgramEmbeddings()
    report = simulate(users=args.users, sessions=args.sessions, seed=args.seed, embeddings=embeddings, progress=print)
    write(report)
    print(_markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
