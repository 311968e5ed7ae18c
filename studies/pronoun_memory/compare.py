"""People against the model, like for like: every comparison of the study lives here.

(One module on purpose: gbstats' own group comparison and design check are being
built; when they land, these functions are what switches over.)

Quantities, on one definition for both sides:

* accuracy in a cell (experiment x task x pronoun, and PSA x Biographies in
  Exp 2): people's share of correct answers; the model's mean probability on
  the correct option over the characters of the cell (its argmax share beside
  it). For production, people's share is taken over the completions that used
  he, she or they (a "none" completion has no pronoun to compare), and the
  model's probability is normalised over the same three words (the mass they
  cover is reported);
* log-odds: the logit of that population-averaged accuracy (marginal, not the
  glmer's subject-specific scale);
* the they gap: mean(logit he, logit she) - logit they (positive: they is
  worse); the authors' "they vs he+she" coefficient is this gap / 0.99 on the
  conditional scale of their glmer;
* Exp 2: the gap in each PSA (and Biographies) condition and how much the
  gendered-language PSA (the they biographies) closes it: gap(unrelated) -
  gap(gendered), positive = closes.

Intervals: a two-way bootstrap over participants and characters (names)
together (the "pigeonhole" bootstrap, studies.cognitive_bias.uncertainty, whose
coverage on crossed designs is measured in that study's tests): people's
observations are weighted by their participant's and their name's
multiplicities, the model's characters by the same name draw, so a model -
people difference is paired by character. Percentile intervals; p of "model
equals people" by inverting them.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import logit

from studies.cognitive_bias.uncertainty import (crossed_level_counts, percentile_interval,
                                                percentile_p_value)

PRONOUNS = ("he/him", "she/her", "they/them")
TASKS = ("memory", "production")
N_BOOT = 1000


def people_long(tables: dict, log=None) -> pd.DataFrame:
    """One row per participant x character x task: accuracy (0/1), with the Exp 2 cells.

    Production rows without a pronoun ("none") are left out of the comparison (selected
    by design, counted in `log`)."""
    parts = []
    for experiment in ("1a", "1b", "2"):
        t = tables[f"exp{experiment}"]
        base = pd.DataFrame({"experiment": experiment, "participant": t["participant"],
                             "List": t["List"], "Name": t["Name"], "Pronoun": t["Pronoun"],
                             "PSA": t.get("PSA", np.nan),
                             "Biographies": t.get("Biographies", np.nan),
                             "gender": t["SubjGender"]})
        parts.append(base.assign(task="memory", accuracy=t["M_Acc"].to_numpy(), produced=""))
        production = base.assign(task="production", accuracy=t["P_Acc"].to_numpy(),
                                 produced=t["P_Pronoun"].to_numpy())
        none = production["produced"] == "none"
        if log is not None:
            production = log.select(production, none, f"Exp {experiment.upper()} completions "
                                    "without a pronoun (left out of people-vs-model production "
                                    "accuracy; the authors' models count them as wrong)",
                                    "completions", "model vs people")
        else:
            production = production[~none]
        parts.append(production)
    return pd.concat(parts, ignore_index=True)


def model_long(scored: pd.DataFrame, tables: dict) -> pd.DataFrame:
    """The faithful condition's scores, one row per list x character x task, with Exp 2's
    PSA and Biographies of the list."""
    faithful = scored[scored["faithful"]]
    cells = tables["exp2"].drop_duplicates("List").set_index("List")[["PSA", "Biographies"]]
    rows = []
    for task in TASKS:
        rows.append(pd.DataFrame({
            "experiment": faithful["experiment"].to_numpy(), "List": faithful["List"].to_numpy(),
            "Name": faithful["Name"].to_numpy(), "Pronoun": faithful["Pronoun"].to_numpy(),
            "task": task, "accuracy": faithful[f"{task}_accuracy"].to_numpy(),
            "correct": faithful[f"{task}_correct"].to_numpy(),
            "choice": faithful[f"{task}_choice"].to_numpy(),
            "pronoun_mass": faithful["pronoun_mass"].to_numpy() if task == "production"
            else np.nan}))
    out = pd.concat(rows, ignore_index=True)
    exp2 = out["experiment"] == "2"
    out["PSA"] = np.where(exp2, out["List"].map(cells["PSA"]), np.nan)
    out["Biographies"] = np.where(exp2, out["List"].map(cells["Biographies"]), np.nan)
    return out


# --------------------------------------------------------------------------
# cells and contrasts as functions of resampling weights

def _cells(experiment: str) -> list[dict]:
    """The cells of one experiment: task x pronoun (x PSA x Biographies in Exp 2)."""
    base = [{"task": t, "Pronoun": p} for t in TASKS for p in PRONOUNS]
    if experiment != "2":
        return base
    return base + [{**c, "PSA": a, "Biographies": b} for c in base for a in (0, 1) for b in (0, 1)]


def _cell_mask(frame: pd.DataFrame, cell: dict) -> np.ndarray:
    mask = np.ones(len(frame), dtype=bool)
    for key, value in cell.items():
        mask &= (frame[key] == value).to_numpy()
    return mask


def _weighted_mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted means of `values` under each row of `weights` (replicates x observations);
    NaN where a replicate puts no weight on the observations."""
    total = weights.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, weights @ values / np.where(total > 0, total, 1), np.nan)


