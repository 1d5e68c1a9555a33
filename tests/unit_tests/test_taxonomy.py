"""Task-type vocabulary: one spelling per task type (seed pitfall 3)."""

from __future__ import annotations

import pytest

from langchain_hindsight import ConfigurationError
from langchain_hindsight.taxonomy import FALLBACK_TASK_TYPE, TaskTypeVocabulary, infer_task_type, normalize_task_type


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("data_cleaning", "data_cleaning"),
        ("data-clean", "data_cleaning"),
        ("Data Cleaning", "data_cleaning"),
        ("清洗数据", "data_cleaning"),
        ("数据清洗", "data_cleaning"),
        ("周报", "weekly_report"),
        ("月报", "monthly_report"),
        ("帮我生成周报", "weekly_report"),
        ("weekly_report_v2", "weekly_report"),
        ("monthly-report", "monthly_report"),
        ("something unheard of", FALLBACK_TASK_TYPE),
        ("", FALLBACK_TASK_TYPE),
        (None, FALLBACK_TASK_TYPE),
    ],
)
def test_default_vocabulary_normalises(label: str | None, expected: str) -> None:
    assert normalize_task_type(label) == expected


def test_weekly_and_monthly_stay_distinct() -> None:
    assert normalize_task_type("weekly report") != normalize_task_type("monthly report")


def test_custom_vocabulary() -> None:
    vocab = TaskTypeVocabulary({"invoice_matching": ["对账", "reconcile"]}, fallback="misc")
    assert vocab.normalize("Reconcile") == "invoice_matching"
    assert vocab.normalize("对账") == "invoice_matching"
    assert vocab.normalize("data_cleaning") == "misc"
    assert vocab.labels == ("invoice_matching", "misc")
    assert "misc" in vocab


@pytest.mark.parametrize(
    "task_types",
    [{}, {"Bad Label": []}, {"ok": "not-a-list"}, {"ok": [""]}],
)
def test_bad_vocabularies_are_rejected(task_types: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        TaskTypeVocabulary(task_types)  # type: ignore[arg-type]


def test_non_string_label_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="task_type"):
        normalize_task_type(3)  # type: ignore[arg-type]


# ---------------------------------------------------------------- serve-time inference from task text
INFERRED = [
    # (task text, expected label) — Chinese
    ("生成本周的销售周报", "weekly_report"),
    ("帮我写一下上周的团队周报", "weekly_report"),
    ("本月的周报", "weekly_report"),  # the task's own noun beats a hint of the other kind
    ("生成本月的销售月报", "monthly_report"),
    ("整理上个月的数据，出一份月度汇报", "monthly_report"),
    ("清洗这份CSV里的重复行", "data_cleaning"),
    ("处理表格中的缺失值", "data_cleaning"),
    ("分析本季度的销售趋势", "data_analysis"),
    ("写一个解析日期的Python函数", "code_generation"),
    ("调用天气接口获取明天的预报", "api_call"),
    ("上网查一下最新的汇率新闻", "web_search"),
    ("解压这个zip文件并重命名", "file_operation"),
    ("用SQL查询订单表里的退货记录", "database_query"),
    ("撰写新功能的技术文档", "document_writing"),
    ("把这段话翻译成英文", "translation"),
    ("总结这次会议的要点", "summarization"),
    ("帮我预约下周二的会议室", "scheduling"),
    ("处理客户的退款投诉", "customer_support"),
    ("写一首关于秋天的诗", "general"),
    ("今天天气怎么样", "general"),
    # English
    ("Generate this week's sales weekly report", "weekly_report"),
    ("Prepare the weekly status update for the team", "weekly_report"),
    ("Write the monthly report for March", "monthly_report"),
    ("Summarise last month's numbers in the month-end report", "monthly_report"),
    ("Clean the customer CSV and drop duplicates", "data_cleaning"),
    ("Analyze the correlation between price and churn", "data_analysis"),
    ("Write a Python function that parses ISO dates", "code_generation"),
    ("Call the GitHub API to list open issues", "api_call"),
    ("Search the web for the latest exchange rates", "web_search"),
    ("Unzip the archive and rename the files", "file_operation"),
    ("Query the database for last quarter's orders with SQL", "database_query"),
    ("Write a README for the new library", "document_writing"),
    ("Translate this paragraph into Chinese", "translation"),
    ("Summarize this meeting transcript", "summarization"),
    ("Schedule a call with the vendor on Tuesday", "scheduling"),
    ("Answer the customer complaint about a late refund", "customer_support"),
    ("write a poem about autumn", "general"),
    ("what is the capital of France?", "general"),
]


