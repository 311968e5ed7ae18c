"""The role-noun analyses as pure functions over DataFrames.

Three model predictions of P(V | C), the variant a person writes in "NAME is a
___ from STATE" (Watson, Beekhuizen & Stevenson 2023), related by Bayes' rule
posterior ∝ model_likelihood x corpus_prior within every name x state frame:

- `corpus_prior`: P(V), the variant's share of its set's corpus counts (no LM);
- `posterior`: P(V | C), the paper's main method;
- `model_likelihood`: P(C | V) normalised over the set's variants (the
  posterior under a uniform prior; the paper's "BERT likelihood").

Which one the language model gives depends on its kind:

- masked LM: the score is log P(C | V), the PLL of the context words given the
  sentence with V; model_likelihood is its normalisation and posterior =
  model_likelihood x P(V), renormalised (the frequency-weighted posterior);
- causal LM: the score is the probability of the whole sentence, i.e. P(C, V)
  up to a factor shared by the frame, so its normalisation is P_LM(V | C)
  directly: that is the posterior. Its model_likelihood is the implied
  P(C | V) ∝ P_LM(V | C) / P(V), i.e. what the LM's prediction amounts to
  once the corpus prior is divided out (exact if the LM's own prior over the
  variants is the corpus prior). Multiplying the causal P_LM(V | C) by P(V)
  again would count frequency twice.

Frame-level probabilities are averaged over states to give one distribution
per name x set (the human data do not record the state). Every group's
responses are then scored with `gbstats.alignment.groups.group_loglik`, which
reproduces the paper's published corpus-prior values exactly.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.data import role_nouns as rn
from gbstats.errors import DataValidationError
from gbstats.inference.probabilities import normalise_within, softmax_within

METHODS = ("corpus_prior", "model_likelihood", "posterior")
SCORE_KINDS = ("likelihood", "joint")
# grouping name in the outputs -> column of the trials table, and the group order
GROUPINGS = {"attitude": "attitude_group", "party": "party"}
GROUP_ORDER = {"attitude": ("progressive", "moderate", "conservative"),
               "party": ("Democrat", "Non-Partisan", "Republican")}
SPLIT_NAMES = {rn.MEN: "mens_names", rn.WOMEN: "womens_names", "all": "all"}
ITEM_COLUMNS = ["item", "name", "name_gender", "role_noun_set", "set_type", "variant",
                "variant_gender"]
GROUP_LOGLIK_COLUMNS = [
    "method", "set_type", "grouping", "group", "loglik_mens_names", "loglik_womens_names",
    "loglik_all", "n_participants", "n_obs",
    "ci_low_mens_names", "ci_high_mens_names", "ci_low_womens_names", "ci_high_womens_names",
    "ci_low_all", "ci_high_all", "n_obs_mens_names", "n_obs_womens_names"]
GLMM_FORMULA = "neutral ~ name_gender * attitude_score + (1|participant) + (1|role_noun_set)"
# The GLMM's Bayesian twin starts where its posterior needs it to (issue 41). At --draws
# (1,000) and the sampler's target acceptance 0.8 it never converged at its first attempt:
# 2 divergent transitions (on two machines), then at 0.9 a bulk ESS of 309 in 1,000 draws
# (the figure is 400), and the refit rule needed 4 attempts, 93-118 s of a 354 s run. At
# twice the draws and 0.9 it converged at its first attempt from seeds 2023 and 7 (bulk
# ESS 565 and 617, no divergence; benchmarks/results/study_times.json).
GLMM_TWIN_DRAWS_FACTOR = 2
GLMM_TWIN_TARGET_ACCEPT = 0.9
FIT_COLUMNS = ["backend", "term", "estimate", "se", "ci_low", "ci_high", "stat", "df", "p_value"]


def parse_sets(text: str) -> list[str]:
    """"firefighter,actor" -> ["firefighter", "actor"]; unknown names get "did you mean"."""
    from gbstats.errors import UnknownNameError

    known = list(rn.role_noun_sets()["role_noun_set"])
    chosen = [s.strip() for s in text.split(",") if s.strip()]
    if not chosen:
        raise DataValidationError("no role-noun set named", source="--sets",
                                  expected="comma-separated set names, e.g. firefighter,actor",
                                  found=repr(text))
    for name in chosen:
        if name not in known:
            raise UnknownNameError("role-noun set", name, known)
    return list(dict.fromkeys(chosen))


# --------------------------------------------------------------------------
# Model probabilities
# --------------------------------------------------------------------------

def frame_probabilities(scored: pd.DataFrame, prior: pd.DataFrame,
                        score_is: str = "likelihood") -> pd.DataFrame:
    """Per name x set x state frame: the three methods' P(V | C), long by method.

    `scored` is the stimulus grid with `logprob`, the LM's log score of each
    variant's frame; `score_is` says what that score is: "likelihood" (log
    P(C | V), masked LMs) or "joint" (the sentence's log-probability, log P(C, V)
    up to a constant shared by the frame, causal LMs); see the module
    docstring. `prior` is papineau2022's variant_prior table. Returns cell,
    state, the item columns, method and prob (sums to 1 over each cell's
    variants, per method).
    """
    if score_is not in SCORE_KINDS:
        from gbstats.errors import UnknownNameError

        raise UnknownNameError("kind of model score", score_is, list(SCORE_KINDS))
    joined = scored.merge(prior[["variant", "prior"]], on="variant", how="left",
                          validate="many_to_one")
    if joined["prior"].isna().any() or (joined["prior"] <= 0).any():
        bad = joined.loc[joined["prior"].isna() | (joined["prior"] <= 0), "variant"].iloc[0]
        raise DataValidationError("a scored variant has no positive corpus prior",
                                  source="variant_prior", column="prior",
                                  expected="P(V) > 0 for every variant", found=repr(bad))
    joined["corpus_prior"] = normalise_within(joined, "prior", "cell")
    normalised = softmax_within(joined, "logprob", "cell")
    if score_is == "likelihood":
        joined["model_likelihood"] = normalised
        joined["_weighted"] = joined["model_likelihood"] * joined["corpus_prior"]
        joined["posterior"] = normalise_within(joined, "_weighted", "cell")
    else:
        joined["posterior"] = normalised
        joined["_divided"] = joined["posterior"] / joined["corpus_prior"]
        joined["model_likelihood"] = normalise_within(joined, "_divided", "cell")
    keep = ["cell", "state"] + ITEM_COLUMNS
    return joined.melt(id_vars=keep, value_vars=list(METHODS), var_name="method",
                       value_name="prob")


def average_over_states(frame_probs: pd.DataFrame) -> pd.DataFrame:
    """Mean of each variant's probability over states: one distribution per name x set.

    An average of distributions is a distribution, so each item's
    probabilities still sum to 1. Each state counts equally, because the
    stimuli did not record which state a participant saw.
    """
    out = (frame_probs.groupby(["method"] + ITEM_COLUMNS, sort=False, observed=True)
           .agg(prob=("prob", "mean"), n_states=("state", "nunique")).reset_index())
    return out


def prior_item_probabilities(prior: pd.DataFrame) -> pd.DataFrame:
    """The corpus_prior method without any LM: P(V) for every name x set item."""
    names = rn.name_genders()
    items = names.merge(prior[["role_noun_set", "set_type", "variant", "variant_gender",
                               "prior"]], how="cross")
    items["item"] = items["role_noun_set"] + "|" + items["name"]
    items["method"] = "corpus_prior"
    items["prob"] = items["prior"]
    items["n_states"] = 0
    return items[["method"] + ITEM_COLUMNS + ["prob", "n_states"]]


# --------------------------------------------------------------------------
# Group log-likelihood (the paper's Tables 1 and 5), CIs and tests
# --------------------------------------------------------------------------

def _subsets(trials: pd.DataFrame, item_probs: pd.DataFrame):
    """(method, set_type, grouping, column, trials, probs) for every combination present."""
    for method in [m for m in METHODS if m in set(item_probs["method"])]:
        probs = item_probs[item_probs["method"] == method]
        for set_type in rn.SET_TYPES:
            sub = trials[trials["set_type"] == set_type]
            if sub.empty:
                continue
            for grouping, column in GROUPINGS.items():
                ordered = sub.assign(**{column: pd.Categorical(sub[column],
                                                               GROUP_ORDER[grouping])})
                yield (method, set_type, grouping, column, ordered,
                       probs[probs["set_type"] == set_type])


def group_loglik_table(trials: pd.DataFrame, item_probs: pd.DataFrame, *, n_boot: int,
                       seed: int) -> pd.DataFrame:
    """Mean log-likelihood of each group's responses, per method x set type x grouping.

    One row per method x set type x grouping x group, with the means for
    trials with men's names, women's names and all, bootstrap CIs that
    resample participants, and the counts (GROUP_LOGLIK_COLUMNS).
    """
    from gbstats.alignment.groups import group_loglik

    rows = []
    for method, set_type, grouping, column, sub, probs in _subsets(trials, item_probs):
        long = group_loglik(sub, probs, group=column, item_keys=["item"], split_by="name_gender",
                            prob="prob", n_boot=n_boot, seed=seed)
        for group, per_group in long.groupby("group", sort=False, observed=True):
            by_split = per_group.set_index("split")
            row = {"method": method, "set_type": set_type, "grouping": grouping,
                   "group": str(group),
                   "n_participants": int(by_split.loc["all", "n_participants"]),
                   "n_obs": int(by_split.loc["all", "n_obs"])}
            for split, suffix in SPLIT_NAMES.items():
                row[f"loglik_{suffix}"] = float(by_split.loc[split, "mean_loglik"])
                row[f"ci_low_{suffix}"] = float(by_split.loc[split, "ci_low"])
                row[f"ci_high_{suffix}"] = float(by_split.loc[split, "ci_high"])
                if split != "all":
                    row[f"n_obs_{suffix}"] = int(by_split.loc[split, "n_obs"])
            rows.append(row)
    return pd.DataFrame(rows, columns=GROUP_LOGLIK_COLUMNS)


def best_group_tests(trials: pd.DataFrame, item_probs: pd.DataFrame, *, n_perm: int,
                     n_boot: int, seed: int) -> pd.DataFrame:
    """Does the best-fitting group fit significantly better than the next one?

    A permutation test over participants (gbstats.alignment.groups.compare_group_loglik)
    for each method x set type x grouping and each split (men's names,
    women's names, all). The paper reports point estimates only.
    """
    from gbstats.alignment.groups import compare_group_loglik

    rows = []
    for method, set_type, grouping, column, sub, probs in _subsets(trials, item_probs):
        out = compare_group_loglik(sub, probs, group=column, item_keys=["item"],
                                   split_by="name_gender", prob="prob", n_perm=n_perm,
                                   n_boot=n_boot, seed=seed)
        out["split"] = out["split"].map(SPLIT_NAMES)
        rows.append(out.assign(method=method, set_type=set_type, grouping=grouping))
    table = pd.concat(rows, ignore_index=True)
    front = ["method", "set_type", "grouping"]
    return holm_by_method(table[front + [c for c in table.columns if c not in front]])


def permutation_family(method: str) -> str:
    """One family per method: its tests over set types, groupings and name genders
    together answer "which group does this method's prediction resemble?"."""
    return f"permutation tests, {method}"


def holm_by_method(tests: pd.DataFrame) -> pd.DataFrame:
    """Add `family` and `p_holm` (Holm within each family, issue 19 item 8)."""
    from gbstats.inference.hypothesis_tests import correct_within_families

    out = tests.assign(family=tests["method"].map(permutation_family))
    adjusted = correct_within_families(out, "family", "holm")
    return out.assign(p_holm=adjusted["p_adjusted"], family_size=adjusted["family_size"])


# --------------------------------------------------------------------------
# Proportions of FEM / MASC / G-NEUT (the paper's Figures 1 and 3)
# --------------------------------------------------------------------------

def human_proportions(trials: pd.DataFrame) -> pd.DataFrame:
    """Share of each response gender per set type x attitude group x name gender."""
    keys = ["set_type", "attitude_group", "name_gender"]
    counts = (trials.groupby(keys + ["response_gender"], observed=True).size()
              .rename("n").reset_index())
    counts["n_obs"] = counts.groupby(keys)["n"].transform("sum")
    full = _complete_genders(counts, keys)
    full["proportion"] = full["n"] / full["n_obs"]
    return full.assign(source="people").rename(columns={"attitude_group": "group"})


def _complete_genders(counts: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Add zero rows for response genders a cell never produced (MASC only in 3-way sets)."""
    cells = counts[keys + ["n_obs"]].drop_duplicates()
    genders = pd.DataFrame({"response_gender": list(rn.VARIANT_GENDERS)})
    full = cells.merge(genders, how="cross")
    full = full[~((full["set_type"] == rn.TWO_WAY) & (full["response_gender"] == rn.MASC))]
    full = full.merge(counts[keys + ["response_gender", "n"]], how="left",
                      on=keys + ["response_gender"])
    full["n"] = full["n"].fillna(0).astype(int)
    return full


def model_proportions(item_probs: pd.DataFrame) -> pd.DataFrame:
    """Each method's mean P(variant gender) per set type x name gender.

    Every name x set item counts once: the mean over the items of the set
    type with names of that gender (12 names x 14 or 6 sets).
    """
    keys = ["method", "set_type", "name_gender"]
    per_item = (item_probs.groupby(keys + ["item", "variant_gender"], observed=True)["prob"]
                .sum().reset_index())
    out = (per_item.groupby(keys + ["variant_gender"], observed=True)
           .agg(proportion=("prob", "mean"), n_items=("item", "nunique")).reset_index())
    return out.rename(columns={"variant_gender": "response_gender", "method": "source"}) \
        .assign(group="model")


def proportions_table(trials: pd.DataFrame, item_probs: pd.DataFrame) -> pd.DataFrame:
    """People's and the model's proportions side by side (long)."""
    people = human_proportions(trials)
    model = model_proportions(item_probs)
    columns = ["set_type", "source", "group", "name_gender", "response_gender", "proportion",
               "n", "n_obs", "n_items"]
    both = pd.concat([people, model], ignore_index=True)
    for c in columns:
        if c not in both:
            both[c] = np.nan
    order = {"people": 0, **{m: i + 1 for i, m in enumerate(METHODS)}}
    both["_o"] = both["source"].map(order)
    return (both.sort_values(["set_type", "_o", "group", "name_gender", "response_gender"],
                             kind="stable")[columns].reset_index(drop=True))


GENDER_COLOURS = {rn.FEM: "#d07c4a", rn.MASC: "#4a7cb0", rn.G_NEUT: "#9a9a9a"}


def plot_proportions(table: pd.DataFrame, set_type: str, title: str):
    """Stacked bars of FEM / MASC / G-NEUT: attitude groups, then the model's methods;
    one panel per name gender."""
    from gbstats.report.figures import new_figure

    sub = table[table["set_type"] == set_type]
    fig, axes = new_figure(1, 2, width=10, height=4.2, sharey=True)
    for ax, name_gender in zip(axes, rn.NAME_GENDERS):
        rows = sub[sub["name_gender"] == name_gender]
        bars = [("people", g) for g in GROUP_ORDER["attitude"]] + \
            [(m, "model") for m in METHODS if m in set(rows["source"])]
        labels = [g if s == "people" else s.replace("_", "\n") for s, g in bars]
        bottom = np.zeros(len(bars))
        for gender in rn.VARIANT_GENDERS:
            heights = []
            for source, group in bars:
                hit = rows[(rows["source"] == source) & (rows["group"] == group)
                           & (rows["response_gender"] == gender)]
                heights.append(float(hit["proportion"].iloc[0]) if len(hit) else 0.0)
            ax.bar(np.arange(len(bars)), heights, bottom=bottom, label=gender,
                   color=GENDER_COLOURS[gender], edgecolor="black", linewidth=0.5)
            bottom += np.array(heights)
        ax.set_xticks(np.arange(len(bars)), labels, fontsize=8)
        ax.set_xlabel("people by attitude group | model predictions")
        ax.set_title(f"{name_gender}'s names")
        ax.set_ylim(0, 1)
    axes[0].set_ylabel("proportion of responses")
    axes[1].legend(title="form", loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    fig.suptitle(title)
    return fig


def plot_group_loglik(table: pd.DataFrame, set_type: str, grouping: str, title: str):
    """Mean log-likelihood per group and method, with the bootstrap CIs."""
    from gbstats.report.figures import new_figure

    sub = table[(table["set_type"] == set_type) & (table["grouping"] == grouping)]
    methods = [m for m in METHODS if m in set(sub["method"])]
    groups = [g for g in GROUP_ORDER[grouping] if g in set(sub["group"])]
    fig, ax = new_figure(width=7, height=4)
    width = 0.8 / max(len(methods), 1)
    for k, method in enumerate(methods):
        rows = sub[sub["method"] == method].set_index("group").reindex(groups)
        x = np.arange(len(groups)) + (k - (len(methods) - 1) / 2) * width
        ax.bar(x, rows["loglik_all"], width=width, label=method, edgecolor="black", linewidth=0.5)
        ax.errorbar(x, rows["loglik_all"], yerr=[rows["loglik_all"] - rows["ci_low_all"],
                                                 rows["ci_high_all"] - rows["loglik_all"]],
                    fmt="none", ecolor="black", capsize=3, linewidth=1)
    ax.set_xticks(np.arange(len(groups)), groups)
    ax.set_xlabel(f"{grouping} group")
    ax.set_ylabel("mean log-likelihood per response (nats)")
    ax.legend(fontsize=8)
    ax.set_title(title)
    return fig


# --------------------------------------------------------------------------
# The direct method (single-token sets only) vs the Bayesian method
# --------------------------------------------------------------------------

def single_token_sets(variants: pd.DataFrame, n_pieces) -> list[str]:
    """Sets all of whose variants are one token of the model; `n_pieces(variant) -> int`."""
    pieces = variants.assign(n=[n_pieces(v) for v in variants["variant"]])
    ok = pieces.groupby("role_noun_set", sort=False)["n"].apply(lambda n: bool((n == 1).all()))
    return [s for s, single in ok.items() if single]


def direct_vs_posterior(direct: pd.DataFrame, frame_probs: pd.DataFrame) -> tuple[pd.DataFrame,
                                                                                 pd.DataFrame]:
    """Join the direct method's P(V | frame) with the posterior, per name x state x variant cell.

    Returns (cells, correlation row). The correlation is Pearson's r over all
    cells of the single-token sets, as Watson et al. report it (r = .76 for
    BERT on 8 sets).
    """
    from gbstats.inference.hypothesis_tests import correlation

    posterior = frame_probs[frame_probs["method"] == "posterior"][["cell", "variant", "prob"]]
    cells = direct[["cell", "role_noun_set", "variant", "probability"]].rename(
        columns={"probability": "direct"}).merge(
        posterior.rename(columns={"prob": "posterior"}), on=["cell", "variant"], how="left",
        validate="one_to_one")
    if cells["posterior"].isna().any():
        raise DataValidationError("a direct-method cell has no posterior", source="direct method",
                                  column="cell", found=repr(cells.loc[cells["posterior"].isna(),
                                                                      "cell"].iloc[0]))
    r = correlation(cells["direct"], cells["posterior"], label_x="direct",
                    label_y="posterior")
    row = pd.DataFrame({"n_sets": [cells["role_noun_set"].nunique()],
                        "sets": [", ".join(dict.fromkeys(cells["role_noun_set"]))],
                        "n_cells": [int(r["n_a"].iloc[0])], "r": r["estimate"].to_numpy(),
                        "ci_low": r["ci_low"].to_numpy(), "ci_high": r["ci_high"].to_numpy(),
                        "p_value": r["p_value"].to_numpy()})
    return cells, row


# --------------------------------------------------------------------------
# The human data's own model
# --------------------------------------------------------------------------

def glmm_rows(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per trial: neutral (1 = the G-NEUT form), name_gender, attitude_score, keys.

    name_gender is a factor with men's names as the reference level; the
    attitude score is the 0-100 Social Roles score (higher = more
    conservative) as the loader computes it.
    """
    out = trials[["participant", "role_noun_set", "set_type", "name_gender",
                  "attitude_score"]].copy()
    out["neutral"] = (trials["response_gender"] == rn.G_NEUT).astype(int)
    out["participant"] = out["participant"].astype(str)
    out["name_gender"] = pd.Categorical(out["name_gender"], list(rn.NAME_GENDERS))
    return out.reset_index(drop=True)
