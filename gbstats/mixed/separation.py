"""Separation in binomial (G)LMMs: find it before fitting, spot it after.

A logistic model's fixed effects are *separated* when some combination of
the design columns predicts every 0/1 response on one side of zero: for
example a cell of the design in which every answer is correct. The maximum
likelihood estimate of that combination is then infinite. glmer does not
say so: it stops at a large estimate with a larger SE, and the estimate, SE,
CI and p then depend on where the optimizer happened to stop (issue 25: the
pronoun_fidelity GLMM).

Before fitting (`separated_terms`): the linear program of Konis (2007,
"Linear programming algorithms for detecting separated data in binary
logistic regression models", DPhil thesis, Oxford; the method of R's
`detectseparation` package). With s_i = +1 for y_i = 1 and -1 for y_i = 0,
the data are (quasi-completely) separated exactly when some beta != 0 has
s_i x_i' beta >= 0 for every row i with at least one strict inequality; the
program maximises sum_i s_i x_i' beta under those constraints with beta in
[-1, 1]^p. A positive optimum is a separating direction, and the columns with
non-zero weight in it are the terms whose estimates run off to infinity.
Random effects are left out: they are shrunk towards zero, so they cannot
absorb a separation of the fixed effects.

After fitting (`large_estimate_terms`): a fixed effect whose |estimate| or
SE exceeds LARGE_LOG_ODDS on the log-odds scale (odds beyond e^10, about
22,000 to 1) is the other sign of separation (or of a Hessian that is
singular in that direction).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.errors import GbstatsError

LARGE_LOG_ODDS = 10.0
# A separating direction must improve the objective by more than this (the
# LP's own tolerance is ~1e-9 per constraint)
LP_TOLERANCE = 1e-6


def separated_terms(design: pd.DataFrame, y) -> list[str]:
    """Columns of `design` (R's model matrix, named) in a separating direction
    of the 0/1 response `y`; [] when the fixed effects are not separated."""
    from scipy.optimize import linprog

    y = np.asarray(y)
    if design.shape[0] != len(y):
        raise GbstatsError(f"separation check: the design has {design.shape[0]} rows but the "
                           f"response {len(y)}")
    if not np.isin(y, (0, 1)).all():
        raise GbstatsError("separation check: the response must be 0/1")
    x = design.to_numpy(dtype=float)
    # rows with the same covariates and the same answer give the same constraint
    signed = np.unique(x * np.where(y == 1, 1.0, -1.0)[:, None], axis=0)
    scale = np.abs(signed).max(axis=0)
    scale[scale == 0] = 1.0
    signed = signed / scale  # columns on comparable scales for the LP's tolerance
    k = signed.shape[1]
    result = linprog(c=-signed.sum(axis=0), A_ub=-signed, b_ub=np.zeros(len(signed)),
                     bounds=[(-1.0, 1.0)] * k, method="highs")
    if result.status != 0:
        raise GbstatsError(f"separation check: the linear program failed ({result.message})")
    if -result.fun <= LP_TOLERANCE * len(signed):
        return []
    return [name for name, b in zip(design.columns, result.x) if abs(b) > 1e-6]


def large_estimate_terms(coefs: pd.DataFrame, limit: float = LARGE_LOG_ODDS) -> list[str]:
    """Terms of a binomial fit's coefs table with |estimate| or SE above `limit`."""
    big = (coefs["estimate"].abs() > limit) | (coefs["se"] > limit)
    return list(coefs.loc[big, "term"])


def separation_warnings(separated: list[str], large: list[str],
                        penalised: bool = False) -> list[str]:
    """The warnings a binomial fit carries (and its table note shows)."""
    out = []
    if separated:
        what = (f"quasi-complete separation of the fixed effects: a combination of "
                f"{separated} predicts every response on one side (Konis' linear program), "
                "so their maximum-likelihood estimates are infinite")
        out.append(what + ("; the penalised (bglmer) estimates in that direction are finite "
                           "but set largely by the fixed-effect prior" if penalised else
                           "; glmer's estimates, SEs, CIs and p-values for them are arbitrary: "
                           "use the penalised fit (fit_glmm(..., penalised=True), blme::bglmer)"))
    if large:
        out.append(f"separation suspected after fitting: |estimate| or SE above "
                   f"{LARGE_LOG_ODDS:g} on the log-odds scale for {large}")
    return out
