"""Alignment as a mixed model: does the model's score predict one group's ratings more?

The statistician's version of "which group does the model resemble?" fits
every rating at once:

    rating ~ score_z * group + (1 + score_z | participant) + (1 | item) + (1 | item_group)

- score_z is the model's item score standardised over the items (mean 0, SD 1),
  so a slope is "rating points per SD of the model score";
- the score_z slope is the reference group's alignment, and each
  `score_z:group<level>` term is how much steeper (or shallower) another
  group's slope is: the alignment difference, tested with Satterthwaite's t
  (lme4 via lmerTest) or given a posterior interval (PyMC);
- people differ in their overall level and in how much they follow the
  model's dimension: (1 + score_z | participant);
- items differ, and the groups rated the same items: (1 | item);
- each group also has its own item deviations (groups do not merely differ
  in slope): (1 | item_group), item_group = item x group. Without it the
  model treats a group's item-specific deviations as residual noise averaged
  over that group's raters, so the standard error of a `score_z:group` term
  is too small and the test rejects far too often when groups truly differ
  item by item. benchmarks/alignment_calibration.py measures both versions
  under the null (fpr_mixed_model with this term; fpr_mixed_model_item_only
  without); the issue's formula without the term is available with
  `item_by_group=False`.

Why this does not confound size with alignment: the slopes are estimated
from the individual ratings; a group with fewer people has a wider interval
for its slope, not a flatter slope. (A raw correlation of item means is
flatter for smaller groups: see gbstats.alignment.reliability.)

The slopes are in rating units, not correlations: a group whose ratings vary
more overall can have a steeper slope at the same correlation. Read them as
"how strongly does the group's rating follow the model's score", and use
`gbstats.alignment.reliability.group_reliability` for correlations.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from gbstats.alignment.ratings import prepare_rating_frame
from gbstats.errors import DataValidationError

SCORE_Z = "score_z"
ALIGNMENT_LMM_COLUMNS = ["backend", "term", "estimate", "se", "ci_low", "ci_high", "df",
                         "p_value"]


def alignment_formula(item_by_group: bool = True) -> str:
    """The mixed model's formula on the columns `alignment_lmm_rows` makes."""
    base = ("rating ~ score_z * group_level + (1 + score_z | participant_id) + (1 | item_id)")
    return base + (" + (1 | item_group)" if item_by_group else "")


def alignment_lmm_rows(item_scores: pd.DataFrame, trials: pd.DataFrame, *, group: str,
                       score: str, rating: str = "rating", item_keys: Sequence[str] = ("item",),
                       participant: str = "participant",
                       group_order: Sequence | None = None) -> pd.DataFrame:
    """The long table the alignment mixed model is fitted to.

    One row per trial with: rating, score_z (the item's score standardised
    over the scored items that were rated), group_level (a Categorical in
    `group_order`, else the group column's categorical order, else sorted;
    the first level is the reference), participant_id, item_id and
    item_group. Validation as in `gbstats.alignment.groups.group_correlations`.
    """
    frame, scores = prepare_rating_frame(item_scores, trials, participant=participant,
                                          group=group, score=score, rating=rating,
                                          item_keys=item_keys)
    rated = np.zeros(len(scores), dtype=bool)
    rated[frame["_item"].to_numpy()] = True
    values = scores["_score"].to_numpy()[rated]
    sd = values.std(ddof=1) if values.size > 1 else 0.0
    if not sd > 0:
        raise DataValidationError("the model score does not vary over the rated items, so it "
                                  "cannot be standardised", source="item_scores", column=score,
                                  expected="at least two different scores",
                                  found=f"{values.size} rated item(s), SD {sd:g}")
    z = (scores["_score"].to_numpy() - values.mean()) / sd
    present = list(dict.fromkeys(frame[group]))
    if group_order is not None:
        unknown = [g for g in present if g not in list(group_order)]
        if unknown:
            raise DataValidationError("a group is missing from group_order", source="trials",
                                      column=group, expected=f"one of {list(group_order)}",
                                      found=repr(unknown[0]))
        levels = [g for g in group_order if g in present]
    elif isinstance(frame[group].dtype, pd.CategoricalDtype):
        levels = [g for g in frame[group].cat.categories if g in present]
    else:
        levels = sorted(present, key=lambda v: (str(type(v)), v))
    if len(levels) < 2:
        raise DataValidationError("the alignment mixed model needs at least two groups",
                                  source="trials", column=group, expected=">= 2 groups",
                                  found=f"{levels}")
    item_id = frame["_item"].astype(str).to_numpy()
    group_text = frame[group].astype(str).to_numpy()
    return pd.DataFrame({
        "rating": frame["_rating"].to_numpy(),
        SCORE_Z: z[frame["_item"].to_numpy()],
        "group_level": pd.Categorical(frame[group].astype(str),
                                      categories=[str(g) for g in levels]),
        "participant_id": frame[participant].astype(str).to_numpy(),
        "item_id": item_id,
        "item_group": np.char.add(np.char.add(item_id.astype(str), "|"), group_text.astype(str)),
    })


