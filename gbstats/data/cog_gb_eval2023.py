"""Loader for cog_gb_eval2023: Lior & Stanovsky (2023), humans under time pressure
versus coreference models, on WinoBias+Winogender ("wino") and BUG sentences.

Files under `<data dir>/cog_gb_eval2023/` (see the data README for provenance):

- `humans/qa/{wino,BUG}.csv`: one row per QA response. Columns used: `ID` (the
  platform's response id), `mturk_id` (participant), `hash_id` (one experiment
  session; the calibration file carries the same ids), `batch_number`,
  `index_in_batch` (position in the session), `id_sentence` (row id in the
  dataset's sentence pool), `time_fraction` (alpha), `question_category`,
  `user_answer`, `correct_answer`, `main_entity_gender` (the gender of the
  pronoun's referent, i.e. of the pronoun), `is_correct` (0/1),
  `avg_sec_for_token` (the participant's calibrated reading pace).
- `humans/qa_calibration/{wino,BUG}.csv`: one row per participant x calibration
  batch: `mturk_id`, `batch_number`, `hash_id`, `total_performance` (0-1).
- `humans/maze/{wino,BUG}.csv`: MAZE trials at the pronoun, already restricted by
  the authors to correct answers: `user_ip` (participant), `sentence_id` (same
  ids as the pool), `relation_to_main` (pro/anti/neutral/pronoun-neutral),
  `time_to_answer` (ms). The first, unnamed column is a pandas row index.
- `models/{SpanBERT,s2e}/{wino,BUG}.jsonl`: one predicted document per line.
  SpanBERT lines hold `document` (tokens); s2e lines hold `tokens` and the raw
  text in `sentence` (wino) or `sentence_text` (BUG). `clusters` is a list of
  clusters, each a list of inclusive `[start, end]` token spans. s2e's wino
  tokens drop punctuation, so the text is taken from the raw sentence field.
- `original_data/wino_combined.csv` (tab-separated): the wino pool. Its first
  column, literally named `Unnamed: 0`, is the sentence id used by the QA and
  MAZE files; `main_entity_occupation` is the pronoun's referent, `type` the
  sentence type (e.g. `anti-pro`: main entity anti-stereotypical, other entity
  pro-stereotypical), `main_entity_index` its token position (punctuation not
  counted, so it is only a hint for other tokenizations).
- `original_data/gold_BUG.csv`: the BUG pool: `uid` (sentence id), `sentence_text`
  (space-tokenized), `profession` (the referent), `g` (the pronoun),
  `profession_first_index` / `g_first_index` (token positions, correct for
  about 98% of rows, so again hints) and `stereotype` (1 pro, -1 anti, 0 neutral).
- `original_data/BUG_ids_mapping.json`: MAZE BUG sentence text -> `uid`; used to
  check the MAZE BUG sentence ids.

Repeated responses. The QA files hold responses recorded twice at the same
session position (62 in wino, 32 in BUG, e.g. a double click: distinct `ID`,
same `hash_id` and `index_in_batch`). The authors counted every recorded
response, and their published Table 2 is computed that way, so every response
is kept here; `repeated_response` marks the second and later responses at a
session position (file order), for a study that prefers one response per
position. Participants who met a sentence again in another session are
separate presentations and are never marked.

Loading only: the coreference systems' outputs are validated and returned as
they are (`model_outputs`), next to the sentence pools (`sentence_pool`);
matching an output to its pool sentence and scoring it is the study's work
(studies/cognitive_bias/systems.py).
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from gbstats.data.registry import LoadedDataset
from gbstats.data.validate import (check_output_schema, file_row, read_table,
                                   require_allowed, validate_frame)
from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog

NAME = "cog_gb_eval2023"
SUBSETS = ("wino", "BUG")
MODELS = ("SpanBERT", "s2e")
ALPHAS = (0.25, 0.5, 0.75)
CONDITIONS = ("pro", "anti", "neutral")

# Sentence types of the wino pool (`type` column of wino_combined.csv); the QA
# categories use the same names. Which are pro and anti follows the authors'
# fine-grained categorisation (their utils/constants.py), restated in issue 2.
WINO_SENTENCE_TYPES = ("anti-pro", "pro-anti", "neutral-pro", "pro-neutral",
                       "neutral-anti", "anti-neutral", "neutral-neutral", "pronoun-neutral")
ANTI_SENTENCE_TYPES = ("anti-pro", "neutral-pro", "anti-neutral")
PRO_SENTENCE_TYPES = ("pro-anti", "neutral-anti", "pro-neutral")
WINO_CATEGORY_LABELS = ("pro-stereotype", "anti-stereotype", "neutral")
ASKED_ENTITIES = ("main", "other")
FILLER = "filler"

# BUG categories look like "pro-stereotype_Female": label _ gender of the referent.
BUG_CATEGORY = re.compile(r"^(pro-stereotype|anti-stereotype|neutral)_(Male|Female)$")
BUG_LABEL_CONDITION = {"pro-stereotype": "pro", "anti-stereotype": "anti", "neutral": "neutral"}
BUG_STEREOTYPE_CONDITION = {1: "pro", -1: "anti", 0: "neutral"}

# Answers that are coreference decisions whatever the referent's gender.
NON_GENDER_ANSWERS = ("unknown", "neutral")
GENDERS = ("male", "female", "neutral")

QA_TEXT = ["ID", "mturk_id", "sentence", "question", "user_answer", "correct_answer",
           "main_entity_gender", "question_category"]
QA_INTEGER = ["id_sentence", "is_correct", "batch_number", "index_in_batch", "hash_id"]
QA_FLOAT = ["time_fraction", "avg_sec_for_token"]
CALIBRATION_TEXT = ["ID", "mturk_id"]
CALIBRATION_INTEGER = ["batch_number", "hash_id"]
MAZE_TEXT = ["user_ip", "sentence", "pronoun", "main_entity", "relation_to_main", "correct"]
MAZE_RELATIONS = ("pro", "anti", "neutral", "pronoun-neutral")


def _file(folder: Path, kind: str, subset: str) -> Path:
    return {
        "qa": folder / "humans" / "qa" / f"{subset}.csv",
        "calibration": folder / "humans" / "qa_calibration" / f"{subset}.csv",
        "maze": folder / "humans" / "maze" / f"{subset}.csv",
    }[kind]


def model_file(folder: Path, model: str, subset: str) -> Path:
    return Path(folder) / "models" / model / f"{subset}.jsonl"


# --------------------------------------------------------------------------- checks

def _first_position(mask) -> int:
    return int(np.flatnonzero(np.asarray(mask))[0])


def read_text_table(path: Path, *, sep: str = ",") -> pd.DataFrame:
    """Read every cell as text, so an answer like "None" stays text, not NaN."""
    return read_table(path, sep=sep, source=str(path), dtype=str, keep_default_na=False)


def require_filled(df: pd.DataFrame, columns: Iterable[str], *, source: str) -> None:
    """Raise on the first empty cell; a row cut short by truncation ends in empty cells."""
    for column in columns:
        empty = df[column].isna() | (df[column].astype(str).str.strip() == "")
        if empty.any():
            pos = _first_position(empty)
            raise DataValidationError(
                f"empty cell ({int(empty.sum())} in this column; truncated file?)",
                source=source, row=file_row(pos), column=column, expected="a value",
                found="an empty cell")


def require_integer(df: pd.DataFrame, column: str, *, source: str) -> pd.Series:
    """`df[column]` (already numeric) as int64, or raise naming the first non-whole value."""
    values = df[column]
    bad = (values % 1 != 0) | (values.abs() >= 2 ** 53)
    if bad.any():
        pos = _first_position(bad)
        raise DataValidationError("not a whole number", source=source, row=file_row(pos),
                                  column=column, expected="an integer id or count",
                                  found=repr(values.iloc[pos]))
    return values.astype("int64")


def validate_typed(raw: pd.DataFrame, *, source: str, text: list[str], integer: list[str],
                   floats: list[str], allowed: dict | None = None,
                   unique: list[str] | None = None, what: str = "trial") -> pd.DataFrame:
    """validate_frame plus: no empty cell anywhere, whole numbers where ids are expected."""
    df = validate_frame(raw, source=source, required=text, numeric=integer + floats,
                        allowed=allowed, unique=unique, what=what)
    require_filled(raw, list(raw.columns), source=source)
    for column in integer + floats:
        # Re-parse the validated text with Python's correctly rounded float():
        # pd.to_numeric can be one ulp off (0.9516129032258065 -> ...064), and
        # users compare these numbers with the files.
        df[column] = raw[column].astype(str).str.strip().astype(float)
        finite = np.isfinite(df[column])
        if not finite.all():
            pos = _first_position(~finite)
            raise DataValidationError("not a finite number", source=source, row=file_row(pos),
                                      column=column, expected="a finite number",
                                      found=repr(raw[column].iloc[pos]))
    for column in integer:
        df[column] = require_integer(df, column, source=source)
    return df


# --------------------------------------------------------------------------- QA

def parse_wino_category(category: str) -> tuple[str, str]:
    """Split a wino `question_category` into (sentence type, asked entity).

    The category is `label.type.entity` or `label.entity.type` (label: the
    stereotype relation of the asked entity; entity: `main` = the pronoun's
    referent or `other`). The sentence type is the second field unless that is
    `main` or `other`, in which case it is the third; fields are stripped
    because the data has trailing spaces. Raises ValueError outside this grammar.
    """
    fields = [field.strip() for field in str(category).split(".")]
    if len(fields) != 3 or fields[0] not in WINO_CATEGORY_LABELS:
        raise ValueError(category)
    if fields[1] in ASKED_ENTITIES:
        asked, sentence_type = fields[1], fields[2]
    else:
        sentence_type, asked = fields[1], fields[2]
    if sentence_type not in WINO_SENTENCE_TYPES or asked not in ASKED_ENTITIES:
        raise ValueError(category)
    return sentence_type, asked


def condition_of_sentence_type(sentence_type: str) -> str:
    """anti-pro, neutral-pro, anti-neutral -> anti;
    pro-anti, neutral-anti, pro-neutral -> pro; anything else -> neutral."""
    if sentence_type in ANTI_SENTENCE_TYPES:
        return "anti"
    if sentence_type in PRO_SENTENCE_TYPES:
        return "pro"
    return "neutral"


def parse_bug_category(category: str) -> tuple[str, str]:
    """'pro-stereotype_Female' -> ('pro-stereotype', 'female'); raises ValueError otherwise."""
    match = BUG_CATEGORY.match(str(category).strip())
    if match is None:
        raise ValueError(category)
    return match.group(1), match.group(2).lower()


def _category_frame(categories: pd.Series, subset: str, *, source: str) -> pd.DataFrame:
    """Per-row sentence_type, asked_entity, condition and the category's own gender."""
    parsed = {}
    for value in pd.unique(categories):
        if str(value).strip() == FILLER:
            parsed[value] = (FILLER, None, FILLER, None)
            continue
        try:
            if subset == "wino":
                sentence_type, asked = parse_wino_category(value)
                parsed[value] = (sentence_type, asked, condition_of_sentence_type(sentence_type),
                                 None)
            else:
                label, gender = parse_bug_category(value)
                # BUG questions always ask for the gender of the annotated profession.
                parsed[value] = (label, "main", BUG_LABEL_CONDITION[label], gender)
        except ValueError:
            pos = _first_position(categories == value)
            expected = ("'filler' or label.type.entity / label.entity.type with label in "
                        f"{WINO_CATEGORY_LABELS}, type in {WINO_SENTENCE_TYPES}, "
                        "entity main/other" if subset == "wino" else
                        "'filler' or <pro-stereotype|anti-stereotype|neutral>_<Male|Female>")
            raise DataValidationError("unknown question_category label", source=source,
                                      row=file_row(pos), column="question_category",
                                      expected=expected, found=repr(value)) from None
    rows = [parsed[value] for value in categories]
    return pd.DataFrame(rows, index=categories.index,
                        columns=["sentence_type", "asked_entity", "condition", "category_gender"])


