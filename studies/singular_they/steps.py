"""The singular-*they* study's steps, run by studies.pipeline (declared in run.py).

load stimuli (and human judgements, or the SIMULATED panel) -> score the target
form -> fit closeness x gender, correlate with each group, the human data's own
model -> report.
"""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from gbstats.data.camilliere2021 import read_corrections
from gbstats.mixed.fitting import table_notes
from models.scores import recorded_scoring
from studies.common import say
from studies.singular_they import alignment as AL
from studies.singular_they import analysis as A
from studies.singular_they import published as P
from studies.singular_they.stimuli import (CAMILLIERE, CORRECTIONS_FILE, GBSTATS_FRAMES,
                                           STIMULI_DIR, STIMULI_VERSION, choose_text,
                                           load_stimuli, select_stimuli)


def write_stimuli(run) -> bool:
    """--write-stimuli: regenerate data/singular_they/stimuli.tsv instead of running."""
    if not run.args.write_stimuli:
        return False
    path = STIMULI_DIR / "stimuli.tsv"
    load_stimuli().to_csv(path, sep="\t", index=False)
    say(f"wrote {path}")
    return True


def lmm_backends(run) -> list[str]:
    """Backends for the model-side LMM, from --backend (run.fit replaces lme4 without R)."""
    choice = run.args.backend
    return ["lme4", "statsmodels"] if choice == "both" else [choice]


def human_side(run, stimuli: pd.DataFrame):
    """(human trials, simulated?): the --human file, or the SIMULATED panel."""
    from studies.singular_they.human import count_unrated

    if run.args.human is None:
        from studies.singular_they.human import add_nb_groups
        from studies.singular_they.panel import simulate_panel

        say("NOTE: no --human file given: the human side uses a SIMULATED panel of participants "
            "(published group sizes and survey summaries, illustrative ratings; the report "
            "lists every parameter). Every table and figure built from it is labelled "
            "SIMULATED.")
        human = add_nb_groups(simulate_panel(stimuli, seed=run.seed))
        count_unrated(human, stimuli, run.log)
        return human, True
    from studies.singular_they.human import (load_human, require_comparable_stages,
                                             usable_nb_groups)

    human, human_log = load_human(run.args.human, stimuli)
    run.log.extend(human_log)
    require_comparable_stages(human, str(run.args.human))
    human = usable_nb_groups(human, run.log)
    count_unrated(human, stimuli, run.log)
    return human, False


def stimuli_description(stimuli: pd.DataFrame, corrections, text_reason: str = "") -> str:
    """The report's Design sentences on which sentences were scored, and (published
    stimuli) which text, as published or corrected, and why (`choose_text`)."""
    version = str(stimuli["stimuli_version"].iloc[0]) if "stimuli_version" in stimuli else None
    if corrections is None and version == STIMULI_VERSION:
        return (f"Stimuli: {len(stimuli)} written for gbstats (`--stimuli {GBSTATS_FRAMES}`, "
                f"version {version}: 40 frames x 8 antecedent types + 15 inanimate controls), "
                "not the published sentences.")
    if corrections is None:
        return f"Stimuli: {len(stimuli)} from the user's --stimuli file."
    fixed = (f"with the {len(corrections)} typo corrections listed below "
             f"(`{CORRECTIONS_FILE.relative_to(STIMULI_DIR.parents[1])}`)" if len(corrections)
             else "scored exactly as published (no typo corrected)")
    why = f" Text scored: {'corrected' if len(corrections) else 'as published'}, because " \
          f"{text_reason}." if text_reason else ""
    return (f"Stimuli: the {len(stimuli)} published sentences of Camilliere et al. (2021) as "
            f"Watson et al. (2023) used them (40 items x 8 antecedent conditions + 15 "
            f"inanimate controls; dataset `{CAMILLIERE}`, version {version}), {fixed}."
            f"{why} Stimulus ids are `<cond>-<itm>`, the keys of the authors' rating file.")


def load(run, _):
    args = run.args
    as_published, text_reason = choose_text(args.stimuli, human_given=args.human is not None,
                                            as_published=args.as_published,
                                            keep_corrections=args.keep_corrections)
    stimuli, corrections = select_stimuli(args.stimuli, args.data_dir,
                                          as_published=as_published)
    if args.keep_corrections and args.human is not None:
        run.note("the corrected text was scored (--keep-corrections) although the ratings are "
                 "most likely of the text as published: they differ where a typo was corrected")
    human, simulated = human_side(run, stimuli)
    files = [args.human]
    if corrections is None:
        files += ([STIMULI_DIR / "frames.tsv", STIMULI_DIR / "inanimate_controls.tsv"]
                  if args.stimuli == GBSTATS_FRAMES else [args.stimuli])
    else:
        from gbstats.data.registry import get_dataset

        entry = get_dataset(CAMILLIERE)
        files += [entry.folder(args.data_dir) / f.local for f in entry.files]
        if not as_published:
            files.append(CORRECTIONS_FILE)
    run.add_data_files(files)
    return SimpleNamespace(stimuli=stimuli, corrections=corrections, human=human,
                           simulated=simulated, text_reason=text_reason)