def alignment_terms(table: pd.DataFrame) -> pd.Series:
    """True for the rows whose term is an alignment difference (score_z:group...)."""
    return table["term"].astype(str).str.startswith(f"{SCORE_Z}:group[")


def fit_alignment_lmm(item_scores: pd.DataFrame, trials: pd.DataFrame, *, group: str,
                      score: str, rating: str = "rating", item_keys: Sequence[str] = ("item",),
                      participant: str = "participant", group_order: Sequence | None = None,
                      backends: Sequence[str] = ("lme4",), bayes: bool = False,
                      draws: int = 1000, seed: int = 0, item_by_group: bool = True,
                      use_cache: bool = False, cache_dir=None,
                      max_draws: int | None = None) -> tuple[pd.DataFrame, dict]:
    """Fit the alignment mixed model (module docstring) with lme4 and/or PyMC.

    backends: mixed-model backends for `gbstats.fit_lmm` (lme4 is the one that
    fits crossed random effects); bayes: also fit the Bayesian twin with
    `gbstats.fit_bayes` (bambi's default priors; bambi models the participant
    intercept and slope as independent, a note in its warnings says so); max_draws: the
    twin's refit budget (`gbstats.mixed.fitting.fit_bayes_twin`).

    Returns (table, fits): table has ALIGNMENT_LMM_COLUMNS for every fixed
    term of every fit, with terms renamed for readers ("score_z",
    "score_z:group[super-innovator]", ...); fits is {backend label: FitResult}.
    With `use_cache=True` an unchanged fit is reused from the fit cache
    (`gbstats.mixed.fit_cache`, as `gbstats.mixed.fitting.fit_with_twin` does).
    """
    from gbstats.mixed.fitting import fit_with_twin

    rows = alignment_lmm_rows(item_scores, trials, group=group, score=score, rating=rating,
                              item_keys=item_keys, participant=participant,
                              group_order=group_order)
    fits = fit_with_twin(alignment_formula(item_by_group), rows, backends=list(backends),
                         bayes=bayes, draws=draws, seed=seed, loo=False, max_draws=max_draws,
                         use_cache=use_cache, cache_dir=cache_dir)
    tables = []
    for label, fit in fits.items():
        coefs = fit.coefs.assign(backend=label)
        coefs["term"] = coefs["term"].map(readable_term)
        tables.append(coefs[ALIGNMENT_LMM_COLUMNS])
    table = (pd.concat(tables, ignore_index=True) if tables
             else pd.DataFrame(columns=ALIGNMENT_LMM_COLUMNS))
    return table, fits


def readable_term(term: str) -> str:
    """"score_z:group_levelinnovator" -> "score_z:group[innovator]" (R names levels by pasting)."""
    parts = []
    for part in str(term).split(":"):
        if part.startswith("group_level"):
            part = f"group[{part[len('group_level'):]}]"
        parts.append(part)
    return ":".join(parts)
