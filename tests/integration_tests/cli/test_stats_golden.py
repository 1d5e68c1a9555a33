"""``hindsight stats --all --json`` on a deterministic store prints the bytes pinned in ``stats_golden.json``.

The file is the output of the package before issue 34 (75dec64) on the store :func:`build` makes (three
namespaces, one of them Chinese; archived and superseded memories, four sources, journalled runs). Each
way ``stats`` can answer must print it: the store counting (no stamp) and the counts files its close keeps.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore, RunJournal
from langchain_hindsight.cli.main import EXIT_OK, main
from langchain_hindsight.store._directory import STAMP_FILE
from langchain_hindsight.types import MemoryUnit
from tests.counts import counts_files
from tests.fakes import NgramEmbeddings

GOLDEN = Path(__file__).with_name("stats_golden.json")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TASK_TYPES = ["data_cleaning", "api_call", "database_query", "weekly_report"]
SOURCES = ["agent_inference", "rule", "manual", "user_feedback"]


def build(path: Path) -> None:
    """The golden store (the same script made ``stats_golden.json`` with the package before issue 34)."""
    with MemoryStore(path, embeddings=NgramEmbeddings()) as store:
        for k, (ns, n) in enumerate((("default", 40), ("团队甲", 12), ("team-b", 7))):
            units = [
                MemoryUnit(
                    memory_id=f"n{k}-{i}",
                    content=f"{ns} lesson {i}: use option {i * 7 % 13} for table t{i}",
                    namespace=ns,
                    task_type=TASK_TYPES[i % 4],
                    source=SOURCES[i % 4],  # type: ignore[arg-type]
                    created_at=T0,
                )
                for i in range(n)
            ]
            store.add_many(units, dedupe=False)
            store.archive([u.memory_id for u in units[::5]], namespace=ns)
            journal = RunJournal(store, namespace=ns)
            for r in range(n // 4):
                journal.start(f"run-{r}", task=f"task {r}", task_type="data_cleaning", now=T0)
                journal.finish(f"run-{r}", outcome=["success", "failure"][r % 2], now=T0)
        correction = MemoryUnit(
            memory_id="default-new", content="default lesson 1, corrected: use option 9", created_at=T0
        )
        store.supersede(["n0-4"], correction, reason="golden")
        team = MemoryUnit(
            memory_id="t-new", namespace="团队甲", content="团队甲 更正", source="user_feedback", created_at=T0
        )
        store.supersede(["n1-3"], team, reason="golden", namespace="团队甲")


def test_stats_all_json_prints_the_pinned_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "golden"
    build(path)
    (path / STAMP_FILE).unlink()  # nothing vouched: the store counts
    golden = GOLDEN.read_text(encoding="utf-8")
    for answer in ("counted by the store", "from the counts files its close kept"):
        code = main(["stats", "--all", "--json", "--path", str(path)])
        out, err = capsys.readouterr()
        assert (code, err) == (EXIT_OK, ""), answer
        assert out == golden, answer
        assert len(counts_files(path)) == 3, answer
