"""The singular-*they* study's steps, run by studies.pipeline (declared in run.py).

load stimuli (and human judgements, or the SIMULATED panel) -> score the target
form -> fit closeness x gender, correlate with each group, the human data's own
model -> report.
"""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from gbstats.data.camilliere2021 import read_corrections
from models.registry import described_as
from models.scores import recorded_scoring
from studies.common import say
from studies.singular_they import alignment as AL
from studies.singular_they import analysis as A
from studies.singular_they import presentation as V
from studies.singular_they import published as P
from studies.singular_they.plots import write_effects_figure
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


def first_engine(fits: dict) -> dict:
    """The fit a paper prints of one model's fits {engine: FitResult}: the first (lme4 where R
    is installed, else statsmodels)."""
    return dict(list(fits.items())[:1])


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
    if args.human is not None:  # before the stimuli load: a typo in the path fails at once
        from gbstats.data.validate import require_readable_file

        require_readable_file(args.human, column="--human")
    as_published, text_reason = choose_text(args.stimuli, human_given=args.human is not None,
                                            as_published=args.as_published,
                                            keep_corrections=args.keep_corrections)
    stimuli, corrections = select_stimuli(args.stimuli, args.data_dir,
                                          as_published=as_published)
    trimmed = stimuli.attrs.get("prefixes_trimmed", 0)
    if trimmed:
        run.note(f"{trimmed} prefix(es) of {args.stimuli} ended in whitespace; it was removed, "
                 f"so each target form is scored after exactly one space (' they'), as in the "
                 f"sentence.")
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
    rows = A.close_gendered_rows(s.scored)
    human_rows = A.human_factor_rows(A.human_model_rows(s.human, s.stimuli))
    # Both twins start now, in the background, one after the other: their compiling and
    # sampling (about 25 s cold) overlap with the correlations, which need no fit, and then
    # with the R fits (gbstats.mixed.background). The correlations come first for that
    # reason: with the model LMM fitted first, the run waited for its twin before them
    # (the main job's cold run on a quiet machine: 43 s, 38 s in this order; issue 41).
    run.start_twin(A.MODEL_FORMULA, rows, name="model LMM", loo=False)
    run.start_twin(A.HUMAN_FORMULA, human_rows, name="human model",
                   contrasts=A.HUMAN_CONTRASTS, loo=False)
    # what the model LMM will be fitted with (no R: statsmodels); the alignment model reads it
    s.backends = run.frequentist_backends(A.MODEL_FORMULA, "gaussian", lmm_backends(run),
                                          "model LMM")

    say("[2/5] correlating the model with each group of people")
    for grouping in ("nb_group",):
        n_missing = s.human.loc[s.human[grouping].isna(), "participant"].nunique()
        run.log.record(f"participants without a nonbinary acceptance score (left out of the "
                       f"{V.GROUPING_WORDS[grouping].lower()} grouping only)", n_missing,
                       unit="participants",
                       stage="alignment")
    for grouping, why in A.skipped_groupings(s.human).items():
        run.note(f"RQ2 by {grouping}: left out, because {why}.")
    # seeded bootstraps over 8 subsets (about 3 s): an unchanged call is reused, so a warm
    # re-run (a figure or wording edit) skips it (gbstats.mixed.fit_cache.cached_call)
    from gbstats.mixed.fit_cache import cached_call

    (s.correlations, s.comparisons), _ = cached_call(
        A.alignment_correlations, s.scored, s.human, n_boot=args.n_boot, seed=run.seed,
        **run.cache)
    (s.mann_whitney, left_out), _ = cached_call(A.stage_mann_whitney_with_log, s.human,
                                                **run.cache)
    run.log.extend(left_out)
    AL.fit_rq2(run, s)

    say("[3/5] fitting surprisal ~ close + gendered + (1|frame)")
    s.model_fits = run.fit(A.MODEL_FORMULA, rows, name="model LMM", backends=s.backends,
                           loo=False)
    # Watson et al.'s regression as their R code fits it (nats, +/-1, (1|itm)): the
    # estimates to compare with the paper's.
    say(f"      and Watson et al.'s {A.PAPER_FORMULA}")
    s.paper_fits = run.fit(A.PAPER_FORMULA, A.paper_scale_rows(rows),
                           name="model LMM, paper scale", backends=s.backends, twin=False,
                           loo=False)

    say("[4/5] fitting the human data's own model")
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


