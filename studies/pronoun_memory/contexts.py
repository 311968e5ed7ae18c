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
  normalised over the three). The options are listed in every one of their
  six orders (MEMORY_ORDER_DESIGN; models.option_orders) and the choice
  averaged over them: listed in one order, a model that reads the first line
  looks like a model that remembers he/him. The same frames with the question's
  name replaced by "N/A" (CONTENT_FREE) give the content-free choice for
  contextual calibration (a sensitivity);
* production: the task's instruction and the sentence beginning, its "..."
  (Exp 2: "…") replaced by a comma, and the next word " he" / " she" / " they"
  (models.logprob.continuation_logprobs; the three raw probabilities and the
  mass they cover are kept). The instruction's worked example ends "he made
  dinner."; the model reads it with he, she and they in turn
  (EXAMPLE_PRONOUNS) and the three are averaged, so that the example primes no
  pronoun (people saw "he"; that reading is kept as well).

"Answer:", the comma and the example's she/they are the only text this module adds; the pieces are
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
# the memory probe: each character alone, no math text. A model whose answer here is at
# chance does not use the character, so its accuracy elsewhere is not memory
PROBE = {"n_characters": 1, "filler": False}
# every order of the three options (6; "latin", --option-orders latin, is the 3 rotations).
# Counted for the whole study (benchmarks/results/pronoun_memory_orders.json): 146,632 token
# positions against 102,847 for the rotations and 69,800 for one order (the shared contexts
# run once; an order adds only the question's and options' tokens). The six are chosen for
# what they buy: the same set of orders whatever order the options start in (the rotations
# of he, she, they always put they after she), so the average cannot depend on it
MEMORY_ORDER_DESIGN = "all"
CONTENT_FREE = "N/A"
EXAMPLE_PRONOUNS = ("he", "she", "they")
EXAMPLE_ENDING = re.compile(r"\bhe( made dinner\.)")


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


def memory_orders(design: str = MEMORY_ORDER_DESIGN) -> list[tuple]:
    from models.option_orders import option_orders

    return option_orders(OPTIONS, design)


def memory_frame(head: str, question: str, order=OPTIONS) -> str:
    """The memory frame: everything read before the question (`head`: context and the
    task's instruction), the question, the options in `order`, then "Answer:" and the
    slot."""
    return "\n\n".join([head, "\n".join([question, *order, f"Answer: {SLOT}"])])


# the two forms the questions take ("What pronouns does Daniel use?", "What are Brian's
# pronouns?"); the name is read off the question (one of Exp 1A's questions names another
# character than its row, as people saw it)
QUESTIONS = (re.compile(r"^(What pronouns does )(.+?)( use\?)$"),
             re.compile(r"^(What are )(.+?)('s pronouns\?)$"))


def content_free_question(question: str) -> str:
    """The question with its character's name replaced by "N/A" (Zhao et al. 2021's
    content-free input): what the frame alone pulls towards."""
    for pattern in QUESTIONS:
        if pattern.match(question.strip()):
            return pattern.sub(lambda m: m.group(1) + CONTENT_FREE + m.group(3),
                               question.strip())
    raise ValueError("expected a memory question \"What pronouns does X use?\" or \"What "
                     f"are X's pronouns?\"; found {question!r}")


def example_instructions(instruction: str) -> dict[str, str]:
    """{pronoun: the production instruction with its worked example ending "<pronoun>
    made dinner."}, for each of EXAMPLE_PRONOUNS ("he" is the text people read)."""
    if len(EXAMPLE_ENDING.findall(instruction)) != 1:
        raise ValueError("the production instruction's worked example should end "
                         f"\"he made dinner.\" once; found: {instruction!r}")
    return {p: EXAMPLE_ENDING.sub(lambda m, p=p: p + m.group(1), instruction)
            for p in EXAMPLE_PRONOUNS}


def build_prompts(tables: dict, experiment: str, characters: pd.DataFrame, *,
                  n_characters: int = 12, filler: bool = True) -> pd.DataFrame:
    """One row per character asked about: context (shared by its group), memory frame
    (ending in the slot for the answer; the options in their listed order), what the
    frame is made of (memory_head, memory_question, content_free_question, from which
    model_side builds every order), the production prefix as people read it and one per
    worked-example pronoun (production_prefix_he, _she, _they)."""
    openings = exp2_openings(tables) if experiment == "2" else None
    opening = None if experiment == "2" else exp1_opening(tables, experiment)
    tasks = task_instructions(tables, experiment)
    examples = example_instructions(tasks["production"])
    math = filler_text(tables, experiment)
    rows = []
    for group in context_groups(characters, n_characters):
        first = openings[group["List"].iloc[0]] if openings else opening
        pieces = [first, "\n".join(group["introduction"])]
        if filler:
            pieces.append(math)
        context = "\n\n".join(pieces)
        for c in group.itertuples():
            head = "\n\n".join([context, tasks["memory"]])
            memory = memory_frame(head, c.memory_question)
            production = "\n\n".join([context, tasks["production"], c.production])
            by_example = {f"production_prefix_{p}": "\n\n".join([context, text, c.production])
                          for p, text in examples.items()}
            rows.append({"experiment": experiment, "List": c.List, "Name": c.Name,
                         "Pronoun": c.Pronoun, "position": c.position,
                         "n_characters": n_characters, "filler": filler,
                         "context_id": f"{experiment}|{c.List}|n{n_characters}|"
                                       f"{'filler' if filler else 'nofiller'}|"
                                       f"{'+'.join(group['Name'])}",
                         "memory_frame": memory, "memory_head": head,
                         "memory_question": c.memory_question,
                         "content_free_question": content_free_question(c.memory_question),
                         "production_prefix": production, **by_example})
    out = pd.DataFrame(rows)
    out.insert(0, "prompt_id", [f"{c}|{n}" for c, n in zip(out["context_id"], out["Name"])])
    return out


EXPERIMENTS = ("1a", "1b", "2")
SWEEP_EXPERIMENT = "1a"


def all_prompts(tables: dict, seed: int, *, distractors: bool = True,
                experiments=EXPERIMENTS, probe: bool = True) -> pd.DataFrame:
    """Every prompt of the run: the faithful condition for each experiment, plus the
    distractor sweep (n = 1, 4, 12 x with and without filler) on Exp 1A's lists. With
    `probe`, Exp 1A's characters alone without the math text (PROBE) are always scored,
    whatever the experiments and the sweep: without them no memory verdict can be drawn
    (`probe` marks those rows)."""
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
    out["sweep"] = (out["experiment"] == SWEEP_EXPERIMENT) & bool(distractors) & \
        (SWEEP_EXPERIMENT in experiments)
    out["probe"] = (out["experiment"] == SWEEP_EXPERIMENT) & \
        (out["n_characters"] == PROBE["n_characters"]) & (out["filler"] == PROBE["filler"])
    if probe and not out["probe"].any():
        extra = build_prompts(tables, SWEEP_EXPERIMENT, exp1_characters(tables, SWEEP_EXPERIMENT),
                              **PROBE).assign(faithful=False, sweep=False, probe=True)
        out = pd.concat([out, extra], ignore_index=True)
    return out
