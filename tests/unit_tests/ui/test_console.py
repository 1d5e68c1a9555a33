"""The review console (``hindsight ui``) through Starlette's TestClient over a real store (in-memory backend).

Every route's HTML in zh and en, every refusal (no token, a used or wrong token, a foreign Host, a bad or
missing CSRF token, a cross-origin post, a read-only principal), and each action's effect on the store and
its undo. The browser tests (Playwright on the system Chromium) drive the same pages by their ids and
``data-testid`` attributes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from html import unescape as html_unescape

import pytest
from markupsafe import escape
from starlette.testclient import TestClient

from langchain_hindsight import Hindsight, MemoryStore, MemoryUnit
from langchain_hindsight.cli.main import EXIT_USAGE, main
from langchain_hindsight.errors import MemoryNotFoundError
from langchain_hindsight.sharing.principals import Principal
from langchain_hindsight.store.backend import InMemoryBackend
from langchain_hindsight.types import ScoredMemory, utcnow
from langchain_hindsight.ui import Console, create_app
from langchain_hindsight.ui._security import TokenGate
from langchain_hindsight.ui.strings import STRINGS
from tests.fakes import NgramEmbeddings

BASE = "http://127.0.0.1:8766"
WEEKLY = "周报按最近7天滚动窗口统计销售额。"
CSV = "Read CSV files with encoding='utf-8-sig' when they contain Chinese text."
LOW = "Always retry the upload three times before giving up."
NEAR_A = "Send the weekly sales report to manager Zhang every Monday morning."
NEAR_B = "Send the weekly sales report to manager Zhang every Monday morning, totals included."


@dataclass
class Env:
    store: MemoryStore
    console: Console
    client: TestClient
    gate: TokenGate
    ids: dict[str, str]


def _login(client: TestClient, gate: TokenGate) -> str:
    """Exchange the token; the client's base URL becomes the session's prefix (``/s/<key>``), which it returns."""
    r = client.get(f"/?token={gate.token}", follow_redirects=False)
    assert r.status_code == 303
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=strict" in cookie
    prefix = r.headers["location"].removesuffix("/memories")
    assert re.fullmatch(r"/s/[\w-]{24,}", prefix), prefix
    assert f"path={prefix.lower()}/" in cookie  # bound to the session's secret path
    assert client.cookies.get(gate.cookie) == r.cookies[gate.cookie]  # kept by the client, as a browser would
    client.base_url = client.base_url.join(prefix)
    return prefix


def _csrf(client: TestClient, gate: TokenGate) -> str:
    """The session's CSRF token (what every action form of the session carries)."""
    session = gate.session(client.base_url.path.rstrip("/").rsplit("/", 1)[-1], client.cookies[gate.cookie])
    assert session is not None
    return session.csrf


def _flash(html: str) -> list[str]:
    return [html_unescape(m) for m in re.findall(r'data-testid="flash"><span>([^<]*)<', html)]


def _served(unit: MemoryUnit, rank: int = 1) -> ScoredMemory:
    return ScoredMemory(memory=unit, score=0.6, similarity=0.5, breakdown={"similarity": 0.25, "confidence": 0.15})


def _seed(store: MemoryStore) -> dict[str, str]:
    add = lambda content, **kw: store.add(MemoryUnit(content=content, **kw)).unit.memory_id  # noqa: E731
    ids = {
        "weekly": add(WEEKLY, task_type="weekly_report"),
        "csv": add(CSV, task_type="data_cleaning", tags=["csv"]),
        "low": add(LOW, task_type="file_operation", confidence=0.2),
        "near_a": add(NEAR_A, task_type="weekly_report"),
        "near_b": add(NEAR_B, task_type="weekly_report"),
    }
    hs = Hindsight(store=store)
    journal = hs.journal
    csv = store.get(ids["csv"])
    for i in range(3):  # served three times, never followed by success: the review queue's first list
        journal.start(f"run-fail-{i}", task="clean the csv export", task_type="data_cleaning", served=[_served(csv)])
        journal.finish(f"run-fail-{i}", outcome="failure")
    journal.start(
        "run-ok", task="生成本周的销售周报", task_type="weekly_report", served=[_served(store.get(ids["weekly"]))]
    )
    journal.finish("run-ok", outcome="success")
    journal.start("run-chat", task="生成本周的销售周报", task_type="weekly_report",
                  served=[_served(store.get(ids["weekly"]))])  # fmt: skip
    journal.finish("run-chat", outcome="success")
    journal.add_feedback("run-chat", text="不对，周报只统计本周一到周日", rejected=True, success=False,
                         rule="zh:不对-prefix")  # fmt: skip
    hs.close()
    return ids


