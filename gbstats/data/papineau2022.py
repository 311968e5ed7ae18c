"""Loader for papineau2022: the role-noun production experiment of Papineau,
Podesva & Degen (2022), prepared as Watson et al. (2023) analysed it.

Participants completed "NAME is a ___ from STATE" with one variant of a
role-noun set (firefighter / fireman / firewoman) and filled in the 13-item
Social Roles Questionnaire. The data README (`../shared/data/README.md`,
"Notes on use") fixes every step below.

How the source files encode what we need (read from the files themselves):
- One row per trial, 81 per participant: 1 practice row (`type` empty), 20
  critical trials (`type == "critical"`, one per role-noun set, `lexeme` = the
  set's gender-neutral form, `name` = the first name shown, `gender` = "male" /
  "female" for that name), 50 fillers, and 10 attention checks.
- Attention checks are the rows with `name == "attention"` (their `gender` is
  also "attention", their `type` "test_grammatical"). The experiment scored
  them itself: `correct` is 1 when the typed word was the expected one (e.g.
  "would" for the item "modal") and 0 otherwise ("would've"). Accuracy is the
  mean of `correct` over a participant's attention rows.
- Party alignment is `subject_information.party_alignment`, 1-5 (1-2
  Republican, 4-5 Democrat, 3 neither); the questionnaire is
  `subject_information.gender_q1..q13` (0-100) and age is
  `subject_information.age`. These participant-level fields are repeated on
  every row of the participant, so they must be constant within a worker.
- A critical `response` is one variant of the trial's set, or "SKIP" when the
  participant gave none. "SKIP" is excluded and counted; any other word is an
  error, because it means the file is not what this loader understands.
  (Watson et al.'s R script codes any unlisted word, SKIP included, as
  "neutral"; we do not.)

Every input file is validated on its own before concatenation, so an error
names the file and the line a researcher sees in an editor.
"""
from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.data import role_nouns as rn
from gbstats.data.registry import LoadedDataset, get_dataset
from gbstats.data.validate import (check_output_schema, read_table, require_allowed,
                                   require_numeric, require_unique, validate_frame)
from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog

NAME = "papineau2022"

# The order of the source's merged `production_data.csv` (data README): worker
# ids of each later file are shifted past all earlier ones in this order.
PRODUCTION_FILES = ("prod_dems-merged.csv", "prod_repubs-merged.csv",
                    "dems_prod_men-merged.csv", "reps_prod_men-merged.csv")

_Q = "subject_information."
TRANSCENDENCE_ITEMS = tuple(f"{_Q}gender_q{i}" for i in range(1, 6))
LINKED_ITEMS = tuple(f"{_Q}gender_q{i}" for i in range(6, 14))
QUESTIONNAIRE_ITEMS = TRANSCENDENCE_ITEMS + LINKED_ITEMS
AGE = f"{_Q}age"
PARTY_ALIGNMENT = f"{_Q}party_alignment"
PARTICIPANT_GENDER = f"{_Q}gender"
RECRUITMENT = "proliferate.condition"
PARTICIPANT_FIELDS = (RECRUITMENT, AGE, PARTICIPANT_GENDER, PARTY_ALIGNMENT) + QUESTIONNAIRE_ITEMS
REQUIRED_COLUMNS = ("workerid", "type", "name", "gender", "lexeme", "response",
                    "correct", "trial_no") + PARTICIPANT_FIELDS

CRITICAL = "critical"
ATTENTION = "attention"
ATTENTION_THRESHOLD = 0.80
SKIPPED_RESPONSE = "SKIP"
SOURCE_NAME_GENDER = {"male": rn.MEN, "female": rn.WOMEN}

PROGRESSIVE, MODERATE, CONSERVATIVE = "progressive", "moderate", "conservative"
ATTITUDE_GROUPS = (PROGRESSIVE, MODERATE, CONSERVATIVE)
REPUBLICAN, DEMOCRAT, NON_PARTISAN = "Republican", "Democrat", "Non-Partisan"
PARTIES = (REPUBLICAN, DEMOCRAT, NON_PARTISAN)

