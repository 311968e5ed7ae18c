"""Classical hypothesis tests as tidy one-row tables, computed by pingouin.

Every test returns a one-row DataFrame with the same columns, so rows from
different tests can be concatenated, corrected for multiple comparisons with
`correct_pvalues`, and written to a report:

    test, label_a, label_b, n_a, n_b, n_nan_a, n_nan_b, statistic,
    statistic_name, df, p_value, alternative, estimate, estimate_name,
    ci_low, ci_high, ci_level, effect_size, effect_size_name, warning

- `estimate` is the quantity the confidence interval is about (difference in
  means, Pearson/Spearman r, rank-biserial correlation).
- `n_nan_a` / `n_nan_b` count the missing values removed before testing. By
  default (`nan_policy="omit"`) they are removed and counted; with
  `nan_policy="raise"` any missing value is an error. Pass an `ExclusionLog`
  as `exclusions=` to have the removal recorded for the study report as well.
- `df` is NaN for tests without degrees of freedom.
- `warning` carries the numerical warnings scipy raised during the test
  (e.g. precision loss when the data are nearly identical), "" when none, so
  they travel with the result into the report instead of scrolling past on
  stderr.

pingouin rounds its `CI95` column to two decimals for display; these
functions switch that rounding off while they call it, so the CIs are exact.
"""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError, UnknownNameError, check_probability
from gbstats.exclusions import ExclusionLog

RESULT_COLUMNS = [
    "test", "label_a", "label_b", "n_a", "n_b", "n_nan_a", "n_nan_b",
    "statistic", "statistic_name", "df", "p_value", "alternative",
    "estimate", "estimate_name", "ci_low", "ci_high", "ci_level",
    "effect_size", "effect_size_name", "warning",
]
ALTERNATIVES = ("two-sided", "less", "greater")
CORRELATION_METHODS = ("pearson", "spearman")
# pingouin.multicomp's names (same as statsmodels' multipletests, which
# pingouin mirrors) plus the spelled-out Bonferroni that R users type.
CORRECTION_METHODS = {
    "bonf": "bonf", "bonferroni": "bonf", "sidak": "sidak", "holm": "holm",
    "fdr_bh": "fdr_bh", "fdr_by": "fdr_by", "none": "none",
}


@contextlib.contextmanager
def _pingouin_unrounded():
    """Temporarily switch off pingouin's display rounding (CI95 to 2 decimals)."""
    import pingouin

    saved = dict(pingouin.options)
    for key in [k for k in pingouin.options if k.startswith("round.")]:
        del pingouin.options[key]
    pingouin.options["round"] = None
    try:
        yield
    finally:
        pingouin.options.clear()
        pingouin.options.update(saved)


@contextlib.contextmanager
def _numerical_warnings():
    """Collect the RuntimeWarnings raised inside (others are passed on), as one string."""
    found: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield found
    for w in caught:
        if issubclass(w.category, RuntimeWarning):
            if str(w.message) not in found:
                found.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _check_choice(value: str, allowed: Sequence[str], kind: str) -> None:
    if value not in allowed:
        raise UnknownNameError(kind, str(value), list(allowed))


def _as_float_array(values, label: str) -> np.ndarray:
    """1-D float array from a list/array/Series, or a clear error naming the sample."""
    series = pd.Series(values) if not isinstance(values, pd.Series) else values
    if series.ndim != 1:
        raise DataValidationError("a sample must be one-dimensional", source=label,
                                  found=f"{series.ndim} dimensions")
    numeric = pd.to_numeric(series, errors="coerce")
    bad = numeric.isna() & series.notna()
    if bad.any():
        pos = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataValidationError(
            f"{int(bad.sum())} non-numeric value(s)", source=label, row=pos + 1,
            expected="numbers (NaN for missing)", found=repr(series.iloc[pos]))
    return numeric.to_numpy(dtype=float)


