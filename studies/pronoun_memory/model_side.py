"""The model side: memory (forced choice) and production (next word) for every prompt.

`score_prompts` scores the prompts of `contexts.all_prompts` through the
kind-aware entries of `models/`:

* memory: a forced choice over the options "he/him", "she/her", "they/them" in
  the slot that ends the frame: log P(" they/them" | everything before) from
  `models.logprob.continuation_logprobs` (the slot ends the frame, so this is
  what `models.forced_choice` scores with span "word" for either kind of
  model), normalised over the three with forced_choice's own softmax, in each
  order of the options (contexts.memory_orders), then averaged over the orders
  (models.option_orders.order_balanced). The same for the content-free frame of
  each shared context (the question about "N/A"), and each order's choice
  divided by it and renormalised (contextual calibration, a sensitivity);
* production: continuation_logprobs of " he", " she", " they" after the
  sentence beginning, once per pronoun of the worked example (he, she, they);
  the raw probabilities averaged over the three examples, their sum (the mass
  the three cover) and the three-way normalised probabilities. The reading
  with the example people saw ("he made dinner.") is kept (p_shown_*).

Both tasks go through one call, so that their units meet in the same batches.

Every prompt of one list (and distractor condition) begins with the same long
context, so the engine runs that context once per batch (prefix sharing) and
the score cache keeps every unit: a second run scores nothing.

Accuracy on a character is the probability on the correct option (memory:
normalised over the three options; production: normalised over the three
pronouns, i.e. given that the next word is one of them, like people's
responses that used a pronoun), and the argmax choice is kept as well.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from models.option_orders import order_label
from studies.pronoun_memory.contexts import (EXAMPLE_PRONOUNS, NEXT_WORDS, OPTIONS, SLOT,
                                            memory_frame, memory_orders)

CONTENT_FREE_SUFFIX = "|content-free"


def _memory_rows(prompt_id: str, frames: dict, orders) -> list[dict]:
    rows = []
    for order in orders:
        before, after = frames[order].split(SLOT)
        if after.strip():
            raise ValueError(f"the memory slot must end the frame: {prompt_id}")
        for position, option in enumerate(order, start=1):
            rows.append({"prompt_id": prompt_id, "task": "memory", "option": option,
                         "order": order_label(order), "position": position, "example": "",
                         "prefix": before.rstrip(" "), "continuation": " " + option})
    return rows


def continuation_units(prompts: pd.DataFrame, orders=None) -> pd.DataFrame:
    """One row per prompt x task x option (x order for memory, x worked example for
    production): the prefix (all that is read before it) and the continuation scored.
    Memory: the frame up to its slot with the options in each order, then " he/him" etc.
    (the forced choice's options); one content-free prompt per shared context (prompt_id
    "<context_id>|content-free", task "memory"), its question about "N/A". Production:
    the sentence beginning after each worked example, then " he" etc."""
    orders = memory_orders() if orders is None else [tuple(o) for o in orders]
    rows = []
    for r in prompts.itertuples():
        frames = {o: memory_frame(r.memory_head, r.memory_question, o) for o in orders}
        rows += _memory_rows(r.prompt_id, frames, orders)
        for example in EXAMPLE_PRONOUNS:
            for option in OPTIONS:
                rows.append({"prompt_id": r.prompt_id, "task": "production", "option": option,
                             "order": "", "position": 0, "example": example,
                             "prefix": getattr(r, f"production_prefix_{example}"),
                             "continuation": NEXT_WORDS[option]})
    for r in prompts.drop_duplicates("context_id").itertuples():
        frames = {o: memory_frame(r.memory_head, r.content_free_question, o) for o in orders}
        rows += _memory_rows(r.context_id + CONTENT_FREE_SUFFIX, frames, orders)
    out = pd.DataFrame(rows)
    out["item"] = (out["prompt_id"] + "|" + out["task"] + "|" + out["order"] + "|"
                   + out["example"] + "|" + out["option"])
    return out


def score_units(units: pd.DataFrame, lm, batch_size: int | None = None, **cache) -> pd.DataFrame:
    """log P(continuation | prefix) for every unit in ONE call, so that a list's memory
    questions and sentence beginnings (and the lists of one PSA condition) sit in the
    same batches and their common context runs once (models.causal's token trees)."""
    from models.logprob import continuation_logprobs

    scored = continuation_logprobs(list(units["prefix"]), list(units["continuation"]),
                                   items=list(units["item"]), lm=lm, batch_size=batch_size,
                                   **cache)
    out = units.drop(columns=["prefix"]).assign(logprob=scored["logprob"].to_numpy(),
                                                n_tokens=scored["n_tokens"].to_numpy())
    out.attrs["run"] = scored.attrs.get("run", {})
    out.attrs["scoring"] = scored["scoring"].iloc[0]
    return out


def _short(option: str) -> str:
    return option.split("/")[0]


def memory_choices(units: pd.DataFrame) -> pd.DataFrame:
    """The memory units with each prompt x order's choice probabilities (softmax over the
    three options), the content-free choice of the prompt's context in the same order
    beside each (p_content_free), and the calibrated choice (p_calibrated; Zhao et al.
    2021). Content-free prompts themselves are left out."""
    from models.forced_choice import normalise_over_variants
    from models.option_orders import contextual_calibration

    memory = units[units["task"] == "memory"].copy()
    memory["group"] = memory["prompt_id"] + "|" + memory["order"]
    memory["probability"] = normalise_over_variants(memory, by="group").to_numpy()
    free = memory["prompt_id"].str.endswith(CONTENT_FREE_SUFFIX)
    content_free = memory[free].assign(
        context_id=lambda d: d["prompt_id"].str[:-len(CONTENT_FREE_SUFFIX)]).set_index(
        ["context_id", "order", "option"])["probability"]
    choices = memory[~free].drop(columns=["group", "example", "task"]).copy()
    choices["context_id"] = choices["prompt_id"].str.rsplit("|", n=1).str[0]
    choices["p_content_free"] = content_free.reindex(
        pd.MultiIndex.from_frame(choices[["context_id", "order", "option"]])).to_numpy()
    calibrated = []
    for _, block in choices.groupby(["prompt_id", "order"], sort=False):
        calibrated.append(pd.Series(contextual_calibration(block["probability"].to_numpy(),
                                                           block["p_content_free"].to_numpy()),
                                    index=block.index))
    choices["p_calibrated"] = pd.concat(calibrated).reindex(choices.index)
    return choices.reset_index(drop=True)


def score_prompts(prompts: pd.DataFrame, lm, batch_size: int | None = None, orders=None,
                  with_choices: bool = False, **cache):
    """The prompts with memory and production probabilities, each task's accuracy
    (probability on the correct option), argmax choice and whether it is correct.

    Memory: the forced choice's softmax over the three options' log-probabilities
    (models.forced_choice.normalise_over_variants) in each order, averaged over the
    orders (p_mem_*); calibrated against the content-free frame, then averaged
    (p_cal_*); the options in their listed order alone (p_listed_*). Production: the raw
    next-word probabilities averaged over the three worked examples, the mass the three
    cover, and the three normalised; p_shown_* with the example people read.
    With `with_choices`, (that table, memory_choices' per-order table)."""
    from models.option_orders import order_balanced

    units = score_units(continuation_units(prompts, orders), lm, batch_size=batch_size,
                        **cache)
    choices = memory_choices(units)
    balanced = order_balanced(choices).pivot(index="prompt_id", columns="option",
                                             values="probability")
    calibrated = order_balanced(choices, probability="p_calibrated").pivot(
        index="prompt_id", columns="option", values="probability")
    listed = choices[choices["order"] == order_label(OPTIONS)].pivot(
        index="prompt_id", columns="option", values="probability")
    production = units[units["task"] == "production"].copy()
    production["probability"] = np.exp(production["logprob"])
    wide_raw = production.groupby(["prompt_id", "option"])["probability"].mean().unstack()
    shown = production[production["example"] == EXAMPLE_PRONOUNS[0]].pivot(
        index="prompt_id", columns="option", values="probability")
    out = prompts.drop(columns=[c for c in prompts.columns if c.startswith(
        ("memory_frame", "memory_head", "production_prefix"))]).set_index("prompt_id")
    for option in OPTIONS:
        out[f"p_mem_{_short(option)}"] = balanced[option]
        out[f"p_cal_{_short(option)}"] = calibrated[option]
        out[f"p_listed_{_short(option)}"] = listed[option]
        out[f"p_raw_{_short(option)}"] = wide_raw[option]
    out["pronoun_mass"] = wide_raw[list(OPTIONS)].sum(axis=1)
    shown_mass = shown[list(OPTIONS)].sum(axis=1)
    for option in OPTIONS:
        out[f"p_prod_{_short(option)}"] = out[f"p_raw_{_short(option)}"] / out["pronoun_mass"]
        out[f"p_shown_{_short(option)}"] = shown[option] / shown_mass
    out = out.reset_index()
    index = [list(OPTIONS).index(p) for p in out["Pronoun"]]
    for task, prefix in (("memory", "p_mem_"), ("production", "p_prod_"),
                         ("calibrated", "p_cal_"), ("listed", "p_listed_"),
                         ("shown", "p_shown_")):
        probs = out[[f"{prefix}{_short(o)}" for o in OPTIONS]].to_numpy()
        out[f"{task}_accuracy"] = probs[np.arange(len(out)), index]
        if task in ("memory", "production"):
            out[f"{task}_choice"] = [OPTIONS[k] for k in probs.argmax(axis=1)]
            out[f"{task}_correct"] = (out[f"{task}_choice"] == out["Pronoun"]).astype(int)
    out.attrs["scoring"] = units.attrs["scoring"]
    out.attrs["run"] = units.attrs["run"]
    return (out, choices) if with_choices else out
