"""Hostile inputs end in a typed error from ``errors.py`` (never a builtin one), and CLI output stays clean."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from langchain_hindsight import Hindsight, MemoryUnit
from langchain_hindsight.cli.main import EXIT_OK, main
from langchain_hindsight.errors import ConfigurationError, HindsightError, InvalidMemoryError
from langchain_hindsight.journal import RunJournal
from langchain_hindsight.sharing.principals import AccessPolicy
from langchain_hindsight.store.memory_store import MemoryStore
from langchain_hindsight.store.transfer import read_backup

EAST, WEST = timezone(timedelta(hours=5)), timezone(timedelta(hours=-5))
YEAR_1_EAST = datetime(1, 1, 1, tzinfo=EAST)  # before 0001-01-01 in UTC
YEAR_9999_WEST = datetime(9999, 12, 31, 23, tzinfo=WEST)  # after 9999-12-31 in UTC
LESSON = "Read ERP CSV exports with encoding='gbk' and sep=';'."


@pytest.mark.parametrize("when", [YEAR_1_EAST, YEAR_9999_WEST, YEAR_1_EAST.isoformat(), YEAR_9999_WEST.isoformat()])
@pytest.mark.parametrize("field", ["created_at", "last_accessed_at", "decayed_through"])
def test_a_timestamp_out_of_range_in_utc_is_an_invalid_memory(field: str, when: Any) -> None:
    with pytest.raises(InvalidMemoryError, match="out of range"):
        MemoryUnit(content=LESSON, **{field: when})


def test_such_a_timestamp_on_import_names_the_line() -> None:
    good = json.dumps(MemoryUnit(content=LESSON).to_dict())
    bad = json.dumps({"content": LESSON, "created_at": "0001-01-01T00:00:00+05:00"})
    with pytest.raises(InvalidMemoryError, match=r"line 2: .*out of range"):
        read_backup([good, bad])


@pytest.mark.parametrize("when", [YEAR_1_EAST.isoformat(), YEAR_9999_WEST.isoformat()])
def test_such_a_timestamp_in_a_backup_run_record_names_the_line(when: str) -> None:
    line = json.dumps({"run": {"run_id": "r1", "namespace": "default", "started_at": when}})
    with pytest.raises(InvalidMemoryError, match=r"line 1: .*out of range"):
        read_backup([line])


def test_the_edges_that_fit_stay_valid() -> None:
    assert MemoryUnit(content=LESSON, created_at=datetime(1, 1, 1, 6, tzinfo=EAST)).created_at.year == 1
    assert MemoryUnit(content=LESSON, created_at=datetime(9999, 12, 31, 12, tzinfo=WEST)).created_at.year == 9999


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_jsonl_is_an_invalid_memory(depth: int) -> None:
    nested_object = '{"content": "x", "context": ' + '{"a": ' * depth + "1" + "}" * depth + "}"
    for line in ("[" * depth + "]" * depth, nested_object):
        with pytest.raises(InvalidMemoryError, match="line 1: JSON nested too deeply"):
            read_backup([line])


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_a_deeply_nested_grants_file_is_a_configuration_error(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "grants.toml"
    path.write_text("[principals.a]\nread = " + "[" * depth + "]" * depth + "\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="nested too deeply"):
        AccessPolicy.from_file(path)


def test_the_cli_reports_a_deeply_nested_import_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "deep.jsonl"
    data.write_text("[" * 50_000 + "]" * 50_000 + "\n", encoding="utf-8")
    code = main(["import", str(data), "--path", str(tmp_path / "db")])
    _, err = capsys.readouterr()
    assert code != EXIT_OK
    assert "Traceback" not in err
    assert "nested too deeply" in err


@pytest.fixture
def journal(memory_store: MemoryStore) -> RunJournal:
    journal = RunJournal(memory_store)
    journal.start("r1", task="clean sales.csv")
    return journal


CALLS: dict[str, Callable[[RunJournal], object]] = {
    "start(now=str)": lambda j: j.start("r2", task="t", now="yesterday"),  # type: ignore[arg-type]
    "start(now=year 1 east)": lambda j: j.start("r2", task="t", now=YEAR_1_EAST),
    "start(task=int)": lambda j: j.start("r2", task=5),  # type: ignore[arg-type]
    "finish(now=year 9999 west)": lambda j: j.finish("r1", outcome="success", now=YEAR_9999_WEST),
    "add_feedback(text=int)": lambda j: j.add_feedback("r1", text=5),  # type: ignore[arg-type]
    "add_feedback(credit_after=str values)": lambda j: j.add_feedback("r1", credit_after={"m": "x"}),  # type: ignore[dict-item]
    "set_credit(str value)": lambda j: j.set_credit("r1", {"m": "x"}),  # type: ignore[dict-item]
    "set_credit(list)": lambda j: j.set_credit("r1", [1]),  # type: ignore[arg-type]
    "set_credit(nan)": lambda j: j.set_credit("r1", {"m": float("nan")}),
    "set_debit(str value)": lambda j: j.set_debit("r1", {"m": "x"}),  # type: ignore[dict-item]
    "list_runs(since=str)": lambda j: j.list_runs(since="x"),  # type: ignore[arg-type]
    "scrub(int)": lambda j: j.scrub(5),  # type: ignore[arg-type]
    "store.import_units(str)": lambda j: j.store.import_units(["text"]),  # type: ignore[list-item]
    "recall(now=str)": lambda j: Hindsight(store=j.store).recall("csv", now="x"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_wrong_types_to_newer_calls_are_typed_errors(journal: RunJournal, name: str) -> None:
    with pytest.raises(HindsightError):
        CALLS[name](journal)
    assert journal.get("r1").credit is None  # nothing was changed on the way
    assert [r.run_id for r in journal.list_runs()] == ["r1"]


def test_a_journal_clock_is_kept_in_utc(journal: RunJournal) -> None:
    record = journal.start("r3", task="t", now=datetime(2026, 1, 1, 8, tzinfo=timezone(timedelta(hours=8))))
    assert record.started_at == datetime(2026, 1, 1, tzinfo=UTC)


ESCAPE_NS = "evil\x1b[2J\x1b]0;pwned\x07"


@pytest.mark.parametrize("quick", [False, True])
def test_stats_never_prints_a_namespace_raw(
    make_fake_store: Callable[..., MemoryStore], tmp_path: Path, capsys: pytest.CaptureFixture[str], quick: bool
) -> None:
    store = make_fake_store("db")
    store.add(MemoryUnit(content=LESSON, namespace=ESCAPE_NS), namespace=ESCAPE_NS)
    store.close()
    argv = ["stats", "--path", str(tmp_path / "db"), "--all"]
    if quick:  # the second call answers from the summary the first wrote
        assert main(argv) == EXIT_OK
        capsys.readouterr()
    assert main(argv) == EXIT_OK
    out, _ = capsys.readouterr()
    assert "\x1b" not in out
    assert "\x07" not in out
    assert "evil\\u001b[2J" in out


def test_a_newline_in_a_cell_cannot_add_rows_to_a_table(
    make_fake_store: Callable[..., MemoryStore], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = make_fake_store("db")
    RunJournal(store).start("run-1\nrun-forged  review  2026-01-01 00:00", task="clean sales.csv")
    store.close()
    assert main(["runs", "--path", str(tmp_path / "db")]) == EXIT_OK
    out, _ = capsys.readouterr()
    assert "\nrun-forged" not in out
    assert "run-1\\nrun-forged" in out
