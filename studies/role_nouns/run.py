"""`python -m studies.role_nouns`: the main job, end to end.

load the production data and P(V) -> score "NAME is a VARIANT from STATE." for
every name x set x variant x state (unless --model none) -> the three methods'
P(V | C), averaged over states -> each group's log-likelihood with bootstrap
CIs and a permutation test of best vs next -> proportions and figures -> the
direct method vs the Bayesian one -> the human data's own GLMM -> report.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from gbstats.data import role_nouns as rn
from gbstats.exclusions import ExclusionLog
from studies.common import (add_common_flags, dataset_checksums, load_model, model_record,
                            run_main, say, wants_model)
from studies.role_nouns import analysis as A
from studies.role_nouns.stimuli import STATES, choose_states, stimulus_grid

STUDY = "role_nouns"
DATASETS = ["papineau2022", "watson2023"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m studies.role_nouns",
        description="Role nouns (Watson, Beekhuizen & Stevenson 2023 on the production data of "
                    "Papineau, Podesva & Degen 2022): which attitude group does a language "
                    "model's choice of firefighter / fireman / firewoman resemble?")
    p.add_argument("--states", type=int, default=None, metavar="N",
                   help=f"score a seeded sample of N states for a quick run (default: all "
                        f"{len(STATES)})")
    p.add_argument("--sets", default=None, metavar="SET[,SET...]",
                   help="restrict the whole study (people and model) to these role-noun sets, "
                        "named by their gender-neutral form, e.g. firefighter,actor; for quick "
                        "runs (the left-out trials are counted as exclusions). Default: all 20")
    p.add_argument("--n-boot", type=int, default=2000,
                   help="bootstrap resamples of participants for CIs (default: %(default)s)")
    p.add_argument("--n-perm", type=int, default=5000,
                   help="permutations for the best-vs-next group test (default: %(default)s)")
    p.add_argument("--no-lme4", action="store_true",
                   help="skip the lme4 GLMM of the human data")
    return add_common_flags(p, STUDY, model_none=True)


def load_data(args, log: ExclusionLog):
    from gbstats.data.registry import load_dataset

    chosen = A.parse_sets(args.sets) if args.sets else None  # a typo fails before loading
    data = load_dataset("papineau2022", args.data_dir)
    log.extend(data.exclusions)
    trials, prior = data.tables["trials"], data.tables["variant_prior"]
    if chosen:
        trials = log.drop(trials, ~trials["role_noun_set"].isin(chosen),
                          f"role-noun set not among --sets {','.join(chosen)}", unit="trials",
                          stage=STUDY)
        prior = prior[prior["role_noun_set"].isin(chosen)].reset_index(drop=True)
    return trials, prior


def model_predictions(args, prior, notes: list[str]):
    """(lm, frame-level probabilities, item-level probabilities, direct-method outputs)."""
    from studies.role_nouns import scoring as S

    lm = load_model(args)
    states = choose_states(args.states, args.seed)
    grid = stimulus_grid(states, variants=prior[["role_noun_set", "set_type", "variant",
                                                 "variant_gender"]])
    say(f"[2/6] scoring {len(grid)} sentences ({len(states)} states) with {lm.name}")
    scored = S.score_grid(grid, lm, use_cache=not args.no_cache, cache_dir=args.cache_dir)
    frame_probs = A.frame_probabilities(scored, prior,
                                        score_is="joint" if lm.kind == "causal" else "likelihood")
    item_probs = A.average_over_states(frame_probs)
    sets = A.single_token_sets(prior, S.n_pieces_function(lm))
    direct = None
    if sets:
        say(f"      direct method on {len(sets)} single-token set(s): {', '.join(sets)}")
        cells = S.direct_method(grid, sets, lm, use_cache=not args.no_cache,
                                cache_dir=args.cache_dir)
        direct = A.direct_vs_posterior(cells, frame_probs)
    else:
        notes.append(f"No role-noun set has only single-token variants for {lm.name}, so the "
                     "direct method was not run.")
    return lm, states, scored, item_probs, direct


def fit_human_model(args, trials, notes: list[str]) -> dict:
    from gbstats.engines.lme4 import available as lme4_available

    rows = A.glmm_rows(trials)
    fits = {}
    if args.no_lme4:
        notes.append("The lme4 GLMM was skipped (--no-lme4).")
    elif not lme4_available():
        notes.append("R/lme4 is not installed, so the lme4 GLMM was skipped (statsmodels has "
                     "no maximum-likelihood GLMM). Install r-base-core and r-cran-lme4.")
    else:
        from gbstats.lmm import fit_glmm

        fits["lme4"] = fit_glmm(A.GLMM_FORMULA, rows, family="binomial", backend="lme4")
    if not args.no_bayes:
        from gbstats.bayes import fit_bayes

        fits["pymc"] = fit_bayes(A.GLMM_FORMULA, rows, family="bernoulli", draws=args.draws,
                                 tune=args.draws, seed=args.seed)
    return fits


def run(args) -> dict:
    from gbstats.report import StudyReport, provenance

    log = ExclusionLog()
    notes: list[str] = []
    say("[1/6] loading papineau2022 (trials, participants, P(V) from watson2023 counts)")
    trials, prior = load_data(args, log)

    lm, states, scored, direct = None, [], None, None
    if wants_model(args.model):
        lm, states, scored, item_probs, direct = model_predictions(args, prior, notes)
    else:
        say("[2/6] --model none: frequency prior only, no scoring")
        item_probs = A.prior_item_probabilities(prior)

    say("[3/6] group log-likelihoods with participant-bootstrap CIs")
    loglik = A.group_loglik_table(trials, item_probs, n_boot=args.n_boot, seed=args.seed)
    say("[4/6] permutation tests: best-fitting group vs the next")
    tests = A.best_group_tests(trials, item_probs, n_perm=args.n_perm, n_boot=args.n_boot,
                               seed=args.seed)
    proportions = A.proportions_table(trials, item_probs)

    say("[5/6] the human data's own model: " + A.GLMM_FORMULA)
    fits = fit_human_model(args, trials, notes)

    say("[6/6] writing the report")
    report = StudyReport(STUDY, args.out, "Role nouns: which group does the model resemble?")
    write_report(report, lm, states, trials, prior, item_probs, loglik, tests, proportions,
                 direct, fits, notes, log)
    out = Path(args.out)
    item_probs.to_csv(out / "item_probabilities.csv", index=False)
    if scored is not None:
        scored.to_csv(out / "sentence_scores.csv", index=False)
    prov = provenance(STUDY, seed=args.seed,
                      models=[model_record(lm)] if lm is not None else [],
                      data_files=dataset_checksums(DATASETS, args.data_dir),
                      extra={"states": states, "n_states": len(states),
                             "scoring": _scoring_label(lm), "n_boot": args.n_boot,
                             "n_perm": args.n_perm, "bayes": not args.no_bayes,
                             "draws": args.draws, "glmm_formula": A.GLMM_FORMULA})
    paths = report.write(prov)
    say(f"wrote {paths['report']} and {paths['results']}")
    return paths


def _scoring_label(lm) -> str:
    if lm is None:
        return "none (--model none: frequency prior only)"
    if lm.kind == "causal":
        return "causal: P(V|C) from the full-sentence probability normalised over the variants"
    return "masked: P(C|V) as the pll_original PLL of the context words given the sentence with V"


def _states_text(states: list[str]) -> str:
    if len(states) == len(STATES):
        return f"all {len(STATES)}"
    return "a seeded sample: " + ", ".join(states)


def write_report(report, lm, states, trials, prior, item_probs, loglik, tests, proportions,
                 direct, fits, notes, log) -> None:
    if lm is None:
        design_model = ("No language model (`--model none`): only the frequency baseline "
                        "`corpus_prior` is computed.")
    else:
        design_model = (
            f"Model: `{lm.name}` ({lm.model_id}, revision {lm.revision}), a {lm.kind} LM. "
            f"Scoring that ran: **{_scoring_label(lm)}**. Stimuli: \"NAME is a/an VARIANT from "
            f"STATE.\" for 24 names x {prior['role_noun_set'].nunique()} sets x their "
            f"variants x {len(states)} state(s) ({_states_text(states)}); "
            "the article is the grammatical one for the set (an anchor, an actor, an heir) "
            "and is shared by all variants of a set. Frame-level probabilities are averaged "
            "over states.\n\n"
            "Methods (related by posterior ∝ model_likelihood x corpus_prior in every "
            "frame): `corpus_prior` = P(V), the variant's share of its set's Wikipedia + "
            "BookCorpus counts; "
            + ("`posterior` = P_LM(V|C), the full-sentence probability normalised over the "
               "set's variants (a causal LM gives P(V|C) directly); `model_likelihood` = the "
               "implied P(C|V) ∝ P_LM(V|C) / P(V), i.e. the LM's prediction with the corpus "
               "prior divided out (exact if the LM's own prior over the variants equals the "
               "corpus prior)." if lm.kind == "causal" else
               "`model_likelihood` = P(C|V) normalised over the set's variants (the paper's "
               "'BERT likelihood'); `posterior` = model_likelihood x P(V), renormalised (the "
               "paper's frequency-weighted posterior, its main method)."))
    report.section("Design", (
        "Human data: Papineau, Podesva & Degen (2022) production task, "
        f"{trials['participant'].nunique()} participants, {len(trials)} critical trials "
        "(after the exclusions below); attitude tertiles of the Social Roles Questionnaire "
        "score and party from alignment 1-5. "
        + design_model
        + ("\n\n" + "\n".join(f"- {n}" for n in notes) if notes else "")))

    report.section("Group log-likelihood (Watson et al. Tables 1 and 5)", (
        "Mean natural log-probability per response of each group's choices under each "
        "method's P(V | name, set); higher (closer to 0) = the method predicts that group "
        "better. 95% CIs: percentile bootstrap resampling participants within their group."))
    report.table("group_loglik", loglik, "Mean log-likelihood per group, method, set type "
                 "and grouping, for men's names, women's names and all", digits=3)
    for set_type in rn.SET_TYPES:
        for grouping in A.GROUPINGS:
            report.figure(f"loglik_{set_type.replace('-', '')}_{grouping}",
                          A.plot_group_loglik(loglik, set_type, grouping,
                                              f"{set_type} sets, by {grouping}"),
                          f"Mean log-likelihood (all names) by {grouping} group, {set_type} "
                          "sets, with 95% participant-bootstrap CIs")
    report.table("best_group_tests", tests,
                 "Best-fitting group vs the next: difference of mean log-likelihoods, "
                 "bootstrap CI and two-sided permutation p-value (participants' group labels "
                 "shuffled); not adjusted for choosing the top two groups. p_holm: Holm within "
                 "the row's family (all tests of one method)", digits=3)

    report.section("Proportions of FEM, MASC and G-NEUT forms (cf. the paper's Figures 1 "
                   "and 3)", "People: share of responses per attitude group and name "
                   "gender. Model: each method's mean probability of each form over the "
                   "name x set items (each item counted once).")
    report.table("proportions", proportions, "Proportions of response forms: people by "
                 "attitude group, and each method's predictions", digits=3)
    for set_type in rn.SET_TYPES:
        report.figure(f"proportions_{set_type.replace('-', '')}",
                      A.plot_proportions(proportions, set_type,
                                         f"{set_type} role-noun sets"),
                      f"Proportion of FEM / MASC / G-NEUT forms, {set_type} sets: people by "
                      "attitude group, then the model's predictions")

    if direct is not None:
        cells, corr = direct
        report.section("Direct method vs the Bayesian method", (
            "For sets whose variants are all single tokens of the model, the variant in a "
            "blank slot renormalised over the set (`direct`), against the `posterior`, over "
            "every name x state x variant cell (Watson et al. report r = .76 for BERT on 8 "
            "sets)."
            + (" A causal LM sees only the left context \"NAME is a\" in this method, so its "
               "direct prediction is the same in every state." if lm.kind == "causal" else "")))
        report.table("direct_method_correlation", corr,
                     f"Pearson correlation of the direct method with the posterior over "
                     f"{len(cells)} cells", digits=3)

    if fits:
        report.section("The human data's own model", (
            f"Binomial GLMM `{A.GLMM_FORMULA}`: neutral = 1 for the G-NEUT form (the "
            "unmarked form of 2-way sets counts as G-NEUT, as in Watson et al.); "
            "name_gender reference level: men's names; attitude_score 0-100, higher = more "
            "conservative. lme4: Laplace ML, Wald z. pymc: posterior mean, SD and 95% "
            "interval (bambi's default priors)."))
        report.table("human_glmm", A.fit_table(fits), "Choosing the gender-neutral form: "
                     "lme4 and Bayesian fits side by side (log-odds)", digits=3)
    report.warnings(A.fit_warnings(fits, "human GLMM"))
    report.exclusions(log)


def main(argv: list[str] | None = None) -> int:
    return run_main(STUDY, build_parser(), run, argv)
