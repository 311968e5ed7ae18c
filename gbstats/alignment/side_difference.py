"""People against a model, effect by effect: the difference tested, not read off two intervals.

"The model shows people's pattern" is a claim about the difference between two effects,
people's and the model's, estimated on the same items. Two intervals that overlap decide
nothing about it, and the difference of two separate estimates with SE sqrt(se1^2 + se2^2)
is right only when the two are independent, which they are not when both sides answer the
same items: a name that pulls people towards *she* pulls the model too.

`paired_effect_differences` estimates both sides' effects jointly and tests the difference:

* each side's fixed part is fitted as a marginal (population-averaged) logistic
  regression of its own P(she): people's 0/1 responses per trial, the model's share
  P(she) / (P(he) + P(she)) per prompt (a fractional logit; Papke & Wooldridge 1996).
  Both estimate the logit of the mean probability in each cell, i.e. the population-
  averaged effect, on one scale;
* the two fits are stacked as one set of estimating equations (a side x effect
  interaction in every coefficient), and their joint covariance is the cluster-robust
  sandwich over the unit the items cluster in (first names): A^-1 B A^-1 with A the two
  sides' information matrices (block-diagonal) and B = G/(G-1) sum_g s_g s_g', s_g the
  stacked score sums of cluster g on both sides (Liang & Zeger 1986; Cameron & Miller
  2015). The off-diagonal block of B is the pairing: what a cluster does to people's
  estimate and to the model's at once;
* an effect is a contrast of cells, sum_k w_k x_k' beta (a condition difference, a
  rating slope, an interaction of the two), on each side; the difference (people minus
  model) has variance [L, -L] V [L, -L]'. Tests and intervals use t with G - 1 degrees
  of freedom (few clusters: Cameron & Miller 2015, section VI);
* `difference_verdicts` adds Holm within the family of verdicts (the difference tests,
  and separately the equivalence tests) and TOST at the declared bound delta, and says
  the conclusion in the test's words: "differs (p = ...)", "equivalent within +/-delta",
  or "inconclusive".

R reference: tests/reference/name_gender_side_difference.R fits the same two glm's
(quasibinomial) and builds the same sandwich by hand.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.errors import DataValidationError, GbstatsError
from gbstats.mixed.contrasts import resolve_contrasts
from gbstats.mixed.formula import (factor_levels_for, model_matrix, parse_formula,
                                   r_term_names)

METHOD = ("joint marginal logistic regressions (people's responses, the model's fractional "
          "share), side x effect, cluster-robust covariance over {unit} (CR1, {g} clusters), "
          "t with {df} df; TOST at the bound")
DIFFERENCE_COLUMNS = ["effect", "people_estimate", "people_se", "model_estimate", "model_se",
                      "correlation", "estimate", "se", "df", "ci_low", "ci_high", "p_value",
                      "equivalence_bound", "p_equivalence", "n_clusters", "unit", "method"]


def marginal_logit(X: np.ndarray, y: np.ndarray, *, max_iter: int = 100, tol: float = 1e-10
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(beta, fitted mean) of a logistic regression of y in [0, 1] on X by Newton-Raphson
    (the quasi-likelihood of a fractional response: its score is X'(y - mu) as for 0/1)."""
    beta = np.zeros(X.shape[1])
    for _ in range(max_iter):
        mu = 1 / (1 + np.exp(-(X @ beta)))
        info = X.T @ (X * (mu * (1 - mu))[:, None])
        step = np.linalg.solve(info, X.T @ (y - mu))
        beta = beta + step
        if np.max(np.abs(step)) < tol:
            break
    else:
        raise GbstatsError(f"the marginal logistic regression did not converge in {max_iter} "
                           "Newton steps (a cell where every response is the same?)")
    return beta, 1 / (1 + np.exp(-(X @ beta)))


