"""The review console driven in a real headless Chromium (Playwright on the system browser; integration tier).

One console server for the module: the real Starlette app under uvicorn on a free loopback port (a
thread of this process, so the store can be seeded with real journal runs and a correction through
``Hindsight.feedback``, and its directory byte-scanned after a forget), over an embedded store with the
fake n-gram embedder. Every action has its own target per language, so the zh and en runs of a test do
not depend on each other. A screenshot of each page visited is written to a temporary directory (its path
is logged). ``docs/screenshots/make_screenshots.py`` uses the same server for the PNGs the docs show.

Skipped, with the reason, only when no Chromium binary exists (``.ci/run`` installs ``chromium`` and
``fonts-wqy-microhei``). Playwright never downloads a browser here: it launches ``/usr/bin/chromium``.
"""

from __future__ import annotations

import logging
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from langchain_hindsight import Hindsight, MemoryStore, MemoryUnit
from langchain_hindsight.errors import MemoryNotFoundError
from langchain_hindsight.types import ScoredMemory
from langchain_hindsight.ui import Console, create_app
from langchain_hindsight.ui.strings import STRINGS
from tests.bytescan import text_hits
from tests.fakes import NgramEmbeddings

pytestmark = pytest.mark.integration

logger = logging.getLogger(__name__)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"
VIEWPORT = {"width": 1100, "height": 760}

# One set of texts per language: (search target and its query, confirm, edit before/after, forget, correction).
TEXTS: dict[str, dict[str, str]] = {
    "zh": {
        "search": "读取含中文的 CSV 文件时用 utf-8-sig 编码。",
        "query": "读取含中文的CSV文件",
        "confirm": "上传文件失败时先重试三次再放弃。",
        "edit": "导出文件里的日期按月/日/年书写。",
        "edited": "导出文件里的日期一律用 ISO 8601（年-月-日）。",
        "forget": "客户甲公司的合同编号是 HT-2026-0042，只能通过邮件联系。",
        "corrected": "周报按自然月统计销售额。",
        "task": "生成本周的销售周报",
        "correction": "不对，周报只统计本周一到周日的数据",
    },
    "en": {
        "search": "Read CSV files with encoding='utf-8-sig' when they contain Chinese text.",
        "query": "read the csv file with chinese text",
        "confirm": "Always retry the upload three times before giving up.",
        "edit": "Dates in the export are written month/day/year.",
        "edited": "Dates in the export are always ISO 8601 (year-month-day).",
        "forget": "Customer Acme's contract number is AC-2026-0077; contact them by email only.",
        "corrected": "The weekly report counts sales over the calendar month.",
        "task": "write the weekly sales report",
        "correction": "No, that's wrong: the weekly report only counts Monday to Sunday.",
    },
}
NEAR_A = "Send the weekly sales report to manager Zhang every Monday morning."
NEAR_B = "Send the weekly sales report to manager Zhang every Monday morning, totals included."


@dataclass
class Served:
    """A running console: its base URL, the one-time token, and the store behind it."""

    base: str
    token: str
    store: MemoryStore
    directory: Path
    ids: dict[str, str]


def _served(unit: MemoryUnit) -> ScoredMemory:
    return ScoredMemory(memory=unit, score=0.6, similarity=0.5, breakdown={"similarity": 0.25, "confidence": 0.15})


def seed(store: MemoryStore) -> dict[str, str]:
    """Memories, runs and one correction per language; the ids by ``"<lang>:<role>"``."""
    ids: dict[str, str] = {}

    def add(key: str, content: str, **kw: Any) -> MemoryUnit:
        unit = store.add(MemoryUnit(content=content, **kw)).unit
        ids[key] = unit.memory_id
        return unit

    hs = Hindsight(store=store, min_relevance=None)
    for lang, t in TEXTS.items():
        searched = add(f"{lang}:search", t["search"], task_type="data_cleaning")
        add(f"{lang}:confirm", t["confirm"], task_type="file_operation", confidence=0.2)
        add(f"{lang}:edit", t["edit"], task_type="data_cleaning")
        add(f"{lang}:forget", t["forget"], source="user_feedback")
        corrected = add(f"{lang}:corrected", t["corrected"], task_type="weekly_report")
        for i in range(3):  # served three times and never followed by success: the review queue's first list
            hs.journal.start(
                f"run-fail-{lang}-{i}", task=t["task"], task_type=searched.task_type, served=[_served(searched)]
            )
            hs.journal.finish(f"run-fail-{lang}-{i}", outcome="failure")
        run = f"run-wrong-{lang}"
        hs.journal.start(run, task=t["task"], task_type="weekly_report", served=[_served(corrected)])
        hs.journal.finish(run, outcome="success")
        hs.feedback(run, success=False, comment=t["correction"])  # a correction through the library
    add("near_a", NEAR_A, task_type="weekly_report")
    add("near_b", NEAR_B, task_type="weekly_report")
    hs.close()
    return ids


