"""The model side's texts: each story of Exp 1 and 3 with the name as shown, cut where
people began their continuation.

* Exp 1 (`stimuli_exp1`): a frame such as "X woke up early to walk the dog.
  After making coffee..." with the name in place of X. People typed their
  continuation after the trailing ellipsis ("he ate breakfast."), so the
  text the model continues is the frame with the ellipsis replaced by a
  comma: "Matthew woke up early to walk the dog. After making coffee,".
* Exp 3 (`stimuli_exp3`): the whole news story (name already filled in by
  the authors' workbook, full name first, then the condition's form), a
  space, and the production cue with its ellipsis removed: "After Chris
  discussed the results of this study," ("... says that" cues take no comma).

`pronoun_prompts` returns one row per prompt with `item_key` (the name
as people saw it, the authors' `Item`), `frame` (the story), `Condition`
and the `prefix` the model continues, plus the name's parts the analyses
group by: `first_name` (the first name shown; none after a last name alone
in Exp 1), `name_unit` (the first name, or the last name where only it was
shown: the name a reader could guess a gender from) and `name_word` (the
first word of the name as the prompt last used it, the model's fourth
option: people who avoided a pronoun mostly repeated the name). The words
scored are " he", " she", " they" and " <name_word>" (with their leading
space, as they follow the prefix).

`exp3_prompt_variants` gives Exp 3's prompts in four layouts (PROMPT_VARIANTS):
people read the story on one page and wrote their continuation on the next,
below a cue ending in an ellipsis, while the default prompt joins story and
cue into one text and puts a comma where the ellipsis was. The variants put
a blank line where the page broke, keep the cue's ellipsis, or both.
"""
from __future__ import annotations

import re

import pandas as pd

from gbstats.errors import DataValidationError

PRONOUNS = ("he", "she", "they")
# The default layout first; then a blank line for the page break, the cue's own ellipsis,
# and both (closest to what people saw).
PROMPT_VARIANTS = {
    "one text, comma": (" ", False),
    "page break, comma": ("\n\n", False),
    "one text, ellipsis": (" ", True),
    "page break, ellipsis": ("\n\n", True),
}
DEFAULT_VARIANT = "one text, comma"
# a trailing ellipsis in any of the workbooks' spellings ("...", "…", "….", "... ")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…)\.*\s*$")


def cut_at_continuation(text: str, *, source: str) -> str:
    """The text up to where people continued: ellipsis off, then a comma unless the
    text already ends with one or with "that" (a clause that continues with a subject)."""
    stripped = _ELLIPSIS.sub("", text.rstrip())
    if stripped == text.rstrip() and not text.rstrip().endswith(","):
        raise DataValidationError("a prompt without a continuation point", source=source,
                                  expected="a text ending in an ellipsis or a comma",
                                  found=repr(text[-40:]))
    stripped = stripped.rstrip()
    if stripped.endswith(",") or re.search(r"\bthat$", stripped):
        return stripped
    return stripped + ","


def exp1_prompts(stimuli: pd.DataFrame) -> pd.DataFrame:
    """One row per frame x name shown (a pair shown by several lists is scored once)."""
    pairs = stimuli.drop_duplicates(["frame", "NameShown"]).copy()
    if not pairs["frame_text"].str.contains(r"\bX\b").all():
        bad = pairs.loc[~pairs["frame_text"].str.contains(r"\bX\b"), "frame_text"].iloc[0]
        raise DataValidationError("a frame without X", source="exp1_stimuli.xlsx [Production]",
                                  expected="X where the name goes", found=repr(bad))
    pairs["prefix"] = [cut_at_continuation(re.sub(r"\bX\b", name, text),
                                           source="exp1_stimuli.xlsx [Production]")
                       for text, name in zip(pairs["frame_text"], pairs["NameShown"])]
    out = pairs.rename(columns={"NameShown": "item_key"})
    out.insert(0, "experiment", 1)
    out["prompt"] = "e1-" + out["frame"] + "-" + out["item_key"].str.replace(" ", "_")
    first_word = out["item_key"].str.split().str[0]
    out["first_name"] = first_word.where(out["Condition"] != "last")
    out["name_unit"] = first_word
    out["name_word"] = first_word
    return out[PROMPT_COLUMNS].reset_index(drop=True)


