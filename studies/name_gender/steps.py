"""name_gender: load -> score -> fit -> tables -> report (Gardner & Brown-Schmidt 2024)."""
from __future__ import annotations

import pandas as pd

from gbstats.alignment.group_comparison import VERDICT_NOTE, not_computed, profile_bounds_notes
from gbstats.alignment.reliability import reliability_bounds_notes
from gbstats.data.registry import load_dataset
from gbstats.mixed.fitting import fit_warnings, fit_with_twin, reused_fits_note
from gbstats.report.table_grammar import correlation_caps
from studies.name_gender import alignment as A
from studies.name_gender import comparison as C
from studies.name_gender import human as H
from studies.name_gender import model_side as M
from studies.name_gender import presentation as P
from studies.name_gender import group_tests as G
from studies.name_gender import verdicts as V
from studies.name_gender.stimuli import DEFAULT_VARIANT, exp3_prompt_variants, pronoun_prompts

PRODUCTION = (1, 3)


def fit_cache(run) -> dict:
    return {"use_cache": not run.args.no_cache, "cache_dir": run.args.cache_dir}


def check_twin_flags(run) -> None:
    """--human-twins and --alignment-twin ask for Bayesian fits that --no-bayes turns off:
    refused before any work rather than one flag silently winning."""
    from gbstats.errors import GbstatsError

    asked = [flag for flag, on in (("--human-twins", run.args.human_twins),
                                   ("--alignment-twin", run.args.alignment_twin)) if on]
    if asked and run.args.no_bayes:
        raise GbstatsError(f"{' and '.join(asked)} {'ask' if len(asked) > 1 else 'asks'} for "
                           f"Bayesian twins, which --no-bayes turns off; expected one or the "
                           f"other: drop --no-bayes to fit them, or drop {' and '.join(asked)}")


def mirror_twin_name(mirror) -> str:
    return f"model side: {mirror.key} (twin)"


def start_mirror_twins(run, mirror_rows: dict) -> None:
    """Start the model-side mirrors' Bayesian twins in the background (`Run.start_twin`;
    nothing under --no-bayes), before the people's glmer fits: they sample while R fits
    (the twins took 138 of a cold run's 360 s one after the other, the R fits 133 s;
    benchmarks/results/study_times.json). The numbers are those of twins fitted in place:
    each is a function of its formula, rows, options and seed (`gbstats.mixed.background`)."""
    for mirror in M.MIRRORS:
        if mirror.key in mirror_rows:
            rows, contrasts = mirror_rows[mirror.key]
            run.start_twin(mirror.formula, rows, name=mirror_twin_name(mirror),
                           contrasts=H.bambi_safe(contrasts)[0], loo=False)


def collect_mirror_twins(run, mirror_rows: dict, model_fits: dict) -> dict:
    """`model_fits` with each mirror's twin beside its lme4 fit (nothing added under
    --no-bayes), its terms named as lme4's are; recorded as "model side: <key> (twin)"."""
    if not run.bayes:
        return model_fits
    out = dict(model_fits)
    for mirror in M.MIRRORS:
        if mirror.key not in mirror_rows:
            continue
        rows, contrasts = mirror_rows[mirror.key]
        safe, back = H.bambi_safe(contrasts)
        name = mirror_twin_name(mirror)
        twin = run.twin(mirror.formula, rows, name=name, contrasts=safe, loo=False)
        out[mirror.key] = run.record_fits(name, {**model_fits[mirror.key],
                                                 "pymc": H.rename_terms(twin, back)})
    return out


def record_twins(run, groups: dict) -> None:
    """Every Bayesian twin of the run into results.json's "bayes_twins" (and the report's
    section), refitted with wider priors under --prior-sensitivity (`Run.record_twins`)."""
    for name, fits in groups.items():
        run.record_twins(name, fits)


def load(run, _):
    check_twin_flags(run)
    loaded = load_dataset("gardner2024", run.args.data_dir)
    run.log.extend(loaded.exclusions)
    return {"tables": loaded.tables, "prompts": pronoun_prompts(loaded.tables)}


def score(run, state):
    if not run.wants_model:
        run.note("--model none: the human side only (no scoring, no model-side fit, no alignment).")
        return {**state, "scored": None, "variants": None}
    lm = run.model()
    scored = M.score_prompts(state["prompts"], lm, **run.cache)
    scored = M.with_ratings(scored, state["tables"])
    run.write_csv("model_scores.csv", scored.drop(columns=["prefix", "Story", "ProductionPrompt"],
                                                  errors="ignore"))
    variants = None
    if run.args.prompt_sensitivity:
        layouts = exp3_prompt_variants(state["prompts"]).rename(columns={"prompt": "prompt_key"})
        layouts["prompt_id"] = layouts["prompt_key"].str.split("|").str[0]
        variants = M.score_prompts(layouts.rename(columns={"prompt_key": "prompt"}), lm,
                                   options=M.PRONOUNS, **run.cache)
    else:
        run.note("--no-prompt-sensitivity: Exp 3's prompt layouts were not scored.")
    return {**state, "scored": scored, "variants": variants}