def _gap(acc: dict, task: str, where: dict | None = None) -> np.ndarray:
    where = where or {}
    lo = {p: logit(np.clip(acc[(task, p, *sorted(where.items()))], 1e-6, 1 - 1e-6))
          for p in PRONOUNS}
    return (lo["he/him"] + lo["she/her"]) / 2 - lo["they/them"]


def comparison_statistic(people: pd.DataFrame, model: pd.DataFrame, experiment: str):
    """(labels, statistic(participant counts, name counts), n levels) for one experiment.

    The counts are (replicates x levels) multiplicities of the participants and the
    names; the statistic returns (replicates x values): for each side every cell's
    accuracy, each task's they gap and (Exp 2) the gap per PSA / Biographies condition
    and the change the gendered PSA / the they biographies bring; then model - people
    of each."""
    people = people[people["experiment"] == experiment].reset_index(drop=True)
    model = model[model["experiment"] == experiment].reset_index(drop=True)
    participants = pd.Index(sorted(people["participant"].unique()))
    names = pd.Index(sorted(set(people["Name"]) | set(model["Name"])))
    p_part = participants.get_indexer(people["participant"])
    p_name = names.get_indexer(people["Name"])
    m_name = names.get_indexer(model["Name"])
    cells = _cells(experiment)
    p_masks = [_cell_mask(people, c) for c in cells]
    m_masks = [_cell_mask(model, c) for c in cells]
    p_acc = people["accuracy"].to_numpy(dtype=float)
    m_acc = model["accuracy"].to_numpy(dtype=float)
    keys = [(c["task"], c["Pronoun"], *sorted((k, v) for k, v in c.items()
                                               if k not in ("task", "Pronoun"))) for c in cells]
    contrast_labels = [(t, "they gap", "all") for t in TASKS]
    if experiment == "2":
        for factor in ("PSA", "Biographies"):
            contrast_labels += [(t, "they gap", f"{factor}={v}") for t in TASKS for v in (0, 1)]
            contrast_labels += [(t, f"gap closed by {factor}", "all") for t in TASKS]
    pooled = {(t, p, *sorted(w.items())): _pooled_mask(p_masks, m_masks, keys, t, p, w)
              for t in TASKS for p in PRONOUNS
              for w in [{}] + [{f: v} for f in ("PSA", "Biographies") for v in (0, 1)]}

    def side(acc_values, masks, weights, which: int) -> list[np.ndarray]:
        acc = {k: _weighted_mean(acc_values[m], weights[:, m]) for k, m in zip(keys, masks)}
        pool = {k: _weighted_mean(acc_values[m[which]], weights[:, m[which]])
                for k, m in pooled.items()}
        values = [acc[k] for k in keys]
        contrasts = [_gap(pool, t) for t in TASKS]
        if experiment == "2":
            for factor in ("PSA", "Biographies"):
                by = {v: {t: _gap(pool, t, {factor: v}) for t in TASKS} for v in (0, 1)}
                contrasts += [by[v][t] for t in TASKS for v in (0, 1)]
                contrasts += [by[0][t] - by[1][t] for t in TASKS]
        return values + contrasts

    def statistic(part_counts: np.ndarray, name_counts: np.ndarray) -> np.ndarray:
        w_people = (part_counts[:, p_part] * name_counts[:, p_name]).astype(float)
        w_model = name_counts[:, m_name].astype(float)
        a = np.column_stack(side(p_acc, p_masks, w_people, 0))
        b = np.column_stack(side(m_acc, m_masks, w_model, 1))
        return np.hstack([a, b, b - a])

    labels = [("cell", k) for k in keys] + [("contrast", c) for c in contrast_labels]
    return labels, statistic, (len(participants), len(names))


