"""The review console driven in a real headless Chromium (Playwright on the system browser; integration tier).

Every page in zh and en: no untranslated engine text, no Python repr, the memory's words are the link,
a search row at most 64 px tall at 1280 px, no horizontal scroll at 390 px, and axe-core (from npm,
``.ci/run`` installs it into ``.venv/axe``; the test fails without it) reports no serious or critical
violation. Actions: an edit lands on the new version, a handled review item leaves the queue (and its
undo brings it back), forget erases the text from the disk, undo of a correction. Sessions: a listener
on another port of 127.0.0.1 never receives the session cookie, and two consoles keep their sessions.

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

import http.server
import json
import logging
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

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
VIEWPORT = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
ROOT = Path(__file__).resolve().parents[3]
AXE = Path(os.environ.get("HINDSIGHT_AXE", ROOT / ".venv" / "axe" / "node_modules" / "axe-core" / "axe.min.js"))
"""axe-core's browser bundle (``npm install --prefix .venv/axe axe-core@4.11.0``, as ``.ci/run`` does)."""

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


@dataclass
class Tab:
    """A logged-in browser tab and its session's path prefix (``/s/<key>``)."""

    page: Any
    prefix: str


def login(page: Any, served: Served) -> str:
    """Open the URL with the token; the session's prefix (the page lands on its memories)."""
    response = page.goto(f"{served.base}/?token={served.token}")
    assert response is not None
    assert response.status == 200
    found = re.match(rf"{re.escape(served.base)}(/s/[\w-]+)/memories", page.url)
    assert found, page.url  # redirected under the session's secret path, the token spent
    return found.group(1)


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
def axe_source() -> str:
    if not AXE.exists():
        pytest.fail(f"axe-core is missing at {AXE}: npm install --prefix .venv/axe axe-core@4.11.0 (as .ci/run does)")
    return AXE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("console-screenshots")
    logger.warning("console screenshots: %s", directory)
    return directory


@pytest.fixture(scope="module")
def tab(browser: Any, served: Served) -> Iterator[Tab]:
    """A logged-in tab: the one-time token exchanged for the session.

    ``bypass_csp`` only so that axe-core can be injected (the pages forbid every script; the unit tier
    checks the header and that no page carries one).
    """
    context = browser.new_context(viewport=VIEWPORT, locale="zh-CN", bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield Tab(page, login(page, served))
    context.close()


def _go(tab: Tab, served: Served, path: str, lang: str, status: int = 200) -> None:
    response = tab.page.goto(f"{served.base}{tab.prefix}{path}{'&' if '?' in path else '?'}lang={lang}")
    assert response is not None
    assert response.status == status, path
    assert tab.page.locator("html").get_attribute("lang") == lang


def _shot(page: Any, shots: Path, name: str) -> None:
    path = shots / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 5_000  # a rendered page, not a blank one


def _flash(page: Any) -> str:
    text: str = page.get_by_test_id("flash").first.inner_text()
    return text


def _ids(page: Any, selector: str, attr: str = "data-memory-id") -> list[str]:
    return [e.get_attribute(attr) for e in page.locator(selector).all()]


def pages(served: Served, lang: str) -> dict[str, tuple[str, int]]:
    """Every page of the console: name → (path, expected status)."""
    return {
        "memories": ("/memories", 200),
        "search": (f"/memories?q={TEXTS[lang]['query']}", 200),
        "memory": (f"/memories/{served.ids[f'{lang}:search']}", 200),
        "forget": (f"/memories/{served.ids[f'{lang}:corrected']}/forget", 200),
        "runs": ("/runs", 200),
        "run": (f"/runs/run-wrong-{lang}", 200),
        "review": ("/review", 200),
        "plots": ("/plots", 200),
        "bad-request": ("/memories?q=csv&k=3000000000", 400),
    }


# The engine's own words: on a Chinese page none may show (the memories' own words aside).
ENGINE_WORDS = re.compile(
    r"\b(verdict|superseded|credited|uncredited|debited|restored|archived|active|success|failure|unknown|"
    r"user_feedback|agent_inference|tool_output|contradicted|correction|weekly_report|data_cleaning|"
    r"file_operation|floor_margin|experience|inferred|internal error|Traceback)\b"
)
REPR = re.compile(r"\bNone\b|\[\]|\{'|\{\}|\bTrue\b|\bFalse\b|<[a-zA-Z_.]+ object at")


def _readable(page: Any) -> str:
    """The page's visible text without the memories' and users' own words (which may be in any language)."""
    text: str = page.locator("main").inner_text() + "\n" + page.locator("header").inner_text()
    own = [*(v for t in TEXTS.values() for v in t.values()), NEAR_A, NEAR_B, "English", "中文"]
    for words in sorted(own, key=len, reverse=True):
        text = text.replace(words, " ")
        text = text.replace(" ".join(words.split())[:39], " ")  # the 40-character names in messages
    # a correction is stored in the language it was typed in: "User correction (task: …): …" is the memory's own text
    return re.sub(r"User correction(?: \(task: [^)]*\))?:", " ", text)


def _axe(page: Any, source: str) -> list[dict[str, Any]]:
    page.add_script_tag(content=source)
    result = page.evaluate("async () => JSON.stringify(await axe.run(document, {resultTypes: ['violations']}))")
    violations: list[dict[str, Any]] = json.loads(result)["violations"]
    return [v for v in violations if v.get("impact") in ("serious", "critical")]


# ---------------------------------------------------------------------- refusals and sessions


def test_without_the_token_every_page_is_refused(browser: Any, served: Served, shots: Path) -> None:
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    for path in ("/memories", f"/memories/{served.ids['zh:search']}", "/review", "/s/guessed-key/memories"):
        response = page.goto(served.base + path)
        assert response is not None
        assert response.status == 401, path
        assert TEXTS["zh"]["search"] not in page.content()
    response = page.goto(f"{served.base}/?token=not-the-token-not-the-token")
    assert response is not None
    assert response.status == 403
    assert page.get_by_test_id("error-title").is_visible()
    context.close()


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Another local listener: records the Cookie header of every request it gets."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Cookie") or "")
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html><body>another listener</body></html>")

    def log_message(self, *args: Any) -> None:
        return