def is_non_coreference(condition: pd.Series, answer: pd.Series,
                       entity_gender: pd.Series) -> pd.Series:
    """A pro/anti trial answered with a gender other than the referent's (paper: ignored).

    Such an answer (e.g. "male" for a sentence whose pronoun is "she") reflects no
    coreference decision, whichever entity the question asked about.
    """
    answer = answer.str.strip().str.lower()
    keeps_coreference = answer.isin(NON_GENDER_ANSWERS) | (answer == entity_gender)
    return condition.isin(["pro", "anti"]) & ~keeps_coreference


def read_qa_trials(path: Path, subset: str) -> pd.DataFrame:
    """Validate one QA file and derive condition columns; rows stay in file order."""
    source = str(path)
    raw = read_text_table(path)
    df = validate_typed(raw, source=source, text=QA_TEXT, integer=QA_INTEGER, floats=QA_FLOAT,
                        allowed={"time_fraction": ALPHAS, "is_correct": (0, 1)},
                        unique=["ID"], what="response ID")
    require_allowed(df.assign(main_entity_gender=df["main_entity_gender"].str.lower()),
                    "main_entity_gender", GENDERS, source=source)
    categories = _category_frame(df["question_category"], subset, source=source)
    entity_gender = df["main_entity_gender"].str.strip().str.lower()
    category_gender = categories["category_gender"]
    disagree = category_gender.notna() & (category_gender != entity_gender)
    if disagree.any():
        pos = _first_position(disagree)
        raise DataValidationError(
            "question_category and main_entity_gender disagree on the referent's gender",
            source=source, row=file_row(pos), column="main_entity_gender",
            expected=repr(categories["category_gender"].iloc[pos]),
            found=repr(df["main_entity_gender"].iloc[pos]))
    positive_pace = df["avg_sec_for_token"] > 0
    if not positive_pace.all():
        pos = _first_position(~positive_pace)
        raise DataValidationError("reading pace must be positive", source=source,
                                  row=file_row(pos), column="avg_sec_for_token",
                                  expected="seconds per token > 0",
                                  found=repr(raw["avg_sec_for_token"].iloc[pos]))
    out = pd.DataFrame({
        "dataset": subset,
        "participant": df["mturk_id"].str.strip(),
        "session": df["hash_id"],
        "batch": df["batch_number"],
        "position": df["index_in_batch"],
        "trial_id": df["ID"],
        "sentence_id": df["id_sentence"],
        "sentence": df["sentence"],
        "question": df["question"],
        "alpha": df["time_fraction"],
        "question_category": df["question_category"],
        "sentence_type": categories["sentence_type"],
        "asked_entity": categories["asked_entity"],
        "condition": categories["condition"],
        "answer": df["user_answer"],
        "correct_answer": df["correct_answer"],
        "entity_gender": entity_gender,
        "is_correct": df["is_correct"].astype(bool),
        "sec_per_token": df["avg_sec_for_token"],
    })
    out["non_coreference"] = is_non_coreference(out["condition"], out["answer"],
                                                out["entity_gender"])
    return out


