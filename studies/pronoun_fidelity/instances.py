"""RUFF instances (Gautam et al. 2024, Appendix B): counted, streamed, sampled, rendered.

An instance is an introduction, 0-5 distractor sentences and a task sentence:

1. the introduction is any explicit context template of the task's case
   (5 positive + 5 negative), filled with the occupation and the true pronoun;
2. the first distractor is an explicit template of the *other* polarity, but
   not the one with the introduction's index (its matching pair), filled with
   the participant and one of the 3 other pronoun sets;
3. later distractors are implicit templates (pronoun only, same distractor
   pronoun and same polarity as the first distractor), drawn without
   replacement from the indices left after removing the first distractor's
   index and adding back the introduction's (the implicit twin of the
   introduction's matching pair is allowed), i.e. from all indices but the
   first distractor's.

An instance is identified by its choices (`Instance`), never stored as text:
`iter_instances` streams the full set (5.6 million for 0-5 distractors) one
at a time, `count_instances` counts it without building it, and
`sample_instances` draws the evaluation's balanced sample.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import permutations
from typing import NamedTuple

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError

PRONOUN_SETS: dict[str, dict[str, str]] = {
    "he": {"nominative": "he", "accusative": "him", "possessive": "his"},
    "she": {"nominative": "she", "accusative": "her", "possessive": "her"},
    "they": {"nominative": "they", "accusative": "them", "possessive": "their"},
    "xe": {"nominative": "xe", "accusative": "xem", "possessive": "xyr"},
}
PRONOUN_ORDER = list(PRONOUN_SETS)
CASES = ("nominative", "accusative", "possessive")
POLARITIES = ("positive", "negative")
OTHER_POLARITY = {"positive": "negative", "negative": "positive"}
MAX_DISTRACTORS = 5
ENTITY_SLOT = "$OCCUPATION/PARTICIPANT"
BLANK = "[BLANK]"  # models.forced_choice's default slot


class Instance(NamedTuple):
    """The choices that make one instance (indices are `template_index` values)."""

    occupation: str
    case: str
    pronoun_set: str
    intro_polarity: str
    intro_index: int
    distractor_set: str | None = None
    first_distractor_index: int | None = None
    implicit_indices: tuple[int, ...] = ()

    @property
    def n_distractors(self) -> int:
        return 0 if self.distractor_set is None else 1 + len(self.implicit_indices)

    @property
    def instance_id(self) -> str:
        base = (f"{self.occupation}.{self.case}.{self.pronoun_set}."
                f"{self.intro_polarity}{self.intro_index}")
        if self.distractor_set is None:
            return base
        implicit = "".join(str(i) for i in self.implicit_indices)
        return f"{base}.{self.distractor_set}.e{self.first_distractor_index}.i{implicit}"

    @property
    def context_template(self) -> str:
        """The introduction's context template, as the loader names it."""
        return f"{self.case}.{self.intro_polarity}.{self.intro_index}"


def indices_by_case(context: pd.DataFrame) -> dict[str, dict[str, list[int]]]:
    """{case: {polarity: sorted template indices}}, looked up once per call, not per row."""
    out: dict[str, dict[str, list[int]]] = {}
    for case, rows in context.groupby("case"):
        out[case] = {p: sorted(rows.loc[rows["polarity"] == p, "template_index"].astype(int))
                     for p in POLARITIES}
    return out


def require_distractor_count(n_distractors: int) -> None:
    if not 0 <= n_distractors <= MAX_DISTRACTORS:
        raise DataValidationError("unsupported number of distractors", source="n_distractors",
                                  expected=f"0 to {MAX_DISTRACTORS}", found=str(n_distractors))


def count_instances(task: pd.DataFrame, context: pd.DataFrame, n_distractors: int) -> int:
    """Number of unique instances with `n_distractors`, counted without building any.

    Per task template and true pronoun set: one instance per introduction;
    with distractors, times the 3 other pronoun sets, times the first
    distractor's choices, times the ordered draws of n-1 implicit indices
    from the m-1 indices of the distractor polarity left (m!/(m-n)!).
    """
    require_distractor_count(n_distractors)
    n_sets = len(PRONOUN_SETS)
    by_case = indices_by_case(context)
    total = 0
    for case in task["case"]:
        indices = by_case[case]
        for polarity in POLARITIES:
            other = indices[OTHER_POLARITY[polarity]]
            for intro_index in indices[polarity]:
                if n_distractors == 0:
                    total += n_sets
                    continue
                firsts = [i for i in other if i != intro_index]
                total += (n_sets * (n_sets - 1) * len(firsts)
                          * math.perm(len(other) - 1, n_distractors - 1))
    return total


def instance_counts(task: pd.DataFrame, context: pd.DataFrame,
                    distractors=range(MAX_DISTRACTORS + 1)) -> pd.DataFrame:
    """The table `instance_counts`: n_distractors, n_instances."""
    return pd.DataFrame({"n_distractors": list(distractors),
                         "n_instances": [count_instances(task, context, n) for n in distractors]})


