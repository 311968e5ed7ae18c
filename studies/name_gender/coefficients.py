"""One name for each coefficient, in results.json and the report (issue 40, item 9).

R names a centred Helmert contrast of Condition by its number ("Condition1"), the authors'
fixed coding by its column ("Conditionlast vs first/full"); both compare the same levels,
and the report's model tables already show both as "last vs first/full"
(`presentation.shown_fit`). results.json's model tables keep R's term (what a reader
checks against lme4) and add `coefficient`, the name the report uses, so one coefficient
has one name wherever it is read.
"""
from __future__ import annotations


def coefficient_names(fit) -> dict[str, str]:
    """{R term: the report's name of that coefficient} for one fit."""
    from studies.name_gender.presentation import shown_fit

    return dict(zip(fit.coefs["term"], shown_fit(fit).coefs["term"]))