@pytest.fixture
def env(fake_embeddings: NgramEmbeddings) -> Iterator[Env]:
    store = MemoryStore(backend=InMemoryBackend(), embeddings=fake_embeddings)
    ids = _seed(store)
    console = Console(store)
    app, gate = create_app(console)
    client = TestClient(app, base_url=BASE)
    _login(client, gate)
    yield Env(store, console, client, gate, ids)
    console.close()
    store.close()


def _pages(ids: dict[str, str]) -> list[str]:
    w = ids["weekly"]
    return [
        "/memories",
        "/memories?q=生成本周的销售周报",
        "/memories?q=read+the+csv+file",
        f"/memories/{w}",
        f"/memories/{w}/forget",
        "/runs",
        "/runs/run-chat",
        "/review",
        "/plots",
    ]


# ---------------------------------------------------------------------- pages


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_page_renders_in_both_languages(env: Env, lang: str) -> None:
    t = STRINGS[lang]
    for path in _pages(env.ids):
        r = env.client.get(path + ("&" if "?" in path else "?") + f"lang={lang}")
        assert r.status_code == 200, path
        assert f'<html lang="{lang}">' in r.text, path
        assert t["nav_memories"] in r.text, path
        assert t["nav_review"] in r.text, path
        assert r.headers["content-security-policy"].startswith("default-src 'none'")
        assert "<script" not in r.text
        assert "http://" not in r.text.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_the_language_is_remembered_in_a_cookie(env: Env) -> None:
    env.client.get("/memories?lang=en")
    assert STRINGS["en"]["nav_memories"] in env.client.get("/runs").text
    env.client.get("/runs?lang=zh")
    assert STRINGS["zh"]["nav_runs"] in env.client.get("/memories").text


def test_the_list_filters_by_task_type_source_status_and_confidence(env: Env) -> None:
    def listed(query: str) -> set[str]:
        return set(re.findall(r'data-testid="memory-row" data-memory-id="([^"]+)"', env.client.get(query).text))

    assert listed("/memories") == set(env.ids.values())
    assert listed("/memories?task_type=weekly_report") == {env.ids[k] for k in ("weekly", "near_a", "near_b")}
    assert listed("/memories?max_conf=0.3") == {env.ids["low"]}
    assert listed("/memories?source=manual") == set()
    assert listed("/memories?status=archived") == set()


def test_the_search_runs_the_real_recall_and_shows_every_factor_and_the_floor(env: Env) -> None:
    html = env.client.get("/memories?q=生成本周的销售周报").text
    rows = re.findall(r'data-testid="search-row" data-memory-id="([^"]+)" data-served="(yes|no)"', html)
    assert rows
    assert rows[0][0] == env.ids["weekly"]
    assert rows[0][1] == "yes"
    for factor in ("similarity", "task_type", "confidence"):
        assert f'data-factor="{factor}"' in html
    assert 'data-testid="floor-margin"' in html
    assert "周报" in html  # the task type scored against, in the reader's language
    unrelated = env.client.get("/memories?q=写一首关于秋天的诗&lang=en").text
    served = re.findall(r'data-served="(yes|no)"', unrelated)
    assert "yes" not in served  # shown for judgement, none would be served
    assert "below the relevance floor" in unrelated


def test_the_memory_page_shows_fields_history_runs_and_feedback(env: Env) -> None:
    html = env.client.get(f"/memories/{env.ids['weekly']}").text
    assert f'name="csrf" value="{_csrf(env.client, env.gate)}"' in html  # every action form carries it
    assert WEEKLY in html
    for field in ("memory_id", "source", "supersedes", "merged_from", "evidence"):
        assert f'data-field="{field}"' in html
    assert 'data-run-id="run-ok"' in html
    assert 'data-run-id="run-chat"' in html
    assert "不对，周报只统计本周一到周日" in html
    assert "zh:不对-prefix" in html