def iter_instances(task: pd.DataFrame, context: pd.DataFrame,
                   n_distractors: int) -> Iterator[Instance]:
    """Every unique instance with `n_distractors`, one at a time (never all in memory)."""
    require_distractor_count(n_distractors)
    by_case = indices_by_case(context)
    for occupation, case in zip(task["occupation"], task["case"]):
        indices = by_case[case]
        for pronoun_set in PRONOUN_ORDER:
            for polarity in POLARITIES:
                other = indices[OTHER_POLARITY[polarity]]
                for intro_index in indices[polarity]:
                    if n_distractors == 0:
                        yield Instance(occupation, case, pronoun_set, polarity, intro_index)
                        continue
                    for distractor_set in PRONOUN_ORDER:
                        if distractor_set == pronoun_set:
                            continue
                        for first in other:
                            if first == intro_index:
                                continue
                            pool = [i for i in other if i != first]
                            for implicit in permutations(pool, n_distractors - 1):
                                yield Instance(occupation, case, pronoun_set, polarity,
                                               intro_index, distractor_set, first, implicit)


# --- rendering -------------------------------------------------------------------

def fill_template(template: str, *, case: str, pronoun_set: str, entity: str | None = None) -> str:
    """Put the entity and the pronoun (in the template's case) into a context template.

    A pronoun that starts a sentence (implicit templates) is capitalised.
    """
    slot = {"nominative": "$NOM_PRONOUN", "accusative": "$ACC_PRONOUN",
            "possessive": "$POSS_PRONOUN"}[case]
    text = template.replace(slot, PRONOUN_SETS[pronoun_set][case])
    if entity is not None:
        text = text.replace(ENTITY_SLOT, entity)
    return text[:1].upper() + text[1:]


class Templates:
    """Lookups from the loaded tables, built once and used to render many instances."""

    def __init__(self, task: pd.DataFrame, context: pd.DataFrame):
        self.task = {(r.occupation, r.case): r for r in task.itertuples(index=False)}
        self.context = {(r.case, r.polarity, int(r.template_index)): r
                        for r in context.itertuples(index=False)}

    def frame(self, instance: Instance) -> str:
        """Introduction, distractors and the task sentence with its pronoun slot as [BLANK]."""
        task = self.task[(instance.occupation, instance.case)]
        case = instance.case
        intro = self.context[(case, instance.intro_polarity, instance.intro_index)]
        sentences = [fill_template(intro.explicit_template, case=case,
                                   pronoun_set=instance.pronoun_set, entity=task.occupation)]
        if instance.distractor_set is not None:
            polarity = OTHER_POLARITY[instance.intro_polarity]
            first = self.context[(case, polarity, instance.first_distractor_index)]
            sentences.append(fill_template(first.explicit_template, case=case,
                                           pronoun_set=instance.distractor_set,
                                           entity=task.participant))
            for index in instance.implicit_indices:
                implicit = self.context[(case, polarity, index)].implicit_template
                sentences.append(fill_template(implicit, case=case,
                                               pronoun_set=instance.distractor_set))
        sentences.append(task_frame(task.sentence, task.pronoun_type))
        return " ".join(sentences)


def task_frame(sentence: str, slot: str) -> str:
    """The task sentence with its pronoun slot as [BLANK] (never sentence-initial in RUFF)."""
    if sentence.startswith(slot):
        raise DataValidationError("the task's pronoun slot starts the sentence, so the forms "
                                  "would need capitals", source="ruff2024 task",
                                  column="sentence", expected="a slot after the first word",
                                  found=repr(sentence))
    return sentence.replace(slot, BLANK)


# --- the balanced sample ---------------------------------------------------------

# cells per balanced block: case x pronoun set x distractor pronoun (see _balanced_cells)
BLOCK_SIZE = len(CASES) * len(PRONOUN_ORDER) * (len(PRONOUN_ORDER) - 1)

def _balanced_cells(task: pd.DataFrame, n: int,
                    rng: np.random.Generator) -> list[tuple[str, str, str, int]]:
    """The first `n` cells (occupation, case, pronoun set, 4th factor), balanced.

    The 4th factor is the distractor set (its index among the 3 other sets) or,
    without distractors, a replicate 0-2. Cells come in blocks of 36 (case x
    pronoun set x 4th factor, each once), and within a block every occupation
    at most once (with at least 36 occupations); the blocks together hold every
    cell exactly once (60 x 36 = 2,160 cells for RUFF's 60 occupations). So any
    multiple of 36 is exactly balanced over cases, pronoun sets and
    distractor pronouns, and all cells also over occupations.
    """
    occupations = list(dict.fromkeys(task["occupation"]))
    groups = [(case, pronoun_set, k) for case in CASES for pronoun_set in PRONOUN_ORDER
              for k in range(len(PRONOUN_ORDER) - 1)]
    n_cells = len(occupations) * len(groups)
    if not 1 <= n <= n_cells:
        raise DataValidationError("instances per seed out of range", source="--per-seed",
                                  expected=f"1 to {n_cells} (every occupation x case x pronoun "
                                           f"set x distractor pronoun once)", found=str(n))
    order = rng.permutation(len(occupations))
    # In block r, group g gets occupation order[(r + shift_g) % n_occupations]: over
    # the blocks every group meets every occupation once, and with distinct shifts
    # (possible from 36 occupations up) no occupation repeats within a block.
    shifts = rng.permutation(np.resize(np.arange(len(occupations)), len(groups)))
    cells = []
    for block in range(len(occupations)):
        for g in rng.permutation(len(groups)):
            case, pronoun_set, k = groups[g]
            occupation = occupations[order[(block + shifts[g]) % len(occupations)]]
            cells.append((occupation, case, pronoun_set, k))
    return cells[:n]