def fit(run, state):
    if not run.lme4_available("the authors' glmer models, the model-side fit and the alignment "
                              "GLMM"):
        return {**state, "human": {}, "like": {}, "model_fits": {}, "earlier_fits": {},
                "alignment_fits": {}}
    tables = state["tables"]
    mirror_rows = ({m.key: M.mirror_rows(state["scored"], tables, m) for m in M.MIRRORS}
                   if state["scored"] is not None else {})
    start_mirror_twins(run, mirror_rows)
    human = H.fit_human_models(tables, bayes=run.args.human_twins, draws=run.args.draws,
                               max_draws=run.max_draws, seed=run.seed, **fit_cache(run))
    for key, fits in human.items():
        run.warn(fit_warnings(fits, key))
    if run.args.human_twins:
        run.note("Bayesian twins of the gender-rating models (--human-twins): bambi/PyMC, "
                 f"{run.args.draws} draws per chain, default priors; R-hat and ESS in table "
                 "`twin_diagnostics`.")
    else:
        run.note("The Bayesian twins of the people's gender-rating models are opt-in "
                 "(--human-twins; several minutes each on 2 cores).")
    like = H.fit_human_models(tables, specs=H.LIKE_FOR_LIKE_MODELS, **fit_cache(run))
    for key, fits in like.items():
        run.record_fits(f"people, like for like: {key}", fits)
    model_fits, earlier_fits, alignment_fits = {}, {}, {}
    scored = state["scored"]
    if scored is not None:
        for mirror in M.MIRRORS:
            rows, contrasts = mirror_rows[mirror.key]
            model_fits[mirror.key] = run.fit(mirror.formula, rows,
                                             name=f"model side: {mirror.key}", twin=False,
                                             contrasts=contrasts)
            run.warn(parity_warnings(mirror, rows, tables))
        for exp in PRODUCTION:
            rows, contrasts = M.earlier_rows(scored, tables, exp)
            for label, formula in (("(1 | frame)", M.EARLIER_FORMULA),
                                   ("(1 | frame) + (1 | first_name)",
                                    M.EARLIER_FORMULA + " + (1 | first_name)")):
                earlier_fits[(exp, label)] = fit_with_twin(
                    formula, rows, backends=["lme4"], bayes=False, contrasts=contrasts,
                    **fit_cache(run))
        run.note("The earlier report's model-side formula `" + M.EARLIER_FORMULA + "` is "
                 "refitted for table `first_name_term` only; gbstats' design check flags it "
                 "(the rating varies only between first names), which is why it is not used.")
        items = M.item_table(scored, tables, by_condition=True)
        grouped = {exp: A.group_trials(tables[f"exp{exp}"], items, run.log, exp)
                   for exp in PRODUCTION}
        for exp in PRODUCTION:
            trials = grouped[exp]
            rated = run.log.select(trials, trials["GenderRatingCentered"].isna(),
                                   f"Exp {exp}: last-name trial, no first name and so no "
                                   "rating (left out of the alignment GLMM only)",
                                   unit="trials", stage="alignment GLMM")
            rows = glmm_rows(rated)
            alignment_fits[exp] = run.fit(A.ALIGNMENT_FORMULA, rows,
                                          name=f"Exp {exp} alignment GLMM", family="binomial",
                                          twin=run.args.alignment_twin, loo=False,
                                          optimizer=A.ALIGNMENT_OPTIMIZER)
        state = {**state, "items": items, "grouped": grouped}
        # the twins last: they sampled in the background during every R fit above
        model_fits = collect_mirror_twins(run, mirror_rows, model_fits)
    for note in reused_fits_note({**{k: v for k, v in human.items()}}):
        run.note(note)
    # the people's fits are made here, not by run.fit: their twins are recorded here (the
    # model side's and the alignment GLMM's, made by run.fit / run.record_fits, already are)
    record_twins(run, human)
    return {**state, "human": human, "like": like, "model_fits": model_fits,
            "earlier_fits": earlier_fits, "alignment_fits": alignment_fits}


# the same grouping factor under each side's name (gbstats.mixed.design.grouping_parity)
COUNTERPARTS = (("frame", "Story"), ("frame_condition", "StoryCondition"),
                ("first_name", "FirstName"), ("name_unit", "NameUnit"), ("item_key", "Item"))


def parity_warnings(mirror, model_rows: pd.DataFrame, tables: dict) -> list[str]:
    """The design check across the sides: a grouping factor one side's formula has and the
    other's data hold but its formula leaves out (issue 40: Exp 3's stories)."""
    from gbstats.mixed.design import grouping_parity

    spec = next(s for s in H.LIKE_FOR_LIKE_MODELS if s.key == mirror.people_key)
    people = H.experiment_frame(tables[f"exp{mirror.experiment}"])
    return [f"{mirror.key} (model) vs {spec.key} (people): {w}" for w in grouping_parity(
        {"model": (mirror.formula, model_rows), "people": (spec.formula, people)},
        COUNTERPARTS)]


def glmm_rows(grouped: pd.DataFrame) -> pd.DataFrame:
    """The alignment GLMM's rows: trials with a rating (the caller leaves out and counts Exp
    1's last-name trials, which have none), the group as a two-level factor with men as the
    reference ("nonmale" = non-male participants: R's term names need a plain label)."""
    rows = grouped.dropna(subset=["GenderRatingCentered"])
    group = rows["group"].map({A.MEN: "men", A.NON_MALE: "nonmale"}).astype(str)
    return rows.assign(group=pd.Categorical(group, categories=["men", "nonmale"]))[
        ["Participant", "Item", "FirstName", "Condition", "group", "model_logit",
         "GenderRatingCentered", "She"]].reset_index(drop=True)


