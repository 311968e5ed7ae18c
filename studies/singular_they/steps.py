"""The singular-*they* study's steps, run by studies.pipeline (declared in run.py).

load stimuli (and human judgements, or the SIMULATED panel) -> score the target
form -> fit closeness x gender, correlate with each group, the human data's own
model -> report.
"""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from gbstats.mixed.fitting import table_notes
from models.scores import recorded_scoring
from studies.common import say
from studies.singular_they import alignment as AL
from studies.singular_they import analysis as A
from studies.singular_they.stimuli import (CAMILLIERE, CORRECTIONS_FILE, GBSTATS_FRAMES,
                                           STIMULI_DIR, STIMULI_VERSION, load_stimuli,
                                           select_stimuli)


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
            "(illustrative parameters; see studies/singular_they/panel.py). Every table and "
            "figure built from it is labelled SIMULATED.")
        human = add_nb_groups(simulate_panel(stimuli, seed=run.seed))
        count_unrated(human, stimuli, run.log)
        return human, True
    from studies.singular_they.human import load_human

    human, human_log = load_human(run.args.human, stimuli)
    run.log.extend(human_log)
    count_unrated(human, stimuli, run.log)
    return human, False


def stimuli_description(stimuli: pd.DataFrame, corrections) -> str:
    """One sentence for the report's Design section: which sentences were scored."""
    version = str(stimuli["stimuli_version"].iloc[0]) if "stimuli_version" in stimuli else None
    if corrections is None and version == STIMULI_VERSION:
        return (f"Stimuli: {len(stimuli)} written for gbstats (`--stimuli {GBSTATS_FRAMES}`, "
                f"version {version}: 40 frames x 8 antecedent types + 15 inanimate controls), "
                "not the published sentences.")
    if corrections is None:
        return f"Stimuli: {len(stimuli)} from the user's --stimuli file."
    fixed = (f"with the {len(corrections)} typo corrections listed below "
             f"(`{CORRECTIONS_FILE.relative_to(STIMULI_DIR.parents[1])}`; `--as-published` "
             "scores the text exactly as published)" if len(corrections)
             else "scored exactly as published (`--as-published`; no typo corrected)")
    return (f"Stimuli: the {len(stimuli)} published sentences of Camilliere et al. (2021) as "
            f"Watson et al. (2023) used them (40 items x 8 antecedent conditions + 15 "
            f"inanimate controls; dataset `{CAMILLIERE}`, version {version}), {fixed}. "
            "Stimulus ids are `<cond>-<itm>`, the keys of the authors' rating file.")


def load(run, _):
    args = run.args
    stimuli, corrections = select_stimuli(args.stimuli, args.data_dir,
                                          as_published=args.as_published)
    trimmed = stimuli.attrs.get("prefixes_trimmed", 0)
    if trimmed:
        run.note(f"{trimmed} prefix(es) of {args.stimuli} ended in whitespace; it was removed, "
                 f"so each target form is scored after exactly one space (' they'), as in the "
                 f"sentence.")
    human, simulated = human_side(run, stimuli)
    files = [args.human]
    if corrections is None:
        files += ([STIMULI_DIR / "frames.tsv", STIMULI_DIR / "inanimate_controls.tsv"]
                  if args.stimuli == GBSTATS_FRAMES else [args.stimuli])
    else:
        from gbstats.data.registry import get_dataset

        entry = get_dataset(CAMILLIERE)
        files += [entry.folder(args.data_dir) / f.local for f in entry.files]
        if not args.as_published:
            files.append(CORRECTIONS_FILE)
    run.add_data_files(files)
    return SimpleNamespace(stimuli=stimuli, corrections=corrections, human=human,
                           simulated=simulated)


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
                       simulated_human_data=s.simulated,
                       backends=s.backends, bayes=run.bayes, draws=args.draws,
                       n_boot=args.n_boot)
    return s


def report(run, report, s) -> None:
    lm, scored, simulated = s.lm, s.scored, s.simulated
    scoring = recorded_scoring(scored, source="item scores")
    how = ("the probability of the target form given the words before it (causal LM)"
           if scoring == "causal" else
           f"the target form in a masked slot (masked LM, `{scoring}`)")
    report.section("Design", (
        f"Model: `{lm.name}` ({lm.model_id}, revision {lm.revision}); scored as {how}. "
        + stimuli_description(s.stimuli, s.corrections) + " Human data: "
        + ("a SIMULATED panel (no real judgements are public)." if simulated
           else f"`{run.args.human}`.")
        + run.notes_markdown()))
    report.table("stimuli_summary",
                 A.stimuli_summary(s.stimuli)[["antecedent_type", "label", "n"]],
                 "Stimuli per antecedent type")
    if s.corrections is not None and len(s.corrections):
        report.table("stimulus_corrections", s.corrections,
                     "Typos in the published stimuli, corrected before scoring (original and "
                     "corrected text; --as-published scores the original)")

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