def read_calibration(path: Path, subset: str) -> pd.DataFrame:
    """One row per participant x calibration batch, with the calibration accuracy."""
    source = str(path)
    raw = read_text_table(path)
    df = validate_typed(raw, source=source, text=CALIBRATION_TEXT, integer=CALIBRATION_INTEGER,
                        floats=["total_performance"], unique=["mturk_id", "batch_number"],
                        what="calibration batch")
    in_range = df["total_performance"].between(0, 1)
    if not in_range.all():
        pos = _first_position(~in_range)
        raise DataValidationError("calibration performance out of range", source=source,
                                  row=file_row(pos), column="total_performance",
                                  expected="a proportion in [0, 1]",
                                  found=repr(raw["total_performance"].iloc[pos]))
    return pd.DataFrame({
        "dataset": subset,
        "participant": df["mturk_id"].str.strip(),
        "batch": df["batch_number"],
        "session": df["hash_id"],
        "calibration_accuracy": df["total_performance"],
    })


def keep_calibrated_participants(qa: pd.DataFrame, calibration: pd.DataFrame,
                                 log: ExclusionLog, subset: str) -> pd.DataFrame:
    """Only participants listed in the same dataset's calibration file are analysed."""
    absent = ~qa["participant"].isin(set(calibration["participant"]))
    n_people = qa.loc[absent, "participant"].nunique()
    return log.drop(qa, absent,
                    f"{subset} QA: participant not in humans/qa_calibration/{subset}.csv "
                    f"({n_people} participants)",
                    unit="trials", stage=f"{NAME}.qa")


