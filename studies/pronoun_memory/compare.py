"""People against the model, like for like: every comparison of the study lives here.

(One module on purpose. The women-vs-men comparison uses gbstats' group comparison:
gbstats.alignment.group_comparison, as name_gender does.)

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

What the model's numbers may be read as (declared here, once):

* memory needs the probe: each character alone, without the math text
  (contexts.PROBE). Where the model's order-balanced probability on the correct
  option there is not above chance (the lower end of its 95% interval over
  characters at or below 1/3: MEASURING_RULE), its answer does not depend on the
  character, and no verdict about its memory (or, for production, about its
  keeping a pronoun) is drawn: "not measuring memory" (`memory_probe`);
* FLOOR: a contrast on the log-odds scale whose model sides all sit below
  P = FLOOR (e.g. P(they) 0.003 with the unrelated PSA vs 0.005 with the gendered
  one) is "at floor: no comparison", whatever its interval says (`floor_sides`).

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
# the floor rule: below this probability on every side of a contrast, a log-odds (or
# ratio) contrast measures the tail of the model's distribution, not a preference
FLOOR = 0.01
CHANCE = 1 / 3
MEASURING_RULE = ("the lower end of the 95% interval (characters resampled) of the mean "
                  "order-balanced probability on the correct option, each character alone "
                  "without the math text, above chance (1/3)")
NOT_MEASURING = "not measuring memory"
AT_FLOOR = "at floor: no comparison"
# a Holm p whose verdict turns on p-values at the bootstrap's floor: more replicates decide it
UNRESOLVED = "unresolved: too few bootstrap replicates"
# people vs the model and women vs men: the family of verdicts Holm runs over, and the
# equivalence bound of the women-vs-men comparison (as name_gender's, corrected-r scale)
EQUIVALENCE_BOUND = 0.10
GENDER_FAMILY = "primary: women vs men, corrected r"
# the women-vs-men test (z with a bootstrap SE) and its TOST have been calibrated by
# simulation on graded ratings and on name_gender's binary shapes, not on 0/1 accuracy with
# 144 items of which each participant answers 12: every verdict drawn from them says so
NOT_CALIBRATED = "not calibrated for this design"


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
    contrasts = pd.DataFrame(contrast_rows)
    if len(contrasts):
        sides = [floor_sides(model, r.experiment, r.task, r.contrast, r.condition)
                 for r in contrasts.itertuples()]
        contrasts["model_sides"] = [", ".join(f"{v:.4f}" for v in side) for side in sides]
        contrasts["at_floor"] = [bool(max(side) < FLOOR) for side in sides]
    cells = pd.DataFrame(cell_rows)
    for c in ("PSA", "Biographies"):
        if c not in cells:
            cells[c] = np.nan
    cells["cell"] = np.where(cells["PSA"].isna(), "all",
                             "PSA " + cells["PSA"].map(_level("PSA")).fillna("") + ", "
                             + cells["Biographies"].map(_level("Biographies")).fillna(""))
    return cells, contrasts


def floor_sides(model: pd.DataFrame, experiment: str, task: str, contrast: str,
                condition: str) -> list[float]:
    """The model's accuracies on the sides of a log-odds contrast (the floor rule): the they
    gap's he/she side (the mean of the he and she cells) and its they side, within the
    condition; "gap closed by F": P(they) with F = 0 and with F = 1, the quantities whose
    logits the contrast sets against each other."""
    part = model[(model["experiment"] == experiment) & (model["task"] == task)]
    if condition != "all":
        factor, value = condition.split("=")
        part = part[part[factor] == float(value)]

    def mean(rows, pronouns) -> float:
        # the pooled cells' accuracy: each pronoun's mean over its characters, then averaged
        return float(np.mean([rows.loc[rows["Pronoun"] == p, "accuracy"].mean()
                              for p in pronouns]))

    if contrast == "they gap":
        return [mean(part, ("he/him", "she/her")), mean(part, ("they/them",))]
    factor = contrast.rsplit(" ", 1)[-1]
    return [mean(part[part[factor] == v], ("they/them",)) for v in (0, 1)]


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

def response_bias(model: pd.DataFrame, name: str = "the model") -> list[str]:
    """Where the model's argmax is one option for (nearly) every character, whatever the
    character's pronoun: a response bias, not memory or fidelity."""
    lines = []
    for (experiment, task), part in model.groupby(["experiment", "task"], sort=False):
        shares = part["choice"].value_counts(normalize=True)
        if shares.iloc[0] >= 0.9:
            lines.append(f"Exp {experiment.upper()}, {task}: {name}'s most probable answer is "
                         f"{shares.index[0]} for {shares.iloc[0]:.0%} of the {len(part)} "
                         "characters, whatever their pronoun: a response bias, so its accuracy "
                         f"on {shares.index[0]} characters is not evidence of memory.")
    return lines


