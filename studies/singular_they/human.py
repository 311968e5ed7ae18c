"""Loading people's singular-*they* judgements (`--human FILE`).

Two layouts are accepted, both long (one row per participant x item):

1. gbstats' own (CSV or TSV), columns
   - `participant`: participant id;
   - `item`: stimulus id of the stimuli in use: `<cond>-<itm>` (e.g. `gfamily-01`)
     for the published stimuli (the default), as in `data/singular_they/stimuli.tsv`
     for `--stimuli gbstats`, or your `--stimuli` file's;
   - `rating`: the naturalness rating (any numeric scale; higher = more natural);
   - `stage`: linguistic-stage cluster, one of non-innovator, innovator, super-innovator;
   - `nb_acceptance`: nonbinary acceptance score, 0-5 (may be empty for
     participants who skipped the survey);
   - `familiarity` (optional): familiarity score.
2. The Camilliere et al. (2021) file as Watson et al. (2023) describe it:
   space-separated `camilliere_data.txt` with columns `ID, exp, cond, itm,
   rating, clust, nBAcc, gId`; practice trials have `exp == "practice"` (in any case:
   "Practice" too);
   `cond` uses the original condition codes and `itm` the item number, and the
   pair names one of the published stimuli (`--stimuli camilliere2021`, the
   default): a pair that names none is an error naming the row; `clust` 1/2/3 = innovator / non-innovator / super-innovator (the
   coding in Watson et al.'s analysis code).

Practice trials and rows with a missing rating are excluded and counted.
Anything else unexpected (missing column, unknown stage or condition, unknown
item, duplicated trial, a participant with two stages) is an error naming the
file, row and column.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from gbstats.data.validate import read_table, require_columns, sniff_separator, validate_frame
from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog
from studies.singular_they.stimuli import CAMILLIERE_CONDITIONS

STAGES = ["non-innovator", "innovator", "super-innovator"]
CAMILLIERE_CLUSTERS = {1: "innovator", 2: "non-innovator", 3: "super-innovator"}
NB_GROUPS = [("low", 0, 0), ("medium", 1, 2), ("high", 3, 5)]
STAGE = "human data"


def nb_acceptance_group(score: float) -> str | None:
    """Nonbinary acceptance 0 -> low, 1-2 -> medium, 3-5 -> high (Watson et al. 2023)."""
    if pd.isna(score):
        return None
    for name, low, high in NB_GROUPS:
        if low <= score <= high:
            return name
    raise ValueError(f"nonbinary acceptance score {score} outside 0-5")


def camilliere_keys(stimuli: pd.DataFrame, source: str) -> dict[tuple[str, int], str]:
    """(cond, itm) -> stimulus id, from stimuli that carry Camilliere et al.'s keys.

    The rating file's keys name the published sentences; stimuli without them
    (gbstats' own frames, a user's file) hold other sentences, and mapping the
    keys onto those would correlate the model with ratings of sentences it
    never scored.
    """
    if not {"cond", "itm"} <= set(stimuli.columns):
        raise DataValidationError(
            "the Camilliere et al. rating layout is keyed by (cond, itm) of the published "
            "stimuli, but the stimuli in use have no such keys", source=source, column="cond",
            expected="--stimuli camilliere2021 (the default)",
            found=f"stimuli with columns {', '.join(map(str, stimuli.columns))}")
    return {(str(c), int(i)): item for c, i, item in
            zip(stimuli["cond"], stimuli["itm"], stimuli["item"])}


def _from_camilliere(df: pd.DataFrame, source: str, log: ExclusionLog,
                     stimuli: pd.DataFrame) -> pd.DataFrame:
    require_columns(df, ["ID", "exp", "cond", "itm", "rating", "clust", "nBAcc"], source=source)
    keys = camilliere_keys(stimuli, source)
    df = df.reset_index(drop=True)
    df["_row"] = df.index + 2
    # "practice", "Practice", " PRACTICE ": spreadsheets and other exports vary the case
    practice = df["exp"].astype(str).str.strip().str.lower() == "practice"
    df = log.select(df, practice, "practice trials (exp == 'practice')",
                    unit="trials", stage=STAGE)
    df = validate_frame(df, source=source, ids=["ID"], required=["cond"], numeric=["itm", "clust"],
                        allowed={"cond": list(CAMILLIERE_CONDITIONS),
                                 "clust": list(CAMILLIERE_CLUSTERS)},
                        row_offset=lambda pos: int(df["_row"].iloc[pos]))
    ids = []
    for row, cond, itm in zip(df["_row"], df["cond"].astype(str), df["itm"]):
        item = keys.get((cond, int(itm))) if float(itm).is_integer() else None
        if item is None:
            raise DataValidationError(
                "a rating of a stimulus that is not in the stimuli", source=source,
                row=int(row), column="itm", expected="a (cond, itm) of the published stimuli",
                found=f"cond={cond!r} itm={itm:g}")
        ids.append(item)
    out = pd.DataFrame({"participant": df["ID"].astype(str), "item": ids,
                        "rating": df["rating"], "stage": df["clust"].astype(int).map(CAMILLIERE_CLUSTERS),
                        "nb_acceptance": df["nBAcc"],
                        "familiarity": df["gId"] if "gId" in df else pd.NA,
                        "_row": df["_row"]})
    return out


def load_human(path: str | Path, stimuli: pd.DataFrame) -> tuple[pd.DataFrame, ExclusionLog]:
    """Read, validate and normalise a human-judgement file; returns (trials, exclusions)."""
    path = Path(path)
    source = str(path)
    log = ExclusionLog()
    df = read_table(path, sep=r"\s+" if sniff_separator(path) == " " else sniff_separator(path),
                    source=source, dtype={"participant": str, "ID": str})
    camilliere = "ID" in df.columns and "cond" in df.columns
    if camilliere:
        df = _from_camilliere(df, source, log, stimuli)
    else:
        require_columns(df, ["participant", "item", "rating", "stage", "nb_acceptance"],
                        source=source)
        df = df.reset_index(drop=True)
        df["_row"] = df.index + 2
        if "familiarity" not in df:
            df["familiarity"] = pd.NA
    row_of = lambda pos: int(df["_row"].iloc[pos])  # noqa: E731  (file line of a position)
    df = validate_frame(df, source=source, ids=["participant", "item"],
                        numeric_optional=["rating", "nb_acceptance", "familiarity"],
                        allowed={"stage": STAGES, "item": list(stimuli["item"])},
                        unique=["participant", "item"], row_offset=row_of)
    bad_nb = df["nb_acceptance"].notna() & ~df["nb_acceptance"].isin([0, 1, 2, 3, 4, 5])
    if bad_nb.any():
        pos = int(bad_nb.to_numpy().nonzero()[0][0])
        raise DataValidationError("nonbinary acceptance must be an integer 0-5", source=source,
                                  row=row_of(pos), column="nb_acceptance",
                                  found=repr(df["nb_acceptance"].iloc[pos]))
    stages = df.groupby("participant")["stage"].nunique()
    if (stages > 1).any():
        who = stages[stages > 1].index[0]
        pos = int((df["participant"] == who).to_numpy().nonzero()[0][0])
        raise DataValidationError(f"participant {who!r} has more than one stage", source=source,
                                  row=row_of(pos), column="clust" if camilliere else "stage",
                                  expected="one stage per participant",
                                  found=str(sorted(df.loc[df['participant'] == who, 'stage'].unique())))
    for column in ("nb_acceptance", "familiarity"):
        require_one_value_per_participant(df, column, source, row_of,
                                          shown=CAMILLIERE_NAMES[column] if camilliere else column)
    df = log.drop(df, df["rating"].isna(), "missing rating", unit="trials", stage=STAGE)
    return add_nb_groups(df.drop(columns="_row").reset_index(drop=True)), log


# The Camilliere layout's names of the columns load_human renames.
CAMILLIERE_NAMES = {"nb_acceptance": "nBAcc", "familiarity": "gId", "stage": "clust"}


def require_one_value_per_participant(df: pd.DataFrame, column: str, source: str, row_of,
                                      shown: str) -> None:
    """A survey score is a property of the participant: two different values on one
    participant's rows are an error naming them (the analyses take one value per person,
    and taking the first would move the results silently). Blank rows beside a value are
    allowed (the value is used)."""
    values = df[["participant", column]].dropna()
    counts = values.groupby("participant")[column].nunique()
    if not (counts > 1).any():
        return
    who = counts[counts > 1].index[0]
    rows = values[values["participant"] == who]
    first = rows[column].iloc[0]
    other = rows[rows[column] != first].index[0]
    positions = [int(df.index.get_loc(rows.index[0])), int(df.index.get_loc(other))]
    raise DataValidationError(
        f"participant {who!r} has different {shown} values on different rows (rows "
        f"{row_of(positions[0])} and {row_of(positions[1])}: {first:g} and "
        f"{rows.loc[other, column]:g})", source=source, row=row_of(positions[1]), column=shown,
        expected=f"one {shown} value per participant (the same on each of their rows, or "
                 "blank)",
        found=f"{counts[who]} different values: {sorted(rows[column].unique().tolist())}")


def require_comparable_stages(trials: pd.DataFrame, source: str) -> None:
    """The study compares linguistic stages: at least two, each with at least two people
    (one person's item means have no reliability, and a test of one person is no test).
    An error names the file and the count per stage."""
    people = trials.groupby("stage")["participant"].nunique().reindex(STAGES, fill_value=0)
    present = people[people > 0]
    if len(present) >= 2 and (present >= 2).all():
        return
    found = ", ".join(f"{stage}: {n}" for stage, n in people.items())
    raise DataValidationError(
        "too few participants per linguistic stage to compare the stages", source=source,
        column="stage",
        expected="at least two stages with at least two participants each (a stage of one "
                 "person has no reliability and no test); add participants, or leave out the "
                 "rows of a stage with one person",
        found=f"participants per stage: {found}")


def usable_nb_groups(trials: pd.DataFrame, log: ExclusionLog) -> pd.DataFrame:
    """Participants alone in their nonbinary-acceptance group are left out of that grouping
    (their nb_group is blanked), counted: one person's reliability is undefined."""
    sizes = trials.groupby("nb_group")["participant"].nunique()
    alone = trials["nb_group"].isin(sizes[sizes < 2].index)
    log.record("participants alone in their nonbinary-acceptance group (left out of the "
               "nb_group grouping only: one person's item means have no reliability)",
               trials.loc[alone, "participant"].nunique(), unit="participants",
               stage="alignment")
    return trials.assign(nb_group=trials["nb_group"].where(~alone))


def count_unrated(trials: pd.DataFrame, stimuli: pd.DataFrame, log: ExclusionLog) -> int:
    """Record how many stimuli nobody rated (they stay in the model-side analyses)."""
    n = int((~stimuli["item"].isin(set(trials["item"]))).sum())
    log.record("stimuli with no rating (left out of every human-side analysis)", n,
               unit="stimuli", stage=STAGE)
    return n


def add_nb_groups(trials: pd.DataFrame) -> pd.DataFrame:
    """Add `nb_group` (low / medium / high nonbinary acceptance; empty without a score)."""
    return trials.assign(nb_group=trials["nb_acceptance"].map(nb_acceptance_group))