def mark_repeated_responses(qa: pd.DataFrame) -> pd.DataFrame:
    """Add `repeated_response`: True for every response after the first (in file order)
    recorded at the same session position. Nothing is dropped."""
    return qa.assign(repeated_response=qa.duplicated(["session", "position"], keep="first"))


# --------------------------------------------------------------------------- MAZE

def read_bug_ids_mapping(path: Path) -> dict[str, int]:
    """The MAZE BUG sentence -> gold_BUG uid mapping (a JSON object of text -> integer)."""
    source = str(path)
    try:
        mapping = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataValidationError("file not found", source=source,
                                  expected="an existing file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataValidationError("not valid JSON (truncated or corrupted?)", source=source,
                                  found=str(exc)) from None
    if not isinstance(mapping, dict) or not mapping:
        raise DataValidationError("unexpected content", source=source,
                                  expected="a non-empty JSON object of sentence -> id",
                                  found=type(mapping).__name__)
    for sentence, uid in mapping.items():
        if not isinstance(uid, int) or isinstance(uid, bool):
            raise DataValidationError("sentence id is not an integer", source=source,
                                      column=sentence[:60], expected="an integer uid",
                                      found=repr(uid))
    return mapping


def read_maze(path: Path, subset: str, bug_ids: dict[str, int] | None = None) -> pd.DataFrame:
    """Validate one MAZE file; `file_line` identifies the trial (header = line 1)."""
    source = str(path)
    raw = read_text_table(path)
    content = [c for c in raw.columns if not str(c).startswith("Unnamed")]
    df = validate_typed(raw, source=source, text=MAZE_TEXT, integer=["sentence_id"],
                        floats=["time_to_answer"],
                        allowed={"relation_to_main": MAZE_RELATIONS,
                                 "correct": ("True", "False")},
                        unique=content, what="MAZE trial (identical row)")
    if bug_ids is not None:
        expected_id = df["sentence"].map(bug_ids)
        wrong = expected_id.isna() | (expected_id != df["sentence_id"])
        if wrong.any():
            pos = _first_position(wrong)
            raise DataValidationError(
                "sentence_id does not match original_data/BUG_ids_mapping.json",
                source=source, row=file_row(pos), column="sentence_id",
                expected=("the mapped id " + repr(int(expected_id.iloc[pos]))
                          if pd.notna(expected_id.iloc[pos])
                          else "a sentence listed in the mapping"),
                found=repr(int(df["sentence_id"].iloc[pos])))
    return pd.DataFrame({
        "dataset": subset,
        "participant": df["user_ip"].str.strip(),
        "file_line": [file_row(i) for i in range(len(df))],
        "sentence_id": df["sentence_id"],
        "sentence": df["sentence"],
        "pronoun": df["pronoun"],
        "main_entity": df["main_entity"],
        "relation_to_main": df["relation_to_main"],
        "correct": df["correct"] == "True",
        "time_to_answer": df["time_to_answer"],
    })