def rating_scale_words(human: pd.DataFrame, simulated: bool) -> str:
    """The ratings' unit in words: the simulated panel's 1-7 scale, or, for a --human file
    on any numeric scale (a 0-100 slider, a 1-5 Likert), the range the file holds."""
    if simulated:
        return "estimates in points of the 1-7 rating scale"
    low, high = float(human["rating"].min()), float(human["rating"].max())
    return (f"estimates in points of the ratings' own scale (the file's ratings run from "
            f"{low:g} to {high:g})")


def report(run, report, s) -> None:
    lm, scored, simulated = s.lm, s.scored, s.simulated
    scoring = recorded_scoring(scored, source="item scores")
    how = P.scoring_description(scored, scoring)
    report.section("Design", (
        f"Model: {described_as(lm.name, lm.model_id)} (`{lm.name}`, revision {lm.revision}); "
        f"scored as {how}. "
        + stimuli_description(s.stimuli, s.corrections, s.text_reason) + " Human data: "
        + ("a SIMULATED panel (no real judgements are public)." if simulated
           else f"`{run.args.human}`.")
        + " " + QUANTITIES + run.notes_markdown()))
    summary = A.stimuli_summary(s.stimuli)[["antecedent_type", "label", "n"]]
    report.table("stimuli_summary", V.stimuli_view(summary),
                 "Stimuli per antecedent type", labels=V.LABELS, record=summary,
                 notes=[f"{len(s.stimuli)} stimuli in all."])
    if s.corrections is not None and len(s.corrections):
        shown, why = V.typos_view(s.corrections)
        report.table("stimulus_corrections", shown,
                     "Typos in the published stimuli, corrected before scoring",
                     labels=V.TYPO_LABELS, groups="type", record=s.corrections,
                     notes=["The words around each typo; the whole sentences are in "
                            "results.json. A run with the as-published option scores the "
                            "published text."] + why)
    elif s.corrections is not None:
        typos = read_corrections(CORRECTIONS_FILE)
        shown, why = V.typos_view(typos)
        report.table("stimulus_typos_left", shown,
                     "Known typos in the published stimuli, scored as published (the text "
                     "participants most likely rated)",
                     labels={**V.TYPO_LABELS, "corrected": "Correction"}, groups="type",
                     record=typos,
                     notes=["The words around each typo; the whole sentences are in "
                            "results.json."] + why)

    report.section("RQ1: surprisal of the target form by antecedent type")
    by_type = A.surprisal_by_type(scored, units="surprisal in bits")
    report.table("surprisal_by_type", V.surprisal_view(by_type),
                 "Surprisal of the target form by antecedent type", record=by_type,
                 labels=V.SURPRISAL_LABELS, decimals={"mean": 2, "ci": 2},
                 notes=["Mean surprisal in bits over the items of each type, with its 95% "
                        "t-interval."])
    # one figure, in bits: a "constant minus surprisal" twin of it (the paper's) showed the
    # same numbers shifted by an arbitrary constant, so its bar lengths meant nothing
    within = A.surprisal_within_items(scored)
    caption = ("Surprisal of the target form by antecedent type, mean over items with 95% "
               f"within-item intervals ({int(within['n'].max())} frames carry all eight "
               "animate types; Cousineau's normalisation with Morey's 2008 correction); the "
               "inanimate controls are other sentences, so their interval is between items; "
               "lower is more expected")
    title = (f"{described_as(lm.name, lm.model_id)}: surprisal of the target form by "
             "antecedent type")
    # drawn once: a rerun writes the files kept from the run that drew it (issue 41)
    report.drawn_figure("surprisal_by_type", A.plot_by_type, [within], caption,
                        draw_options=dict(ylabel="surprisal of the target form (bits)",
                                          title=title), **run.cache)
    n_bold = int(A.close_gendered_rows(scored).shape[0])
    words = {"surprisal_they": "the they-form's surprisal", "surprisal": "the they-form's "
             "surprisal", "gendered": "gender marking", "close": "closeness"}
    items = {"itm": "items", "frame": "items"}
    paper_notes = [f"Model: {report.formula('lmm_close_gendered_paper_scale', A.PAPER_FORMULA, words, items)}"
                   f", on the four closeness × gender conditions ({n_bold} stimuli): surprisal "
                   "in nats, gender marking and closeness coded +1/−1 in the data, so a slope "
                   "is half the difference between its two levels."]
    model_notes = [f"Model: {report.formula('lmm_close_gendered', A.MODEL_FORMULA, words, items)}"
                   f", on the same {n_bold} stimuli: surprisal in bits, closeness and gender "
                   "marking coded 0/1, so a slope is the whole difference in bits (2/ln 2 = "
                   "2.885 times the +1/−1 slope in nats; not comparable with the published "
                   "estimates)."]
    # the paper prints one engine's fit (lme4 where R is installed); the same model in every
    # engine is a check of the analysis, for the appendix of tables.tex (issue 43)
    report.model_table("lmm_close_gendered_paper_scale", V.engine_models(first_engine(s.paper_fits)),
                       "Surprisal (nats) of the they-form by gender marking and closeness, "
                       "as Watson et al.'s (2023) R analysis fits it",
                       data=A.model_fit_table(s.paper_fits, A.PAPER_FORMULA),
                       terms=V.PAPER_TERMS, groups=V.ITEM_GROUPS, notes=paper_notes)
    report.model_table("lmm_close_gendered", V.engine_models(first_engine(s.model_fits)),
                       "Surprisal (bits) of the they-form by gender marking and closeness, "
                       "gbstats' indicator coding",
                       data=A.model_fit_table(s.model_fits, A.MODEL_FORMULA),
                       terms=V.INDICATOR_TERMS, groups=V.ITEM_GROUPS, notes=model_notes)
    for name, fits, terms, notes in (
            ("lmm_close_gendered_paper_scale", s.paper_fits, V.PAPER_TERMS, paper_notes),
            ("lmm_close_gendered", s.model_fits, V.INDICATOR_TERMS, model_notes)):
        if len(fits) > 1:
            report.model_table(f"{name}_engines", V.engine_models(fits),
                               "Engine check: the they-form's surprisal model in every engine "
                               + ("(nats)" if fits is s.paper_fits else "(bits)"),
                               data=False, terms=terms, groups=V.ITEM_GROUPS, notes=notes,
                               appendix=True)

    report_anchor(report, s, scoring)
    if simulated:
        report_panel(report, run.seed)
    AL.report_rq2(report, s)
    if s.human_fits:
        report.model_table("human_model", V.engine_models(s.human_fits),
                           "People's ratings by closeness and gender marking",
                           data=A.fit_table(s.human_fits, units="rating points",
                                            coding=A.HUMAN_CODING),
                           terms=V.HUMAN_TERMS, variables=V.HUMAN_VARIABLES,
                           levels=V.HUMAN_LEVELS, groups=V.HUMAN_GROUPS, simulated=simulated,
                           notes=["People's rating by closeness, gender marking and their "
                                  "interaction, with random intercepts for participants and "
                                  f"items; {rating_scale_words(s.human, simulated)}; "
                                  "+1/−1 (sum) coding, so each main effect is averaged over "
                                  "the other factor and is half the difference between its "
                                  "two levels."])
        effects = A.human_main_effects(s.human_fits)
        report.table("human_main_effects", V.main_effects_view(effects),
                     "Main effects of closeness and gender marking on people's ratings",
                     labels={**V.LABELS, "effect": "Effect"}, simulated=simulated,
                     record=effects,
                     notes=[f"N = {s.human['participant'].nunique()} participants, "
                            f"{len(s.human)} ratings.",
                            "Each effect is the difference between the two marginal means, "
                            "averaged over the other factor (sum coding): twice the +1/−1 "
                            "coefficient of the human model, in rating points."])
        both = A.side_by_side(s.paper_fits, s.human_fits)
        report.table("model_vs_human_effects", V.side_by_side_view(both),
                     "Closeness and gender effects on the model's surprisal and on people's "
                     "ratings, both +1/−1 coded", labels=V.SIDE_LABELS, groups="effect",
                     simulated=simulated, record=both,
                     notes=["Opposite signs are expected: surprisal is lower where ratings are "
                            "higher. The model's regression is Watson et al.'s (surprisal in "
                            "nats, +1/−1 in the data), people's the sum-coded model of ratings; "
                            "compare signs and patterns, not sizes."])
        write_effects_figure(report, both, described_as(lm.name, lm.model_id),
                             simulated=simulated, cache=run.cache)


