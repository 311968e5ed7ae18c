"""cog_gb_eval2023 loader (Lior & Stanovsky 2023): real files and malformed inputs.

Reference values come from three places, named at each test:
- counts recomputed here from the raw files by another route (csv module,
  independent parsing), never copied from the loader's output;
- the authors' own published per-alpha table (SLAB-NLP/Cog-GB-Eval,
  experiment_results/processed/humans/QA/{wino,BUG}/aggregated.md);
- hand derivations written in comments.
"""
from __future__ import annotations

import csv
import json
import math
import re
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gbstats.data import cog_gb_eval2023 as cog
from gbstats.data.registry import load_dataset
from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def folder(data_dir) -> Path:
    return Path(data_dir) / "cog_gb_eval2023"


@pytest.fixture(scope="session")
def loaded(data_dir):
    return load_dataset("cog_gb_eval2023", data_dir)


def raw_rows(path: Path, delimiter: str = ",") -> list[dict]:
    """The file through the csv module: an independent route from the loader's pandas."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter=delimiter))


def excluded(loaded, reason_start: str) -> int:
    hits = [e.n for e in loaded.exclusions.entries if e.reason.startswith(reason_start)]
    assert len(hits) == 1, f"expected one exclusion starting {reason_start!r}, found {hits}"
    return hits[0]


# --------------------------------------------------------------------------- real files: QA

def test_tables_and_summary(loaded, folder):
    assert set(loaded.tables) == {"qa", "calibration", "maze", "sentence_pool", "model_outputs"}
    assert loaded.main == "qa" and loaded.participant_column == "participant"
    # The analysed participants are exactly those of the calibration files (every
    # calibrated participant has QA trials); mturk ids are shared across datasets.
    calibrated = {r["mturk_id"] for s in cog.SUBSETS
                  for r in raw_rows(folder / "humans" / "qa_calibration" / f"{s}.csv")}
    summary = loaded.summary()
    assert summary["n_participants"] == len(calibrated)
    assert summary["n_rows"] == len(loaded.table)
    assert all(e["n"] >= 0 for e in summary["exclusions"])


def test_alpha_takes_only_the_three_design_values(loaded):
    qa = loaded.table
    # Paper: display time = alpha x pace x length with alpha in {0.25, 0.5, 0.75}.
    for subset in cog.SUBSETS:
        assert set(qa.loc[qa["dataset"] == subset, "alpha"]) == {0.25, 0.5, 0.75}


def independent_wino_condition(category: str) -> str:
    """The issue's rule, written a second time with a regex instead of split()."""
    category = category.strip()
    if category == "filler":
        return "filler"
    m = re.fullmatch(r"(?:pro-stereotype|anti-stereotype|neutral)\."
                     r"(?:(?:main|other)\.(?P<t1>[a-z-]+)|(?P<t2>[a-z-]+)\.(?:main|other))",
                     category)
    assert m is not None, category
    sentence_type = m.group("t1") or m.group("t2")
    return {"anti-pro": "anti", "neutral-pro": "anti", "anti-neutral": "anti",
            "pro-anti": "pro", "neutral-anti": "pro", "pro-neutral": "pro"}.get(
                sentence_type, "neutral")


def test_every_raw_category_maps_and_agrees_with_the_sentence_pools(loaded, folder):
    qa = loaded.table.set_index("trial_id")
    for subset in cog.SUBSETS:
        for row in raw_rows(folder / "humans" / "qa" / f"{subset}.csv"):
            if row["ID"] not in qa.index:      # excluded trial, counted elsewhere
                continue
            category = row["question_category"]
            if subset == "wino":
                expected = independent_wino_condition(category)
            else:
                label = category.split("_")[0]
                expected = {"filler": "filler", "pro-stereotype": "pro",
                            "anti-stereotype": "anti"}[label]
            assert qa.at[row["ID"], "condition"] == expected, (subset, category)
    # A second source: the wino pool's own `type` column and BUG's gold `stereotype`
    # (1 pro, -1 anti) must give the same condition for the sentence a trial shows.
    wino_type = {int(r["Unnamed: 0"]): r["type"]
                 for r in raw_rows(folder / "original_data" / "wino_combined.csv", "\t")}
    bug_stereo = {int(r["uid"]): int(r["stereotype"])
                  for r in raw_rows(folder / "original_data" / "gold_BUG.csv")}
    trials = loaded.table[loaded.table["condition"] != "filler"]
    wino = trials[trials["dataset"] == "wino"]
    assert (wino["sentence_type"] == wino["sentence_id"].map(wino_type)).all()
    bug = trials[trials["dataset"] == "BUG"]
    assert (bug["condition"] == bug["sentence_id"].map(bug_stereo).map(
        {1: "pro", -1: "anti"})).all()