def test_the_run_page_is_explain_with_the_feedback_and_its_rule(env: Env) -> None:
    html = env.client.get("/runs/run-chat").text
    assert f'data-testid="run-served-row" data-memory-id="{env.ids["weekly"]}"' in html
    assert 'data-testid="feedback-rule">zh:不对-prefix<' in html
    assert 'data-testid="action-undo_feedback"' in html
    assert env.client.get("/runs/no-such-run").status_code == 404


def test_a_run_the_user_rejected_reads_as_a_failure_in_the_review(env: Env) -> None:
    """run-chat ended without an error and the user said "不对，…": the pages and plots say so, not "success"."""
    runs = env.client.get("/runs?lang=en").text
    (row,) = [r for r in runs.split("<li") if 'data-run-id="run-chat"' in r]
    assert "success (user: failure)" in row
    memory = env.client.get(f"/memories/{env.ids['weekly']}?lang=zh").text
    (row,) = [r for r in memory.split("<li") if 'data-run-id="run-chat"' in r]
    assert "成功（用户判定：失败）" in row
    assert "success (user: failure)" in env.client.get("/runs/run-chat?lang=en").text
    _, _, wins = env.console.timeline("default")
    assert sum(wins) == 1  # run-ok only


def test_the_review_queue_lists_each_kind_of_suspect(env: Env) -> None:
    html = env.client.get("/review").text
    items = re.findall(r'data-testid="review-item" data-kind="(\w+)" data-key="([^"]+)"', html)
    assert ("never", env.ids["csv"]) in items
    assert ("doubtful", env.ids["low"]) in items
    pairs = [key for kind, key in items if kind == "pair"]
    assert len(pairs) == 1
    assert set(pairs[0].split("+")) == {env.ids["near_a"], env.ids["near_b"]}
    assert ("correction", "run-chat#0") in items
    assert f'data-testid="queue-count">{len(items)}<' in html  # the count in the navigation


def test_the_plots_are_inline_svg(env: Env) -> None:
    html = env.client.get("/plots").text
    for testid in ("plot-histogram", "plot-timeline", "plot-success"):
        assert f'data-testid="{testid}"' in html
    assert 'data-count="1"' in html  # the 0.2 memory in its bin
    assert 'data-field="failures" data-value="3"' in html  # the csv memory: three failed runs
    # the weekly memory: run-ok, and run-chat that the user rejected
    assert 'data-field="successes" data-value="1"' in html
    assert 'data-field="failures" data-value="1"' in html
    assert LOW[:17] in html or CSV[:17] in html  # memories labelled by their words


def test_a_missing_memory_is_a_404_page(env: Env) -> None:
    r = env.client.get("/memories/mem_nope")
    assert r.status_code == 404
    assert 'data-testid="error-title"' in r.text


# ---------------------------------------------------------------------- refusals


def test_without_a_session_every_route_is_401(env: Env) -> None:
    anonymous = TestClient(env.client.app, base_url=BASE)
    for path in _pages(env.ids):
        r = anonymous.get(path)
        assert r.status_code == 401, path
        assert WEEKLY not in r.text
        assert escape(CSV) not in r.text
    r = anonymous.post("/act/forget", data={"memory_id": env.ids["weekly"], "csrf": "x"})
    assert r.status_code == 401
    assert env.store.get(env.ids["weekly"]).status == "active"


def test_a_wrong_or_used_token_is_403(env: Env) -> None:
    other = TestClient(env.client.app, base_url=BASE)
    assert other.get("/?token=wrong-token-wrong-token", follow_redirects=False).status_code == 403
    assert other.get(f"/?token={env.gate.token}", follow_redirects=False).status_code == 403  # single use
    assert other.get("/memories").status_code == 401


