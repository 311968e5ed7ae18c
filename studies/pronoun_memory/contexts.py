"""What the model reads: each list's materials in order, then one question at a time.

A participant read, in order (Exp 1, Qualtrics): the instruction to read the
descriptions, the 12 introductions, the math distractor, then the memory
questions and the sentence beginnings (1B: the sentences first). In Exp 2
(PCIbex, `main.js`'s Sequence): the PSA with its instruction, the two
biographies with theirs, the 12 introductions (in a random order per
participant), the math questions, then memory and production.

The model gets that text as one shared context per list (and per distractor
condition, below), every piece read from the loader's tables (the files people
saw; nothing retyped). Then each question is scored on its own after the
shared context:

* memory: the task's instruction, the question ("What pronouns does Melissa
  use?") and its three options as listed, then "Answer:" and each option as
  the continuation (a forced choice: models.forced_choice, probabilities
  normalised over the three);
* production: the task's instruction and the sentence beginning, its "..."
  (Exp 2: "…") replaced by a comma, and the next word " he" / " she" / " they"
  (models.logprob.continuation_logprobs; the three raw probabilities and the
  mass they cover are kept).

"Answer:" and the comma are the only text this module adds; the pieces are
joined with blank lines, and each introduction is one line. Exp 2's math
questions are not in the published materials (main.js reads a math.csv that
the repository does not hold), so its math part is main.js's instruction
followed by Exp 1A's math questions (`exp1a_texts`), which the same lab used.

Distractors (as in RUFF): on Exp 1A's lists, each character is also
asked about with 1, 4 or 12 characters in context, with and without the math
text as a filler between the introductions and the questions. n = 12 is the
list as people read it; n = 4 splits each list into three mixed quartets
(positions 1, 4, 7, 10 / 2, 5, 8, 11 / 3, 6, 9, 12 of the list's order,
which has four she/her, then four he/him, then four they/them characters, so
every quartet mixes the three pronouns); n = 1 is the character alone.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

OPTIONS = ("he/him", "she/her", "they/them")
NEXT_WORDS = {"he/him": " he", "she/her": " she", "they/them": " they"}
SLOT = "[BLANK]"
N_CHARACTERS = (1, 4, 12)
FAITHFUL = {"n_characters": 12, "filler": True}


def sentence_beginning(text: str) -> str:
    """The production prompt as the model reads it: the trailing "..." / "…" (where
    people began typing) becomes a comma, after which the next word is scored."""
    stripped = text.rstrip()
    cut = re.sub(r"(\.\.\.|…)$", "", stripped)
    if cut == stripped:
        raise ValueError(f"sentence beginning without a trailing ellipsis: {text!r}")
    return cut.rstrip() + ","


def _texts(tables: dict, experiment: str) -> dict:
    return dict(zip(tables[f"exp{experiment}_texts"]["part"], tables[f"exp{experiment}_texts"]["text"]))


def math_questions(tables: dict) -> str:
    """Exp 1A's math questions (the math text without its first line, the instruction)."""
    return _texts(tables, "1a")["math"].split("\n", 1)[1]


# --------------------------------------------------------------------------
# one row per character and list: who is asked about, with what

def exp1_characters(tables: dict, experiment: str) -> pd.DataFrame:
    """experiment, List, position, Name, Pronoun, introduction, memory_question,
    production (the prompt's text as the model reads it), in the list's order."""
    s = tables[f"exp{experiment}_stimuli"].sort_values(["List", "position"])
    production = []
    for text in s["production_shown"]:
        lines = [ln for ln in text.split("\n") if ln.strip()]
        production.append("\n".join(lines[:-1] + [sentence_beginning(lines[-1])]))
    return pd.DataFrame({"experiment": experiment, "List": s["List"].to_numpy(),
                         "position": s["position"].to_numpy(), "Name": s["Name"].to_numpy(),
                         "Pronoun": s["Pronoun"].to_numpy(),
                         "introduction": s["introduction"].to_numpy(),
                         "memory_question": s["memory_question"].to_numpy(),
                         "production": production})


def exp2_characters(tables: dict, seed: int) -> pd.DataFrame:
    """The same for Exp 2's 12 lists. PCIbex showed the introductions in a random order
    per participant (main.js: randomize("character")); the model reads one seeded
    random order per list."""
    s = tables["exp2_stimuli"]
    production_line = dict(zip(tables["exp2_instructions"]["part"],
                               tables["exp2_instructions"]["text"]))["production_instruction"]
    parts = []
    for k, (group, block) in enumerate(s.groupby("group", sort=True)):
        order = np.random.default_rng([seed, k]).permutation(len(block))
        block = block.iloc[order]
        intro = [" ".join(t.split()) for t in block["introduction"].str.replace("<br>", " ")]
        parts.append(pd.DataFrame({
            "experiment": "2", "List": group, "position": range(1, len(block) + 1),
            "Name": block["name"].to_numpy(), "Pronoun": block["pronoun"].to_numpy(),
            "introduction": intro, "memory_question": block["memory_pronoun"].to_numpy(),
            "production": [f"{production_line}\n{sentence_beginning(p)}"
                           for p in block["production"]]}))
    return pd.concat(parts, ignore_index=True)


