"""The review console (``hindsight ui``) through Starlette's TestClient over a real store (in-memory backend).

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/ui/test_console.py``.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from langchain_hindsight import MemoryStore, MemoryUnit
from langchain_hindsight.store._directory import STAMP_FILE
from langchain_hindsight.ui import Console, create_app
from tests.bytescan import text_hits
from tests.fakes import HashEmbeddings, child_env
from tests.unit_tests.ui.test_console import BASE, CSV, WEEKLY, _csrf, _flash, _login


@pytest.mark.integration
@pytest.mark.slow
def test_hindsight_ui_prints_the_url_first_serves_it_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """A child ``hindsight ui``: first stdout line = URL with token; the token opens it; SIGTERM closes the store."""
    directory = tmp_path / "store"
    with MemoryStore(directory, embeddings=HashEmbeddings()) as store:
        store.add(MemoryUnit(content=WEEKLY, task_type="weekly_report"))
    child = subprocess.Popen(
        [sys.executable, "-m", "langchain_hindsight.cli", "ui", "--path", str(directory), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[\w-]{20,}", url), url
        base = url.split("/?")[0]
        with httpx.Client(base_url=base, timeout=30) as client:
            assert client.get("/memories").status_code == 401
            opened = client.get(url, follow_redirects=True)
            assert opened.status_code == 200
            assert opened.url.path.startswith("/s/")  # the session's own secret path
            assert WEEKLY in client.get(opened.url.path).text
        assert not (directory / STAMP_FILE).exists()  # open: no clean-close stamp
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    assert "stopped by SIGTERM" in err
    assert (directory / STAMP_FILE).exists()  # closed cleanly


def test_forget_from_the_console_erases_the_text_from_an_embedded_store(tmp_path: Path) -> None:
    secret = "客户甲公司的合同编号是 HT-2026-0042，只能通过邮件联系。"
    with MemoryStore(tmp_path / "store", embeddings=HashEmbeddings()) as store:
        keep = store.add(MemoryUnit(content=CSV, task_type="data_cleaning")).unit.memory_id
        gone = store.add(MemoryUnit(content=secret, source="user_feedback")).unit.memory_id
        console = Console(store)
        app, gate = create_app(console)
        client = TestClient(app, base_url=BASE)
        _login(client, gate)
        assert str(escape(secret)) in client.get(f"/memories/{gone}/forget").text
        r = client.post("/act/forget", data={"memory_id": gone, "csrf": _csrf(client, gate)})
        assert r.status_code == 200
        assert secret[:20] in _flash(r.text)[0]  # named by its words
        assert store.get(keep).content == CSV
        console.close()
    assert text_hits(tmp_path / "store", {"secret": secret, "id": gone}) == {}  # a raw byte scan of every file
