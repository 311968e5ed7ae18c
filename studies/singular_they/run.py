"""`python -m studies.singular_they`: the main job, end to end.

load stimuli -> score the target form -> fit closeness x gender -> join with
human judgements (or the SIMULATED panel) -> correlations per group, tests of
alignment, Mann-Whitney tests, the human data's own model -> report.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from gbstats.exclusions import ExclusionLog
from studies.common import add_common_flags, load_model, model_record, run_main, say
from studies.singular_they import analysis as A
from studies.singular_they.stimuli import STIMULI_DIR, STIMULI_VERSION, load_stimuli

STUDY = "singular_they"
P_COLUMNS = ("p_value", "p_holm")
AL_FORMULA = "rating ~ score_z * group + (1 + score_z | participant) + (1 | item) + (1 | item:group)"
DEFAULT_OUT = Path("reports") / STUDY


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m studies.singular_they",
        description="Singular 'they' (Watson, Beekhuizen & Stevenson 2023; design of Camilliere "
                    "et al. 2021): how surprising is 'they' after each kind of antecedent for a "
                    "language model, does closeness x gender explain it, and which group of "
                    "people does the model's pattern resemble?")
    p.add_argument("--human", default=None, metavar="FILE",
                   help="trial-level human judgements (see README for the columns; the "
                        "Camilliere et al. camilliere_data.txt layout is accepted). "
                        "Without it the study runs on a SIMULATED panel")
    p.add_argument("--stimuli", default=None, metavar="FILE",
                   help="your own stimuli (same columns as data/singular_they/stimuli.tsv); "
                        "default: the shipped 335 stimuli")
    p.add_argument("--backend", default="both", choices=["both", "lme4", "statsmodels"],
                   help="mixed-model backend(s) for the model-side LMM: both (default; lme4 "
                        "and statsmodels, which must agree), or one of them")
    p.add_argument("--n-boot", type=int, default=2000,
                   help="bootstrap resamples for correlation CIs (default: %(default)s)")
    p.add_argument("--write-stimuli", action="store_true",
                   help="regenerate data/singular_they/stimuli.tsv from the frames and exit")
    return add_common_flags(p, STUDY)


def lmm_backends(choice: str) -> tuple[list[str], list[str]]:
    """Backends to run and notices; without R, lme4 falls back to statsmodels, said aloud."""
    from gbstats.engines.lme4 import available as lme4_available

    wanted = ["lme4", "statsmodels"] if choice == "both" else [choice]
    if "lme4" in wanted and not lme4_available():
        note = ("R/lme4 is not installed: the lme4 fits are skipped and the model-side LMM uses "
                "statsmodels only. Install R with `make setup` as root, or apt-get install "
                "r-base-core r-cran-lme4 r-cran-lmertest.")
        return [b for b in wanted if b != "lme4"] or ["statsmodels"], [note]
    return wanted, []


def human_side(args, stimuli: pd.DataFrame, log: ExclusionLog):
    if args.human is None:
        from studies.singular_they.human import add_nb_groups
        from studies.singular_they.panel import simulate_panel

        return add_nb_groups(simulate_panel(stimuli, seed=args.seed)), True
    from studies.singular_they.human import load_human

    human, human_log = load_human(args.human, stimuli)
    log.extend(human_log)
    return human, False


def run(args) -> dict:
    from gbstats.report import StudyReport, file_checksums, provenance

    log = ExclusionLog()
    notes: list[str] = []
    stimuli = load_stimuli(Path(args.stimuli) if args.stimuli else None)
    human, simulated = human_side(args, stimuli, log)
    if simulated:
        say("NOTE: no --human file given: the human side uses a SIMULATED panel of participants "
            "(illustrative parameters; see studies/singular_they/panel.py). Every table and "
            "figure built from it is labelled SIMULATED.")

    say(f"[1/5] scoring {len(stimuli)} stimuli with {args.model}")
    lm = load_model(args)
    scored = A.score_targets(stimuli, lm, use_cache=not args.no_cache, cache_dir=args.cache_dir)

    say("[2/5] fitting surprisal ~ close + gendered + (1|frame)")
    backends, backend_notes = lmm_backends(args.backend)
    notes += backend_notes
    model_fits = A.fit_all_backends(A.MODEL_FORMULA, A.close_gendered_rows(scored), backends,
                                    bayes=not args.no_bayes, draws=args.draws, seed=args.seed)

    say("[3/5] correlating the model with each group of people")
    for grouping in ("nb_group",):
        n_missing = human.loc[human[grouping].isna(), "participant"].nunique()
        log.record(f"participants without a nonbinary acceptance score (left out of the "
                   f"{grouping} grouping only)", n_missing, unit="participants", stage="alignment")
    correlations, comparisons = A.alignment_correlations(scored, human, n_boot=args.n_boot,
                                                         seed=args.seed)
    mann_whitney = A.stage_mann_whitney(human, exclusions=log)
    corrected = rq2_corrected(args, scored, human, backends, notes)

    say("[4/5] fitting the human data's own model")
    human_rows = A.human_model_rows(human, stimuli)
    human_fits = {}
    if "lme4" in backends:
        human_fits = A.fit_all_backends(A.HUMAN_FORMULA, human_rows, ["lme4"],
                                        bayes=not args.no_bayes, draws=args.draws, seed=args.seed)
    else:
        notes.append("the human model has crossed random effects (participant and item), which "
                     "only the lme4 backend fits; it was skipped")
        if not args.no_bayes:
            human_fits = A.fit_all_backends(A.HUMAN_FORMULA, human_rows, [], bayes=True,
                                            draws=args.draws, seed=args.seed)

    say("[5/5] writing the report")
    report = StudyReport(STUDY, args.out, "Singular *they*: language model vs. people")
    write_report(report, args, lm, stimuli, scored, model_fits, human_fits, correlations,
                 comparisons, mann_whitney, simulated, notes, log, corrected)
    data_files = file_checksums([STIMULI_DIR / "frames.tsv", STIMULI_DIR / "inanimate_controls.tsv"]
                                + ([args.human] if args.human else [])
                                + ([args.stimuli] if args.stimuli else []))
    prov = provenance(STUDY, seed=args.seed, models=[model_record(lm)],
                      data_files=data_files,
                      extra={"stimuli_version": STIMULI_VERSION, "simulated_human_data": simulated,
                             "backends": backends, "bayes": not args.no_bayes,
                             "draws": args.draws, "n_boot": args.n_boot})
    scored.to_csv(Path(args.out) / "item_scores.csv", index=False)
    paths = report.write(prov)
    say(f"wrote {paths['report']} and {paths['results']}")
    return paths


def rq2_corrected(args, scored, human, backends, notes) -> dict:
    """The corrected RQ2 views (studies.singular_they.alignment)."""
    from studies.singular_they import alignment as AL

    reliability = AL.reliability_table(scored, human, n_boot=args.n_boot, seed=args.seed)
    matched = AL.holm_families(AL.size_matched_table(scored, human, n_boot=args.n_boot,
                                                     seed=args.seed), AL.size_matched_family)
    lmm, fits = None, {}
    if "lme4" in backends or not args.no_bayes:
        lmm, fits = AL.alignment_lmm_table(
            scored, human, backends=["lme4"] if "lme4" in backends else [],
            bayes=not args.no_bayes, draws=args.draws, seed=args.seed)
        lmm = AL.holm_families(lmm, AL.lmm_family)
    else:
        notes.append("the alignment mixed model has crossed random effects, which only lme4 "
                     "(or --bayes) fits; it was skipped")
    return {"reliability": reliability, "size_matched": matched, "lmm": lmm, "lmm_fits": fits}


def write_rq2_corrected(report, corrected: dict, simulated: bool) -> None:
    report.section("RQ2: which group of people does the model resemble?", (
        "Three views that do not confound a group's size with its alignment (see the README, "
        "'Which alignment number to cite'). (1) The correlation of the model's surprisal with "
        "each group's mean ratings, corrected for the noise in those means: split-half "
        "reliability (Spearman-Brown, averaged over random splits of the group's "
        "participants), noise ceiling = sqrt(reliability), r_corrected = r / noise ceiling "
        "(Spearman 1904), with a 95% bias-corrected two-way bootstrap interval that resamples "
        "participants and items. (2) Every group subsampled to the smallest group's size and "
        "compared pairwise. (3) The mixed model "
        f"`{AL_FORMULA}` (lme4; score_z = surprisal standardised over items), whose "
        "score_z:group terms are the alignment differences from the first group. p_holm: Holm "
        "adjustment within the family named in each row."), simulated=simulated)
    report.table("group_reliability", corrected["reliability"],
                 "Reliability of each group's item means, noise ceiling and the "
                 "attenuation-corrected correlation with the model's surprisal (95% two-way "
                 "bootstrap BC interval)", simulated=simulated, digits=3)
    report.table("size_matched_comparisons", corrected["size_matched"],
                 "Size-matched comparison: each group's r averaged over subsamples of the "
                 "smallest group's size; difference a - b with a bootstrap interval over items "
                 "and fresh subsamples, two-sided p, Holm within family", simulated=simulated,
                 digits=3, p_columns=P_COLUMNS)
    if corrected["lmm"] is not None:
        report.table("alignment_lmm", corrected["lmm"],
                     "Alignment mixed model, all items; score_z:group[g] = group g's slope on "
                     "standardised surprisal minus the first group's (rating points per SD). "
                     "lme4: REML, Satterthwaite df; pymc: posterior mean, SD, 95% interval",
                     simulated=simulated, digits=3, p_columns=P_COLUMNS)


def write_report(report, args, lm, stimuli, scored, model_fits, human_fits, correlations,
                 comparisons, mann_whitney, simulated, notes, log, corrected=None) -> None:
    how = ("the probability of the target form given the words before it (causal LM)"
           if lm.kind == "causal" else "the target form in a masked slot (masked LM)")
    report.section("Design", (
        f"Model: `{lm.name}` ({lm.model_id}, revision {lm.revision}); scored as {how}. "
        f"Stimuli: {len(stimuli)} (version {STIMULI_VERSION}: 40 frames x 8 antecedent types "
        f"+ 15 inanimate controls, written for gbstats because the original frames are "
        f"unpublished). Human data: "
        + ("a SIMULATED panel (no real judgements are public)." if simulated
           else f"`{args.human}`.")
        + ("\n\n" + "\n".join(f"- {n}" for n in notes) if notes else "")))
    report.table("stimuli_summary", A.stimuli_summary(stimuli)[["antecedent_type", "label", "n"]],
                 "Stimuli per antecedent type")

    report.section("RQ1: surprisal of the target form by antecedent type")
    by_type = A.surprisal_by_type(scored)
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
    report.table("lmm_close_gendered", A.fit_table(model_fits),
                 f"`{A.MODEL_FORMULA}` on the four closeness x gender conditions "
                 f"({int(A.close_gendered_rows(scored).shape[0])} items), by backend. "
                 "lme4: REML, Satterthwaite df; statsmodels: REML, Wald z; pymc: posterior "
                 "mean, SD and 95% interval")

    if corrected is not None:
        write_rq2_corrected(report, corrected, simulated)
    report.section("RQ2 as in Watson et al. (2023): raw correlations", (
        "The paper's analysis, kept for comparability: Pearson correlations between the "
        "model's item scores and each group's mean rating per item. A raw r is lower for a "
        "smaller group by construction (its item means are noisier), so differences between "
        "groups here mix alignment with group size; cite the corrected analysis above. 95% "
        "CIs: two-way bootstrap (participants and items), bias-corrected percentile. "
        "Surprisal should correlate negatively with naturalness. The comparisons test whether "
        "the model's scores correlate more strongly with one group's ratings than another's "
        "(Steiger's Z for dependent correlations sharing the model variable, with Zou's CI; "
        "p_holm: Holm within one family per grouping). The Mann-Whitney tests form one "
        "family of four."),
        simulated=simulated)
    report.table("group_correlations", correlations,
                 "Correlation of model scores with each group's mean ratings", simulated=simulated,
                 digits=3)
    if not comparisons.empty:
        from studies.singular_they import alignment as AL

        comparisons = AL.holm_families(comparisons, AL.steiger_family)
        report.table("group_correlation_comparisons", comparisons,
                     "Does the model align with one group better than another?",
                     simulated=simulated, p_columns=P_COLUMNS)
    if not mann_whitney.empty:
        from studies.singular_they import alignment as AL

        mann_whitney = AL.holm_families(mann_whitney, AL.mann_whitney_family)
        report.table("mann_whitney", mann_whitney,
                     "Survey scores between adjacent linguistic stages (one-tailed Mann-Whitney, "
                     "alternative: the earlier stage scores lower)", simulated=simulated,
                     p_columns=P_COLUMNS)
    if human_fits:
        report.table("human_model", A.fit_table(human_fits),
                     f"People's ratings: `{A.HUMAN_FORMULA}`", simulated=simulated)
        side = A.side_by_side(model_fits, human_fits)
        report.table("model_vs_human_effects", side,
                     "Closeness and gender effects: model surprisal vs. people's ratings "
                     "(opposite signs expected: surprisal is lower where ratings are higher)",
                     simulated=simulated)
    report.warnings(A.fit_warnings(model_fits, "model LMM") + A.fit_warnings(human_fits, "human model")
                    + [w for grouping, fits in (corrected or {}).get("lmm_fits", {}).items()
                       for w in A.fit_warnings(fits, f"alignment mixed model ({grouping})")])
    report.exclusions(log)


def write_stimuli_or_run(args) -> None:
    if args.write_stimuli:
        path = STIMULI_DIR / "stimuli.tsv"
        load_stimuli().to_csv(path, sep="\t", index=False)
        say(f"wrote {path}")
        return
    run(args)


def main(argv: list[str] | None = None) -> int:
    return run_main(STUDY, build_parser(), write_stimuli_or_run, argv)
