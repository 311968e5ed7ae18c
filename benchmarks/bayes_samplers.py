"""PyMC's own NUTS versus nutpie, through `gbstats.fit_bayes`, in one run.

Two model shapes:
  small  the singular-they surprisal shape: 4 cells x 40 frames = 160 rows,
         surprisal ~ close + gendered + (1|frame), gaussian;
  glmm   the Cog-GB-Eval QA size: 30 participants x 250 items each, 1,500
         items (each seen by 5 participants) = 7,500 trials,
         correct ~ stereotype + (1|participant) + (1|item), bernoulli.

Each fit is timed end to end (model build and compilation included, since a
user pays for them on every call) with 2 chains x 1,000 draws after 1,000
tuning steps (fixed here, whatever the library default); PyMC runs one process
per chain, nutpie one thread per chain. The samplers
alternate (pymc, nutpie, pymc, nutpie, ...) so that load on this shared
machine hits both alike, and the minimum over repetitions is reported, with
the ratio pymc/nutpie of the minima. Sampling quality is recorded next to the
time (min bulk ESS, max R-hat, divergences, ESS per second) and the posterior
means of both samplers are stored so that one can see they agree.

    .venv/bin/python benchmarks/bayes_samplers.py [--reps-small 4] [--reps-glmm 2]

writes benchmarks/results/bayes_samplers.json.

    .venv/bin/python benchmarks/bayes_samplers.py --mass-matrix [--reps-glmm 2]

measures nutpie's mass-matrix adaptation instead (issue 25): the diagonal one
against the low-rank modified one (`low_rank_modified_mass_matrix=True`,
gbstats' default), interleaved, on the QA GLMM (and the small LMM unless
--skip-small), and reports for each the minimum time, the bulk and tail ESS
over the reported parameters (fixed effects, group SDs) and ESS per second;
it updates only the "mass_matrix" entry of bayes_samplers.json.

    GBSTATS_DATA=... .venv/bin/python benchmarks/bayes_samplers.py --standardize [--seeds 2023,1]

measures issue 34's fix instead: role_nouns' human GLMM (5,420 real trials of
Papineau et al. 2022, `neutral ~ name_gender * attitude_score + (1|participant)
+ (1|role_noun_set)`, attitude_score 0-100) sampled as the study samples it
(nutpie, low-rank mass matrix, 2 chains x 1,000 draws after 1,000 tuning
steps), with the numeric predictor on its own scale ("before",
`fit_bayes(standardize=False)`, the code before the fix) and divided by its SD
("after", the default), alternating before/after for each seed. It records per
fit the wall time, R-hat, bulk and tail ESS over the reported parameters,
divergences, and per chain the mean leapfrog steps per draw, step size and
log density (a stuck chain shows there), and per seed the ratio of bulk and
tail ESS per second after / before. It updates only the "standardize" entry.

    GBSTATS_DATA=... .venv/bin/python benchmarks/bayes_samplers.py --parametrisation [--seeds 2023,1]

measures why cognitive_bias' wino QA twin (3,675 real trials of Lior & Stanovsky
2023, `correct ~ stereotype * alpha + (1|participant) + (1|sentence)`; 22
participants with about 167 trials each, 1,892 sentences with about 2 each)
needs more than 1,000 draws: per reported parameter (fixed effects, group SDs)
its bulk and tail ESS, sampled as the study samples it, with bambi's
non-centred group effects (the default) and centred ones, alternating for each
seed. It updates only the "parametrisation" entry.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.mixed.bayes import fit_bayes

OUT = Path(__file__).resolve().parent / "results" / "bayes_samplers.json"
SAMPLERS = ["pymc", "nutpie"]
DRAWS, TUNE, CHAINS = 1000, 1000, 2


def small_lmm_data(seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frames = np.repeat(np.arange(40), 4)
    close = np.tile(["close", "close", "distant", "distant"], 40)
    gendered = np.tile(["no", "yes", "no", "yes"], 40)
    frame_effect = rng.normal(0, 1.0, 40)[frames]
    y = (8 + 0.5 * (close == "distant") + 1.0 * (gendered == "yes")
         + frame_effect + rng.normal(0, 1.0, frames.size))
    return pd.DataFrame({"frame": [f"f{i:02d}" for i in frames], "close": close,
                         "gendered": gendered, "surprisal": y})


def qa_glmm_data(seed: int = 2, n_participants: int = 30, n_items: int = 1500,
                 items_per_participant: int = 250) -> pd.DataFrame:
    """Each participant sees a block of 250 consecutive items (mod 1500), so
    every item is seen by 30 * 250 / 1500 = 5 participants."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_participants):
        start = p * n_items // n_participants
        items = (start + np.arange(items_per_participant) * 1) % n_items
        rows.append(pd.DataFrame({"participant": f"p{p:02d}", "item": items}))
    df = pd.concat(rows, ignore_index=True)
    df["stereotype"] = np.where(df["item"] % 2 == 0, "anti", "pro")
    p_eff = rng.normal(0, 0.5, n_participants)
    i_eff = rng.normal(0, 1.0, n_items)
    eta = (0.5 + 0.8 * (df["stereotype"] == "pro")
           + p_eff[df["participant"].str[1:].astype(int)] + i_eff[df["item"]])
    df["correct"] = rng.binomial(1, 1 / (1 + np.exp(-eta)))
    df["item"] = "i" + df["item"].astype(str).str.zfill(4)
    return df


