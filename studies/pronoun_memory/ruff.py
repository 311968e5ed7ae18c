"""pronoun_fidelity's they-fidelity for the same model, to put beside this study's.

Two sources, both pronoun_fidelity's own numbers:

* `sample` (default): pronoun_fidelity's sampling and scoring code run here on a
  small balanced RUFF sample (its `draw_samples` with `per_seed` instances per
  seed and number of distractors, 0-5 distractors, 3 seeds), keeping the
  they/them instances only (a quarter of the sample), then its forced choice
  over he/she/they/xe and its accuracy table;
* a results.json of `python -m studies.pronoun_fidelity` (`--ruff-results`): its
  `accuracy` table's they rows, for the full sample.

RUFF's fidelity is the production task with 0-5 distractor sentences about
another person (with another pronoun) between the introduction and the task
sentence; this study's distractors are other characters' introductions (1, 4
or 12 characters) with or without the math text. The two are put side by side,
not merged: the designs differ.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError

RUFF_DISTRACTORS = list(range(6))


def ruff_sample_fidelity(lm, *, per_seed: int, seed: int, data_dir, cache: dict,
                         log) -> pd.DataFrame:
    """they-fidelity per number of distractors from pronoun_fidelity's code on a sample."""
    from gbstats.data.registry import load_dataset
    from studies.pronoun_fidelity import analysis as A
    from studies.pronoun_fidelity.steps import draw_samples

    loaded = load_dataset("ruff2024", data_dir)
    samples = draw_samples(loaded.tables["task"], loaded.tables["context"], RUFF_DISTRACTORS,
                           per_seed, seed)
    they = samples[samples["pronoun_set"] == "they"]
    unique = they.drop_duplicates("instance")
    # one big commit batch: instances that share an introduction run it once (token trees)
    predicted = A.choices(A.score_frames(unique, lm, item="instance", batch_size=1024, **cache),
                          log=log,
                          stage=f"{lm.name}: RUFF they instances").rename(
        columns={"item": "instance"})
    results = A.join_predictions(they, predicted).assign(model=lm.name)
    table = A.accuracy_table(results)
    table = table[(table["grouping"] == "pronoun_set") & (table["level"] == "they")]
    return table.assign(source=f"the pronoun-fidelity study's code, sample of {per_seed} per "
                               "seed and "
                               "number of distractors, they instances only")[
        ["model", "n_distractors", "mean", "sd", "n_seeds", "n_instances", "chance", "source"]]


def ruff_accuracy_table(path: Path) -> pd.DataFrame:
    """The accuracy table of a pronoun_fidelity results.json."""
    path = Path(path)
    try:
        accuracy = pd.DataFrame(json.loads(path.read_text())["tables"]["accuracy"])
        accuracy[["model", "grouping", "level", "n_distractors", "mean"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataValidationError("cannot read pronoun_fidelity's accuracy table",
                                  source=str(path), expected="results.json of "
                                  "`python -m studies.pronoun_fidelity` (tables.accuracy)",
                                  found=f"{type(exc).__name__}: {exc}") from None
    return accuracy


def ruff_results_fidelity(path: Path, model: str) -> pd.DataFrame:
    """The they rows of a pronoun_fidelity results.json's accuracy table, for `model`."""
    path = Path(path)
    accuracy = ruff_accuracy_table(path)
    rows = accuracy[(accuracy["grouping"] == "pronoun_set") & (accuracy["level"] == "they")
                    & (accuracy["model"] == model)]
    if rows.empty:
        raise DataValidationError("no they rows for this model", source=str(path),
                                  expected=f"accuracy rows with model {model!r}",
                                  found=f"models {sorted(accuracy['model'].unique())}")
    return rows.assign(source=f"the pronoun-fidelity study's results ({path.name})")[
        ["model", "n_distractors", "mean", "sd", "n_seeds", "n_instances", "chance", "source"]]


def distractor_table(scored: pd.DataFrame) -> pd.DataFrame:
    """This study's fidelity by characters in context x filler x task x pronoun (Exp 1A's
    lists): mean probability on the correct option, argmax accuracy, and an interval over
    characters (names resampled, 2000 replicates, percentile)."""
    sweep = scored[scored["experiment"] == "1a"]
    rows = []
    rng = np.random.default_rng(11)
    for (n, filler), block in sweep.groupby(["n_characters", "filler"]):
        for task in ("memory", "production"):
            for pronoun in ("he/him", "she/her", "they/them"):
                cell = block[block["Pronoun"] == pronoun]
                values = cell.groupby("Name")[f"{task}_accuracy"].mean()
                draws = rng.choice(values.to_numpy(), size=(2000, len(values))).mean(axis=1)
                rows.append({"n_characters": int(n), "filler": "with math text" if filler
                             else "none", "task": task, "pronoun": pronoun,
                             "accuracy": float(cell[f"{task}_accuracy"].mean()),
                             "ci_low": float(np.quantile(draws, 0.025)),
                             "ci_high": float(np.quantile(draws, 0.975)),
                             "argmax_accuracy": float(cell[f"{task}_correct"].mean()),
                             "n_characters_asked": len(cell)})
    return pd.DataFrame(rows)


def ruff_sentence(distractors: pd.DataFrame, ruff: pd.DataFrame) -> str:
    """The two they-fidelities side by side, in words (every number is in a table below)."""
    mine = distractors[(distractors["pronoun"] == "they/them")
                       & (distractors["task"] == "production")].set_index(
        ["n_characters", "filler"])["accuracy"]
    theirs = ruff.set_index("n_distractors")["mean"]
    return (f"RUFF (pronoun_fidelity's code on the same model): they-fidelity "
            f"{theirs.get(0, float('nan')):.2f} with no distractor and "
            f"{theirs.get(5, float('nan')):.2f} with five, a four-way choice (chance "
            f"{ruff['chance'].iloc[0]:.2f}) of the whole task sentence. This study: the "
            "probability the model puts on *they* as the next word for a they/them character, "
            f"normalised over he/she/they, is {mine.get((1, 'none'), float('nan')):.3f} with the "
            f"character alone and {mine.get((12, 'with math text'), float('nan')):.3f} with the "
            "twelve characters and the math text people read. The designs differ (RUFF scores "
            "whole sentences after an explicit they-introduction; here the next word after "
            "\"After X got home from working ...,\"), so the numbers are side by side, not "
            "one scale.")
