"""The statsmodels backend gives lme4's answer or refuses, on a suite of designs (issue 24,
defect 1).

statsmodels' L-BFGS "converged" on `y ~ close + (1|subject)` to an intercept of 0 with SE
NaN and log-likelihood +inf, and gbstats returned that fit with a warning. The backend now
accepts a fit only when its log-likelihood, fixed effects, SEs and variance components are
finite and the fixed effects' covariance is positive definite, and otherwise tries the
next optimizer.

References: tests/reference/statsmodels_designs.json, written by
`Rscript tests/reference/statsmodels_designs.R` (lme4::lmer, REML; the R script also
writes the seeded between_subject.csv and nested.csv). Both engines maximise the same REML
criterion, so a fit must agree within 1e-3: estimates relative, with a floor of 1e-3 SE for
estimates near 0; SEs and variance components relative (variances with a floor of 1e-3 of
the residual variance, for components at the boundary); the REML log-likelihood to 1e-3
absolute. A design lme4 itself fits as singular may instead be refused, with a gbstats error.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import GbstatsError
from gbstats.mixed.lmm import fit_lmm

REF_DIR = Path(__file__).resolve().parents[1] / "reference"
DESIGNS = json.loads((REF_DIR / "statsmodels_designs.json").read_text())["designs"]
TOL = 1e-3


def fit_design(name: str):
    spec = DESIGNS[name]
    data = pd.read_csv(REF_DIR / spec["data"])
    contrasts = {column: "sum" for column in spec["sum"]}
    return fit_lmm(spec["formula"], data, backend="statsmodels", contrasts=contrasts or None)


def test_the_suite_covers_the_designs_the_issue_names():
    assert len(DESIGNS) >= 8
    whys = " ".join(spec["why"] for spec in DESIGNS.values())
    for kind in ("crossed", "nested", "between-subject", "sum", "treatment", "0/1 response",
                 "issue 24"):
        assert kind in whys, kind


@pytest.mark.parametrize("name", [n for n, s in DESIGNS.items() if s["statsmodels"] == "fit"])
def test_statsmodels_matches_lme4_or_refuses(name):
    spec = DESIGNS[name]
    try:
        result = fit_design(name)
    except GbstatsError as exc:
        # refusing is allowed only where lme4 itself lands on the boundary
        assert spec["is_singular"], f"{name}: refused a design lme4 fits regularly: {exc}"
        assert "backend='lme4'" in str(exc) and len(str(exc)) < 5000
        return
    want = pd.DataFrame(spec["fixed"])
    got = result.coefs
    assert list(got["term"]) == list(want["term"])
    est_gap = np.abs(got["estimate"].to_numpy() - want["estimate"].to_numpy())
    assert np.all(est_gap <= TOL * np.abs(want["estimate"]) + TOL * want["se"]), \
        pd.DataFrame({"term": want["term"], "got": got["estimate"], "lme4": want["estimate"]})
    np.testing.assert_allclose(got["se"], want["se"], rtol=TOL, err_msg=f"{name}: SE")
    ref_var = pd.DataFrame(spec["varcor"])
    assert list(result.ranef_var["term"]) == list(ref_var["term"])
    residual = float(ref_var.loc[ref_var["group"] == "Residual", "variance"].iloc[0])
    np.testing.assert_allclose(result.ranef_var["variance"], ref_var["variance"], rtol=TOL,
                               atol=TOL * residual, err_msg=f"{name}: variance components")
    assert abs(result.fit_stats["loglik"] - spec["loglik"]) <= TOL, name
    assert result.fit_stats["nobs"] == spec["nobs"]


@pytest.mark.parametrize("name", [n for n, s in DESIGNS.items() if s["statsmodels"] == "refuse"])
def test_statsmodels_refuses_two_grouping_factors(name):
    with pytest.raises(GbstatsError, match=r"one grouping factor.*backend='lme4'"):
        fit_design(name)


def test_the_issues_factorial_fit_says_which_optimizer_was_rejected():
    """lbfgs's garbage is not returned; the fit that is returned says that lbfgs was tried
    and why it was set aside."""
    result = fit_design("issue_factorial")
    assert np.isfinite(result.coefs["se"]).all() and np.isfinite(result.fit_stats["loglik"])
    rejected = [w for w in result.warnings if "optimizer lbfgs" in w]
    assert rejected and "tried the next" in rejected[0]


# --------------------------------------------------------------------------
# defect 10: a failed fit's error lists each warning once, with its count

def overflowing_data() -> pd.DataFrame:
    """A response of scale 1e200: every optimizer overflows, thousands of times."""
    rng = np.random.default_rng(1)
    data = pd.DataFrame({"g": np.repeat(list("abcdef"), 10), "x": rng.normal(size=60)})
    return data.assign(y=rng.normal(size=60) * 1e200)


def test_a_failed_fit_counts_repeated_warnings_instead_of_repeating_them():
    from gbstats.mixed.engines.statsmodels import StatsmodelsFitFailed

    with pytest.raises(StatsmodelsFitFailed) as caught:
        fit_lmm("y ~ x + (1|g)", overflowing_data(), backend="statsmodels")
    message = str(caught.value)
    # the issue's message was 460 KB: the same overflow warning concatenated ~2,000 times
    assert len(message) < 2000 and "\n" not in message
    assert message.count("overflow encountered in dot") == 1
    assert re.search(r"overflow encountered in dot \(\d{3,} times\)", message)
    for method in ("lbfgs", "bfgs", "nm"):
        assert f"optimizer {method} " in message
    assert "'y ~ x + (1|g)'" in message and "backend='lme4'" in message


def test_tally_keeps_first_seen_order_and_counts_only_repeats():
    from gbstats.mixed.engines.statsmodels import summarize, tally_messages

    messages = ["b", "a", "b", "b", "c"]
    assert tally_messages(messages) == ["b", "a", "c"]
    assert tally_messages(messages, counted=True) == ["b (3 times)", "a", "c"]
    long = [f"warning {i} " + "x" * 1000 for i in range(20)]
    text = summarize(long)
    assert text.endswith("; and 12 more") and len(text) < 8 * 310 + 20