def test_a_listener_on_another_port_never_receives_the_session(browser: Any, tmp_path: Path) -> None:
    """Browsers do not scope cookies by port; the cookie is bound to the session's secret path instead."""
    stack = ExitStack()
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        served = stack.enter_context(running_console(tmp_path / "first"))
        prefix = login(page, served)
        secrets = [c["value"] for c in context.cookies() if c["name"].startswith("hindsight_console_")]
        assert secrets
        assert all(c["path"] == f"{prefix}/" for c in context.cookies() if c["name"].startswith("hindsight_console_"))
        port = other.server_address[1]
        for path in ("/", "/memories", "/s/", f"/x{prefix}/memories"):  # what a link could point the browser to
            page.goto(f"http://127.0.0.1:{port}{path}")
        assert _Recorder.seen
        assert not any(secret in header for header in _Recorder.seen for secret in secrets)
        # and a second console on another port: both sessions stay open
        with running_console(tmp_path / "second") as second:
            tab2 = context.new_page()
            prefix2 = login(tab2, second)
            response = page.goto(f"{served.base}{prefix}/review")
            assert response is not None
            assert response.status == 200
            response = tab2.goto(f"{second.base}{prefix2}/review")
            assert response is not None
            assert response.status == 200
    finally:
        context.close()
        other.shutdown()
        stack.close()


# ---------------------------------------------------------------------- every page, both languages


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_page_reads_in_the_readers_language_with_the_words_as_links(
    tab: Tab, served: Served, shots: Path, axe_source: str, lang: str
) -> None:
    page = tab.page
    for name, (path, status) in pages(served, lang).items():
        for size, viewport in (("desktop", VIEWPORT), ("phone", PHONE)):
            page.set_viewport_size(viewport)
            _go(tab, served, path, lang, status)
            assert page.locator("[data-untranslated]").count() == 0, (name, lang)
            text = _readable(page)
            assert not REPR.findall(text), (name, lang, REPR.findall(text))
            if lang == "zh":
                assert not ENGINE_WORDS.findall(text), (name, ENGINE_WORDS.findall(text))
            for link in page.get_by_test_id("memory-link").all():
                words = link.inner_text().strip()
                assert words, name
                assert not words.startswith("mem_"), (name, words)  # the content is the link, not the id
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, (name, size, overflow)  # no horizontal scroll
            bad = _axe(page, axe_source)
            assert not bad, (name, size, lang, [(v["id"], v["impact"], len(v["nodes"])) for v in bad])
            _shot(page, shots, f"{name}-{lang}-{size}")
    page.set_viewport_size(VIEWPORT)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_search_result_is_one_compact_row_with_its_score_as_a_bar(tab: Tab, served: Served, lang: str) -> None:
    page = tab.page
    page.set_viewport_size(VIEWPORT)
    _go(tab, served, "/memories", lang)
    page.fill("#q", TEXTS[lang]["query"])
    page.click("#search-button")
    rows = page.get_by_test_id("search-row")
    assert rows.count() >= 3
    assert served.ids[f"{lang}:search"] in _ids(page, "[data-testid=search-row]")[:3]  # the real recall found it
    for row in rows.all():
        box = row.bounding_box()
        assert box is not None
        assert box["height"] <= 64, box
        assert row.get_by_test_id("factor-bar").count() == 1
        assert row.get_by_test_id("served").inner_text().strip()  # the decision in words
    first = page.locator(f'[data-testid=search-row][data-memory-id="{served.ids[f"{lang}:search"]}"]')
    assert first.get_attribute("data-served") == "yes"
    assert {"similarity", "task_type", "confidence"} <= set(_ids(first, "[data-factor]", "data-factor"))
    first.locator("summary").click()  # expand: every number
    assert float(first.get_by_test_id("floor-margin").inner_text()) >= 0


