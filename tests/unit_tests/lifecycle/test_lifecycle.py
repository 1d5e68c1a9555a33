"""Lifecycle: decay, archive, merge pass, periodic review, usage report — all with an injected clock."""

from __future__ import annotations

import pytest

from langchain_hindsight.errors import ConfigurationError
from langchain_hindsight.lifecycle.policy import LifecyclePolicy


# ----------------------------------------------------------------------------- policy
def test_policy_validates_its_numbers() -> None:
    with pytest.raises(ConfigurationError, match="decay_factor"):
        LifecyclePolicy(decay_factor=1.5)
    with pytest.raises(ConfigurationError, match="merge_threshold"):
        LifecyclePolicy(merge_threshold=0)
    with pytest.raises(ConfigurationError, match="review_min_runs"):
        LifecyclePolicy(review_min_runs=0)
