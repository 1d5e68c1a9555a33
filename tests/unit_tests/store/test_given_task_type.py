"""A task type the caller gives always wins (issue 33, point 6).

``MemoryUnit(task_type="email")`` used to be stored as ``general`` with no word:
a label outside the vocabulary is kept (folded) and logged at INFO; known
spellings still fold onto their canonical label. Model labels and task texts
(``normalize``) still fall back to ``general``.
"""

from __future__ import annotations

import logging

import pytest

from langchain_hindsight import HindsightRetriever, MemoryStore, MemoryUnit
from langchain_hindsight.taxonomy import TaskTypeVocabulary


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("email", "email"),
        ("Email", "email"),
        ("发邮件", "发邮件"),
        ("invoice matching", "invoice_matching"),
        ("Weekly Report", "weekly_report"),  # a known spelling folds, as before
        ("周报", "weekly_report"),
        ("general", "general"),
    ],
)
def test_a_given_task_type_is_stored_as_given(
    memory_store: MemoryStore, caplog: pytest.LogCaptureFixture, given: str, stored: str
) -> None:
    with caplog.at_level(logging.INFO, logger="langchain_hindsight.taxonomy"):
        unit = memory_store.add(MemoryUnit(task_type=given, content="把周报发给张经理时抄送李总监")).unit
    assert unit.task_type == stored
    assert memory_store.get(unit.memory_id).task_type == stored
    outside = stored not in memory_store.vocabulary
    said = [r for r in caplog.records if r.levelno == logging.INFO and "not in the vocabulary" in r.getMessage()]
    assert bool(said) == outside  # kept and said so at INFO; a known label says nothing


def test_an_unknown_task_type_is_found_again_by_its_name(memory_store: MemoryStore) -> None:
    unit = memory_store.add(
        MemoryUnit(task_type="email", content="Send the weekly report to Manager Zhang as a PDF.")
    ).unit
    other = memory_store.add(MemoryUnit(task_type="general", content="Send the weekly report as a Word file.")).unit
    listed = memory_store.list_units(task_type="email")
    assert [u.memory_id for u in listed] == [unit.memory_id]
    assert other.memory_id not in [u.memory_id for u in listed]
    updated = memory_store.update(other.memory_id, task_type="Email")
    assert updated.task_type == "email"


def test_a_recall_with_a_given_unknown_task_type_matches_it(memory_store: MemoryStore) -> None:
    memory_store.add(MemoryUnit(task_type="email", content="Send the weekly report to Manager Zhang as a PDF."))
    result = HindsightRetriever(store=memory_store, task_type="email", min_relevance=None).recall_result(
        "send the report to Zhang"
    )
    assert result.task_type == "email"
    assert result.memories
    assert result.memories[0].memory.task_type == "email"


def test_model_labels_and_task_texts_still_fall_back() -> None:
    vocab = TaskTypeVocabulary()
    assert vocab.normalize("email") == "general"  # a model's free label: mapped onto the vocabulary
    assert vocab.resolve("   ") == "general"  # nothing given
    assert vocab.resolve("data-clean") == "data_cleaning"
