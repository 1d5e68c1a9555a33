"""Issue 20's acceptance scenarios: the memory's own judgement, met as a new user meets it.

The tests of this subject that need a real embedding model, an on-disk or server store, or a child
process (the integration tier); those that need none are in ``tests/unit_tests/session/test_judgement_scenarios.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from langchain_core.embeddings import Embeddings

from langchain_hindsight import Hindsight, HindsightError, MemoryUnit
from tests.fakes import WEEKLY_REPORT_LESSON
from tests.unit_tests.session.test_judgement_scenarios import TASK, User, _lesson, _opened, _served, answer


@pytest.fixture
def make_real_hs(routed_embeddings: Embeddings) -> Iterator[Callable[..., Hindsight]]:
    """``Hindsight`` bundles on the in-memory backend and the real default embedder (integration tier)."""
    yield from _opened(routed_embeddings)


# ---------------------------------------------------------------------------- 6. the floor: longer and chat queries
OTHER_MEMORIES = [  # a realistic store around the weekly lesson: other tasks, a hard negative (monthly), the user
    ("data_cleaning", "读取 ERP 导出的 CSV 时指定 encoding='utf-8-sig'，否则第一列表头带 BOM。"),
    ("data_cleaning", "清洗客户名单时先按手机号去重，再统一省市名称。"),
    ("data_cleaning", "日期列混有“2024/6/3”和“2024-06-03”两种格式，先统一成 ISO 格式再比较。"),
    ("data_analysis", "计算客单价时用销售额除以订单数，不要除以顾客数。"),
    ("data_analysis", "同比增长率用今年同期除以去年同期再减一。"),
    ("api_call", "调用库存接口遇到 429 时等待 2 秒后重试，最多 3 次。"),
    ("api_call", "会员系统的接口需要在请求头里带上 X-Tenant-Id。"),
    ("monthly_report", "月报的数据范围取上个自然月的第一天到最后一天。"),
    ("monthly_report", "月报里的退货金额单独列一行，不要冲减销售额。"),
    ("code_generation", "写 SQL 时表名用反引号括起来，避免和关键字冲突。"),
    ("code_generation", "Python 脚本里读取大文件用 chunksize 分块，避免内存溢出。"),
    ("file_operation", "导出 Excel 时文件名带上日期，例如 sales_20240603.xlsx。"),
    ("general", "用户偏好简洁的回答，先给结论再给细节。"),
    ("general", "用户在上海，时区是东八区。"),
    ("general", "用户下个月要去成都出差，需要提前订酒店。"),
    ("web_search", "查竞品价格时优先看官方旗舰店，不看第三方店铺。"),
]


CHAT = [
    "你好，我是华东区的运营，负责十二家门店。",
    "我们上周刚换了收银系统，数据导出的格式可能有点变化。",
    "好的，谢谢。那你顺便帮我把这周的销售周报做一下吧，下午开会要用。",
]


LONGER = {
    "supplement": ["生成本周的销售周报（补充：按门店拆分）"],
    "multi-clause": ["帮我做一下这周各门店的销售周报，按门店拆分，附上环比"],
    "chat": CHAT,
}


WEEKLY_LESSONS = {  # two ways a weekly-report lesson is written; the short task reaches both today
    "natural-week": WEEKLY_REPORT_LESSON,
    "calendar-week": "做周报时，日期范围用自然周（周一到周日），不要用最近7天。",
}


def _weekly_store(make_real_hs: Callable[..., Hindsight], weekly: str) -> Hindsight:
    hs = make_real_hs()
    hs.store.add(_lesson(weekly))
    for task_type, content in OTHER_MEMORIES:
        hs.store.add(MemoryUnit(task_type=task_type, content=content))
    return hs


@pytest.mark.parametrize("form", list(LONGER))
@pytest.mark.parametrize("lesson", list(WEEKLY_LESSONS))
def test_longer_and_chat_weekly_queries_get_the_weekly_lesson(
    lesson: str, form: str, make_real_hs: Callable[..., Hindsight]
) -> None:
    weekly = WEEKLY_LESSONS[lesson]
    hs = _weekly_store(make_real_hs, weekly)
    user = User(hs, answer("好的。"))
    user.say(TASK["zh"], thread="short")
    assert weekly in _served(user.block), "precondition: the short task gets the weekly lesson"

    *chat, request = LONGER[form]
    for turn in chat:
        user.say(turn, thread=form)
    run = user.say(request, thread=form)
    served = _served(user.block)
    assert weekly in served, (
        f"{request!r} got no weekly lesson; it was served {hs.journal.get(run).served_ids}:\n{served}"
    )


UNRELATED = {"poem": "写一首关于秋天的诗", "flight": "帮我订一张去北京的机票"}


HARD_UNRELATED_GAP = pytest.mark.xfail(
    strict=True,
    reason="known gap (docs/recall.md, 'The relevance floor': the 95 % unrelated target is not met): the "
    "per-script floor serves the monthly-report lesson (relevance 0.158, floor margin +0.069) for an autumn poem",
)


FLIGHT_GAP = pytest.mark.xfail(
    strict=True,
    reason="known gap since issue 33 (docs/recall.md, 'The relevance floor'): the default serves a ranking with any "
    "evidence so that no relevant memory is lost; the business-trip memory ('用户下个月要去成都出差，需要提前订酒店', "
    "cosine 0.29, shares 订/去) is evidence for booking a flight. The agent sets it aside; relevance_check silences it",
)


@pytest.mark.parametrize(
    "task", [pytest.param("poem", marks=HARD_UNRELATED_GAP), pytest.param("flight", marks=FLIGHT_GAP)]
)
def test_an_unrelated_task_still_gets_no_block(task: str, make_real_hs: Callable[..., Hindsight]) -> None:
    """The guard beside the floor scenario: serving the longer queries must not come from dropping the floor."""
    hs = _weekly_store(make_real_hs, WEEKLY_REPORT_LESSON)
    user = User(hs, answer("好的。"))
    user.say(UNRELATED[task], thread=task)
    assert not _served(user.block), f"{UNRELATED[task]!r} was given a block:\n{_served(user.block)}"


# ---------------------------------------------------------------------------- 7. the article's conflict chain
PREFERENCES = {
    "zh": ("用户偏好用Java写后端服务。", "用户偏好用Python写后端服务。", "帮我写一个后端服务，用什么语言？"),
    "en": (
        "The user prefers Java for backend services.",
        "The user prefers Python for backend services.",
        "Write me a backend service; which language should it use?",
    ),
}


@pytest.mark.parametrize("locale", list(PREFERENCES))
def test_a_newer_preference_supersedes_the_older(locale: str, make_real_hs: Callable[..., Hindsight]) -> None:
    older_text, newer_text, question = PREFERENCES[locale]
    hs = make_real_hs(locale=locale)
    older = hs.store.add(MemoryUnit(task_type="code_generation", content=older_text)).unit
    newer = hs.store.add(MemoryUnit(task_type="code_generation", content=newer_text)).unit

    problems = []
    ranked = [m.memory.content for m in hs.recall(question)]
    if not ranked or ranked[0] != newer_text:
        problems.append(f"recall ranks {ranked}")
    status = hs.store.get(older.memory_id).status
    if status != "superseded":
        problems.append(f"the older preference is still {status!r}")
    chain = [u.memory_id for u in hs.store.history(older.memory_id)]
    if chain != [newer.memory_id, older.memory_id]:
        problems.append(f"history() of the older one is {len(chain)} long, not [newer, older]")

    user = User(hs, answer("Python." if locale == "en" else "用 Python。"))
    user.say(question, thread="backend")
    served = _served(user.block)
    if newer_text not in served:
        problems.append("the newer preference is not in the block")
    elif older_text in served and served.index(older_text) < served.index(newer_text):
        problems.append("the block shows the older preference first")
    elif older_text in served:
        problems.append("the block still shows the older preference")
    assert not problems, "Java -> Python: " + "; ".join(problems) + f"\n{served}"


# ---------------------------------------------------------------------------- 8. junk
JUNK = ["x", "ok", "好"]


QUERIES = ["汇总金额", "hello", "你好"]


def test_junk_is_refused_or_never_served(make_real_hs: Callable[..., Hindsight]) -> None:
    hs = make_real_hs()
    hs.store.add(_lesson(WEEKLY_REPORT_LESSON))
    stored: dict[str, str] = {}
    for text in JUNK:
        try:
            stored[text] = hs.store.add(MemoryUnit(content=text)).unit.memory_id
        except HindsightError:  # refused at the door with a typed error: fine
            continue
    user = User(hs, answer("好的。"))
    leaks = []
    for query in QUERIES:
        run = user.say(query, thread=f"junk-{query}")
        recalled = {m.memory.memory_id for m in hs.recall(query)}
        served = set(hs.journal.get(run).served_ids)
        leaked = sorted(text for text, memory_id in stored.items() if memory_id in served | recalled)
        if leaked:
            leaks.append(f"{leaked} for {query!r}")
    assert not leaks, f"junk stored ({sorted(stored)}) and served: " + "; ".join(leaks)
