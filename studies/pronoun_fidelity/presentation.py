"""How the pronoun-fidelity tables read in a paper: words for columns and values, and the
views that reshape a long table for print (results.json keeps every table as computed)."""
from __future__ import annotations

import pandas as pd

GROUPINGS = {"all": "all", "pronoun_set": "pronoun set", "case": "case",
             "n_distractors": "distractors"}
ENGINES = {"blme": "blme (penalised)", "lme4": "lme4", "pymc": "Bayesian"}
LABELS = {"model": "Model", "n_distractors": "Distractors", "grouping": "Grouping",
          "level": "Level", "mean": "Mean", "sd": "SD", "n_seeds": "Seeds",
          "n_instances": "Instances", "n_unique_instances": "Unique instances",
          "chance": "Chance", "pronoun_set": "Pronoun set", "case": "Case",
          "comparison": "Comparison", "cases": "Cases", "backend": "Engine",
          "n_occupations": "Occupations", "n_cells": "Cells",
          "same_choice_share": "Same choice", "n_errors": "Errors",
          "share_distraction": "Distraction", "share_bias": "Bias", "share_other": "Other",
          "n_he": "He", "n_she": "She", "n_they": "They", "n_xe": "Xe",
          "monotone_decline": "Monotone decline", "p_holm": "p (Holm)",
          "n_sampled": "Sampled", "n_full": "Full design",
          "n_distinct_sampled": "Distinct sampled", "n_distinct_full": "Distinct, full design",
          "interval_factor": "Interval factor"}
VALUES = {"grouping": GROUPINGS, "backend": ENGINES}
# the GLMM's variables and groups in words
VARIABLES = {"pronoun_set": "Pronoun set", "distractors": "Distractors", "case": "Case",
             "n_distractors": "Distractors"}
GROUPS = {"occupation": "Occupations", "context_template": "Context templates"}


def welch_view(welch: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """(Welch's tests for print, notes): the two levels compared in one column; each row's
    numerical warning becomes a sentence of the notes."""
    view = welch.assign(comparison=[f"{a} vs {b}" for a, b in
                                    zip(welch["level_a"], welch["level_b"])])
    by_warning: dict[str, list[str]] = {}
    for m, n, c, note in zip(view["model"], view["n_distractors"], view["comparison"],
                             view["note"]):
        if note:
            by_warning.setdefault(note, []).append(f"{m}, {n} distractors, {c}")
    notes = [f"{note.rstrip('.')} ({'; '.join(rows)})." for note, rows in by_warning.items()]
    return (view[["model", "n_distractors", "comparison", "estimate", "ci_low", "ci_high", "t",
                  "df", "p_value", "p_holm"]], notes)


def with_level(table: pd.DataFrame) -> pd.DataFrame:
    """The grouping folded into the level: "overall", a pronoun set, a case, "1 distractors"."""
    level = [("overall" if g == "all" else
              f"{lv} distractor{'' if lv == '1' else 's'}" if g == "n_distractors" else lv)
             for g, lv in zip(table["grouping"], table["level"].astype(str))]
    return table.drop(columns="grouping").assign(level=level)


def with_cases(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """(case_a and case_b as one "Cases" column, the rows' notes as sentences)."""
    out = table.copy()
    out.insert(1 if "model" in out.columns else 0, "cases",
               [f"{a}, {b}" for a, b in zip(table["case_a"], table["case_b"])])
    notes = []
    if "note" in out.columns:
        notes = list(dict.fromkeys(f"{c}: {n}" for c, n in zip(out["cases"], out["note"]) if n))
        out = out.drop(columns="note")
    return out.drop(columns=["case_a", "case_b"]), notes
