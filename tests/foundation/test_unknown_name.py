"""UnknownNameError names the known alternatives with a correct plural for its kind."""
from __future__ import annotations

import pytest

from gbstats.errors import UnknownNameError, plural
from studies.discovery import find_study


@pytest.mark.parametrize("kind, expected", [
    ("study", "studies"),                          # consonant + y
    ("nan_policy", "nan_policies"),
    ("bos option", "bos options"),                 # the last word takes the ending
    ("masked-LM model", "masked-LM models"),
    ("kind of model score", "kinds of model score"),  # ... unless "of" follows the head noun
    ("forced-choice span", "forced-choice spans"),
    ("alias", "aliases"),                          # s, x, ch, sh take -es
    ("day", "days"),                               # vowel + y keeps the y
])
def test_plural_of_each_kind(kind, expected):
    assert plural(kind) == expected


def test_unknown_study_lists_known_studies():
    with pytest.raises(UnknownNameError) as caught:
        find_study("singular_thye")
    message = str(caught.value)
    assert "Known studies: " in message and "studys" not in message
    assert "Did you mean 'singular_they'?" in message