def test_participant_exclusion_equals_trials_of_uncalibrated_people(loaded, folder):
    qa = loaded.table
    for subset in cog.SUBSETS:
        calibrated = {r["mturk_id"] for r in
                      raw_rows(folder / "humans" / "qa_calibration" / f"{subset}.csv")}
        rows = raw_rows(folder / "humans" / "qa" / f"{subset}.csv")
        absent = sum(r["mturk_id"] not in calibrated for r in rows)
        assert absent > 0   # the data README says such trials exist
        assert excluded(loaded, f"{subset} QA: participant not in") == absent
        assert set(qa.loc[qa["dataset"] == subset, "participant"]) == calibrated


def test_repeated_session_positions_are_marked_and_kept(loaded, folder):
    # Every response of a calibrated participant is kept (the published rule);
    # the second and later responses at one session position are marked.
    qa = loaded.table
    assert not qa["trial_id"].duplicated().any()
    for subset in cog.SUBSETS:
        calibrated = {r["mturk_id"] for r in
                      raw_rows(folder / "humans" / "qa_calibration" / f"{subset}.csv")}
        rows = [r for r in raw_rows(folder / "humans" / "qa" / f"{subset}.csv")
                if r["mturk_id"] in calibrated]
        seen, repeats = set(), []
        for r in rows:
            key = (r["hash_id"], r["index_in_batch"])
            if key in seen:
                repeats.append(r["ID"])
            seen.add(key)
        mine = qa[qa["dataset"] == subset]
        assert len(mine) == len(rows)
        assert repeats   # the data has such repeats (issue 14)
        assert sorted(mine.loc[mine["repeated_response"], "trial_id"]) == sorted(repeats)
        assert not mine.loc[~mine["repeated_response"]].duplicated(["session", "position"]).any()


# The authors' Table 2 counts (aggregated.md, see module docstring): per alpha,
# (correct, total) for anti and pro, ignored = non-coreference answers, fillers.
# Their script counts every response of a calibrated participant, repeats
# included, and ignores non-coreference answers in wino only.
PUBLISHED_WINO = {
    0.75: {"anti": (567, 632), "pro": (546, 608), "ignored": 27, "filler": (972, 1208)},
    0.5: {"anti": (556, 635), "pro": (537, 605), "ignored": 30, "filler": (985, 1213)},
    0.25: {"anti": (482, 614), "pro": (457, 581), "ignored": 67, "filler": (940, 1216)},
}
PUBLISHED_BUG = {
    0.75: {"anti": (424, 512), "pro": (445, 507), "filler": (645, 1030)},
    0.5: {"anti": (406, 513), "pro": (442, 516), "filler": (624, 1031)},
    0.25: {"anti": (386, 510), "pro": (422, 511), "filler": (621, 1028)},
}


def _authors_trials(folder: Path, subset: str) -> pd.DataFrame:
    calibration = cog.read_calibration(folder / "humans" / "qa_calibration" / f"{subset}.csv",
                                       subset)
    qa = cog.read_qa_trials(folder / "humans" / "qa" / f"{subset}.csv", subset)
    return cog.keep_calibrated_participants(qa, calibration, ExclusionLog(), subset)


def _cell(trials: pd.DataFrame) -> tuple[int, int]:
    return int(trials["is_correct"].sum()), len(trials)


