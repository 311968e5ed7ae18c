"""Each frame of data/singular_they/stimuli.tsv with a gendered name ("Aaron said that ___")
and a non-gendered one ("Alex said that ___"): the model chooses among three forms in the
slot (he/she/they, him/her/them...). Does a gendered name lower the odds of the they-form?"""
from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.data.validate import read_table, validate_frame
from gbstats.mixed.fitting import fit_with_twin, stack_fits, table_notes
from models.forced_choice import forced_choice

STIMULI = Path(__file__).resolve().parents[2] / "data" / "singular_they" / "stimuli.tsv"
NAMES = ["gendered_name", "nongendered_name"]
RIVALS = {"they": "he she", "them": "him her", "their": "his her", "themselves": "himself herself"}
FORMULA = "they_logodds ~ gendered + (1|frame)"


def load(run, _):
    rows = validate_frame(read_table(STIMULI, sep="\t", keep_default_na=False), source=str(STIMULI),
                          required=["item", "frame", "antecedent_type", "target_form", "prefix",
                                    "sentence"], unique=["item"], what="stimulus")
    rows = run.log.drop(rows, ~rows.antecedent_type.isin(NAMES), "not a name", "stimuli", "load")
    first = sorted(rows.frame.unique())[:run.args.frames]
    return run.log.drop(rows, ~rows.frame.isin(first), "frame beyond --frames", "stimuli", "load")


def score(run, rows):
    lm = run.model()
    rows = rows.assign(slotted=[p + " ___" + s[len(p) + 1 + len(t):] for p, s, t
                                in zip(rows.prefix, rows.sentence, rows.target_form)])
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


def fit(run, rows):
    lme4 = run.lme4_available("the lme4 fit (statsmodels fitted the model instead)", plural=False)
    fits = fit_with_twin(FORMULA, rows, backends=["lme4" if lme4 else "statsmodels"],
                         bayes=run.bayes, draws=run.args.draws, seed=run.seed)
    run.record_fits("they log-odds LMM", fits)
    return rows, fits


def tables(run, state):
    rows, fits = state
    means = rows.groupby("antecedent_type", as_index=False).agg(
        n=("item", "size"), mean_p_they=("p_they", "mean"), mean_logodds=("they_logodds", "mean"))
    return means, stack_fits(fits), table_notes(fits)


def report(run, report, state):
    means, coefs, notes = state
    report.section("Design", f"Model `{run.args.model}` chooses among three pronoun forms after a "
                   f"name; P(they-form) is normalised over the three.{run.notes_markdown()}")
    report.table("they_by_name", means, "Mean probability and log-odds of the they-form")
    report.table("lmm", coefs, f"`{FORMULA}`; gendered = 1: a gendered name", notes=notes or None)
