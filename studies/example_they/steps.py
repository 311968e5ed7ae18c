"""Does a gendered name (Aaron) lower the odds of singular they against a non-gendered (Alex)?"""
from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.data.validate import read_table, validate_frame
from models.forced_choice import forced_choice

STIMULI = Path(__file__).resolve().parents[2] / "data" / "singular_they" / "stimuli.tsv"
NAMES = {"gendered_name": "Gendered (Aaron)", "nongendered_name": "Non-gendered (Alex)"}
LABELS = {"antecedent_type": "Name", "mean_p_they": "P(they)", "mean_logodds": "Log-odds"}
RIVALS = {"they": "he she", "them": "him her", "their": "his her", "themselves": "himself herself"}
FORMULA = "they_logodds ~ gendered + (1|frame)"


def load(run, _):
    rows = validate_frame(read_table(STIMULI, sep="\t", keep_default_na=False), source=str(STIMULI),
                          required=["item", "frame", "antecedent_type", "target_form", "prefix",
                                    "sentence"], unique=["item"], what="stimulus")
    rows = run.log.select(rows, ~rows.antecedent_type.isin(NAMES), "not a name", "stimuli", "load")
    first = sorted(rows.frame.unique())[:run.args.frames]
    return run.log.select(rows, ~rows.frame.isin(first), "frame beyond --frames", "stimuli", "load")


def with_slot(prefix: str, sentence: str, form: str) -> str:
    """("Aaron said that", "Aaron said that they would...", "they") -> "Aaron said that ___ would..."."""
    return f"{prefix} ___{sentence.removeprefix(f'{prefix} {form}')}"


def score(run, rows):
    lm = run.model()
    run.say(f"scoring {len(rows)} sentences x 3 forms with {lm.name}")
    rows = rows.assign(slotted=list(map(with_slot, rows.prefix, rows.sentence, rows.target_form)))
    scores = pd.concat(forced_choice(list(g.slotted), RIVALS[form].split() + [form], lm=lm,
                                     items=list(g.item), slot="___", **run.cache)
                       for form, g in rows.groupby("target_form"))
    p_they = scores[scores.variant.isin(RIVALS)].set_index("item").probability  # the they-forms
    rows = rows.assign(p_they=rows.item.map(p_they))
    rows = run.log.drop(rows, rows.p_they.isna(), "a form could not be scored", "stimuli", "score")
    rows = rows.assign(they_logodds=np.log(rows.p_they / (1 - rows.p_they)),
                       gendered=(rows.antecedent_type == "gendered_name").astype(int))
    run.write_csv("item_choices.csv", rows)
    return rows


def fit(run, rows):  # lme4 (statsmodels without R), the pymc twin, the fit cache, warnings
    return rows, run.fit(FORMULA, rows, name="they log-odds LMM")


def tables(run, state):
    rows, fits = state
    return rows.groupby("antecedent_type", as_index=False).agg(n=("item", "size"), mean_p_they=(
        "p_they", "mean"), mean_logodds=("they_logodds", "mean")), fits


def report(run, report, state):
    means, fits = state
    report.section("Design", f"Model `{run.args.model}` chooses among three pronoun forms after a "
                   f"name; P(they-form) is normalised over the three.{run.notes_markdown()}")
    report.table("they_by_name", means, "Mean probability and log-odds of the they-form",
                 labels=LABELS, values={"antecedent_type": NAMES})   # words for the paper
    report.fit_table("lmm", fits, report.formula("lmm", FORMULA, {"they_logodds": "The they-form's log-odds", "gendered": "a gendered name"}))
