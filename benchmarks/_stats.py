"""Latency summaries shared by the benchmark scripts."""

from __future__ import annotations

import statistics


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(ms: list[float]) -> dict[str, float]:
    """p50, p95 and mean of millisecond timings, rounded, with the sample count."""
    return {
        "p50_ms": round(pct(ms, 0.5), 3),
        "p95_ms": round(pct(ms, 0.95), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "n": len(ms),
    }