def _pooled_mask(p_masks, m_masks, keys, task, pronoun, where) -> tuple[np.ndarray, np.ndarray]:
    """(people's, model's) rows of (task, pronoun[, factor=value]): the Exp 2 cells that
    match pooled; with no `where`, the cell that pools every condition."""
    p_sel = np.zeros(len(p_masks[0]), dtype=bool)
    m_sel = np.zeros(len(m_masks[0]), dtype=bool)
    for k, pm, mm in zip(keys, p_masks, m_masks):
        extra = dict(k[2:])
        if k[0] == task and k[1] == pronoun and (
                (not where and not extra) or
                (where and extra and all(extra.get(f) == v for f, v in where.items()))):
            p_sel |= pm
            m_sel |= mm
    return p_sel, m_sel


def replicate_counts(n_levels, n_boot: int, seed: int) -> list[np.ndarray]:
    """(replicates x levels) multiplicities per factor, drawn as
    studies.cognitive_bias.uncertainty.bootstrap_draws draws them (the same generator
    calls in the same order, so the same replicates)."""
    rng = np.random.default_rng(seed)
    draws = [crossed_level_counts(n_levels, rng) for _ in range(n_boot)]
    return [np.stack([d[f] for d in draws]) for f in range(len(n_levels))]


def compare(people: pd.DataFrame, model: pd.DataFrame, *, n_boot: int = N_BOOT,
            seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(model_vs_people, contrasts): every cell's accuracy and every contrast, people
    and model side by side with two-way bootstrap intervals, and the difference."""
    cell_rows, contrast_rows = [], []
    for k, experiment in enumerate(("1a", "1b", "2")):
        if not (model["experiment"] == experiment).any():
            continue
        labels, statistic, n_levels = comparison_statistic(people, model, experiment)
        point = statistic(*[np.ones((1, n), dtype=int) for n in n_levels])[0]
        draws = statistic(*replicate_counts(n_levels, n_boot, seed + k))
        low, high = percentile_interval(draws)
        p = percentile_p_value(draws)
        n = len(labels)
        counts = _counts(people, model, experiment)
        for i, (kind, label) in enumerate(labels):
            row = {"experiment": experiment,
                   "people": point[i], "people_low": low[i], "people_high": high[i],
                   "model": point[n + i], "model_low": low[n + i], "model_high": high[n + i],
                   "difference": point[2 * n + i], "difference_low": low[2 * n + i],
                   "difference_high": high[2 * n + i], "p_value": p[2 * n + i]}
            if kind == "cell":
                cell = {"task": label[0], "pronoun": label[1], **dict(label[2:])}
                cell_rows.append({"experiment": experiment, **cell, **row,
                                  **counts.get(label, {})})
            else:
                task, what, where = label
                contrast_rows.append({"experiment": experiment, "task": task, "contrast": what,
                                      "condition": where, **row})
    cells = pd.DataFrame(cell_rows)
    for c in ("PSA", "Biographies"):
        if c not in cells:
            cells[c] = np.nan
    cells["cell"] = np.where(cells["PSA"].isna(), "all",
                             "PSA " + cells["PSA"].map(_level("PSA")).fillna("") + ", "
                             + cells["Biographies"].map(_level("Biographies")).fillna(""))
    return cells, pd.DataFrame(contrast_rows)


def _level(factor: str):
    names = {"PSA": {0: "unrelated", 1: "gendered language"},
             "Biographies": {0: "he/she biographies", 1: "they biographies"}}[factor]
    return lambda v: names.get(int(v)) if pd.notna(v) else None


def _counts(people: pd.DataFrame, model: pd.DataFrame, experiment: str) -> dict:
    out = {}
    people = people[people["experiment"] == experiment]
    model = model[model["experiment"] == experiment]
    for c in _cells(experiment):
        key = (c["task"], c["Pronoun"], *sorted((k, v) for k, v in c.items()
                                               if k not in ("task", "Pronoun")))
        pm, mm = people[_cell_mask(people, c)], model[_cell_mask(model, c)]
        out[key] = {"n_responses": len(pm), "n_participants": pm["participant"].nunique(),
                    "n_characters": len(mm), "model_argmax": mm["correct"].mean(),
                    "pronoun_mass": mm["pronoun_mass"].mean()}
    return out


def pronoun_mass_table(model: pd.DataFrame) -> pd.DataFrame:
    """How much of the model's next-word probability he, she and they cover after the
    sentence beginnings (the faithful condition), by experiment and the character's
    pronoun: the production accuracy is normalised over these three words, so a small
    mass means the model mostly continues otherwise."""
    production = model[model["task"] == "production"]
    return (production.groupby(["experiment", "Pronoun"], sort=True)["pronoun_mass"]
            .agg(mass_mean="mean", mass_min="min", mass_max="max", n_characters="size")
            .reset_index().rename(columns={"Pronoun": "pronoun"}))


# --------------------------------------------------------------------------
# saying it plainly

def response_bias(model: pd.DataFrame) -> list[str]:
    """Where the model's argmax is one option for (nearly) every character, whatever the
    character's pronoun: a response bias, not memory or fidelity."""
    lines = []
    for (experiment, task), part in model.groupby(["experiment", "task"], sort=False):
        shares = part["choice"].value_counts(normalize=True)
        if shares.iloc[0] >= 0.9:
            lines.append(f"Exp {experiment.upper()}, {task}: the model's most probable answer is "
                         f"{shares.index[0]} for {shares.iloc[0]:.0%} of the {len(part)} "
                         "characters, whatever their pronoun: a response bias, so its accuracy "
                         f"on {shares.index[0]} characters is not evidence of memory.")
    return lines


def verdicts(cells: pd.DataFrame, contrasts: pd.DataFrame,
             model: pd.DataFrame | None = None) -> list[str]:
    """Sentences for the report: where the model behaves unlike people (a difference
    whose 95% interval excludes 0), read off the two tables, and any response bias."""
    lines = response_bias(model) if model is not None else []
    overall = cells[cells["cell"] == "all"]
    for r in overall.itertuples():
        if r.pronoun != "they/them":
            continue
        excluded = r.difference_low > 0 or r.difference_high < 0
        if excluded:
            word = "better" if r.difference > 0 else "worse"
            lines.append(
                f"Exp {r.experiment.upper()}, {r.task}: the model keeps *they* {word} than people "
                f"({r.model:.2f} vs {r.people:.2f}, difference {r.difference:+.2f} "
                f"[{r.difference_low:+.2f}, {r.difference_high:+.2f}]).")
    for r in contrasts.itertuples():
        excluded = r.difference_low > 0 or r.difference_high < 0
        people_effect = r.people_low > 0 or r.people_high < 0
        model_effect = r.model_low > 0 or r.model_high < 0
        name = f"Exp {r.experiment.upper()}, {r.task}, {r.contrast}" + (
            f" ({r.condition})" if r.condition != "all" else "")
        if r.contrast.startswith("gap closed") and people_effect and not model_effect:
            lines.append(f"{name}: people respond (log-odds {r.people:+.2f} [{r.people_low:+.2f}, "
                         f"{r.people_high:+.2f}]) and the model does not ({r.model:+.2f} "
                         f"[{r.model_low:+.2f}, {r.model_high:+.2f}]): it ignores the "
                         f"{r.contrast.split()[-1]}.")
        elif excluded:
            lines.append(f"{name}: unlike people (people {r.people:+.2f}, model {r.model:+.2f}; "
                         f"difference {r.difference:+.2f} [{r.difference_low:+.2f}, "
                         f"{r.difference_high:+.2f}]).")
    return lines


def people_cells(people: pd.DataFrame, *, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """People's accuracy per experiment x task x pronoun (the --model none table), with the
    same two-way bootstrap intervals as `compare`."""
    rows = []
    for k, experiment in enumerate(("1a", "1b", "2")):
        part = people[people["experiment"] == experiment].reset_index(drop=True)
        participants = pd.Index(sorted(part["participant"].unique()))
        names = pd.Index(sorted(part["Name"].unique()))
        p_part = participants.get_indexer(part["participant"])
        p_name = names.get_indexer(part["Name"])
        keys = [(t, p) for t in TASKS for p in PRONOUNS]
        masks = [((part["task"] == t) & (part["Pronoun"] == p)).to_numpy() for t, p in keys]
        acc = part["accuracy"].to_numpy(dtype=float)

        def statistic(part_counts, name_counts, p_part=p_part, p_name=p_name, acc=acc,
                      masks=masks):
            w = (part_counts[:, p_part] * name_counts[:, p_name]).astype(float)
            return np.column_stack([_weighted_mean(acc[m], w[:, m]) for m in masks])

        n_levels = (len(participants), len(names))
        point = statistic(*[np.ones((1, n), dtype=int) for n in n_levels])[0]
        low, high = percentile_interval(statistic(*replicate_counts(n_levels, n_boot, seed + k)))
        for i, (task, pronoun) in enumerate(keys):
            rows.append({"experiment": experiment, "task": task, "pronoun": pronoun,
                         "people": point[i], "people_low": low[i], "people_high": high[i],
                         "n_responses": int(masks[i].sum())})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# which participants the model resembles (Exp 2 records participant gender)

GENDER_GROUPS = ("female", "male")


def gender_alignment(people: pd.DataFrame, model: pd.DataFrame, log, *, n_boot: int = N_BOOT,
                     seed: int = 0, use_cache: bool = False, cache_dir=None) -> dict:
    """Exp 2, per task: the model's item accuracy (list x character) against women's and
    men's, with gbstats' reliability-corrected correlations and their comparison
    (gbstats.alignment.reliability.group_alignment). Participants without a recorded
    gender are left out (counted). The answer says whether the design is within what the
    machinery's calibration covers (`below_calibrated_design`). Seeded: with `use_cache`
    an unchanged computation is reused (gbstats.mixed.fit_cache.cached_call)."""
    from gbstats.alignment.reliability import group_alignment
    from gbstats.mixed.fit_cache import cached_call

    trials = people[people["experiment"] == "2"].copy()
    trials["item"] = trials["List"] + "|" + trials["Name"]
    no_gender = ~trials["gender"].isin(GENDER_GROUPS)
    trials = log.drop(trials, no_gender, "Exp 2 responses of participants without a recorded "
                      "gender (left out of the women-vs-men comparison)", "responses",
                      "which participants")
    items = model[model["experiment"] == "2"].assign(item=lambda d: d["List"] + "|" + d["Name"])
    rel_parts, cmp_parts, lines = [], [], []
    for k, task in enumerate(TASKS):
        t = trials[trials["task"] == task]
        x = items[items["task"] == task][["item", "accuracy"]].rename(columns={"accuracy": "score"})
        t = t[["participant", "item", "gender", "accuracy"]].reset_index(drop=True)
        (rel, raw, comparison), _ = cached_call(
            group_alignment, x.reset_index(drop=True), t, group="gender", score="score",
            rating="accuracy", item_keys=("item",), participant="participant", n_boot=n_boot,
            seed=seed + k, use_cache=use_cache, cache_dir=cache_dir)
        rel = rel.merge(raw[["group", "r", "ci_low", "ci_high"]].rename(columns={
            "r": "r_raw", "ci_low": "raw_low", "ci_high": "raw_high"}), on="group")
        rel_parts.append(rel.assign(task=task))
        cmp_parts.append(comparison.assign(task=task))
        calibrated = not rel["below_calibrated_design"].any()
        c = comparison.iloc[0] if len(comparison) else None
        if c is None:
            continue
        verdict = ("the groups do not differ (the interval of the difference includes 0)"
                   if c.ci_low <= 0 <= c.ci_high else
                   f"the model resembles {c.group_a if c.difference > 0 else c.group_b} "
                   "participants more")
        lines.append(
            f"- **{task}**: corrected r women {rel.set_index('group').loc['female', 'r_corrected']:.2f}, "
            f"men {rel.set_index('group').loc['male', 'r_corrected']:.2f}; difference "
            f"{c.difference:+.2f} [{c.ci_low:+.2f}, {c.ci_high:+.2f}]: {verdict}. "
            + ("The design (items, raters per item) is within the machinery's calibrated range."
               if calibrated else "The design is below the machinery's calibrated range "
               "(too few items or raters per item), so the interval is not calibrated."))
    lines.append("Caveats: accuracy is 0/1 per response (the calibration simulations use "
                 "graded ratings), and most of the item variance is the pronoun of the "
                 "character, which every group and the model share.")
    cols = ["task", "group", "r_raw", "raw_low", "raw_high", "reliability", "noise_ceiling",
            "r_corrected", "ci_low", "ci_high", "n_items", "n_participants",
            "below_calibrated_design"]
    table = pd.concat(rel_parts, ignore_index=True)[cols]
    table["below_calibrated_design"] = table["below_calibrated_design"].map(
        {True: "yes", False: "no"})
    return {"gender_alignment": table, "gender_comparison": pd.concat(cmp_parts, ignore_index=True),
            "gender_answer": "\n".join(lines)}