def test_conditions_and_non_coreference_reproduce_the_published_table(folder, loaded):
    # The loaded table itself (every response kept) and the file-level route agree.
    assert len(loaded.table) == sum(len(_authors_trials(folder, s)) for s in cog.SUBSETS)
    wino = _authors_trials(folder, "wino")
    for alpha, published in PUBLISHED_WINO.items():
        at = wino[wino["alpha"] == alpha]
        kept = at[~at["non_coreference"]]
        assert _cell(kept[kept["condition"] == "anti"]) == published["anti"]
        assert _cell(kept[kept["condition"] == "pro"]) == published["pro"]
        assert int(at["non_coreference"].sum()) == published["ignored"]
        assert _cell(at[at["condition"] == "filler"]) == published["filler"]
    bug = _authors_trials(folder, "BUG")
    for alpha, published in PUBLISHED_BUG.items():
        at = bug[bug["alpha"] == alpha]   # flagged answers stay in, as the authors did
        assert _cell(at[at["condition"] == "anti"]) == published["anti"]
        assert _cell(at[at["condition"] == "pro"]) == published["pro"]
        assert _cell(at[at["condition"] == "filler"]) == published["filler"]


def test_bug_questions_ask_about_the_annotated_profession(loaded, folder):
    # Why asked_entity is "main" for every BUG gender question: the question names
    # gold_BUG's `profession`, the pronoun's referent ("what is the gender of X?").
    profession = {int(r["uid"]): r["profession"].lower()
                  for r in raw_rows(folder / "original_data" / "gold_BUG.csv")}
    qa = loaded.table
    bug = qa[(qa["dataset"] == "BUG") & (qa["condition"] != "filler")]
    asked = bug["question"].str.lower().str.rstrip("?").str.split().str[-1]
    assert (asked == bug["sentence_id"].map(profession)).all()
    assert (bug["asked_entity"] == "main").all()


def test_output_schemas_reject_a_broken_table(loaded):
    from gbstats.data.validate import check_output_schema

    broken = loaded.table.head(50).copy()
    pro_row = broken.index[broken["condition"] == "pro"][0]
    broken.loc[pro_row, "condition"] = "stereotyped"
    with pytest.raises(DataValidationError) as info:
        check_output_schema(broken, cog.qa_schema(), source="cog_gb_eval2023.qa")
    assert info.value.column == "condition" and "stereotyped" in str(info.value)
    maze = loaded.tables["maze"].head(20).copy()
    maze.loc[maze.index[3], "log_rt"] = float("-inf")
    with pytest.raises(DataValidationError):
        check_output_schema(maze, cog.maze_schema(), source="cog_gb_eval2023.maze")


def test_non_coreference_is_an_answer_of_the_opposite_binary_gender(loaded):
    qa = loaded.table
    questions = qa[qa["condition"] != "filler"]
    # Gender questions offer male / female / neutral / unknown only.
    assert set(questions["answer"].str.lower()) <= {"male", "female", "neutral", "unknown"}
    opposite = (questions["answer"].str.lower().isin(["male", "female"])
                & (questions["answer"].str.lower() != questions["entity_gender"])
                & questions["condition"].isin(["pro", "anti"]))
    assert (questions["non_coreference"] == opposite).all()
    assert not qa.loc[qa["condition"].isin(["filler", "neutral"]), "non_coreference"].any()
    # The correct answer is the referent's gender or "unknown", so never flagged.
    assert not qa.loc[qa["non_coreference"], "is_correct"].any()