def select_maze_trials(maze: pd.DataFrame, log: ExclusionLog, subset: str) -> pd.DataFrame:
    """Correct pro/anti trials with a usable response time; adds condition and log_rt."""
    stage = f"{NAME}.maze"
    maze = log.drop(maze, ~maze["correct"], f"{subset} MAZE: incorrect trial",
                    unit="trials", stage=stage)
    maze = log.drop(maze, ~maze["relation_to_main"].isin(["pro", "anti"]),
                    f"{subset} MAZE: relation_to_main neutral or pronoun-neutral "
                    "(not a pro/anti trial)", unit="trials", stage=stage)
    # A 0 ms answer cannot be a reading response (and has no log).
    maze = log.drop(maze, maze["time_to_answer"] <= 0,
                    f"{subset} MAZE: time_to_answer <= 0 ms", unit="trials", stage=stage)
    out = maze.drop(columns=["correct"]).assign(condition=maze["relation_to_main"])
    out["log_rt"] = np.log(out["time_to_answer"])   # natural log of milliseconds
    return out


# --------------------------------------------------------------------------- models

def _valid_clusters(clusters, n_tokens: int) -> bool:
    if not isinstance(clusters, list):
        return False
    for cluster in clusters:
        if not isinstance(cluster, list):
            return False
        for span in cluster:
            if (not isinstance(span, list) or len(span) != 2
                    or not all(isinstance(i, int) and not isinstance(i, bool) for i in span)
                    or not 0 <= span[0] <= span[1] < n_tokens):
                return False
    return True


