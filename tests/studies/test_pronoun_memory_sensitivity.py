"""pronoun_memory's sensitivity refits (issue 40, item 5) against lme4 in R.

tests/reference/pronoun_memory_sensitivity.R builds the rows and codings as the authors'
R does and fits the same glmer models with bobyqa: Exp 2's three main models with a
participant intercept added, and Exp 1B's failed by-participant model. The issue quotes
two of R's numbers: Biographies on memory p = .021 -> about .16, PSA x Biographies on
production p = .019 -> about .10.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from studies.pronoun_memory import sensitivity as S

REFS = json.loads((Path(__file__).resolve().parents[1] / "reference"
                   / "pronoun_memory_sensitivity_refs.json").read_text())


@pytest.fixture(scope="module")
def tables(data_dir):
    from gbstats.data.registry import load_dataset

    return load_dataset("gardner2023", data_dir).tables


def test_the_issue_quotes_these_r_numbers():
    memory = REFS["exp2_m_memory_participant"]
    production = REFS["exp2_m_prod_participant"]
    p_memory = dict(zip(memory["terms"], memory["p"]))
    p_production = dict(zip(production["terms"], production["p"]))
    assert round(p_memory["Biographies_They"], 2) == 0.16
    assert round(p_production["PSA_GenLang:Biographies_They"], 2) == 0.10
    assert all(not REFS[k]["messages"] for k in REFS if k != "versions")   # all converged


@pytest.mark.needs_r
@pytest.mark.slow
def test_refits_equal_lme4(tables):
    from gbstats.mixed.clean_process import clean_fits

    # The study's own call, in the clean R server as the study makes it (studies/pipeline.py
    # fits inside clean_fits()), through the session's fit cache: the pronoun_memory baseline run
    # (tests/studies/test_study_baselines.py) makes these very fits, whose key covers the
    # data, formula, options, gbstats' source and the R packages, so whichever of the two
    # runs first fits them and the other reads that result; both check the same numbers
    # (issue 41: each fitted them again, 31 s of a make test).
    with clean_fits():
        fits = S.fit_sensitivities(tables)
    assert set(fits) == {s.key for s in S.SENSITIVITIES}
    for key, fit in fits.items():
        ref = REFS[key]
        got = fit.coefs.set_index("term").loc[ref["terms"]]
        np.testing.assert_allclose(got["estimate"], ref["estimate"], rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(got["se"], ref["se"], rtol=1e-2, atol=1e-4)
        np.testing.assert_allclose(np.log(got["p_value"].clip(lower=1e-300)),
                                   np.log(np.clip(ref["p"], 1e-300, None)), rtol=2e-2,
                                   atol=2e-2)
        assert fit.fit_stats["nobs"] == ref["nobs"]


def test_the_table_states_the_n_of_each_refit():
    """Issue 43: every table states N; here each refit's responses (lme4's nobs, checked
    against R above), once per refit though the table has a row per term."""
    import pandas as pd

    table = pd.DataFrame({"change": [S.SENSITIVITIES[0].change] * 3
                          + [S.SENSITIVITIES[3].change] * 2,
                          "n_obs": [3840, 3840, 3840, 1234, 1234]})
    assert S.n_sentence(table) == ("N: Exp 2, memory, 3,840 responses; Exp 1B, production by "
                                   "memory, by-participant check, 1,234 responses.")