# Issue 31 (reviewer point 6): the two sides measure different things, said once, plainly.
QUANTITIES = ("The two sides are different quantities: the model's is the probability of the "
              "they-form over its whole vocabulary (or its surprisal), not a choice among "
              "pronouns, so no set of options and no covered probability mass is involved; "
              "people's is a naturalness rating of the whole sentence. The report compares "
              "their patterns over items (correlations, signs of effects), never their levels.")


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
    text = scored_text(s.corrections) or "the stimuli file given to the run"
    table = P.anchor_table(s.paper_fits, model=s.lm.name, scoring=scoring, text=text)
    notes = P.anchor_notes(scoring=scoring, model=s.lm.name, text=text,
                           corrected_bold_items=corrected_bold_items(s.corrections))
    report.section("Published anchor: Watson et al. (2023)", (
        "Watson et al.'s published estimates for bert-base-uncased, beside this run's fit of "
        "the same regression on the same scale (how the two differ: the table's notes). "
        + P.compare_in_words(table)))
    backend = P.anchor_backend(s.paper_fits)
    ours = f"This run ({s.lm.name}, {V.ENGINES.get(backend, backend)})"
    sd = {group: variance ** 0.5 for group, variance in P.PUBLISHED_VARIANCES.items()}
    report.model_table("published_anchor", {ours: s.paper_fits[backend]},
                       "Watson et al.'s (2023) BERT estimates beside this run's, same "
                       "regression and scale", data=table, terms=V.PAPER_TERMS,
                       groups=V.ITEM_GROUPS, published=V.published_estimates(P.PUBLISHED_BERT),
                       compare=ours, gof=("nobs", "groups"),
                       notes=["Model: the they-form's surprisal regressed on gender marking "
                              "and closeness, with random intercepts for items; surprisal in "
                              "nats, +1/−1 coding. "
                              f"Published: Watson et al.'s {P.PUBLISHED_MODEL}, whose "
                              f"random-effect SDs were {sd['itm']:.3f} (items) and "
                              f"{sd['residual']:.3f} (residual)."] + notes)