# --------------------------------------------------------------------------
# the shared contexts

def exp1_opening(tables: dict, experiment: str) -> str:
    return _texts(tables, experiment)["instructions_characters"]


def exp2_openings(tables: dict) -> dict[str, str]:
    """{list: the PSA and biographies with their instructions}, as main.js orders them."""
    instructions = dict(zip(tables["exp2_instructions"]["part"], tables["exp2_instructions"]["text"]))
    texts = tables["exp2_texts"].sort_values(["file", "block"]).groupby("file")["text"].apply(
        "\n".join).to_dict()
    out = {}
    for row in tables["exp2_training"].itertuples():
        out[row.group] = "\n\n".join([instructions["instructions_psa"], texts[row.psa],
                                      instructions["instructions_story"], texts[row.story1],
                                      texts[row.story2], instructions["instructions_character"]])
    return out


def filler_text(tables: dict, experiment: str) -> str:
    if experiment == "2":
        instructions = dict(zip(tables["exp2_instructions"]["part"],
                                tables["exp2_instructions"]["text"]))
        return instructions["instructions_math"] + "\n" + math_questions(tables)
    return _texts(tables, experiment)["math"]


def task_instructions(tables: dict, experiment: str) -> dict[str, str]:
    if experiment == "2":
        instructions = dict(zip(tables["exp2_instructions"]["part"],
                                tables["exp2_instructions"]["text"]))
        return {"memory": instructions["instructions_memory"],
                "production": instructions["instructions_production"]}
    texts = _texts(tables, experiment)
    return {"memory": texts["instructions_memory"], "production": texts["instructions_production"]}


def quartets(n: int = 12) -> list[list[int]]:
    """Positions (1-based) of the three mixed quartets of a 12-character list."""
    return [[k + 3 * j for j in range(4)] for k in range(1, 4)]


def context_groups(characters: pd.DataFrame, n_characters: int) -> list[pd.DataFrame]:
    """The characters that share one context, per list: all 12, a quartet, or one."""
    groups = []
    for _, block in characters.groupby("List", sort=False):
        block = block.sort_values("position")
        if n_characters == 12:
            groups.append(block)
        elif n_characters == 4:
            groups += [block[block["position"].isin(q)] for q in quartets()]
        elif n_characters == 1:
            groups += [block.iloc[[i]] for i in range(len(block))]
        else:
            raise ValueError(f"n_characters must be one of {N_CHARACTERS}, got {n_characters}")
    return groups


def build_prompts(tables: dict, experiment: str, characters: pd.DataFrame, *,
                  n_characters: int = 12, filler: bool = True) -> pd.DataFrame:
    """One row per character asked about: context (shared by its group), memory frame
    (ending in the slot for the answer) and production prefix."""
    openings = exp2_openings(tables) if experiment == "2" else None
    opening = None if experiment == "2" else exp1_opening(tables, experiment)
    tasks = task_instructions(tables, experiment)
    math = filler_text(tables, experiment)
    rows = []
    for group in context_groups(characters, n_characters):
        first = openings[group["List"].iloc[0]] if openings else opening
        pieces = [first, "\n".join(group["introduction"])]
        if filler:
            pieces.append(math)
        context = "\n\n".join(pieces)
        for c in group.itertuples():
            memory = "\n\n".join([context, tasks["memory"],
                                  "\n".join([c.memory_question, *OPTIONS, f"Answer: {SLOT}"])])
            production = "\n\n".join([context, tasks["production"], c.production])
            rows.append({"experiment": experiment, "List": c.List, "Name": c.Name,
                         "Pronoun": c.Pronoun, "position": c.position,
                         "n_characters": n_characters, "filler": filler,
                         "context_id": f"{experiment}|{c.List}|n{n_characters}|"
                                       f"{'filler' if filler else 'nofiller'}|"
                                       f"{'+'.join(group['Name'])}",
                         "memory_frame": memory, "production_prefix": production})
    out = pd.DataFrame(rows)
    out.insert(0, "prompt_id", [f"{c}|{n}" for c, n in zip(out["context_id"], out["Name"])])
    return out


EXPERIMENTS = ("1a", "1b", "2")
SWEEP_EXPERIMENT = "1a"


def all_prompts(tables: dict, seed: int, *, distractors: bool = True,
                experiments=EXPERIMENTS) -> pd.DataFrame:
    """Every prompt of the run: the faithful condition for each experiment, plus the
    distractor sweep (n = 1, 4, 12 x with and without filler) on Exp 1A's lists."""
    parts = []
    for experiment in [e for e in ("1a", "1b") if e in experiments]:
        characters = exp1_characters(tables, experiment)
        sweep = distractors and experiment == SWEEP_EXPERIMENT
        conditions = [(n, f) for n in N_CHARACTERS for f in (True, False)] if sweep \
            else [(12, True)]
        for n, f in conditions:
            parts.append(build_prompts(tables, experiment, characters, n_characters=n, filler=f))
    if "2" in experiments:
        parts.append(build_prompts(tables, "2", exp2_characters(tables, seed)))
    out = pd.concat(parts, ignore_index=True)
    out["faithful"] = (out["n_characters"] == 12) & out["filler"]
    return out
