"""HindsightRetriever: hybrid recall, the seed's weighted score, exclusions, diagnostics, served ids."""

from __future__ import annotations

import pytest

from langchain_hindsight import ConfigurationError
from langchain_hindsight.recall.fusion import fuse


# ---------------------------------------------------------------- fusion helper
def test_fuse_methods() -> None:
    dense = {"a": 0.9, "b": 0.2}
    assert fuse(dense, {"b": 0.8}, method="convex_idf", alpha=0.3) == pytest.approx({"a": 0.27, "b": 0.62})
    assert fuse(dense, {"b": 4.0}, method="convex", alpha=0.5) == pytest.approx({"a": 0.45, "b": 0.6})
    rrf = fuse(dense, {"b": 4.0}, method="rrf")
    assert rrf["b"] == pytest.approx(((1 / 62) + (1 / 61)) / (2 / 61))
    assert fuse(dense, {}, method="lexical") == {"a": 0.0, "b": 0.0}
    with pytest.raises(ConfigurationError):
        fuse(dense, {}, method="nope")  # type: ignore[arg-type]
