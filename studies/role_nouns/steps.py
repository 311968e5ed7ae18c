"""The role-nouns study's steps, run by studies.pipeline (declared in run.py).

load the production data and P(V) -> score "NAME is a VARIANT from STATE." for
every name x set x variant x state (unless --model none) -> the three methods'
P(V | C), averaged over states -> each group's log-likelihood with bootstrap
CIs and a permutation test of best vs next -> proportions and figures -> the
direct method vs the Bayesian one -> the human data's own GLMM -> report.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pandas as pd

from gbstats.data import role_nouns as rn
from studies.common import say
from studies.role_nouns import analysis as A
from studies.role_nouns import presentation as V
from studies.role_nouns.stimuli import STATES, choose_states, stimulus_grid

STUDY = "role_nouns"


def load_data(args, log):
    from gbstats.data.registry import load_dataset

    chosen = A.parse_sets(args.sets) if args.sets else None  # a typo fails before loading
    data = load_dataset("papineau2022", args.data_dir)
    log.extend(data.exclusions)
    trials, prior = data.tables["trials"], data.tables["variant_prior"]
    if chosen:
        trials = log.select(trials, ~trials["role_noun_set"].isin(chosen),
                            f"role-noun set not among --sets {','.join(chosen)}", unit="trials",
                            stage=STUDY)
        prior = prior[prior["role_noun_set"].isin(chosen)].reset_index(drop=True)
    return trials, prior


@dataclass(frozen=True)
class ModelPredictions:
    """What scoring the stimuli gives the later steps."""
    lm: Any                      # the LanguageModel
    states: list[str]            # the states the sentences name
    scored: pd.DataFrame         # one row per sentence
    item_probs: pd.DataFrame     # P(V | C) per item, averaged over states
    direct: pd.DataFrame | None  # the direct method against the posterior, if any set allows


def model_predictions(run, prior, lm=None) -> ModelPredictions:
    """Score every sentence with `lm` (default: --model); the three methods' probabilities
    (see ModelPredictions)."""
    from studies.role_nouns import scoring as S

    args = run.args
    lm = lm if lm is not None else run.model()
    states = choose_states(args.states, args.seed)
    grid = stimulus_grid(states, variants=prior[["role_noun_set", "set_type", "variant",
                                                 "variant_gender"]])
    say(f"[2/6] scoring {len(grid)} sentences ({len(states)} states) with {lm.name}")
    scored = S.score_grid(grid, lm, **run.cache)
    frame_probs = A.frame_probabilities(scored, prior, score_is=S.score_kind(scored))
    item_probs = A.average_over_states(frame_probs)
    sets = A.single_token_sets(prior, S.n_pieces_function(lm, prior["variant"], **run.cache))
    direct = None
    if sets:
        say(f"      direct method on {len(sets)} single-token set(s): {', '.join(sets)}")
        cells = S.direct_method(grid, sets, lm, **run.cache)
        direct = A.direct_vs_posterior(cells, frame_probs)
    else:
        run.note(f"No role-noun set has only single-token variants for {lm.name}, so the "
                     "direct method was not run.")
    return ModelPredictions(lm, states, scored, item_probs, direct)


def fit_human_model(run, trials) -> dict:
    """lme4 GLMM of the human data (unless --no-lme4; without R, run.fit notes the skip) and
    its Bayesian twin."""
    backends = ["lme4"]
    if run.args.no_lme4:
        run.note("The lme4 GLMM was skipped (--no-lme4).")
        backends = []
    return run.fit(A.GLMM_FORMULA, A.glmm_rows(trials), name="human GLMM", backends=backends,
                   family="binomial", **glmm_twin_settings(run))


def glmm_twin_settings(run) -> dict:
    """The GLMM twin's first attempt (analysis.GLMM_TWIN_* say why): twice --draws, within
    --max-draws when it is set, at target acceptance 0.9."""
    draws = A.GLMM_TWIN_DRAWS_FACTOR * run.args.draws
    if run.max_draws is not None:
        draws = max(run.args.draws, min(draws, run.max_draws))
    return {"draws": draws, "target_accept": A.GLMM_TWIN_TARGET_ACCEPT}


def load(run, _):
    say("[1/6] loading papineau2022 (trials, participants, P(V) from watson2023 counts)")
    trials, prior = load_data(run.args, run.log)
    return SimpleNamespace(trials=trials, prior=prior, lm=None, states=[], scored=None,
                           score_is=None, direct=None)


def score(run, s):
    if run.wants_model:
        predicted = model_predictions(run, s.prior)
        s.lm, s.states, s.scored = predicted.lm, predicted.states, predicted.scored
        s.item_probs, s.direct = predicted.item_probs, predicted.direct
        run.write_csv("sentence_scores.csv", s.scored)
        from studies.role_nouns import scoring as S

        s.score_is = S.score_kind(s.scored)
    else:
        say("[2/6] --model none: frequency prior only, no scoring")
        s.item_probs = A.prior_item_probabilities(s.prior)
    run.write_csv("item_probabilities.csv", s.item_probs)
    return s


def fit(run, s):
    args = run.args
    # the GLMM's twin (about 35 s) samples in the background during the bootstraps and the
    # permutation tests; fit_human_model collects it (gbstats.mixed.background)
    run.start_twin(A.GLMM_FORMULA, A.glmm_rows(s.trials), name="human GLMM", family="binomial",
                   **glmm_twin_settings(run))
    say("[3/6] group log-likelihoods with participant-bootstrap CIs")
    s.loglik = A.group_loglik_table(s.trials, s.item_probs, n_boot=args.n_boot, seed=run.seed)
    say("[4/6] permutation tests: best-fitting group vs the next")
    s.tests = A.best_group_tests(s.trials, s.item_probs, n_perm=args.n_perm, n_boot=args.n_boot,
                                 seed=run.seed)
    s.proportions = A.proportions_table(s.trials, s.item_probs)
    say("[5/6] the human data's own model: " + A.GLMM_FORMULA)
    s.fits = fit_human_model(run, s.trials)
    run.add_provenance(states=s.states, n_states=len(s.states),
                       scoring=_scoring_label(s.score_is),
                       n_boot=args.n_boot, n_perm=args.n_perm, bayes=run.bayes,
                       draws=args.draws, glmm_formula=A.GLMM_FORMULA)
    return s


def report(run, report, s) -> None:
    write_report(report, s.lm, s.score_is, s.states, s.trials, s.prior, s.item_probs, s.loglik,
                 s.tests, s.proportions, s.direct, s.fits, run)


def _scoring_label(score_is: str | None) -> str:
    """What ran, from the scores' own record (S.score_kind): "joint" P(V|C) or "likelihood"."""
    if score_is is None:
        return "none (--model none: frequency prior only)"
    if score_is == "joint":
        return "causal: P(V|C) from the full-sentence probability normalised over the variants"
    return "masked: P(C|V) as the pll_original PLL of the context words given the sentence with V"