def score(run, s):
    say(f"[1/5] scoring {len(s.stimuli)} stimuli with {run.args.model}")
    s.lm = run.model()
    s.scored = A.score_targets(s.stimuli, s.lm, **run.cache)
    run.write_csv("item_scores.csv", s.scored)
    return s


def fit(run, s):
    args = run.args
    # run.fit: the fit cache (next to the score cache), warnings, and the twin unless --no-bayes
    say("[2/5] fitting surprisal ~ close + gendered + (1|frame)")
    rows = A.close_gendered_rows(s.scored)
    s.model_fits = run.fit(A.MODEL_FORMULA, rows, name="model LMM", backends=lmm_backends(run),
                           loo=False)
    s.backends = [b for b in s.model_fits if b != "pymc"]   # what was fitted (no R: statsmodels)
    # Watson et al.'s regression as their R code fits it (nats, +/-1, (1|itm)): the
    # estimates to compare with the paper's.
    say(f"      and Watson et al.'s {A.PAPER_FORMULA}")
    s.paper_fits = run.fit(A.PAPER_FORMULA, A.paper_scale_rows(rows),
                           name="model LMM, paper scale", backends=s.backends, twin=False,
                           loo=False)

    say("[3/5] correlating the model with each group of people")
    for grouping in ("nb_group",):
        n_missing = s.human.loc[s.human[grouping].isna(), "participant"].nunique()
        run.log.record(f"participants without a nonbinary acceptance score (left out of the "
                       f"{grouping} grouping only)", n_missing, unit="participants",
                       stage="alignment")
    for grouping, why in A.skipped_groupings(s.human).items():
        run.note(f"RQ2 by {grouping}: left out, because {why}.")
    s.correlations, s.comparisons = A.alignment_correlations(s.scored, s.human,
                                                             n_boot=args.n_boot, seed=run.seed)
    s.mann_whitney = A.stage_mann_whitney(s.human, exclusions=run.log)
    AL.fit_rq2(run, s)

    say("[4/5] fitting the human data's own model")
    human_rows = A.human_factor_rows(A.human_model_rows(s.human, s.stimuli))
    if "lme4" not in s.backends:
        run.note("the human model has crossed random effects (participant and item), which "
                 "only the lme4 backend fits; it was skipped")
    s.human_fits = run.fit(A.HUMAN_FORMULA, human_rows, name="human model",
                           backends=["lme4"] if "lme4" in s.backends else [],
                           contrasts=A.HUMAN_CONTRASTS, loo=False)
    run.add_provenance(stimuli_version=str(s.stimuli["stimuli_version"].iloc[0]),
                       stimuli_corrections=(None if s.corrections is None
                                            else len(s.corrections)),
                       stimuli_text=scored_text(s.corrections) or None,
                       stimuli_text_reason=s.text_reason or None,
                       simulated_human_data=s.simulated,
                       backends=s.backends, bayes=run.bayes, draws=args.draws,
                       n_boot=args.n_boot, published_anchor_source=P.SOURCE)
    if s.simulated:
        from studies.singular_they.panel import panel_parameters

        run.add_provenance(simulated_panel=panel_parameters(run.seed))
    return s