TRIAL_COLUMNS = ["participant", "item", "condition", "name", "name_gender", "role_noun_set",
                 "set_type", "response", "response_gender", "attitude_score", "attitude_group",
                 "party", "party_alignment", "trial_no", "source_file"]
PARTICIPANT_COLUMNS = ["participant", "source_file", "recruitment", "worker_id_in_file", "age",
                       "gender", "party_alignment", "party", "attention_accuracy",
                       "attitude_score", "attitude_group", "n_trials"]


# --------------------------------------------------------------------------
# Reading and validating one file
# --------------------------------------------------------------------------

def _rows_of(subset: pd.DataFrame) -> Callable[[int], int]:
    """Position in `subset` -> file line, for a subset of a table read by read_table."""
    return lambda pos: int(subset.index[pos]) + 2


def require_complete_rows(path: Path, *, source: str) -> None:
    """Raise if a record has fewer or more fields than the header.

    pandas pads a short last line with missing values, so a file cut off in
    the middle of a line would otherwise load; this is what a truncated
    download or a partial copy looks like.
    """
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, [])
            position = 0
            for record in reader:
                if not record:      # blank line: pandas skips it too
                    continue
                if len(record) != len(header):
                    short = len(record) < len(header)
                    raise DataValidationError(
                        "the row has the wrong number of fields (truncated or corrupted file?)",
                        source=source, row=position + 2,
                        column=header[len(record)] if short else None,
                        expected=f"{len(header)} fields, as in the header",
                        found=f"{len(record)} fields")
                position += 1
    except csv.Error as exc:
        raise DataValidationError("the file is malformed (truncated or corrupted?)",
                                  source=source, found=str(exc)) from None


def _require_within(df: pd.DataFrame, column: str, low: float, high: float, *, source: str,
                    rows: Callable[[int], int]) -> None:
    values = df[column]
    bad = values.notna() & ((values < low) | (values > high))
    if bad.any():
        pos = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataValidationError(f"value out of range in {int(bad.sum())} row(s)", source=source,
                                  row=rows(pos), column=column,
                                  expected=f"a number from {low:g} to {high:g}",
                                  found=repr(values.iloc[pos]))


def _require_whole(df: pd.DataFrame, column: str, *, source: str,
                   rows: Callable[[int], int]) -> None:
    values = df[column]
    bad = values.notna() & (values % 1 != 0)
    if bad.any():
        pos = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataValidationError("not a whole number", source=source, row=rows(pos),
                                  column=column, expected="a whole number",
                                  found=repr(values.iloc[pos]))


def _validate_participant_fields(df: pd.DataFrame, *, source: str) -> None:
    """Participant-level fields are repeated on each row and must not change within a worker."""
    rows = _rows_of(df)
    _require_whole(df, "workerid", source=source, rows=rows)
    for item in QUESTIONNAIRE_ITEMS:
        _require_within(df, item, 0, 100, source=source, rows=rows)
    require_allowed(df.loc[df[PARTY_ALIGNMENT].notna()], PARTY_ALIGNMENT,
                    [1.0, 2.0, 3.0, 4.0, 5.0], source=source,
                    row_offset=_rows_of(df.loc[df[PARTY_ALIGNMENT].notna()]))
    _require_within(df, AGE, 1, 120, source=source, rows=rows)
    for column in PARTICIPANT_FIELDS:
        per_worker = df.groupby("workerid")[column].transform(
            lambda s: s.nunique(dropna=False))
        changing = per_worker > 1
        if changing.any():
            pos = int(np.flatnonzero(changing.to_numpy())[0])
            worker = df["workerid"].iloc[pos]
            values = df.loc[df["workerid"] == worker, column].drop_duplicates().tolist()[:3]
            raise DataValidationError(
                f"participant-level value differs between rows of worker {int(worker)}",
                source=source, row=rows(pos), column=column,
                expected="the same value on every row of a worker",
                found=", ".join(map(repr, values)))


