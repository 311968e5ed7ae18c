"""Many models on one scale: which is most like people, and is the gap real?

Models scored on the same items and compared with the same people give strongly
correlated estimates, so one interval per model misleads both ways. Everything here
works from each model's estimate and their *joint* covariance (from one shared
bootstrap, `joint_covariance`), following

    Mogstad, Romano, Shaikh & Wilhelm (2023), "Inference for ranks with applications
    to mobility across neighbourhoods and academic achievement across countries",
    Review of Economic Studies 91(1), 476-518 (MRSW below).

Notation (MRSW sec. 2): models j = 1..p with true statistics theta_j; the rank of j is
r_j = 1 + #{k : theta_k > theta_j}, so rank 1 is the largest and ties share the best
rank among them. For an ordered pair (j, k) the null hypothesis H_{j,k}: theta_j <=
theta_k is tested with T_{j,k} = (est_j - est_k) / sd_{j,k}, where sd_{j,k}^2 =
Sigma_jj + Sigma_kk - 2 Sigma_jk; rejecting it shows theta_j > theta_k.

* Marginal rank sets (MRSW sec. 3.1, eq. 9-10): for each j, the family {H_{j,k},
  H_{k,j} : k != j} is tested with the Romano-Wolf stepdown (MRSW Algorithm 3.1) at
  family-wise level alpha; with N+_j = #{k : H_{j,k} rejected} and N-_j = #{k :
  H_{k,j} rejected}, the set {N-_j + 1, ..., p - N+_j} covers r_j with probability
  >= 1 - alpha.
* Simultaneous rank sets (MRSW sec. 3.2): the same with the family of all ordered
  pairs, so that all p sets cover all ranks at once with probability >= 1 - alpha.
* The tau-best set (MRSW sec. 4.1): {j : N-_j <= tau - 1} from the simultaneous
  family's rejections, which contains every model whose true rank is <= tau with
  probability >= 1 - alpha; tau = 1 gives the set that contains the best model.

The stepdown's critical values are quantiles of the largest standardised null
difference over the hypotheses still in play, under the normal approximation
est ~ N(theta, Sigma) (MRSW's "parametric" version, their Remark 3.3), simulated with
a fixed seed so that a result is reproducible.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from gbstats.errors import GbstatsError

# Monte Carlo draws of the null differences behind every critical value. At 50,000
# the 0.95 quantile of a maximum has a Monte Carlo SE of about 0.01 on the z scale
# (binomial SE 0.001 in probability over a density near 0.1 there), so only a
# statistic within a few hundredths of its critical value can fall either way; the
# fixed seed makes every result reproducible. tests/reference/ranking_hand_cases.py
# derives the critical values by numerical integration instead.
NULL_DRAWS = 50_000
NULL_SEED = 20230101
# A difference whose SD is below this share of the largest estimate's SD is treated as
# known exactly (two copies of one model): it is never standardised by a zero.
EXACT_SD_SHARE = 1e-9


def _checked(estimates: pd.Series, covariance: pd.DataFrame, level: float
             ) -> tuple[pd.Index, np.ndarray, np.ndarray]:
    if not isinstance(estimates, pd.Series):
        raise GbstatsError(f"estimates must be a pandas Series indexed by model, found "
                           f"{type(estimates).__name__}")
    if not isinstance(covariance, pd.DataFrame):
        raise GbstatsError(f"covariance must be a pandas DataFrame indexed and headed by "
                           f"model, found {type(covariance).__name__}")
    names = estimates.index
    if len(names) < 2:
        raise GbstatsError(f"ranking needs at least 2 models, found {len(names)}")
    if names.has_duplicates:
        repeated = sorted(map(str, names[names.duplicated()].unique()))
        raise GbstatsError(f"each model must appear once in estimates; repeated: "
                           f"{', '.join(repeated)}")
    missing = [str(n) for n in names if n not in covariance.index or n not in covariance.columns]
    if missing:
        raise GbstatsError(f"covariance has no row or column for model(s) "
                           f"{', '.join(missing)}; expected rows and columns "
                           f"{', '.join(map(str, names))}")
    extra = sorted(set(map(str, covariance.index)) ^ set(map(str, covariance.columns)))
    if extra or len(covariance.index) != len(names) or len(covariance.columns) != len(names):
        raise GbstatsError(f"covariance must have exactly the models of estimates as its rows "
                           f"and columns ({len(names)}); found {covariance.shape[0]} rows and "
                           f"{covariance.shape[1]} columns")
    est = pd.to_numeric(estimates, errors="coerce").to_numpy(dtype=float)
    bad = [str(n) for n, v in zip(names, est) if not np.isfinite(v)]
    if bad:
        raise GbstatsError(f"estimates must be finite numbers; not for model(s) {', '.join(bad)}")
    try:
        cov = covariance.loc[names, names].to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise GbstatsError("covariance must hold numbers only") from None
    if not np.all(np.isfinite(cov)):
        raise GbstatsError("covariance must be finite (a model with no variance estimate "
                           "cannot be ranked)")
    scale = max(float(np.max(np.abs(cov))), np.finfo(float).tiny)
    if not np.allclose(cov, cov.T, rtol=1e-8, atol=1e-12 * scale):
        raise GbstatsError("covariance must be symmetric: it is not (largest asymmetry "
                           f"{float(np.max(np.abs(cov - cov.T))):.3g})")
    smallest = float(np.linalg.eigvalsh((cov + cov.T) / 2).min())
    if smallest < -1e-8 * scale:
        raise GbstatsError(f"covariance must be positive semi-definite: its smallest "
                           f"eigenvalue is {smallest:.3g} (estimate it from one joint "
                           f"bootstrap of all models, `joint_covariance`)")
    if not (isinstance(level, (int, float)) and 0 < level < 1):
        raise GbstatsError(f"level must be a probability between 0 and 1, found {level!r}")
    return names, est, (cov + cov.T) / 2


def difference_sds(covariance: np.ndarray) -> np.ndarray:
    """sd_{j,k}: the standard deviation of est_j - est_k, as a p x p matrix."""
    var = np.diag(covariance)
    return np.sqrt(np.maximum(var[:, None] + var[None, :] - 2 * covariance, 0.0))


def _exact_mask(sds: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    largest = float(np.sqrt(max(np.max(np.diag(covariance)), 0.0)))
    return sds <= EXACT_SD_SHARE * max(largest, np.finfo(float).tiny)


def _statistics(est: np.ndarray, sds: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """T_{j,k} for every ordered pair; a difference known exactly is +/-inf, or 0 when
    the two estimates are equal (then nothing can separate them)."""
    diff = est[:, None] - est[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = diff / sds
    t[exact] = np.where(diff[exact] > 0, np.inf, np.where(diff[exact] < 0, -np.inf, 0.0))
    np.fill_diagonal(t, 0.0)
    return t


def _null_draws(covariance: np.ndarray, sds: np.ndarray, exact: np.ndarray,
                n_draws: int, seed: int) -> np.ndarray:
    """Standardised null differences Z_{j,k} = (e_j - e_k) / sd_{j,k}, e ~ N(0, Sigma),
    shape (n_draws, p, p); a pair known exactly gets -inf (it never sets a maximum)."""
    rng = np.random.default_rng(seed)
    p = covariance.shape[0]
    # eigh, not cholesky: a covariance of two identical models is singular
    values, vectors = np.linalg.eigh(covariance)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    e = rng.standard_normal((n_draws, p)) @ root.T
    with np.errstate(divide="ignore", invalid="ignore"):
        # float32: 50,000 draws of 20 models' 380 ordered pairs take 76 MB
        z = ((e[:, :, None] - e[:, None, :]) / sds[None]).astype(np.float32)
    z[:, exact] = -np.inf
    return z


def stepdown(t: np.ndarray, null: np.ndarray, family: np.ndarray, alpha: float) -> np.ndarray:
    """Romano-Wolf stepdown (MRSW Algorithm 3.1) over the ordered pairs where `family` is
    True: repeatedly take c as the 1 - alpha quantile of the largest null Z over the
    hypotheses not yet rejected, reject every one with T > c, until none is rejected.
    Returns the p x p mask of rejected H_{j,k} (theta_j <= theta_k)."""
    active = family.copy()
    rejected = np.zeros_like(family)
    while active.any():
        largest = null[:, active].max(axis=1)
        c = np.quantile(largest, 1 - alpha) if np.isfinite(largest).any() else np.inf
        # a difference known exactly (zero variance, T = +inf) is shown even where every
        # hypothesis left is exact and c is infinite too
        new = active & ((t > c) | np.isposinf(t))
        if not new.any():
            break
        rejected |= new
        active &= ~new
    return rejected


def _sets_from_rejections(rejected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = rejected.shape[0]
    below = rejected.sum(axis=1)   # N+_j: models shown below j
    above = rejected.sum(axis=0)   # N-_j: models shown above j
    return 1 + above, p - below


# Two estimates closer than this (relative to their size) are one tie: the same model
# computed along two paths (the embedded GGUF and its converted folder) agrees only to
# floating-point rounding, and a rank that orders rounding noise would mislead.
TIE_TOLERANCE = 1e-9


def point_ranks(estimates: np.ndarray) -> np.ndarray:
    """1 + the number of estimates larger beyond rounding (ties share the best rank)."""
    scale = np.maximum(np.abs(estimates[None, :]), np.abs(estimates[:, None]))
    larger = estimates[None, :] - estimates[:, None] > TIE_TOLERANCE * np.maximum(scale, 1.0)
    return 1 + larger.sum(axis=1)


def _rejections(est, cov, alpha, simultaneous, n_draws, seed) -> np.ndarray:
    p = len(est)
    sds = difference_sds(cov)
    exact = _exact_mask(sds, cov)
    np.fill_diagonal(exact, False)
    t = _statistics(est, sds, exact)
    null = _null_draws(cov, sds, exact, n_draws, seed)
    off_diagonal = ~np.eye(p, dtype=bool)
    if simultaneous:
        return stepdown(t, null, off_diagonal, alpha)
    rejected = np.zeros((p, p), dtype=bool)
    for j in range(p):
        family = np.zeros((p, p), dtype=bool)
        family[j, :] = family[:, j] = True
        family &= off_diagonal
        mine = stepdown(t, null, family, alpha)
        rejected[j, :] |= mine[j, :]
        rejected[:, j] |= mine[:, j]
    return rejected


def rank_confidence_sets(estimates: pd.Series, covariance: pd.DataFrame, *, level: float = 0.95,
                         simultaneous: bool = False, n_draws: int = NULL_DRAWS,
                         seed: int = NULL_SEED) -> pd.DataFrame:
    """Confidence sets for the ranks of `estimates` (rank 1 = the largest).

    `covariance` is the joint covariance of the estimates, indexed and headed by the
    same names. With `simultaneous=False` each set [rank_lo, rank_hi] covers its own
    model's true rank with probability >= `level` (MRSW sec. 3.1); with True all sets
    cover all true ranks at once (MRSW sec. 3.2). `rank` is the rank of the estimate
    itself. Normal approximation, stepdown included; the critical values come from
    `n_draws` simulated null draws with `seed`.

    Returns a DataFrame indexed like `estimates` with integer columns rank, rank_lo,
    rank_hi."""
    names, est, cov = _checked(estimates, covariance, level)
    rejected = _rejections(est, cov, 1 - level, simultaneous, int(n_draws), int(seed))
    lo, hi = _sets_from_rejections(rejected)
    return pd.DataFrame({"rank": point_ranks(est).astype(int), "rank_lo": lo.astype(int),
                         "rank_hi": hi.astype(int)}, index=names)


def best_set(estimates: pd.Series, covariance: pd.DataFrame, *, tau: int = 1,
             level: float = 0.95, n_draws: int = NULL_DRAWS, seed: int = NULL_SEED
             ) -> pd.Series:
    """MRSW's tau-best set (sec. 4.1) as a boolean Series: True for the models that may be
    among the tau best. With probability >= `level` it holds every model whose true rank
    is <= tau; tau = 1 is the set that contains the best model."""
    names, est, cov = _checked(estimates, covariance, level)
    if not (isinstance(tau, (int, np.integer)) and 1 <= tau <= len(names)):
        raise GbstatsError(f"tau must be a whole number from 1 to {len(names)}, found {tau!r}")
    rejected = _rejections(est, cov, 1 - level, True, int(n_draws), int(seed))
    shown_above = rejected.sum(axis=0)
    return pd.Series(shown_above <= tau - 1, index=names, name=f"in_{tau}_best")


def pairwise_differences(estimates: pd.Series, covariance: pd.DataFrame, *,
                         level: float = 0.95, delta: float | None = None,
                         n_draws: int = NULL_DRAWS, seed: int = NULL_SEED) -> pd.DataFrame:
    """Every pair of models: the difference (first minus second, in the order of
    `estimates`) with its SE, a *simultaneous* interval over all pairs (max-|t|, so that
    all intervals cover together with probability >= `level`), the two-sided p, the
    Holm-adjusted p over the pairs, and, with `delta`, the TOST p for "equivalent within
    +/-delta" (the larger of the two one-sided p's; Schuirmann 1987)."""
    names, est, cov = _checked(estimates, covariance, level)
    if delta is not None and not (np.isfinite(delta) and delta > 0):
        raise GbstatsError(f"delta must be a positive number, found {delta!r}")
    p = len(names)
    sds = difference_sds(cov)
    exact = _exact_mask(sds, cov)
    upper = np.triu_indices(p, k=1)
    null = _null_draws(cov, sds, exact | np.eye(p, dtype=bool), int(n_draws), int(seed))
    pair_null = np.abs(null[:, upper[0], upper[1]])
    pair_null[~np.isfinite(pair_null)] = 0.0
    c = float(np.quantile(pair_null.max(axis=1), level))
    diff = est[upper[0]] - est[upper[1]]
    se = sds[upper]
    known = exact[upper]
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(known, np.where(diff == 0, 0.0, np.sign(diff) * np.inf), diff / se)
    p_two = 2 * stats.norm.sf(np.abs(z))
    table = pd.DataFrame({"model_a": names[upper[0]], "model_b": names[upper[1]],
                          "difference": diff, "se": se, "ci_low": diff - c * se,
                          "ci_high": diff + c * se, "p_value": p_two,
                          "p_holm": holm(p_two)})
    table.attrs.update(critical_value=c, level=level, method="max-|t| simultaneous intervals "
                       "(normal approximation); Holm over the pairs")
    if delta is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            lower = stats.norm.sf(np.where(known, np.where(diff > -delta, np.inf, -np.inf),
                                           (diff + delta) / se))
            upper_p = stats.norm.sf(np.where(known, np.where(diff < delta, np.inf, -np.inf),
                                             (delta - diff) / se))
        table["delta"] = float(delta)
        table["tost_p"] = np.maximum(lower, upper_p)
    return table


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's (1979) step-down adjusted p-values, in the order given (statsmodels)."""
    from statsmodels.stats.multitest import multipletests

    return multipletests(np.asarray(p_values, dtype=float), method="holm")[1]