def test_a_configured_token_can_be_exchanged_again(env: Env) -> None:
    app, gate = create_app(env.console, token="a-configured-token-123")
    for _ in range(2):
        client = TestClient(app, base_url=BASE)
        _login(client, gate)
        assert client.get("/memories").status_code == 200


def test_a_foreign_host_header_is_refused(env: Env) -> None:
    r = env.client.get("/memories", headers={"host": "evil.example:8766"})
    assert r.status_code == 403


def test_a_post_without_the_right_csrf_token_changes_nothing(env: Env) -> None:
    w = env.ids["weekly"]
    for data in ({"memory_id": w}, {"memory_id": w, "csrf": "forged"}):
        r = env.client.post("/act/forget", data=data)
        assert r.status_code == 403
    assert env.store.get(w).status == "active"


def test_a_cross_origin_post_is_refused(env: Env) -> None:
    csrf = _csrf(env.client, env.gate)
    r = env.client.post(
        "/act/confirm", data={"memory_id": env.ids["csv"], "csrf": csrf}, headers={"origin": "http://evil.example"}
    )
    assert r.status_code == 403
    assert env.store.get(env.ids["csv"]).source == "agent_inference"


def test_a_principal_without_write_grants_gets_a_read_only_console(env: Env) -> None:
    reader = Principal("auditor", "default")
    console = Console(env.store, principal=reader)
    app, gate = create_app(console, locale="en")
    client = TestClient(app, base_url=BASE)
    _login(client, gate)
    html = client.get(f"/memories/{env.ids['weekly']}").text
    assert 'data-testid="read-only"' in html
    assert 'data-testid="actions"' not in html
    assert 'data-testid="action-undo_feedback"' not in client.get("/runs/run-chat").text
    assert 'data-testid="action-' not in client.get("/review").text
    csrf = _csrf(client, gate)
    for action, data in [
        ("confirm", {"memory_id": env.ids["csv"]}),
        ("forget", {"memory_id": env.ids["csv"]}),
        ("undo_feedback", {"run_id": "run-chat"}),
    ]:
        assert client.post(f"/act/{action}", data={**data, "csrf": csrf}).status_code == 403, action
    assert env.store.get(env.ids["csv"]).status == "active"
    assert client.get("/memories?namespace=secret").status_code == 403  # no read grant there
    console.close()


def test_a_principal_with_write_grants_acts_only_where_it_may_write(env: Env) -> None:
    writer = Principal("cleaner", "cleaner", read=frozenset({"default"}), write=frozenset({"shared"}))
    env.store.add(MemoryUnit(content="Drop duplicate rows before aggregating.", task_type="data_cleaning"),
                  namespace="cleaner")  # fmt: skip
    console = Console(env.store, principal=writer)
    app, gate = create_app(console)
    client = TestClient(app, base_url=BASE)
    _login(client, gate)
    own = env.store.list_units(namespace="cleaner")[0].memory_id
    assert 'data-testid="action-confirm"' in client.get(f"/memories/{own}?namespace=cleaner").text
    assert 'data-testid="read-only"' not in client.get("/memories?namespace=cleaner").text
    page = client.get(f"/memories/{env.ids['csv']}?namespace=default").text  # readable, not writable
    assert escape(CSV) in page
    assert 'data-testid="actions"' not in page
    data = {"memory_id": env.ids["csv"], "namespace": "default", "csrf": _csrf(client, gate)}
    assert client.post("/act/confirm", data=data).status_code == 403
    assert env.store.get(env.ids["csv"]).source == "agent_inference"
    console.close()


# ---------------------------------------------------------------------- actions


def _act(env: Env, action: str, **data: str) -> str:
    data.setdefault("next", "/memories")
    r = env.client.post(f"/act/{action}", data={**data, "csrf": _csrf(env.client, env.gate)})
    assert r.status_code == 200, r.text[:500]
    messages = _flash(r.text)
    assert messages, f"{action} said nothing"
    return messages[0]