def test_design_balance_within_complete_sessions(loaded):
    qa = loaded.table
    # A session is complete when the participant's calibration for it was recorded
    # and no position is missing (aborted restarts have no calibration record).
    calibrated_sessions = set(loaded.tables["calibration"]["session"])
    n_checked = 0
    for (subset, session), s in qa.groupby(["dataset", "session"]):
        n = len(s)
        if session not in calibrated_sessions or set(s["position"]) != set(range(n)):
            continue
        n_checked += 1
        # Alpha is assigned in equal thirds within a session.
        assert Counter(s["alpha"]) == {a: n // 3 for a in cog.ALPHAS}, (subset, n)
        fillers = int((s["condition"] == "filler").sum())
        if subset == "BUG":
            # Paper: half the questions are fillers; BUG's gender questions are
            # half pro, half anti.
            assert fillers * 2 == n
            assert (s["condition"] == "pro").sum() == (s["condition"] == "anti").sum()
        else:
            # wino sessions of 180 trials are half fillers; longer sessions add
            # gender questions only, so no session is more than half fillers.
            assert fillers * 2 <= n
            if n == 180:
                assert fillers == 90
    assert n_checked > 0


# --------------------------------------------------------------------------- real files: rest

def test_calibration_table(loaded, folder):
    cal = loaded.tables["calibration"]
    for subset in cog.SUBSETS:
        rows = raw_rows(folder / "humans" / "qa_calibration" / f"{subset}.csv")
        mine = cal[cal["dataset"] == subset]
        assert len(mine) == len(rows)
        expected = {(r["mturk_id"], int(r["batch_number"])): float(r["total_performance"])
                    for r in rows}
        got = dict(zip(zip(mine["participant"], mine["batch"]), mine["calibration_accuracy"]))
        assert got == expected


def test_maze_keeps_pro_anti_trials_with_a_usable_time(loaded, folder):
    maze = loaded.tables["maze"]
    assert set(maze["condition"]) == {"pro", "anti"}
    assert (maze["time_to_answer"] > 0).all()
    assert (maze["log_rt"] == maze["time_to_answer"].map(math.log)).all()
    for subset in cog.SUBSETS:
        rows = raw_rows(folder / "humans" / "maze" / f"{subset}.csv")
        other = sum(r["relation_to_main"] not in ("pro", "anti") for r in rows)
        no_time = sum(r["relation_to_main"] in ("pro", "anti")
                      and float(r["time_to_answer"]) <= 0 for r in rows)
        assert excluded(loaded, f"{subset} MAZE: relation_to_main") == other
        assert excluded(loaded, f"{subset} MAZE: time_to_answer") == no_time
        assert (maze["dataset"] == subset).sum() == len(rows) - other - no_time
        # The file holds correct trials only (its name: correct_answers.csv).
        assert excluded(loaded, f"{subset} MAZE: incorrect trial") == 0


def test_maze_condition_agrees_with_the_sentence_pools(loaded, folder):
    maze = loaded.tables["maze"]
    # wino: relation_to_main is the main entity's part of the pool type
    # ("anti-pro" -> anti); BUG: the gold stereotype label (1 pro, -1 anti).
    wino_type = {int(r["Unnamed: 0"]): r["type"]
                 for r in raw_rows(folder / "original_data" / "wino_combined.csv", "\t")}
    bug_stereo = {int(r["uid"]): r["stereotype"]
                  for r in raw_rows(folder / "original_data" / "gold_BUG.csv")}
    wino = maze[maze["dataset"] == "wino"]
    assert (wino["condition"] == wino["sentence_id"].map(wino_type).str.split("-").str[0]).all()
    bug = maze[maze["dataset"] == "BUG"]
    assert (bug["condition"] == bug["sentence_id"].map(bug_stereo).map(
        {"1": "pro", "-1": "anti"})).all()


def _jsonl_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def test_model_outputs_and_pools_are_loaded_whole(loaded, folder):
    # Loading only: one row per jsonl line and per pool row, nothing matched or scored.
    outputs = loaded.tables["model_outputs"]
    for model in cog.MODELS:
        for subset in cog.SUBSETS:
            mine = outputs[(outputs["model"] == model) & (outputs["dataset"] == subset)]
            assert len(mine) == _jsonl_lines(cog.model_file(folder, model, subset))
            assert mine["line"].tolist() == list(range(1, len(mine) + 1))
    pool = loaded.tables["sentence_pool"]
    assert (pool["dataset"] == "wino").sum() == len(
        raw_rows(folder / "original_data" / "wino_combined.csv", "\t"))
    bug_rows = raw_rows(folder / "original_data" / "gold_BUG.csv")
    bug = pool[pool["dataset"] == "BUG"]
    assert len(bug) == len(bug_rows)
    assert (bug["sentence"].str.strip() == "").sum() == sum(
        not r["sentence_text"].strip() for r in bug_rows)
    # models/SpanBERT/BUG.jsonl line 1 holds a `document` token list and no text field:
    # the text is the tokens joined by spaces.
    first = outputs[(outputs["model"] == "SpanBERT") & (outputs["dataset"] == "BUG")].iloc[0]
    assert first["text"] == " ".join(first["tokens"])
    assert first["text"].startswith("My friend , who grew up in Africa")


# --------------------------------------------------------------------------- pure functions

WINO_TYPES = st.sampled_from(cog.WINO_SENTENCE_TYPES)


@SETTINGS
@given(label=st.sampled_from(cog.WINO_CATEGORY_LABELS), sentence_type=WINO_TYPES,
       asked=st.sampled_from(cog.ASKED_ENTITIES), type_first=st.booleans(),
       trailing=st.sampled_from(["", " ", "  "]))
def test_wino_category_parses_in_either_field_order(label, sentence_type, asked,
                                                     type_first, trailing):
    middle, last = (sentence_type, asked) if type_first else (asked, sentence_type)
    category = f"{label}.{middle}.{last}{trailing}"
    assert cog.parse_wino_category(category) == (sentence_type, asked)
    assert cog.condition_of_sentence_type(sentence_type) == independent_wino_condition(category)


CATEGORY_PIECES = st.sampled_from(list(cog.WINO_CATEGORY_LABELS) + list(cog.WINO_SENTENCE_TYPES)
                                   + list(cog.ASKED_ENTITIES) + ["pro", "anti", "x", ""])


@SETTINGS
@given(text=st.one_of(st.text(max_size=40),
                      st.lists(CATEGORY_PIECES, min_size=1, max_size=4).map(".".join)))
def test_wino_category_outside_the_grammar_is_rejected(text):
    try:
        sentence_type, asked = cog.parse_wino_category(text)
    except ValueError:
        return
    # Anything accepted is a genuine label.type.entity / label.entity.type once
    # each field is stripped, and gets the same condition by the regex route.
    stripped = ".".join(field.strip() for field in text.split("."))
    assert sentence_type in cog.WINO_SENTENCE_TYPES and asked in cog.ASKED_ENTITIES
    assert (independent_wino_condition(stripped)
            == cog.condition_of_sentence_type(sentence_type))


# --------------------------------------------------------------------------- malformed input

@pytest.fixture(scope="module")
def qa_sample(folder) -> pd.DataFrame:
    """The first 30 wino QA rows, as text: the base every malformed table starts from."""
    return pd.read_csv(folder / "humans" / "qa" / "wino.csv", dtype=str,
                       keep_default_na=False, nrows=30)


@pytest.fixture(scope="module")
def maze_sample(folder) -> pd.DataFrame:
    return pd.read_csv(folder / "humans" / "maze" / "wino.csv", dtype=str,
                       keep_default_na=False, nrows=30)


def _write(df: pd.DataFrame, directory: str, name: str = "table.csv") -> Path:
    path = Path(directory) / name
    df.to_csv(path, index=False)
    return path


def _assert_clean(exc: DataValidationError, path: Path, *, row=None, column=None):
    message = str(exc)
    assert str(path) in message and exc.source == str(path)
    if row is not None:
        assert exc.row == row and f"row {row}" in message
    if column is not None:
        assert exc.column == column and repr(column) in message


def test_the_unmodified_sample_loads(qa_sample, maze_sample):
    with tempfile.TemporaryDirectory() as tmp:
        assert len(cog.read_qa_trials(_write(qa_sample, tmp), "wino")) == 30
        assert len(cog.read_maze(_write(maze_sample, tmp, "m.csv"), "wino")) == 30


@SETTINGS
@given(column=st.sampled_from(cog.QA_TEXT + cog.QA_INTEGER + cog.QA_FLOAT))
def test_qa_missing_column(qa_sample, column):
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(qa_sample.drop(columns=column), tmp)
        with pytest.raises(DataValidationError) as info:
            cog.read_qa_trials(path, "wino")
        _assert_clean(info.value, path, column=column)


@SETTINGS
@given(row=st.integers(0, 29),
       label=st.one_of(
           st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30),
           st.lists(CATEGORY_PIECES, min_size=1, max_size=4).map(".".join)))