@contextmanager
def running_console(directory: Path) -> Iterator[Served]:
    """Seed an embedded store in ``directory`` and serve its console on a free loopback port until exit."""
    store = MemoryStore(directory, embeddings=NgramEmbeddings())
    ids = seed(store)
    console = Console(store)
    app, gate = create_app(console)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the console server did not start")
            time.sleep(0.05)
        yield Served(f"http://127.0.0.1:{port}", gate.token, store, directory, ids)
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
        console.close()
        store.close()


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with running_console(tmp_path_factory.mktemp("console") / "store") as s:
        yield s


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium binary ({CHROMIUM}): apt-get install chromium fonts-wqy-microhei")
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright for Python (the test extra)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("console-screenshots")
    logger.warning("console screenshots: %s", directory)
    return directory


@pytest.fixture(scope="module")
def page(browser: Any, served: Served) -> Iterator[Any]:
    """A logged-in tab: the one-time token exchanged for the session cookie."""
    context = browser.new_context(viewport=VIEWPORT, locale="zh-CN")
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    response = tab.goto(f"{served.base}/?token={served.token}")
    assert response is not None
    assert response.status == 200
    assert tab.url.startswith(f"{served.base}/memories")  # redirected, the token spent
    yield tab
    context.close()


def _go(page: Any, served: Served, path: str, lang: str) -> None:
    response = page.goto(f"{served.base}{path}{'&' if '?' in path else '?'}lang={lang}")
    assert response is not None
    assert response.status == 200, path
    assert page.locator("html").get_attribute("lang") == lang


def _shot(page: Any, shots: Path, name: str) -> None:
    path = shots / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 5_000  # a rendered page, not a blank one


def _flash(page: Any) -> str:
    text: str = page.get_by_test_id("flash").first.inner_text()
    return text


def _ids(page: Any, selector: str, attr: str = "data-memory-id") -> list[str]:
    return [e.get_attribute(attr) for e in page.locator(selector).all()]


# ---------------------------------------------------------------------- refusals


def test_without_the_token_every_page_is_refused(browser: Any, served: Served, shots: Path) -> None:
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    for path in ("/memories", f"/memories/{served.ids['zh:search']}", "/review", "/runs", "/plots"):
        response = tab.goto(served.base + path)
        assert response is not None
        assert response.status == 401, path
        assert TEXTS["zh"]["search"] not in tab.content()
    _shot(tab, shots, "refused-401")
    response = tab.goto(f"{served.base}/?token=not-the-token-not-the-token")
    assert response is not None
    assert response.status == 403
    assert tab.get_by_test_id("error-title").is_visible()
    context.close()


# ---------------------------------------------------------------------- pages


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_list_shows_every_memory_and_filters(page: Any, served: Served, shots: Path, lang: str) -> None:
    _go(page, served, "/memories", lang)
    listed = set(_ids(page, "[data-testid=memory-row]"))
    assert served.ids[f"{lang}:search"] in listed
    assert served.ids[f"{lang}:confirm"] in listed
    assert page.locator("#nav-review").inner_text() == STRINGS[lang]["nav_review"]
    _shot(page, shots, f"memories-{lang}")
    page.fill("#filter-max-conf", "0.3")
    page.click("#filter-apply")
    low = set(_ids(page, "[data-testid=memory-row]"))
    assert served.ids[f"{lang}:confirm"] in low
    assert served.ids[f"{lang}:search"] not in low


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_search_shows_every_factor_the_floor_margin_and_what_would_be_served(
    page: Any, served: Served, shots: Path, lang: str
) -> None:
    _go(page, served, "/memories", lang)
    page.fill("#q", TEXTS[lang]["query"])
    page.click("#search-button")
    assert page.url.startswith(f"{served.base}/memories?")
    assert served.ids[f"{lang}:search"] in _ids(page, "[data-testid=search-row]")[:3]  # the real recall found it
    first = page.locator(f'[data-testid=search-row][data-memory-id="{served.ids[f"{lang}:search"]}"]')
    assert first.get_attribute("data-served") == "yes"
    factors = [e.get_attribute("data-factor") for e in first.locator("[data-factor]").all()]
    assert {"similarity", "task_type", "confidence"} <= set(factors)
    margin = first.get_by_test_id("floor-margin").inner_text()
    assert float(margin) >= 0  # served: at or above the floor
    assert page.get_by_role("columnheader", name="floor_margin").is_visible()
    _shot(page, shots, f"search-{lang}")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_memory_page_shows_its_fields_runs_and_feedback(page: Any, served: Served, shots: Path, lang: str) -> None:
    searched = served.ids[f"{lang}:search"]
    _go(page, served, f"/memories/{searched}", lang)
    assert page.get_by_test_id("memory-content").inner_text() == TEXTS[lang]["search"]
    assert page.locator('[data-field="memory_id"] td').inner_text() == searched
    runs = set(_ids(page, "[data-testid=served-run]", "data-run-id"))
    assert {f"run-fail-{lang}-0", f"run-fail-{lang}-2"} <= runs
    assert _ids(page, "[data-testid=history-row]") == [searched]
    _shot(page, shots, f"memory-{lang}")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_review_queue_lists_each_kind_of_suspect(page: Any, served: Served, shots: Path, lang: str) -> None:
    _go(page, served, "/review", lang)
    assert served.ids[f"{lang}:search"] in _ids(page, "[data-testid=review-never-row]")
    assert served.ids[f"{lang}:confirm"] in _ids(page, "[data-testid=review-doubtful-row]")
    pair = page.get_by_test_id("review-pair").first
    assert {pair.get_attribute("data-a"), pair.get_attribute("data-b")} == {served.ids["near_a"], served.ids["near_b"]}
    _shot(page, shots, f"review-{lang}")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_runs_and_plots_pages_render(page: Any, served: Served, shots: Path, lang: str) -> None:
    _go(page, served, "/runs", lang)
    assert f"run-wrong-{lang}" in _ids(page, "[data-testid=run-row]", "data-run-id")
    _shot(page, shots, f"runs-{lang}")
    _go(page, served, "/plots", lang)
    for testid in ("plot-histogram", "plot-timeline", "plot-success"):
        assert page.get_by_test_id(testid).is_visible(), testid
    _shot(page, shots, f"plots-{lang}")


