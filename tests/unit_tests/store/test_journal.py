"""Run journal: records beside the memories (both backends), explain(), scrub(), namespaces and forget."""

from __future__ import annotations

from datetime import UTC, datetime

from langchain_hindsight.store.runs import RunRecord
from tests.unit_tests.store.store_backends import chroma_store_factory, store_factory  # noqa: F401 - fixtures

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_record_round_trips_through_json() -> None:
    record = RunRecord(run_id="x", task="任务", started_at=T0, ended_at=T0, outcome="failure", produced=["m1"])
    assert RunRecord.from_json(record.to_json()) == record