def test_qa_unknown_category_label(qa_sample, row, label):
    try:
        cog.parse_wino_category(label)
        return                      # a valid label is not a malformed one
    except ValueError:
        pass
    if label.strip() in ("filler", ""):
        return                      # filler is valid; blank cells are caught as empty
    bad = qa_sample.copy()
    bad.loc[row, "question_category"] = label
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(bad, tmp)
        with pytest.raises(DataValidationError) as info:
            cog.read_qa_trials(path, "wino")
    first = int(bad.index[bad["question_category"] == label][0])
    _assert_clean(info.value, path, row=first + 2, column="question_category")


@SETTINGS
@given(row=st.integers(0, 29),
       column=st.sampled_from(cog.QA_INTEGER + cog.QA_FLOAT),
       value=st.sampled_from(["abc", "1.5.2", "yes", "NaN?", "--"]))
def test_qa_wrong_dtype(qa_sample, row, column, value):
    bad = qa_sample.copy()
    bad.loc[row, column] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(bad, tmp)
        with pytest.raises(DataValidationError) as info:
            cog.read_qa_trials(path, "wino")
    _assert_clean(info.value, path, row=row + 2, column=column)


@SETTINGS
@given(row=st.integers(0, 29), alpha=st.sampled_from(["0.3", "1", "0", "0.125", "-0.25"]))
def test_qa_alpha_outside_the_design(qa_sample, row, alpha):
    bad = qa_sample.copy()
    bad.loc[row, "time_fraction"] = alpha
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(bad, tmp)
        with pytest.raises(DataValidationError) as info:
            cog.read_qa_trials(path, "wino")
    _assert_clean(info.value, path, row=row + 2, column="time_fraction")


