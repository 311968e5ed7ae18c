"""The QA analyses as pure functions over DataFrames.

Human side: which trials count (pro/anti, non-coreference answers ignored where
the paper ignores them), accuracy per dataset x alpha x condition, Delta_QA,
and the logistic mixed model `correct ~ stereotype * alpha + (1|participant) +
(1|sentence)` with lme4 (alpha as a factor and as a number) and its Bayesian
twin. Model side: the coreference systems' accuracy on the sentences people
saw, and where each system sits on the human time-pressure curve.

Coding used throughout: `stereotype` is a factor with levels anti (reference),
pro, so its coefficient is the log-odds advantage of pro-stereotypical trials,
i.e. the bias. As a factor, `alpha` has levels 0.75 (reference: least time
pressure), 0.5, 0.25.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError, GbstatsError
from gbstats.exclusions import ExclusionLog
from gbstats.mixed.posterior import posterior_draws

DATASETS = ("wino", "BUG")
ALPHAS = (0.25, 0.5, 0.75)
CONDITIONS = ("pro", "anti")
STAGE = "cognitive_bias.qa"
GLMM_FORMULA = "correct ~ stereotype * alpha + (1|participant) + (1|sentence)"
ALPHA_FACTOR_LEVELS = ["0.75", "0.5", "0.25"]
STEREOTYPE_LEVELS = ["anti", "pro"]
INTERACTION_TERM = "stereotypepro:alpha"
# Where the paper ignores answers of the binary gender opposite to the pronoun's.
# The authors' table script (analysis_scripts/QA/generate_human_results_table.py)
# does it for wino only; their published table (experiment_results/processed/
# combined_table.md) is computed that way. See the study's report for why.
DEFAULT_IGNORE_NON_COREFERENCE = ("wino",)
ACCURACY_COLUMNS = ["dataset", "source", "alpha", "condition", "n_correct", "n_total",
                    "accuracy", "n_ignored"]


# --------------------------------------------------------------------------- trials

def drop_repeated_responses(qa: pd.DataFrame, log: ExclusionLog) -> pd.DataFrame:
    """Keep the first response per session position (`--drop-repeated-responses`).

    Not the published rule: the authors counted every recorded response. The
    loader marks the later responses (`repeated_response`); those that repeat
    the first answer and those that change it are counted apart.
    """
    key = ["dataset", "session", "position"]
    first_answer = qa.groupby(key)["answer"].transform("first")
    out = qa
    for dataset in DATASETS:
        repeat = (out["dataset"] == dataset) & out["repeated_response"]
        same = repeat & (out["answer"] == first_answer.loc[out.index])
        out = log.drop(out, same, f"{dataset} QA: response recorded twice (same session and "
                                  "position, same answer); first kept (--drop-repeated-responses)",
                       unit="trials", stage=STAGE)
        changed = (out["dataset"] == dataset) & out["repeated_response"]
        out = log.drop(out, changed, f"{dataset} QA: second, different answer at the same "
                                     "session position; first kept (--drop-repeated-responses)",
                       unit="trials", stage=STAGE)
    return out.reset_index(drop=True)


def repeated_responses_effect(every_response: pd.DataFrame,
                              first_only: pd.DataFrame) -> pd.DataFrame:
    """Per human cell: the published counts (every response), the counts with one response
    per session position, how many trials that removed, and the change in points."""
    key = ["dataset", "alpha", "condition"]
    both = every_response[key + ["n_correct", "n_total", "accuracy", "n_ignored"]].merge(
        first_only[key + ["n_correct", "n_total", "accuracy", "n_ignored"]], on=key,
        suffixes=("_published", "_deduplicated"), validate="one_to_one")
    removed = ((both["n_total_published"] + both["n_ignored_published"])
               - (both["n_total_deduplicated"] + both["n_ignored_deduplicated"]))
    return both.assign(n_removed=removed.astype(int),
                       change_points=100 * (both["accuracy_deduplicated"]
                                            - both["accuracy_published"]))


def critical_trials(qa: pd.DataFrame, log: ExclusionLog) -> pd.DataFrame:
    """The pro/anti QA trials; fillers and neutral items are counted and left out."""
    out = qa
    for dataset in DATASETS:
        in_dataset = out["dataset"] == dataset
        out = log.select(out, in_dataset & (out["condition"] == "filler"),
                         f"{dataset} QA: filler question (not a coreference item)",
                         unit="trials", stage=STAGE)
        in_dataset = out["dataset"] == dataset
        out = log.select(out, in_dataset & (out["condition"] == "neutral"),
                         f"{dataset} QA: neutral item (no stereotype condition)",
                         unit="trials", stage=STAGE)
    unknown = ~out["condition"].isin(CONDITIONS)
    if unknown.any():
        raise DataValidationError("unexpected QA condition", source="cog_gb_eval2023.qa",
                                  column="condition", expected="pro, anti, neutral or filler",
                                  found=repr(out.loc[unknown, "condition"].iloc[0]))
    return out.reset_index(drop=True)


def mark_ignored(trials: pd.DataFrame, ignore_in=DEFAULT_IGNORE_NON_COREFERENCE) -> pd.DataFrame:
    """Add `ignored`: a non-coreference answer in a dataset where the paper ignores them."""
    unknown = sorted(set(ignore_in) - set(DATASETS))
    if unknown:
        raise GbstatsError(f"ignore_in: unknown dataset(s) {unknown}; expected some of {DATASETS}")
    return trials.assign(ignored=trials["non_coreference"] & trials["dataset"].isin(ignore_in))


def drop_ignored(trials: pd.DataFrame, log: ExclusionLog) -> pd.DataFrame:
    """Trials that enter the accuracies and the GLMM; ignored answers counted per dataset."""
    out = trials
    for dataset in DATASETS:
        mask = (out["dataset"] == dataset) & out["ignored"]
        if mask.any():
            out = log.drop(out, mask, f"{dataset} QA: non-coreference answer (the binary gender "
                                      "opposite to the pronoun's), ignored as in the paper",
                           unit="trials", stage=STAGE)
    return out.reset_index(drop=True)


def non_coreference_summary(trials: pd.DataFrame) -> pd.DataFrame:
    """Per dataset: pro/anti trials, wrong answers, how many of those are non-coreference
    answers, and whether they were ignored: the evidence behind the choice per dataset."""
    rows = []
    for dataset, g in trials.groupby("dataset", sort=False):
        wrong = ~g["is_correct"]
        rows.append({"dataset": dataset, "n_trials": int(len(g)), "n_wrong": int(wrong.sum()),
                     "n_non_coreference": int(g["non_coreference"].sum()),
                     "share_of_wrong": float(g["non_coreference"].sum() / wrong.sum())
                     if wrong.any() else np.nan,
                     "ignored": bool(g["ignored"].any())})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- accuracy

def human_accuracy(trials: pd.DataFrame) -> pd.DataFrame:
    """Per dataset x alpha x condition: correct / analysed trials, and ignored answers.

    `trials` still holds the ignored answers (column `ignored`), so they are
    counted here and left out of n_total.
    """
    rows = []
    for (dataset, alpha, condition), g in trials.groupby(["dataset", "alpha", "condition"]):
        kept = g.loc[~g["ignored"], "is_correct"]
        rows.append({"dataset": dataset, "source": "human", "alpha": float(alpha),
                     "condition": condition, "n_correct": int(kept.sum()),
                     "n_total": int(len(kept)),
                     "accuracy": kept.mean() if len(kept) else np.nan,
                     "n_ignored": int(g["ignored"].sum())})
    return order_accuracy(pd.DataFrame(rows, columns=ACCURACY_COLUMNS))


def human_sentences(trials: pd.DataFrame) -> pd.DataFrame:
    """dataset, sentence_id, condition of every sentence people answered a question about."""
    sentences = trials[["dataset", "sentence_id", "condition"]].drop_duplicates()
    clash = sentences.duplicated(["dataset", "sentence_id"], keep=False)
    if clash.any():
        first = sentences.loc[clash].iloc[0]
        raise DataValidationError("one sentence in two stereotype conditions",
                                  source="cog_gb_eval2023.qa", column="condition",
                                  expected="one condition per sentence",
                                  found=f"{first['dataset']} sentence {first['sentence_id']}")
    return sentences.reset_index(drop=True)


def on_human_sentences(links: pd.DataFrame, sentences: pd.DataFrame,
                       log: ExclusionLog, experiment: str = "QA") -> pd.DataFrame:
    """The model rows of the sentences people saw in `experiment` ("the same sentences"),
    conditions checked."""
    joined = links.merge(sentences, on=["dataset", "sentence_id"], how="left",
                         suffixes=("", "_human"), validate="many_to_one")
    if len(joined) != len(links):
        raise GbstatsError("internal: joining model links to human sentences changed the row count")
    for model, dataset in joined[["model", "dataset"]].drop_duplicates().itertuples(index=False):
        mask = (joined["model"] == model) & (joined["dataset"] == dataset) \
            & joined["condition_human"].isna()
        joined = log.drop(joined, mask, f"{model} {dataset}: sentence no participant saw in "
                                        f"the {experiment} experiment (left out of the "
                                        f"model-vs-human {experiment} tables)",
                          unit="sentences", stage="cognitive_bias.models")
    disagree = joined["condition"] != joined["condition_human"]
    if disagree.any():
        row = joined.loc[disagree].iloc[0]
        raise DataValidationError("model pool and QA disagree on a sentence's condition",
                                  source="cog_gb_eval2023.sentence_pool", column="condition",
                                  expected=f"{row['condition_human']!r} (QA)",
                                  found=f"{row['condition']!r} for {row['dataset']} sentence "
                                        f"{row['sentence_id']}")
    return joined.drop(columns=["condition_human"]).reset_index(drop=True)


def system_accuracy(links: pd.DataFrame, *, source_column: str = "model",
                    correct_column: str = "correct") -> pd.DataFrame:
    """Per source x dataset x condition accuracy of a system (one row per sentence)."""
    rows = []
    for (source, dataset, condition), g in links.groupby([source_column, "dataset", "condition"]):
        rows.append({"dataset": dataset, "source": source, "alpha": np.nan,
                     "condition": condition, "n_correct": int(g[correct_column].sum()),
                     "n_total": int(len(g)), "accuracy": g[correct_column].mean(),
                     "n_ignored": 0})
    return order_accuracy(pd.DataFrame(rows, columns=ACCURACY_COLUMNS))


def order_accuracy(table: pd.DataFrame) -> pd.DataFrame:
    """Datasets as in the paper (wino, BUG), humans first by alpha, pro before anti."""
    key = pd.DataFrame({
        "d": table["dataset"].map({d: i for i, d in enumerate(DATASETS)}),
        "h": (table["source"] != "human").astype(int),
        "s": table["source"], "a": table["alpha"].fillna(-1),
        "c": table["condition"].map({c: i for i, c in enumerate(CONDITIONS)})})
    order = key.sort_values(["d", "h", "s", "a", "c"], kind="stable").index
    return table.loc[order].reset_index(drop=True)


def qa_delta(accuracy: pd.DataFrame) -> pd.DataFrame:
    """Delta_QA = accuracy(pro) - accuracy(anti) per dataset x source (x alpha for humans)."""
    wide = accuracy.assign(alpha=accuracy["alpha"].fillna(-1)).pivot_table(
        index=["dataset", "source", "alpha"], columns="condition",
        values=["accuracy", "n_total"], aggfunc="first")
    out = pd.DataFrame({
        "accuracy_pro": wide[("accuracy", "pro")], "accuracy_anti": wide[("accuracy", "anti")],
        "n_pro": wide[("n_total", "pro")].astype(int),
        "n_anti": wide[("n_total", "anti")].astype(int)}).reset_index()
    out["delta"] = out["accuracy_pro"] - out["accuracy_anti"]
    out["alpha"] = out["alpha"].where(out["alpha"] >= 0)
    out["condition"] = "pro"   # only for the shared ordering helper
    out = order_accuracy(out).drop(columns="condition")
    return out[["dataset", "source", "alpha", "accuracy_pro", "accuracy_anti", "delta",
                "n_pro", "n_anti"]]


# --------------------------------------------------------------------------- GLMM

def glmm_rows(trials: pd.DataFrame) -> pd.DataFrame:
    """Analysed trials in the GLMM's columns; alpha numeric (see `alpha_as_factor`)."""
    return pd.DataFrame({
        "dataset": trials["dataset"].to_numpy(),
        "correct": trials["is_correct"].astype(int).to_numpy(),
        "stereotype": pd.Categorical(trials["condition"], categories=STEREOTYPE_LEVELS),
        "alpha": trials["alpha"].astype(float).to_numpy(),
        "participant": trials["participant"].astype(str).to_numpy(),
        # sentence ids are per dataset; models are fitted per dataset
        "sentence": trials["sentence_id"].astype(str).to_numpy(),
    })


