"""``langchain_hindsight.writes``: what a write did, and the judges that decide a unit with similar neighbours."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from langchain_core.messages.tool import invalid_tool_call

from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.prompts import WRITE_JUDGE_EN, WRITE_JUDGE_ZH, get_write_judge_templates
from langchain_hindsight.types import MemoryUnit
from langchain_hindsight.writes import LLMWriteJudge, Neighbour, RuleWriteJudge, WriteDecision, WriteResult
from tests.fakes import ScriptedToolModel
from tests.unit_tests.store.test_write_semantics import _fact

# ---------------------------------------------------------------- the LLM judge, one bounded call


def test_judge_reads_tool_arguments_cut_off_after_the_answer() -> None:
    """Arguments the provider could not parse (cut off at max_tokens after the object) are salvaged."""
    old, new = _fact("周报统计上周一到上周日的数据。"), _fact("周报只统计本周一到本周日的数据。")
    args = f'{{"decision": "update", "target_id": "{old.memory_id}", "reason": "更正"}}\n理由：新的说法更'
    cut = AIMessage(content="", invalid_tool_calls=[invalid_tool_call(name="JudgeOutput", args=args, id="c1")])
    model = ScriptedToolModel(messages=iter([cut]))
    decision = LLMWriteJudge(model).judge(new, [Neighbour(old, 0.95)])
    assert decision == WriteDecision("update", old.memory_id, "更正")
    assert model.bound_tool_names == ["JudgeOutput"]


# ---------------------------------------------------------------- the pieces


def test_write_result_is_a_frozen_value_with_the_unit_id() -> None:
    unit = MemoryUnit(content="x")
    result = WriteResult("added", unit)
    assert result.memory_id == unit.memory_id
    assert result.related_ids == ()
    with pytest.raises(AttributeError):
        result.action = "merged"  # type: ignore[misc]


def test_rule_judge_keeps_both_unless_sure_of_a_contradiction() -> None:
    a, b = MemoryUnit(content="客户甲公司希望通过邮件联系。"), MemoryUnit(content="客户乙公司希望通过电话联系。")
    decision = RuleWriteJudge().judge(b, [Neighbour(a, 0.99)])  # another subject, however similar
    assert decision == WriteDecision("add", None, decision.reason)
    assert a.memory_id in decision.reason
    c = MemoryUnit(content="客户甲公司希望通过电话联系。")
    decision = RuleWriteJudge().judge(c, [Neighbour(b, 0.99), Neighbour(a, 0.9)])
    assert (decision.decision, decision.target_id) == ("conflict", a.memory_id)
    assert "contradicts" in decision.reason


def test_judge_templates_have_both_locales() -> None:
    assert get_write_judge_templates() is WRITE_JUDGE_ZH
    assert get_write_judge_templates("en") is WRITE_JUDGE_EN
    for t in (WRITE_JUDGE_ZH, WRITE_JUDGE_EN):
        assert "{new}" in t.prompt
        assert "{neighbours}" in t.prompt
    with pytest.raises(ConfigurationError):
        get_write_judge_templates("fr")  # type: ignore[arg-type]