@SETTINGS
@given(source=st.integers(0, 29), insert_at=st.integers(0, 30))
def test_qa_duplicated_trial(qa_sample, source, insert_at):
    copy = qa_sample.iloc[[source]]
    bad = pd.concat([qa_sample.iloc[:insert_at], copy, qa_sample.iloc[insert_at:]],
                    ignore_index=True)
    second = int(bad.index[bad["ID"] == copy["ID"].iloc[0]][1])
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(bad, tmp)
        with pytest.raises(DataValidationError) as info:
            cog.read_qa_trials(path, "wino")
    _assert_clean(info.value, path, row=second + 2, column="ID")


@SETTINGS
@given(line=st.integers(1, 30), fraction=st.floats(0.0, 0.95))
def test_qa_truncated_file(qa_sample, line, fraction):
    with tempfile.TemporaryDirectory() as tmp:
        text = _write(qa_sample, tmp).read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        # Cut line `line` (1 = first data row) before its last field starts, so
        # the row really lost data (a cut inside the last number can look valid).
        last_field = lines[line].rstrip("\n").rfind(",")
        cut = max(1, int(last_field * fraction))   # cut 0 would leave a valid file
        path = Path(tmp) / "cut.csv"
        path.write_text("".join(lines[:line]) + lines[line][:cut], encoding="utf-8")
        with pytest.raises(DataValidationError) as info:
            cog.read_qa_trials(path, "wino")
        _assert_clean(info.value, path)


def test_empty_files_are_clean_errors():
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.csv"
        empty.write_text("", encoding="utf-8")
        for reader in (lambda p: cog.read_qa_trials(p, "wino"),
                       lambda p: cog.read_calibration(p, "wino"),
                       lambda p: cog.read_maze(p, "wino"),
                       cog.read_model_outputs, cog.read_wino_pool, cog.read_bug_pool,
                       cog.read_bug_ids_mapping):
            with pytest.raises(DataValidationError) as info:
                reader(empty)
            assert str(empty) in str(info.value)


@SETTINGS
@given(offset_fraction=st.floats(0.0, 1.0),
       junk=st.sampled_from([b"\xff", b"\xc3\x28", b"\x80\x80"]))
def test_corrupted_bytes_are_clean_errors(folder, offset_fraction, junk):
    sources = {"qa.csv": (folder / "humans" / "qa" / "wino.csv",
                          lambda p: cog.read_qa_trials(p, "wino")),
               "out.jsonl": (cog.model_file(folder, "s2e", "wino"), cog.read_model_outputs)}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (original, reader) in sources.items():
            data = original.read_bytes()
            data = data[:data.rfind(b"\n", 0, 20000) + 1]   # whole lines: only the junk is wrong
            at = int(len(data) * offset_fraction)
            path = Path(tmp) / name
            path.write_bytes(data[:at] + junk + data[at:])
            with pytest.raises(DataValidationError) as info:
                reader(path)
            assert str(path) in str(info.value)