CASES = {
    "small_lmm_160": ("surprisal ~ close + gendered + (1|frame)", "gaussian", small_lmm_data),
    "qa_glmm_7500": ("correct ~ stereotype + (1|participant) + (1|item)", "bernoulli",
                     qa_glmm_data),
}


def time_fit(formula, data, family, sampler) -> dict:
    start = time.perf_counter()
    # the diagonal mass matrix, as these timings were first taken (PyMC's NUTS has no other)
    fit = fit_bayes(formula, data, family=family, sampler=sampler, loo=False, mass_matrix="diag",
                    draws=DRAWS, tune=TUNE, chains=CHAINS)
    seconds = time.perf_counter() - start
    s = fit.fit_stats
    return {"seconds": seconds, "min_ess_bulk": s["min_ess_bulk"], "max_rhat": s["max_rhat"],
            "n_divergences": s["n_divergences"],
            "estimates": dict(zip(fit.coefs["term"], fit.coefs["estimate"].round(4))),
            "posterior_sd": dict(zip(fit.coefs["term"], fit.coefs["se"].round(4)))}


def run_case(name: str, reps: int) -> dict:
    formula, family, make = CASES[name]
    data = make()
    runs = {s: [] for s in SAMPLERS}
    for rep in range(reps):
        for sampler in SAMPLERS:
            r = time_fit(formula, data, family, sampler)
            print(f"{name} rep {rep} {sampler}: {r['seconds']:.1f} s, "
                  f"min ESS {r['min_ess_bulk']:.0f}, max R-hat {r['max_rhat']:.3f}", flush=True)
            runs[sampler].append(r)
    summary = {}
    for sampler, rs in runs.items():
        best = min(r["seconds"] for r in rs)
        summary[sampler] = {"min_seconds": best, "all_seconds": [r["seconds"] for r in rs],
                            "min_ess_bulk_at_best": min(rs, key=lambda r: r["seconds"])["min_ess_bulk"],
                            "min_ess_bulk_per_second": min(rs, key=lambda r: r["seconds"])["min_ess_bulk"] / best,
                            "runs": rs}
    return {"formula": formula, "family": family, "nobs": len(data), "reps": reps,
            "samplers": summary,
            "ratio_pymc_over_nutpie": summary["pymc"]["min_seconds"] / summary["nutpie"]["min_seconds"]}


MASS_MATRICES = ["diag", "low_rank"]


def time_mass_matrix(formula, data, family, mass_matrix) -> dict:
    start = time.perf_counter()
    fit = fit_bayes(formula, data, family=family, sampler="nutpie", mass_matrix=mass_matrix,
                    loo=False, draws=DRAWS, tune=TUNE, chains=CHAINS)
    seconds = time.perf_counter() - start
    s = fit.fit_stats
    return {"seconds": seconds, "ess_bulk_min": s["ess_bulk_min"], "ess_tail_min": s["ess_tail_min"],
            "rhat_max": s["rhat_max"], "divergences": s["divergences"],
            "ess_bulk_min_all_parameters": s["min_ess_bulk"],
            "estimates": dict(zip(fit.coefs["term"], fit.coefs["estimate"].round(4)))}