def _design(rhs: str, rows: pd.DataFrame, contrasts: Mapping, where: str
            ) -> tuple[np.ndarray, list[str], dict, object]:
    parsed = parse_formula(f"y ~ {rhs}")
    missing = [c for c in parsed.predictors if c not in rows.columns]
    if missing:
        raise DataValidationError(f"the {where} rows lack predictor(s) of {rhs!r}",
                                  source=where, column=missing[0],
                                  expected=f"columns {parsed.predictors}",
                                  found=f"columns {list(rows.columns)}")
    levels = factor_levels_for(parsed, rows)
    codings = resolve_contrasts({k: v for k, v in contrasts.items() if k in levels}, levels,
                                rhs, counts={v: rows[v].astype(str).value_counts().to_dict()
                                             for v in levels})
    frame = rows.assign(**{v: rows[v].astype(str) for v in levels})
    X = model_matrix(parsed.intercept, parsed.fixed_terms, frame, levels, codings)
    names = r_term_names(parsed.intercept, parsed.fixed_terms, levels, codings)
    return X[names].to_numpy(float), names, (levels, codings), parsed


def _contrast(grid: pd.DataFrame, weights, parsed, levels_codings, names) -> np.ndarray:
    levels, codings = levels_codings
    frame = grid.assign(**{v: grid[v].astype(str) for v in levels if v in grid})
    X = model_matrix(parsed.intercept, parsed.fixed_terms, frame, levels, codings)[names]
    w = np.asarray(weights, dtype=float)
    if w.shape != (len(grid),):
        raise GbstatsError(f"{len(w)} weights for {len(grid)} design rows")
    return w @ X.to_numpy(float)


def _check_rows(rows: pd.DataFrame, response: str, cluster: str, where: str) -> None:
    for column in (response, cluster):
        if column not in rows.columns:
            raise DataValidationError(f"the {where} rows have no column {column!r}", source=where,
                                      column=column, expected=f"columns {response}, {cluster}",
                                      found=f"columns {list(rows.columns)}")
    y = rows[response].to_numpy(float)
    bad = ~np.isfinite(y) | (y < 0) | (y > 1)
    if bad.any():
        raise DataValidationError(f"the {where} response must be a probability in [0, 1]",
                                  source=where, column=response, row=int(np.flatnonzero(bad)[0]) + 2,
                                  expected="values in [0, 1]", found=str(y[bad][0]))
    if rows[cluster].isna().any():
        raise DataValidationError(f"the {where} rows have a missing cluster", source=where,
                                  column=cluster,
                                  row=int(np.flatnonzero(rows[cluster].isna().to_numpy())[0]) + 2,
                                  expected="a cluster label in every row", found="NaN")