def panel_n(sizes: dict) -> str:
    """The N of a table of the SIMULATED panel: its people per stage (issue 43)."""
    each = ", ".join(f"{n} {stage}s" for stage, n in sizes.items())
    return f"N = {sum(sizes.values())} simulated participants ({each})."


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
    report.table("panel_parameters", V.parameters_view(PANEL.parameter_rows(seed)),
                 "Parameters of the SIMULATED panel and where each comes from",
                 labels=V.PARAMETER_LABELS, groups="stage", record=PANEL.parameter_table(seed),
                 decimals={"simulated_mean": 3, "published_mean": 3},
                 notes=V.PARAMETER_NOTES + [f"Published values: {PANEL.WATSON_SURVEY_SOURCE}."],
                 simulated=True)
    report.table("panel_rating_means", PANEL.rating_means_table(),
                 "Mean rating (1-7) of the SIMULATED panel by antecedent type and stage, "
                 "illustrative",
                 column_labels={"antecedent_type": "Antecedent type",
                                "non-innovator": "Non-innovators", "innovator": "Innovators",
                                "super-innovator": "Super-innovators"},
                 decimals=1,
                 notes=[panel_n(PANEL.STAGE_SIZES),
                        f"rating = stage mean + participant N(0, {PANEL.SD_PARTICIPANT:g}²) "
                        f"+ item N(0, {PANEL.SD_ITEM:g}²) + residual "
                        f"N(0, {PANEL.SD_RESIDUAL:g}²), unclipped."], simulated=True)
    report.table("panel_survey_tests", V.survey_tests_view(over),
                 "Survey-score tests on the SIMULATED panel at this seed and over seeds, "
                 "beside Watson et al.'s (2023) real participants",
                 labels=V.SURVEY_TESTS_LABELS, groups="score", record=over,
                 p_columns=["p_this_seed", "p_median_over_seeds", "p_published"],
                 notes=[panel_n(PANEL.STAGE_SIZES),
                        f"One-tailed Mann-Whitney tests (earlier stage lower), as in the "
                        f"Mann-Whitney table of RQ2; seeds 0 to {PANEL.N_SEEDS_SHOWN - 1}. "
                        f"Published: {PANEL.WATSON_SURVEY_SOURCE}."], simulated=True)