def test_every_control_is_reachable_by_keyboard(tab: Tab, served: Served) -> None:
    page = tab.page
    _go(tab, served, "/review", "zh")
    reached = set()
    for _ in range(60):
        page.keyboard.press("Tab")
        reached.add(page.evaluate("document.activeElement && document.activeElement.textContent.trim()"))
    assert STRINGS["zh"]["skip"] in reached
    assert any(STRINGS["zh"]["confirm_short"] == r for r in reached)


# ---------------------------------------------------------------------- actions


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_an_edit_lands_on_the_new_version_with_what_changed(tab: Tab, served: Served, shots: Path, lang: str) -> None:
    page = tab.page
    old = served.ids[f"{lang}:edit"]
    _go(tab, served, f"/memories/{old}", lang)
    page.fill("#edit-content", TEXTS[lang]["edited"])
    page.click("#edit-submit")
    new = next(u for u in served.store.list_units(status="active") if u.content == TEXTS[lang]["edited"])
    assert new.supersedes == old
    assert page.url.split("?")[0].endswith(f"/memories/{new.memory_id}")  # landed on the new version
    assert page.get_by_test_id("memory-content").inner_text() == TEXTS[lang]["edited"]
    assert _ids(page, "[data-testid=history-row]") == [new.memory_id, old]
    assert page.locator("[data-testid=history-text] ins").count() >= 1  # the diff, word by word
    assert STRINGS[lang]["undo"] in page.get_by_test_id("flash").inner_text()
    _shot(page, shots, f"edited-{lang}")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_handled_item_leaves_the_queue_and_undo_brings_it_back(
    tab: Tab, served: Served, shots: Path, lang: str
) -> None:
    page = tab.page
    target = served.ids[f"{lang}:confirm"]
    _go(tab, served, "/review", lang)
    count = int(page.get_by_test_id("queue-count").inner_text())
    item = page.locator(f'[data-testid=review-item][data-key="{target}"]')
    assert item.count() == 1
    item.get_by_test_id("action-confirm").locator("button").click()
    assert page.url.split("?")[0].endswith("/review")
    assert page.locator(f'[data-testid=review-item][data-key="{target}"]').count() == 0  # it left the queue
    assert int(page.get_by_test_id("queue-count").inner_text()) == count - 1
    assert served.store.get(target).status == "superseded"
    _shot(page, shots, f"handled-{lang}")
    page.get_by_test_id("flash-undo").locator("button").click()
    assert served.store.get(target).status == "active"
    _go(tab, served, "/review", lang)
    assert page.locator(f'[data-testid=review-item][data-key="{target}"]').count() == 1


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_forget_asks_first_then_the_text_is_gone_from_the_disk(
    tab: Tab, served: Served, shots: Path, lang: str
) -> None:
    page = tab.page
    gone, secret = served.ids[f"{lang}:forget"], TEXTS[lang]["forget"]
    _go(tab, served, f"/memories/{gone}", lang)
    page.click("#forget-link")
    assert page.get_by_test_id("forget-content").inner_text() == secret  # the confirmation names what is erased
    assert page.get_by_test_id("forget-refs").is_visible()
    assert served.store.get(gone).status == "active"  # the page itself deletes nothing
    page.get_by_test_id("action-forget").locator("button").click()
    assert secret[:20] in _flash(page)
    assert gone not in _ids(page, "[data-testid=memory-row]")
    with pytest.raises(MemoryNotFoundError):
        served.store.get(gone)
    assert text_hits(served.directory, {"secret": secret}) == {}  # a raw byte scan of every file of the store


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_undo_feedback_reverts_the_correction(tab: Tab, served: Served, shots: Path, lang: str) -> None:
    page = tab.page
    run = f"run-wrong-{lang}"
    created = [u for u in served.store.list_units(status="active") if u.source == "user_feedback" and u.run_id == run]
    assert created, "the correction made a user_feedback memory"
    _go(tab, served, f"/runs/{run}", lang)
    entry = page.get_by_test_id("feedback-entry").first
    assert TEXTS[lang]["correction"] in entry.get_by_test_id("feedback-text").inner_text()
    page.get_by_test_id("action-undo_feedback").locator("button").click()
    assert run in _flash(page)
    assert page.get_by_test_id("feedback-undone").first.is_visible()
    assert page.locator('[data-testid=feedback-entry][data-kind="undo"]').count() == 1
    assert page.get_by_test_id("action-undo_feedback").count() == 0  # nothing left to undo
    assert all(served.store.get(u.memory_id).status == "archived" for u in created)
    _shot(page, shots, f"undone-{lang}")