def paired_effect_differences(people: pd.DataFrame, model: pd.DataFrame, *, rhs: str,
                              effects: Sequence[tuple[str, pd.DataFrame, Sequence[float]]],
                              people_response: str, model_response: str, cluster: str,
                              contrasts: Mapping | None = None, equivalence_bound: float,
                              unit: str = "clusters", confidence: float = 0.95
                              ) -> pd.DataFrame:
    """For each effect (name, design rows, weights): people's and the model's population-
    averaged effect (log-odds), the difference people minus model with its cluster-robust
    SE from the joint fit, t interval and p (G - 1 df), and the TOST p at
    `equivalence_bound` (module docstring). `cluster` names the column, present on both
    sides, of the unit the items cluster in; `unit` says it in words. DIFFERENCE_COLUMNS."""
    contrasts = dict(contrasts or {})
    _check_rows(people, people_response, cluster, "people")
    _check_rows(model, model_response, cluster, "model")
    Xp, names, lc_p, parsed = _design(rhs, people, contrasts, "people")
    Xm, names_m, lc_m, _ = _design(rhs, model, contrasts, "model")
    if names != names_m:
        raise GbstatsError(f"people's and the model's designs differ: {names} vs {names_m}")
    yp, ym = people[people_response].to_numpy(float), model[model_response].to_numpy(float)
    bp, mup = marginal_logit(Xp, yp)
    bm, mum = marginal_logit(Xm, ym)
    k = len(names)
    info = np.zeros((2 * k, 2 * k))
    info[:k, :k] = Xp.T @ (Xp * (mup * (1 - mup))[:, None])
    info[k:, k:] = Xm.T @ (Xm * (mum * (1 - mum))[:, None])
    labels = pd.Index(pd.concat([people[cluster], model[cluster]]).astype(str).unique())
    G = len(labels)
    scores = np.zeros((G, 2 * k))
    np.add.at(scores[:, :k], labels.get_indexer(people[cluster].astype(str)),
              Xp * (yp - mup)[:, None])
    np.add.at(scores[:, k:], labels.get_indexer(model[cluster].astype(str)),
              Xm * (ym - mum)[:, None])
    bread = np.linalg.inv(info)
    vcov = bread @ (scores.T @ scores * G / (G - 1)) @ bread
    df = G - 1
    crit = stats.t.ppf(1 - (1 - confidence) / 2, df)
    rows = []
    for name, grid, weights in effects:
        L = _contrast(grid, weights, parsed, lc_p, names)
        Lm = _contrast(grid, weights, parsed, lc_m, names)
        est_p, est_m = float(L @ bp), float(Lm @ bm)
        grad = np.r_[L, -Lm]
        var_p, var_m = float(L @ vcov[:k, :k] @ L), float(Lm @ vcov[k:, k:] @ Lm)
        se = float(np.sqrt(grad @ vcov @ grad))
        diff = est_p - est_m
        cov = float(L @ vcov[:k, k:] @ Lm)
        p = float(2 * stats.t.sf(abs(diff) / se, df))
        rows.append({"effect": name, "people_estimate": est_p, "people_se": np.sqrt(var_p),
                     "model_estimate": est_m, "model_se": np.sqrt(var_m),
                     "correlation": cov / np.sqrt(var_p * var_m), "estimate": diff, "se": se,
                     "df": df, "ci_low": diff - crit * se, "ci_high": diff + crit * se,
                     "p_value": p, "equivalence_bound": float(equivalence_bound),
                     "p_equivalence": tost_t(diff, se, equivalence_bound, df),
                     "n_clusters": G, "unit": unit,
                     "method": METHOD.format(unit=unit, g=G, df=df)})
    return pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)


def tost_t(estimate: float, se: float, bound: float, df: float) -> float:
    """TOST p of |true difference| >= bound: the larger of the two one-sided t tests."""
    if not (np.isfinite(bound) and bound > 0 and np.isfinite(se) and se > 0):
        return np.nan
    return float(max(stats.t.sf((estimate + bound) / se, df),
                     stats.t.cdf((estimate - bound) / se, df)))


def format_p(p: float) -> str:
    return "p < .001" if p < 0.001 else "p = " + f"{p:.3f}".replace("0.", ".", 1)


def difference_verdict(p_holm: float, p_equivalence_holm: float, bound: float,
                       alpha: float = 0.05) -> str:
    """The conclusion the tests allow, in their words: "differs (p = ...)" when the Holm p
    of the difference is below alpha, "equivalent within +/-delta" when the Holm-adjusted
    TOST p is, else "inconclusive"."""
    if np.isfinite(p_holm) and p_holm < alpha:
        return f"differs ({format_p(p_holm)}, Holm)"
    if np.isfinite(p_equivalence_holm) and p_equivalence_holm < alpha:
        return f"equivalent within ±{bound:g}"
    return "inconclusive"


def difference_verdicts(table: pd.DataFrame, family: str = "family",
                        alpha: float = 0.05) -> pd.DataFrame:
    """`table` (rows of `paired_effect_differences` with a `family` column) with p_holm,
    family_size, p_equivalence_holm and verdict: Holm within each family for the
    difference tests, and separately for the equivalence tests."""
    from gbstats.alignment.group_comparison import holm_equivalence, holm_within_families

    if family not in table.columns:
        raise DataValidationError("verdict rows without a family", source="difference tests",
                                  column=family, expected=f"a column {family!r}",
                                  found=f"columns {list(table.columns)}")
    out = holm_within_families(table.reset_index(drop=True), family)
    out["p_equivalence_holm"] = holm_equivalence(out, family).to_numpy()
    out["verdict"] = [difference_verdict(p, q, b, alpha) for p, q, b in
                      zip(out["p_holm"], out["p_equivalence_holm"], out["equivalence_bound"])]
    return out