def _validate_attention_trials(df: pd.DataFrame, *, source: str) -> None:
    attention = df.loc[df["name"] == ATTENTION]
    rows = _rows_of(attention)
    require_numeric(attention, "correct", source=source, row_offset=rows)
    require_allowed(attention, "correct", [0.0, 1.0], source=source, row_offset=rows)
    require_unique(attention, ["workerid", "lexeme"], source=source,
                   what="attention check", row_offset=rows)
    unchecked = ~df["workerid"].isin(attention["workerid"])
    if unchecked.any():
        pos = int(np.flatnonzero(unchecked.to_numpy())[0])
        raise DataValidationError(
            f"worker {int(df['workerid'].iloc[pos])} has no attention-check trials, so the "
            "attention exclusion cannot be applied", source=source, row=pos + 2, column="name",
            expected=f"rows with name == {ATTENTION!r} for every worker", found="none")


def _validate_critical_trials(df: pd.DataFrame, *, source: str) -> None:
    critical = df.loc[df["type"] == CRITICAL]
    if critical.empty:
        raise DataValidationError("no critical trials", source=source, column="type",
                                  expected=f"rows with type == {CRITICAL!r}", found="none")
    rows = _rows_of(critical)
    variants = rn.role_noun_variants()
    names = rn.name_genders()
    require_numeric(critical, "trial_no", source=source, row_offset=rows)
    require_allowed(critical, "lexeme", variants["role_noun_set"].unique(), source=source,
                    row_offset=rows)
    require_allowed(critical, "name", names["name"], source=source, row_offset=rows)
    require_allowed(critical, "gender", list(SOURCE_NAME_GENDER), source=source,
                    row_offset=rows)
    require_allowed(critical, "response", list(variants["variant"]) + [SKIPPED_RESPONSE],
                    source=source, row_offset=rows)
    require_unique(critical, ["workerid", "lexeme"], source=source,
                   what="critical trial (worker x role-noun set)", row_offset=rows)

    # The response must be a variant of the trial's own set.
    pairs = set(zip(variants["role_noun_set"], variants["variant"]))
    wrong_set = [(lex, resp) not in pairs and resp != SKIPPED_RESPONSE
                 for lex, resp in zip(critical["lexeme"], critical["response"])]
    if any(wrong_set):
        pos = wrong_set.index(True)
        lexeme = critical["lexeme"].iloc[pos]
        members = variants.loc[variants["role_noun_set"] == lexeme, "variant"].tolist()
        raise DataValidationError(
            f"response is not a variant of the trial's role-noun set {lexeme!r}",
            source=source, row=rows(pos), column="response",
            expected=f"one of {', '.join(map(repr, members + [SKIPPED_RESPONSE]))}",
            found=repr(critical["response"].iloc[pos]))

    # The source's own `gender` column must agree with the name lists.
    listed = critical["name"].map(dict(zip(names["name"], names["name_gender"])))
    recorded = critical["gender"].map(SOURCE_NAME_GENDER)
    disagree = listed != recorded
    if disagree.any():
        pos = int(np.flatnonzero(disagree.to_numpy())[0])
        raise DataValidationError(
            f"the name {critical['name'].iloc[pos]!r} is one of the {listed.iloc[pos]}'s names",
            source=source, row=rows(pos), column="gender",
            expected=repr("male" if listed.iloc[pos] == rn.MEN else "female"),
            found=repr(critical["gender"].iloc[pos]))


def read_production_file(path: str | Path, *, source: str | None = None) -> pd.DataFrame:
    """Read and validate one production file; adds `source_file` and `source_row`.

    Every check here reports the file's own line numbers, which is why each
    file is validated before the files are concatenated.
    """
    path = Path(path)
    source = source or str(path)
    raw = read_table(path, source=source, low_memory=False)
    require_complete_rows(path, source=source)
    df = validate_frame(raw, source=source, required=REQUIRED_COLUMNS,
                        numeric=["workerid", *QUESTIONNAIRE_ITEMS],
                        numeric_optional=["correct", "trial_no", AGE, PARTY_ALIGNMENT])
    _validate_participant_fields(df, source=source)
    _validate_attention_trials(df, source=source)
    _validate_critical_trials(df, source=source)
    df["workerid"] = df["workerid"].astype("int64")
    df["source_file"] = path.name
    df["source_row"] = df.index.to_numpy() + 2     # read_table's RangeIndex
    return df