def alpha_as_factor(rows: pd.DataFrame) -> pd.DataFrame:
    """The same rows with alpha a factor whose reference level is 0.75."""
    labels = rows["alpha"].map(lambda a: f"{a:g}")
    return rows.assign(alpha=pd.Categorical(labels, categories=ALPHA_FACTOR_LEVELS))


def fit_stereotype_alpha(rows: pd.DataFrame, *, lme4: bool, bayes: bool, draws: int,
                         seed: int, optimizer: str | None = None, use_cache: bool = False,
                         cache_dir=None, max_draws: int | None = None) -> dict:
    """{label: FitResult} for one dataset's rows: lme4 with alpha as factor and as number,
    and the Bayesian twin of the numeric model (refitted up to `max_draws` draws per chain).

    With `use_cache` every fit is reused from the fit cache when unchanged
    (gbstats.mixed.fit_cache). The factor fit comes with its marginal means
    (`factor_fit_with_means`, in fit_stats["marginal_means"]): emmeans needs the
    live lme4 model, which neither the cache nor the clean R process hands back,
    so both are made in one call and kept together.
    """
    from gbstats.mixed.fit_cache import cached_call, cached_fit
    from gbstats.mixed.fitting import BAYES_BACKEND, fit_bayes_twin, fit_frequentist

    cache = {"use_cache": use_cache, "cache_dir": cache_dir}
    fits = {}
    if lme4:
        (factor_fit, means), reused = cached_call(factor_fit_in_clean_process, rows,
                                                  optimizer=optimizer, computed_by_r=True,
                                                  **cache)
        factor_fit.fit_stats.update(marginal_means=means, reused_from_cache=reused)
        fits["lme4, alpha factor"] = factor_fit
        fits["lme4, alpha numeric"] = cached_fit(fit_frequentist, GLMM_FORMULA, rows,
                                                 backend="lme4", family="binomial",
                                                 optimizer=optimizer, **cache)
    if bayes:
        fits[f"{BAYES_BACKEND}, alpha numeric"] = cached_fit(
            fit_bayes_twin, GLMM_FORMULA, rows, family="binomial", draws=draws, seed=seed,
            max_draws=max_draws, **cache)
    return fits


