"""The singular-*they* study's steps, run by studies.pipeline (declared in run.py).

load stimuli (and human judgements, or the SIMULATED panel) -> score the target
form -> fit closeness x gender, correlate with each group, the human data's own
model -> report.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from gbstats.mixed.fitting import fit_with_twin, reused_fits_note, table_notes
from models.scores import recorded_scoring
from studies.common import say
from studies.singular_they import alignment as AL
from studies.singular_they import analysis as A
from studies.singular_they.stimuli import STIMULI_DIR, STIMULI_VERSION, load_stimuli


def write_stimuli(run) -> bool:
    """--write-stimuli: regenerate data/singular_they/stimuli.tsv instead of running."""
    if not run.args.write_stimuli:
        return False
    path = STIMULI_DIR / "stimuli.tsv"
    load_stimuli().to_csv(path, sep="\t", index=False)
    say(f"wrote {path}")
    return True


def lmm_backends(run) -> list[str]:
    """Backends for the model-side LMM; without R, lme4 falls back to statsmodels (noted)."""
    choice = run.args.backend
    wanted = ["lme4", "statsmodels"] if choice == "both" else [choice]
    if "lme4" in wanted and not run.lme4_available(
            "the lme4 fits (the model-side LMM uses statsmodels only)"):
        return [b for b in wanted if b != "lme4"] or ["statsmodels"]
    return wanted


def human_side(run, stimuli: pd.DataFrame):
    """(human trials, simulated?): the --human file, or the SIMULATED panel."""
    if run.args.human is None:
        from studies.singular_they.human import add_nb_groups
        from studies.singular_they.panel import simulate_panel

        say("NOTE: no --human file given: the human side uses a SIMULATED panel of participants "
            "(illustrative parameters; see studies/singular_they/panel.py). Every table and "
            "figure built from it is labelled SIMULATED.")
        return add_nb_groups(simulate_panel(stimuli, seed=run.seed)), True
    from studies.singular_they.human import load_human

    human, human_log = load_human(run.args.human, stimuli)
    run.log.extend(human_log)
    return human, False


def load(run, _):
    args = run.args
    stimuli = load_stimuli(Path(args.stimuli) if args.stimuli else None)
    human, simulated = human_side(run, stimuli)
    run.add_data_files([STIMULI_DIR / "frames.tsv", STIMULI_DIR / "inanimate_controls.tsv",
                        args.human, args.stimuli])
    return SimpleNamespace(stimuli=stimuli, human=human, simulated=simulated)


def score(run, s):
    say(f"[1/5] scoring {len(s.stimuli)} stimuli with {run.args.model}")
    s.lm = run.model()
    s.scored = A.score_targets(s.stimuli, s.lm, **run.cache)
    run.write_csv("item_scores.csv", s.scored)
    return s


def fit(run, s):
    args = run.args
    # unchanged fits are reused from the fit cache, next to the score cache
    twin = {"bayes": run.bayes, "draws": args.draws, "seed": run.seed, "loo": False, **run.cache}
    say("[2/5] fitting surprisal ~ close + gendered + (1|frame)")
    s.backends = lmm_backends(run)
    s.model_fits = fit_with_twin(A.MODEL_FORMULA, A.close_gendered_rows(s.scored),
                                 backends=s.backends, **twin)
    # Watson et al.'s scale (nats, +/-1): the estimates to compare with the paper's.
    s.paper_fits = fit_with_twin(A.PAPER_FORMULA, A.paper_scale_rows(
        A.close_gendered_rows(s.scored)), backends=s.backends, **{**twin, "bayes": False})

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
    human_twin = {**twin, "contrasts": A.HUMAN_CONTRASTS}
    s.human_fits = {}
    if "lme4" in s.backends:
        s.human_fits = fit_with_twin(A.HUMAN_FORMULA, human_rows, backends=["lme4"], **human_twin)
    else:
        run.note("the human model has crossed random effects (participant and item), which "
                 "only the lme4 backend fits; it was skipped")
        if run.bayes:
            s.human_fits = fit_with_twin(A.HUMAN_FORMULA, human_rows, backends=[], **human_twin)
    run.record_fits("model LMM, paper scale", s.paper_fits)
    run.record_fits("model LMM", s.model_fits)
    run.record_fits("human model", s.human_fits)
    for note in reused_fits_note({"model LMM, paper scale": s.paper_fits,
                                  "model LMM": s.model_fits, "human model": s.human_fits}):
        run.note(note)
    run.add_provenance(stimuli_version=STIMULI_VERSION, simulated_human_data=s.simulated,
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
        f"Stimuli: {len(s.stimuli)} (version {STIMULI_VERSION}: 40 frames x 8 antecedent types "
        f"+ 15 inanimate controls, written for gbstats because the original frames are "
        f"unpublished). Human data: "
        + ("a SIMULATED panel (no real judgements are public)." if simulated
           else f"`{run.args.human}`.")
        + run.notes_markdown()))
    report.table("stimuli_summary",
                 A.stimuli_summary(s.stimuli)[["antecedent_type", "label", "n"]],
                 "Stimuli per antecedent type")

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
                 f"The model comparable with Watson et al. (2023): `{A.PAPER_FORMULA}` on the "
                 f"four closeness x gender conditions ({n_bold} items): surprisal in nats, "
                 "close and gendered coded +1/-1 (columns close_pm1, gendered_pm1), so a slope "
                 "is half the difference between its two levels. lme4: REML, Satterthwaite t "
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