def _drop_nan(values: np.ndarray, label: str, nan_policy: str,
              exclusions: ExclusionLog | None, stage: str) -> tuple[np.ndarray, int]:
    missing = np.isnan(values)
    n_missing = int(missing.sum())
    if n_missing and nan_policy == "raise":
        raise DataValidationError(
            f"{n_missing} missing value(s) (NaN)", source=label,
            row=int(np.flatnonzero(missing)[0]) + 1,
            expected="no missing values (or nan_policy='omit' to drop and count them)",
            found=f"{n_missing} NaN of {values.size}")
    if n_missing and exclusions is not None:
        exclusions.record(f"missing value in {label}", n_missing, "values", stage)
    return values[~missing], n_missing


def _require_n(values: np.ndarray, minimum: int, label: str, test: str,
               n_missing: int) -> None:
    if values.size == 0:
        raise DataValidationError(
            f"{test}: the sample is empty", source=label,
            expected=f"at least {minimum} non-missing values",
            found=f"0 values ({n_missing} missing removed)")
    if values.size < minimum:
        raise DataValidationError(
            f"{test}: too few observations", source=label,
            expected=f"at least {minimum} non-missing values",
            found=f"{values.size} ({n_missing} missing removed)")


def _one_row(**fields) -> pd.DataFrame:
    row = {col: fields.get(col, np.nan) for col in RESULT_COLUMNS}
    row["warning"] = "; ".join(fields.get("warning", []))
    return pd.DataFrame([row], columns=RESULT_COLUMNS)


def welch_ttest(a, b, *, label_a: str = "a", label_b: str = "b",
                alternative: str = "two-sided", confidence: float = 0.95,
                nan_policy: str = "omit",
                exclusions: ExclusionLog | None = None) -> pd.DataFrame:
    """Welch's unequal-variance t-test of mean(a) - mean(b).

    statistic = t (Welch), df = Welch-Satterthwaite df, estimate = mean(a) -
    mean(b) with its t-based CI, effect_size = Cohen's d with the pooled SD
    (signed: positive when a > b). Needs at least 2 values per sample and
    some variation.
    """
    check_probability(confidence, "confidence")
    import pingouin

    _check_choice(alternative, ALTERNATIVES, "alternative")
    _check_choice(nan_policy, ("omit", "raise"), "nan_policy")
    x, n_nan_a = _drop_nan(_as_float_array(a, label_a), label_a, nan_policy,
                           exclusions, "welch_ttest")
    y, n_nan_b = _drop_nan(_as_float_array(b, label_b), label_b, nan_policy,
                           exclusions, "welch_ttest")
    _require_n(x, 2, label_a, "Welch t-test", n_nan_a)
    _require_n(y, 2, label_b, "Welch t-test", n_nan_b)
    if np.ptp(x) == 0 and np.ptp(y) == 0:
        raise DataValidationError(
            "Welch t-test: both samples are constant, so the t statistic is undefined",
            source=f"{label_a} and {label_b}", expected="some variation in at least one sample",
            found=f"all {label_a} = {x[0]!r}, all {label_b} = {y[0]!r}")
    with _pingouin_unrounded(), _numerical_warnings() as numerical:
        res = pingouin.ttest(x, y, paired=False, alternative=alternative,
                             correction=True, confidence=confidence).iloc[0]
        d = float(pingouin.compute_effsize(x, y, paired=False, eftype="cohen"))
    ci = np.asarray(res[f"CI{100 * confidence:.0f}"], dtype=float)
    return _one_row(
        test="welch_t", label_a=label_a, label_b=label_b, n_a=x.size, n_b=y.size,
        n_nan_a=n_nan_a, n_nan_b=n_nan_b, statistic=float(res["T"]),
        statistic_name="t", df=float(res["dof"]), p_value=float(res["p_val"]),
        alternative=alternative, estimate=float(x.mean() - y.mean()),
        estimate_name="mean difference (a - b)", ci_low=ci[0], ci_high=ci[1],
        ci_level=confidence, effect_size=d, effect_size_name="cohen_d", warning=numerical)