def test_confirm_raises_to_trusted_by_a_manual_version_and_revert_undoes_it(env: Env) -> None:
    old_id = env.ids["low"]
    before = env.store.get(old_id)
    said = _act(env, "confirm", memory_id=old_id)
    new = env.store.list_units(source="manual")[0]
    assert LOW[:30] in said
    assert new.content == LOW
    assert new.supersedes == old_id
    assert new.score_confidence >= 0.8
    assert "confirmed" in new.tags
    assert env.store.get(old_id).status == "superseded"
    assert [u.memory_id for u in env.store.history(new.memory_id)] == [new.memory_id, old_id]
    listed = env.client.get("/memories?source=manual").text  # the cached listing follows the action
    assert f'data-memory-id="{new.memory_id}"' in listed
    said = _act(env, "revert", memory_id=new.memory_id)
    assert LOW[:30] in said
    back = env.store.get(old_id)
    assert back.status == "active"
    assert back.score_confidence == pytest.approx(before.score_confidence)
    assert env.store.get(new.memory_id).status == "archived"


@pytest.mark.parametrize(
    ("key", "text"), [("weekly", "周报只统计本周一到周日的销售额。"), ("csv", "Read CSV files with encoding='gbk'.")]
)
def test_edit_stores_a_version_that_supersedes_and_revert_undoes_it(env: Env, key: str, text: str) -> None:
    old_id = env.ids[key]
    said = _act(env, "edit", memory_id=old_id, content=text)
    new = next(u for u in env.store.list_units(status="active") if u.content == text)
    assert text[:30] in said
    assert new.supersedes == old_id
    assert new.source == env.store.get(old_id).source
    assert env.store.get(old_id).status == "superseded"
    assert escape(text) in env.client.get(f"/memories/{new.memory_id}").text
    _act(env, "revert", memory_id=new.memory_id)
    assert env.store.get(old_id).status == "active"


def test_an_edit_to_the_same_text_changes_nothing_and_says_so(env: Env) -> None:
    said = _act(env, "edit", memory_id=env.ids["csv"], content=CSV)
    assert said.startswith(STRINGS["zh"]["failed"].split("{")[0])
    assert len(env.store.list_units()) == len(env.ids)


def test_merge_folds_one_into_the_other_and_unmerge_undoes_it(env: Env) -> None:
    a, b = env.ids["near_a"], env.ids["near_b"]
    said = _act(env, "merge", memory_id=a, other=b, next="/review")
    statuses = {a: env.store.get(a).status, b: env.store.get(b).status}
    assert sorted(statuses.values()) == ["active", "archived"]
    keeper = a if statuses[a] == "active" else b
    folded = b if keeper == a else a
    assert folded in env.store.get(keeper).merged_from
    assert env.store.get(keeper).content[:30] in said
    said = _act(env, "unmerge", memory_id=keeper)
    assert env.store.get(folded).content[:30] in said
    assert env.store.get(folded).status == "active"
    assert folded not in env.store.get(keeper).merged_from


def test_forget_asks_first_naming_what_is_erased_then_deletes(env: Env) -> None:
    w = env.ids["weekly"]
    page = env.client.get(f"/memories/{w}/forget?lang=en").text
    assert WEEKLY in page
    assert 'data-testid="forget-refs"' in page
    assert "2 run records" in page
    assert env.store.get(w).status == "active"  # the page itself deletes nothing
    said = _act(env, "forget", memory_id=w, next=f"/memories/{w}")
    assert WEEKLY[:20] in said
    with pytest.raises(MemoryNotFoundError):
        env.store.get(w)
    assert WEEKLY not in env.client.get("/memories").text
    assert w not in env.console.journal("default").get("run-ok").served_ids  # the journal forgets it too


def test_restore_brings_an_archived_memory_back(env: Env) -> None:
    c = env.ids["csv"]
    env.store.archive([c])
    env.console.invalidate("default")
    assert 'data-testid="action-restore"' in env.client.get(f"/memories/{c}").text
    said = _act(env, "restore", memory_id=c)
    assert CSV[:30] in said
    assert env.store.get(c).status == "active"


