"""The model side: memory (forced choice) and production (next word) for every prompt.

`score_prompts` scores the prompts of `contexts.all_prompts` through the
kind-aware entries of `models/`:

* memory: a forced choice over the options "he/him", "she/her", "they/them" in
  the slot that ends the frame: log P(" they/them" | everything before) from
  `models.logprob.continuation_logprobs` (the slot ends the frame, so this is
  what `models.forced_choice` scores with span "word" for either kind of
  model), normalised over the three with forced_choice's own softmax;
* production: continuation_logprobs of " he", " she", " they" after the
  sentence beginning; the raw probabilities, their sum (the mass the three
  cover) and the three-way normalised probabilities.

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

from studies.pronoun_memory.contexts import NEXT_WORDS, OPTIONS, SLOT


def continuation_units(prompts: pd.DataFrame) -> pd.DataFrame:
    """One row per prompt x task x option: the prefix (all that is read before it) and
    the continuation scored. Memory: the frame up to its slot, then " he/him" etc.
    (the forced choice's options); production: the sentence beginning, then " he" etc."""
    rows = []
    for r in prompts.itertuples():
        before, after = r.memory_frame.split(SLOT)
        if after.strip():
            raise ValueError(f"the memory slot must end the frame: {r.prompt_id}")
        for option in OPTIONS:
            rows.append({"prompt_id": r.prompt_id, "task": "memory", "option": option,
                         "prefix": before.rstrip(" "), "continuation": " " + option})
        for option in OPTIONS:
            rows.append({"prompt_id": r.prompt_id, "task": "production", "option": option,
                         "prefix": r.production_prefix, "continuation": NEXT_WORDS[option]})
    out = pd.DataFrame(rows)
    out["item"] = out["prompt_id"] + "|" + out["task"] + "|" + out["option"]
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


def score_prompts(prompts: pd.DataFrame, lm, batch_size: int | None = None,
                  **cache) -> pd.DataFrame:
    """The prompts with memory and production probabilities, each task's accuracy
    (probability on the correct option), argmax choice and whether it is correct.

    Memory: the forced choice's softmax over the three options' log-probabilities
    (models.forced_choice.normalise_over_variants). Production: the raw next-word
    probabilities, the mass the three cover, and the three normalised."""
    from models.forced_choice import normalise_over_variants

    units = score_units(continuation_units(prompts), lm, batch_size=batch_size, **cache)
    memory = units[units["task"] == "memory"].copy()
    memory["probability"] = normalise_over_variants(memory, by="prompt_id")
    production = units[units["task"] == "production"].copy()
    production["probability"] = np.exp(production["logprob"])
    wide_memory = memory.pivot(index="prompt_id", columns="option", values="probability")
    wide_raw = production.pivot(index="prompt_id", columns="option", values="probability")
    out = prompts.drop(columns=["memory_frame", "production_prefix"]).set_index("prompt_id")
    for option in OPTIONS:
        out[f"p_mem_{_short(option)}"] = wide_memory[option]
        out[f"p_raw_{_short(option)}"] = wide_raw[option]
    out["pronoun_mass"] = wide_raw[list(OPTIONS)].sum(axis=1)
    for option in OPTIONS:
        out[f"p_prod_{_short(option)}"] = out[f"p_raw_{_short(option)}"] / out["pronoun_mass"]
    out = out.reset_index()
    for task, prefix in (("memory", "p_mem_"), ("production", "p_prod_")):
        probs = out[[f"{prefix}{_short(o)}" for o in OPTIONS]].to_numpy()
        index = [list(OPTIONS).index(p) for p in out["Pronoun"]]
        out[f"{task}_accuracy"] = probs[np.arange(len(out)), index]
        out[f"{task}_choice"] = [OPTIONS[k] for k in probs.argmax(axis=1)]
        out[f"{task}_correct"] = (out[f"{task}_choice"] == out["Pronoun"]).astype(int)
    out.attrs["scoring"] = units.attrs["scoring"]
    out.attrs["run"] = units.attrs["run"]
    return out
