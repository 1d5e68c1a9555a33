"""A correction attaches to the task it corrects; the block's frame speaks the memories' language (issue 33, point 4).

On c351316, ``生成本周的销售周报`` → ``有误差的数据怎么处理？`` → ``不对，金额要用含税价`` filed the
correction under the follow-up question (``用户纠正（任务：有误差的数据怎么处理？）：…``), so the next
weekly report never saw it; and an English correction came back in the Chinese ``[相关经验]`` frame.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from langchain_hindsight import Hindsight, MemoryStore, MemoryUnit
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.types import Trajectory
from tests.fakes import NgramEmbeddings


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    with MemoryStore(backend=InMemoryBackend(), embeddings=NgramEmbeddings()) as s:
        yield s


def _turn(hs: Hindsight, text: str, thread: str) -> str:
    served = hs.session.serve(text, thread_id=thread)
    hs.session.finish(served, Trajectory(run_id=served.run_id, task=text, outcome="success", final_answer="好的"))
    return served.run_id


def _corrections(store: MemoryStore) -> list[MemoryUnit]:
    return [u for u in store.list_units() if u.source == "user_feedback"]


# ---------------------------------------------------------------------------- the session
def test_a_correction_after_a_follow_up_question_is_filed_under_the_task_zh(store: MemoryStore) -> None:
    with Hindsight(store=store, min_relevance=None) as hs:
        task_run = _turn(hs, "生成本周的销售周报", "t")
        question_run = _turn(hs, "有误差的数据怎么处理？", "t")
        served = hs.session.serve("不对，金额要用含税价", thread_id="t")
        assert served.corrects == task_run
        assert hs.journal.get(question_run).feedback == []
        (correction,) = _corrections(store)
        assert correction.content == "用户纠正（任务：生成本周的销售周报）：金额要用含税价"
        assert correction.task_type == "weekly_report"
        nxt = hs.session.serve("生成下周的销售周报", thread_id="t2")
        assert correction.memory_id in nxt.memory_ids  # served to the next task of its kind
        assert nxt.task_prompt.startswith("[相关经验]")


def test_a_correction_after_a_new_task_goes_to_the_new_task(store: MemoryStore) -> None:
    with Hindsight(store=store, min_relevance=None) as hs:
        _turn(hs, "生成本周的销售周报", "t")
        monthly = _turn(hs, "再生成一份月报", "t")
        served = hs.session.serve("不对，金额要用含税价", thread_id="t")
        assert served.corrects == monthly
        (correction,) = _corrections(store)
        assert correction.content == "用户纠正（任务：再生成一份月报）：金额要用含税价"
        assert correction.task_type == "monthly_report"


def test_a_second_correction_skips_the_first_and_the_chat_turn(store: MemoryStore) -> None:
    with Hindsight(store=store, min_relevance=None) as hs:
        task_run = _turn(hs, "生成本周的销售周报", "t")
        _turn(hs, "不对，金额要用含税价", "t")
        _turn(hs, "好的，谢谢", "t")
        served = hs.session.serve("错了，周报只统计本周一到周日", thread_id="t")
        assert served.corrects == task_run
        assert {u.content for u in _corrections(store)} == {
            "用户纠正（任务：生成本周的销售周报）：金额要用含税价",
            "用户纠正（任务：生成本周的销售周报）：周报只统计本周一到周日",
        }


def test_an_english_correction_is_stored_and_framed_in_english(store: MemoryStore) -> None:
    with Hindsight(store=store, min_relevance=None) as hs:
        task_run = _turn(hs, "Generate this week's sales report", "t")
        _turn(hs, "How should we handle rows with rounding errors?", "t")
        served = hs.session.serve("No, amounts must include tax", thread_id="t")
        assert served.corrects == task_run
        (correction,) = _corrections(store)
        assert (
            correction.content == "User correction (task: Generate this week's sales report): Amounts must include tax"
        )
        nxt = hs.session.serve("Generate next week's sales report", thread_id="t2")
        assert correction.memory_id in nxt.memory_ids
        assert nxt.task_prompt.startswith("[Relevant experience]")
        assert "[Current task]" in nxt.task_prompt
        assert "[相关经验]" not in nxt.task_prompt
        assert "[当前任务]" not in nxt.task_prompt


def test_an_explicit_locale_wins_over_the_memories_language(store: MemoryStore) -> None:
    store.add(MemoryUnit(task_type="weekly_report", content="Weekly reports count Monday to Sunday."))
    with Hindsight(store=store, min_relevance=None, locale="zh") as hs:
        served = hs.session.serve("Generate this week's sales report")
        assert served.memories
        assert served.task_prompt.startswith("[相关经验]")
        assert "[当前任务]" in served.task_prompt
    with Hindsight(store=store, min_relevance=None) as hs:
        assert hs.session.serve("生成本周的销售周报").task_prompt.startswith("[Relevant experience]")


def test_mixed_memories_follow_the_majority_then_the_task(store: MemoryStore) -> None:
    store.add(MemoryUnit(task_type="weekly_report", content="Weekly reports count Monday to Sunday."))
    store.add(MemoryUnit(task_type="weekly_report", content="周报的金额要用含税价。"))
    with Hindsight(store=store, min_relevance=None, task_type="weekly_report") as hs:
        zh = hs.session.serve("生成本周的销售周报")
        en = hs.session.serve("Generate this week's sales report")
        assert len(zh.memories) == len(en.memories) == 2  # a tie: the task's language decides
        assert zh.task_prompt.startswith("[相关经验]")
        assert en.task_prompt.startswith("[Relevant experience]")
        store.add(MemoryUnit(task_type="weekly_report", content="Send the weekly report as a PDF."))
        assert hs.session.serve("生成本周的销售周报").task_prompt.startswith("[Relevant experience]")  # 2 of 3


def test_a_correction_repeated_after_it_was_served_is_journaled(store: MemoryStore) -> None:
    """The same correction again, in a run that was served it, merges into it; on c351316 this raised a KeyError
    inside the verdict (swallowed under on_error='log': the feedback was never journaled)."""
    with Hindsight(store=store, min_relevance=None, on_error="raise") as hs:
        _turn(hs, "生成本周的销售周报", "t")
        _turn(hs, "不对，金额要用含税价", "t")
        (correction,) = _corrections(store)
        again = _turn(hs, "生成本周的销售周报", "t2")
        assert correction.memory_id in hs.journal.get(again).served_ids
        served = hs.session.serve("不对，金额要用含税价", thread_id="t2")
        assert served.corrects == again
        entry = hs.journal.get(again).feedback[-1]
        assert entry.rejected
        assert [u.memory_id for u in _corrections(store)] == [correction.memory_id]  # merged, not duplicated
