"""``hindsight search`` on a store of many near-identical lessons finds them, on Chroma and on Postgres (issue 33).

900 lessons ``writer N lesson J: 检查第J号接口的超时设置`` (30 writers × 30 lessons): every one matches the
query ``接口超时`` equally, so the lexical arm's scores are flat and the cosine of a short query against a
longer lesson is modest. The floor of the previous release judged each candidate alone and answered
"no match" ("3 more below the relevance floor"); the default floor now decides only whether a query
has evidence at all, and this one has (every query word is in every lesson). The real CLI runs in a
child process, as a user runs it, against the embedded Chroma store and the embedded Postgres server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.embeddings.multilingual import ScriptRoutedEmbeddings
from tests.fakes import child_env

pytestmark = pytest.mark.integration

WRITERS = 30
LESSONS = 30


def _lessons() -> list[MemoryUnit]:
    return [
        MemoryUnit(task_type="general", content=f"writer {n} lesson {j}: 检查第{j}号接口的超时设置")
        for n in range(1, WRITERS + 1)
        for j in range(1, LESSONS + 1)
    ]


def _search(*argv: str) -> tuple[list[dict], str]:
    done = subprocess.run(
        [sys.executable, "-m", "langchain_hindsight.cli", "search", *argv, "--json"],
        env=child_env(HF_HUB_OFFLINE="1"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def _check(found: list[dict], stderr: str) -> None:
    assert len(found) >= 5, f"hindsight search 接口超时 served {len(found)} lesson(s); stderr: {stderr}"
    assert all("接口的超时设置" in row["memory"]["content"] for row in found)
    assert all(row["served"] for row in found)
    assert "below the relevance floor" not in stderr


def test_search_finds_the_timeout_lessons_on_chroma(tmp_path: Path, routed_embeddings: ScriptRoutedEmbeddings) -> None:
    path = tmp_path / "db"
    with MemoryStore(path, embeddings=routed_embeddings) as store:
        store.add_many(_lessons(), dedupe=False)
        assert store.count() == WRITERS * LESSONS
    _check(*_search("接口超时", "--path", str(path)))


def test_search_finds_the_timeout_lessons_on_postgres(
    postgres_url: str, routed_embeddings: ScriptRoutedEmbeddings
) -> None:
    with MemoryStore(database_url=postgres_url, embeddings=routed_embeddings) as store:
        store.add_many(_lessons(), dedupe=False)
        assert store.count() == WRITERS * LESSONS
    _check(*_search("接口超时", "--database-url", postgres_url))