# emmeans' question of the factor fit: P(correct) per stereotype at each alpha, and pro - anti
MARGINAL_QUESTION = {"specs": "stereotype", "by": "alpha", "scale": "response",
                     "adjust": "none", "reverse": True}


def factor_fit_with_means(rows: pd.DataFrame, optimizer: str | None = None):
    """(the GLMM with alpha as a factor, its marginal means or None when it did not
    converge), the fit without its live R model (picklable: it can come back from the
    clean R process and go into the fit cache)."""
    import dataclasses

    from gbstats.mixed.fitting import fit_frequentist
    from gbstats.mixed.marginal import marginal_means

    fit = fit_frequentist(GLMM_FORMULA, alpha_as_factor(rows), "lme4", family="binomial",
                          optimizer=optimizer)
    means = marginal_means(fit, **MARGINAL_QUESTION) if fit_converged(fit) else None
    return dataclasses.replace(fit, handle=None), means


def factor_fit_in_clean_process(rows: pd.DataFrame, optimizer: str | None = None):
    """`factor_fit_with_means` in the clean R process inside a study's fit step (its
    numbers then depend on its inputs only, gbstats.mixed.clean_process), else here."""
    from gbstats.mixed.clean_process import r_fit

    return r_fit(factor_fit_with_means, rows, optimizer=optimizer)


