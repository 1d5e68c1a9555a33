"""The ``hindsight`` program (:func:`~langchain_hindsight.cli.main.run`): how its process ends."""

from __future__ import annotations

import os
import sys

import pytest

from langchain_hindsight.cli import main as cli_main


class _EndedError(Exception):
    """What the patched ``os._exit`` raises instead of ending the test process."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _Stream:
    """A stream that records what was written and whether it was flushed after."""

    def __init__(self, *, broken: bool = False) -> None:
        self.written: list[str] = []
        self.flushed = False
        self.broken = broken

    def write(self, text: str) -> int:
        self.written.append(text)
        self.flushed = False
        return len(text)

    def flush(self) -> None:
        if self.broken:
            raise BrokenPipeError("closed pipe")
        self.flushed = True


def _patch(monkeypatch: pytest.MonkeyPatch, answer: tuple[int, bool], stdout: _Stream) -> None:
    def fake_main(argv: object, resident: object = None) -> tuple[int, bool]:
        print("results", file=sys.stdout)
        return answer

    def fake_exit(code: int) -> None:
        raise _EndedError(code)

    monkeypatch.setattr(cli_main, "_main", fake_main)
    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(sys, "stdout", stdout)


@pytest.mark.parametrize("code", [0, 3])
def test_a_quick_answer_ends_the_process_at_once_after_flushing(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    stdout = _Stream()
    _patch(monkeypatch, (code, True), stdout)
    with pytest.raises(_EndedError) as ended:
        cli_main.run()
    assert ended.value.code == code
    assert "".join(stdout.written) == "results\n"
    assert stdout.flushed  # nothing printed is lost by skipping the teardown


def test_any_other_command_exits_normally(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store's close and the exit hooks (Chroma's, the thread pools') run as usual."""
    _patch(monkeypatch, (0, False), _Stream())
    with pytest.raises(SystemExit) as exited:
        cli_main.run()
    assert exited.value.code == 0


def test_a_stream_that_cannot_be_flushed_leaves_the_normal_exit_to_report_it(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, (0, True), _Stream(broken=True))
    with pytest.raises(SystemExit) as exited:
        cli_main.run()
    assert exited.value.code == 0


def test_main_returns_the_code_of_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    _patch(monkeypatch, (3, True), _Stream())
    assert cli_main.main(["stats"]) == 3


def test_the_program_keeps_what_a_quick_path_loaded_until_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    """``args.resident`` is the program's: objects left there are freed by the process's end, not one by one."""
    seen: list[object] = []

    def fake_run(args: object) -> tuple[int, bool]:
        resident = getattr(args, "resident", None)
        if resident is not None:
            resident.append("a loaded snapshot")
        seen.append(resident)
        return 0, True

    def fake_exit(code: int) -> None:
        raise _EndedError(code)

    monkeypatch.setattr(cli_main, "_run", fake_run)
    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(sys, "argv", ["hindsight", "stats"])
    with pytest.raises(_EndedError):
        cli_main.run()
    assert seen == [["a loaded snapshot"]]
    seen.clear()
    assert cli_main.main(["stats"]) == 0
    assert seen == [None]  # a caller of main() has no resident list: nothing outlives the call
