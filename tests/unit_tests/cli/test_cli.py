"""The ``hindsight`` CLI through its entry point (``main([...])``) and one real subprocess."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from langchain_hindsight.cli.main import EXIT_NOT_FOUND, EXIT_USAGE, main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_bad_import_line_is_a_usage_error_naming_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "ok"}\n{"content": ""}\n', encoding="utf-8")
    code, _, err = run(capsys, "import", str(bad), "--path", str(tmp_path / "db"))
    assert code == EXIT_USAGE
    assert "line 2" in err


@pytest.mark.parametrize(
    ("name", "expected"), [("missing.jsonl", EXIT_NOT_FOUND), ("a_directory", EXIT_USAGE), ("bad.jsonl", EXIT_USAGE)]
)
def test_an_import_that_cannot_read_its_file_creates_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, expected: int
) -> None:
    """The file is read and checked before the store is opened: a typo in it leaves no empty store at --path."""
    (tmp_path / "a_directory").mkdir()
    (tmp_path / "bad.jsonl").write_text('{"content": "读取中文CSV要指定编码", "x": 1}\n', encoding="utf-8")
    code, _, err = run(capsys, "import", str(tmp_path / name), "--path", str(tmp_path / "新的库"))
    assert code == expected, err
    _one_line_error(err)
    assert "Errno" not in err
    assert not (tmp_path / "新的库").exists()


# ----------------------------------------------------------------------------- hardening: errors, import, terminal
def _one_line_error(err: str) -> None:
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("hindsight: ")


@pytest.mark.parametrize(
    "command", ["search q", "show x", "history x", "stats", "runs", "explain r", "report", "export"]
)
def test_read_commands_refuse_a_store_path_that_does_not_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    missing = tmp_path / "typo_db"
    code, _, err = run(capsys, *command.split(), "--path", str(missing))
    assert code == EXIT_NOT_FOUND
    _one_line_error(err)
    assert not missing.exists()  # no empty store was created


@pytest.mark.parametrize(
    "command", ["search q", "show x", "history x", "stats", "stats --all", "runs", "explain r", "report", "export"]
)
def test_read_commands_refuse_a_directory_that_holds_no_store_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    empty = tmp_path / "downloads"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a store", encoding="utf-8")
    code, _, err = run(capsys, *command.split(), "--path", str(empty))
    assert code == EXIT_NOT_FOUND, err
    _one_line_error(err)
    assert "holds no hindsight store" in err
    assert sorted(p.name for p in empty.iterdir()) == ["notes.txt"]  # no database, no lock, no stamp


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_counts_estimates_the_time_left_and_prints_no_blank_lines() -> None:
    from langchain_hindsight.cli._output import Progress

    now = [0.0]
    log = io.StringIO()  # not a terminal: a line at most every 10 %, each stage ended once
    progress = Progress(log, clock=lambda: now[0])
    for done in range(0, 101, 5):
        now[0] = done * 0.5
        progress("reembed default/active", done, 100)
    progress("merge read", 3, 0)  # an unknown total: just the count
    progress("merge read", 7, 0)
    lines = log.getvalue().splitlines()
    assert "" not in lines
    assert lines[0] == "reembed default/active: 0/100 (0%)"
    assert "reembed default/active: 50/100 (50%), about 25 s left" in lines
    assert lines[10] == "reembed default/active: 100/100 (100%) in 50 s"
    assert len(lines) == 13  # 0, 10, …, 100 % and the two counts of the stage without a total
    screen = _Terminal()  # a terminal: one line per stage, rewritten in place, ended when the stage changes
    progress = Progress(screen, clock=lambda: now[0])
    progress("export default", 1000, 3000)
    progress("export alice", 10, 20)
    progress("export alice", 20, 20)
    assert screen.getvalue().count("\n") == 2
    assert screen.getvalue().endswith("export alice: 20/20 (100%) in 0 s\x1b[K\n")


def test_every_option_and_argument_says_what_it_is_for() -> None:
    """``hindsight CMD --help`` explains every option and argument: a bare ``-k K`` or ``--yes`` teaches nothing."""
    import argparse

    from langchain_hindsight.cli.main import _parser

    parser = _parser(["reembed"])
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    missing = [
        f"{name} {action.option_strings[0] if action.option_strings else action.dest}"
        for name, command in sub.choices.items()
        for action in command._actions
        if not isinstance(action, argparse._HelpAction) and not action.help
    ]
    assert missing == []
    assert all(command.description for command in sub.choices.values())


@pytest.mark.parametrize("make", ["missing", "directory"])
def test_a_config_or_token_file_that_cannot_be_read_is_one_plain_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: str
) -> None:
    """'--config grants.toml' or '--token-file' naming a missing file or a directory: no '[Errno 2]' in the message."""
    path = tmp_path / "grants.toml"
    if make == "directory":
        path.mkdir()
    reason = "no such file" if make == "missing" else "is a directory"
    for argv in (
        ["stats", "--principal", "analyst", "--config", str(path), "--path", str(tmp_path / "db")],
        [
            "mcp",
            "--transport",
            "http",
            "--token-file",
            str(path),
            "--principal",
            "analyst",
            "--path",
            str(tmp_path / "db"),
        ],
    ):
        code, _, err = run(capsys, *argv)
        assert code == EXIT_USAGE, err
        _one_line_error(err)
        assert "Errno" not in err
        assert reason in err.lower()
        assert not (tmp_path / "db").exists()


# ----------------------------------------------------------------------------- files the CLI writes
def _special_targets(tmp_path: Path) -> dict[str, Path]:
    """A symlink to a file, a dangling symlink, a symlink to a directory, a FIFO; each must be refused."""
    import os

    real = tmp_path / "real.jsonl"
    real.write_text("the previous backup\n", encoding="utf-8")
    targets = {}
    for name, to in (("link", real), ("dangling", tmp_path / "nowhere"), ("dirlink", tmp_path)):
        link = tmp_path / f"{name}.jsonl"
        link.symlink_to(to)
        targets[name] = link
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    targets["fifo"] = fifo
    return targets


def test_export_refuses_a_symlink_a_fifo_or_a_device_in_one_usage_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At c351316 export renamed its temporary file over the link or node and reported success."""
    targets = _special_targets(tmp_path)
    if Path("/dev/full").exists():
        targets["device"] = Path("/dev/full")
    for name, target in targets.items():
        code, out, err = run(capsys, "export", "--all", "--path", str(tmp_path / "db"), "-o", str(target))
        assert code == EXIT_USAGE, (name, err)
        assert len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err
        assert "regular file" in err or "symbolic link" in err, err
        assert out == ""
    assert targets["link"].is_symlink()
    assert targets["dangling"].is_symlink()
    assert (tmp_path / "real.jsonl").read_text(encoding="utf-8") == "the previous backup\n"
    assert not list(tmp_path.glob(".*.part"))


def test_the_file_rule_is_checked_again_before_the_rename(tmp_path: Path) -> None:
    """A link put in the file's place while the export ran is refused, never replaced (and no temporary is left)."""
    from langchain_hindsight.cli.browse import _write_replacing
    from langchain_hindsight.errors import ConfigurationError

    target = tmp_path / "backup.jsonl"
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep me\n", encoding="utf-8")

    def write(out: object) -> tuple[int, int]:
        target.symlink_to(elsewhere)  # swapped in mid-export
        return 0, 0

    with pytest.raises(ConfigurationError, match="symbolic link"):
        _write_replacing(target, write)  # type: ignore[arg-type]
    assert target.is_symlink()
    assert elsewhere.read_text(encoding="utf-8") == "keep me\n"
    assert not list(tmp_path.glob(".*.part"))
