"""The weighted recall score (seed §2.4, §4.4): a pure function, tested factor by factor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langchain_hindsight import ConfigurationError, MemoryUnit, ScoringWeights
from langchain_hindsight.recall.scoring import score_many, score_memory, time_factor

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def unit(**kw: object) -> MemoryUnit:
    kw.setdefault("content", "Weekly report covers Monday to Sunday.")
    kw.setdefault("created_at", NOW)
    kw.setdefault("confidence", 0.7)
    return MemoryUnit(**kw)  # type: ignore[arg-type]


def test_seed_formula_by_hand() -> None:
    u = unit(
        task_type="weekly_report",
        confidence=0.85,
        access_count=3,
        source="agent_inference",
        created_at=NOW - timedelta(days=73),
    )
    s = score_memory(u, 0.8, task_type="weekly_report", now=NOW)
    # (0.5*0.8 + 0.2 + 0.2*0.85 + min(3/10, 0.1) + 0.1*0.5) * max(0.5, 1 - 73/365)
    expected = (0.4 + 0.2 + 0.17 + 0.1 + 0.05) * (1 - 73 / 365)
    assert s.score == pytest.approx(expected)
    assert s.breakdown == pytest.approx(
        {
            "similarity": 0.4,
            "task_type": 0.2,
            "confidence": 0.17,
            "access": 0.1,
            "source": 0.05,
            "time_factor": 0.8,
            "score": expected,
        }
    )
    assert s.similarity == 0.8


def test_task_type_bonus_only_on_exact_match() -> None:
    u = unit(task_type="monthly_report")
    assert score_memory(u, 0.5, task_type="weekly_report", now=NOW).breakdown["task_type"] == 0.0
    assert score_memory(u, 0.5, task_type=None, now=NOW).breakdown["task_type"] == 0.0
    assert score_memory(u, 0.5, task_type="monthly_report", now=NOW).breakdown["task_type"] == 0.2


def test_time_factor_decays_linearly_then_floors() -> None:
    assert time_factor(NOW, NOW) == 1.0
    # days at timestamp resolution (issue 20): 181 days 23 hours is 181.96 days, not 181
    assert time_factor(NOW - timedelta(days=181, hours=23), NOW) == pytest.approx(1 - (181 + 23 / 24) / 365)
    assert time_factor(NOW - timedelta(days=200), NOW) == 0.5
    assert time_factor(NOW - timedelta(days=3000), NOW) == 0.5
    assert time_factor(NOW + timedelta(days=5), NOW) == 1.0  # future timestamps do not boost


def test_the_newer_of_two_same_day_memories_ranks_first() -> None:
    # issue 20: with whole days the two tied and the older could win by id; the formula is otherwise unchanged
    morning = unit(memory_id="mem_a_morning", created_at=NOW - timedelta(hours=9))
    evening = unit(memory_id="mem_z_evening", created_at=NOW - timedelta(hours=1))
    assert time_factor(evening.created_at, NOW) > time_factor(morning.created_at, NOW)
    assert time_factor(morning.created_at, NOW) == pytest.approx(1 - (9 / 24) / 365)
    assert score_memory(evening, 0.6, now=NOW).score > score_memory(morning, 0.6, now=NOW).score
    table = score_many([morning, evening], [0.6, 0.6], now=NOW)
    assert table.score[1] > table.score[0]
    # a minute apart still orders them; the floor and the horizon are as before
    a, b = NOW - timedelta(minutes=2), NOW - timedelta(minutes=1)
    assert time_factor(b, NOW) > time_factor(a, NOW)
    assert time_factor(NOW - timedelta(days=365, seconds=1), NOW) == 0.5


def test_time_decay_changes_order_as_the_formula_says() -> None:
    fresh = unit(memory_id="fresh", created_at=NOW - timedelta(days=1))
    old = unit(memory_id="old", created_at=NOW - timedelta(days=300))
    # Same everything else: the old one only wins with enough extra similarity.
    assert score_memory(fresh, 0.6, now=NOW).score > score_memory(old, 0.6, now=NOW).score
    assert score_memory(old, 1.0, now=NOW).score < score_memory(fresh, 0.6, now=NOW).score


def test_confidence_changes_order() -> None:
    low = unit(memory_id="low", confidence=0.3)
    high = unit(memory_id="high", confidence=0.9)
    assert score_memory(high, 0.5, now=NOW).score - score_memory(low, 0.5, now=NOW).score == pytest.approx(0.12)


def test_access_heat_is_capped() -> None:
    assert score_memory(unit(access_count=0), 0.5, now=NOW).breakdown["access"] == 0.0
    assert score_memory(unit(access_count=50), 0.5, now=NOW).breakdown["access"] == 0.1
    w = ScoringWeights(access_scale=100)
    assert score_memory(unit(access_count=5), 0.5, now=NOW, weights=w).breakdown["access"] == pytest.approx(0.05)


def test_source_ranks_user_feedback_over_inference_over_tool_output() -> None:
    scores = {
        src: score_memory(unit(source=src, confidence=0.7), 0.5, now=NOW).score
        for src in ("user_feedback", "agent_inference", "tool_output")
    }
    assert scores["user_feedback"] > scores["agent_inference"] > scores["tool_output"]
    flat = ScoringWeights(source=0.0)
    assert len({score_memory(unit(source=s), 0.5, now=NOW, weights=flat).score for s in scores}) == 1


def test_extra_diagnostics_do_not_change_score() -> None:
    u = unit()
    plain = score_memory(u, 0.5, now=NOW)
    extra = score_memory(u, 0.5, now=NOW, extra={"dense": 0.41, "lexical": 3.2, "score": 99.0})
    assert extra.score == plain.score
    assert extra.breakdown["dense"] == 0.41
    assert extra.breakdown["score"] == plain.score


def test_bad_weights_and_naive_clock_are_rejected() -> None:
    with pytest.raises(ConfigurationError):
        ScoringWeights(similarity=-0.1)
    with pytest.raises(ConfigurationError):
        ScoringWeights(time_floor=1.5)
    with pytest.raises(ConfigurationError):
        ScoringWeights(access_scale=0)
    with pytest.raises(ConfigurationError):
        ScoringWeights(source_prior={"user_feedback": 2.0})
    with pytest.raises(ConfigurationError):
        score_memory(unit(), 0.5, now=datetime(2026, 1, 1))


@given(
    sim=st.floats(min_value=-5, max_value=5, allow_nan=False),
    conf=st.floats(min_value=0, max_value=1),
    access=st.integers(min_value=0, max_value=10_000),
    days=st.integers(min_value=0, max_value=5000),
)
def test_score_is_bounded_and_breakdown_sums(sim: float, conf: float, access: int, days: int) -> None:
    u = unit(confidence=conf, access_count=access, created_at=NOW - timedelta(days=days))
    s = score_memory(u, sim, task_type="general", now=NOW)
    terms = sum(s.breakdown[k] for k in ("similarity", "task_type", "confidence", "access", "source"))
    assert s.score == pytest.approx(terms * s.breakdown["time_factor"])
    assert 0.0 <= s.score <= 0.5 + 0.2 + 0.2 + 0.1 + 0.1
    assert 0.0 <= s.similarity <= 1.0


# ---------------------------------------------------------------- score_many (recall scores all candidates at once)
SOURCES = ["user_feedback", "manual", "rule", "agent_inference", "review", "tool_output"]
TYPES = ["weekly_report", "data_cleaning", "general"]


@given(
    rows=st.lists(
        st.tuples(
            st.floats(allow_nan=True, allow_infinity=True, width=64),
            st.floats(min_value=0, max_value=1),
            st.integers(min_value=0, max_value=10_000),
            st.integers(min_value=-10 * 86_400, max_value=5000 * 86_400),
            st.sampled_from(SOURCES),
            st.sampled_from(TYPES),
        ),
        min_size=1,
        max_size=12,
    ),
    wanted=st.sampled_from([None, *TYPES]),
)
def test_score_many_equals_score_memory_to_the_last_bit(
    rows: list[tuple[float, float, int, int, str, str]], wanted: str | None
) -> None:
    weights = ScoringWeights(task_type=0.3, source=0.15, time_horizon_days=200.0)
    units = [
        unit(
            memory_id=f"m{j}",
            confidence=conf,
            access_count=access,
            created_at=NOW - timedelta(seconds=age),
            source=source,
            task_type=task,
        )
        for j, (_, conf, access, age, source, task) in enumerate(rows)
    ]
    sims = [r[0] for r in rows]
    table = score_many(units, sims, task_type=wanted, now=NOW, weights=weights)
    for j, (u, sim) in enumerate(zip(units, sims, strict=True)):
        one = score_memory(u, sim, task_type=wanted, now=NOW, weights=weights, extra={"dense": 0.25})
        got = table.scored(j, extra={"dense": 0.25}, query_task_type=wanted)
        assert got.score == one.score
        assert got.similarity == one.similarity
        assert got.breakdown == one.breakdown
        assert list(got.breakdown) == list(one.breakdown)  # same keys, same order
        assert got.memory is u
        assert got.query_task_type == wanted


def test_score_many_orders_like_the_formula_and_checks_its_input() -> None:
    old = unit(memory_id="old", created_at=NOW - timedelta(days=300))
    fresh = unit(memory_id="fresh", created_at=NOW - timedelta(days=1), task_type="weekly_report")
    table = score_many([old, fresh], [0.6, 0.6], task_type="weekly_report", now=NOW)
    assert table.score[1] > table.score[0]
    assert table.terms["task_type"].tolist() == [0.0, 0.2]
    assert score_many([], [], now=NOW).score.shape == (0,)
    with pytest.raises(ConfigurationError):
        score_many([old], [0.5, 0.6], now=NOW)
    with pytest.raises(ConfigurationError):
        score_many([old], [0.5], now=datetime(2026, 1, 1))