def read_model_outputs(path: Path) -> pd.DataFrame:
    """One row per jsonl line: line (1-based), text (the raw sentence), tokens, clusters."""
    source = str(path)
    if not Path(path).exists():
        raise DataValidationError("file not found", source=source, expected="an existing file")
    rows = []
    try:
        # split on "\n" only: str.splitlines() would also break at U+2028 inside text
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise DataValidationError("the file is not valid text (corrupted?)", source=source,
                                  expected="UTF-8 JSON lines",
                                  found=f"undecodable byte at offset {exc.start}") from None
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataValidationError("not valid JSON (truncated or corrupted?)",
                                      source=source, row=line_no,
                                      found=exc.msg) from None
        if not isinstance(record, dict):
            raise DataValidationError("line is not a JSON object", source=source,
                                      row=line_no, found=type(record).__name__)
        tokens = record.get("tokens", record.get("document"))
        if (not isinstance(tokens, list) or not tokens
                or not all(isinstance(t, str) for t in tokens)):
            raise DataValidationError("missing or malformed tokens", source=source,
                                      row=line_no, column="tokens/document",
                                      expected="a non-empty list of strings",
                                      found=repr(tokens)[:80])
        text = record.get("sentence", record.get("sentence_text", " ".join(tokens)))
        if not isinstance(text, str):
            raise DataValidationError("sentence text is not a string", source=source,
                                      row=line_no, column="sentence/sentence_text",
                                      found=repr(text)[:80])
        if "clusters" not in record:
            raise DataValidationError("missing key", source=source, row=line_no,
                                      column="clusters", expected="a list of clusters",
                                      found=f"keys {', '.join(record)}")
        if not _valid_clusters(record["clusters"], len(tokens)):
            raise DataValidationError("malformed clusters", source=source, row=line_no,
                                      column="clusters",
                                      expected="lists of [start, end] token spans with "
                                               f"0 <= start <= end < {len(tokens)}",
                                      found=repr(record["clusters"])[:80])
        rows.append({"line": line_no, "text": text, "tokens": tokens,
                     "clusters": record["clusters"]})
    if not rows:
        raise DataValidationError("the file is empty", source=source,
                                  expected="one JSON object per line", found="no lines")
    return pd.DataFrame(rows)


def read_wino_pool(path: Path) -> pd.DataFrame:
    """The wino sentence pool with its referent, pronoun, type and condition."""
    source = str(path)
    raw = read_table(path, sep="\t", source=source, dtype=str, keep_default_na=False)
    text = ["sentence", "main_entity_occupation", "pronoun", "type"]
    df = validate_frame(raw, source=source, required=text,
                        numeric=["Unnamed: 0", "main_entity_index"],
                        allowed={"type": WINO_SENTENCE_TYPES}, unique=["Unnamed: 0"],
                        what="sentence id")
    require_filled(raw, text, source=source)
    sentence_id = require_integer(df, "Unnamed: 0", source=source)
    return pd.DataFrame({
        "sentence_id": sentence_id,
        "sentence": df["sentence"],
        "entity": df["main_entity_occupation"],
        "entity_hint": require_integer(df, "main_entity_index", source=source),
        "pronoun": df["pronoun"],
        # No pronoun position in this pool: the first occurrence is taken. The 13
        # sentences that repeat the pronoun use it both times for the main entity
        # ("... the laborer out of her money and secretly hated her").
        "pronoun_hint": 0,
        "sentence_type": df["type"],
        "condition": df["type"].map(condition_of_sentence_type),
    })