def test_undo_feedback_reverts_a_correction_through_the_library(env: Env) -> None:
    hs = Hindsight(store=env.store, min_relevance=None)
    weekly = env.store.get(env.ids["weekly"])
    hs.journal.start("run-wrong", task="生成本周的销售周报", task_type="weekly_report", served=[_served(weekly)])
    hs.journal.finish("run-wrong", outcome="success")
    hs.feedback("run-wrong", success=False, comment="不对，周报只统计本周一到周日的数据")
    hs.close()
    env.console.invalidate("default")
    created = [u for u in env.store.list_units(status="active") if u.source == "user_feedback"]
    assert created
    said = _act(env, "undo_feedback", run_id="run-wrong", next="/runs/run-wrong")
    assert "run-wrong" in said
    record = env.console.journal("default").get("run-wrong")
    assert record.feedback[0].undone_at is not None
    assert record.feedback[-1].kind == "undo"
    assert env.store.get(created[0].memory_id).status == "archived"
    assert env.store.get(weekly.memory_id).status == "active"
    assert f'data-memory-id="{created[0].memory_id}"' in env.client.get("/memories?status=archived").text
    again = _act(env, "undo_feedback", run_id="run-wrong")  # nothing left to undo: said, not raised
    assert again.startswith(STRINGS["zh"]["failed"].split("{")[0])


def test_an_action_on_a_missing_memory_is_a_404(env: Env) -> None:
    r = env.client.post("/act/confirm", data={"memory_id": "mem_nope", "csrf": _csrf(env.client, env.gate)})
    assert r.status_code == 404


# ---------------------------------------------------------------------- strings, CLI


def test_both_languages_have_the_same_strings() -> None:
    assert set(STRINGS["zh"]) == set(STRINGS["en"])
    assert all(v.strip() for table in STRINGS.values() for v in table.values())


def test_a_session_expires() -> None:
    gate = TokenGate()
    session = gate.exchange(gate.token)
    assert session is not None
    assert gate.session(session.key, session.secret) is session
    session.created -= timedelta(hours=13).total_seconds()
    assert gate.session(session.key, session.secret) is None
    assert utcnow()  # the module's clock is unrelated (sessions use a monotonic one)


def test_the_cli_refuses_a_public_host_without_a_configured_token(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["ui", "--path", str(tmp_path), "--host", "0.0.0.0"]) == EXIT_USAGE
    assert "--token-file" in capsys.readouterr().err
    short = tmp_path / "token"
    short.write_text("short")
    assert main(["ui", "--path", str(tmp_path), "--host", "0.0.0.0", "--token-file", str(short)]) == EXIT_USAGE


# ---------------------------------------------------------------------- the real server (integration tier)


# ---------------------------------------------------------------------- sessions bound to their console (issue 35)


def test_the_session_cookie_is_bound_to_a_secret_path_and_useless_anywhere_else(env: Env) -> None:
    """Browsers send a ``Path=/`` cookie to every port of the host: ours is sent only under ``/s/<key>/``.

    Another listener on 127.0.0.1 that received the cookie could not use it without the key, and
    the key alone (from the browser history) opens nothing without the cookie.
    """
    key = env.client.base_url.path.rstrip("/").rsplit("/", 1)[-1]
    (cookie,) = [c for c in env.client.cookies.jar if c.name == env.gate.cookie]
    assert cookie.path == f"/s/{key}/"  # never sent to another path (another port's pages)
    assert cookie.name != "hindsight_console"  # one name per console
    jar = {env.gate.cookie: cookie.value or ""}
    replay = TestClient(env.client.app, base_url=BASE, cookies=jar)
    for path in ("/memories", "/review", "/s/not-the-key/memories", "/s//memories"):
        r = replay.get(path)
        assert r.status_code == 401, path
        assert WEEKLY not in r.text
    r = replay.post("/act/forget", data={"memory_id": env.ids["weekly"], "csrf": _csrf(env.client, env.gate)})
    assert r.status_code == 401
    keyless = TestClient(env.client.app, base_url=f"{BASE}/s/{key}")  # the key without the cookie
    assert keyless.get("/memories").status_code == 401
    wrong = TestClient(env.client.app, base_url=f"{BASE}/s/{key}", cookies={env.gate.cookie: "forged-value"})
    assert wrong.get("/memories").status_code == 401
    assert env.store.get(env.ids["weekly"]).status == "active"
    assert env.client.get("/memories").status_code == 200  # the real session still works


