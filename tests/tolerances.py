"""How close two runs' numbers must be, by where the numbers come from (issue 24).

A number recorded on one machine is compared with the same number computed on
another: another CPU, another thread count, another BLAS kernel. Each kind of
number gets an absolute-plus-relative tolerance, and the reason for it is next to
it. A value passes when

    |found - expected| <= rtol * |expected| + floor

summed over the kinds that apply (a fitted model on language-model scores carries
both errors). Integers, booleans and strings are compared exactly, whatever the
kind: a count that moves is a change, not noise.

Kinds
- EXACT: computed from the data alone (counts, means, seeded bootstrap or
  permutation draws over human data): the same code gives the same bits on any
  machine up to the last few ulps.
- MODEL: computed from language-model scores. A text's log-probability differs
  across CPUs, torch thread counts and BLAS kernels by about 1e-5 nats (measured:
  up to 2.8e-5 between a 1-thread Ray actor and a 2-thread process; a text's
  score also moves with the other texts in its batch, because padding changes the
  shapes of the matrix products: up to 4.1e-5 nats between batch size 8 and 1 and
  6.7e-5 between 32 and 1 on the embedded model, so comparisons keep the batch
  size fixed). Every number computed from the
  scores (means, correlations, bootstrap bounds) moves by as much; the issue's
  fresh machine saw 2.2e-6 in a correlation (0.40748999 vs 0.40748779) and 1e-6
  in a bootstrap bound (0.3004347 vs 0.3004357).
- FITTED: out of an iterative optimizer (lme4's lmer/glmer, statsmodels). The
  optimizer stops where its convergence test is met, and the path there depends
  on the floating-point sums on the way; glmer ended 1.3e-4 relative apart
  between runs of one Rscript call, and the GLMM tables of cognitive_bias 3e-4.
  Relative tolerance fails for an estimate near 0 (-0.005651 vs -0.005609 on the
  fresh machine: 0.7% relative but 1.7e-4 of its SE of 0.242), so estimates and
  CI bounds also get a floor in units of their own standard error: the
  optimizer's error in a parameter scales with the curvature of the likelihood,
  i.e. with the SE (a deviance within eps of its minimum puts a parameter within
  SE * sqrt(2 eps) of the optimum).

p-values are compared on a log scale: for a z or t test log p ~ -z^2 / 2, so a
relative error r in the statistic is a relative error of about 2 r in |log p|,
plus the statistic's absolute floor times |d log p / dz|, which is about 0.8 for
p near 1 and about |z| in the tail (Mills' ratio; |z| <= sqrt(2 |log p|)): an
estimate allowed to move by 1% of its SE moves z by 0.01 and, at z = 4, log p by
0.04 (name_gender's Exp 1 m_cond, p 5.97e-05 vs 6.22e-05 between two processes).
2.2464e-07 vs 2.2511e-07 (alignment_lmm on the fresh machine) is 2.1e-3 apart
in log p, |log p| = 15.3.
"""
from __future__ import annotations

import re

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Tolerance:
    rtol: float          # relative to the expected value
    atol: float          # absolute floor, in the value's own units
    se_floor: float      # absolute floor in units of the row's standard error (estimates, CIs)
    stat_atol: float     # absolute floor for a test statistic (z, t) and for log p
    df_rtol: float       # relative tolerance of degrees of freedom
    se_rtol: float       # relative tolerance of a standard error


# The same code on the same machine: a few ulps of summation order at most.
EXACT = Tolerance(rtol=1e-9, atol=1e-12, se_floor=0.0, stat_atol=1e-12, df_rtol=1e-9,
                  se_rtol=1e-9)
# Language-model scores: ~1e-5 nats of noise per text (up to 2.8e-5 measured), so 1e-4
# nats absolute (the tolerance the scoring tests use for batch size 1 vs 16) and 1e-5
# relative for quantities summed over many texts. A correlation or proportion is
# dimensionless and moves by ~1e-6 with it; 1e-4 still catches any change a report shows.
MODEL = Tolerance(rtol=1e-5, atol=1e-4, se_floor=0.0, stat_atol=1e-4, df_rtol=1e-5,
                  se_rtol=1e-5)
