"""Lifecycle: decay, archive, merge pass, periodic review, usage report — all with an injected clock."""

from __future__ import annotations

import pytest

from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.lifecycle._review import format_runs, rule_patterns
from langchain_hindsight.lifecycle.policy import LifecyclePolicy
from langchain_hindsight.prompts import get_review_templates
from langchain_hindsight.runs import MemoryUse, RunRecord
from langchain_hindsight.types import MemoryUnit, ServedMemory


# ----------------------------------------------------------------------------- policy
def test_policy_validates_its_numbers() -> None:
    with pytest.raises(ConfigurationError, match="decay_factor"):
        LifecyclePolicy(decay_factor=1.5)
    with pytest.raises(ConfigurationError, match="merge_threshold"):
        LifecyclePolicy(merge_threshold=0)
    with pytest.raises(ConfigurationError, match="review_min_runs"):
        LifecyclePolicy(review_min_runs=0)


# ------------------------------------------------------------------ issue 33: set-aside memories in the review
def test_the_review_prompt_names_what_the_agent_set_aside_apart_from_what_it_used() -> None:
    used = MemoryUnit(memory_id="m-used", content="发送邮件前先确认收件人的邮箱地址", tags=["contacts"])
    aside = MemoryUnit(memory_id="m-aside", content="周报金额要用含税价", tags=["tax"])
    units = {u.memory_id: u for u in (used, aside)}
    served = [
        ServedMemory(memory_id=i, rank=r, score=0.5, similarity=0.5, confidence=0.7)
        for r, i in enumerate(("m-used", "m-aside"), 1)
    ]
    uses = [
        MemoryUse(memory_id="m-used", verdict="used", evidence="the agent said it applied it: 按第1条经验"),
        MemoryUse(memory_id="m-aside", verdict="set_aside", evidence="the agent said it does not apply: 第2条经验无关"),
    ]
    runs = [
        RunRecord(run_id=f"r{i}", task="把第1周的周报发给张经理", task_type="email", served=served, uses=uses)
        for i in range(3)
    ]
    for locale, marker in (("zh", "智能体认为不适用的经验：周报金额要用含税价"), ("en", "set aside as not applying")):
        text = format_runs(runs, units, get_review_templates(locale), locale)
        lines = text.splitlines()
        assert len(lines) == 3
        assert all(marker in line for line in lines)
        used_part = lines[0].split(marker)[0]
        assert "邮箱地址" in used_part
        assert "含税价" not in used_part  # served, set aside: not listed as used
    features = {f for _, _, f in rule_patterns(runs, units, LifecyclePolicy(), get_review_templates("zh"))}
    assert "contacts" in features
    assert "tax" not in features  # a memory every run set aside is no feature of those runs