def run_mass_matrix_case(name: str, reps: int) -> dict:
    formula, family, make = CASES[name]
    data = make()
    runs = {m: [] for m in MASS_MATRICES}
    for rep in range(reps):
        for mass_matrix in MASS_MATRICES:
            r = time_mass_matrix(formula, data, family, mass_matrix)
            print(f"{name} rep {rep} {mass_matrix}: {r['seconds']:.1f} s, bulk ESS "
                  f"{r['ess_bulk_min']:.0f}, tail ESS {r['ess_tail_min']:.0f}, "
                  f"R-hat {r['rhat_max']:.3f}", flush=True)
            runs[mass_matrix].append(r)
    summary = {}
    for mass_matrix, rs in runs.items():
        best = min(r["seconds"] for r in rs)
        summary[mass_matrix] = {
            "min_seconds": best,
            # ESS is a property of the (seeded) chains, the same in every rep
            "ess_bulk_min": min(r["ess_bulk_min"] for r in rs),
            "ess_tail_min": min(r["ess_tail_min"] for r in rs),
            "ess_bulk_per_second": min(r["ess_bulk_min"] for r in rs) / best,
            "ess_tail_per_second": min(r["ess_tail_min"] for r in rs) / best,
            "runs": rs}
    return {"formula": formula, "family": family, "nobs": len(data), "reps": reps,
            "mass_matrices": summary,
            "bulk_ess_per_second_ratio_low_rank_over_diag":
                summary["low_rank"]["ess_bulk_per_second"] / summary["diag"]["ess_bulk_per_second"],
            "tail_ess_per_second_ratio_low_rank_over_diag":
                summary["low_rank"]["ess_tail_per_second"] / summary["diag"]["ess_tail_per_second"]}


def main_mass_matrix(args) -> None:
    cases = {}
    if not args.skip_glmm:
        cases["qa_glmm_7500"] = run_mass_matrix_case("qa_glmm_7500", args.reps_glmm)
    if not args.skip_small:
        cases["small_lmm_160"] = run_mass_matrix_case("small_lmm_160", args.reps_small)
    doc = json.loads(OUT.read_text()) if OUT.exists() else {"benchmark": "bayes_samplers"}
    # a run of one case keeps the other case's recorded result (each case records its own
    # date, so results taken on different runs are never compared with each other)
    earlier = doc.get("mass_matrix", {}).get("cases", {})
    date = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for case in cases.values():
        case["date"] = date
    doc["mass_matrix"] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "settings": {"sampler": "nutpie", "draws": DRAWS, "tune": TUNE, "chains": CHAINS,
                     "seed": 1, "timing": "wall clock of one fit_bayes call, build + compile + "
                     "sampling, loo=False; min over interleaved reps; ESS over the reported "
                     "parameters"},
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "versions": {p: version(p) for p in ["pymc", "bambi", "nutpie", "arviz", "pytensor"]},
        "cases": {**earlier, **cases}}
    OUT.write_text(json.dumps(doc, indent=2))
    print(f"wrote {OUT} (mass_matrix)")


STANDARDIZE_MODES = {"before": False, "after": True}


def role_nouns_glmm_rows():
    """role_nouns' human GLMM rows, as the study builds them (needs the papineau2022 data)."""
    from gbstats.data.registry import load_dataset
    from studies.role_nouns import analysis as A

    return A.GLMM_FORMULA, A.glmm_rows(load_dataset("papineau2022").tables["trials"])


def per_chain(idata) -> dict:
    """Per chain: mean leapfrog steps per draw, mean step size, mean log density."""
    stats = idata.sample_stats
    return {name: [round(float(v), 4) for v in stats[var].mean("draw").values]
            for name, var in (("leapfrog_steps_per_draw", "n_steps"), ("step_size", "step_size"),
                              ("logp", "logp")) if var in stats}