# Optimizer output: 1e-3 relative (glmer's 1.3e-4-3e-4 run-to-run spread, with room), and
# 1% of a standard error absolute for estimates and CI bounds (60x the 1.7e-4 SE seen on
# the fresh machine; a hundredth of an SE is invisible in any inference). Test statistics
# are estimate / SE, so their floor is the same 1e-2 in their own units. Satterthwaite df
# (lmerTest) come from a numerical derivative of the variance parameters' covariance, on
# top of the optimizer's error: singular_they's alignment_lmm df moved 4.7e-4 relative
# (243.75 vs 243.64) between two fresh runs on one machine. 1e-2 relative: a df 1% off
# moves a 95% t critical value by < 0.3% at df = 5 and < 0.07% at df >= 20.
# glmer's standard errors come from a finite-difference Hessian of the deviance at the
# optimizer's end point, so they move more than the estimates. Measured on name_gender's
# human_models (the glmer fits whose SEs move at all; every lmer / statsmodels SE of
# cognitive_bias and role_nouns stayed within 1e-4): 0.25% between two fresh processes on
# one machine (issue 24), and against the baseline on fresh machines of the kind (issue 33):
# 0.64% under the default settings (m_cond's 0.703555 -> 0.699080, on two machines alike),
# 0.15% under OMP_NUM_THREADS=1 OPENBLAS_CORETYPE=Sandybridge, 0.49% between those two
# settings on one machine. 1.5e-2 relative, 2.3x the largest spread: a 1.5% change in an SE
# moves a 95% CI bound by 0.03 SE. Every number built from an SE carries its tolerance too
# (allowed_difference, allowed_log_p_difference): a CI bound by se_rtol times its distance
# from the estimate, z = estimate / SE by se_rtol relative, log p by twice that relative.
FITTED = Tolerance(rtol=1e-3, atol=1e-12, se_floor=1e-2, stat_atol=1e-2, df_rtol=1e-2,
                   se_rtol=1.5e-2)

# Column roles, by the names the result tables use
P_VALUE_COLUMNS = {"p_value", "p_holm", "p", "p_below_chance"}
STAT_COLUMNS = {"stat", "statistic", "t", "z"}
DF_COLUMNS = {"df"}
SE_COLUMNS = {"se", "std_error"}
SE_SCALED_COLUMNS = {"estimate", "ci_low", "ci_high", "difference", "value"}
# interval bounds: estimate +- a multiple of the SE, so they move with the SE too
CI_COLUMNS = {"ci_low", "ci_high"}
# R's pnorm underflows to 0 below ~1e-308; p-values that small are all "0" to a reader
P_FLOOR = 1e-300


def row_se(table: pd.DataFrame) -> pd.Series:
    """Each row's standard error: the `se` column, else the 95% CI's width / 3.92, else NaN."""
    if "se" in table:
        return pd.to_numeric(table["se"], errors="coerce").abs()
    if {"ci_low", "ci_high"} <= set(table.columns):
        width = pd.to_numeric(table["ci_high"], errors="coerce") - pd.to_numeric(table["ci_low"],
                                                                                 errors="coerce")
        return width.abs() / (2 * 1.959963984540054)
    return pd.Series(np.nan, index=table.index)


def row_half_width(table: pd.DataFrame, column: str) -> pd.Series:
    """How far a CI bound lies from its estimate, per row (|ci - estimate|; 1.96 SE when
    the table has no estimate column), the part of the bound that is a multiple of the SE;
    0 for any other column."""
    if column not in CI_COLUMNS:
        return pd.Series(0.0, index=table.index)
    bound = pd.to_numeric(table[column], errors="coerce")
    if "estimate" in table:
        return (bound - pd.to_numeric(table["estimate"], errors="coerce")).abs()
    return 1.959963984540054 * row_se(table)


def allowed_difference(column: str, expected: np.ndarray, se: np.ndarray,
                       kinds: tuple[Tolerance, ...],
                       half_width: np.ndarray | None = None) -> np.ndarray:
    """The largest |found - expected| that passes, per row, for a non-p-value float column.

    Columns derived from an SE carry the SE's tolerance too: a CI bound moves by se_rtol
    times its distance from the estimate (`half_width`), a Wald statistic estimate / SE by
    se_rtol relative."""
    expected = np.abs(np.asarray(expected, dtype=float))
    se = np.nan_to_num(np.asarray(se, dtype=float), nan=0.0, posinf=0.0)
    half = (np.zeros_like(expected) if half_width is None
            else np.nan_to_num(np.asarray(half_width, dtype=float), nan=0.0, posinf=0.0))
    allowed = np.zeros_like(expected)
    for kind in kinds:
        rtol = (kind.df_rtol if column in DF_COLUMNS else
                kind.se_rtol if column in SE_COLUMNS else kind.rtol)
        allowed += rtol * expected + kind.atol
        if column in STAT_COLUMNS:
            allowed += kind.stat_atol + kind.se_rtol * expected
        elif column in SE_SCALED_COLUMNS:
            allowed += kind.se_floor * se
        if column in CI_COLUMNS:
            allowed += kind.se_rtol * half
    return allowed


def allowed_log_p_difference(expected: np.ndarray, kinds: tuple[Tolerance, ...]) -> np.ndarray:
    """The largest |log p_found - log p_expected| that passes (see the module doc)."""
    log_p = np.abs(np.log(np.maximum(np.asarray(expected, dtype=float), P_FLOOR)))
    slope = np.maximum(0.8, np.sqrt(2 * log_p))   # |d log p / dz|, bounded above
    # z = estimate / SE carries both relative errors, and |log p| ~ z^2 / 2 twice z's
    return sum(2 * (kind.rtol + kind.se_rtol) * log_p + kind.stat_atol * slope
               for kind in kinds)


