"""The block's frame follows the language its memories are written for (issue 33, point 4)."""

from __future__ import annotations

import pytest

from langchain_hindsight.prompts import get_reflection_templates
from langchain_hindsight.recall.injection import block_locale

RULE_LESSON = get_reflection_templates("zh").rule_error_fix.format(
    tool="read_csv",
    failed="默认参数",
    error="UnicodeDecodeError: 'utf-8' codec can't decode byte <n> in position <n>: invalid continuation byte. "
    "The file is not utf-8-encoded.",
    fixed="encoding='gbk', delimiter=';'",
    task="统计 *.csv 中的销售额合计",
)


@pytest.mark.parametrize(
    ("contents", "task", "expected"),
    [
        # a Chinese lesson quoting a long English error is still written for a Chinese reader
        ([RULE_LESSON], "统计 data/sales_2024_02.csv 中的销售额合计", "zh"),
        ([RULE_LESSON], "sum the sales in data/sales.csv", "zh"),
        # an English correction in the Chinese template is English; so is one in the English template
        (["用户纠正（任务：weekly report）：amounts include tax"], "生成本周的销售周报", "en"),
        (["User correction (task: 生成本周的销售周报): amounts must include tax"], "生成本周的销售周报", "en"),
        (["Translate the 合同 into English before sending it."], "", "en"),
        (["用户纠正（任务：生成本周的销售周报）：金额要用含税价"], "weekly report", "zh"),
    ],
)
def test_the_frame_follows_the_memories_language(contents: list[str], task: str, expected: str) -> None:
    assert block_locale(contents, task) == expected