def read_bug_pool(path: Path) -> pd.DataFrame:
    """The gold BUG pool; `sentence` is empty where the file has no text (counted later)."""
    source = str(path)
    raw = read_table(path, source=source, dtype=str, keep_default_na=False)
    text = ["profession", "g"]
    df = validate_frame(raw, source=source, required=text + ["sentence_text"],
                        numeric=["uid", "g_first_index", "profession_first_index", "stereotype"],
                        allowed=None, unique=["uid"], what="sentence id")
    require_filled(raw, text, source=source)
    stereotype = require_integer(df, "stereotype", source=source)
    require_allowed(pd.DataFrame({"stereotype": stereotype}), "stereotype",
                    sorted(BUG_STEREOTYPE_CONDITION), source=source)
    condition = stereotype.map(BUG_STEREOTYPE_CONDITION)
    return pd.DataFrame({
        "sentence_id": require_integer(df, "uid", source=source),
        "sentence": df["sentence_text"],
        "entity": df["profession"],
        "entity_hint": require_integer(df, "profession_first_index", source=source),
        "pronoun": df["g"],
        "pronoun_hint": require_integer(df, "g_first_index", source=source),
        "sentence_type": condition.map({"pro": "pro-stereotype", "anti": "anti-stereotype",
                                        "neutral": "neutral"}),
        "condition": condition,
    })


# --------------------------------------------------------------------------- schemas

def qa_schema():
    import pandera.pandas as pa

    text = pa.Column(str, nullable=False)
    return pa.DataFrameSchema({
        "dataset": pa.Column(str, pa.Check.isin(SUBSETS)),
        "participant": text,
        "session": pa.Column("int64"),
        "batch": pa.Column("int64", pa.Check.ge(0)),
        "position": pa.Column("int64", pa.Check.ge(0)),
        "trial_id": pa.Column(str, unique=True),
        "sentence_id": pa.Column("int64", pa.Check.ge(0)),
        "sentence": text,
        "question": text,
        "alpha": pa.Column("float64", pa.Check.isin(ALPHAS)),
        "question_category": text,
        "sentence_type": pa.Column(str, pa.Check.isin(
            WINO_SENTENCE_TYPES + tuple(BUG_LABEL_CONDITION) + (FILLER,))),
        "asked_entity": pa.Column(object, pa.Check.isin(ASKED_ENTITIES), nullable=True),
        "condition": pa.Column(str, pa.Check.isin(CONDITIONS + (FILLER,))),
        "answer": text,
        "correct_answer": text,
        "entity_gender": pa.Column(str, pa.Check.isin(GENDERS)),
        "is_correct": pa.Column(bool),
        "sec_per_token": pa.Column("float64", pa.Check.gt(0)),
        "non_coreference": pa.Column(bool),
        "repeated_response": pa.Column(bool),
    }, checks=[
        pa.Check(lambda d: ~d["non_coreference"] | d["condition"].isin(["pro", "anti"]),
                 element_wise=False, name="non_coreference only on pro/anti trials"),
        pa.Check(lambda d: d["asked_entity"].isna() == (d["condition"] == FILLER),
                 name="asked_entity missing exactly on fillers"),
        pa.Check(lambda d: d.loc[~d["repeated_response"]].duplicated(["session", "position"])
                 .sum() == 0, element_wise=False,
                 name="one first response per session position"),
    ], name=f"{NAME}.qa", strict=True)


def calibration_schema():
    import pandera.pandas as pa

    return pa.DataFrameSchema({
        "dataset": pa.Column(str, pa.Check.isin(SUBSETS)),
        "participant": pa.Column(str),
        "batch": pa.Column("int64", pa.Check.ge(0)),
        "session": pa.Column("int64"),
        "calibration_accuracy": pa.Column("float64", pa.Check.in_range(0, 1)),
    }, unique=["dataset", "participant", "batch"], name=f"{NAME}.calibration", strict=True)


