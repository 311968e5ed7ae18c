"""Loader for camilliere2021: the published singular-*they* stimuli.

Camilliere et al. (2021) wrote 40 sentence frames, each in 8 antecedent
conditions, plus 15 sentences with an inanimate antecedent (items 41-55); Watson
et al. (2023) published them as `camilliere_stimuli.csv` (columns
`cond,itm,sentence,form,antecedent`; `form` is the they-form the sentence
contains). Their rating file `camilliere_data.txt` is keyed by the same
(`cond`, `itm`), so the loader keeps those keys as they are.

The table `stimuli` is the file as published, checked: every (`cond`, `itm`)
once, the 8 x 40 + 15 design complete, and the `form` occurring exactly once
as a whole word in its sentence (`locate_form`), since that occurrence is the
position a study scores. The `antecedent` column is descriptive only (a few
rows paraphrase the sentence, e.g. "each salesperson" for "Every
salesperson"), so nothing is located by it.

The file has a few typos. Correcting them is a study's decision, made visibly:
`apply_corrections` applies a table of (cond, itm, original, corrected, reason)
and refuses one whose `original` is not the published text.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from gbstats.data.registry import LoadedDataset
from gbstats.data.validate import (check_output_schema, file_row, read_table, require_columns,
                                   validate_frame)
from gbstats.errors import DataValidationError

STIMULI_FILE = "camilliere_stimuli.csv"
# The 8 antecedent conditions of items 1-40, in the file's order, and the
# condition of the inanimate controls (items 41-55).
FRAME_CONDITIONS = ["gnoun", "ngnoun", "gfamily", "gname", "ngname", "spkknows",
                    "quantifier", "plural"]
INANIMATE = "inanimate"
CONDITIONS = FRAME_CONDITIONS + [INANIMATE]
FRAME_ITEMS = range(1, 41)
INANIMATE_ITEMS = range(41, 56)
FORMS = ["they", "them", "their", "themselves"]
COLUMNS = ["cond", "itm", "sentence", "form", "antecedent"]
CORRECTION_COLUMNS = ["cond", "itm", "original", "corrected", "reason"]


def locate_form(sentence: str, form: str, *, source: str, row: int | None = None,
                column: str = "sentence") -> int:
    """Character offset of the one whole-word occurrence of `form` in `sentence`.

    Case-sensitive, as published: every they-form is lower-case inside its
    sentence. None or several occurrences is an error naming the row.
    """
    hits = [m.start() for m in re.finditer(rf"\b{re.escape(form)}\b", sentence)]
    if len(hits) != 1:
        raise DataValidationError(
            "the they-form must occur exactly once as a whole word", source=source, row=row,
            column=column, expected=f"one whole-word {form!r}",
            found=f"{len(hits)} in {sentence!r}")
    return hits[0]


def check_design(df: pd.DataFrame, *, source: str) -> None:
    """40 items x the 8 frame conditions + items 41-55 as inanimate, nothing else."""
    for pos, (cond, itm) in enumerate(zip(df["cond"], df["itm"])):
        allowed = INANIMATE_ITEMS if cond == INANIMATE else FRAME_ITEMS
        if itm not in allowed:
            raise DataValidationError(
                f"item number out of range for condition {cond!r}", source=source,
                row=file_row(pos), column="itm",
                expected=f"{allowed.start}-{allowed.stop - 1}", found=repr(itm))
    have = set(zip(df["cond"], df["itm"]))
    wanted = {(c, i) for c in FRAME_CONDITIONS for i in FRAME_ITEMS} | {
        (INANIMATE, i) for i in INANIMATE_ITEMS}
    missing = sorted(wanted - have, key=lambda k: (k[1], k[0]))
    if missing:
        raise DataValidationError(
            f"{len(missing)} stimulus/stimuli missing from the design", source=source,
            column="cond", expected="40 items x 8 conditions + 15 inanimate controls (335 rows)",
            found="no row for " + ", ".join(f"cond={c!r} itm={i}" for c, i in missing[:5]))


def read_stimuli(path: Path) -> pd.DataFrame:
    """Read and check the published file; 1-based file lines in every message."""
    source = str(path)
    raw = read_table(path, source=source, dtype=str, keep_default_na=False)
    df = validate_frame(raw, source=source, required=COLUMNS, numeric=["itm"],
                        allowed={"cond": CONDITIONS, "form": FORMS},
                        unique=["cond", "itm"], what="stimulus")
    whole = df["itm"] % 1 == 0
    if not whole.all():
        pos = int((~whole).to_numpy().nonzero()[0][0])
        raise DataValidationError("item number is not a whole number", source=source,
                                  row=file_row(pos), column="itm", expected="1-55",
                                  found=repr(raw["itm"].iloc[pos]))
    df["itm"] = df["itm"].astype("int64")
    check_design(df, source=source)
    for pos, (sentence, form) in enumerate(zip(df["sentence"], df["form"])):
        locate_form(sentence, form, source=source, row=file_row(pos))
    return df[COLUMNS].reset_index(drop=True)


def read_corrections(path: Path) -> pd.DataFrame:
    """A correction table: `cond,itm,original,corrected,reason`, one row per stimulus."""
    source = str(path)
    raw = read_table(path, source=source, dtype=str, keep_default_na=False)
    df = validate_frame(raw, source=source, required=CORRECTION_COLUMNS, numeric=["itm"],
                        allowed={"cond": CONDITIONS}, unique=["cond", "itm"],
                        what="correction")
    df["itm"] = df["itm"].astype("int64")
    for column in ("corrected", "reason"):
        blank = df[column].str.strip() == ""
        if blank.any():
            pos = int(blank.to_numpy().nonzero()[0][0])
            raise DataValidationError("empty cell", source=source, row=file_row(pos),
                                      column=column, expected=f"a {column} text", found="''")
    return df[CORRECTION_COLUMNS]


def apply_corrections(stimuli: pd.DataFrame, corrections: pd.DataFrame, *,
                      source: str = "corrections") -> pd.DataFrame:
    """The stimuli with each correction's `corrected` text in place of its `original`.

    A correction must name a stimulus that exists and quote its published
    sentence exactly; otherwise the table is stale (or meant for another
    version of the file) and applying it would hide that. The corrected text
    must still hold its they-form exactly once.
    """
    require_columns(corrections, CORRECTION_COLUMNS, source=source)
    out = stimuli.copy()
    position = {(c, int(i)): k for k, (c, i) in enumerate(zip(out["cond"], out["itm"]))}
    for pos, fix in enumerate(corrections.itertuples(index=False)):
        key = (fix.cond, int(fix.itm))
        if key not in position:
            raise DataValidationError(
                "the correction names no stimulus", source=source, row=file_row(pos),
                column="itm", expected="a (cond, itm) of the stimuli",
                found=f"cond={fix.cond!r} itm={fix.itm}")
        k = position[key]
        published = out["sentence"].iloc[k]
        if published != fix.original:
            raise DataValidationError(
                "the correction's original text is not the published sentence",
                source=source, row=file_row(pos), column="original",
                expected=repr(published), found=repr(fix.original))
        locate_form(fix.corrected, out["form"].iloc[k], source=source, row=file_row(pos),
                    column="corrected")
        out.iloc[k, out.columns.get_loc("sentence")] = fix.corrected
    return out


def stimuli_schema():
    import pandera.pandas as pa

    return pa.DataFrameSchema(
        {"cond": pa.Column(str, pa.Check.isin(CONDITIONS)),
         "itm": pa.Column("int64", pa.Check.in_range(1, 55)),
         "sentence": pa.Column(str, pa.Check.str_length(min_value=1)),
         "form": pa.Column(str, pa.Check.isin(FORMS)),
         "antecedent": pa.Column(str)},
        unique=["cond", "itm"], name="camilliere2021.stimuli", strict=True)


def load(folder: Path) -> LoadedDataset:
    path = Path(folder) / STIMULI_FILE
    stimuli = check_output_schema(read_stimuli(path), stimuli_schema(),
                                  source="camilliere2021 table 'stimuli'")
    return LoadedDataset(name="camilliere2021", tables={"stimuli": stimuli}, main="stimuli")
