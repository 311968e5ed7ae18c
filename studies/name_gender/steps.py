"""name_gender: load -> score -> fit -> tables -> report (Gardner & Brown-Schmidt 2024)."""
from __future__ import annotations

import pandas as pd

from gbstats.data.registry import load_dataset
from gbstats.mixed.fitting import fit_warnings, fit_with_twin, reused_fits_note
from studies.name_gender import alignment as A
from studies.name_gender import human as H
from studies.name_gender import model_side as M
from studies.name_gender.stimuli import pronoun_prompts

PRODUCTION = (1, 3)
RATING_MODEL = {1: "exp1_m_nameGender", 3: "exp3_m_all"}   # the people's model each compares with


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
        return {**state, "scored": None}
    scored = M.score_prompts(state["prompts"], run.model(), **run.cache)
    scored = M.with_ratings(scored, state["tables"])
    run.write_csv("model_scores.csv", scored.drop(columns=["prefix"]))
    return {**state, "scored": scored}


def fit(run, state):
    if not run.lme4_available("the authors' glmer models, the model-side fit and the alignment "
                              "GLMM"):
        return {**state, "human": {}, "model_fits": {}, "alignment_fits": {}}
    tables = state["tables"]
    human = H.fit_human_models(tables, bayes=run.args.human_twins, draws=run.args.draws,
                               seed=run.seed, **fit_cache(run))
    for key, fits in human.items():
        run.warn(fit_warnings(fits, key))
    if run.args.human_twins:
        run.note("Bayesian twins of the gender-rating models (--human-twins): bambi/PyMC, "
                 f"{run.args.draws} draws per chain, default priors; R-hat and ESS in table "
                 "`human_twin_diagnostics`.")
    else:
        run.note("The Bayesian twins of the people's gender-rating models are opt-in "
                 "(--human-twins; several minutes each on 2 cores).")
    model_fits, alignment_fits = {}, {}
    scored = state["scored"]
    if scored is not None:
        for exp in PRODUCTION:
            rows, contrasts = M.model_rating_rows(scored, tables, exp)
            safe, back = H.bambi_safe(contrasts)
            fits = fit_with_twin(M.MODEL_FORMULA, rows, backends=["lme4"], bayes=False,
                                 contrasts=contrasts, **fit_cache(run))
            if run.bayes:
                twin = fit_with_twin(M.MODEL_FORMULA, rows, backends=[], bayes=True,
                                     draws=run.args.draws, seed=run.seed, loo=False,
                                     contrasts=safe, **fit_cache(run))
                fits["pymc"] = H.rename_terms(twin["pymc"], back)
            model_fits[exp] = fits
            run.warn(fit_warnings(fits, f"Exp {exp} model-side LMM"))
        items = M.item_table(scored, tables)
        grouped = {exp: A.group_trials(tables[f"exp{exp}"], items, run.log, exp)
                   for exp in PRODUCTION}
        for exp in PRODUCTION:
            fits = fit_with_twin(A.ALIGNMENT_FORMULA, grouped[exp], backends=["lme4"],
                                 family="binomial", bayes=run.args.alignment_twin,
                                 draws=run.args.draws, seed=run.seed, loo=False,
                                 **fit_cache(run))
            alignment_fits[exp] = fits
            run.warn(fit_warnings(fits, f"Exp {exp} alignment GLMM"))
        state = {**state, "items": items, "grouped": grouped}
    for note in reused_fits_note({**{k: v for k, v in human.items()},
                                  **{f"exp{e} model-side LMM": f for e, f in model_fits.items()},
                                  **{f"exp{e} alignment GLMM": f for e, f in alignment_fits.items()}}):
        run.note(note)
    record_twins(run, {**human, **{f"exp{e} model-side LMM": f for e, f in model_fits.items()},
                       **{f"exp{e} alignment GLMM": f for e, f in alignment_fits.items()}})
    return {**state, "human": human, "model_fits": model_fits, "alignment_fits": alignment_fits}


def rating_slopes(human: dict, model_fits: dict) -> pd.DataFrame:
    """The first-name rating's slope, people beside the model, log-odds of "she" per point."""
    rows = []
    for exp in PRODUCTION:
        sources = [("people", RATING_MODEL[exp], human.get(RATING_MODEL[exp], {}))]
        sources.append(("model", "she_logit LMM", model_fits.get(exp, {})))
        for side, what, fits in sources:
            for backend, fit in fits.items():
                c = fit.coefs.set_index("term").loc["GenderRatingCentered"]
                rows.append({"experiment": exp, "side": side, "fit": what, "backend": backend,
                             "slope": c["estimate"], "std_error": c["se"], "ci_low": c["ci_low"],
                             "ci_high": c["ci_high"]})
    return pd.DataFrame(rows)


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