def joint_covariance(draws: pd.DataFrame) -> pd.DataFrame:
    """The covariance of the models' statistics from one joint bootstrap: `draws` has
    one row per bootstrap replicate and one column per model, every model computed on
    the same resampled participants and items. Replicates where a model's statistic
    is undefined are refused (dropping them would bias the covariance silently)."""
    if not isinstance(draws, pd.DataFrame) or draws.shape[1] < 2:
        raise GbstatsError("draws must be a DataFrame with one column per model (at least 2)")
    values = draws.apply(pd.to_numeric, errors="coerce")
    bad = values.columns[~np.isfinite(values.to_numpy(dtype=float)).all(axis=0)]
    if len(bad):
        counts = {str(c): int((~np.isfinite(values[c].to_numpy(dtype=float))).sum()) for c in bad}
        raise GbstatsError(f"the joint bootstrap has undefined replicates for "
                           f"{', '.join(f'{k} ({v} of {len(values)})' for k, v in counts.items())}; "
                           f"every model needs a value in every replicate")
    if len(values) < 2 * draws.shape[1]:
        raise GbstatsError(f"{len(values)} bootstrap replicates cannot estimate the covariance "
                           f"of {draws.shape[1]} models; use at least {2 * draws.shape[1]} "
                           f"(1,000 or more for intervals)")
    return values.cov()


