"""The adapters recall with the conversation's last human turns, not the last message alone."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_hindsight.capture.messages import BLOCK_ID_PREFIX, INJECTED_MARKER, recall_query

FOLLOW_UP = "好的，那就按这个来吧"


def test_the_last_two_human_turns_oldest_first() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("第一轮的话题"),
        AIMessage("好的"),
        HumanMessage("读取 ERP 导出的销售 CSV"),
        AIMessage("需要我做什么？"),
        ToolMessage("ok", tool_call_id="1"),
        HumanMessage(FOLLOW_UP),
    ]
    assert recall_query(messages) == f"读取 ERP 导出的销售 CSV\n{FOLLOW_UP}"
    assert recall_query(messages, turns=1) == FOLLOW_UP
    assert recall_query([HumanMessage("只有一句")]) == "只有一句"
    assert recall_query([AIMessage("no human")]) == ""


def test_injected_blocks_and_blank_turns_are_skipped() -> None:
    messages: list[BaseMessage] = [
        HumanMessage("earlier task"),
        HumanMessage("[相关经验]\n1. x", id=BLOCK_ID_PREFIX + "abc"),
        HumanMessage("[相关经验] … [当前任务] old", additional_kwargs={INJECTED_MARKER: True}),
        HumanMessage("   "),
        HumanMessage("current task"),
    ]
    assert recall_query(messages) == "earlier task\ncurrent task"