def prob_effect_grows_under_pressure(interaction_draws: np.ndarray) -> float:
    """P(beta[stereotypepro:alpha] < 0 | data).

    The stereotype effect (log-odds of a correct answer, pro minus anti) at
    alpha is beta[stereotypepro] + beta[stereotypepro:alpha] * alpha, so it grows
    as alpha shrinks (more time pressure) exactly when the interaction is negative.
    """
    draws = np.asarray(interaction_draws, dtype=float)
    if draws.size == 0:
        raise GbstatsError("no posterior draws")
    return float(np.mean(draws < 0))


CONVERGENCE_TROUBLE = ("failed to converge", "unidentifiable", "R-hat", "ESS", "divergen")


def fit_converged(result) -> bool:
    """False when lme4 or the sampler warned that the numbers cannot be trusted.

    lme4's default glmer optimizer can stop at a point where the Hessian is
    degenerate (all SEs equal and tiny); such a fit is kept in the table but
    flagged, never silently trusted.
    """
    return not any(marker in str(w) for w in result.warnings for marker in CONVERGENCE_TROUBLE)


def glmm_table(fits_by_dataset: dict) -> pd.DataFrame:
    """Stack {dataset: {label: FitResult}} into dataset, fit, term, estimate, ... rows."""
    columns = ["dataset", "fit", "term", "estimate", "se", "ci_low", "ci_high", "stat",
               "p_value", "nobs", "converged"]
    rows = []
    for dataset, fits in fits_by_dataset.items():
        for label, result in fits.items():
            coefs = result.coefs.assign(dataset=dataset, fit=label,
                                        nobs=result.fit_stats.get("nobs", np.nan),
                                        converged=fit_converged(result))
            rows.append(coefs[columns])
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=columns)