# --------------------------------------------------------------------------
# Concatenation, exclusions, derived variables: small functions over frames
# --------------------------------------------------------------------------

def rebase_worker_ids(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate files, shifting each later file's ids by max(id so far) + 1.

    This is what the source's merge script did to build `production_data.csv`;
    the files' own ids overlap (e.g. 730-903 and 698-875), so without it two
    people would share an id. The file's own id is kept as `worker_id_in_file`.
    """
    shifted = []
    for frame in frames:
        offset = int(max(f["workerid"].max() for f in shifted)) + 1 if shifted else 0
        shifted.append(frame.assign(worker_id_in_file=frame["workerid"],
                                    workerid=frame["workerid"] + offset))
    return pd.concat(shifted, ignore_index=True)


def attention_accuracy(trials: pd.DataFrame) -> pd.Series:
    """Per worker, the mean of `correct` over the `name == "attention"` rows."""
    attention = trials.loc[trials["name"] == ATTENTION]
    return attention.groupby("workerid")["correct"].mean().rename("attention_accuracy")


def _drop_participants(trials: pd.DataFrame, workers, reason: str,
                       log: ExclusionLog) -> pd.DataFrame:
    """Drop every row of `workers`, logging both the participants and their rows."""
    workers = pd.Index(pd.unique(np.asarray(workers)))
    log.record(reason, len(workers), unit="participants", stage=NAME)
    return log.drop(trials, trials["workerid"].isin(workers), reason, unit="trials", stage=NAME)


def exclude_inattentive(trials: pd.DataFrame, accuracy: pd.Series,
                        log: ExclusionLog) -> pd.DataFrame:
    # 1e-9: a participant with exactly 8 of 10 correct has accuracy 0.8 and is
    # kept ("below 0.80" is excluded); the tolerance guards the float mean.
    failed = accuracy.index[accuracy < ATTENTION_THRESHOLD - 1e-9]
    return _drop_participants(trials, failed,
                              f"attention-check accuracy below {ATTENTION_THRESHOLD:.2f}", log)


def keep_critical(trials: pd.DataFrame, log: ExclusionLog) -> pd.DataFrame:
    # the design's other trials, not data lost: logged as selected by design
    return log.select(trials, trials["type"] != CRITICAL,
                      "not a critical trial (practice, filler or attention check)",
                      unit="trials", stage=NAME)


def exclude_missing(trials: pd.DataFrame, column: str, what: str,
                    log: ExclusionLog) -> pd.DataFrame:
    missing = trials.loc[trials[column].isna(), "workerid"]
    return _drop_participants(trials, missing, f"missing {what}", log)


def exclude_skipped(trials: pd.DataFrame, log: ExclusionLog) -> pd.DataFrame:
    return log.drop(trials, trials["response"] == SKIPPED_RESPONSE,
                    f"no role noun given (response {SKIPPED_RESPONSE!r})",
                    unit="trials", stage=NAME)


def attitude_score(items: pd.DataFrame) -> pd.Series:
    """gender_total = mean(100 - mean(q1..q5), mean(q6..q13)).

    q1-q5 are gender-transcendent items (agreeing is progressive), so they are
    reversed; q6-q13 are gender-linked items. Higher = more conservative.

    Computed as one division of item sums, (n2 (100 n1 - S1) + n1 S2) / (2 n1 n2),
    which is the same number: with whole-number answers (the sliders give
    0-100) two participants with the same true score then get the same float,
    so ties at a tertile cut point are real ties and not rounding noise.
    """
    n1, n2 = len(TRANSCENDENCE_ITEMS), len(LINKED_ITEMS)
    s1 = items[list(TRANSCENDENCE_ITEMS)].sum(axis=1)
    s2 = items[list(LINKED_ITEMS)].sum(axis=1)
    return ((n2 * (100 * n1 - s1) + n1 * s2) / (2 * n1 * n2)).rename("attitude_score")


def _quantile_linear(sorted_values: np.ndarray, fraction: Fraction) -> float:
    """numpy's default ("linear") quantile with the position (n - 1) q computed exactly.

    np.quantile computes (n - 1) * q in floating point; when the exact position
    is a whole number (n = 3k + 1 participants, e.g. 271) a rounding error can
    move the cut point a hair above a participant's score and put that
    participant in the lower group. The README asks for the upper group.
    """
    position = (len(sorted_values) - 1) * fraction
    below = position.numerator // position.denominator
    weight = position - below
    if weight == 0:
        return float(sorted_values[below])
    low, high = sorted_values[below], sorted_values[below + 1]
    return float(low + float(weight) * (high - low))


def attitude_cut_points(scores: pd.Series) -> tuple[float, float]:
    """The 1/3 and 2/3 quantiles (numpy's linear rule) of participant-level scores."""
    values = np.sort(np.asarray(scores, dtype=float))
    if values.size == 0 or np.isnan(values).any():
        raise ValueError("attitude cut points need at least one score and no missing scores")
    return _quantile_linear(values, Fraction(1, 3)), _quantile_linear(values, Fraction(2, 3))


def attitude_groups(scores: pd.Series, cut_points: tuple[float, float] | None = None) -> pd.Series:
    """progressive < low cut <= moderate < high cut <= conservative.

    Pass one score per participant: the cut points are computed once on these
    and each participant is compared with them, so a score exactly on a cut
    point goes to the upper group.
    """
    low, high = attitude_cut_points(scores) if cut_points is None else cut_points
    values = np.asarray(scores, dtype=float)
    groups = np.where(values < low, PROGRESSIVE, np.where(values < high, MODERATE, CONSERVATIVE))
    return pd.Series(groups, index=getattr(scores, "index", None), name="attitude_group")


def party_from_alignment(alignment: pd.Series) -> pd.Series:
    """1-2 Republican, 4-5 Democrat, anything else Non-Partisan; missing stays missing."""
    party = np.select([alignment.isin([1, 2]), alignment.isin([4, 5])], [REPUBLICAN, DEMOCRAT],
                      default=NON_PARTISAN).astype(object)
    party[alignment.isna().to_numpy()] = None
    return pd.Series(party, index=alignment.index, name="party")


def participant_table(trials: pd.DataFrame, accuracy: pd.Series) -> pd.DataFrame:
    """One row per remaining participant, with score, tertile group and party."""
    first = trials.groupby("workerid", sort=True).first()
    out = pd.DataFrame({
        "participant": first.index.astype("int64"),
        "source_file": first["source_file"].to_numpy(),
        "recruitment": first[RECRUITMENT].to_numpy(),
        "worker_id_in_file": first["worker_id_in_file"].astype("int64").to_numpy(),
        "age": first[AGE].to_numpy(dtype=float),
        "gender": first[PARTICIPANT_GENDER].to_numpy(),
        "party_alignment": first[PARTY_ALIGNMENT].to_numpy(dtype=float),
    })
    out["party"] = party_from_alignment(out["party_alignment"])
    out["attention_accuracy"] = accuracy.reindex(first.index).to_numpy()
    out["attitude_score"] = attitude_score(first[list(QUESTIONNAIRE_ITEMS)]).to_numpy()
    out["attitude_group"] = attitude_groups(out["attitude_score"]).to_numpy()
    out["n_trials"] = trials.groupby("workerid", sort=True).size().to_numpy()
    return out[PARTICIPANT_COLUMNS]


def map_responses(trials: pd.DataFrame) -> pd.DataFrame:
    """Add role_noun_set, set_type and response_gender from the role-noun lists.

    Inputs passed `read_production_file`, so every response is a variant of
    its set; the join is still checked so that no row can be lost or doubled.
    """
    variants = rn.role_noun_variants().rename(
        columns={"variant": "response", "variant_gender": "response_gender"})
    mapped = trials.rename(columns={"lexeme": "role_noun_set"}).merge(
        variants, on=["role_noun_set", "response"], how="left", validate="many_to_one")
    unmapped = mapped["response_gender"].isna()
    if unmapped.any():
        row = mapped.loc[unmapped].iloc[0]
        raise DataValidationError("response is not a variant of its role-noun set",
                                  source=str(row["source_file"]), row=int(row["source_row"]),
                                  column="response", found=repr(row["response"]))
    return mapped


def trial_table(trials: pd.DataFrame, participants: pd.DataFrame) -> pd.DataFrame:
    """The long table: one row per participant x critical trial."""
    mapped = map_responses(trials)
    out = mapped.rename(columns={"workerid": "participant"})
    out["name_gender"] = out["gender"].map(SOURCE_NAME_GENDER)
    out["condition"] = out["name_gender"]
    out["item"] = out["role_noun_set"] + "|" + out["name"]
    out["trial_no"] = out["trial_no"].astype("int64")
    person = participants[["participant", "attitude_score", "attitude_group", "party",
                           "party_alignment"]]
    out = out.drop(columns=[PARTY_ALIGNMENT]).merge(person, on="participant", how="left",
                                                    validate="many_to_one")
    return (out[TRIAL_COLUMNS].sort_values(["participant", "trial_no"])
            .reset_index(drop=True))


def variant_prior(counts: pd.DataFrame, *, source: str = "watson2023 counts") -> pd.DataFrame:
    """P(V) per role-noun set: each variant's share of its set's summed corpus counts.

    `counts` is watson2023's table (term, count_wiki, count_bookcorpus, count).
    """
    variants = rn.role_noun_variants()
    joined = variants.merge(counts.rename(columns={"term": "variant"}), on="variant",
                            how="left", validate="one_to_one")
    missing = joined["count"].isna()
    if missing.any():
        lacking = joined.loc[missing, "variant"].tolist()
        raise DataValidationError(
            f"no corpus count for {len(lacking)} role-noun variant(s)", source=source,
            column="term", expected="a row for every variant of every role-noun set",
            found=f"missing {', '.join(map(repr, lacking[:5]))}")
    totals = joined.groupby("role_noun_set")["count"].transform("sum")
    empty = totals <= 0
    if empty.any():
        raise DataValidationError(
            "every variant of a role-noun set has a count of 0, so P(V) is undefined",
            source=source, column="count", expected="a positive total per set",
            found=f"set {joined.loc[empty, 'role_noun_set'].iloc[0]!r}")
    for column in ("count_wiki", "count_bookcorpus", "count"):
        joined[column] = joined[column].astype("int64")
    joined["prior"] = joined["count"] / totals
    return joined[["role_noun_set", "set_type", "variant", "variant_gender", "count_wiki",
                   "count_bookcorpus", "count", "prior"]]


def prepare_production(frames: Sequence[pd.DataFrame],
                       log: ExclusionLog | None = None) -> tuple[pd.DataFrame, pd.DataFrame,
                                                                 ExclusionLog]:
    """Validated files (in README order) -> (trials, participants, exclusion log)."""
    log = ExclusionLog() if log is None else log
    rows = rebase_worker_ids(frames)
    accuracy = attention_accuracy(rows)
    rows = exclude_inattentive(rows, accuracy, log)
    rows = keep_critical(rows, log)
    rows = exclude_missing(rows, AGE, "age", log)
    rows = exclude_missing(rows, PARTY_ALIGNMENT, "party alignment", log)
    rows = exclude_skipped(rows, log)
    participants = participant_table(rows, accuracy)
    trials = trial_table(rows, participants)
    return trials, participants, log


# --------------------------------------------------------------------------
# Output contracts
# --------------------------------------------------------------------------

def trials_schema():
    import pandera.pandas as pa

    variants = rn.role_noun_variants()
    names = rn.name_genders()
    return pa.DataFrameSchema(
        {
            "participant": pa.Column("int64"),
            "item": pa.Column(str),
            "condition": pa.Column(str, pa.Check.isin(rn.NAME_GENDERS)),
            "name": pa.Column(str, pa.Check.isin(list(names["name"]))),
            "name_gender": pa.Column(str, pa.Check.isin(rn.NAME_GENDERS)),
            "role_noun_set": pa.Column(str, pa.Check.isin(list(variants["role_noun_set"].unique()))),
            "set_type": pa.Column(str, pa.Check.isin(rn.SET_TYPES)),
            "response": pa.Column(str, pa.Check.isin(list(variants["variant"]))),
            "response_gender": pa.Column(str, pa.Check.isin(rn.VARIANT_GENDERS)),
            "attitude_score": pa.Column(float, pa.Check.in_range(0, 100)),
            "attitude_group": pa.Column(str, pa.Check.isin(ATTITUDE_GROUPS)),
            "party": pa.Column(str, pa.Check.isin(PARTIES)),
            "party_alignment": pa.Column(float, pa.Check.isin([1.0, 2.0, 3.0, 4.0, 5.0])),
            "trial_no": pa.Column("int64"),
            "source_file": pa.Column(str, pa.Check.isin(PRODUCTION_FILES)),
        },
        checks=[pa.Check(lambda df: (df["condition"] == df["name_gender"]).all(),
                         error="condition equals name_gender"),
                pa.Check(lambda df: (df["item"] == df["role_noun_set"] + "|" + df["name"]).all(),
                         error="item is '<role_noun_set>|<name>'")],
        unique=["participant", "role_noun_set"], strict=True, name="papineau2022.trials")


def participants_schema():
    import pandera.pandas as pa

    return pa.DataFrameSchema(
        {
            "participant": pa.Column("int64", unique=True),
            "source_file": pa.Column(str, pa.Check.isin(PRODUCTION_FILES)),
            "recruitment": pa.Column(str),
            "worker_id_in_file": pa.Column("int64"),
            "age": pa.Column(float, pa.Check.in_range(1, 120)),
            "gender": pa.Column(object, nullable=True),
            "party_alignment": pa.Column(float, pa.Check.isin([1.0, 2.0, 3.0, 4.0, 5.0])),
            "party": pa.Column(str, pa.Check.isin(PARTIES)),
            "attention_accuracy": pa.Column(float, pa.Check.in_range(ATTENTION_THRESHOLD - 1e-9, 1)),
            "attitude_score": pa.Column(float, pa.Check.in_range(0, 100)),
            "attitude_group": pa.Column(str, pa.Check.isin(ATTITUDE_GROUPS)),
            "n_trials": pa.Column("int64", pa.Check.ge(1)),
        },
        strict=True, name="papineau2022.participants")


def variant_prior_schema():
    import pandera.pandas as pa

    return pa.DataFrameSchema(
        {
            "role_noun_set": pa.Column(str),
            "set_type": pa.Column(str, pa.Check.isin(rn.SET_TYPES)),
            "variant": pa.Column(str, unique=True),
            "variant_gender": pa.Column(str, pa.Check.isin(rn.VARIANT_GENDERS)),
            "count_wiki": pa.Column("int64", pa.Check.ge(0)),
            "count_bookcorpus": pa.Column("int64", pa.Check.ge(0)),
            "count": pa.Column("int64", pa.Check.ge(0)),
            "prior": pa.Column(float, pa.Check.in_range(0, 1)),
        },
        checks=[pa.Check(lambda df: np.allclose(df.groupby("role_noun_set")["prior"].sum(), 1.0),
                         error="priors sum to 1 within each set")],
        strict=True, name="papineau2022.variant_prior")


def load(folder: Path) -> LoadedDataset:
    """Load the analysed production data plus the frequency prior P(V).

    `folder` is `<data dir>/papineau2022`; the prior needs the sibling
    `<data dir>/watson2023`, whose checksums are verified here.
    """
    from gbstats.data import watson2023

    folder = Path(folder)
    frames = [read_production_file(folder / name) for name in PRODUCTION_FILES]
    trials, participants, log = prepare_production(frames)
    counts_folder = get_dataset("watson2023").verify(folder.parent)
    counts = watson2023.load(counts_folder).table
    prior = variant_prior(counts, source=str(counts_folder))
    tables = {
        "trials": check_output_schema(trials, trials_schema(), source="papineau2022 table 'trials'"),
        "participants": check_output_schema(participants, participants_schema(),
                                            source="papineau2022 table 'participants'"),
        "variant_prior": check_output_schema(prior, variant_prior_schema(),
                                             source="papineau2022 table 'variant_prior'"),
    }
    return LoadedDataset(name=NAME, tables=tables, main="trials", exclusions=log,
                         participant_column="participant")
