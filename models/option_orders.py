"""Forced choice among listed options, without the list's order deciding the answer.

A model that reads "he/him, she/her, they/them, Answer:" and answers he/him for every
character may be reading the first line, not the character. Two remedies, both
generic (any prompt that lists options and scores each as the continuation):

* **Order balancing** (`option_orders`, `order_balanced`): present the options in
  several orders and average the choice probabilities over them. Design "all" is
  every order (n! of them: 6 for three options), so every option sits in every
  position equally often and every pair of options comes in either order equally
  often. Design "latin" is the cyclic Latin square (n orders: each option once in
  each position), which balances positions but not which option follows which.
* **Position bias** (`position_bias`): P(the option in position k is chosen),
  averaged over prompts and orders. With a balanced design each option fills
  position k equally often, so the content averages out and what is left is the
  pull of the position itself; a reader of the list alone would give 1/n for each.
* **Contextual calibration** (`contextual_calibration`; Zhao et al. 2021, "Calibrate
  before use"): divide each prompt's choice probabilities by those the same frame
  gives when the question is content-free (e.g. its subject replaced by "N/A"), and
  renormalise. A sensitivity, not a remedy that is always right: it assumes the
  content-free frame shows the bias and nothing else.
"""
from __future__ import annotations

from itertools import permutations

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError

ORDER_DESIGNS = ("all", "latin")
ORDER_SEPARATOR = " | "


def option_orders(options, design: str = "all") -> list[tuple]:
    """The orders in which the options are listed: "all" (every permutation, the given
    order first) or "latin" (the cyclic Latin square: the given order, then each rotation
    by one). Each option fills each position equally often in both designs."""
    options = tuple(options)
    if len(set(options)) != len(options) or len(options) < 2:
        raise DataValidationError("options to order must be two or more, all different",
                                  source="option_orders", expected="distinct options",
                                  found=f"{options!r}")
    if design == "all":
        return list(permutations(options))
    if design == "latin":
        return [options[k:] + options[:k] for k in range(len(options))]
    raise DataValidationError("unknown order design", source="option_orders",
                              expected=f"one of {ORDER_DESIGNS}", found=repr(design))


def order_label(order) -> str:
    """An order as one string (a column value): "he/him | she/her | they/them"."""
    return ORDER_SEPARATOR.join(order)


def _check(frame: pd.DataFrame, columns, where: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataValidationError("choice table without its columns", source=where,
                                  column=missing[0], expected=f"columns {list(columns)}",
                                  found=f"columns {list(frame.columns)}")


def check_balanced(choices: pd.DataFrame, by: str = "prompt_id") -> None:
    """Every prompt was shown in the same orders, and over them every option sat in every
    position equally often; else a clear error (an unbalanced average keeps position bias)."""
    _check(choices, [by, "order", "option", "position"], "check_balanced")
    counts = choices.groupby([by, "option", "position"]).size().unstack("position", fill_value=0)
    if counts.nunique(axis=1).max() > 1 or counts.stack().nunique() > 1:
        bad = counts[counts.nunique(axis=1) > 1].index[:1].tolist() or counts.index[:1].tolist()
        raise DataValidationError("options not balanced over positions", source="choices",
                                  column="position",
                                  expected="every option in every position equally often",
                                  found=f"counts {counts.loc[bad[0]].to_dict()} at {bad[0]}")


def order_balanced(choices: pd.DataFrame, by: str = "prompt_id",
                   probability: str = "probability") -> pd.DataFrame:
    """(by, option, probability): each option's choice probability averaged over the
    orders it was shown in. `choices` has one row per prompt x order x option, with the
    probability normalised within each prompt x order (and the option's position); the
    design is checked to be balanced first (`check_balanced`)."""
    check_balanced(choices, by)
    return (choices.groupby([by, "option"], sort=False)[probability].mean()
            .rename("probability").reset_index())


def position_bias(choices: pd.DataFrame, by: str = "prompt_id",
                  probability: str = "probability") -> pd.DataFrame:
    """(position, p_chosen, chance, argmax_share, n_prompts, n_orders): per position,
    P(the option there is chosen) averaged over prompts and orders, 1/n beside it, and the
    share of prompt x order presentations whose most probable option sits there."""
    check_balanced(choices, by)
    n_options = choices["option"].nunique()
    mean = choices.groupby("position")[probability].mean()
    top = choices.loc[choices.groupby([by, "order"])[probability].idxmax(), "position"]
    shares = top.value_counts(normalize=True).reindex(mean.index, fill_value=0.0)
    return pd.DataFrame({"position": mean.index.astype(int), "p_chosen": mean.to_numpy(),
                         "chance": 1 / n_options, "argmax_share": shares.to_numpy(),
                         "n_prompts": choices[by].nunique(),
                         "n_orders": choices["order"].nunique()})


def contextual_calibration(p: np.ndarray, p_content_free: np.ndarray) -> np.ndarray:
    """Zhao et al.'s (2021) calibration of one choice: p / p_content_free, renormalised
    over the options (last axis). Both arrays hold probabilities over the same options in
    the same order; a content-free probability of 0 is refused."""
    p, q = np.asarray(p, dtype=float), np.asarray(p_content_free, dtype=float)
    if p.shape[-1:] != q.shape[-1:]:
        raise DataValidationError("calibration over different options",
                                  source="contextual_calibration",
                                  expected=f"{p.shape[-1]} options on both sides",
                                  found=f"{q.shape[-1]} content-free options")
    if (q <= 0).any() or not np.isfinite(q).all():
        raise DataValidationError("a content-free probability that is not positive",
                                  source="contextual_calibration",
                                  expected="probabilities > 0", found=f"{q.min()}")
    w = p / q
    return w / w.sum(axis=-1, keepdims=True)
