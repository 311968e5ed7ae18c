"""The design check across the two sides of a comparison (issue 40): a grouping factor one
side models, whose counterpart the other side's data hold, left out of the other side's
formula. The designs are built so that the answer is a fact of the construction."""
from __future__ import annotations

import pandas as pd
import pytest

from gbstats.errors import DataValidationError
from gbstats.mixed.design import DESIGN_CHECK_PREFIX, grouping_parity


def sides(model_random: str, people_random: str, people_has_story: bool = True) -> dict:
    model = pd.DataFrame({"frame": [f"s{i % 7}" for i in range(42)],
                          "first_name": [f"n{i % 21}" for i in range(42)],
                          "cond": ["a", "b"] * 21, "y": range(42)})
    people = pd.DataFrame({"FirstName": [f"n{i % 21}" for i in range(84)],
                           "cond": ["a", "b"] * 42, "She": [0, 1] * 42})
    if people_has_story:
        people["Story"] = [f"s{i % 7}" for i in range(84)]
    return {"model": (f"y ~ cond + {model_random}", model),
            "people": (f"She ~ cond + {people_random}", people)}


COUNTERPARTS = [("frame", "Story"), ("first_name", "FirstName")]


def test_a_story_one_side_models_and_the_other_leaves_out_is_named():
    out = grouping_parity(sides("(1 | frame) + (1 | first_name)", "(1 | FirstName)"),
                          COUNTERPARTS)
    assert len(out) == 1 and out[0].startswith(DESIGN_CHECK_PREFIX)
    assert "model side's formula has a random effect for frame" in out[0]
    assert "(Story, 7 levels)" in out[0] and "add (1 | Story) to the people side" in out[0]


def test_quiet_when_both_sides_model_it_or_the_data_lack_it():
    assert grouping_parity(sides("(1 | frame) + (1 | first_name)",
                                 "(1 | FirstName) + (1 | Story)"), COUNTERPARTS) == []
    assert grouping_parity(sides("(1 | frame) + (1 | first_name)", "(1 | FirstName)",
                                 people_has_story=False), COUNTERPARTS) == []


def test_the_other_direction_too():
    out = grouping_parity(sides("(1 | frame)", "(1 | FirstName) + (1 | Story)"),
                          COUNTERPARTS)
    assert len(out) == 1 and "people side's formula has a random effect for FirstName" in out[0]
    assert "add (1 | first_name) to the model side" in out[0]


def test_three_sides_is_an_error():
    three = {**sides("(1 | frame)", "(1 | Story)"), "third": ("y ~ 1", pd.DataFrame())}
    with pytest.raises(DataValidationError, match="two sides"):
        grouping_parity(three, COUNTERPARTS)