def time_standardize(formula, data, seed: int, standardize: bool) -> dict:
    start = time.perf_counter()
    fit = fit_bayes(formula, data, family="bernoulli", sampler="nutpie", loo=False,
                    draws=DRAWS, tune=TUNE, chains=CHAINS, seed=seed, standardize=standardize)
    seconds = time.perf_counter() - start
    s = fit.fit_stats
    return {"seconds": seconds, "rhat_max": s["rhat_max"], "ess_bulk_min": s["ess_bulk_min"],
            "ess_tail_min": s["ess_tail_min"], "divergences": s["divergences"],
            "converged": s["converged"], "ess_bulk_per_second": s["ess_bulk_min"] / seconds,
            "ess_tail_per_second": s["ess_tail_min"] / seconds, "chains": per_chain(fit.idata),
            "predictor_scales": s["predictor_scales"],
            "estimates": dict(zip(fit.coefs["term"], fit.coefs["estimate"].round(5)))}


def add_ratios(runs: dict) -> None:
    """Per seed: bulk ESS per 1,000 gradient evaluations of the kept draws (leapfrog steps;
    a measure the machine's load does not move), and the ratios after / before."""
    for by_mode in runs.values():
        for mode in STANDARDIZE_MODES:
            r = by_mode[mode]
            gradients = sum(r["chains"]["leapfrog_steps_per_draw"]) * DRAWS
            r["ess_bulk_per_1000_gradients"] = 1000 * r["ess_bulk_min"] / gradients
        before, after = by_mode["before"], by_mode["after"]
        by_mode["ratio_after_over_before"] = {
            "seconds": after["seconds"] / before["seconds"],
            "ess_bulk_per_second": after["ess_bulk_per_second"] / before["ess_bulk_per_second"],
            "ess_tail_per_second": after["ess_tail_per_second"] / before["ess_tail_per_second"],
            "ess_bulk_per_1000_gradients": (after["ess_bulk_per_1000_gradients"]
                                            / before["ess_bulk_per_1000_gradients"])}


def main_standardize(args) -> None:
    formula, data = role_nouns_glmm_rows()
    seeds = [int(x) for x in args.seeds.split(",")]
    runs: dict[str, dict[str, dict]] = {}
    for seed in seeds:
        runs[str(seed)] = {}
        for mode, standardize in STANDARDIZE_MODES.items():
            r = time_standardize(formula, data, seed, standardize)
            print(f"seed {seed} {mode}: {r['seconds']:.0f} s, R-hat {r['rhat_max']:.3f}, bulk ESS "
                  f"{r['ess_bulk_min']:.0f}, tail ESS {r['ess_tail_min']:.0f}, steps/draw "
                  f"{r['chains'].get('leapfrog_steps_per_draw')}", flush=True)
            runs[str(seed)][mode] = r
    add_ratios(runs)
    doc = json.loads(OUT.read_text()) if OUT.exists() else {"benchmark": "bayes_samplers"}
    # seeds run earlier are kept (each pair was timed in one run, before and after in turn)
    earlier = doc.get("standardize", {}).get("seeds", {})
    date = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for by_mode in runs.values():
        by_mode["date"] = date
    runs = {**earlier, **runs}
    doc["standardize"] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "case": "role_nouns human GLMM (Papineau et al. 2022 production data)",
        "formula": formula, "family": "bernoulli", "nobs": len(data),
        "n_participants": int(data["participant"].nunique()),
        "n_role_noun_sets": int(data["role_noun_set"].nunique()),
        "attitude_score_sd": float(data["attitude_score"].std(ddof=1)),
        "settings": {"sampler": "nutpie", "mass_matrix": "low_rank", "draws": DRAWS,
                     "tune": TUNE, "chains": CHAINS,
                     "timing": "wall clock of one fit_bayes call, build + compile + sampling, "
                               "loo=False; before and after alternate for each seed; ESS over "
                               "the reported parameters (fixed effects, group SDs)"},
        "modes": {"before": "fit_bayes(standardize=False): attitude_score sampled on its 0-100 "
                            "scale (the code before issue 34)",
                  "after": "fit_bayes(standardize=True), the default: attitude_score divided "
                           "by its SD while sampling, reported per point"},
        "load_average_1_5_15": list(os.getloadavg()),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "versions": {p: version(p) for p in ["pymc", "bambi", "nutpie", "arviz", "pytensor"]},
        "seeds": runs,
        "summary": standardize_summary(runs)}
    OUT.write_text(json.dumps(doc, indent=2))
    print(f"wrote {OUT} (standardize)")