def fit_table(fits: dict, label: str) -> pd.DataFrame:
    rows = []
    for key, group in fits.items():
        for backend, fit in group.items():
            rows.append(fit.coefs.assign(**{label: key, "backend": backend}))
            rv = fit.ranef_var
            rows.append(pd.DataFrame({label: key, "backend": backend,
                                      "term": [f"var({g}: {t})" if isinstance(t, str) and t
                                               else f"var({g})"
                                               for g, t in zip(rv["group"], rv["term"])],
                                      "estimate": rv["variance"]}))
    if not rows:
        return pd.DataFrame()
    out = pd.concat(rows, ignore_index=True)
    return out[[label, "backend"] + [c for c in out.columns if c not in (label, "backend")]]


def twin_diagnostics(groups: dict) -> pd.DataFrame:
    rows = []
    for key, fits in groups.items():
        fit = fits.get("pymc")
        if fit is not None:
            s = fit.fit_stats
            rows.append({"fit": str(key), "max_rhat": s.get("max_rhat"),
                         "min_ess_bulk": s.get("min_ess_bulk"), "n_draws": s.get("n_draws"),
                         "n_chains": s.get("n_chains"), "sampler": s.get("sampler")})
    return pd.DataFrame(rows)


def first_name_term(earlier_fits: dict) -> pd.DataFrame:
    """The rating slope of the earlier report's model-side formula, without and with the
    first-name random intercept (three-way logit, as that report fitted it)."""
    rows = []
    for (exp, random), fits in earlier_fits.items():
        fit = fits["lme4"]
        c = fit.coef("GenderRatingCentered")
        rows.append({"experiment": exp, "random_effects": random, "estimate": c["estimate"],
                     "std_error": c["se"], "df": c["df"], "p_value": c["p_value"],
                     "design_check": "fires" if fit.fit_stats.get("design_check") else "clean"})
    return pd.DataFrame(rows)


def group_analyses(run, state) -> dict:
    """The men vs non-male tables: the ceiling, the reliability-corrected correlations, the
    comparisons (primary and secondary, Holm within family, equivalence) and the raw r."""
    import warnings

    from gbstats.alignment.group_comparison import (corrected_comparison_rows,
                                                    finish_comparisons, profile_agreement)
    from gbstats.errors import EstimateWarning
    from gbstats.mixed.fit_cache import cached_call

    cache = {"use_cache": not run.args.no_cache, "cache_dir": run.args.cache_dir}
    common = dict(group="group", score="share_two_way", rating="She", item_keys=A.ITEM_KEYS,
                  participant="Participant", equivalence_bound=A.EQUIVALENCE_BOUND,
                  n_boot=run.args.n_boot, seed=run.seed)
    profiles, reliability, raw, comparisons = [], [], [], []
    # the report's table notes say what these warn (reliability_bounds_notes,
    # profile_bounds_notes): not echoed to stderr as well
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EstimateWarning)
        for exp in PRODUCTION:
            trials = state["grouped"][exp]
            run.say(f"      Exp {exp}: the groups' profile agreement")
            # first names resampled whole, as in the comparisons (issue 40: the unit of
            # inference); Exp 1's items are single names, each its own cluster
            agree, _ = cached_call(profile_agreement,
                                   trials.assign(first_name=A.first_name_of(trials["Item"])),
                                   group="group", rating="She", item_keys=A.ITEM_KEYS,
                                   participant="Participant", item_cluster="first_name",
                                   n_boot=min(run.args.n_boot, 500), seed=run.seed, **cache)
            profiles.append(agree.assign(experiment=exp))
            run.say(f"      Exp {exp}: corrected correlations and their comparison")
            parts = [(None, "primary: men vs non-male, corrected r", True)] + [
                (c, "secondary: per condition, corrected r", False) for c in C.CONDITIONS]
            for cond, family, primary in parts:
                sub = trials if cond is None else trials[trials["Condition"] == cond]
                (rel, rawr, rows), _ = cached_call(
                    corrected_comparison_rows, A.item_scores(state["items"], exp, cond), sub,
                    family=family, primary=primary, item_cluster="first_name", **common, **cache)
                rows = G.with_permutation_p(rows, A.item_scores(state["items"], exp, cond), sub,
                                            seed=run.seed)
                label = "all" if cond is None else cond
                reliability.append(rel.assign(experiment=exp, condition=label))
                raw.append(rawr.assign(experiment=exp, condition=label))
                comparisons.append(rows.assign(experiment=exp, condition=label))
    glmm = A.glmm_comparison_rows(state["alignment_fits"])
    table = pd.concat(comparisons + [glmm.assign(condition="all")], ignore_index=True)
    finished = finish_comparisons(table)
    finished.insert(0, "experiment", table["experiment"].to_numpy())
    finished.insert(1, "condition", table["condition"].to_numpy())
    for column in ("p_value_z", "n_perm", "resampling_unit"):
        finished[column] = table[column].to_numpy()
    finished["verdict"] = G.calibration_verdicts(finished)
    # a fit that did not converge gives numbers, not evidence: say so in its verdict
    unconverged = table.get("converged", pd.Series(True, index=table.index)).eq(False)
    finished.loc[unconverged.to_numpy(), "verdict"] = A.NOT_CONVERGED
    return {"profile_agreement": pd.concat(profiles, ignore_index=True),
            "group_reliability": pd.concat(reliability, ignore_index=True),
            "group_correlations": pd.concat(raw, ignore_index=True),
            "group_comparison": finished}


