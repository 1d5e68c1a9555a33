"""``hindsight-demo`` / ``python -m hindsight_demo``: run the offline two-run demo from a shell."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from hindsight_demo import run_demo
from langchain_hindsight.errors import ConfigurationError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The demo's command-line options."""
    parser = argparse.ArgumentParser(
        prog="hindsight-demo",
        description="An agent learns a lesson in run 1 and uses it in run 2 (offline, scripted model by default).",
    )
    parser.add_argument(
        "--path",
        help="directory for the CSV files and the store (default: <temp dir>/hindsight-demo, reused by every run)",
    )
    parser.add_argument("--model", help="an OpenAI-compatible chat model instead of the scripted one (openai extra)")
    parser.add_argument("--base-url", help="OpenAI-compatible base URL for --model")
    parser.add_argument(
        "--locale",
        choices=["zh", "en"],
        default="zh",
        help="language of the tasks, the lesson and the [相关经验] / [Relevant experience] block (default: zh)",
    )
    parser.add_argument("--quiet", action="store_true", help="print nothing (the exit code says how it went)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo with ``argv`` (default: the process's arguments); return the exit code."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return run_demo(path=args.path, model=args.model, base_url=args.base_url, quiet=args.quiet, locale=args.locale)
    except (ConfigurationError, ImportError) as e:
        print(f"hindsight-demo: {e}", file=sys.stderr)  # noqa: T201 - a command-line tool's error line
        return 2
