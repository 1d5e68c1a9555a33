"""The ``hindsight`` program (:func:`~langchain_hindsight.cli.main.run`): it exits with :func:`main`'s code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from langchain_hindsight.cli import main as cli_main


@pytest.mark.parametrize("code", [0, 3])
def test_the_program_exits_with_the_commands_code(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    """Every command, ``stats``' quick path included, ends through the normal exit (the store's close and the
    exit hooks of Chroma and the thread pools run)."""
    monkeypatch.setattr(cli_main, "_run", lambda args: code)
    monkeypatch.setattr(sys, "argv", ["hindsight", "stats"])
    with pytest.raises(SystemExit) as exited:
        cli_main.run()
    assert exited.value.code == code


def test_a_missing_store_is_a_not_found_code_from_main(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main.main(["stats", "--path", str(tmp_path / "nowhere")]) == cli_main.EXIT_NOT_FOUND
    assert capsys.readouterr().err.startswith("hindsight: ")