def _bootstrap_mean(values: np.ndarray, rng, n_boot: int = 2000) -> tuple[float, float]:
    draws = rng.choice(values, size=(n_boot, len(values))).mean(axis=1)
    return float(np.quantile(draws, 0.025)), float(np.quantile(draws, 0.975))


def memory_probe(scored: pd.DataFrame, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Each character alone, no math text (the probe rows of `scored`), per task: the
    order-balanced probability on the correct option per pronoun and over all characters
    (a 95% percentile interval, characters resampled), beside chance, the same with the
    options in the order people saw (memory) or the worked example people saw
    (production), and whether the task measures memory at all (MEASURING_RULE, decided
    on the row over all characters)."""
    probe = scored[scored["probe"]].reset_index(drop=True)
    rng = np.random.default_rng(seed)
    rows = []
    for task in TASKS:
        seen = "listed_accuracy" if task == "memory" else "shown_accuracy"
        overall = None
        for pronoun in ("all", *PRONOUNS):
            part = probe if pronoun == "all" else probe[probe["Pronoun"] == pronoun]
            values = part[f"{task}_accuracy"].to_numpy(dtype=float)
            low, high = _bootstrap_mean(values, rng, n_boot)
            if pronoun == "all":
                overall = low > CHANCE
            rows.append({"task": task, "pronoun": pronoun, "accuracy": float(values.mean()),
                         "ci_low": low, "ci_high": high, "chance": CHANCE,
                         "as_people_saw": float(part[seen].mean()),
                         "n_characters": len(part), "measuring_memory": overall})
    return pd.DataFrame(rows)


def measuring(probe: pd.DataFrame | None) -> dict[str, bool]:
    """{task: whether the model's answers there depend on the character} (`memory_probe`);
    without a probe every task counts as not shown to measure memory."""
    if probe is None or probe.empty:
        return {t: False for t in TASKS}
    overall = probe[probe["pronoun"] == "all"].set_index("task")["measuring_memory"]
    return {t: bool(overall.get(t, False)) for t in TASKS}


def position_bias_table(choices: pd.DataFrame, scored: pd.DataFrame) -> pd.DataFrame:
    """The memory question's position bias (models.option_orders.position_bias) per
    condition: each experiment's faithful lists and the probe (each character alone),
    P(chosen) per position averaged over characters and orders, beside chance."""
    from models.option_orders import position_bias

    where = scored.set_index("prompt_id")
    parts = []
    conditions = [(f"Exp {e.upper()}, as people read it", where.index[
        where["faithful"] & (where["experiment"] == e)]) for e in ("1a", "1b", "2")]
    conditions.append(("Each character alone, no math text", where.index[where["probe"]]))
    for label, ids in conditions:
        part = choices[choices["prompt_id"].isin(ids)]
        if part.empty:
            continue
        parts.append(position_bias(part).assign(condition=label))
    out = pd.concat(parts, ignore_index=True)
    return out[["condition", "position", "p_chosen", "chance", "argmax_share", "n_prompts",
                "n_orders"]]


def calibration_table(scored: pd.DataFrame) -> pd.DataFrame:
    """Memory accuracy three ways, per condition and pronoun: the options in the order
    people saw them only, averaged over every order (the primary), and averaged over every
    order after contextual calibration (Zhao et al. 2021: each order's choice divided by
    the content-free choice of the same frame, renormalised): a sensitivity."""
    rows = []
    conditions = [(f"Exp {e.upper()}, as people read it",
                   scored["faithful"] & (scored["experiment"] == e)) for e in ("1a", "1b", "2")]
    conditions.append(("Each character alone, no math text", scored["probe"]))
    for label, mask in conditions:
        part = scored[mask]
        if part.empty:
            continue
        for pronoun in ("all", *PRONOUNS):
            cell = part if pronoun == "all" else part[part["Pronoun"] == pronoun]
            rows.append({"condition": label, "pronoun": pronoun,
                         "listed_order": float(cell["listed_accuracy"].mean()),
                         "order_balanced": float(cell["memory_accuracy"].mean()),
                         "calibrated": float(cell["calibrated_accuracy"].mean()),
                         "n_characters": len(cell)})
    return pd.DataFrame(rows)


def with_verdicts(cells: pd.DataFrame, contrasts: pd.DataFrame, measures: dict[str, bool],
                  alpha: float = 0.05, p_floor: float | None = None
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both tables with p_holm, family_size and verdict on the rows the report draws
    verdicts from (each experiment and task's they cell over all conditions, and every
    contrast; one family, Holm by gbstats.alignment.group_comparison.holm_within_families):
    "not measuring memory" where the task's probe is at chance, "at floor: no comparison"
    for a contrast at the floor (neither enters the family), else "differs" (Holm p <
    alpha) or "no difference shown". Other cells get no verdict.

    `p_floor`: the bootstrap's resolution, 2 / (B + 1) (`percentile_p_value`). A p at it
    says only "at most this", so Holm runs twice, with every such p at the floor and at 0
    (column p_holm_lower: the lower end of what these replicates allow; where it is below
    p_holm, p_holm is a bound, printed "≤"); where the two fall on opposite sides of
    alpha the replicates cannot decide, and the verdict says UNRESOLVED rather than letting
    the floor decide (`replicates_to_resolve` gives how many would)."""
    from gbstats.alignment.group_comparison import holm_within_families

    they = ((cells["pronoun"] == "they/them") & (cells["cell"] == "all")).to_numpy()
    floor = (contrasts["at_floor"].to_numpy(dtype=bool) if "at_floor" in contrasts
             else np.zeros(len(contrasts), dtype=bool))
    rows = pd.concat([
        pd.DataFrame({"table": "cells", "row": np.flatnonzero(they),
                      "task": cells["task"].to_numpy()[they],
                      "p_value": cells["p_value"].to_numpy()[they], "at_floor": False}),
        pd.DataFrame({"table": "contrasts", "row": np.arange(len(contrasts)),
                      "task": contrasts["task"].to_numpy(),
                      "p_value": contrasts["p_value"].to_numpy(), "at_floor": floor})],
        ignore_index=True)
    measured = rows["task"].map(measures).fillna(False).astype(bool)
    rows["family"] = "people vs model"
    rows["p_tested"] = rows["p_value"].where(measured & ~rows["at_floor"].astype(bool))
    rows = holm_within_families(rows, column="p_tested")
    at_resolution = (at_bootstrap_floor(rows["p_tested"], p_floor) if p_floor is not None
                     else pd.Series(False, index=rows.index))
    rows["p_at_floor"] = at_resolution
    rows["p_holm_lower"] = holm_within_families(
        rows.assign(p_tested=rows["p_tested"].mask(at_resolution, 0.0)),
        column="p_tested")["p_holm"]
    verdict = np.where(rows["p_holm"] < alpha, "differs", "no difference shown")
    verdict = np.where((rows["p_holm"] >= alpha) & (rows["p_holm_lower"] < alpha),
                       UNRESOLVED, verdict)
    verdict = np.where(rows["at_floor"].astype(bool), AT_FLOOR, verdict)
    rows["verdict"] = np.where(measured, verdict, NOT_MEASURING)
    out = []
    for name, table in (("cells", cells), ("contrasts", contrasts)):
        mine = rows[rows["table"] == name].set_index("row")
        table = table.reset_index(drop=True).copy()
        table["p_holm"] = mine["p_holm"].reindex(table.index).to_numpy()
        table["family_size"] = mine["family_size"].reindex(table.index).to_numpy()
        table["p_holm_lower"] = mine["p_holm_lower"].reindex(table.index).to_numpy()
        table["p_at_floor"] = mine["p_at_floor"].astype(bool).reindex(
            table.index, fill_value=False).to_numpy(dtype=bool)
        table["verdict"] = mine["verdict"].reindex(table.index).fillna("").to_numpy()
        out.append(table)
    return out[0], out[1]


def at_bootstrap_floor(p, p_floor: float):
    """Whether a bootstrap p sits at its floor: p = 2 / (n + 1) over the n defined
    replicates (`percentile_p_value`), n at most B, so a little above 2 / (B + 1) where a
    few replicates are undefined; the next value a p can take is 4 / (n + 1), so below 1.5
    times the floor is the floor."""
    return np.asarray(p, dtype=float) < 1.5 * p_floor if np.ndim(p) else float(p) < 1.5 * p_floor


# the most replicates the comparison draws on its own (each 1,000 cost seconds)
MAX_REPLICATES = 20_000


def replicates_to_resolve(cells: pd.DataFrame, contrasts: pd.DataFrame,
                          alpha: float = 0.05) -> int:
    """How many bootstrap replicates the people-vs-model family needs, 0 when those drawn
    do: where a tested p sits at the floor 2 / (B + 1) (`with_verdicts`' p_at_floor), the
    fewest B whose floor times the family's size is at most alpha / 10, so a p at that floor
    reads "Holm p <= .005" (well clear of alpha, not a bound that grazes it, as .048 does
    with 24 verdicts at 1,000) and cannot decide a verdict; at most MAX_REPLICATES."""
    rows = pd.concat([cells, contrasts], ignore_index=True)
    tested = rows["p_holm"].notna() & rows["p_at_floor"].astype(bool)
    if not tested.any():
        return 0
    family = int(rows["family_size"].max())
    floor = float(rows.loc[tested, "p_value"].min())
    if family * floor <= alpha / 10 + 1e-12:
        return 0
    return min(MAX_REPLICATES, int(np.ceil(2 * family / (alpha / 10))) - 1)


def _p(p: float, floor: float | None) -> str:
    """A p-value in APA style: '.040', '< .001', and '≤ .010' at a bootstrap floor."""
    if floor is not None and p <= floor + 1e-12:
        # a bound is rounded up, so that "≤" stays true
        return f"≤ {np.ceil(floor * 1000 - 1e-9) / 1000:.3f}".replace("0.", ".")
    if p < 0.001:
        return "< .001"
    return f"{p:.3f}".replace("0.", ".")


def _holm_p(r, p_floor: float | None) -> str:
    """A row's Holm p in words: where its bootstrap p sits at the floor 2 / (B + 1), or its
    Holm p rests on one that does (`with_verdicts`' p_holm_lower below p_holm), the Holm p
    is a bound (at most this), shown as "≤"."""
    lower = getattr(r, "p_holm_lower", np.nan)
    if p_floor is not None and at_bootstrap_floor(r.p_value, p_floor):
        return _p(r.p_holm, min(1.0, max(r.p_holm, r.family_size * max(r.p_value, p_floor))))
    if np.isfinite(lower) and lower < r.p_holm - 1e-12:
        return _p(r.p_holm, r.p_holm)
    return _p(r.p_holm, None)


def verdicts(cells: pd.DataFrame, contrasts: pd.DataFrame,
             model: pd.DataFrame | None = None, *, name: str = "the model",
             probe: pd.DataFrame | None = None, p_floor: float | None = None) -> list[str]:
    """Sentences for the report about the named model: any response bias; per task, "not
    measuring memory" (with the probe's numbers) where the probe is at chance; else where
    it behaves unlike people (Holm p < .05 over the family of verdicts) and the contrasts
    at floor. `cells` and `contrasts` carry `with_verdicts`' columns."""
    lines = response_bias(model, name) if model is not None else []
    if probe is not None and len(probe):
        for task, part in probe.groupby("task", sort=False):
            r = part[part["pronoun"] == "all"].iloc[0]
            if r.measuring_memory:
                continue
            each = ", ".join(f"{x.pronoun.split('/')[0]} {x.accuracy:.2f}"
                             for x in part[part["pronoun"] != "all"].itertuples())
            lines.append(
                f"{task.capitalize()}: {name} is **not measuring memory**. With each character "
                f"alone and no math text, its probability on the correct option, averaged over "
                f"every order of the options, is {r.accuracy:.2f} [{r.ci_low:.2f}, "
                f"{r.ci_high:.2f}] ({each}; chance {CHANCE:.2f}): its answer does not depend "
                f"on the character, so no verdict on its {task} is drawn from it.")
    overall = cells[(cells["cell"] == "all") & (cells["pronoun"] == "they/them")]
    for r in overall.itertuples():
        if r.verdict == UNRESOLVED:
            lines.append(f"Exp {r.experiment.upper()}, {r.task}, they: {UNRESOLVED} (Holm p "
                         f"{_holm_p(r, p_floor)}, at least {r.p_holm_lower:.3f} with these "
                         "replicates).".replace("0.", "."))
        if r.verdict != "differs":
            continue
        word = "better" if r.difference > 0 else "worse"
        lines.append(
            f"Exp {r.experiment.upper()}, {r.task}: {name} keeps *they* {word} than people "
            f"({r.model:.2f} vs {r.people:.2f}, difference {r.difference:+.2f} "
            f"[{r.difference_low:+.2f}, {r.difference_high:+.2f}]; Holm p "
            f"{_holm_p(r, p_floor)}).")
    from studies.pronoun_memory.presentation import CONTRAST_WORDS

    for r in contrasts.itertuples():
        # the contrast in the table's words ("PSA=1" is a column and a code, not a name)
        words = CONTRAST_WORDS.get((r.contrast, r.condition))
        words = (words[0].lower() + words[1:] if words else r.contrast + (
            f" ({r.condition})" if r.condition != "all" else ""))
        label = f"Exp {r.experiment.upper()}, {r.task}, {words}"
        if r.verdict == AT_FLOOR:
            lines.append(f"{label}: {AT_FLOOR} ({name}'s probabilities on its sides are "
                         f"{r.model_sides}, all below {FLOOR}).")
        elif r.verdict == UNRESOLVED:
            lines.append(f"{label}: {UNRESOLVED} (Holm p {_holm_p(r, p_floor)}, at least "
                         f"{r.p_holm_lower:.3f} with these replicates).".replace("0.", "."))
        elif r.verdict == "differs":
            lines.append(f"{label}: {name} differs from people (people {r.people:+.2f}, "
                         f"{name} {r.model:+.2f}; difference {r.difference:+.2f} "
                         f"[{r.difference_low:+.2f}, {r.difference_high:+.2f}], Holm p "
                         f"{_holm_p(r, p_floor)}).")
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
                     seed: int = 0, use_cache: bool = False, cache_dir=None,
                     measures: dict[str, bool] | None = None,
                     name: str = "the model") -> dict:
    """Exp 2, per task: the model's item accuracy (list x character) against women's and
    men's, to name_gender's standard (gbstats.alignment.group_comparison):

    * the ceiling: how closely women's and men's item profiles agree, and the largest
      difference in alignment that leaves any model (`profile_agreement`);
    * the primary test, declared here: the difference of the two groups' corrected
      correlations with the model (`corrected_comparison_rows`), one family over the two
      tasks (GENDER_FAMILY), Holm within it;
    * TOST at +/-EQUIVALENCE_BOUND where the claim would be "alike", and the verdict in
      words on the adjusted p-values (`finish_comparisons`). A task whose probe is at
      chance (`measures`) gets "not measuring memory" instead of a verdict.

    Participants without a recorded gender are left out (counted). The answer says whether
    the design is within what the machinery's calibration covers (`below_calibrated_design`).
    Seeded: with `use_cache` an unchanged computation is reused."""
    from gbstats.alignment.group_comparison import (corrected_comparison_rows,
                                                    finish_comparisons, profile_agreement,
                                                    short_verdict)
    from gbstats.mixed.fit_cache import cached_call

    measures = measures or {t: True for t in TASKS}
    trials = people[people["experiment"] == "2"].copy()
    trials["item"] = trials["List"] + "|" + trials["Name"]
    no_gender = ~trials["gender"].isin(GENDER_GROUPS)
    trials = log.drop(trials, no_gender, "Exp 2 responses of participants without a recorded "
                      "gender (left out of the women-vs-men comparison)", "responses",
                      "which participants")
    items = model[model["experiment"] == "2"].assign(item=lambda d: d["List"] + "|" + d["Name"])
    rel_parts, cmp_parts, profiles = [], [], []
    for k, task in enumerate(TASKS):
        t = trials[trials["task"] == task]
        x = items[items["task"] == task][["item", "accuracy"]].rename(columns={"accuracy": "score"})
        t = t[["participant", "item", "gender", "accuracy"]].reset_index(drop=True)
        (rel, raw, rows), _ = cached_call(
            corrected_comparison_rows, x.reset_index(drop=True), t, group="gender",
            score="score", rating="accuracy", item_keys=("item",), participant="participant",
            equivalence_bound=EQUIVALENCE_BOUND, family=GENDER_FAMILY, primary=True,
            n_boot=n_boot, seed=seed + k, use_cache=use_cache, cache_dir=cache_dir)
        agree, _ = cached_call(profile_agreement, t, group="gender", rating="accuracy",
                               item_keys=("item",), participant="participant",
                               n_boot=min(n_boot, 500), seed=seed + k, use_cache=use_cache,
                               cache_dir=cache_dir)
        rel = rel.merge(raw[["group", "r", "ci_low", "ci_high"]].rename(columns={
            "r": "r_raw", "ci_low": "raw_low", "ci_high": "raw_high"}), on="group")
        rel_parts.append(rel.assign(task=task))
        cmp_parts.append(rows.assign(task=task))
        profiles.append(agree.assign(task=task))
    table = pd.concat(cmp_parts, ignore_index=True)
    # a task that is not measuring memory draws no verdict, so it is no test of the family
    unmeasured = ~table["task"].map(measures).astype(bool) if len(table) else None
    raw_p = table["p_value"].copy() if len(table) else None
    if len(table):
        table.loc[unmeasured, ["p_value", "equivalence_bound"]] = np.nan
    comparison = finish_comparisons(table) if len(table) else table
    if len(table):
        comparison["p_value"] = raw_p.to_numpy()
        comparison.insert(0, "task", table["task"].to_numpy())
        corrected = pd.concat(rel_parts).set_index(["task", "group"])["r_corrected"]
        comparison["r_corrected_a"] = [corrected.get((t, g), np.nan) for t, g in
                                       zip(comparison["task"], comparison["group_a"])]
        comparison["r_corrected_b"] = [corrected.get((t, g), np.nan) for t, g in
                                       zip(comparison["task"], comparison["group_b"])]
        comparison["verdict"] = comparison["verdict"].astype(str) + f"; {NOT_CALIBRATED}"
        comparison.loc[unmeasured.to_numpy(), "verdict"] = NOT_MEASURING
    reliability = pd.concat(rel_parts, ignore_index=True)
    profile = pd.concat(profiles, ignore_index=True)
    lines = [f"The primary test, declared as such in the study's code and in results.json: "
             f"the difference between women's and men's "
             f"reliability-corrected correlations with {name}'s item accuracy, one family over "
             f"the two tasks, Holm; equivalence within ±{EQUIVALENCE_BOUND:.2f} on the "
             "corrected-correlation scale by two one-sided tests; the ceiling from the groups' "
             "own agreement."]
    for task in TASKS:
        rel = reliability[reliability["task"] == task].set_index("group")
        c = comparison[comparison["task"] == task]
        if rel.empty or c.empty:
            continue
        c, pa = c.iloc[0], profile[profile["task"] == task].iloc[0]
        calibrated = not rel["below_calibrated_design"].any()
        said = (NOT_MEASURING + ": no verdict" if c.verdict == NOT_MEASURING
                else short_verdict(c.verdict).lower() + f", {NOT_CALIBRATED}")
        if pa.r_profiles_corrected <= 1:
            ceiling = (f"Ceiling: women's and men's item profiles agree at "
                       f"{pa.r_profiles_corrected:.3f} (corrected), which leaves room for a "
                       f"difference of at most {pa.max_alignment_difference:.2f} "
                       f"({pa.max_alignment_difference_upper:.2f} at the interval's lower end "
                       f"{pa.ci_low:.2f}). ")
        else:
            # a corrected r above 1 is noise (reliabilities too low to divide by): its
            # ceiling of 0 says nothing, so the ceiling is read at the interval's lower end
            ceiling = (f"Ceiling: the corrected agreement of women's and men's item profiles "
                       f"comes out above 1 (noise: reliabilities {pa.reliability_a:.2f} and "
                       f"{pa.reliability_b:.2f}), so it is read at its interval's lower end, "
                       f"{pa.ci_low:.2f}: room for a difference of up to "
                       f"{pa.max_alignment_difference_upper:.2f}. ")
        lines.append(
            f"- **{task}**: corrected r women {rel.loc['female', 'r_corrected']:.2f}, men "
            f"{rel.loc['male', 'r_corrected']:.2f}; difference {c.estimate:+.2f} "
            f"[{c.ci_low:+.2f}, {c.ci_high:+.2f}], "
            + (f"Holm p {_p(c.p_holm, None)} (family of {int(c.family_size)}); equivalence "
               f"TOST Holm p {_p(c.p_equivalence_holm, None)} (smallest bound these data "
               f"could establish {c.smallest_equivalence_bound:.2f}). "
               if np.isfinite(c.p_holm) else f"p {_p(c.p_value, None)} (not a test of the "
               "family: no verdict is drawn). ")
            + ceiling + f"Conclusion: {said}. "
            + ("The reliability intervals' check on the design (items, raters per item): "
               + ("within the simulated range" if calibrated else "below the simulated range")
               + "; the women-vs-men test and its equivalence test have not been calibrated "
               "on 0/1 answers in a design of this shape (144 items, 12 per participant)."))
    lines.append("Caveats: accuracy is 0/1 per response (the calibration simulations use "
                 "graded ratings), and most of the item variance is the pronoun of the "
                 "character, which every group and the model share.")
    cols = ["task", "group", "r_raw", "raw_low", "raw_high", "reliability", "noise_ceiling",
            "r_corrected", "ci_low", "ci_high", "n_items", "n_participants",
            "below_calibrated_design"]
    reliability = reliability[cols]
    reliability["below_calibrated_design"] = reliability["below_calibrated_design"].map(
        {True: "yes", False: "no"})
    return {"gender_alignment": reliability, "gender_comparison": comparison,
            "gender_profile_agreement": profile, "gender_answer": "\n".join(lines)}