def mann_whitney(a, b, *, alternative: str = "two-sided", label_a: str = "a",
                 label_b: str = "b", confidence: float = 0.95, n_boot: int = 2000,
                 seed: int = 0, nan_policy: str = "omit",
                 exclusions: ExclusionLog | None = None) -> pd.DataFrame:
    """Mann-Whitney U test of a against b (scipy's default exact/asymptotic choice).

    statistic = U of sample a (scipy's convention), effect_size = estimate =
    rank-biserial correlation r_rb = (U_a - U_b) / (n_a n_b), positive when a
    tends to be larger (Wendt 1972; pingouin's RBC). Its CI is a seeded
    percentile bootstrap (resampling each sample with replacement, `n_boot`
    times): no closed form is in common use. `alternative="greater"` tests
    whether a tends to be larger than b.
    """
    check_probability(confidence, "confidence")
    import pingouin
    from scipy import stats

    _check_choice(alternative, ALTERNATIVES, "alternative")
    _check_choice(nan_policy, ("omit", "raise"), "nan_policy")
    x, n_nan_a = _drop_nan(_as_float_array(a, label_a), label_a, nan_policy,
                           exclusions, "mann_whitney")
    y, n_nan_b = _drop_nan(_as_float_array(b, label_b), label_b, nan_policy,
                           exclusions, "mann_whitney")
    _require_n(x, 2, label_a, "Mann-Whitney test", n_nan_a)
    _require_n(y, 2, label_b, "Mann-Whitney test", n_nan_b)
    if np.ptp(np.concatenate([x, y])) == 0:
        raise DataValidationError(
            "Mann-Whitney test: every value in both samples is the same, so there is "
            "nothing to rank", source=f"{label_a} and {label_b}",
            expected="at least two distinct values", found=f"all values = {x[0]!r}")
    with _pingouin_unrounded(), _numerical_warnings() as numerical:
        res = pingouin.mwu(x, y, alternative=alternative).iloc[0]
    rng = np.random.default_rng(seed)
    boot_x = x[rng.integers(0, x.size, size=(n_boot, x.size))]
    boot_y = y[rng.integers(0, y.size, size=(n_boot, y.size))]
    u_boot = stats.mannwhitneyu(boot_x, boot_y, axis=1, method="asymptotic").statistic
    rbc_boot = 2 * u_boot / (x.size * y.size) - 1
    tail = (1 - confidence) / 2
    ci_low, ci_high = np.quantile(rbc_boot, [tail, 1 - tail])
    return _one_row(
        test="mann_whitney_u", label_a=label_a, label_b=label_b, n_a=x.size,
        n_b=y.size, n_nan_a=n_nan_a, n_nan_b=n_nan_b, statistic=float(res["U_val"]),
        statistic_name="U", p_value=float(res["p_val"]), alternative=alternative,
        estimate=float(res["RBC"]), estimate_name="rank-biserial correlation",
        ci_low=ci_low, ci_high=ci_high, ci_level=confidence,
        effect_size=float(res["RBC"]), effect_size_name="rank_biserial",
        warning=numerical)