def exp3_prompts(stimuli: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """One row per condition x list x name: the story, then the production cue.

    The story's topic (`frame`) is the authors' own `Prompt` label of the trials
    that showed it (a cue's wording is not a safe key: one cue is spelled
    differently in one list)."""
    keys = ["Condition", "List", "Name"]
    topic = trials.drop_duplicates(keys + ["Prompt"])
    if topic.duplicated(keys).any():
        raise DataValidationError("one story with two Prompt labels", source="exp3_data.csv",
                                  column="Prompt", expected="one topic per Condition x List x Name",
                                  found=str(topic.loc[topic.duplicated(keys), keys].iloc[0].to_dict()))
    out = stimuli.merge(topic[keys + ["Prompt"]], on=keys, how="left", validate="one_to_one")
    unshown = out["Prompt"].isna()
    if unshown.any():
        raise DataValidationError("a story no trial showed", source="exp3-4_stimuli.xlsx [Production]",
                                  row=int(out.loc[unshown, "xlsx_row"].iloc[0]),
                                  expected="every story of the workbook in exp3_data.csv",
                                  found=str(out.loc[unshown, keys].iloc[0].to_dict()))
    out["frame"] = out["Prompt"]
    out["prefix"] = [exp3_prefix(story, cue, DEFAULT_VARIANT)
                     for story, cue in zip(out["Story"], out["ProductionPrompt"])]
    out = out.rename(columns={"Name": "item_key"})
    out.insert(0, "experiment", 3)
    out["prompt"] = ("e3-" + out["Condition"] + "-" + out["List"] + "-"
                     + out["item_key"].str.replace(" ", "_"))
    out["first_name"] = out["NameFirst"]
    out["name_unit"] = out["NameFirst"]
    out["name_word"] = out["NameLast"].where(out["Condition"] == "last", out["NameFirst"])
    return out[PROMPT_COLUMNS + ["Story", "ProductionPrompt"]].reset_index(drop=True)


def exp3_prefix(story: str, cue: str, variant: str) -> str:
    """One Exp 3 prompt in one of PROMPT_VARIANTS' layouts."""
    separator, keep_ellipsis = PROMPT_VARIANTS[variant]
    source = "exp3-4_stimuli.xlsx [Production]"
    if keep_ellipsis:
        cut_at_continuation(cue, source=source)          # the same check: a continuation point
        ending = cue.rstrip()
    else:
        ending = cut_at_continuation(cue, source=source)
    return story.rstrip() + separator + ending


def exp3_prompt_variants(prompts: pd.DataFrame) -> pd.DataFrame:
    """Exp 3's prompts (rows of `pronoun_prompts` with experiment 3) in every layout of
    PROMPT_VARIANTS: one row per prompt x variant, `prompt` suffixed with the variant's
    number (the default layout keeps its id, so its scores are shared)."""
    exp3 = prompts[prompts["experiment"] == 3]
    parts = []
    for k, variant in enumerate(PROMPT_VARIANTS):
        part = exp3.assign(variant=variant, prefix=[exp3_prefix(s, c, variant) for s, c in
                                                    zip(exp3["Story"], exp3["ProductionPrompt"])])
        if variant != DEFAULT_VARIANT:
            part["prompt"] = part["prompt"] + f"|v{k}"
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


PROMPT_COLUMNS = ["experiment", "prompt", "frame", "Condition", "item_key", "first_name",
                  "name_unit", "name_word", "prefix"]


def pronoun_prompts(tables: dict) -> pd.DataFrame:
    """Every prompt of Exp 1 and 3 (PROMPT_COLUMNS; Exp 3's rows also keep `Story` and
    `ProductionPrompt`, which `exp3_prompt_variants` lays out anew)."""
    prompts = pd.concat([exp1_prompts(tables["stimuli_exp1"]),
                         exp3_prompts(tables["stimuli_exp3"], tables["exp3"])],
                        ignore_index=True)
    if prompts["prompt"].duplicated().any():
        dup = prompts.loc[prompts["prompt"].duplicated(), "prompt"].iloc[0]
        raise DataValidationError("one prompt id twice", source="name_gender prompts",
                                  expected="unique prompt ids", found=repr(dup))
    return prompts