def standardize_summary(runs: dict) -> dict:
    """How many seeds converged in one fit and had a stuck chain, before and after, and the
    ratios after / before seed by seed. No average of the ratios: they are bimodal (a seed
    whose chain got stuck before gains thousands of times, one that did not gains nothing),
    so an average would describe no seed."""
    out = {}
    for mode in STANDARDIZE_MODES:
        out[f"{mode}_converged"] = sum(bool(r[mode]["converged"]) for r in runs.values())
        out[f"{mode}_stuck_chain"] = sum(max(r[mode]["chains"]["leapfrog_steps_per_draw"]) > 500
                                         for r in runs.values())
    out["seeds"] = len(runs)
    for key in ("ess_bulk_per_second", "ess_bulk_per_1000_gradients"):
        out[f"ratio_{key}_by_seed"] = {seed: r["ratio_after_over_before"][key]
                                       for seed, r in runs.items()}
    out["stuck_chain_means"] = "a chain averaging more than 500 leapfrog steps per draw"
    out["converged_means"] = ("R-hat <= 1.01, bulk and tail ESS >= 400 and no divergences in "
                              "this one fit (the study's twin would refit one that misses)")
    return out


PARAMETRISATIONS = {"noncentred": True, "centred": False}


def cognitive_bias_wino_rows():
    """cognitive_bias' wino GLMM rows, as the study builds them with its default flags
    (needs the cog_gb_eval2023 data)."""
    from types import SimpleNamespace

    from gbstats.data.registry import load_dataset
    from gbstats.exclusions import ExclusionLog
    from studies.cognitive_bias import analysis as A
    from studies.cognitive_bias.steps import qa_side

    flags = SimpleNamespace(ignore_non_coreference="wino", drop_repeated_responses=False)
    analysed = qa_side(load_dataset("cog_gb_eval2023"), flags, ExclusionLog()).analysed
    rows = A.glmm_rows(analysed)
    return A.GLMM_FORMULA, rows[rows["dataset"] == "wino"].drop(columns="dataset")


def ess_by_parameter(fit) -> dict:
    """{reported parameter: [bulk ESS, tail ESS]}: the parameters the twin's convergence
    figures are taken over (gbstats.mixed.bayes.reported_variables)."""
    import arviz as az

    from gbstats.mixed.bayes import reported_variables

    post = fit.idata.posterior
    names = list(reported_variables(fit.idata, fit.handle.native))
    bulk, tail = az.ess(post[names], method="bulk"), az.ess(post[names], method="tail")
    out = {}
    for v in names:
        b, t = np.atleast_1d(bulk[v].values), np.atleast_1d(tail[v].values)
        for j in range(b.size):
            label = v if b.size == 1 else f"{v}[{j}]"
            out[label] = [round(float(b[j]), 1), round(float(t[j]), 1)]
    return out


