"""How the cognitive-bias tables read in a paper: words for the columns and values, and the
views that reshape a long table for print (results.json keeps every table as computed)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from studies.cognitive_bias.published import published_percent

DATASET_WORDS = {"wino": "WinoBias+Winogender", "BUG": "BUG"}
SOURCE_WORDS = {"human": "People"}
CONDITION_WORDS = {"pro": "pro", "anti": "anti"}
VALUES = {"dataset": DATASET_WORDS, "source": SOURCE_WORDS}
LABELS = {"dataset": "Data set", "source": "Source", "alpha": "α", "condition": "Condition",
          "n_correct": "Correct", "n_total": "Total", "n_ignored": "Ignored",
          "accuracy": "Accuracy", "n_trials": "Trials"}
# the GLMMs' variables and groups in words
VARIABLES = {"stereotype": "Stereotype", "alpha": "α"}
GROUPS = {"participant": "Participants", "sentence": "Sentences"}


def accuracy_view(accuracy: pd.DataFrame) -> pd.DataFrame:
    """qa_accuracy as Table 2 prints it: percent correct beside the published percent."""
    view = accuracy.copy()
    view["percent"] = 100 * view["accuracy"]
    view["published"] = [published_percent(d, s, a, c) for d, s, a, c in
                         zip(view["dataset"], view["source"], view["alpha"], view["condition"])]
    view["published"] = view["published"].astype(float)
    view["difference"] = view["percent"] - view["published"]
    view["counts"] = [f"{c}/{t}" for c, t in zip(view["n_correct"], view["n_total"])]
    return view[["dataset", "source", "alpha", "condition", "counts", "n_ignored",
                 "percent", "published", "difference"]]


ACCURACY_LABELS = {**LABELS, "counts": "Correct/total", "percent": "Ours (%)",
                   "published": "Published (%)", "difference": "Difference"}
# the marginal means' alpha levels, as numbers with two decimals
ALPHA_WORDS = {"0.25": "0.25", "0.5": "0.50", "0.75": "0.75"}


def maze_people_view(maze_deltas: pd.DataFrame) -> pd.DataFrame:
    """People's Delta_MAZE(p) with its interval, per data set and share."""
    people = maze_deltas[maze_deltas["source"] == "human"]
    return people[["dataset", "p", "estimate", "ci_low", "ci_high"]].reset_index(drop=True)


SYSTEM_QUANTITIES = {
    "accuracy_pro": "Accuracy, pro (%)", "accuracy_anti": "Accuracy, anti (%)",
    "time_pro": "Place on the pro curve (ms)", "time_anti": "Place on the anti curve (ms)",
    "delta_maze": "System's ΔMAZE (ms)",
    "human_delta_maze_at_mean_share": "People's ΔMAZE at its share (ms)",
    "difference": "System minus people (ms)"}


def maze_systems_view(maze_deltas: pd.DataFrame) -> pd.DataFrame:
    """Each system's placement on people's MAZE curves, accuracies in percent (so that every
    number in a column has one unit of decimals)."""
    rows = maze_deltas[maze_deltas["source"] != "human"].copy()
    percent = rows["quantity"].str.startswith("accuracy")
    for column in ("estimate", "ci_low", "ci_high"):
        rows[column] = np.where(percent, 100 * rows[column], rows[column])
    rows["quantity"] = rows["quantity"].map(SYSTEM_QUANTITIES)
    return rows[["dataset", "source", "quantity", "estimate", "ci_low", "ci_high", "p_value",
                 "p_holm"]].reset_index(drop=True)


def repeat_effect_labels() -> dict:
    return {**LABELS, "n_correct_published": "Correct, every response",
            "n_total_published": "Total, every response",
            "accuracy_published": "Accuracy, every response",
            "n_ignored_published": "Ignored, every response",
            "n_correct_deduplicated": "Correct, first response",
            "n_total_deduplicated": "Total, first response",
            "accuracy_deduplicated": "Accuracy, first response",
            "n_ignored_deduplicated": "Ignored, first response",
            "n_removed": "Trials removed", "change_points": "Change (points)"}


# the fits of fit_stereotype_alpha, as column headers
GLMM_COLUMNS = {"lme4, alpha factor": "lme4, α factor", "lme4, alpha numeric": "lme4, α number",
                "pymc, alpha numeric": "Bayesian, α number"}
