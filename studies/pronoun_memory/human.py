"""The human side: Gardner's glmer models of Exp 1A, 1B and 2, with the authors' codings.

The authors' analyses and their knitted output are public
(bethanygardner/Singular-They-Public, `analysis/exp1_stats.md`,
`exp1b_stats.md`, `exp2_stats.md`; knitted 04/13/2023, commit b65f8dd).
What each model does, read from there:

* Rows: one per participant x character (the loader's `exp1a` / `exp1b` /
  `exp2` tables, in the authors' row order).
* `Pronoun`: the fixed matrix "they vs he+she" = (.33, .33, -.66) and
  "he vs she" = (-.5, .5, 0) for (he/him, she/her, they/them); Exp 2 names
  the same columns "_T_HS" and "_H_S".
* Exp 2: `PSA` (unrelated -.5, gendered language +.5; "_GenLang") and
  `Biographies` (he/she -.5, they +.5; "_They"). The follow-up models
  recode Biographies as a dummy: 0 for he/she ("_HS0_T1", printed
  "Biographies_HS0_T1") or 0 for they ("_T0_HS1").
* `M_Acc_Factor`: memory accuracy as a factor, "wrong vs right" = (-.5, .5)
  ("_Wrong_Right" in Exp 2).
* Random effects: the structure buildmer kept (direction "order"), printed
  in each summary; buildmer fits with glmer's defaults (Laplace, nAGQ = 1,
  glmerControl(): bobyqa, then Nelder-Mead), and so does this module.
* The terms are written in the order the authors' printed formula has them,
  because glmer's end point (and, for a failed fit, everything) depends on
  the column order.

Exp 1B's memory -> production model is the one the issue singles out. buildmer
kept no random effect at all (a plain glm, which the authors report); they
then fitted `P_Acc ~ M_Acc_Factor * Pronoun + (1 | SubjID)`, which stops with
max|grad| = 0.0426 and prints every SE near 0.0017, and `(1 | Name)`, a
singular fit. All three are reproduced; the middle one is a failed fit whose
SEs must not be read (`fit_status`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

# the Bayesian twin needs formula-safe contrast names ("they vs he+she" -> "they_vs_he_she");
# name_gender's helpers rename them and map the twin's terms back
from studies.name_gender.human import bambi_safe, rename_terms  # noqa: F401 (used by steps)

PRONOUN_LEVELS = ["he/him", "she/her", "they/them"]

# the authors' contrast columns, per experiment
PRONOUN_CODING = {
    "exp1": pd.DataFrame({"they vs he+she": [0.33, 0.33, -0.66], "he vs she": [-0.5, 0.5, 0.0]},
                         index=PRONOUN_LEVELS),
    "exp2": pd.DataFrame({"_T_HS": [0.33, 0.33, -0.66], "_H_S": [-0.5, 0.5, 0.0]},
                         index=PRONOUN_LEVELS),
}
MEMORY_CODING = {"exp1": pd.DataFrame({"wrong vs right": [-0.5, 0.5]}, index=["0", "1"]),
                 "exp2": pd.DataFrame({"_Wrong_Right": [-0.5, 0.5]}, index=["0", "1"])}
PSA_CODING = pd.DataFrame({"_GenLang": [-0.5, 0.5]}, index=["0", "1"])
BIOGRAPHIES_CODING = pd.DataFrame({"_They": [-0.5, 0.5]}, index=["0", "1"])
BIOGRAPHIES_HS0 = pd.DataFrame({"_T1": [0.0, 1.0]}, index=["0", "1"])
BIOGRAPHIES_T0 = pd.DataFrame({"_HS1": [1.0, 0.0]}, index=["0", "1"])

EXP2_CONDITIONS = "Pronoun + Biographies + PSA + Pronoun:PSA + Pronoun:Biographies + " \
                  "Biographies:PSA + Pronoun:Biographies:PSA"


@dataclass(frozen=True)
class HumanModel:
    experiment: str       # "1a", "1b", "2"
    key: str              # the authors' R object name
    formula: str          # lme4 syntax, terms in the printed order
    task: str             # "memory", "production" or "memory -> production"
    engine: str = "glmer"  # "glmer" or "glm" (no random effect)
    twin: bool = False    # a main model: gets a Bayesian twin
    role: str = ""        # one line for the report: what the authors did with it
    biographies: str = "effects"   # Exp 2 Biographies coding: effects, HS0, T0

    @property
    def family(self) -> str:
        return "binomial"

    @property
    def uses_memory_factor(self) -> bool:
        return "M_Acc_Factor" in self.formula

    @property
    def source(self) -> str:
        return {"1a": "analysis/exp1_stats.md", "1b": "analysis/exp1b_stats.md",
                "2": "analysis/exp2_stats.md"}[self.experiment]


HUMAN_MODELS = (
    HumanModel("1a", "exp1a_m_memory", "M_Acc ~ 1 + Pronoun + (1 + Pronoun | SubjID) + (1 | Name)",
               "memory", twin=True, role="memory accuracy (buildmer's maximal converging model)"),
    HumanModel("1a", "exp1a_m_prod", "P_Acc ~ 1 + Pronoun + (1 + Pronoun | SubjID)", "production",
               twin=True, role="production accuracy"),
    HumanModel("1a", "exp1a_m_mp", "P_Acc ~ 1 + Pronoun + M_Acc_Factor + Pronoun:M_Acc_Factor + "
               "(1 | SubjID)", "memory -> production", role="production by memory accuracy"),
    HumanModel("1b", "exp1b_m_memory", "M_Acc ~ 1 + Pronoun + (1 + Pronoun | SubjID)", "memory",
               twin=True, role="memory accuracy"),
    HumanModel("1b", "exp1b_m_prod", "P_Acc ~ 1 + Pronoun + (1 | SubjID) + (1 | Name)",
               "production", twin=True, role="production accuracy"),
    HumanModel("1b", "exp1b_m_mp_buildmer", "P_Acc ~ 1 + Pronoun + M_Acc_Factor + "
               "M_Acc_Factor:Pronoun", "memory -> production", engine="glm",
               role="production by memory accuracy: buildmer kept no random effect (a glm); "
                    "the authors report this one"),
    HumanModel("1b", "exp1b_m_mp_subjInt", "P_Acc ~ M_Acc_Factor * Pronoun + (1 | SubjID)",
               "memory -> production",
               role="the authors' by-participant check: a FAILED fit (max|grad| 0.0426); its "
                    "SEs must not be read"),
    HumanModel("1b", "exp1b_m_mp_itemInt", "P_Acc ~ M_Acc_Factor * Pronoun + (1 | Name)",
               "memory -> production", role="the authors' by-item check (singular)"),
    HumanModel("2", "exp2_m_memory", f"M_Acc ~ 1 + {EXP2_CONDITIONS} + (1 | Name)", "memory",
               twin=True, role="memory accuracy"),
    HumanModel("2", "exp2_m_prod", "P_Acc ~ 1 + Pronoun + PSA + Pronoun:PSA + Biographies + "
               "PSA:Biographies + Pronoun:Biographies + Pronoun:PSA:Biographies + (1 | Name)",
               "production", twin=True, role="production accuracy"),
    HumanModel("2", "exp2_m_prod_bio_HS0", "P_Acc ~ Pronoun * PSA * Biographies_HS0 + (1 | Name)",
               "production", biographies="HS0",
               role="Pronoun x PSA within the he/she biographies (Biographies dummy-coded)"),
    HumanModel("2", "exp2_m_prod_bio_T0", "P_Acc ~ Pronoun * PSA * Biographies_T0 + (1 | Name)",
               "production", biographies="T0",
               role="Pronoun x PSA within the they biographies"),
    HumanModel("2", "exp2_m_mp", "P_Acc ~ 1 + Pronoun + M_Acc_Factor + PSA + Pronoun:PSA + "
               "Pronoun:M_Acc_Factor + M_Acc_Factor:PSA + Pronoun:M_Acc_Factor:PSA + Biographies + "
               "PSA:Biographies + M_Acc_Factor:Biographies + M_Acc_Factor:PSA:Biographies + "
               "Pronoun:Biographies + Pronoun:PSA:Biographies + Pronoun:M_Acc_Factor:Biographies + "
               "Pronoun:M_Acc_Factor:PSA:Biographies + (1 | Name)", "memory -> production",
               role="production by memory accuracy"),
)
FAILED_FIT = "exp1b_m_mp_subjInt"


def model_rows(spec: HumanModel, table: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """(rows, contrasts) of one model: the character table with the authors' columns
    as factors (levels in the authors' order) and their coding matrices."""
    family = "exp2" if spec.experiment == "2" else "exp1"
    rows = table.copy()
    rows["Pronoun"] = pd.Categorical(rows["Pronoun"], categories=PRONOUN_LEVELS)
    contrasts = {"Pronoun": PRONOUN_CODING[family]}
    if spec.uses_memory_factor:
        rows["M_Acc_Factor"] = pd.Categorical(rows["M_Acc"].astype(int).astype(str),
                                              categories=["0", "1"])
        contrasts["M_Acc_Factor"] = MEMORY_CODING[family]
    if spec.experiment == "2":
        rows["PSA"] = pd.Categorical(rows["PSA"].astype(int).astype(str), categories=["0", "1"])
        contrasts["PSA"] = PSA_CODING
        bio = pd.Categorical(rows["Biographies"].astype(int).astype(str), categories=["0", "1"])
        column, coding = {"effects": ("Biographies", BIOGRAPHIES_CODING),
                          "HS0": ("Biographies_HS0", BIOGRAPHIES_HS0),
                          "T0": ("Biographies_T0", BIOGRAPHIES_T0)}[spec.biographies]
        rows[column] = bio
        contrasts[column] = coding
    from gbstats.mixed.formula import parse_formula

    parsed = parse_formula(spec.formula)
    # the participant and the character travel with the rows even where the formula has no
    # random effect for them: the design check (gbstats.mixed.design) then sees that Exp 2's
    # PSA and Biographies vary only between participants, which the authors' models have
    # no random effect for (issue 31); the fit itself uses the formula's columns only
    keep = list(dict.fromkeys([parsed.response, *parsed.columns, "participant", "Name"]))
    return rows[[c for c in keep if c in rows.columns]].reset_index(drop=True), \
        {k: v for k, v in contrasts.items() if k in parsed.columns}


# --------------------------------------------------------------------------
# fitting

def fit_glm(spec: HumanModel, rows: pd.DataFrame, contrasts: dict):
    """A binomial glm with the same design as glmer's fixed part (statsmodels IRLS), in
    gbstats' result shape (backend "glm")."""
    import statsmodels.api as sm

    from gbstats.mixed.contrasts import resolve_contrasts
    from gbstats.mixed.formula import (
        factor_levels_for,
        model_matrix,
        parse_formula,
        r_term_names,
    )
    from gbstats.mixed.results import FitResult, wald_table

    parsed = parse_formula(spec.formula)
    levels = factor_levels_for(parsed, rows)
    codings = resolve_contrasts(contrasts, levels)
    rows = rows.assign(**{v: rows[v].astype(str) for v in levels})
    X = model_matrix(parsed.intercept, parsed.fixed_terms, rows, levels, codings)
    names = r_term_names(parsed.intercept, parsed.fixed_terms, levels, codings)
    y = rows[parsed.response].to_numpy(dtype=float)
    res = sm.GLM(y, np.asarray(X, dtype=float), family=sm.families.Binomial()).fit()
    coefs = wald_table(names, res.params, res.bse, res.tvalues, np.full(len(names), np.nan),
                       res.pvalues)
    stats = {"nobs": int(res.nobs), "loglik": float(res.llf), "aic": float(res.aic),
             "bic": float(res.bic_llf), "converged": bool(res.converged),
             "contrasts": {v: c.to_record() for v, c in codings.items()},
             "optimizer": "IRLS (statsmodels GLM)", "n_groups": {},
             "ci_method": "maximum likelihood (IRLS); Wald z tests and 95% Wald intervals"}
    warnings = [] if res.converged else ["IRLS did not converge"]
    return FitResult(formula=spec.formula, backend="glm", family="binomial", coefs=coefs,
                     ranef_var=pd.DataFrame(columns=["group", "term", "variance", "sd"]),
                     fit_stats=stats, warnings=warnings)


def fit_human_models(tables: dict, *, specs=HUMAN_MODELS, use_cache: bool = True,
                     cache_dir=None) -> dict:
    """{spec.key: {"lme4" or "glm": FitResult}} for the authors' models (no twins)."""
    from gbstats.mixed.fit_cache import cached_fit
    from gbstats.mixed.fitting import fit_frequentist

    fits = {}
    for spec in specs:
        rows, contrasts = model_rows(spec, tables[f"exp{spec.experiment}"])
        if spec.engine == "glm":
            fits[spec.key] = {"glm": fit_glm(spec, rows, contrasts)}
        else:
            fits[spec.key] = {"lme4": cached_fit(fit_frequentist, spec.formula, rows,
                                                 backend="lme4", family="binomial",
                                                 optimizer=None, contrasts=contrasts,
                                                 use_cache=use_cache, cache_dir=cache_dir)}
    return fits


# --------------------------------------------------------------------------
# convergence: lme4's own messages, and whether the SEs can be read

GRADIENT = re.compile(r"max\|grad\| = ([0-9.eE+-]+) \(tol = ([0-9.eE+-]+)")


def fit_status(fit, glm_se: pd.Series | None = None) -> dict:
    """What a reader may take from a fit: status, lme4's messages, whether the SEs hold.

    status: "converged"; "singular" (lme4's boundary message: a variance at zero or a
    correlation at +/-1; estimates usable); "convergence warning" (lme4's gradient
    check failed, max|grad| above its tolerance, but the SEs pass the check below);
    "FAILED" (the gradient check failed and the SEs do not hold).

    The SE check: a GLMM's fixed-effect SEs cannot be far below those of the same fixed
    part fitted without random effects (`glm_se`, a glm on the same rows): random effects
    add uncertainty to between-cluster terms and remove at most a little from
    within-cluster ones. glmer takes its SEs from a finite-difference Hessian; when the
    optimizer stopped away from the optimum that Hessian can be garbage (Exp 1B's
    `P_Acc ~ M_Acc_Factor * Pronoun + (1 | SubjID)`: every SE 0.0017, against the glm's
    0.08-0.42). SEs below a quarter of the glm's are declared unreadable.
    """
    from gbstats.mixed.design import is_design_warning

    # lme4's own messages; the design check's findings are the model table's notes
    messages = [w for w in fit.warnings if not is_design_warning(w)]
    gradient = [float(m.group(1)) for w in messages for m in [GRADIENT.search(w)] if m]
    singular = any("singular" in w.lower() for w in messages)
    se_ratio = np.nan
    if glm_se is not None and fit.backend == "lme4":
        own = fit.coefs.set_index("term")["se"]
        se_ratio = float((own / glm_se.reindex(own.index)).min())
    se_ok = not (np.isfinite(se_ratio) and se_ratio < SE_RATIO_FLOOR)
    failed_gradient = bool(gradient) or any("failed to converge" in w.lower() for w in messages)
    if failed_gradient and not se_ok:
        status = "FAILED"
    elif failed_gradient:
        status = "convergence warning"
    elif not se_ok:
        status = "FAILED"
    elif singular:
        status = "singular"
    else:
        status = "converged"
    return {"status": status, "se_usable": se_ok and status != "FAILED",
            "max_grad": max(gradient) if gradient else np.nan, "min_se_ratio_to_glm": se_ratio,
            "lme4_messages": " | ".join(messages)}


SE_RATIO_FLOOR = 0.25


def reference_glm_se(spec: HumanModel, tables: dict) -> pd.Series:
    """The fixed part's SEs without random effects (a glm on the same rows): the yardstick
    of `fit_status`'s SE check."""
    from gbstats.mixed.formula import parse_formula

    parsed = parse_formula(spec.formula)
    fixed_only = replace(spec, formula=_fixed_formula(parsed), engine="glm")
    rows, contrasts = model_rows(fixed_only, tables[f"exp{spec.experiment}"])
    return fit_glm(fixed_only, rows, contrasts).coefs.set_index("term")["se"]


def _fixed_formula(parsed) -> str:
    rhs = ["1" if parsed.intercept else "0"] + [":".join(t) for t in parsed.fixed_terms]
    return f"{parsed.response} ~ {' + '.join(rhs)}"


def statuses(fits: dict, tables: dict, specs=HUMAN_MODELS) -> dict:
    """{key: fit_status(...)} for every fitted model."""
    out = {}
    for spec in specs:
        group = fits.get(spec.key, {})
        fit = group.get("lme4") or group.get("glm")
        if fit is None:
            continue
        out[spec.key] = fit_status(fit, reference_glm_se(spec, tables)
                                   if spec.engine == "glmer" else None)
    return out


def human_models_table(fits: dict, status: dict, specs=HUMAN_MODELS) -> pd.DataFrame:
    """`human_models`: one row per experiment x model x backend x term, with each fit's
    status and lme4's messages. A failed fit's rows carry se_usable False."""
    rows = []
    for spec in specs:
        for backend, fit in fits.get(spec.key, {}).items():
            st = status.get(spec.key, {}) if backend != "pymc" else twin_status(fit)
            for c in fit.coefs.itertuples():
                rows.append({"experiment": spec.experiment, "model": spec.key, "task": spec.task,
                             "formula": spec.formula, "backend": backend, "term": c.term,
                             "estimate": c.estimate, "std_error": c.se, "ci_low": c.ci_low,
                             "ci_high": c.ci_high, "p_value": c.p_value,
                             "status": st.get("status", ""), "se_usable": st.get("se_usable"),
                             "max_grad": st.get("max_grad", np.nan),
                             "lme4_messages": st.get("lme4_messages", "")})
    return pd.DataFrame(rows)


def twin_status(fit) -> dict:
    stats = fit.fit_stats
    converged = bool(stats.get("converged"))
    return {"status": "converged" if converged else "NOT CONVERGED", "se_usable": converged,
            "max_grad": np.nan,
            "lme4_messages": f"R-hat max {stats.get('rhat_max', np.nan):.3f}, bulk ESS min "
                             f"{stats.get('ess_bulk_min', np.nan):.0f}, divergences "
                             f"{stats.get('divergences', 'n/a')}"}


def variance_table(fits: dict, specs=HUMAN_MODELS) -> pd.DataFrame:
    rows = []
    for spec in specs:
        fit = fits.get(spec.key, {}).get("lme4")
        if fit is None:
            continue
        for v in fit.ranef_var.itertuples():
            rows.append({"experiment": spec.experiment, "model": spec.key, "group": v.group,
                         "term": v.term, "variance": v.variance, "sd": v.sd})
    return pd.DataFrame(rows)


def fit_settings(fits: dict, status: dict, specs=HUMAN_MODELS) -> pd.DataFrame:
    """What each fit used and gave: n, groups, logLik, AIC, optimizer, status."""
    rows = []
    for spec in specs:
        group = fits.get(spec.key, {})
        fit = group.get("lme4") or group.get("glm")
        if fit is None:
            continue
        s = fit.fit_stats
        optimizer = s.get("optimizer")
        rows.append({"experiment": spec.experiment, "model": spec.key, "task": spec.task,
                     "formula": spec.formula, "engine": spec.engine, "nobs": s.get("nobs"),
                     "groups": "; ".join(f"{g} {n}" for g, n in s.get("n_groups", {}).items()),
                     "loglik": s.get("loglik"), "aic": s.get("aic"),
                     "optimizer": ("glmerControl default: bobyqa, then Nelder_Mead; Laplace"
                                   if optimizer == "lme4 default" else optimizer),
                     "status": status.get(spec.key, {}).get("status", ""),
                     "role": spec.role, "published_in": spec.source})
    return pd.DataFrame(rows)