def tables(run, state):
    out = {"state": state}
    if state["human"]:
        out["human_models"] = H.human_models_table(state["human"])
        out["human_fit_settings"] = H.fit_settings(state["human"])
        out["like_for_like_models"] = H.human_models_table(state["like"],
                                                           specs=H.LIKE_FOR_LIKE_MODELS)
    if state.get("scored") is not None and state["human"]:
        scored = state["scored"]
        out["model_items"] = state["items"]
        out["response_shares"] = C.response_shares(state["tables"], scored)
        out["response_coverage"] = C.coverage_table(scored)
        out["effects"] = C.effects(state["human"], state["like"], state["model_fits"],
                                   state["tables"])
        out["effect_differences"] = C.effect_differences(state["tables"], scored)
        out["model_side_models"] = C.model_side_models(state["model_fits"])
        out["first_name_term"] = first_name_term(state["earlier_fits"])
        out["item_correlations"] = A.item_correlations(state["items"])
        out["alignment_glmm"] = fit_table(
            {f"exp{e}": f for e, f in state["alignment_fits"].items()}, "experiment")
        out.update(group_analyses(run, state))
        out["singular_they"] = C.they_shares(state["tables"], scored)
        if state.get("variants") is not None:
            out["prompt_sensitivity"] = C.prompt_sensitivity(state["variants"], DEFAULT_VARIANT)
    diag = twin_diagnostics({**state["human"],
                             **{f"{k} model side": f for k, f in state["model_fits"].items()},
                             **{f"exp{e} alignment": f for e, f in state["alignment_fits"].items()}})
    if len(diag):
        out["twin_diagnostics"] = diag
    return out


def fmt_ci(estimate, low, high, digits: int = 2) -> str:
    return f"{estimate:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"


def row_ci(row) -> str:
    return fmt_ci(row["estimate"], row["ci_low"], row["ci_high"])


def fmt_p(p: float) -> str:
    return "< .001" if p < 0.001 else f"= {p:.3f}".replace("0.", ".", 1)


def condition_sentences(out) -> list[str]:
    """The people's and the model's condition pattern, each verdict read off its test of
    the difference (`effect_differences`, studies/name_gender/verdicts.py)."""
    shares = out["response_shares"]
    two = shares[shares["option_set"] == M.OPTION_SET_LABELS["two_way"]].set_index(
        ["experiment", "condition"])
    tests = out["effect_differences"]
    lines = []
    for exp in PRODUCTION:
        people = " / ".join(f"{two.loc[(exp, c), 'people_share']:.2f}" for c in C.CONDITIONS)
        model = " / ".join(f"{two.loc[(exp, c), 'model_share']:.2f}" for c in C.CONDITIONS)
        mirror = "m_cond" if exp == 1 else "m_noOther"
        lines.append(
            f"- **Exp {exp}, P(she | he or she) after a first / full / last name.** People "
            f"{people}; the model {model}. Population-averaged log-odds of she, people minus "
            "the model tested (table effect_differences). "
            + " ".join(V.condition_tests(tests, exp, mirror)))
    return lines


def rating_sentences(out) -> list[str]:
    """The rating slope and its change between conditions, people beside the model, each
    verdict read off its test (table effect_differences); the mixed models' conditional and
    population-averaged slopes are in table effects."""
    tests = out["effect_differences"]
    lines = []
    for exp, mirror in ((1, "m_nameGender"), (3, "m_noOther")):
        lines.append(
            f"- **Exp {exp}, the first name's gender rating** (population-averaged log-odds "
            "of she among he/she, per point). " + " ".join(V.rating_tests(tests, exp, mirror)))
    return lines


def prompt_sentences(out) -> list[str]:
    """How far Exp 3's P(she | he or she) moves with the prompt's layout."""
    if "prompt_sensitivity" not in out:
        return []
    table = out["prompt_sensitivity"]
    other = table[table["mean_abs_change"] > 0]
    base = table[table["mean_abs_change"] == 0].set_index("condition")["share_two_way"]
    shift = (other.set_index("condition")["share_two_way"] - base).abs()
    ellipsis = other[other["layout"].str.contains("ellipsis")]
    return [f"- **Exp 3, the prompt's layout.** Over three other layouts (a blank line for the "
            f"page break, the cue's own ellipsis, both) the model's mean P(she | he or she) "
            f"per condition moves by at most {shift.max():.2f}; per prompt by "
            f"{other['mean_abs_change'].min():.2f}-{other['mean_abs_change'].max():.2f} on "
            f"average (largest {other['max_abs_change'].max():.2f}); the order of the prompts "
            f"hardly changes (r with the default {other['r_with_default'].min():.2f} or more). "
            f"With the ellipsis kept, he, she and they hold only "
            f"{ellipsis['mass_he_she_they'].min():.0%}-{ellipsis['mass_he_she_they'].max():.0%} "
            "of the next-word mass (table prompt_sensitivity)."]


def ceiling_caveat(row, agreement) -> str:
    """Equivalence that the groups' own agreement nearly guarantees is about the groups."""
    if str(row["verdict"]).startswith("equivalent") and \
            agreement["max_alignment_difference"] <= row["equivalence_bound"]:
        return (" This says more about the groups than about the model: men and non-male "
                "participants answer the items so alike that no model's correlations with "
                f"the two could differ by more than {agreement['max_alignment_difference']:.2f} "
                "(at the profiles' point estimate).")
    return ""