@SETTINGS
@given(column=st.sampled_from(["user_ip", "sentence_id", "relation_to_main",
                               "time_to_answer", "correct"]))
def test_maze_missing_column(maze_sample, column):
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(maze_sample.drop(columns=column), tmp)
        with pytest.raises(DataValidationError) as info:
            cog.read_maze(path, "wino")
        _assert_clean(info.value, path, column=column)


@SETTINGS
@given(row=st.integers(0, 29), change=st.sampled_from([
    ("time_to_answer", "fast"), ("sentence_id", "2.5"), ("relation_to_main", "stereotyped"),
    ("correct", "maybe")]))
def test_maze_bad_cell(maze_sample, row, change):
    column, value = change
    bad = maze_sample.copy()
    bad.loc[row, column] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(bad, tmp)
        with pytest.raises(DataValidationError) as info:
            cog.read_maze(path, "wino")
    _assert_clean(info.value, path, row=row + 2, column=column)


@SETTINGS
@given(source=st.integers(0, 29))
def test_maze_duplicated_trial(maze_sample, source):
    bad = pd.concat([maze_sample, maze_sample.iloc[[source]]], ignore_index=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(bad, tmp)
        with pytest.raises(DataValidationError) as info:
            cog.read_maze(path, "wino")
    _assert_clean(info.value, path, row=len(bad) + 1)


def test_calibration_out_of_range_and_missing_column(folder):
    sample = pd.read_csv(folder / "humans" / "qa_calibration" / "wino.csv", dtype=str,
                         keep_default_na=False)
    with tempfile.TemporaryDirectory() as tmp:
        bad = sample.copy()
        bad.loc[3, "total_performance"] = "1.7"
        path = _write(bad, tmp)
        with pytest.raises(DataValidationError) as info:
            cog.read_calibration(path, "wino")
        _assert_clean(info.value, path, row=5, column="total_performance")
        path = _write(sample.drop(columns="mturk_id"), tmp)
        with pytest.raises(DataValidationError) as info:
            cog.read_calibration(path, "wino")
        _assert_clean(info.value, path, column="mturk_id")


@SETTINGS
@given(line=st.integers(1, 20), cut=st.integers(1, 60))
def test_model_output_truncated_line(folder, line, cut):
    lines = cog.model_file(folder, "s2e", "wino").read_text(encoding="utf-8").splitlines()[:20]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wino.jsonl"
        kept = lines[:line - 1] + [lines[line - 1][:cut]]
        path.write_text("\n".join(kept) + "\n", encoding="utf-8")
        with pytest.raises(DataValidationError) as info:
            cog.read_model_outputs(path)
        _assert_clean(info.value, path, row=line)


@SETTINGS
@given(line=st.integers(1, 20), span=st.sampled_from([[5, 2], [-1, 0], [0, 500], ["a", 1]]))
def test_model_output_bad_cluster_span(folder, line, span):
    records = [json.loads(x) for x in cog.model_file(folder, "s2e", "wino")
               .read_text(encoding="utf-8").splitlines()[:20]]
    records[line - 1]["clusters"] = [[span, [0, 0]]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wino.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
        with pytest.raises(DataValidationError) as info:
            cog.read_model_outputs(path)
        _assert_clean(info.value, path, row=line, column="clusters")


def test_load_names_the_corrupted_file(folder):
    """End to end: load() on a copy of the dataset with one damaged QA file."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "cog_gb_eval2023"
        for path in folder.rglob("*"):      # content only: the originals are read-only
            if path.is_file():
                (copy / path.relative_to(folder)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, copy / path.relative_to(folder))
        target = copy / "humans" / "qa" / "BUG.csv"
        rows = target.read_text(encoding="utf-8").splitlines(keepends=True)
        rows[5] = rows[5].replace("pro-stereotype_", "pro-stereotypical_").replace(
            "anti-stereotype_", "anti-stereotypical_").replace('"filler"', '"fil1er"')
        target.write_text("".join(rows), encoding="utf-8")
        with pytest.raises(DataValidationError) as info:
            cog.load(copy)
        _assert_clean(info.value, target, row=6, column="question_category")