def test_two_consoles_side_by_side_keep_their_sessions(env: Env) -> None:
    """A browser keeps one cookie jar per host, whatever the port: a second console must not log the first out."""
    app2, gate2 = create_app(env.console)
    second = TestClient(app2, base_url="http://127.0.0.1:8767")
    _login(second, gate2)
    assert gate2.cookie != env.gate.cookie
    for c in list(second.cookies.jar):  # what the browser now sends to 127.0.0.1 on any port
        env.client.cookies.jar.set_cookie(c)
    for c in list(env.client.cookies.jar):
        second.cookies.jar.set_cookie(c)
    assert env.client.get("/memories").status_code == 200
    assert second.get("/memories").status_code == 200


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("/memories?q=csv&k=3000000000", "k"),
        ("/memories?q=csv&k=0", "k"),
        ("/memories?q=csv&k=ten", "k"),
        ("/memories?page=99999999999", "page"),
        ("/memories?page=-1", "page"),
        ("/memories?min_conf=2", "min_conf"),
        ("/memories?max_conf=nan", "max_conf"),
        ("/memories?q=" + "x" * 1001, "q"),
        ("/runs/" + "r" * 300, "run_id"),
        ("/memories/" + "m" * 300, "memory_id"),
        ("/memories?namespace=" + "n" * 300, "namespace"),
    ],
)
def test_a_bad_parameter_is_a_400_page_with_the_reason(
    env: Env, path: str, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    for lang in ("zh", "en"):
        r = env.client.get(f"{path}&lang={lang}" if "?" in path else f"{path}?lang={lang}")
        assert r.status_code == 400, (path, r.status_code)
        detail = re.search(r'data-testid="error-detail">([^<]*)<', r.text)
        assert detail
        assert name in detail.group(1)
        assert detail.group(1).startswith(STRINGS[lang]["bad_int"][:2]) or lang == "en" or "参数" in detail.group(1)
    assert not [rec for rec in caplog.records if rec.levelname == "ERROR"]  # no traceback in the log


# ---------------------------------------------------------------------- the reader's language (issue 36)

_ENGINE_WORDS = re.compile(
    r"\b(None|True|False|verdict|superseded|credited|uncredited|debited|restored|archived|active|success|failure|"
    r"unknown|user_feedback|agent_inference|tool_output|contradicted|correction|weekly_report|data_cleaning|"
    r"file_operation|floor_margin|experience|inferred)\b"
)


def _visible_text(html: str) -> str:
    """What a reader sees: no style block, no tags or attributes, entities decoded."""
    html = re.sub(r"<style.*?</style>", " ", html, flags=re.S)
    html = re.sub(r'<span lang="en">.*?</span>', " ", html, flags=re.S)  # the language switch's own label
    html = re.sub(r'<a id="switch-lang"[^>]*>.*?</a>', " ", html, flags=re.S)
    return html_unescape(re.sub(r"<[^>]+>", " ", html))


def _with_a_real_correction(env: Env) -> None:
    hs = Hindsight(store=env.store, min_relevance=None)
    weekly = env.store.get(env.ids["weekly"])
    hs.journal.start("run-wrong", task="生成本周的销售周报", task_type="weekly_report", served=[_served(weekly)])
    hs.journal.finish("run-wrong", outcome="success")
    hs.feedback("run-wrong", success=False, comment="不对，周报只统计本周一到周日的数据")
    hs.journal.start("run-good", task="清洗导出的 csv", task_type="data_cleaning",
                     served=[_served(env.store.get(env.ids["csv"]))])  # fmt: skip
    hs.journal.finish("run-good", outcome="unknown")
    hs.feedback("run-good", success=True)
    hs.close()
    env.console.invalidate("default")


def test_every_page_in_chinese_has_no_untranslated_engine_text_and_no_python_repr(env: Env) -> None:
    _with_a_real_correction(env)
    weekly = env.ids["weekly"]
    corrected = [u for u in env.store.list_units() if u.source == "user_feedback"]
    assert corrected
    pages = [*_pages(env.ids), "/runs/run-wrong", "/runs/run-good", f"/memories/{env.ids['csv']}",
             f"/memories/{corrected[0].memory_id}", f"/memories/{weekly}", "/memories?q=" + "x" * 2000]  # fmt: skip
    for path in pages:
        r = env.client.get(path + ("&" if "?" in path else "?") + "lang=zh")
        assert r.status_code in (200, 400), path
        assert "data-untranslated" not in r.text, path
        text = _visible_text(r.text)
        for content in (CSV, LOW, NEAR_A, NEAR_B, "clean the csv export"):  # the memories' own words may be English
            text = text.replace(content, " ")
        found = _ENGINE_WORDS.findall(text)
        assert not found, (path, found)
        assert "[]" not in text
        assert "{'" not in text, path


def test_a_reason_no_pattern_knows_is_shown_marked_untranslated_not_hidden() -> None:
    from langchain_hindsight.ui._words import Words

    html = str(Words("zh").reason_html("some future engine sentence"))
    assert "data-untranslated" in html
    assert "some future engine sentence" in html
    assert Words("zh").reason("the user said run r1 failed: its success credit (+0.0500) taken back") == (
        "用户说运行 r1 失败了：收回它带来的加分（+0.05）",
        True,
    )


def test_an_edit_lands_on_the_new_version_and_a_merge_on_the_merged_memory(env: Env) -> None:
    old = env.ids["weekly"]
    text = "周报只统计本周一到周日的销售额。"
    r = env.client.post("/act/edit", data={"memory_id": old, "content": text, "next": f"/memories/{old}",
                                            "csrf": _csrf(env.client, env.gate)})  # fmt: skip
    new = next(u for u in env.store.list_units(status="active") if u.content == text)
    assert r.url.path.endswith(f"/memories/{new.memory_id}")
    assert 'data-testid="memory-content">' + text in r.text
    assert "<del>" in r.text  # the timeline shows what changed, word by word
    assert "<ins>" in r.text
    assert 'data-testid="flash-undo"' in r.text
    a, b = env.ids["near_a"], env.ids["near_b"]
    r = env.client.post("/act/merge", data={"memory_id": a, "other": b, "next": f"/memories/{a}",
                                             "csrf": _csrf(env.client, env.gate)})  # fmt: skip
    keeper = a if env.store.get(a).status == "active" else b
    assert r.url.path.endswith(f"/memories/{keeper}")


def test_a_handled_item_leaves_the_queue_and_the_undo_brings_it_back(env: Env) -> None:
    low = env.ids["low"]
    assert f'data-key="{low}"' in env.client.get("/review").text
    r = env.client.post("/act/confirm", data={"memory_id": low, "next": "/review", "csrf": _csrf(env.client, env.gate)})
    assert r.url.path.endswith("/review")
    assert f'data-key="{low}"' not in r.text
    undo = re.search(r'data-testid="flash-undo">(.*?)</form>', r.text, re.S)
    assert undo
    fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', undo.group(1)))
    action = re.search(r'action="[^"]*/act/(\w+)"', r.text[: undo.end()].rsplit("<form", 1)[-1])
    assert action
    back = env.client.post(f"/act/{action.group(1)}", data=fields)
    assert back.status_code == 200
    assert env.store.get(low).status == "active"
    assert f'data-key="{low}"' in env.client.get("/review").text


def test_the_usage_bar_grows_a_used_and_set_aside_bar_when_the_usage_has_those_fields() -> None:
    """``MemoryUsage`` gains ``used``/``set_aside`` on the credit work's branch: the second bar then appears."""
    from types import SimpleNamespace

    from langchain_hindsight.ui.views import usage_bars

    now = SimpleNamespace(shown=4, successes=1, unknown=1, failures=2)
    assert usage_bars(now) == [[("successes", 1), ("unknown", 1), ("failures", 2)]]
    later = SimpleNamespace(shown=4, successes=1, unknown=1, failures=2, used=3, set_aside=1)
    assert usage_bars(later)[1] == [("used", 3), ("set_aside", 1)]
    assert all(STRINGS[lang][f"usage_{f}"] for lang in STRINGS for bar in usage_bars(later) for f, _ in bar)