def main_parametrisation(args) -> None:
    formula, data = cognitive_bias_wino_rows()
    runs: dict[str, dict[str, dict]] = {}
    for seed in [int(x) for x in args.seeds.split(",")]:
        runs[str(seed)] = {}
        for mode, noncentered in PARAMETRISATIONS.items():
            start = time.perf_counter()
            fit = fit_bayes(formula, data, family="bernoulli", sampler="nutpie", loo=False,
                            draws=DRAWS, tune=TUNE, chains=CHAINS, seed=seed,
                            noncentered=noncentered)
            seconds = time.perf_counter() - start
            s = fit.fit_stats
            r = {"seconds": round(seconds, 2), "rhat_max": s["rhat_max"],
                 "ess_bulk_min": s["ess_bulk_min"], "ess_tail_min": s["ess_tail_min"],
                 "divergences": s["divergences"], "converged": s["converged"],
                 "ess_bulk_per_second": s["ess_bulk_min"] / seconds,
                 "ess_bulk_tail_by_parameter": ess_by_parameter(fit)}
            print(f"seed {seed} {mode}: {seconds:.0f} s, R-hat {r['rhat_max']:.3f}, "
                  f"ESS by parameter {r['ess_bulk_tail_by_parameter']}", flush=True)
            runs[str(seed)][mode] = r
    doc = json.loads(OUT.read_text()) if OUT.exists() else {"benchmark": "bayes_samplers"}
    doc["parametrisation"] = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "case": "cognitive_bias wino QA GLMM (Lior & Stanovsky 2023, Cog-GB-Eval QA trials)",
        "formula": formula, "family": "bernoulli", "nobs": len(data),
        "n_participants": int(data["participant"].nunique()),
        "n_sentences": int(data["sentence"].nunique()),
        "trials_per_participant_median": float(data.groupby("participant").size().median()),
        "trials_per_sentence_median": float(data.groupby("sentence").size().median()),
        "settings": {"sampler": "nutpie", "mass_matrix": "low_rank", "draws": DRAWS,
                     "tune": TUNE, "chains": CHAINS, "standardize": True,
                     "timing": "wall clock of one fit_bayes call, build + compile + sampling, "
                               "loo=False"},
        "modes": {"noncentred": "bambi noncentered=True (gbstats' default): each group effect "
                                "is sigma x a standard-normal offset",
                  "centred": "bambi noncentered=False: group effects ~ Normal(0, sigma)"},
        "load_average_1_5_15": list(os.getloadavg()),
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "versions": {p: version(p) for p in ["pymc", "bambi", "nutpie", "arviz", "pytensor"]},
        "seeds": runs}
    OUT.write_text(json.dumps(doc, indent=2))
    print(f"wrote {OUT} (parametrisation)")


def resummarize() -> None:
    """Recompute the "standardize" summary from the seeds stored (no fits)."""
    doc = json.loads(OUT.read_text())
    doc["standardize"]["summary"] = standardize_summary(doc["standardize"]["seeds"])
    OUT.write_text(json.dumps(doc, indent=2))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps-small", type=int, default=4)
    ap.add_argument("--reps-glmm", type=int, default=2)
    ap.add_argument("--skip-glmm", action="store_true")
    ap.add_argument("--skip-small", action="store_true")
    ap.add_argument("--mass-matrix", action="store_true",
                    help="compare nutpie's diagonal and low-rank mass matrices")
    ap.add_argument("--standardize", action="store_true",
                    help="role_nouns' GLMM twin with its numeric predictor on its own scale "
                         "and divided by its SD (issue 34)")
    ap.add_argument("--parametrisation", action="store_true",
                    help="cognitive_bias' wino GLMM twin with non-centred and centred group "
                         "effects: ESS per parameter (issue 34)")
    ap.add_argument("--seeds", default="2023,1",
                    help="--standardize, --parametrisation: the seeds, each fitted before and after (default: "
                         "%(default)s; 2023 is the study's)")
    args = ap.parse_args(argv)
    if args.mass_matrix:
        return main_mass_matrix(args)
    if args.standardize:
        return main_standardize(args)
    if args.parametrisation:
        return main_parametrisation(args)
    cases = {"small_lmm_160": run_case("small_lmm_160", args.reps_small)}
    if not args.skip_glmm:
        cases["qa_glmm_7500"] = run_case("qa_glmm_7500", args.reps_glmm)
    doc = json.loads(OUT.read_text()) if OUT.exists() else {}
    out = {
        # the --mass-matrix and --standardize entries are kept (each records its own date)
        **{k: v for k, v in doc.items() if k in ("mass_matrix", "standardize", "parametrisation")},
        "benchmark": "bayes_samplers",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "settings": {"draws": DRAWS, "tune": TUNE, "chains": CHAINS, "seed": 1, "timing": "wall clock of one "
                     "fit_bayes call, build + compile + sampling, loo=False; min over reps"},
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "versions": {p: version(p) for p in ["pymc", "bambi", "nutpie", "arviz", "pytensor"]},
        "cases": cases,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=2))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