def sample_instances(task: pd.DataFrame, context: pd.DataFrame, n_distractors: int,
                     n: int, seed) -> list[Instance]:
    """`n` distinct instances with `n_distractors`, balanced (see `_balanced_cells`)."""
    return [instance for _, instance in sample_cells(task, context, n_distractors, n, seed)]


def sample_same_cells(task: pd.DataFrame, context: pd.DataFrame, n_distractors: int, n: int,
                      seeds: list) -> list[list[Instance]]:
    """Per seed, its full-design instances in the same `n` cells: those of the first seed's
    first `n` cells.

    A stratified sample of the full design that keeps what makes the seeds comparable
    there: every seed of the full design holds every cell (occupation x case x pronoun set x
    distractor pronoun) once, so seeds differ only in the instances drawn within the cells.
    Samples of each seed's own first `n` cells hold different occupations per seed, and the
    seeds' accuracies then also vary with the occupations (measured: Welch's intervals at 50
    of 60 blocks were about 1.4-1.6 times as wide as the full design's; issue 41). Within a cell each
    seed keeps the instance its full-design draw gives it, so the sample is nested in the
    full design, and any multiple of 36 stays balanced as `_balanced_cells` says.
    """
    full = len(dict.fromkeys(task["occupation"])) * BLOCK_SIZE
    cells = [cell for cell, _ in sample_cells(task, context, n_distractors, n, seeds[0])]
    drawn = [dict(sample_cells(task, context, n_distractors, full, seed)) for seed in seeds]
    return [[by_cell[cell] for cell in cells] for by_cell in drawn]


def sample_cells(task: pd.DataFrame, context: pd.DataFrame, n_distractors: int,
                 n: int, seed) -> list[tuple[tuple, Instance]]:
    """(cell, instance) for `n` distinct instances with `n_distractors`, balanced (see
    `_balanced_cells`): a seed's first `n` cells and their instances are the same for any n.

    Within a cell the remaining choices (introduction polarity and index,
    first distractor, ordered implicit indices) are drawn uniformly, so every
    unique instance of the cell is equally likely. Without distractors the 3
    replicates of an (occupation, case, pronoun set) get 3 different
    introductions.
    """
    require_distractor_count(n_distractors)
    rng = np.random.default_rng(seed)
    cells = _balanced_cells(task, n, rng)
    by_case = indices_by_case(context)
    no_distractor_intros: dict[tuple, np.ndarray] = {}
    out = []
    for occupation, case, pronoun_set, k in cells:
        indices = by_case[case]
        intros = [(p, i) for p in POLARITIES for i in indices[p]]
        if n_distractors == 0:
            key = (occupation, case, pronoun_set)
            if key not in no_distractor_intros:
                no_distractor_intros[key] = rng.permutation(len(intros))
            polarity, intro_index = intros[no_distractor_intros[key][k]]
            out.append(((occupation, case, pronoun_set, k),
                        Instance(occupation, case, pronoun_set, polarity, intro_index)))
            continue
        polarity, intro_index = intros[rng.integers(len(intros))]
        other = indices[OTHER_POLARITY[polarity]]
        distractor_set = [s for s in PRONOUN_ORDER if s != pronoun_set][k]
        first = rng.choice([i for i in other if i != intro_index])
        pool = [i for i in other if i != first]
        implicit = tuple(int(i) for i in rng.permutation(pool)[:n_distractors - 1])
        out.append(((occupation, case, pronoun_set, k),
                    Instance(occupation, case, pronoun_set, polarity, intro_index,
                             distractor_set, int(first), implicit)))
    return out


def instances_frame(instances: list[Instance], templates: Templates, **constants) -> pd.DataFrame:
    """One row per instance: its choices, id, context template and text frame."""
    rows = []
    for inst in instances:
        rows.append({**constants, "instance": inst.instance_id,
                     "n_distractors": inst.n_distractors, "occupation": inst.occupation,
                     "participant": templates.task[(inst.occupation, inst.case)].participant,
                     "case": inst.case, "pronoun_set": inst.pronoun_set,
                     "distractor_set": inst.distractor_set,
                     "context_template": inst.context_template, "frame": templates.frame(inst)})
    return pd.DataFrame(rows)
