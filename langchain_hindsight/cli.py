"""The ``hindsight`` command line."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from langchain_hindsight.store import MemoryStore
    from langchain_hindsight.types import MemoryUnit

    path = Path(args.path or Path(tempfile.gettempdir()) / "hindsight_demo")
    print(f"store: {path}")
    with MemoryStore(path) as store:
        unit = store.add(
            MemoryUnit(
                task_type="清洗数据",
                content="使用pandas读取CSV时，如果文件包含中文，需要指定encoding='utf-8-sig'，否则会出现乱码。",
                tags=["csv", "encoding"],
            )
        )
        print(f"stored {unit.memory_id} as task_type={unit.task_type} confidence={unit.confidence:.2f}")
        for found, similarity, _ in store.search("读取中文CSV文件出现乱码", k=3):
            print(f"  recall {similarity:.2f}  {found.content}")
        print(f"{store.count()} memories in {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hindsight`` command."""
    parser = argparse.ArgumentParser(prog="hindsight", description="Experience memory for LangChain agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the offline end-to-end demo")
    demo.add_argument("--path", help="store directory (default: a temp dir)")
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