def weak_alignment_caveat(rel) -> str:
    """Equal alignment near zero is no resemblance to either group."""
    if (rel["ci_low"] <= 0).all():
        return (" The model's alignment with either group is itself weak here: both "
                "intervals include 0.")
    return ""


def group_sentences(out) -> list[str]:
    comp = out["group_comparison"]
    prof = out["profile_agreement"].set_index("experiment")
    rel = out["group_reliability"]
    lines = []
    for exp in PRODUCTION:
        row = comp[(comp["experiment"] == exp) & comp["primary"]].iloc[0]
        r = rel[(rel["experiment"] == exp) & (rel["condition"] == "all")].set_index("group")
        pa = prof.loc[exp]
        groups = "; ".join(f"{g} {fmt_ci(x.r_corrected, x.ci_low, x.ci_high)}"
                           for g, x in r.iterrows())
        lines.append(
            f"- **Exp {exp}.** Corrected r of the model's P(she | he or she) with each group's "
            f"share of she: {groups}. Difference ({row['group_a']} minus {row['group_b']}) "
            f"{fmt_ci(row['estimate'], row['ci_low'], row['ci_high'])}, Holm p "
            f"{fmt_p(row['p_holm'])} (family of {int(row['family_size'])}); equivalence within "
            f"+/-{row['equivalence_bound']:.2f}: TOST Holm p {fmt_p(row['p_equivalence_holm'])} "
            f"(the smallest bound these data could establish is "
            f"{row['smallest_equivalence_bound']:.2f}). "
            f"The groups' own item profiles correlate {pa['r_profiles_corrected']:.2f} "
            f"[{pa['ci_low']:.2f}, {pa['ci_high']:.2f}] (corrected), which leaves room for a "
            f"difference in alignment of at most {pa['max_alignment_difference']:.2f} "
            f"({pa['max_alignment_difference_upper']:.2f} at the interval's lower end), whatever "
            f"the model. **Conclusion: {row['verdict']}.**" + ceiling_caveat(row, pa)
            + weak_alignment_caveat(r))
    return lines


HUMAN_NOTES = ["Outcomes: she (Exp 1, 3) or female (Exp 2, 4) against every other response; "
               "log-odds",
               "Gender rating: the first name's gender rating, centred on its mean over the "
               "experiment's trials",
               # the design check itself is the model table's own sentence (one per table)
               "Names as shown are nested in first names; the like-for-like table adds a "
               "first-name random intercept"]


def human_model_tables(report, out, state) -> None:
    """The authors' glmer fits as model tables (Exp 1-2, Exp 3-4), their settings, and the
    like-for-like refits; results.json keeps human_models, human_fit_settings and
    like_for_like_models as computed."""
    options = {"variables": P.VARIABLES, "levels": P.LEVELS, "groups": P.GROUPS}
    for name, experiments, caption in P.HUMAN_TABLES:
        specs = P.specs_of(experiments)
        columns = P.model_columns(state["human"], specs)
        if columns:
            report.model_table(name, columns, caption, data=False,
                               notes=HUMAN_NOTES + P.model_notes(specs, report, name),
                               terms=P.term_words(columns), **options)
    report.record("human_models", out["human_models"],
                  "Every fixed effect and random-intercept variance of the authors' models at "
                  "full precision")
    settings = out["human_fit_settings"]
    report.table("human_fit_settings", P.fit_settings_view(settings),
                 "Sample, trials and coding of each glmer fit", record=settings,
                 groups="heading", labels=P.LABELS, settings=["optimizer", "nAGQ"],
                 kinds={"nobs": "count", "n_participants": "count", "n_items": "count"},
                 notes=["Names shown: the name as the story gave it (the random intercept "
                        "Item); formulas, log-likelihoods and AICs are in the model tables",
                        "Authors' fixed coding: last vs first/full (0.33, 0.33, -0.66) and "
                        "first vs full (-0.5, 0.5, 0) for (first, full, last). Centred "
                        "Helmert: Fraundorf's, reference levels last then first, weighted by "
                        "the trials per condition"])
    like = P.model_columns(state["like"], H.LIKE_FOR_LIKE_MODELS)
    if like:
        report.model_table(
            "like_for_like_models", like,
            "People, like for like: the authors' models on the he/she responses, with a "
            "first-name random intercept (gbstats' refits)", data=out["like_for_like_models"],
            terms=P.term_words(like), **options,
            notes=["Not in the paper. Log-odds of she among he and she responses",
                   "Gender rating: the first name's gender rating, centred as the authors'"]
            + P.model_notes(H.LIKE_FOR_LIKE_MODELS, report, "like_for_like_models")
            + ["First or lone last names: the first name, or the last name where "
               "only it was shown",
               "Codings and rating centring as the authors'; optimizer bobyqa (glmer's "
               "default stopped short of convergence on Exp 1)."])