def posterior_summary(fits_by_dataset: dict) -> pd.DataFrame:
    """Per dataset: the interaction's posterior and P(stereotype effect grows as alpha shrinks)."""
    rows = []
    for dataset, fits in fits_by_dataset.items():
        result = fits.get("pymc, alpha numeric")
        if result is None:
            continue
        draws = posterior_draws(result.idata, "stereotype:alpha")
        rows.append({"dataset": dataset, "parameter": INTERACTION_TERM,
                     "posterior_mean": draws.mean(),
                     "ci_low": np.quantile(draws, 0.025), "ci_high": np.quantile(draws, 0.975),
                     "p_effect_grows_as_alpha_shrinks": prob_effect_grows_under_pressure(draws),
                     "n_draws": int(draws.size)})
    return pd.DataFrame(rows, columns=["dataset", "parameter", "posterior_mean", "ci_low",
                                       "ci_high", "p_effect_grows_as_alpha_shrinks", "n_draws"])


# --------------------------------------------------------------------------- human scale

def interpolated_alpha(alphas, accuracies, target: float) -> tuple[float, str]:
    """The alpha at which the piecewise-linear human curve reaches `target`.

    Returns (alpha, "within") at the first crossing from the smallest alpha
    up; (nan, "below") if `target` is under the curve at every alpha (the
    system is worse than people under the strongest time pressure), (nan,
    "above") if it is over the curve everywhere.
    """
    a = np.asarray(alphas, dtype=float)
    y = np.asarray(accuracies, dtype=float)
    order = np.argsort(a)
    a, y = a[order], y[order]
    if np.isnan(target) or np.isnan(y).any() or len(a) < 2:
        return float("nan"), "undefined"
    if target < y.min():
        return float("nan"), "below"
    if target > y.max():
        return float("nan"), "above"
    for i in range(len(a) - 1):
        lo, hi = y[i], y[i + 1]
        if min(lo, hi) <= target <= max(lo, hi):
            if hi == lo:
                return float(a[i]), "within"
            return float(a[i] + (target - lo) / (hi - lo) * (a[i + 1] - a[i])), "within"
    return float(a[np.argmin(np.abs(y - target))]), "within"   # target equals a lone point