def report(run, report, s) -> None:
    lm, scored, simulated = s.lm, s.scored, s.simulated
    scoring = recorded_scoring(scored, source="item scores")
    how = P.scoring_description(scored, scoring)
    report.section("Design", (
        f"Model: `{lm.name}` ({lm.model_id}, revision {lm.revision}); scored as {how}. "
        + stimuli_description(s.stimuli, s.corrections, s.text_reason) + " Human data: "
        + ("a SIMULATED panel (no real judgements are public)." if simulated
           else f"`{run.args.human}`.")
        + " " + QUANTITIES + run.notes_markdown()))
    report.table("stimuli_summary",
                 A.stimuli_summary(s.stimuli)[["antecedent_type", "label", "n"]],
                 "Stimuli per antecedent type")
    if s.corrections is not None and len(s.corrections):
        report.table("stimulus_corrections", s.corrections,
                     "Typos in the published stimuli, corrected before scoring (original and "
                     "corrected text; --as-published scores the original)")
    elif s.corrections is not None:
        report.table("stimulus_typos_left", read_corrections(CORRECTIONS_FILE),
                     "Known typos in the published stimuli, scored as published (the text "
                     "participants most likely rated)",
                     column_labels=TYPO_LABELS)

    report.section("RQ1: surprisal of the target form by antecedent type")
    by_type = A.surprisal_by_type(scored, units="surprisal in bits")
    report.table("surprisal_by_type", by_type, "Mean surprisal (bits) of the target form by "
                 "antecedent type, with 95% t-intervals over items")
    constant = float(scored["surprisal"].max().__ceil__())
    adjusted = A.surprisal_by_type(scored.assign(adjusted=A.adjusted_surprisal(scored["surprisal"])),
                                   value="adjusted")
    report.figure("surprisal_adjusted", A.plot_by_type(
        adjusted, f"{constant:.0f} - surprisal (bits); higher = more natural",
        f"{lm.name}: adjusted surprisal of the target form"),
        f"Adjusted surprisal ({constant:.0f} bits minus surprisal) by antecedent type, 95% CIs")
    report.figure("surprisal_unadjusted", A.plot_by_type(
        by_type, "surprisal (bits)", f"{lm.name}: surprisal of the target form"),
        "Surprisal of the target form by antecedent type, 95% CIs")
    n_bold = int(A.close_gendered_rows(scored).shape[0])
    report.table("lmm_close_gendered_paper_scale",
                 A.model_fit_table(s.paper_fits, A.PAPER_FORMULA),
                 f"Watson et al.'s (2023) regression, as their R analysis fits it: "
                 f"`{A.PAPER_FORMULA}` on the four closeness x gender conditions ({n_bold} "
                 "items): surprisal in nats, gendered and close coded +1/-1 in the data, a "
                 "random intercept per item number, so a slope is half the difference "
                 "between its two levels. lme4: lmerTest, REML, Satterthwaite t "
                 "tests and 95% t intervals with the same df; statsmodels: REML, Wald z tests "
                 "and intervals", notes=table_notes(s.paper_fits) or None)
    report.table("lmm_close_gendered", A.model_fit_table(s.model_fits, A.MODEL_FORMULA),
                 f"The same data as gbstats' indicator view: `{A.MODEL_FORMULA}`, surprisal in "
                 "bits, close and gendered coded 0/1, so a slope is the whole difference in "
                 "bits (2/ln 2 = 2.885 times the paper-scale slope; not comparable with the "
                 "paper's estimates). lme4: REML, Satterthwaite t tests and 95% t intervals "
                 "with the same df; statsmodels: REML, Wald z tests and intervals; pymc: "
                 "posterior mean, SD and 95% interval", notes=table_notes(s.model_fits) or None)

    report_anchor(report, s, scoring)
    if simulated:
        report_panel(report, run.seed)
    AL.report_rq2(report, s)
    if s.human_fits:
        report.table("human_model", A.fit_table(s.human_fits, units="rating points",
                                                coding=A.HUMAN_CODING),
                     f"People's ratings: `{A.HUMAN_FORMULA}`, sum (+1/-1) coding. "
                     + A.coding_note(s.human_fits), simulated=simulated,
                     notes=table_notes(s.human_fits) or None)
        report.table("human_main_effects", A.human_main_effects(s.human_fits),
                     "Main effects of closeness and gender marking on people's ratings (sum "
                     "coding, so each is averaged over the other factor; estimate = difference "
                     "between the two marginal means = 2 x the +1/-1 coefficient)",
                     simulated=simulated)
        report.table("model_vs_human_effects", A.side_by_side(s.paper_fits, s.human_fits),
                     "Closeness and gender effects, both +1/-1 coded: model surprisal (nats) "
                     "vs. people's ratings (opposite signs expected: surprisal is lower where "
                     "ratings are higher); units and coding per row",
                     simulated=simulated)


# Issue 31 (reviewer point 6): the two sides measure different things, said once, plainly.
QUANTITIES = ("The two sides are different quantities: the model's is the probability of the "
              "they-form over its whole vocabulary (or its surprisal), not a choice among "
              "pronouns, so no set of options and no covered probability mass is involved; "
              "people's is a naturalness rating of the whole sentence. The report compares "
              "their patterns over items (correlations, signs of effects), never their levels.")
TYPO_LABELS = {"cond": "Condition", "itm": "Item", "original": "Published text",
               "corrected": "Corrected text", "reason": "Why it is a typo"}


def scored_text(corrections) -> str:
    """"corrected" or "as published" (the published stimuli); "" for other stimuli."""
    if corrections is None:
        return ""
    return "corrected" if len(corrections) else "as published"