# --------------------------------------------------------------------------
# many models against one group of people: one joint bootstrap, then the above
# --------------------------------------------------------------------------

@dataclass
class ModelRanking:
    """What `rank_models` finds: one row per model (`ranking`), one per pair
    (`differences`), the people's ceiling, every replicate (`draws`, for figures), and
    the settings a methods section needs (`settings`)."""

    ranking: pd.DataFrame
    differences: pd.DataFrame
    ceiling: dict
    draws: pd.DataFrame
    settings: dict

    def records(self) -> dict:
        """results.json's `model_ranking` and `model_differences` tables, with each rank
        set as [lo, hi]."""
        rows = json_ready(self.ranking.reset_index())
        for row in rows:
            for kind in ("marginal", "simultaneous"):
                row[f"rank_set_{kind}"] = [row.pop(f"rank_lo_{kind}"), row.pop(f"rank_hi_{kind}")]
        return {"model_ranking": rows, "model_differences": json_ready(self.differences),
                "model_ranking_ceiling": self.ceiling, "model_ranking_settings": self.settings}


def _plain(value):
    """A JSON-ready Python scalar for a numpy or pandas one."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return value if isinstance(value, str) else str(value)


def json_ready(table: pd.DataFrame) -> list[dict]:
    return [{k: _plain(v) for k, v in record.items()}
            for record in table.to_dict(orient="records")]


def _item_weights(n_items: int, clusters: np.ndarray | None, n_rows: int,
                  rng: np.random.Generator) -> np.ndarray:
    """(n_rows, n_items) bootstrap counts of the items: each item drawn on its own, or,
    with `clusters` (one code per item), the clusters drawn and every item of a drawn
    cluster counted as often as its cluster (the unit the items cluster in: first names,
    stories)."""
    from gbstats.alignment.reliability import multinomial_weights

    if clusters is None:
        return multinomial_weights(n_items, n_rows, rng)
    codes, index = np.unique(clusters, return_inverse=True)
    return multinomial_weights(len(codes), n_rows, rng)[:, index]


def rank_models(item_scores: pd.DataFrame, trials: pd.DataFrame, *, models: Sequence[str],
                rating: str = "rating", participant: str = "participant",
                item_keys: Sequence[str] = ("item",), cluster: str | None = None,
                n_boot: int = 1000, seed: int = 2023, level: float = 0.95,
                delta: float = 0.10, n_splits: int = 20) -> ModelRanking:
    """Rank many models by their correlation with people's item means, with honest
    uncertainty about the comparison.

    `item_scores` has one row per item (keyed by `item_keys`) and one column per model
    in `models`; `trials` one row per response (`participant`, the item keys, `rating`).
    The statistic is each model's Pearson correlation over items with the people's item
    means. One seeded two-way bootstrap (participants x items; x the item clusters
    named by the item_scores column `cluster`, where items cluster in first names or
    stories) is drawn once and applied to every model, so their estimates keep their
    covariance. From it: each model's SE and simultaneous interval, the pairwise
    differences (`pairwise_differences`, TOST within +/-`delta`), the marginal and
    simultaneous rank sets (`rank_confidence_sets`) and the set holding the best model
    (`best_set`). The people's ceiling is sqrt of the split-half (Spearman-Brown)
    reliability of their item means, the largest correlation a perfect model could
    reach with means this noisy, from the same replicates; each model's estimate is
    also given as a share of it."""
    from gbstats.alignment.reliability import (bc_interval, multinomial_weights, random_halves,
                                               rating_matrices, reliability_rows,
                                               weighted_correlation, weighted_item_means)

    models = list(models)
    if len(models) < 2:
        raise GbstatsError(f"ranking needs at least 2 models, found {len(models)}: "
                           f"{', '.join(models) or 'none'}")
    if len(set(models)) != len(models):
        raise GbstatsError("each model may be named once; repeated: "
                           + ", ".join(sorted({m for m in models if models.count(m) > 1})))
    missing = [m for m in models if m not in item_scores.columns]
    if missing:
        raise GbstatsError(f"item_scores has no column for model(s) {', '.join(missing)}; "
                           f"its columns are {', '.join(map(str, item_scores.columns))}")
    if not (isinstance(n_boot, (int, np.integer)) and n_boot >= 200):
        raise GbstatsError(f"n_boot must be a whole number >= 200 for a covariance of "
                           f"{len(models)} models and their rank sets, found {n_boot!r}")
    frame = trials.assign(_all="people")
    x_first, groups = rating_matrices(item_scores, frame, group="_all", score=models[0],
                                      rating=rating, item_keys=item_keys,
                                      participant=participant)
    people = groups[0]
    scores = np.column_stack([x_first] + [
        pd.to_numeric(item_scores[m], errors="coerce").to_numpy(dtype=float) for m in models[1:]])
    bad = [m for m, col in zip(models, scores.T) if not np.isfinite(col).all()]
    if bad:
        raise GbstatsError(f"item_scores has missing or non-numeric scores for model(s) "
                           f"{', '.join(bad)}; every model needs a score for every item")
    clusters = None
    if cluster is not None:
        if cluster not in item_scores.columns:
            raise GbstatsError(f"item_scores has no column {cluster!r} naming the items' "
                               f"clusters")
        clusters = item_scores[cluster].astype(str).to_numpy()
        if len(np.unique(clusters)) < 5:
            raise GbstatsError(f"{len(np.unique(clusters))} clusters in {cluster!r} are too "
                               f"few to resample; a bootstrap over clusters needs at least 5")
    rng = np.random.default_rng(seed)
    n_items, n_people = scores.shape[0], people.n_participants
    unit_weights = np.ones((1, n_people))
    means = weighted_item_means(unit_weights, people.sums, people.counts)
    point = np.array([weighted_correlation(s, means, np.ones(n_items))[0] for s in scores.T])
    halves = random_halves(n_people, n_splits, rng)
    ceiling_point = float(np.sqrt(max(reliability_rows(unit_weights, np.ones(n_items),
                                                       people.sums, people.counts, halves)[0],
                                      0.0)))
    draws = np.empty((n_boot, len(models)))
    ceiling_draws = np.empty(n_boot)
    chunk = 500
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        iw = _item_weights(n_items, clusters, stop - start, rng)
        pw = multinomial_weights(n_people, stop - start, rng)
        boot_means = weighted_item_means(pw, people.sums, people.counts)
        for m in range(len(models)):
            draws[start:stop, m] = weighted_correlation(scores[:, m], boot_means, iw)
        rel = reliability_rows(pw, iw, people.sums, people.counts, halves[:2])
        ceiling_draws[start:stop] = np.sqrt(np.clip(rel, 0.0, None))
    draws_frame = pd.DataFrame(draws, columns=models)
    covariance = joint_covariance(draws_frame)
    estimates = pd.Series(point, index=models)
    marginal = rank_confidence_sets(estimates, covariance, level=level)
    simultaneous = rank_confidence_sets(estimates, covariance, level=level, simultaneous=True)
    best = best_set(estimates, covariance, level=level)
    se = np.sqrt(np.diag(covariance.to_numpy()))
    c = _simultaneous_c(covariance.to_numpy(), level)
    share = point / ceiling_point if ceiling_point > 0 else np.full(len(models), np.nan)
    ranking = pd.DataFrame({
        "estimate": point, "se": se, "ci_low": point - c * se, "ci_high": point + c * se,
        "share_of_ceiling": share, "rank": marginal["rank"].to_numpy(),
        "rank_lo_marginal": marginal["rank_lo"].to_numpy(),
        "rank_hi_marginal": marginal["rank_hi"].to_numpy(),
        "rank_lo_simultaneous": simultaneous["rank_lo"].to_numpy(),
        "rank_hi_simultaneous": simultaneous["rank_hi"].to_numpy(),
        "in_best_set": best.to_numpy()}, index=pd.Index(models, name="model"))
    differences = pairwise_differences(estimates, covariance, level=level, delta=delta)
    differences["equivalent"] = differences["tost_p"] < 1 - level
    differences["differs"] = differences["p_holm"] < 1 - level
    # bias-corrected: resampled people and items pull the split-half reliability down
    lo, hi, _ = bc_interval(ceiling_point, ceiling_draws, level)
    ceiling = {"estimate": ceiling_point, "ci_low": float(lo), "ci_high": float(hi),
               "what": "sqrt of the people's split-half (Spearman-Brown) reliability of "
                       "their item means, averaged over random halves; bias-corrected "
                       "bootstrap interval"}
    settings = {"statistic": "Pearson correlation of a model's score with people's item means",
                "n_boot": int(n_boot), "seed": int(seed), "level": level, "delta": delta,
                "resampled": f"participants x {'clusters of items (' + cluster + ')' if cluster else 'items'}",
                "n_items": int(n_items), "n_participants": int(n_people),
                "n_clusters": int(len(np.unique(clusters))) if clusters is not None else None,
                "intervals": "estimate +/- c x bootstrap SE, c the max-|t| critical value over "
                             "the models (simultaneous)",
                "rank_sets": "Mogstad, Romano, Shaikh & Wilhelm (2023), stepdown, normal "
                             "approximation; the best set is their tau-best set with tau = 1",
                "pairwise": "differences with max-|t| simultaneous intervals, Holm over the "
                            "pairs, TOST within +/- delta"}
    return ModelRanking(ranking, differences, ceiling, draws_frame, settings)


def _simultaneous_c(covariance: np.ndarray, level: float, n_draws: int = NULL_DRAWS,
                    seed: int = NULL_SEED) -> float:
    """The max-|t| critical value over the models' own estimates."""
    sd = np.sqrt(np.diag(covariance))
    values, vectors = np.linalg.eigh(covariance)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    e = np.random.default_rng(seed).standard_normal((n_draws, len(sd))) @ root.T
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(np.where(sd > 0, e / sd, 0.0))
    return float(np.quantile(t.max(axis=1), level))
