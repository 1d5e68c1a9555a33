"""The screen's literal gate on every form of every corpus text (the unit tier checks the attacks' forms)."""

from __future__ import annotations

import pytest

from tests.unit_tests.test_screen_gate import _assert_same, corpus


@pytest.mark.slow
def test_every_form_of_the_corpus_is_searched_alike() -> None:
    for text in corpus():
        _assert_same(text)
