"""Issue 20's acceptance scenarios: the memory's own judgement, met as a new user meets it.

Every scenario drives a real ``create_agent`` agent with ``hs.middleware()``, a checkpointer
(``InMemorySaver``) and ``thread_id``\\ s, on the exact turns quoted in the issue, and asserts
through the public API: what the model was shown (the request captured by a callback),
``hs.recall``, ``hs.store.get``/``history``/``list_units`` and ``hs.journal``.

Scenarios whose outcome depends on the embedder (the relevance floor, the Java → Python
neighbours, junk against short queries) run on the real default embedder (the ``routed_embeddings``
fixture makes them integration tests); the others run on the fast fake embedder and the
in-memory backend.

The suite was written before the fixes, against the names the issue's brief gave: ``MemoryUnit.evidence``
(how many times a lesson was learned) and ``Hindsight.undo_feedback(run_id)`` (``run_id`` is the run the
feedback was given on, as for ``Hindsight.feedback``); both landed under those names. A scenario the
current design does not meet yet is a strict ``xfail`` naming the known gap, so it fails loudly once fixed.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import Embeddings
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langgraph.checkpoint.memory import InMemorySaver

from langchain_hindsight import Hindsight, MemoryNotFoundError, MemoryStore, MemoryUnit
from langchain_hindsight.prompts import Locale, get_templates
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.testing import ReactiveToolModel, Turn, call
from tests.fakes import WEEKLY_REPORT_LESSON, NgramEmbeddings, Prompts, closing_factory

TASK = {"zh": "生成本周的销售周报", "en": "Write this week's sales report"}
REPORT = {"zh": "周报：本周销售额 42 万元。", "en": "Weekly report: sales this week were 420k."}
CORRECTION = {
    "zh": "不对，周报只统计本周一到周日",
    "en": "No, the weekly report only covers Monday to Sunday of this week",
}
ROLLING = {"zh": "周报按最近7天滚动窗口统计销售额。", "en": "The weekly sales report uses a rolling 7-day window."}


# ---------------------------------------------------------------------------- harness
LOCALES: tuple[Locale, ...] = ("zh", "en")


def _conflict_note(locale: Locale) -> re.Pattern[str]:
    """The block's conflict note, whatever indices it names (built from the locale's template)."""
    before, after = get_templates(locale).conflict_note.split("{indices}")
    return re.compile(re.escape(before) + r".+?" + re.escape(after))


def _has_conflict_note(text: str) -> bool:
    return any(_conflict_note(locale).search(text) for locale in LOCALES)


def answer(text: str) -> Callable[[list[BaseMessage]], Turn]:
    """A model that answers every turn with ``text`` (no tool call)."""

    def respond(messages: list[BaseMessage]) -> Turn:
        return text

    return respond


class User:
    """A user talking to one ``create_agent`` agent (``hs.middleware()``, checkpointed) in threads.

    Every model request is recorded, so a test can read the block the model received.
    """

    def __init__(
        self,
        hs: Hindsight,
        respond: Callable[[list[BaseMessage]], Turn],
        tools: Sequence[BaseTool] = (),
    ) -> None:
        self.hs = hs
        self.prompts = Prompts()
        self.agent = create_agent(
            ReactiveToolModel(respond=respond),
            tools=list(tools),
            middleware=[hs.middleware()],
            checkpointer=InMemorySaver(),
        )
        self.requests: list[list[BaseMessage]] = []

    def say(self, text: str, *, thread: str) -> str:
        """Send one human turn in ``thread``; returns the run id (the turn's model requests in ``requests``)."""
        run_id = str(uuid.uuid4())
        start = len(self.prompts.seen)
        config: Any = {"configurable": {"thread_id": thread}, "run_id": run_id, "callbacks": [self.prompts]}
        self.agent.invoke({"messages": [HumanMessage(text)]}, config=config)
        self.requests = self.prompts.seen[start:]
        assert self.requests, f"the model was not called for {text!r}"
        return run_id

    @property
    def block(self) -> str:
        """The text the model was shown for the last turn's task (block + task), from its first request."""
        task = [m for m in self.requests[0] if m.type == "human"][-1]
        return str(task.content)


def _served(block: str) -> str:
    """The ``[相关经验]`` part of a task message ('' when none was injected)."""
    for locale in LOCALES:
        t = get_templates(locale)
        if t.block_header in block:
            return block.split(t.block_header, 1)[1].split(t.task_header, 1)[0]
    return ""


def _confidences(hs: Hindsight) -> dict[str, float]:
    return {u.memory_id: u.score_confidence for u in hs.store.list_units()}


def _feedback_units(hs: Hindsight) -> list[MemoryUnit]:
    return [u for u in hs.store.list_units() if u.source == "user_feedback"]


def _lesson(content: str, *, confidence: float | None = None, **fields: Any) -> MemoryUnit:
    return MemoryUnit(task_type="weekly_report", content=content, confidence=confidence, **fields)


def _opened(embeddings: Embeddings) -> Iterator[Callable[..., Hindsight]]:
    return closing_factory(
        lambda i, **kwargs: Hindsight(store=MemoryStore(backend=InMemoryBackend(), embeddings=embeddings), **kwargs)
    )


@pytest.fixture
def make_hs(fake_embeddings: NgramEmbeddings) -> Iterator[Callable[..., Hindsight]]:
    """``Hindsight`` bundles on the in-memory backend and the fast fake embedder."""
    yield from _opened(fake_embeddings)


# ---------------------------------------------------------------------------- 1. follow-up questions
FOLLOW_UPS = [
    ("zh", "有误差的数据怎么处理？"),
    ("zh", "不对外公开的门店数据也要统计进周报吗？"),
    ("zh", "错了的订单要从周报里剔除吗？"),
    ("en", "Actually, could you also add a chart?"),
]


@pytest.mark.parametrize(
    ("locale", "question"),
    FOLLOW_UPS,
    ids=["zh-inaccurate-data", "zh-private-stores", "zh-wrong-orders", "en-add-a-chart"],
)
def test_follow_up_questions_are_not_corrections(locale: str, question: str, make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs(locale=locale)
    user = User(hs, answer(REPORT[locale]))
    # An earlier, real correction: it is stored and served to the next weekly report.
    user.say(TASK[locale], thread="earlier")
    user.say(CORRECTION[locale], thread="earlier")
    (correction,) = _feedback_units(hs)

    previous = hs.journal.get(user.say(TASK[locale], thread="t"))
    assert correction.memory_id in previous.served_ids, "precondition: the real correction is served"
    before = _confidences(hs)

    user.say(question, thread="t")

    problems = []
    stored = [u.content for u in _feedback_units(hs) if u.memory_id != correction.memory_id]
    if stored:
        problems.append(f"stored as user_feedback: {stored}")
    after = _confidences(hs)
    lowered = {i: f"{before[i]:.3f} -> {after[i]:.3f}" for i in previous.served_ids if after[i] < before[i] - 1e-9}
    if lowered:
        what = ["the earlier correction" if i == correction.memory_id else i for i in lowered]
        problems.append(f"demoted what the previous run was served ({', '.join(what)}): {list(lowered.values())}")
    if any(f.rejected for f in hs.journal.get(previous.run_id).feedback):
        problems.append("journaled as a rejection of the previous run")
    assert not problems, f"the follow-up question {question!r} was taken as a correction: " + "; ".join(problems)


# ---------------------------------------------------------------------------- 2. corrections on different points
POINTS = {  # each turn, and the point it makes (what the stored correction must say)
    "zh": {
        "不对，周报只统计本周一到周日": "本周一到周日",
        "不对，金额要用含税价": "含税价",
        "错了，周报要发给张经理而不是李经理": "张经理",
    },
    "en": {
        "No, the weekly report only covers Monday to Sunday of this week": "Monday to Sunday",
        "No, amounts must include tax": "include tax",
        "Wrong, the report goes to Manager Zhang, not Manager Li": "Manager Zhang",
    },
}


@pytest.mark.parametrize("locale", list(POINTS))
def test_corrections_on_different_points_do_not_wear_each_other_down(
    locale: str, make_hs: Callable[..., Hindsight]
) -> None:
    hs = make_hs(locale=locale)
    user = User(hs, answer(REPORT[locale]))
    for i, correction in enumerate(POINTS[locale]):
        user.say(TASK[locale], thread=f"week-{i}")
        user.say(correction, thread=f"week-{i}")

    stored = {point: [u for u in _feedback_units(hs) if point in u.content] for point in POINTS[locale].values()}
    assert all(len(units) == 1 for units in stored.values()), {p: [u.content for u in us] for p, us in stored.items()}
    units = {point: hs.store.get(us[0].memory_id) for point, us in stored.items()}
    problems = []
    worn = {p: f"{u.score_confidence:.3f}" for p, u in units.items() if u.score_confidence < 0.85}
    if worn:
        problems.append(f"corrections worn below 0.85: {worn}")
    inactive = {p: u.status for p, u in units.items() if u.status != "active"}
    if inactive:
        problems.append(f"corrections no longer active: {inactive}")

    user.say(TASK[locale], thread="next-week")
    served = _served(user.block)
    missing = [p for p in POINTS[locale].values() if p not in served]
    if missing:
        problems.append(f"not served to the next weekly report: {missing}")
    if _has_conflict_note(served):
        problems.append("the block flags them as conflicting")
    assert not problems, "three corrections on different points: " + "; ".join(problems) + f"\n{served}"


# ---------------------------------------------------------------------------- 3. a corrected lesson stays corrected
@pytest.mark.parametrize("locale", ["zh", "en"])
def test_corrected_lesson_is_superseded_and_never_served_again(locale: str, make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs(locale=locale)
    wrong = hs.store.add(_lesson(ROLLING[locale])).unit
    user = User(hs, answer(REPORT[locale]))
    user.say(TASK[locale], thread="t")
    assert ROLLING[locale] in _served(user.block), "precondition: the lesson is served"
    user.say(CORRECTION[locale], thread="t")

    (correction,) = _feedback_units(hs)
    after_correction = hs.store.get(wrong.memory_id)
    problems = []
    if after_correction.status != "superseded":
        problems.append(
            f"still {after_correction.status!r} at {after_correction.score_confidence:.3f} after the correction"
        )
    chain = [u.memory_id for u in hs.store.history(wrong.memory_id)]
    if chain[:2] != [correction.memory_id, wrong.memory_id]:
        problems.append(f"history() does not lead to the correction: {chain}")

    served_again = []
    for run in range(12):
        user.say(TASK[locale], thread=f"later-{run}")
        if ROLLING[locale] in _served(user.block):
            served_again.append(run + 1)
    if served_again:
        problems.append(f"served again in {len(served_again)} of 12 later runs")
    final = hs.store.get(wrong.memory_id)
    if final.score_confidence > after_correction.score_confidence + 1e-9:
        problems.append(f"regained credit: {after_correction.score_confidence:.3f} -> {final.score_confidence:.3f}")
    assert not problems, "the corrected lesson: " + "; ".join(problems)


# ---------------------------------------------------------------------------- 4. one lesson across files
BOM_ERROR = "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xef in position 0: invalid start byte"


def _bom_tools(root: Path) -> list[BaseTool]:
    def read_csv(path: str, encoding: str = "utf-8") -> str:
        raw = Path(path).read_bytes()
        if encoding.lower().replace("_", "-") == "utf-8" and raw.startswith(b"\xef\xbb\xbf"):
            raise ToolException(BOM_ERROR)
        rows = raw.decode(encoding).splitlines()
        return f"读取成功：{len(rows) - 1} 行，表头 {rows[0]}"

    return [
        StructuredTool.from_function(
            read_csv,
            name="read_csv",
            description="Read a CSV file. Arguments: path, encoding (default 'utf-8').",
            handle_tool_error=True,
        )
    ]


def _bom_policy(messages: list[BaseMessage]) -> Turn:
    """Always the same mistake on a new file: utf-8 first, then utf-8-sig, then the total."""
    last = messages[-1]
    task = next(m for m in reversed(messages) if m.type == "human")
    paths = re.findall(r"/\S+?\.csv", str(task.content))  # the task's own path comes last, after any block
    assert paths, task.content
    if last.type == "tool":
        if "UnicodeDecodeError" in str(last.content):
            return call("read_csv", path=paths[-1], encoding="utf-8-sig")
        return f"合计完成：{last.content}"
    return call("read_csv", path=paths[-1], encoding="utf-8")


def test_the_same_failure_on_five_files_is_one_lesson_with_evidence_five(
    tmp_path: Path, make_hs: Callable[..., Hindsight]
) -> None:
    hs = make_hs()
    files = []
    for i in range(1, 7):
        path = tmp_path / f"sales_store_{i}.csv"
        path.write_bytes("门店,销售额\n北京朝阳店,1280.50\n上海静安店,860.00\n".encode("utf-8-sig"))
        files.append(path)
    user = User(hs, _bom_policy, tools=_bom_tools(tmp_path))
    for i, path in enumerate(files[:5]):
        user.say(f"统计 {path} 的销售额合计", thread=f"file-{i}")

    lessons = [u for u in hs.store.list_units(status="active") if "utf-8-sig" in u.content]
    problems = []
    if len(lessons) != 1:
        problems.append(f"{len(lessons)} active lessons for one failure")
    evidence = [u.evidence for u in lessons]
    if evidence != [5]:
        problems.append(f"evidence {evidence}, not [5]")
    per_file = [u.content for u in lessons if re.search(r"store_\d+\.csv", u.content)]
    if per_file:
        problems.append(f"{len(per_file)} lesson(s) name one file in the statement")

    user.say(f"统计 {files[5]} 的销售额合计", thread="file-6")
    served = _served(user.block)
    lines = [line for line in served.splitlines() if re.match(r"\d+\. ", line) and "utf-8-sig" in line]
    if len(lines) != 1:
        problems.append(f"the next block has {len(lines)} lines of the lesson")
    if _has_conflict_note(served):
        problems.append("the next block flags the copies as conflicting")
    assert not problems, "five files, one BOM failure: " + "; ".join(problems) + f"\n{served}"


# ---------------------------------------------------------------------------- 5. credit from real outcomes
GIVE_UPS = [("zh", "放弃：多次失败。"), ("en", "I give up after several failures.")]


@pytest.mark.parametrize(("locale", "give_up"), GIVE_UPS, ids=["zh", "en"])
def test_give_ups_and_trivial_answers_earn_no_credit(
    locale: str, give_up: str, make_hs: Callable[..., Hindsight]
) -> None:
    hs = make_hs(locale=locale)
    lesson = hs.store.add(_lesson(WEEKLY_REPORT_LESSON if locale == "zh" else ROLLING["en"], confidence=0.8)).unit

    quitter = User(hs, answer(give_up))
    run = quitter.say(TASK[locale], thread="give-up")
    assert lesson.memory_id in hs.journal.get(run).served_ids, "precondition: the lesson is served"
    problems = []
    credit = {i: round(v, 3) for i, v in (hs.journal.get(run).credit or {}).items() if v > 0}
    if credit:
        problems.append(f"{give_up!r} was credited as a success: {list(credit.values())}")
    after_give_up = hs.store.get(lesson.memory_id).score_confidence
    if after_give_up > 0.8 + 1e-9:
        problems.append(f"{give_up!r} raised the lesson 0.80 -> {after_give_up:.3f}")

    fresh = make_hs(locale=locale)  # the trivial runs start from 0.80 too, whatever the give-up did
    served = fresh.store.add(_lesson(lesson.content, confidence=0.8)).unit
    trivial = User(fresh, answer("ok"))
    for i in range(3):
        trivial.say(TASK[locale], thread=f"ok-{i}")
    reached = fresh.store.get(served.memory_id).score_confidence
    if reached >= 0.95 - 1e-6:
        problems.append(f"three runs answering 'ok' pushed a served lesson to the cap: 0.80 -> {reached:.3f}")
    assert not problems, "credit: " + "; ".join(problems)


# ---------------------------------------------------------------------------- 9. undo a correction
@pytest.mark.parametrize("locale", ["zh", "en"])
def test_undo_feedback_restores_what_a_correction_did(locale: str, make_hs: Callable[..., Hindsight]) -> None:
    hs = make_hs(locale=locale)
    wrong = hs.store.add(_lesson(ROLLING[locale])).unit
    user = User(hs, answer(REPORT[locale]))
    corrected_run = user.say(TASK[locale], thread="t")
    before = hs.store.get(wrong.memory_id)
    correcting_run = user.say(CORRECTION[locale], thread="t")
    (correction,) = _feedback_units(hs)
    # The correcting turn is a run of its own: what it was served and credited is not the correction's doing.
    gained = (hs.journal.get(correcting_run).credit or {}).get(wrong.memory_id, 0.0)
    expected = before.score_confidence + gained
    changed = hs.store.get(wrong.memory_id)
    assert (changed.status, round(changed.score_confidence, 6)) != (before.status, round(expected, 6)), (
        "precondition: the correction changed the lesson"
    )

    hs.undo_feedback(corrected_run)

    restored = hs.store.get(wrong.memory_id)
    was = f"it was {before.status!r} at {expected:.3f} without the correction"
    assert restored.status == before.status, f"undo left the lesson {restored.status!r}; {was}"
    assert restored.score_confidence == pytest.approx(expected), f"undo left it at {restored.confidence}; {was}"
    left: str
    try:
        left = hs.store.get(correction.memory_id).status
    except MemoryNotFoundError:
        left = "forgotten"
    assert left != "active", "the correction's memory is still active after undo"
    assert correction.memory_id not in {m.memory.memory_id for m in hs.recall(TASK[locale])}
    verdicts = [f for f in hs.journal.get(corrected_run).feedback if f.rejected]
    assert verdicts, "the correction's verdict is gone from the journal"
    assert all(f.undone_at is not None for f in verdicts), "the journal does not record the undo"
