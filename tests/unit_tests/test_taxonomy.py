"""Task-type vocabulary: one spelling per task type (seed pitfall 3)."""

from __future__ import annotations

import pytest

from langchain_hindsight import ConfigurationError, TaskTypeVocabulary, normalize_task_type
from langchain_hindsight.taxonomy import FALLBACK_TASK_TYPE


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
