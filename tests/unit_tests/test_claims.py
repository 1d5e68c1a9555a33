"""What a statement says and how two statements relate (``langchain_hindsight._claims``).

The labelled pairs live in ``tests/unit_tests/data/claim_pairs_{tuning,heldout,heldout_c}.jsonl``: the rule
was designed on the tuning split; the first held-out split was written before the rule was run on it (its
misses were later reported and fixed, so it is no longer blind); split C was written before the frames and
the lexicon were added and scored once, after them, never tuned on. ``contradicts`` must be precise on all
three (a wrong one demotes a good memory).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from langchain_hindsight._claims import Claim, claim_of, relation, relation_of
from langchain_hindsight._statements import statement
from langchain_hindsight.prompts import REFLECTION_EN, REFLECTION_ZH

DATA = Path(__file__).parent / "data"
RELATIONS = ("same", "contradicts", "compatible", "unrelated")
HARD_SLICES = frozenset({"template", "entity", "field", "number", "scoped", "restatement", "literal"})


def load(split: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / f"claim_pairs_{split}.jsonl").read_text("utf-8").splitlines()]


def confusion(rows: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    return Counter((r["relation"], relation(r["a"], r["b"])) for r in rows)


SPLITS = ("tuning", "heldout", "heldout_c")


def test_the_labelled_sets_are_big_and_hard_enough() -> None:
    rows = load("tuning") + load("heldout") + load("heldout_c")
    assert len(rows) >= 250
    assert len({r["id"] for r in rows}) == len(rows)
    assert {r["relation"] for r in rows} == set(RELATIONS)
    assert {r["lang"] for r in rows} == {"zh", "en", "mixed"}
    hard = [r for r in rows if r["relation"] != "contradicts" and r["slice"] in HARD_SLICES]
    assert len(hard) / len(rows) >= 0.4
    c = load("heldout_c")
    assert len(c) >= 60
    assert {r["lang"] for r in c} == {"zh", "en", "mixed"}
    assert sum(r["relation"] != "contradicts" and r["slice"] in HARD_SLICES for r in c) / len(c) >= 0.4


@pytest.mark.parametrize("split", SPLITS)
def test_relation_is_symmetric(split: str) -> None:
    for r in load(split):
        assert relation(r["a"], r["b"]) == relation(r["b"], r["a"]), r["id"]


@pytest.mark.parametrize(
    ("split", "precision", "recall", "safe"),
    [
        # measured: tuning 59/59 contradicts correct, recall 59/60; held-out 30/30, recall 30/30;
        # held-out C, scored blind once: 23/24 correct (one wrong: 调用…接口 read 用 as "use"), recall 23/24;
        # after that family was fixed on new tuning pairs (t142–t144): 23/23, recall 23/24 (no longer blind)
        ("tuning", 1.0, 0.98, 1.0),
        ("heldout", 1.0, 1.0, 1.0),
        ("heldout_c", 1.0, 0.95, 1.0),
    ],
)
def test_contradicts_is_precise(split: str, precision: float, recall: float, safe: float) -> None:
    c = confusion(load(split))
    predicted = sum(c[(g, "contradicts")] for g in RELATIONS)
    gold = sum(c[("contradicts", p)] for p in (*RELATIONS, "unsure"))
    hit = c[("contradicts", "contradicts")]
    assert hit / predicted >= precision
    assert hit / gold >= recall
    # no pair the rules call "same" is anything else (a wrong "same" merges two lessons)
    assert sum(c[(g, "same")] for g in RELATIONS if g != "same") == 0
    # of the pairs that must get no note, this share gets none
    others = [(g, p) for (g, p), n in c.items() for _ in range(n) if g != "contradicts"]
    assert sum(p != "contradicts" for _g, p in others) / len(others) >= safe


@pytest.mark.parametrize(
    ("lang", "recall"),
    # measured recall of contradicts per language, all three splits: zh 52/52, en 46/46, mixed 14/16
    [("zh", 1.0), ("en", 1.0), ("mixed", 0.85)],
)
def test_recall_per_language(lang: str, recall: float) -> None:
    rows = [r for split in SPLITS for r in load(split) if r["lang"] == lang and r["relation"] == "contradicts"]
    assert sum(relation(r["a"], r["b"]) == "contradicts" for r in rows) / len(rows) >= recall


@pytest.mark.parametrize(
    ("split", "minimum"),
    # measured accuracy per relation (exact label) on the pairs the floors were set on (tuning t000–t107, the
    # first held-out split): tuning same 11/11, compatible 22/24, unrelated 27/33; held-out same 8/8,
    # compatible 15/16, unrelated 24/27. The later tuning pairs are hard negatives for the frames: the
    # precision test holds them to "no contradicts", and compatible/unrelated/unsure all keep both memories.
    [
        ("tuning", {"same": 1.0, "compatible": 0.9, "unrelated": 0.75}),
        ("heldout", {"same": 1.0, "compatible": 0.9, "unrelated": 0.85}),
    ],
)
def test_accuracy_per_relation(split: str, minimum: dict[str, float]) -> None:
    c = confusion([r for r in load(split) if split != "tuning" or r["id"] < "t108"])
    for gold, floor in minimum.items():
        total = sum(c[(gold, p)] for p in (*RELATIONS, "unsure"))
        assert c[(gold, gold)] / total >= floor, (gold, c[(gold, gold)], total)


# ---------------------------------------------------------------- the cases of issue 20
CORRECTION = REFLECTION_ZH.rule_user_feedback


def test_three_corrections_on_different_points_are_unrelated() -> None:
    task = "生成本周的销售周报"
    texts = ["周报只统计本周一到周日", "金额要用含税价", "周报要发给张经理而不是李经理"]
    made = [CORRECTION.format(task=task, text=t) for t in texts]
    for i in range(3):
        for j in range(i + 1, 3):
            assert relation(made[i], made[j]) == "unrelated"
    en = [
        REFLECTION_EN.rule_user_feedback.format(task="weekly sales report", text=t)
        for t in ("only count Monday to Sunday", "amounts must include tax", "send it to Zhang, not Li")
    ]
    assert relation(en[0], en[1]) == relation(en[1], en[2]) == relation(en[0], en[2]) == "unrelated"


def test_a_correction_contradicts_the_lesson_it_corrects() -> None:
    correction = CORRECTION.format(task="生成本周的销售周报", text="周报只统计本周一到周日的数据")
    assert relation("周报按最近7天滚动窗口统计销售额。", correction) == "contradicts"
    assert (
        relation("周报要发给李经理。", CORRECTION.format(task="周报", text="周报要发给张经理而不是李经理"))
        == "contradicts"
    )
    assert relation("weekly report covers the last 7 days", "the weekly report covers Monday to Sunday only") == (
        "contradicts"
    )
    # but not the served lessons on other points
    assert relation("金额用含税价。", correction) == "unrelated"
    assert relation("周报发给张经理。", correction) == "unrelated"


def test_a_raw_correction_turn_compares_like_the_stored_correction() -> None:
    lesson = "周报按最近7天滚动窗口统计销售额。"
    for turn in ("不对，周报只统计本周一到周日的数据", "错了，周报只统计本周一到周日的数据"):
        assert relation(lesson, turn) == "contradicts"
    assert relation(lesson, "不对，金额要用含税价") == "unrelated"
    assert relation("The weekly report covers the last 7 days.", "No, it covers Monday to Sunday only.") != "same"
    assert statement("Actually, amounts must include tax.") == "amounts must include tax."


def test_lessons_that_differ_only_in_the_run_are_the_same() -> None:
    lesson = REFLECTION_ZH.rule_error_fix
    made = [
        lesson.format(
            tool="read_csv",
            failed="encoding='utf-8'",
            error="UnicodeDecodeError: 'utf-8' codec can't decode byte 0xef in position 0",
            fixed="encoding='utf-8-sig'",
            task=f"统计 data/2026/{name}.csv 的销售额",
        )
        for name in ("a", "b", "store_3", "w48/east", "最后一个")
    ]
    assert {relation(made[0], m) for m in made[1:]} == {"same"}
    gbk = lesson.format(
        tool="read_csv",
        failed="encoding='utf-8'",
        error="UnicodeDecodeError: 'utf-8' codec can't decode byte 0xd5",
        fixed="encoding='gbk'",
        task="统计 c.csv",
    )
    assert relation(made[0], gbk) == "contradicts"  # the same case, another fix
    sep = lesson.format(tool="read_csv", failed="sep=','", error="ParserError", fixed="sep=';'", task="x")
    assert relation(made[0], sep) == "compatible"  # the same tool, another parameter


def test_statement_strips_only_our_templates() -> None:
    assert statement(CORRECTION.format(task="生成本周的销售周报", text="金额要用含税价")) == "金额要用含税价"
    assert statement(REFLECTION_ZH.rule_user_feedback_no_task.format(text="金额要用含税价")) == "金额要用含税价"
    assert statement(REFLECTION_EN.rule_user_feedback.format(task="t", text="use gbk")) == "use gbk"
    assert statement("用户说：金额要用含税价") == "用户说：金额要用含税价"  # not ours: kept whole
    lesson = REFLECTION_EN.rule_error_fix.format(
        tool="read_csv", failed="sep=','", error="E", fixed="sep=';'", task="t"
    )
    assert "task" not in statement(lesson)
    assert claim_of(lesson).template == "rule_error_fix"


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("用户偏好用Java写后端服务。", "用户偏好用Python写后端服务。", "contradicts"),
        ("The user prefers Java for backend services.", "The user prefers Python for backend services.", "contradicts"),
        ("Alice prefers Java for backend services.", "Bob prefers Python for backend services.", "unrelated"),
        ("数据少于1万行时用pandas处理。", "数据超过1万行时用duckdb处理。", "compatible"),
        ("读取ERP导出的CSV要用gbk编码。", "读取ERP导出的CSV要用gbk编码，分隔符是分号。", "compatible"),
        ("周报发给项目经理。", "周报要发给项目经理", "same"),
        ("Deploy on Fridays after the standup.", "Never deploy on Fridays.", "contradicts"),
        # across languages: the lexicon aligns the frame, the typed values differ
        ("用户偏好用Java写后端服务。", "The user prefers Python for backend services.", "contradicts"),
        ("库存报表每天早上8点生成。", "Generate the inventory report at 6pm every day.", "contradicts"),
        ("Alice prefers Java for backend services.", "用户偏好用Python写后端服务。", "unsure"),  # another subject
        ("周报发给李经理。", "The weekly report covers Monday to Sunday.", "unsure"),  # another aspect
        ("用户偏好用Python写后端服务。", "The user prefers Python for backend services.", "unsure"),  # never "same"
        # natural corrections in other words than the lesson
        (
            "The weekly sales report uses a rolling 7-day window.",
            "No, the weekly report only covers Monday to Sunday",
            "contradicts",
        ),
        ("Keep logs for 30 days.", "Keep logs for 90 days.", "contradicts"),
        (
            "Always include the PO number in the email subject.",
            "Never put the PO number in the email subject.",
            "contradicts",
        ),
        ("请求头里要带上X-Api-Key。", "不要在请求头里带X-Api-Key。", "contradicts"),
        ("库存报表每天早上8点生成。", "库存报表每天晚上10点生成。", "contradicts"),
        # other values, but for other cases on both sides: not a contradiction
        ("用户偏好用Python做数据分析。", "用户偏好用Java写后端服务。", "unsure"),
        ("The user prefers dark mode in the editor.", "The user prefers light mode in the terminal.", "unsure"),
        # but a split and a window are other aspects of the same report, and a region scopes the advice
        ("周报按门店拆分销售额。", "周报按最近7天滚动窗口统计销售额。", "unsure"),
        (
            "The weekly report for the east region uses a rolling 7-day window.",
            "The weekly report covers Monday to Sunday.",
            "unrelated",
        ),
        ("", "周报发给项目经理。", "unsure"),
    ],
)
def test_examples(a: str, b: str, expected: str) -> None:
    assert relation(a, b) == expected
    assert relation_of(Claim(a), Claim(b)) == expected


def test_claims_are_cached_and_cheap() -> None:
    assert claim_of("周报发给项目经理。") is claim_of("周报发给项目经理。")
    import time

    rows = load("tuning")
    start = time.perf_counter()
    for r in rows:
        relation_of(Claim(r["a"]), Claim(r["b"]))
    # measured 0.3 ms a pair uncached on an idle core, 0.65-0.8 ms with 5 jobs on 2 cores; the write path
    # wants under ~1 ms (the bound leaves room for a loaded CI machine)
    assert (time.perf_counter() - start) / len(rows) < 0.005


def test_the_scenario_corrections_in_english() -> None:
    # the turns of tests/unit_tests/session/test_judgement_scenarios.py: the correction supersedes the rolling lesson
    rolling = "The weekly sales report uses a rolling 7-day window."
    turn = "No, the weekly report only covers Monday to Sunday of this week"
    stored = REFLECTION_EN.rule_user_feedback.format(task="Write this week's sales report", text=statement(turn))
    assert relation(rolling, turn) == relation(rolling, stored) == "contradicts"
    assert relation("For the weekly sales report, use a rolling window of the last 7 days.", turn) == "contradicts"
    # and three corrections on different points never contradict each other
    points = [turn, "No, amounts must include tax", "Wrong, the report goes to Manager Zhang, not Manager Li"]
    made = [REFLECTION_EN.rule_user_feedback.format(task="Write this week's sales report", text=p) for p in points]
    for texts in (points, made):
        for i in range(3):
            for j in range(i + 1, 3):
                assert relation(texts[i], texts[j]) != "contradicts", (texts[i], texts[j])