# Degrees of freedom enter every inference through the t distribution only, so they are
# compared by the 95% critical value they imply, relative, within DF_CRITICAL_SHARE x
# df_rtol: at df = 5 that is the df_rtol relative df the comment on FITTED derives (1% of
# df moves the critical value by < 0.3%); at large df, where the t distribution is nearly
# normal, it lets df move a lot. It must: Satterthwaite df of a term next to a variance
# component at its boundary are ill-determined. singular_they's alignment LMM by
# nonbinary acceptance is a boundary (singular) fit whose score_z:group df came out 575
# and 601 in-process and 1,192 and 1,249 in the clean R process (issue 33), with the same
# estimates, SEs and p-values within tolerance; their critical values differ by 0.11%.
DF_CRITICAL_SHARE = 0.3


def t_critical_difference(found: np.ndarray, expected: np.ndarray,
                          kinds: tuple[Tolerance, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(|t crit(found) - t crit(expected)|, allowed), 95% two-sided critical values."""
    from scipy import stats

    with np.errstate(invalid="ignore"):
        crit_found = stats.t.ppf(0.975, np.where(found > 0, found, np.nan))
        crit_want = stats.t.ppf(0.975, np.where(expected > 0, expected, np.nan))
    allowed = sum(DF_CRITICAL_SHARE * kind.df_rtol for kind in kinds) * np.abs(crit_want)
    return np.abs(crit_found - crit_want), allowed


def mismatches(found: pd.Series, expected: pd.Series, column: str, se: pd.Series,
               kinds: tuple[Tolerance, ...],
               half_width: pd.Series | None = None) -> pd.DataFrame:
    """Rows of one float column outside tolerance, with found, expected and the allowance
    (`half_width`: a CI bound's distance from its estimate, `row_half_width`)."""
    got = pd.to_numeric(found, errors="coerce").to_numpy(dtype=float)
    want = pd.to_numeric(expected, errors="coerce").to_numpy(dtype=float)
    both_nan = np.isnan(got) & np.isnan(want)
    same_inf = np.isinf(want) & (got == want)
    if column in P_VALUE_COLUMNS:
        diff = np.abs(np.log(np.maximum(got, P_FLOOR)) - np.log(np.maximum(want, P_FLOOR)))
        allowed = allowed_log_p_difference(want, kinds)
    elif column in DF_COLUMNS:
        diff, allowed = t_critical_difference(got, want, kinds)
    elif column in CONVERGENCE_COLUMNS:
        diff, allowed = np.abs(got - want), MESSAGE_NUMBER_RTOL * np.abs(want)
    else:
        diff = np.abs(got - want)
        allowed = allowed_difference(column, want, se.to_numpy(dtype=float), kinds,
                                     None if half_width is None
                                     else half_width.to_numpy(dtype=float))
    with np.errstate(invalid="ignore"):
        ok = both_nan | same_inf | (diff <= allowed)
    bad = ~ok
    return pd.DataFrame({"row": np.flatnonzero(bad), "found": got[bad], "expected": want[bad],
                         "difference": diff[bad], "allowed": allowed[bad]})


def is_float_column(values: pd.Series) -> bool:
    """Float columns are compared with a tolerance; integer, bool and string columns exactly.
    (A count column with a missing value reads back from JSON as floats; a count that moves
    by 1 still fails every tolerance here.)"""
    return pd.api.types.is_float_dtype(values)


def monte_carlo_close(found: float, expected: float, mcse: float, *, k: float = 4.0,
                      model_rtol: float = 0.0) -> bool:
    """A Bayesian summary against a reference: |found - expected| <= model_rtol * |expected|
    + k * MCSE. The first term is the difference between the quantities themselves (a
    posterior SD is not lme4's conditional SD); the second the Monte Carlo error of the
    summary (ArviZ's `mcse`), k = 4 for a family of many comparisons (two-sided
    normal tail 6e-5 each)."""
    return bool(abs(found - expected) <= model_rtol * abs(expected) + k * mcse) and math.isfinite(found)


# lme4's convergence messages carry the optimiser's gradient at its end point ("Model
# failed to converge with max|grad| = 0.025307"): a fit that did not converge stops where
# its path ends, and the path moves with the floating-point sums. Measured: 0.025307 on
# the machine that wrote pronoun_memory's baseline, 0.0252761 on a fresh clone (0.12%).
# The message's words must match exactly; its numbers within MESSAGE_NUMBER_RTOL.
MESSAGE_NUMBER_RTOL = 0.05
# The same gradient as a column of its own (pronoun_memory's human_models: max_grad).
CONVERGENCE_COLUMNS = {"max_grad"}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def same_message(found: str, expected: str, rtol: float = MESSAGE_NUMBER_RTOL) -> bool:
    """The same text with its numbers within `rtol` of each other (a fitted table's message
    columns); any other difference, in words or in how many numbers, is a change."""
    if not isinstance(found, str) or not isinstance(expected, str):
        return found == expected
    if _NUMBER.sub("#", found) != _NUMBER.sub("#", expected):
        return False
    pairs = zip(map(float, _NUMBER.findall(found)), map(float, _NUMBER.findall(expected)))
    return all(abs(a - b) <= rtol * abs(b) for a, b in pairs)