def tables(run, state):
    out = {"state": state}
    if state["human"]:
        out["human_models"] = H.human_models_table(state["human"])
        out["human_fit_settings"] = H.fit_settings(state["human"])
    if state.get("scored") is not None and state["human"]:
        from gbstats.alignment.reliability import compare_size_matched, group_reliability

        items = state["items"]
        out["model_items"] = items
        out["item_correlations"] = A.item_correlations(
            items, M.item_table(state["scored"], state["tables"], by_condition=True))
        out["rating_slopes"] = rating_slopes(state["human"], state["model_fits"])
        out["model_side_lmm"] = fit_table({f"exp{e}": f for e, f in state["model_fits"].items()},
                                          "experiment")
        rel, raw, matched = [], [], []
        for exp in PRODUCTION:
            g = state["grouped"][exp]
            item_scores = items[items["experiment"] == exp][["item_key", "p_she"]].rename(
                columns={"item_key": "Item"})
            common = dict(group="group", score="p_she", rating="She", item_keys=("Item",),
                          participant="Participant", seed=run.seed)
            r1, r2 = group_reliability(item_scores, g, n_boot=run.args.n_boot, **common)
            rel.append(r1.assign(experiment=exp))
            raw.append(r2.assign(experiment=exp))
            matched.append(compare_size_matched(item_scores, g, n_boot=run.args.n_boot,
                                                **common).assign(experiment=exp))
        out["group_reliability"] = pd.concat(rel, ignore_index=True)
        out["group_correlations"] = pd.concat(raw, ignore_index=True)
        out["size_matched"] = pd.concat(matched, ignore_index=True)
        out["alignment_glmm"] = fit_table(
            {f"exp{e}": f for e, f in state["alignment_fits"].items()}, "experiment")
        out["singular_they"] = A.singular_they_by_condition(state["tables"]["exp1"],
                                                             state["scored"])
    diag = twin_diagnostics({**state["human"],
                             **{f"exp{e} model-side": f for e, f in state["model_fits"].items()},
                             **{f"exp{e} alignment": f for e, f in state["alignment_fits"].items()}})
    if len(diag):
        out["twin_diagnostics"] = diag
    return out


def answer(out) -> str:
    """One paragraph per production experiment: the slopes side by side and men vs women,
    read off the tables (every number in it is in a table below)."""
    lines = []
    slopes = out["rating_slopes"].query("backend == 'lme4'").set_index(["experiment", "side"])
    for exp in PRODUCTION:
        people, model = slopes.loc[(exp, "people")], slopes.loc[(exp, "model")]
        rel = out["group_reliability"].query("experiment == @exp").set_index("group")
        matched = out["size_matched"].query("experiment == @exp").iloc[0]
        table = out["alignment_glmm"]
        glmm = table[(table["experiment"] == f"exp{exp}") & (table["backend"] == "lme4")]
        inter = glmm[glmm["term"].str.startswith("model_logit:group")].iloc[0]
        groups = "; ".join(f"{g} {r.r_corrected:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"
                           for g, r in rel.iterrows())
        lines.append(
            f"- **Exp {exp}.** Rating slope (log-odds of *she* per point): people "
            f"{people.slope:.2f} [{people.ci_low:.2f}, {people.ci_high:.2f}], model "
            f"{model.slope:.2f} [{model.ci_low:.2f}, {model.ci_high:.2f}]. Corrected item r "
            f"with each group's she-rate: {groups}. Size-matched difference "
            f"({matched.group_a} - {matched.group_b}) {matched.difference:.3f} "
            f"[{matched.ci_low:.3f}, {matched.ci_high:.3f}], p = {matched.p_value:.3f}; "
            f"alignment GLMM `{inter.term}` {inter.estimate:.3f} [{inter.ci_low:.3f}, "
            f"{inter.ci_high:.3f}], p = {inter.p_value:.3f}.")
    return "\n".join(lines)


def report(run, report, out):
    from studies.name_gender.plots import rating_figure

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
        f"Model: `{model}`; for Exp 1 and 3 it scores P(he / she / they) as the next word where "
        "people began their continuation." + run.notes_markdown()))
    if "human_models" in out:
        report.table("human_models", out["human_models"],
                     "The authors' main glmer models refitted: fixed effects (log-odds) and "
                     "random-intercept variances (kind = variance, term var(group))",
                     columns=["experiment", "model", "backend", "kind", "term", "estimate",
                              "std_error", "ci_low", "ci_high", "p_value"], p_columns=["p_value"],
                     digits=5)
        report.table("human_fit_settings", out["human_fit_settings"],
                     "Sample, fit statistics and settings of each glmer fit",
                     columns=["experiment", "model", "rows", "coding", "nobs", "n_participants",
                              "n_items", "loglik", "aic", "optimizer", "nAGQ"])
    if "rating_slopes" in out:
        report.section("Whom does the model resemble?", answer(out))
        report.table("rating_slopes", out["rating_slopes"],
                     "Slope of the first name's gender rating (log-odds of she per rating "
                     "point, 95% intervals): people's she-responses beside the model's "
                     "three-way P(she)")
        report.table("item_correlations", out["item_correlations"],
                     "Raw item-level Pearson r of the model's P(she) with people's she-rate "
                     "(95% Fisher-z interval over items)")
        report.table("group_reliability", out["group_reliability"],
                     "Men vs women (SubjGenderMale): reliability-corrected r of the model's "
                     "P(she) with each group's she-rate, noise ceiling")
        report.table("size_matched", out["size_matched"],
                     "Size-matched comparison of the groups' correlations with the model")
        report.table("alignment_glmm", out["alignment_glmm"],
                     f"Binomial alignment mixed model `{A.ALIGNMENT_FORMULA}` (group: "
                     "men = reference; model_logit:groupwomen = women's extra slope on the "
                     "model)", p_columns=["p_value"])
        report.table("singular_they", out["singular_they"],
                     "Exp 1: people's singular-they rate against the model's P(they), by "
                     "condition")
        report.table("model_side_lmm", out["model_side_lmm"],
                     f"Model side: `{M.MODEL_FORMULA}`", p_columns=["p_value"])
    if "twin_diagnostics" in out:
        report.table("twin_diagnostics", out["twin_diagnostics"],
                     "Bayesian twins: largest R-hat and smallest bulk ESS")
    if state["human"]:
        report.figure("she_by_rating", rating_figure(state["tables"], state.get("items")),
                      "Share of she-responses against the first name's gender rating, per name "
                      "item (Exp 1 first/full and Exp 3), people beside the model's P(she)")
