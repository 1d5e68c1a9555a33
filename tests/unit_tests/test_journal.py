"""Run journal: records beside the memories (both backends), explain(), scrub(), namespaces and forget."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from langchain_hindsight import MemoryStore
from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.runs import RunRecord
from langchain_hindsight.store.backend.inmemory import InMemoryBackend
from tests.fakes import HashEmbeddings
from tests.unit_tests.store.store_backends import chroma_store_factory, store_factory  # noqa: F401 - fixtures

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_record_round_trips_through_json() -> None:
    record = RunRecord(run_id="x", task="任务", started_at=T0, ended_at=T0, outcome="failure", produced=["m1"])
    assert RunRecord.from_json(record.to_json()) == record


GOLDEN_DOCUMENT = (
    '{"run_id":"run-1","kind":"run","task":"清洗 sales.csv","task_type":"data_cleaning","namespace":"alice"'
    ',"outcome":"failure","started_at":"2026-03-01T09:00:00Z","ended_at":"2026-03-01T09:00:00Z","served":'
    '[{"memory_id":"m1","rank":1,"score":0.8,"similarity":0.7,"confidence":0.6,"breakdown":{"similarity":'
    '0.35}}],"produced":["m2"],"feedback":[{"at":"2026-03-01T09:00:00Z","text":"不对","success":false,"reje'
    'cted":true,"kind":"verdict","effects":[{"memory_id":"m1","action":"debited","reason":"r","before":{"'
    'confidence":0.6,"status":"active","access_count":0,"last_accessed_at":null,"created_at":null,"tags":'
    '[],"supersedes":null,"merged_from":[],"source":"agent_inference"},"after":{"confidence":0.5,"status"'
    ':"active","access_count":0,"last_accessed_at":null,"created_at":null,"tags":[],"supersedes":null,"me'
    'rged_from":[],"source":"agent_inference"},"by":null}],"credit_before":null,"credit_after":null,"undo'
    'ne_at":null,"undoes":null,"rule":"zh_negation","debit_before":null,"debit_after":null}],"thread_id":'
    '"t1","credit":{"m1":0.05},"debit":null,"uses":[{"memory_id":"m1","verdict":"used","evidence":"latin-'
    '1"}]}'
)
"""A record as ``RunRecord.to_json`` has written it since journal schema 1 (what the journal collection holds)."""


def test_a_record_is_stored_in_the_format_existing_journals_hold() -> None:
    """The document and metadata of a record are byte-for-byte what journals on disk already hold (schema 1)."""
    from langchain_hindsight.runs import FeedbackEffect, MemoryUse, RunFeedback, UnitState
    from langchain_hindsight.store.run_records import JOURNAL_SCHEMA, _metadata
    from langchain_hindsight.types import ServedMemory

    served = ServedMemory(
        memory_id="m1", rank=1, score=0.8, similarity=0.7, confidence=0.6, breakdown={"similarity": 0.35}
    )
    effect = FeedbackEffect(
        memory_id="m1", action="debited", reason="r", before=UnitState(confidence=0.6), after=UnitState(confidence=0.5)
    )
    record = RunRecord(
        run_id="run-1",
        task="清洗 sales.csv",
        task_type="data_cleaning",
        namespace="alice",
        outcome="failure",
        started_at=T0,
        ended_at=T0,
        served=[served],
        produced=["m2"],
        thread_id="t1",
        credit={"m1": 0.05},
        feedback=[RunFeedback(at=T0, text="不对", success=False, rejected=True, effects=[effect], rule="zh_negation")],
        uses=[MemoryUse(memory_id="m1", verdict="used", evidence="latin-1")],
    )
    assert record.to_json() == GOLDEN_DOCUMENT
    assert RunRecord.from_json(GOLDEN_DOCUMENT) == record
    assert JOURNAL_SCHEMA == 1
    assert _metadata(record) == {
        "schema": 1,
        "kind": "run",
        "outcome": "failure",
        "task_type": "data_cleaning",
        "started_at_us": 1772355600000000,
        "ended_at_us": 1772355600000000,
        "n_served": 1,
        "thread_id": "t1",
    }


def test_a_record_with_withheld_ids_round_trips_and_adds_only_that_field() -> None:
    record = RunRecord(run_id="run-1", started_at=T0, withheld=["m9"])
    document = json.loads(record.to_json())
    assert document["withheld"] == ["m9"]
    assert RunRecord.from_json(record.to_json()) == record
    bare = json.loads(record.model_copy(update={"withheld": []}).to_json())
    assert "withheld" not in bare
    assert {k: v for k, v in document.items() if k != "withheld"} == bare


@pytest.mark.parametrize("bad", ["m1", iter(["m1"]), [1]])
def test_withheld_ids_must_be_a_sequence_of_ids(bad: object) -> None:
    """A generator is refused, not read up by the check and stored empty."""
    with MemoryStore(backend=InMemoryBackend(), embeddings=HashEmbeddings()) as store:
        journal = RunJournal(store)
        with pytest.raises(ConfigurationError, match="withheld"):
            journal.start("run-1", withheld=bad)  # type: ignore[arg-type]
        assert journal.start("run-1", withheld=("m1", "m1")).withheld == ["m1"]
