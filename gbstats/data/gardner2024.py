"""Loader for gardner2024: pronoun choice and memory after first, last and full names.

Gardner & Brown-Schmidt (2024, Glossa Psycholinguistics, "Biased inferences
about gender from names") published per-trial data for four experiments
(`exp{1..4}_data.csv`, codebooks `exp*_data_about.txt`) and the name norming
that produced each first name's gender rating (`exp0_*`):

* Exp 1 and 3: sentence continuation (production) after a story about a named
  character; each response is coded `He` / `She` / `Other`; Exp 1 also codes
  the kind of Other (`OtherType`, including "singular they").
* Exp 2 and 4: memory; `Male` / `Female` / `Other` recalled.

The tables keep the authors' column names (`SubjID`, `NameShown` in Exp 1-2,
`Name` in Exp 3-4, `Condition`, `GenderRating`, ...) because studies join on
the authors' keys; every table gains `experiment` and an `Item` column (the
name as shown, the authors' random-effect grouping). The published data are
already the analysed data: the authors' main analyses exclude nothing, and
neither does this loader. The checks below make sure that stays true: each
trial has exactly one response coded, the gender rating is present exactly
where a first name was shown (Exp 1-2 last-name trials have none), conditions
are first / full / last.

The stimuli come from the `.xlsx` workbooks (read with openpyxl):

* `stimuli_exp1`: one row per frame x list x name shown (frames carry `X` for
  the name; a cell `X` means the list did not use that frame);
* `stimuli_exp3`: one row per condition x list x name (the whole story with
  the name filled in and the production cue).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.data.registry import LoadedDataset
from gbstats.data.validate import check_output_schema, read_table, validate_frame
from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog

CONDITIONS = ("first", "full", "last")
RESPONSES = {1: ("He", "She", "Other"), 2: ("Male", "Female", "Other"),
             3: ("He", "She", "Other"), 4: ("Male", "Female", "Other")}
ITEM_COLUMN = {1: "NameShown", 2: "NameShown", 3: "Name", 4: "Name"}
# Exp 1-2 last-name trials show no first name, so they have no rating; in Exp
# 3-4 every story first shows the full name, so every trial has one.
RATING_MISSING_IN_LAST = {1: True, 2: True, 3: False, 4: False}
EXTRA_COLUMNS = {1: ["NameFirst", "NameLast", "OtherType", "Response"],
                 2: ["NameFirst", "NameLast"],
                 3: ["Prompt", "Response", "Likeable", "Accomplished", "Important"],
                 4: ["Prompt", "Likeable", "Accomplished", "Important"]}
OTHER_TYPES = ("", "no subject", "other subject", "repeat name", "singular they")
# exp3-4_stimuli.xlsx spells the conditions out; the data files use these labels
XLSX_CONDITIONS = {"First Name": "first", "Full Name": "full", "LastName": "last"}


def trials_schema(experiment: int):
    import pandera.pandas as pa

    binary = pa.Check.isin([0, 1])
    cols = {
        "experiment": pa.Column(int, pa.Check.eq(experiment)),
        "SubjID": pa.Column(str, nullable=False),
        "Item": pa.Column(str, nullable=False),
        "Condition": pa.Column(str, pa.Check.isin(CONDITIONS)),
        "List": pa.Column(str),
        "GenderRating": pa.Column(float, pa.Check.in_range(1, 7), nullable=True),
        "SubjGenderMale": pa.Column(float, pa.Check.isin([0.0, 1.0]), nullable=True),
    }
    for r in RESPONSES[experiment]:
        cols[r] = pa.Column(int, binary)
    return pa.DataFrameSchema(cols, name=f"gardner2024.exp{experiment}", strict=False)


def read_trials(folder: Path, experiment: int) -> pd.DataFrame:
    """One experiment's trials, validated; the authors' columns plus `experiment`, `Item`."""
    path = Path(folder) / f"exp{experiment}_data.csv"
    source = str(path)
    item = ITEM_COLUMN[experiment]
    responses = list(RESPONSES[experiment])
    raw = read_table(path, source=source, index_col=0,
                     dtype={"SubjID": str, item: str, "Condition": str, "List": str},
                     keep_default_na=False, na_values=["NA"])
    df = validate_frame(raw, source=source,
                        required=["Condition", "List", "SubjID", item] + EXTRA_COLUMNS[experiment],
                        numeric=responses,
                        numeric_optional=["GenderRating", "SubjGenderMale"],
                        allowed={"Condition": CONDITIONS})
    for col in responses:
        bad = ~df[col].isin([0, 1])
        if bad.any():
            pos = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataValidationError("response code is not 0/1", source=source, row=pos + 2,
                                      column=col, expected="0 or 1", found=repr(raw[col].iloc[pos]))
    n_coded = df[responses].sum(axis=1)
    if (n_coded != 1).any():
        pos = int(np.flatnonzero((n_coded != 1).to_numpy())[0])
        raise DataValidationError(
            "a trial must have exactly one response coded", source=source, row=pos + 2,
            column=responses[0], expected=f"exactly one of {responses} equal to 1",
            found=f"{int(n_coded.iloc[pos])} coded")
    rating_missing = df["GenderRating"].isna()
    should_miss = (df["Condition"] == "last") if RATING_MISSING_IN_LAST[experiment] \
        else pd.Series(False, index=df.index)
    wrong = rating_missing != should_miss
    if wrong.any():
        pos = int(np.flatnonzero(wrong.to_numpy())[0])
        expected = ("a rating on first- and full-name trials, none on last-name trials"
                    if RATING_MISSING_IN_LAST[experiment] else "a rating on every trial")
        raise DataValidationError("gender rating present where none belongs, or missing",
                                  source=source, row=pos + 2, column="GenderRating",
                                  expected=expected,
                                  found=f"{raw['GenderRating'].iloc[pos]!r} on a "
                                        f"{df['Condition'].iloc[pos]!r} trial")
    gender = df["SubjGenderMale"]
    bad = gender.notna() & ~gender.isin([0.0, 1.0])
    if bad.any():
        pos = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataValidationError("participant gender code", source=source, row=pos + 2,
                                  column="SubjGenderMale", expected="0, 1 or NA",
                                  found=repr(raw["SubjGenderMale"].iloc[pos]))
    # a participant's gender is one value, repeated on each of their trials
    per_subject = df.groupby("SubjID")["SubjGenderMale"].nunique(dropna=False)
    if (per_subject > 1).any():
        subj = per_subject.index[per_subject > 1][0]
        pos = int(np.flatnonzero((df["SubjID"] == subj).to_numpy())[0])
        raise DataValidationError("one participant with two gender codes", source=source,
                                  row=pos + 2, column="SubjGenderMale",
                                  expected="one value per SubjID", found=f"SubjID {subj!r}")
    if experiment == 1:
        other_type = df["OtherType"].fillna("")
        unknown = ~other_type.isin(OTHER_TYPES)
        if unknown.any():
            pos = int(np.flatnonzero(unknown.to_numpy())[0])
            raise DataValidationError("unknown Other type", source=source, row=pos + 2,
                                      column="OtherType", expected=str(list(OTHER_TYPES)),
                                      found=repr(raw["OtherType"].iloc[pos]))
        # A type on a he/she response is an error; an Other response without a
        # type happens once in the published file (row 7871, a repeated name
        # left uncoded). It stays in: the authors analyse it as Other, and
        # it is not an exclusion (the study counts singular they by type).
        typed_not_other = (other_type != "") & (df["Other"] != 1)
        if typed_not_other.any():
            pos = int(np.flatnonzero(typed_not_other.to_numpy())[0])
            raise DataValidationError("OtherType filled on a he/she response",
                                      source=source, row=pos + 2, column="OtherType",
                                      expected="a type only when Other == 1",
                                      found=repr(raw["OtherType"].iloc[pos]))
        df["OtherType"] = other_type
    out = df.reset_index(drop=True)
    for col in responses:
        out[col] = out[col].astype(int)
    out.insert(0, "experiment", experiment)
    out["Item"] = out[item]
    return check_output_schema(out, trials_schema(experiment),
                               source=f"gardner2024 table 'exp{experiment}'")


def _xlsx_rows(path: Path, sheet: str) -> list[tuple]:
    try:
        import openpyxl
    except ImportError as exc:  # pragma: no cover - declared dependency
        from gbstats.errors import MissingDependencyError
        raise MissingDependencyError("reading the gardner2024 stimuli needs openpyxl: "
                                     "pip install openpyxl") from exc
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (OSError, KeyError, ValueError) as exc:
        raise DataValidationError("cannot read the workbook", source=str(path),
                                  expected="an .xlsx file", found=str(exc)) from None
    if sheet not in wb.sheetnames:
        raise DataValidationError("sheet missing", source=str(path), expected=f"sheet {sheet!r}",
                                  found=f"sheets {wb.sheetnames}")
    rows = list(wb[sheet].iter_rows(values_only=True))
    wb.close()
    return rows


def read_stimuli_exp1(folder: Path) -> pd.DataFrame:
    """Exp 1 frames x lists (`Production` sheet) as one row per frame x column x name.

    The sheet has 9 list columns. Its group labels over them (FIRST / LAST /
    FULL) do not match the cells: columns 4-6 hold full names and 7-9 last
    names. So the condition of a column is read from its cells (a first name,
    a "First Last" pair, or a last name known from the name sheet), and a
    column whose cells mix kinds is an error.
    """
    path = Path(folder) / "exp1_stimuli.xlsx"
    rows = _xlsx_rows(path, "Production")
    header = rows[1]
    names_rows = _xlsx_rows(path, "Names_Main")
    first_names = {r[2] for r in names_rows[2:] if r[2]}
    last_names = {r[3] for r in names_rows[2:] if r[3]}
    records = []
    for j in range(1, len(header)):
        if not header[j]:
            continue
        kinds = set()
        for i, r in enumerate(rows[2:], start=3):
            frame, name = r[0], r[j]
            if not frame or name is None or str(name).strip() == "X":
                continue
            name = str(name).strip()
            if " " in name:
                kind = "full"
            elif name in first_names:
                kind = "first"
            elif name in last_names:
                kind = "last"
            else:
                raise DataValidationError("name not in the name sheet", source=f"{path} [Production]",
                                          row=i, column=str(header[j]),
                                          expected="a first, last or full name of Names_Main",
                                          found=repr(name))
            kinds.add(kind)
            records.append({"frame_text": str(frame).strip(), "xlsx_list": str(header[j]),
                            "Condition": kind, "NameShown": name, "xlsx_row": i})
        if len(kinds) > 1:
            raise DataValidationError("a list column mixes name kinds",
                                      source=f"{path} [Production]", column=str(header[j]),
                                      expected="only first, only full or only last names",
                                      found=str(sorted(kinds)))
    out = pd.DataFrame(records)
    frames = {t: f"f{k + 1:02d}" for k, t in enumerate(dict.fromkeys(out["frame_text"]))}
    out.insert(0, "frame", out["frame_text"].map(frames))
    return out


def read_stimuli_exp3(folder: Path) -> pd.DataFrame:
    """Exp 3 stories (`Production` sheet): one row per condition x list x name."""
    path = Path(folder) / "exp3-4_stimuli.xlsx"
    rows = _xlsx_rows(path, "Production")
    expected = ("Condition", "List", "NameFirst", "NameLast", "Story", "ProductionPrompt")
    if tuple(rows[0][:6]) != expected:
        raise DataValidationError("unexpected header", source=f"{path} [Production]", row=1,
                                  expected=str(list(expected)), found=str(list(rows[0])))
    records = []
    for i, r in enumerate(rows[1:], start=2):
        if all(v is None for v in r):
            continue
        if r[0] not in XLSX_CONDITIONS:
            raise DataValidationError("unknown condition", source=f"{path} [Production]", row=i,
                                      column="Condition", expected=str(list(XLSX_CONDITIONS)),
                                      found=repr(r[0]))
        records.append({"Condition": XLSX_CONDITIONS[r[0]], "List": str(r[1]),
                        "Name": f"{r[2]} {r[3]}", "NameFirst": r[2], "NameLast": r[3],
                        "Story": str(r[4]).strip(), "ProductionPrompt": str(r[5]).strip(),
                        "xlsx_row": i})
    out = pd.DataFrame(records)
    dup = out.duplicated(["Condition", "List", "Name"])
    if dup.any():
        pos = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataValidationError("one story key twice", source=f"{path} [Production]",
                                  row=int(out["xlsx_row"].iloc[pos]), column="NameFirst",
                                  expected="one story per Condition x List x name",
                                  found=f"{out['Name'].iloc[pos]!r} again")
    return out


def read_norming(folder: Path) -> pd.DataFrame:
    """Exp 0 norming, long: one row per participant x name rated (1-7)."""
    path = Path(folder) / "exp0_data_norming.csv"
    raw = read_table(path, source=str(path), dtype={"ResponseId": str, "gender": str})
    names = [c for c in raw.columns if c not in ("ResponseId", "gender")]
    df = validate_frame(raw, source=str(path), required=["ResponseId", "gender"],
                        numeric_optional=names, unique=["ResponseId"], what="participant")
    long = df.melt(id_vars=["ResponseId", "gender"], value_vars=names,
                   var_name="Name", value_name="Rating").dropna(subset=["Rating"])
    return long.reset_index(drop=True)


def load(folder: Path) -> LoadedDataset:
    folder = Path(folder)
    tables = {f"exp{e}": read_trials(folder, e) for e in (1, 2, 3, 4)}
    norming = read_norming(folder)
    n_missing_ratings = int(read_table(folder / "exp0_data_norming.csv").drop(
        columns=["ResponseId", "gender"]).isna().sum().sum())
    tables["norming"] = norming
    tables["census"] = validate_frame(read_table(folder / "exp0_data_census.csv"),
                                      source=str(folder / "exp0_data_census.csv"),
                                      required=["Name"], numeric=["Census_ProbFemale"],
                                      unique=["Name"], what="name")
    tables["stimuli_exp1"] = read_stimuli_exp1(folder)
    tables["stimuli_exp3"] = read_stimuli_exp3(folder)
    log = ExclusionLog()
    # The published trials are the authors' analysed set: nothing is dropped
    # here, and the log says so rather than staying silent.
    for e in (1, 2, 3, 4):
        log.record(f"Exp {e} trials dropped by the loader (the published data are the "
                   "analysed data)", 0, unit="trials", stage="gardner2024")
    log.record("norming cells left blank (name not rated by that participant)",
               n_missing_ratings, unit="ratings", stage="gardner2024 exp0")
    return LoadedDataset(name="gardner2024", tables=tables, main="exp1",
                         exclusions=log, participant_column="SubjID")