def maze_schema():
    import pandera.pandas as pa

    return pa.DataFrameSchema({
        "dataset": pa.Column(str, pa.Check.isin(SUBSETS)),
        "participant": pa.Column(str),
        "file_line": pa.Column("int64", pa.Check.ge(2)),
        "sentence_id": pa.Column("int64", pa.Check.ge(0)),
        "sentence": pa.Column(str),
        "pronoun": pa.Column(str),
        "main_entity": pa.Column(str),
        "relation_to_main": pa.Column(str, pa.Check.isin(["pro", "anti"])),
        "time_to_answer": pa.Column("float64", pa.Check.gt(0)),
        "condition": pa.Column(str, pa.Check.isin(["pro", "anti"])),
        "log_rt": pa.Column("float64", pa.Check(np.isfinite)),
    }, unique=["dataset", "file_line"], name=f"{NAME}.maze", strict=True)


def sentence_pool_schema():
    import pandera.pandas as pa

    return pa.DataFrameSchema({
        "dataset": pa.Column(str, pa.Check.isin(SUBSETS)),
        "sentence_id": pa.Column("int64", pa.Check.ge(0)),
        "sentence": pa.Column(str),   # empty for the one gold_BUG row without text
        "entity": pa.Column(str),
        "entity_hint": pa.Column("int64"),
        "pronoun": pa.Column(str),
        "pronoun_hint": pa.Column("int64"),
        "sentence_type": pa.Column(str),
        "condition": pa.Column(str, pa.Check.isin(CONDITIONS)),
    }, unique=["dataset", "sentence_id"], name=f"{NAME}.sentence_pool", strict=True)


def model_outputs_schema():
    import pandera.pandas as pa

    return pa.DataFrameSchema({
        "model": pa.Column(str, pa.Check.isin(MODELS)),
        "dataset": pa.Column(str, pa.Check.isin(SUBSETS)),
        "line": pa.Column("int64", pa.Check.ge(1)),
        "text": pa.Column(str),
        "tokens": pa.Column(object),
        "clusters": pa.Column(object),
    }, unique=["model", "dataset", "line"], name=f"{NAME}.model_outputs", strict=True)


# --------------------------------------------------------------------------- load

def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True)


def load(folder: Path) -> LoadedDataset:
    """Load and validate every table; `folder` is <data dir>/cog_gb_eval2023."""
    folder = Path(folder)
    log = ExclusionLog()
    qa_parts, calibration_parts, maze_parts, output_parts = [], [], [], []
    bug_ids = read_bug_ids_mapping(folder / "original_data" / "BUG_ids_mapping.json")
    for subset in SUBSETS:
        calibration = read_calibration(_file(folder, "calibration", subset), subset)
        qa = read_qa_trials(_file(folder, "qa", subset), subset)
        qa = keep_calibrated_participants(qa, calibration, log, subset)
        qa_parts.append(mark_repeated_responses(qa))
        calibration_parts.append(calibration)
        maze = read_maze(_file(folder, "maze", subset), subset,
                         bug_ids if subset == "BUG" else None)
        maze_parts.append(select_maze_trials(maze, log, subset))
    pools = [read_wino_pool(folder / "original_data" / "wino_combined.csv").assign(dataset="wino"),
             read_bug_pool(folder / "original_data" / "gold_BUG.csv").assign(dataset="BUG")]
    for model in MODELS:
        for subset in SUBSETS:
            outputs = read_model_outputs(model_file(folder, model, subset))
            output_parts.append(outputs.assign(model=model, dataset=subset))
    pool_columns = list(sentence_pool_schema().columns)
    output_columns = list(model_outputs_schema().columns)
    tables = {
        "qa": check_output_schema(_concat(qa_parts), qa_schema(), source=f"{NAME}.qa"),
        "calibration": check_output_schema(_concat(calibration_parts), calibration_schema(),
                                           source=f"{NAME}.calibration"),
        "maze": check_output_schema(_concat(maze_parts), maze_schema(), source=f"{NAME}.maze"),
        "sentence_pool": check_output_schema(_concat(pools)[pool_columns],
                                             sentence_pool_schema(),
                                             source=f"{NAME}.sentence_pool"),
        "model_outputs": check_output_schema(_concat(output_parts)[output_columns],
                                             model_outputs_schema(),
                                             source=f"{NAME}.model_outputs"),
    }
    return LoadedDataset(NAME, tables, main="qa", exclusions=log,
                         participant_column="participant")