def report(run, report, out):
    from studies.name_gender.plots import (people_vs_model_figure, rating_figure,
                                           write_effects_figure)

    state = out["state"]
    model = run.args.model if run.wants_model else "none"
    report.section("Design", (
        "Gardner & Brown-Schmidt (2024), *Biased inferences about gender from names* "
        "(Glossa Psycholinguistics): four experiments in which people read a story about a "
        "character named by a first, last or full name, then continued it (Exp 1, 3: "
        "he / she / other) or recalled the character's gender (Exp 2, 4). The human side "
        "refits the authors' main glmer models with their codings (lme4 defaults: Laplace, "
        "nAGQ = 1, bobyqa then Nelder-Mead; docs/name-gender-reproduction.md compares every "
        "number with their printed output). "
        f"Model: `{model}`; for Exp 1 and 3 it scores the next word where people began "
        "their continuation: he, she, they, and the name as the prompt last used it.\n\n"
        "**What is compared with what.** People's *P(she)* and the model's are compared only "
        "as one ratio over one set of options present on both sides: she among he and she "
        "(people: she-responses among their he and she responses; model: P(she) / (P(he) + "
        "P(she))). Exp 1 also codes singular *they* and repeated names, so there the ratios "
        "over he, she, they (and the name) are shown too. Each table says how much of each "
        "side the options cover. A glmer coefficient is *conditional* (for a given person "
        "and name); the model's next-word probability is learnt from many writers' text, so "
        "people's *population-averaged* effect (the GLMM's probabilities averaged over its "
        "random intercepts) is given beside it, and every column says which.\n\n"
        "**How the model's prompt differs from what people saw.** In Exp 3 people read the "
        "news story on one page and wrote their continuation on the next, below a cue ending "
        "in an ellipsis; the model reads story and cue as one text with a comma for the "
        "ellipsis. Table `prompt_sensitivity` shows how much that changes its P(she)."
        + run.notes_markdown()))
    if "human_models" in out:
        human_model_tables(report, out, state)
    if "response_shares" in out:
        report.section("People and the model, like for like",
                       "\n".join(condition_sentences(out) + rating_sentences(out)
                                 + prompt_sentences(out)))
        report.table("response_shares", P.shares_view(out["response_shares"]),
                     "P(she) by condition, people beside the model, each over the same options, "
                     "with how much of each side they cover",
                     record=out["response_shares"], groups="heading", labels=P.VIEW_LABELS,
                     kinds={"people_n": "count"},
                     notes=["Options: the responses (people) and next words (model) P(she) is "
                            "taken among; Responses: people's responses in that set.",
                            "People: she-responses among the responses in the option set, "
                            "Wilson 95% interval over trials; Coverage: how many of "
                            "all responses fall in the set.",
                            "Model: P(she) divided by the summed next-word probability of the "
                            "options, averaged over prompts; Mass: that sum.",
                            "Singular they and repeated names are coded in Exp 1 only; "
                            "'all responses' is the authors' outcome, with no model counterpart.",
                            f"Model {model}; prompts per experiment and condition as in "
                            "the table of response coverage."])
        report.table("response_coverage", P.coverage_view(out["response_coverage"]),
                     "Next-word probability mass the scored options cover, per experiment and "
                     "condition", record=out["response_coverage"], groups="heading",
                     labels=P.VIEW_LABELS, kinds={"n_prompts": "count"},
                     notes=["Mass: the summed next-word probability of the options, over the "
                            "prompts (mean, smallest, largest)."])
        wide = C.effects_wide(out["effects"])
        report.table("effects", P.effects_view(out["effects"]),
                     "Condition effects and rating slope, people beside the model: conditional "
                     "and population-averaged log-odds of she", record=wide,
                     groups="heading", labels=P.VIEW_LABELS,
                     notes=["People, authors' model: as published (the condition and "
                            "condition × rating models: she against any other response; the "
                            "he-or-she-only model: he/she responses).",
                            "People, like for like: the same fixed part on the he/she responses "
                            "with a first-name intercept (the like-for-like table).",
                            "Model: a linear mixed model of the log of P(she) / P(he) per "
                            "prompt (the table of the model analogues).",
                            "Conditional: the mixed model's fixed effects. Population-averaged: "
                            "logit of the fitted probability averaged over the random "
                            "intercepts (the model's residual too), delta-method 95% interval "
                            "with the variances treated as known, so a little narrow: in a "
                            "simulated crossed GLMM it covered 89% (slope) and 93% (condition "
                            "effect) of 120 panels, the conditional one 92.5% and 94% "
                            "(the project's population-averaged calibration benchmark).",
                            "Effects at the centred rating; the slope averaged over conditions "
                            "as the authors' coding centres them; Wald z intervals (the model's "
                            "own t intervals, in the table of the model analogues, are a "
                            "little wider)."])
        V.differences_table(report, out["effect_differences"], model)
        options = {"variables": P.VARIABLES, "levels": P.LEVELS, "groups": P.GROUPS}
        mirrors = P.mirror_columns(state["model_fits"], M.MIRRORS)
        report.model_table("model_side_models", mirrors,
                           "Model analogues of the authors' models: LMMs of the log of P(she) / "
                           "P(he) per prompt", data=out["model_side_models"],
                           terms=P.all_term_words(mirrors), **options,
                           notes=[f"{P.EXPERIMENTS[m.experiment]}, "
                                  f"{P.MIRROR_WORDS[m.model].lower()}: mirrors the authors' "
                                  f"{P.MODEL_WORDS.get(f'exp{m.experiment}_{m.model}', '').lower()}"
                                  " model; "
                                  + report.formula(f"model_side_models, "
                                                   f"{P.EXPERIMENTS[m.experiment]}, "
                                                   f"{P.MIRROR_WORDS[m.model].lower()}",
                                                   m.formula, P.FORMULA_WORDS, P.FORMULA_GROUPS)
                                  + "." for m in M.MIRRORS]
                           + ["lme4 REML, Satterthwaite df and t intervals (results.json); "
                              "codings and rating centring as the authors'; Exp 1's condition "
                              "model keeps the last-name prompts"])
        earlier = P.earlier_columns(state["earlier_fits"])
        report.model_table("first_name_term", earlier,
                           "The earlier model-side rating slope without and with a first-name "
                           "random intercept", data=out["first_name_term"],
                           terms=P.all_term_words(earlier), **options,
                           notes=["Model: " + report.formula("first_name_term",
                                                             M.EARLIER_FORMULA,
                                                             P.FORMULA_WORDS, P.FORMULA_GROUPS)
                                  + ", and the same with random intercepts for first names "
                                  "added; three-way logit, as the earlier report fitted it.",
                                  "Without the first-name term each prompt counts as "
                                  "independent evidence about a property of 21 first names "
                                  "(pseudo-replication)."])
        write_effects_figure(report, out["effects"], model)
        report.figure("people_vs_model", people_vs_model_figure(out["model_items"]),
                      "P(she | he or she) per name item: people (Wilson 95% intervals) against "
                      "the model, by experiment and condition; the diagonal is equality")
        report.figure("she_by_rating", rating_figure(out["model_items"]),
                      "P(she | he or she) against the first name's gender rating, people and "
                      "the model, one point per first name (its items pooled), by experiment "
                      "and condition (Exp 1's last names show no first name: no panel); "
                      "dashed line: the scale's midpoint")
        if "prompt_sensitivity" in out:
            report.table("prompt_sensitivity", P.prompt_view(out["prompt_sensitivity"]),
                         "Exp 3: the model's P(she) under four prompt layouts, and how far it "
                         "moves from the default", record=out["prompt_sensitivity"],
                         groups="heading", labels=P.VIEW_LABELS, kinds={"n_prompts": "count"},
                         notes=["Default: story and cue as one text, a comma for the cue's "
                                "ellipsis. Page break: a blank line between story and cue. "
                                "Ellipsis: the cue as people saw it.",
                                "Changes are in P(she | he, she) per prompt, against the default."])
        report.table("singular_they", P.they_view(out["singular_they"]),
                     "Exp 1: singular they among he, she and they, people beside the model, "
                     "with how much of each side the three cover",
                     record=out["singular_they"], labels=P.VIEW_LABELS,
                     kinds={"people_n_in_set": "count"},
                     notes=["Responses: people's he, she and singular-they responses; P(they): "
                            "among he, she and they; Coverage: of all people's responses, "
                            "those three; Mass: the three's next-word probability; P(they), "
                            "raw: the model's next-word P(they)."] + they_notes(out["singular_they"]))
    if "group_comparison" in out:
        report.section("Men or non-male participants?", (
            "The groups are the authors' `SubjGenderMale`: men (1) and everyone else who gave a "
            "gender (0), which the codebooks say is women and a few nonbinary, genderfluid, "
            "agender and asexual participants, so the second group is *non-male "
            "participants*, not women. The primary test, declared as such in the study's code "
            "(`group_analyses` in studies/name_gender/steps.py) and in results.json, is the "
            "difference of the two groups' reliability-corrected correlations with the model "
            "(one family over the two experiments, Holm); the equivalence "
            f"bound is +/-{A.EQUIVALENCE_BOUND:.2f} on the corrected-correlation scale. "
            "The size-matched comparison of earlier reports is not a test of equal alignment "
            "and is no longer shown.\n\n" + "\n".join(group_sentences(out))))
        report.table("profile_agreement", P.profile_view(out["profile_agreement"]),
                     "The ceiling: how closely men's and non-male participants' item profiles "
                     "agree, and the largest alignment difference that leaves",
                     record=out["profile_agreement"], labels=P.VIEW_LABELS,
                     caps=correlation_caps("r_profiles", "r_profiles_corrected",
                                           "r_profiles_corrected_ci_low",
                                           "r_profiles_corrected_ci_high"),
                     kinds={"n_items": "count"},
                     notes=["Profiles: each group's share of she among he/she responses per "
                            "item (name x condition). Corrected r: r divided by the square root "
                            "of the product of the two groups' split-half reliabilities.",
                            "Largest difference: the square root of 2 (1 − corrected r), the most any "
                            "model's correlations with the two groups can differ; same, at 95% "
                            "low: at the interval's lower end.",
                            "Interval: two-way bootstrap (items, people within group), "
                            "percentile; it errs wide."]
                     + profile_bounds_notes(out["profile_agreement"], ("experiment",)))
        comp = out["group_comparison"]
        shown = comp.assign(primary=comp["primary"].map({True: "yes", False: "no"}))
        report.table("group_comparison", P.comparison_view(comp),
                     "Men vs non-male participants: the primary test, secondary tests, Holm "
                     "within family and equivalence", record=shown, groups="heading",
                     labels=P.VIEW_LABELS,
                     p_columns=["p_value", "p_holm", "p_equivalence_holm"],
                     notes=[VERDICT_NOTE,
                            f"Equivalence bound: ±{A.EQUIVALENCE_BOUND:.2f} on the "
                            "corrected-r scale (none for the GLMM rows).",
                            "Test: the experiment, and the condition where not all. Tests per family: "
                            + "; ".join(
                                f"{P.FAMILY_WORDS.get(f, f)} {int((~not_computed(rows)).sum())}"
                                + (f" ({int(not_computed(rows).sum())} not computed, outside "
                                   "it)" if not_computed(rows).any() else "")
                                for f, rows in comp.groupby("family", sort=False))
                            + "; p (Holm) within each family.",
                            "Corrected-r rows: men's corrected correlation minus non-male "
                            "participants'; p from a permutation of participants' group labels "
                            "(exact); interval from resampling first names (each with all "
                            "its items) jointly and people within group.",
                            "GLMM rows: the group × model logit term of the alignment GLMM "
                            "(non-male minus men), Wald z; no equivalence bound on that scale.",
                            "Equivalence: two one-sided tests at the bound, Holm within the "
                            "family like the difference tests; 'equivalent' only when both "
                            "reject at .05 after Holm.",
                            G.calibration_note()]
                     + [f"Exp {r.experiment}, {r.condition}: {r.group_a} vs {r.group_b}: "
                        f"{r.verdict}." for r in comp[not_computed(comp)].itertuples()
                        if str(r.verdict).startswith("not computed")])
        rel = out["group_reliability"]
        shown = rel.assign(
            below_calibrated_design=rel["below_calibrated_design"].map({True: "yes", False: "no"}))
        report.table("group_reliability", P.reliability_view(shown),
            "Each group: reliability of its item shares, noise ceiling, raw and corrected "
            "correlation with the model", record=shown, groups="heading", labels=P.VIEW_LABELS,
            settings=["below_calibrated_design"], kinds={"n_participants": "count"},
            caps={**correlation_caps("r", "r_corrected", "ci_low", "ci_high"),
                  "reliability": (0.0, 1.0)},
            notes=["Items: name x condition; ratings: she (1) or he (0) per response.",
                   "Corrected r = r / noise ceiling; interval by test inversion on Fisher z "
                   "and log reliability (README, 'Which alignment number to cite')."]
            + reliability_bounds_notes(rel, ("experiment", "condition")))
        glmms = P.alignment_columns(state["alignment_fits"])
        report.model_table("alignment_glmm", glmms,
                           "Alignment GLMM: does each group's choice of she follow the model's "
                           "logit as strongly?", data=out["alignment_glmm"],
                           terms=P.all_term_words(glmms), variables=P.VARIABLES,
                           levels=P.LEVELS, groups=P.GROUPS,
                           notes=["Model: " + report.formula("alignment_glmm",
                                                             A.ALIGNMENT_FORMULA,
                                                             P.FORMULA_WORDS, P.FORMULA_GROUPS)
                                  + ".",
                                  "Group: men = reference, non-male participants; trials with a "
                                  "rating (Exp 1: first and full names), he/she responses.",
                                  "lme4 glmer, Laplace, optimizer bobyqa, Wald z."])
        report.table("item_correlations", P.item_correlations_view(out["item_correlations"]),
                     "The model against all people: item-level Pearson r of P(she | he or she)",
                     record=out["item_correlations"], groups="heading", labels=P.VIEW_LABELS,
                     kinds={"n_items": "count", "n_first_names": "count"},
                     p_columns=["p_value", "p_holm"],
                     p_floors={"p_value": 2 / (A.ITEM_R_BOOT + 1)},
                     notes=["95% interval: percentile bootstrap over first names, the unit "
                            f"the items cluster in ({A.ITEM_R_BOOT:,} replicates; every "
                            "item of a drawn name is kept); p inverts it. Holm over the "
                            f"{len(out['item_correlations'])} tests."])
        report.table("group_correlations", P.group_correlations_view(out["group_correlations"]),
                     "Raw item-level r of each group with the model (attenuated by the groups' "
                     "noise; for comparison only)", record=out["group_correlations"],
                     groups="heading", labels=P.VIEW_LABELS, kinds={"n_participants": "count"},
                     p_columns=["p_value"],
                     notes=["Interval: two-way bootstrap (participants and items), replicates "
                            "centred on r on the Fisher-z scale; p: t test with items as units."])
    if "twin_diagnostics" in out:
        P.twin_diagnostics_table(report, out["twin_diagnostics"])
    # the results a program reads by name (issue 31), also under "tables"
    for name in ("model_side_models", "group_comparison", "response_coverage"):
        if name in out:
            report.result(name, out[name])
    if state["human"] and "model_items" not in out:
        report.figure("she_by_rating", rating_figure(None, state["tables"]),
                      "People's P(she | he or she) against the first name's gender rating, one "
                      "point per first name (its items pooled), by experiment and condition "
                      "(Exp 1's last names show no first name: no panel); dashed line: the "
                      "scale's midpoint")
        write_effects_figure(report, C.effects(state["human"], state["like"], {},
                                               state["tables"]), None)


def they_notes(table: pd.DataFrame) -> list[str]:
    """What the singular-they table compares, with the two quantities that are not like
    for like named as such."""
    people = (table["people_they_all"] * table["people_n"]).sum()
    return [f"Like for like: P(they | he, she, they) on both sides. People: singular they "
            f"(the authors' other-response type) among their he, she and singular-they "
            f"responses, Wilson 95% "
            f"interval over trials; {people:.0f} of {table['people_n'].sum()} responses were "
            "singular they.",
            f"The three cover {table['people_coverage'].min():.0%}-"
            f"{table['people_coverage'].max():.0%} of people's responses (the rest mostly "
            f"repeat the name) and {table['model_coverage'].min():.0%}-"
            f"{table['model_coverage'].max():.0%} of the model's next-word mass.",
            "Not like for like, shown for reference only: people's they among all responses, "
            "and the model's raw next-word P(they); people's pronoun is that of a whole "
            "continuation, the model's the next word."]