def correlation(x, y, *, method: str = "pearson", alternative: str = "two-sided",
                label_x: str = "x", label_y: str = "y", confidence: float = 0.95,
                nan_policy: str = "omit",
                exclusions: ExclusionLog | None = None) -> pd.DataFrame:
    """Pearson or Spearman correlation of paired samples x and y.

    Pairs with a missing value in either x or y are removed (and counted:
    n_nan_a counts pairs removed for a missing x, n_nan_b for a missing y
    only). n_a = n_b = number of complete pairs. r and p come from pingouin;
    the CI is the Fisher-z interval tanh(atanh(r) +- z_crit / sqrt(n - 3))
    (one-sided for one-sided alternatives), computed here because pingouin
    rounds it to 6 decimals and fixes it at 95%. For Spearman's r this is the
    usual large-sample approximation. Needs at least 4 complete pairs (the
    interval uses n - 3) and variation in both samples.
    """
    check_probability(confidence, "confidence")
    import pingouin

    _check_choice(method, CORRELATION_METHODS, "correlation method")
    _check_choice(alternative, ALTERNATIVES, "alternative")
    _check_choice(nan_policy, ("omit", "raise"), "nan_policy")
    xs, ys = _as_float_array(x, label_x), _as_float_array(y, label_y)
    if xs.size != ys.size:
        raise DataValidationError(
            "correlation needs paired samples of equal length",
            source=f"{label_x} and {label_y}", expected="equal lengths",
            found=f"{xs.size} and {ys.size} values")
    miss_x, miss_y = np.isnan(xs), np.isnan(ys) & ~np.isnan(xs)
    for label, missing in ((label_x, miss_x), (label_y, miss_y)):
        if missing.any() and nan_policy == "raise":
            raise DataValidationError(
                f"{int(missing.sum())} missing value(s) (NaN)", source=label,
                row=int(np.flatnonzero(missing)[0]) + 1,
                expected="no missing values (or nan_policy='omit')")
        if missing.any() and exclusions is not None:
            exclusions.record(f"missing value in {label}", int(missing.sum()), "pairs",
                              "correlation")
    keep = ~(miss_x | miss_y)
    xs, ys = xs[keep], ys[keep]
    _require_n(xs, 4, f"{label_x}/{label_y} pairs", "correlation",
               int((~keep).sum()))
    for label, values in ((label_x, xs), (label_y, ys)):
        if np.ptp(values) == 0:
            raise DataValidationError(
                "correlation with a constant sample is undefined", source=label,
                expected="at least two distinct values", found=f"all values = {values[0]!r}")
    with _pingouin_unrounded(), _numerical_warnings() as numerical:
        res = pingouin.corr(xs, ys, method=method, alternative=alternative).iloc[0]
    ci = _fisher_ci(float(res["r"]), xs.size, confidence, alternative)
    return _one_row(
        test=f"{method}_correlation", label_a=label_x, label_b=label_y, n_a=xs.size,
        n_b=ys.size, n_nan_a=int(miss_x.sum()), n_nan_b=int(miss_y.sum()),
        statistic=float(res["r"]), statistic_name="r", df=float(xs.size - 2),
        p_value=float(res["p_val"]), alternative=alternative, estimate=float(res["r"]),
        estimate_name=f"{method} r", ci_low=ci[0], ci_high=ci[1], ci_level=confidence,
        effect_size=float(res["r"]), effect_size_name=f"{method}_r",
        warning=numerical)


def _fisher_ci(r: float, n: int, confidence: float,
               alternative: str) -> tuple[float, float]:
    """Fisher-z confidence interval of a correlation (bounds at -1/1 for one-sided)."""
    from scipy import stats

    if abs(r) == 1:
        return r, r
    z, se = np.arctanh(r), 1 / np.sqrt(n - 3)
    if alternative == "two-sided":
        crit = stats.norm.ppf(1 - (1 - confidence) / 2)
        return float(np.tanh(z - crit * se)), float(np.tanh(z + crit * se))
    crit = stats.norm.ppf(confidence)
    if alternative == "greater":
        return float(np.tanh(z - crit * se)), 1.0
    return -1.0, float(np.tanh(z + crit * se))


def correct_pvalues(table: pd.DataFrame, method: str = "holm", *,
                    column: str = "p_value", alpha: float = 0.05) -> pd.DataFrame:
    """Add multiple-comparison-corrected p-values to a table of tests.

    Returns a copy of `table` with `p_adjusted` (the same definitions as R's
    p.adjust: `adjusted_pvalues`), `reject` (p_adjusted < alpha) and
    `correction` (the method). Methods: 'holm' (default),
    'bonf'/'bonferroni', 'sidak', 'fdr_bh', 'fdr_by', 'none'. A missing
    p-value is an error: silently leaving it out would shrink the family.
    """
    if method not in CORRECTION_METHODS:
        raise UnknownNameError("p-value correction", str(method), list(CORRECTION_METHODS))
    if column not in table.columns:
        raise DataValidationError(f"no p-value column {column!r}", source="table",
                                  column=column, expected=f"a column {column!r}",
                                  found=f"columns {', '.join(map(str, table.columns))}")
    if len(table) == 0:
        raise DataValidationError("no tests to correct", source="table",
                                  expected="at least one row", found="0 rows")
    pvals = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
    bad = np.isnan(pvals) | (pvals < 0) | (pvals > 1)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise DataValidationError(
            f"{int(bad.sum())} p-value(s) missing or outside [0, 1]", source="table",
            row=pos + 1, column=column, expected="p-values in [0, 1]",
            found=repr(table[column].iloc[pos]))
    adjusted = adjusted_pvalues(pvals, CORRECTION_METHODS[method])
    out = table.copy()
    out["p_adjusted"] = adjusted
    out["reject"] = adjusted < alpha
    out["correction"] = CORRECTION_METHODS[method]
    return out