def corrected_bold_items(corrections) -> list[str]:
    """Stimulus ids of the corrected sentences among the closeness x gender rows."""
    from studies.singular_they.stimuli import (BOLD_TYPES, CAMILLIERE_CONDITIONS,
                                               camilliere_item_id)

    if corrections is None:
        return []
    return [camilliere_item_id(c, i) for c, i in zip(corrections["cond"], corrections["itm"])
            if CAMILLIERE_CONDITIONS.get(c) in BOLD_TYPES]


def report_anchor(report, s, scoring: str) -> None:
    """Watson et al.'s published BERT estimates beside this run's paper-scale fit."""
    if not s.paper_fits:
        return
    text = scored_text(s.corrections) or "the --stimuli file"
    table = P.anchor_table(s.paper_fits, model=s.lm.name, scoring=scoring, text=text)
    notes = P.anchor_notes(scoring=scoring, model=s.lm.name, text=text,
                           corrected_bold_items=corrected_bold_items(s.corrections))
    # the notes print in the LaTeX table only, so the section says them too
    report.section("Published anchor: Watson et al. (2023)", (
        "Watson et al.'s published estimates for bert-base-uncased, beside this run's fit of "
        "the same regression on the same scale. " + P.compare_in_words(table) + " "
        + " ".join(notes)))
    report.table("published_anchor", table,
                 f"Watson et al.'s (2023) BERT estimates beside this run's: "
                 f"`{A.PAPER_FORMULA}`, surprisal in nats, +1/-1 coding",
                 columns=P.ANCHOR_FIELDS, column_labels=P.ANCHOR_LABELS, notes=notes)


def report_panel(report, seed: int) -> None:
    """How the SIMULATED panel was generated, and what its survey tests give over seeds."""
    from studies.singular_they import panel as PANEL

    over = PANEL.survey_tests_over_seeds(seed)
    report.section("How the SIMULATED panel was generated", (
        "Every generating parameter (studies/singular_they/panel.py), marked published, "
        "calibrated to a published summary, or illustrative. The ratings' means are "
        "illustrative: no rating data are public, so nothing the panel gives about ratings, "
        "groups or alignment is evidence about people. The survey scores are built to match "
        "Watson et al.'s published summaries, and the last table checks that over "
        f"{PANEL.N_SEEDS_SHOWN} seeds: a difference between stages that comes out "
        "significant at this seed but not over seeds is the seed's, and one that the "
        "parameters build in shows over seeds."), simulated=True)
    report.table("panel_parameters", PANEL.parameter_table(seed),
                 "Parameters of the SIMULATED panel and where each comes from",
                 column_labels={"parameter": "Parameter", "stage": "Stage", "value": "Value",
                                "source": "Source"},
                 notes=[f"Published values: {PANEL.WATSON_SURVEY_SOURCE}."], simulated=True)
    report.table("panel_rating_means", PANEL.rating_means_table(),
                 "Mean rating (1-7) of the SIMULATED panel by antecedent type and stage, "
                 "illustrative",
                 column_labels={"antecedent_type": "Antecedent type",
                                "non-innovator": "Non-innovators", "innovator": "Innovators",
                                "super-innovator": "Super-innovators"},
                 notes=[f"rating = stage mean + participant N(0, {PANEL.SD_PARTICIPANT:g}^2) "
                        f"+ item N(0, {PANEL.SD_ITEM:g}^2) + residual "
                        f"N(0, {PANEL.SD_RESIDUAL:g}^2), unclipped."], simulated=True)
    report.table("panel_survey_tests", over,
                 "Survey-score tests on the SIMULATED panel at this seed and over seeds, "
                 "beside Watson et al.'s (2023) real participants",
                 columns=["score", "earlier_stage", "later_stage", "p_this_seed",
                          "p_median_over_seeds", "share_p_below_05", "p_published"],
                 column_labels={"score": "Score", "earlier_stage": "Earlier stage",
                                "later_stage": "Later stage", "p_this_seed": "p, this seed",
                                "p_median_over_seeds": "Median p over seeds",
                                "share_p_below_05": "Share of seeds with p < .05",
                                "p_published": "p, Watson et al."},
                 p_columns=["p_this_seed", "p_median_over_seeds", "p_published"],
                 notes=[f"One-tailed Mann-Whitney tests (earlier stage lower), as in the "
                        f"table mann_whitney; seeds 0 to {PANEL.N_SEEDS_SHOWN - 1}. "
                        f"Published: {PANEL.WATSON_SURVEY_SOURCE}."], simulated=True)
