"""The input-validation helpers every loader uses: clean errors that say where."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gbstats.data.validate import read_table, validate_frame
from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog

GOOD = "participant,item,condition,rating\np1,i1,close,3\np1,i2,distant,4\np2,i1,close,5\n"


def write(tmp_path, text, name="trials.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def check(df, source="trials.csv"):
    return validate_frame(df, source=source, required=["participant", "item", "condition"],
                          numeric=["rating"], allowed={"condition": ["close", "distant"]},
                          unique=["participant", "item"])


def test_good_table_passes(tmp_path):
    out = check(read_table(write(tmp_path, GOOD)))
    assert out["rating"].dtype == float and len(out) == 3


def test_empty_file(tmp_path):
    with pytest.raises(DataValidationError, match="empty"):
        read_table(write(tmp_path, ""))


def test_header_only(tmp_path):
    with pytest.raises(DataValidationError, match="no rows"):
        read_table(write(tmp_path, "participant,item\n"))


def test_truncated_file_names_the_line(tmp_path):
    # a row cut in the middle of a quoted field: the tokenizer hits EOF inside quotes
    with pytest.raises(DataValidationError, match="malformed"):
        read_table(write(tmp_path, GOOD + 'p3,"i1,clo'))


def test_row_with_extra_fields_names_the_line(tmp_path):
    with pytest.raises(DataValidationError, match="line 4"):
        read_table(write(tmp_path, GOOD.replace("p2,i1,close,5", "p2,i1,close,5,9,9")))


def test_missing_column_names_file_and_column(tmp_path):
    df = read_table(write(tmp_path, GOOD)).drop(columns="condition")
    with pytest.raises(DataValidationError) as exc:
        check(df)
    msg = str(exc.value)
    assert "trials.csv" in msg and "'condition'" in msg and "missing column" in msg


def test_wrong_dtype_names_row_and_column(tmp_path):
    df = read_table(write(tmp_path, GOOD.replace("p1,i2,distant,4", "p1,i2,distant,four")))
    with pytest.raises(DataValidationError) as exc:
        check(df)
    assert exc.value.row == 3 and exc.value.column == "rating" and "'four'" in str(exc.value)


def test_unknown_label_names_row_and_allowed_values(tmp_path):
    df = read_table(write(tmp_path, GOOD.replace("p2,i1,close", "p2,i1,clsoe")))
    with pytest.raises(DataValidationError) as exc:
        check(df)
    assert exc.value.row == 4 and "'clsoe'" in str(exc.value) and "'close'" in str(exc.value)


def test_duplicated_trial(tmp_path):
    df = read_table(write(tmp_path, GOOD + "p2,i1,close,2\n"))
    with pytest.raises(DataValidationError, match="duplicated trial") as exc:
        check(df)
    assert exc.value.row == 5


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from(["p1", "p2", "p3"]),
                               st.sampled_from(["i1", "i2", "i3", "i4"]),
                               st.sampled_from(["close", "distant", "far", ""]),
                               st.one_of(st.integers(1, 7).map(str), st.just("x"), st.just(""))),
                     min_size=1, max_size=12),
       drop=st.sampled_from([None, "participant", "item", "condition", "rating"]))
def test_any_malformed_table_gives_clean_error_or_valid_output(tmp_path, rows, drop):
    """Whatever the table, the result is a valid frame or a DataValidationError
    that names the file and a column — never another exception type."""
    df = pd.DataFrame(rows, columns=["participant", "item", "condition", "rating"])
    df = df.replace("", pd.NA)
    if drop:
        df = df.drop(columns=drop)
    try:
        out = check(df)
    except DataValidationError as exc:
        assert "trials.csv" in str(exc) and exc.column is not None
        return
    assert out["condition"].isin(["close", "distant"]).all()
    assert not out.duplicated(["participant", "item"]).any()
    assert out["rating"].notna().all()


def test_exclusion_log_counts_every_drop():
    df = pd.DataFrame({"x": [1, 2, 3, 4, None]})
    log = ExclusionLog()
    kept = log.drop(df, df["x"] > 2, "x above 2", stage="test")
    assert len(kept) == 3  # 1, 2, and the missing value (mask NaN counts as keep)
    assert log.to_records() == [{"stage": "test", "reason": "x above 2", "n": 2, "unit": "rows",
                                   "kind": "excluded"}]


def test_numeric_text_is_parsed_with_correct_rounding():
    # pd.to_numeric's fast path reads "0.9516129032258065" one ulp low; the
    # validated column must equal Python's correctly rounded float().
    df = pd.DataFrame({"rating": ["0.9516129032258065", "1"]})
    out = validate_frame(df, source="x.csv", numeric=["rating"])
    assert out["rating"].tolist() == [float("0.9516129032258065"), 1.0]


def test_output_schema_error_names_the_failing_column():
    import pandera.pandas as pa

    schema = pa.DataFrameSchema({"a": pa.Column(int), "b": pa.Column(int, pa.Check.ge(0))},
                                unique=["a"], name="demo")
    df = pd.DataFrame({"a": [1, 1], "b": [0, -5]})
    from gbstats.data.validate import check_output_schema

    with pytest.raises(DataValidationError) as exc:
        check_output_schema(df, schema, source="demo table")
    assert exc.value.column == "b"
