"""Execute the notebooks in place with nbclient, so their committed outputs are regenerated, never edited by hand.

Usage (from the repository root): ``python notebooks/execute.py [NOTEBOOK ...]`` (default: every
``notebooks/*.ipynb``), or ``make notebooks``. Offline (``HF_HUB_OFFLINE=1``); the kernel is ``python3`` of the
interpreter running this script (ipykernel in the venv) with this checkout first on ``PYTHONPATH``; each cell may
take ``--timeout`` seconds. Plots are inline PNGs (the notebooks say ``%matplotlib inline``).
The working directory of each kernel is a fresh temporary directory, and no timing metadata is recorded, so a
re-run only differs where the outputs do.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@contextlib.contextmanager
def _kernel_environment() -> Iterator[None]:
    """The kernel inherits this process's environment: offline, this checkout importable; restored afterwards."""
    saved = dict(os.environ)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.pop("MPLBACKEND", None)  # let ipykernel choose the inline backend
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def execute(path: Path, *, timeout: int = 300) -> nbformat.NotebookNode:
    """Run one notebook from a clean kernel and return it with its outputs (the file is not written)."""
    nb = nbformat.read(path, as_version=4)
    with _kernel_environment(), tempfile.TemporaryDirectory(prefix="hindsight_nb_") as cwd:
        client = NotebookClient(
            nb,
            kernel_name="python3",
            timeout=timeout,
            record_timing=False,
            resources={"metadata": {"path": cwd}},
        )
        client.execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = _coalesce_streams(cell.outputs)
    return nb


def _coalesce_streams(outputs: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """Join consecutive stdout (or stderr) chunks: where the kernel flushed is timing, not content."""
    merged: list[nbformat.NotebookNode] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (
            last is not None
            and output.output_type == "stream"
            and last.output_type == "stream"
            and output.name == last.name
        ):
            last.text += output.text
        else:
            merged.append(output)
    return merged


def main(argv: list[str] | None = None) -> int:
    """Execute the named notebooks (default: all) and write each back with its outputs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, default=NOTEBOOKS)
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell (default 300)")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        nb = execute(path, timeout=args.timeout)
        nbformat.write(nb, path)
        name = path.relative_to(ROOT) if path.is_absolute() else path
        sys.stdout.write(f"executed {name} ({path.stat().st_size // 1024} KB)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