def adjusted_pvalues(pvals: np.ndarray, method: str) -> np.ndarray:
    """Adjusted p-values of one family (method a value of CORRECTION_METHODS), as R's
    p.adjust defines them: Bonferroni pmin(1, m p); Holm (1979) pmin(1, cummax((m - i + 1)
    p_(i))) in the sorted order, returned to the input order; the FDR methods by scipy's
    false_discovery_control; Sidak by statsmodels' multipletests (its Holm is not used: it
    runs a full gc.collect() on every call, 0.25 s each in a study with a large heap).
    These are bit for bit what pingouin.multicomp computed here before (tests: 600 random
    families, ties and p = 1 included; Sidak within 1e-14), without importing pingouin,
    which imports seaborn and pyplot (issue 41's warm run)."""
    m = pvals.size
    if method == "none":
        return pvals.copy()
    if method == "bonf":
        return np.minimum(pvals * m, 1.0)
    if method == "holm":
        order = np.argsort(pvals, kind="stable")
        adjusted = np.empty(m)
        adjusted[order] = np.minimum(np.maximum.accumulate(pvals[order] * np.arange(m, 0, -1)),
                                     1.0)
        return adjusted
    if method in ("fdr_bh", "fdr_by"):
        from scipy.stats import false_discovery_control

        return np.asarray(false_discovery_control(pvals, method=method[-2:]), dtype=float)
    from statsmodels.stats.multitest import multipletests

    with np.errstate(divide="ignore"):   # sidak at p = 1: log1p(-1) = -inf, adjusted 1
        return np.asarray(multipletests(pvals, method=method)[1], dtype=float)


BINOMIAL_TAILS = ("lower", "upper")


def binomial_tail_p(successes, n, chance: float, *, tail: str = "lower") -> float:
    """Exact one-sided binomial p-value for a count of successes under a chance rate.

    tail="lower": P(X <= successes), small when the count is below chance;
    tail="upper": P(X >= successes); X ~ Binomial(n, chance). A plain float,
    not a one-row table, because it is read per row of a metric table. NaN
    when there is no count (successes missing, or n = 0): the metric was not
    a proportion of a count, so there is nothing to test.
    """
    from scipy.stats import binom

    if tail not in BINOMIAL_TAILS:
        raise UnknownNameError("binomial tail", tail, list(BINOMIAL_TAILS))
    if successes is None or pd.isna(successes) or n is None or pd.isna(n) or int(n) == 0:
        return float("nan")
    k, n = int(successes), int(n)
    if not 0 <= k <= n or not 0 <= float(chance) <= 1:
        raise DataValidationError("a binomial count must lie in 0..n and the chance rate in [0, 1]",
                                  source="binomial_tail_p", expected="0 <= successes <= n, "
                                  "0 <= chance <= 1", found=f"successes={k}, n={n}, chance={chance}")
    if tail == "lower":
        return float(binom.cdf(k, n, float(chance)))
    return float(binom.sf(k - 1, n, float(chance)))


def correct_within_families(table: pd.DataFrame, family: str = "family", method: str = "holm",
                            *, column: str = "p_value", alpha: float = 0.05) -> pd.DataFrame:
    """`correct_pvalues` applied separately within each family of tests.

    A family is the set of tests behind one claim (e.g. "which group does the
    model resemble, by linguistic stage"): the error rate is controlled within
    it, not across unrelated questions. `family` names the column holding each
    row's family; rows keep their order. Adds p_adjusted, reject, correction
    and family_size.
    """
    if family not in table.columns:
        raise DataValidationError(f"no family column {family!r}", source="table",
                                  column=family, expected=f"a column {family!r} naming each "
                                  "test's family",
                                  found=f"columns {', '.join(map(str, table.columns))}")
    parts = []
    for _, rows in table.groupby(family, sort=False):
        corrected = correct_pvalues(rows, method, column=column, alpha=alpha)
        parts.append(corrected.assign(family_size=len(rows)))
    return pd.concat(parts).loc[table.index]