def human_scale_alphas(accuracy: pd.DataFrame) -> pd.DataFrame:
    """For each non-human source, dataset and condition: the alpha of equal human accuracy."""
    humans = accuracy[accuracy["source"] == "human"]
    systems = accuracy[accuracy["source"] != "human"]
    rows = []
    for row in systems.itertuples(index=False):
        curve = humans[(humans["dataset"] == row.dataset) & (humans["condition"] == row.condition)]
        alpha, where = interpolated_alpha(curve["alpha"], curve["accuracy"], row.accuracy)
        rows.append({"dataset": row.dataset, "source": row.source, "condition": row.condition,
                     "accuracy": row.accuracy, "equivalent_alpha": alpha, "position": where})
    return pd.DataFrame(rows, columns=["dataset", "source", "condition", "accuracy",
                                       "equivalent_alpha", "position"])


# --------------------------------------------------------------------------- marginal means

MARGINAL_FIT = "lme4, alpha factor"


def marginal_accuracy(glmms: dict) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Per dataset, from the GLMM with alpha as a factor: the model's marginal
    accuracy (probability of a correct answer, random effects at zero) per
    stereotype x alpha, and the pro - anti difference in that probability at
    each alpha (emmeans on the response scale: ``regrid``, then
    ``revpairwise``), with 95% intervals. Returns (means, contrasts, notes);
    a dataset whose fit is missing or did not converge is left out and named
    in the notes."""
    from gbstats.mixed.marginal import marginal_means

    means, contrasts, notes = [], [], []
    for dataset, fits in glmms.items():
        result = fits.get(MARGINAL_FIT)
        if result is None:
            continue
        if not fit_converged(result):
            notes.append(f"{dataset}: the {MARGINAL_FIT} GLMM did not converge; no marginal means")
            continue
        mm = result.fit_stats.get("marginal_means")
        if mm is None:  # a fit made elsewhere, with its live R model
            mm = marginal_means(result, **MARGINAL_QUESTION)
        means.append(mm.means.assign(dataset=dataset))
        contrasts.append(mm.contrasts.assign(dataset=dataset))
        notes = list(dict.fromkeys(notes + mm.notes))
    columns = ["dataset", "alpha", "stereotype", "estimate", "se", "ci_low", "ci_high"]
    contrast_columns = ["dataset", "alpha", "contrast", "estimate", "se", "ci_low", "ci_high",
                        "stat", "p_value"]
    return (pd.concat(means, ignore_index=True)[columns] if means else pd.DataFrame(columns=columns),
            pd.concat(contrasts, ignore_index=True)[contrast_columns] if contrasts
            else pd.DataFrame(columns=contrast_columns), notes)


def coding_note(glmms: dict) -> str:
    """How the GLMMs code their factors (gbstats.mixed.lmm.fit_notes), for the report."""
    from gbstats.mixed.lmm import fit_notes

    for fits in glmms.values():
        for result in fits.values():
            return fit_notes(result)[0]
    return ""