@pytest.mark.parametrize(("text", "expected"), INFERRED)
def test_infer_task_type_from_task_text(text: str, expected: str) -> None:
    assert infer_task_type(text) == expected


def test_infer_weekly_and_monthly_stay_apart_in_both_languages() -> None:
    assert infer_task_type("生成本周的销售周报") == "weekly_report"
    assert infer_task_type("生成本月的销售月报") == "monthly_report"
    assert infer_task_type("weekly sales report for this week") == "weekly_report"
    assert infer_task_type("monthly sales report for this month") == "monthly_report"


def test_infer_accepts_labels_and_aliases_like_normalize() -> None:
    for label in ("weekly_report", "data-clean", "清洗数据", "Monthly Report"):
        assert infer_task_type(label) == normalize_task_type(label)
    assert infer_task_type(None) == FALLBACK_TASK_TYPE
    assert infer_task_type("   ") == FALLBACK_TASK_TYPE


def test_infer_with_a_custom_vocabulary_uses_its_aliases_and_labels() -> None:
    vocab = TaskTypeVocabulary(
        {"invoice_matching": ["对账", "reconcile"], "weekly_report": ["周报"], "expense_claim": []}, fallback="misc"
    )
    assert infer_task_type("帮我把三月的发票对账", vocabulary=vocab) == "invoice_matching"
    assert infer_task_type("Reconcile the March invoices", vocabulary=vocab) == "invoice_matching"
    assert infer_task_type("File my expense claim for the trip", vocabulary=vocab) == "expense_claim"
    assert infer_task_type("generate this week's weekly report", vocabulary=vocab) == "weekly_report"
    # labels the vocabulary lacks are never returned, even when the default patterns would match
    assert infer_task_type("翻译这段话", vocabulary=vocab) == "misc"


def test_infer_rejects_non_strings() -> None:
    with pytest.raises(ConfigurationError, match="string"):
        infer_task_type(3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("这个月过得怎么样", FALLBACK_TASK_TYPE),  # a time word alone names no report
        ("How was your week?", FALLBACK_TASK_TYPE),
        ("算一下这个月的GMV", "data_analysis"),  # a month is not a monthly report
        ("Compute this month's average order value", "data_analysis"),
        ("整理这周的工作，写一份周度汇报", "weekly_report"),
        ("Send last week's summary to the team", "weekly_report"),
        ("整理客户手机号，统一格式", "data_cleaning"),  # "客户" alone is not customer support
    ],
)
def test_weak_hints_alone_name_no_task_type(text: str, expected: str) -> None:
    assert infer_task_type(text) == expected


def test_inference_on_the_tuning_split_is_mostly_right_and_rarely_wrong() -> None:
    """The labelled queries the patterns were tuned on: a wrong label costs more than "general"."""
    import json
    from pathlib import Path

    path = Path(__file__).parents[2] / "benchmarks/data/recall_queries.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if r.get("relevant") and r.get("task_type")]
    got = [infer_task_type(r["query"]) for r in rows]
    right = sum(g == r["task_type"] for g, r in zip(got, rows, strict=True))
    wrong = sum(g not in (r["task_type"], FALLBACK_TASK_TYPE) for g, r in zip(got, rows, strict=True))
    assert right / len(rows) >= 0.8
    assert wrong / len(rows) <= 0.12
