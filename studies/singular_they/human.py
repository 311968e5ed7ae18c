"""Loading people's singular-*they* judgements (`--human FILE`).

Two layouts are accepted, both long (one row per participant x item):

1. gbstats' own (CSV or TSV), columns
   - `participant`: participant id;
   - `item`: stimulus id, as in `data/singular_they/stimuli.tsv` (or your `--stimuli`);
   - `rating`: the naturalness rating (any numeric scale; higher = more natural);
   - `stage`: linguistic-stage cluster, one of non-innovator, innovator, super-innovator;
   - `nb_acceptance`: nonbinary acceptance score, 0-5 (may be empty for
     participants who skipped the survey);
   - `familiarity` (optional): familiarity score.
2. The Camilliere et al. (2021) file as Watson et al. (2023) describe it:
   space-separated `camilliere_data.txt` with columns `ID, exp, cond, itm,
   rating, clust, nBAcc, gId`; practice trials have `exp == "practice"`;
   `cond` uses the original condition codes and `itm` the frame (or control)
   number; `clust` 1/2/3 = innovator / non-innovator / super-innovator (the
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
from studies.singular_they.stimuli import CAMILLIERE_CONDITIONS, stimulus_id

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


def _from_camilliere(df: pd.DataFrame, source: str, log: ExclusionLog) -> pd.DataFrame:
    require_columns(df, ["ID", "exp", "cond", "itm", "rating", "clust", "nBAcc"], source=source)
    df = df.reset_index(drop=True)
    df["_row"] = df.index + 2
    df = log.select(df, df["exp"].astype(str) == "practice",
                    "practice trials (exp == 'practice')", unit="trials", stage=STAGE)
    df = validate_frame(df, source=source, required=["ID", "cond"], numeric=["itm", "clust"],
                        allowed={"cond": list(CAMILLIERE_CONDITIONS),
                                 "clust": list(CAMILLIERE_CLUSTERS)},
                        row_offset=lambda pos: int(df["_row"].iloc[pos]))
    types = df["cond"].map(CAMILLIERE_CONDITIONS)
    prefix = types.map(lambda t: "i" if t == "inanimate" else "f")
    ids = [stimulus_id(f"{p}{int(n):02d}", t) for p, n, t in zip(prefix, df["itm"], types)]
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
    if "ID" in df.columns and "cond" in df.columns:
        df = _from_camilliere(df, source, log)
    else:
        require_columns(df, ["participant", "item", "rating", "stage", "nb_acceptance"],
                        source=source)
        df = df.reset_index(drop=True)
        df["_row"] = df.index + 2
        if "familiarity" not in df:
            df["familiarity"] = pd.NA
    row_of = lambda pos: int(df["_row"].iloc[pos])  # noqa: E731  (file line of a position)
    df = validate_frame(df, source=source, numeric_optional=["rating", "nb_acceptance", "familiarity"],
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
                                  row=row_of(pos), column="stage",
                                  expected="one stage per participant",
                                  found=str(sorted(df.loc[df['participant'] == who, 'stage'].unique())))
    df = log.drop(df, df["rating"].isna(), "missing rating", unit="trials", stage=STAGE)
    return add_nb_groups(df.drop(columns="_row").reset_index(drop=True)), log


def add_nb_groups(trials: pd.DataFrame) -> pd.DataFrame:
    """Add `nb_group` (low / medium / high nonbinary acceptance; empty without a score)."""
    return trials.assign(nb_group=trials["nb_acceptance"].map(nb_acceptance_group))