# ---------------------------------------------------------------------- actions


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_confirm_raises_to_trusted_by_a_new_version(page: Any, served: Served, shots: Path, lang: str) -> None:
    old = served.ids[f"{lang}:confirm"]
    _go(page, served, f"/memories/{old}", lang)
    page.get_by_test_id("action-confirm").locator("button").click()
    said = _flash(page)
    assert old in said
    new = next(u for u in served.store.list_units(source="manual") if u.supersedes == old)
    assert new.memory_id in said
    assert served.store.get(old).status == "superseded"
    _go(page, served, f"/memories/{new.memory_id}", lang)
    assert _ids(page, "[data-testid=history-row]") == [new.memory_id, old]
    assert page.locator('[data-field="source"] td').inner_text() == "manual"
    _shot(page, shots, f"confirmed-{lang}")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_edit_stores_a_version_that_supersedes_with_its_history(
    page: Any, served: Served, shots: Path, lang: str
) -> None:
    old = served.ids[f"{lang}:edit"]
    _go(page, served, f"/memories/{old}", lang)
    page.fill("#edit-content", TEXTS[lang]["edited"])
    page.click("#edit-submit")
    said = _flash(page)
    new = next(u for u in served.store.list_units(status="active") if u.content == TEXTS[lang]["edited"])
    assert new.supersedes == old
    assert new.memory_id in said
    page.get_by_test_id("history-row").first.wait_for()
    _go(page, served, f"/memories/{new.memory_id}", lang)
    assert page.get_by_test_id("memory-content").inner_text() == TEXTS[lang]["edited"]
    history = page.get_by_test_id("history-row")
    assert _ids(page, "[data-testid=history-row]") == [new.memory_id, old]
    assert TEXTS[lang]["edit"] in history.nth(1).inner_text()
    assert "superseded" in history.nth(1).inner_text()
    _shot(page, shots, f"edited-{lang}")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_forget_asks_first_then_the_text_is_gone_from_the_disk(
    page: Any, served: Served, shots: Path, lang: str
) -> None:
    gone, secret = served.ids[f"{lang}:forget"], TEXTS[lang]["forget"]
    _go(page, served, f"/memories/{gone}", lang)
    page.click("#forget-link")
    assert page.get_by_test_id("forget-content").inner_text() == secret  # the confirmation names what is erased
    assert page.get_by_test_id("forget-refs").is_visible()
    _shot(page, shots, f"forget-{lang}")
    assert served.store.get(gone).status == "active"  # the page itself deletes nothing
    page.get_by_test_id("action-forget").locator("button").click()
    assert gone in _flash(page)
    assert page.url.startswith(f"{served.base}/memories?")
    assert gone not in _ids(page, "[data-testid=memory-row]")
    with pytest.raises(MemoryNotFoundError):
        served.store.get(gone)
    assert text_hits(served.directory, {"secret": secret}) == {}  # a raw byte scan of every file of the store


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_undo_feedback_reverts_the_correction(page: Any, served: Served, shots: Path, lang: str) -> None:
    run = f"run-wrong-{lang}"
    created = [u for u in served.store.list_units(status="active") if u.source == "user_feedback" and u.run_id == run]
    assert created, "the correction made a user_feedback memory"
    _go(page, served, f"/runs/{run}", lang)
    entry = page.get_by_test_id("feedback-entry").first
    assert TEXTS[lang]["correction"] in entry.get_by_test_id("feedback-text").inner_text()
    _shot(page, shots, f"run-{lang}")
    page.get_by_test_id("action-undo_feedback").locator("button").click()
    assert run in _flash(page)
    assert page.get_by_test_id("feedback-undone").first.is_visible()
    assert page.locator('[data-testid=feedback-entry][data-kind="undo"]').count() == 1
    assert page.get_by_test_id("action-undo_feedback").count() == 0  # nothing left to undo
    assert all(served.store.get(u.memory_id).status == "archived" for u in created)
    _shot(page, shots, f"undone-{lang}")
    assert re.search(r"run-wrong-(zh|en)", page.url)
