"""Validated rating frames and per-participant x item matrices, shared by the
alignment analyses (groups, reliability, mixed_model).

The input checks name the table ("item_scores", "trials"), the column and the
first offending row, so a bad rating file fails at the join, not inside a bootstrap.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from gbstats.errors import DataValidationError


def key_text(keys: Sequence[str], values) -> str:
    values = values if isinstance(values, tuple) else (values,)
    # numpy scalars would print as np.int64(3); show the plain value
    plain = [v.item() if isinstance(v, np.generic) else v for v in values]
    return ", ".join(f"{k}={v!r}" for k, v in zip(keys, plain))


def require_columns(df: pd.DataFrame, columns: Sequence[str], source: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataValidationError(
            f"missing column(s) {', '.join(map(repr, missing))}", source=source,
            column=missing[0], expected=f"columns {', '.join(columns)}",
            found=f"columns {', '.join(map(str, df.columns))}")


def require_no_missing(df: pd.DataFrame, columns: Sequence[str], source: str) -> None:
    """Missing keys or labels cannot be placed in a group or joined: say where they are."""
    for col in columns:
        missing = df[col].isna()
        if missing.any():
            label = df.index[np.flatnonzero(missing.to_numpy())[0]]
            raise DataValidationError(
                f"{int(missing.sum())} missing value(s) (first at index {label!r}); exclude "
                "those rows upstream with an ExclusionLog so the report counts them",
                source=source, column=col, expected="no missing values", found="NaN")


def require_numeric(df: pd.DataFrame, column: str, source: str) -> np.ndarray:
    values = pd.to_numeric(df[column], errors="coerce")
    bad = values.isna()
    if bad.any():
        label = df.index[np.flatnonzero(bad.to_numpy())[0]]
        raise DataValidationError(
            f"{int(bad.sum())} missing or non-numeric value(s) (first at index {label!r})",
            source=source, column=column, expected="a number",
            found=repr(df[column].loc[label]))
    return values.to_numpy(dtype=float)


def check_one_group_per_participant(trials: pd.DataFrame, participant: str,
                                     group: str) -> None:
    n_groups = trials.groupby(participant, observed=True)[group].nunique()
    if (n_groups > 1).any():
        who = n_groups.index[n_groups > 1][0]
        found = sorted(map(str, trials.loc[trials[participant] == who, group].unique()))
        raise DataValidationError(
            "a participant belongs to more than one group", source="trials", column=group,
            expected="each participant in exactly one group (participants are the "
                     "resampled unit)",
            found=f"participant {who!r} in {', '.join(found)}")


def check_n_resamples(value: int, name: str) -> None:
    if int(value) < 1:
        raise DataValidationError(f"{name} must be a positive number of resamples",
                                  source=name, expected="an integer >= 1", found=repr(value))


def ordered_levels(values: pd.Series) -> list:
    """Levels in a stable order: categorical order if categorical, else sorted."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        present = set(values.unique())
        return [c for c in values.cat.categories if c in present]
    return sorted(values.unique(), key=lambda v: (str(type(v)), v))


def _key_kind(values: pd.Series) -> str:
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = pd.Series(values.cat.categories)   # a category's kind is its levels' kind
    if pd.api.types.is_bool_dtype(values):
        return "true/false"
    if pd.api.types.is_numeric_dtype(values):
        return "numbers"
    return "text"


def require_same_key_types(trials: pd.DataFrame, scores: pd.DataFrame,
                           keys: Sequence[str]) -> None:
    """Refuse a join whose key is numbers in one table and text in the other: pandas
    raises a bare ValueError there (issue 44), and a cast would match "7" with 7.0 or
    "07" with nothing, silently."""
    for key in keys:
        a, b = _key_kind(trials[key]), _key_kind(scores[key])
        if a != b:
            raise DataValidationError(
                f"the join key is {a} in the trials and {b} in the item scores",
                source="trials and item_scores", column=key,
                expected="the same kind of value in both tables (convert one, e.g. "
                         f"trials[{key!r}].astype(str))",
                found=f"{trials[key].dtype} in the trials, {scores[key].dtype} in the item scores")


def prepare_rating_frame(item_scores, trials, *, participant, group, score, rating,
                          item_keys) -> tuple[pd.DataFrame, pd.DataFrame]:
    item_keys = list(item_keys)
    require_columns(item_scores, item_keys + [score], "item_scores")
    require_no_missing(item_scores, item_keys, "item_scores")
    scores = item_scores[item_keys].copy()
    scores["_score"] = require_numeric(item_scores, score, "item_scores")
    dup = scores.duplicated(subset=item_keys)
    if dup.any():
        pos = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataValidationError(
            "duplicated item", source="item_scores", column=item_keys[0],
            expected="one score per item",
            found=key_text(item_keys, tuple(scores.iloc[pos][item_keys])))
    needed = [participant, group] + item_keys
    require_columns(trials, needed + [rating], "trials")
    require_no_missing(trials, needed, "trials")
    if len(trials) == 0:
        raise DataValidationError("no trials", source="trials",
                                  expected="at least one trial", found="0 rows")
    check_one_group_per_participant(trials, participant, group)
    frame = trials[needed].copy()
    frame["_rating"] = require_numeric(trials, rating, "trials")
    scores["_item"] = np.arange(len(scores))
    require_same_key_types(frame, scores, item_keys)
    joined = frame.merge(scores[item_keys + ["_item"]], on=item_keys, how="left",
                         validate="many_to_one")
    if joined["_item"].isna().any():
        pos = int(np.flatnonzero(joined["_item"].isna().to_numpy())[0])
        raise DataValidationError(
            f"item {key_text(item_keys, tuple(joined.iloc[pos][item_keys]))} has ratings "
            "but no model score", source="item_scores", column=item_keys[0],
            expected="a score for every rated item",
            found=f"{int(joined['_item'].isna().sum())} trial(s) on unscored items")
    joined["_item"] = joined["_item"].astype(int)
    return joined, scores


def item_mean_matrices(frame: pd.DataFrame, participant: str,
                        n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Per participant x item: summed rating and count."""
    ids = pd.Index(ordered_levels(frame[participant]))
    pos = ids.get_indexer(frame[participant])
    sums, counts = np.zeros((ids.size, n_items)), np.zeros((ids.size, n_items))
    np.add.at(sums, (pos, frame["_item"].to_numpy()), frame["_rating"].to_numpy())
    np.add.at(counts, (pos, frame["_item"].to_numpy()), 1)
    return sums, counts