def _states_text(states: list[str]) -> str:
    if len(states) == len(STATES):
        return f"all {len(STATES)}"
    return "a seeded sample: " + ", ".join(states)


def write_report(report, lm, score_is, states, trials, prior, item_probs, loglik, tests,
                 proportions, direct, fits, run) -> None:
    if lm is None:
        design_model = ("No language model (`--model none`): only the frequency baseline "
                        "`corpus_prior` is computed.")
    else:
        design_model = (
            f"Model: `{lm.name}` ({lm.model_id}, revision {lm.revision}), a {lm.kind} LM. "
            f"Scoring that ran: **{_scoring_label(score_is)}**. Stimuli: \"NAME is a/an VARIANT "
            f"from STATE.\" for 24 names x {prior['role_noun_set'].nunique()} sets x their "
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
               "corpus prior)." if score_is == "joint" else
               "`model_likelihood` = P(C|V) normalised over the set's variants (the paper's "
               "'BERT likelihood'); `posterior` = model_likelihood x P(V), renormalised (the "
               "paper's frequency-weighted posterior, its main method)."))
    report.section("Design", (
        "Human data: Papineau, Podesva & Degen (2022) production task, "
        f"{trials['participant'].nunique()} participants, {len(trials)} critical trials "
        "(after the exclusions below); attitude tertiles of the Social Roles Questionnaire "
        "score and party from alignment 1-5. "
        + design_model
        + run.notes_markdown()))

    report.section("Group log-likelihood (Watson et al. Tables 1 and 5)", (
        "Mean natural log-probability per response of each group's choices under each "
        "method's P(V | name, set); higher (closer to 0) = the method predicts that group "
        "better. 95% CIs: percentile bootstrap resampling participants within their group."))
    report.table("group_loglik", V.loglik_view(loglik),
                 "Mean log-likelihood of each group's choices under each method",
                 labels=V.LOGLIK_LABELS, values=V.VALUES, groups="method", decimals=3,
                 record=loglik,
                 notes=["Mean natural log-probability per response; higher (closer to 0): the "
                        "method predicts the group better. 95% CI: percentile bootstrap over "
                        "participants within their group (all names; the intervals for men's "
                        "and women's names are in results.json)."])
    for set_type in rn.SET_TYPES:
        for grouping in A.GROUPINGS:
            report.figure(f"loglik_{set_type.replace('-', '')}_{grouping}",
                          A.plot_group_loglik(loglik, set_type, grouping,
                                              f"{set_type} sets, by {grouping}"),
                          f"Mean log-likelihood (all names) by {grouping} group, {set_type} "
                          "sets, with 95% participant-bootstrap CIs")
    report.table("best_group_tests", V.tests_view(tests),
                 "Best-fitting group against the next: difference of mean log-likelihoods",
                 labels=V.TESTS_LABELS, values=V.VALUES, groups="method", decimals=3,
                 p_columns=("p_value", "p_holm"), record=tests,
                 notes=[f"95% CI: bootstrap ({tests['n_boot'].iloc[0] if len(tests) else 0} "
                        "replicates); p: two-sided permutation test of the participants' group "
                        f"labels ({tests['n_perm'].iloc[0] if len(tests) else 0} permutations), "
                        "not adjusted for choosing the top two groups; Holm within each method's "
                        "tests. The permutation test holds its size with unequal groups "
                        "(the project's alignment calibration benchmark)."])

    report.section("Proportions of FEM, MASC and G-NEUT forms (cf. the paper's Figures 1 "
                   "and 3)", "People: share of responses per attitude group and name "
                   "gender. Model: each method's mean probability of each form over the "
                   "name x set items (each item counted once).")
    report.table("proportions", V.proportions_view(proportions),
                 "Proportions of feminine, masculine and gender-neutral forms",
                 labels=V.PROPORTIONS_LABELS, values=V.VALUES, groups="set_type", decimals=3,
                 record=proportions,
                 notes=["People: share of responses per attitude group and name gender (N: "
                        "responses). Methods: mean predicted probability over the name x set "
                        "items (N: items)."])
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
               "direct prediction is the same in every state." if score_is == "joint" else "")))
        report.table("direct_method_correlation", corr,
                     "Pearson correlation of the direct method with the posterior",
                     labels={"n_sets": "Sets", "sets": "Role-noun sets", "n_cells": "Cells",
                             "r": "r"}, decimals=3)

    if fits:
        report.section("The human data's own model", (
            f"Binomial GLMM `{A.GLMM_FORMULA}`: neutral = 1 for the G-NEUT form (the "
            "unmarked form of 2-way sets counts as G-NEUT, as in Watson et al.); "
            "name_gender reference level: men's names; attitude_score 0-100, higher = more "
            "conservative. lme4: Laplace ML, Wald z. pymc: posterior mean, SD and 95% "
            "interval (gbstats' default priors: rstanarm's, scaled to the data; listed under "
            "Bayesian twins)."))
        glmm_words = report.formula(
            "human_glmm", A.GLMM_FORMULA,
            {"neutral": "choosing the gender-neutral form", "name_gender": "the name's gender",
             "attitude_score": "the attitude score"},
            {"participant": "participants", "role_noun_set": "role-noun sets"})
        report.fit_table("human_glmm", fits,
                         "Choosing the gender-neutral form: logistic mixed models (log-odds)",
                         variables={"name_gender": "Name gender",
                                    "attitude_score": "Attitude score"},
                         levels={"name_gender": {"men": "men's", "women": "women's"}},
                         groups={"participant": "Participants", "role_noun_set": "Role-noun sets"},
                         notes=[f"Model: {glmm_words}; the response is 1 for the G-NEUT form; "
                                "attitude score 0-100, higher = more conservative."])


