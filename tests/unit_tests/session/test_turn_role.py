"""What a human turn is in its thread: a task, a follow-up, a chat turn or a correction (issue 33, point 4).

A correction attaches to the last *task* of the thread (:func:`turn_role` decides), in zh and en, with the
hard negatives: a follow-up that is itself a new task, a question that starts like a correction.
"""

from __future__ import annotations

import pytest

from langchain_hindsight.session._conversation import CorrectionDetector, turn_role

# ---------------------------------------------------------------------------- task or follow-up
TASKS = [
    "生成本周的销售周报",
    "再生成一份月报",  # a follow-up that is itself a new task
    "把第1周的周报发给张经理",
    "本周的销售周报",
    "能不能再做一份月报？",  # a polite question asking for work
    "写一首关于秋天的诗",
    "Generate this week's sales report",
    "Now write the monthly report",
    "Could you draft another weekly report for the Shenzhen store?",
    "Send the week 3 report to Manager Zhang",
    "Translate the contract into English",
]
NOT_TASKS = [
    ("有误差的数据怎么处理？", "follow_up"),
    ("周报里的退款要算进去吗？", "follow_up"),
    ("周报怎么生成比较好？", "follow_up"),  # asks how, not for a report
    ("不对外公开的门店数据也要统计进周报吗？", "follow_up"),  # starts like a correction, asks
    ("错了的订单要从周报里剔除吗？", "follow_up"),
    ("另外再加一个环比", "follow_up"),
    ("数据在共享盘的sales目录里", "follow_up"),
    ("好的，谢谢", "chat"),
    ("不对，金额要用含税价", "correction"),
    ("How should we handle rows with rounding errors?", "follow_up"),
    ("Should refunds count in the weekly report?", "follow_up"),
    ("Wrong-way trades: should they be excluded?", "follow_up"),  # starts like a correction, asks
    ("Actually, could you also add a chart?", "follow_up"),
    ("Thanks, looks good!", "chat"),
    ("No, amounts must include tax", "correction"),
]


@pytest.mark.parametrize("turn", TASKS)
def test_a_task_is_a_task(turn: str) -> None:
    assert turn_role(turn, CorrectionDetector())[0] == "task"


@pytest.mark.parametrize(("turn", "role"), NOT_TASKS)
def test_a_follow_up_a_chat_turn_or_a_correction_is_no_task(turn: str, role: str) -> None:
    assert turn_role(turn, CorrectionDetector())[0] == role
