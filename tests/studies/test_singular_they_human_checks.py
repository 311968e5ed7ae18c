"""What singular_they's --human loader and RQ2 do with files the README allows but that
used to pass silently or stop without a hint (issue 33, item 7): practice rows labelled
"Practice", a survey score that differs between one person's rows, an empty nb_acceptance
column, and stages too small to compare."""
from __future__ import annotations

import pandas as pd
import pytest

from gbstats.errors import DataValidationError
from gbstats.exclusions import ExclusionLog
from studies.singular_they import analysis as A
from studies.singular_they.human import (add_nb_groups, load_human, require_comparable_stages,
                                         usable_nb_groups)
from studies.singular_they.stimuli import select_stimuli

HEADER = "ID exp cond itm rating clust nBAcc gId\n"


@pytest.fixture(scope="module")
def stimuli(data_dir):
    return select_stimuli(None, data_dir)[0]


def _camilliere(tmp_path, rows):
    path = tmp_path / "camilliere_data.txt"
    path.write_text(HEADER + "".join(rows))
    return path


@pytest.mark.parametrize("label", ["practice", "Practice", "PRACTICE", " practice"])
def test_practice_rows_are_excluded_and_counted_whatever_their_case(tmp_path, stimuli, label):
    rows = [f's1 "{label}" gfamily 1 7 1 3 2\n', "s1 main gfamily 2 5 1 3 2\n",
            "s2 main gfamily 1 4 2 0 1\n"]
    trials, log = load_human(_camilliere(tmp_path, rows), stimuli)
    assert len(trials) == 2 and "gfamily-01" in set(trials.loc[trials["participant"] == "s2",
                                                                 "item"])
    assert trials.loc[trials["participant"] == "s1", "item"].tolist() == ["gfamily-02"]
    practice = [e for e in log.entries if "practice" in e.reason]
    assert [e.n for e in practice] == [1]


def test_a_familiarity_that_differs_between_one_persons_rows_names_them(tmp_path, stimuli):
    rows = ["s1 main gfamily 1 7 1 3 2\n", "s1 main gfamily 2 5 1 3 2\n",
            "s1 main gfamily 3 5 1 3 4\n"]   # file rows 2, 3 and 4: gId 2, 2, 4
    with pytest.raises(DataValidationError, match=r"participant 's1' has different gId values "
                                                  r"on different rows \(rows 2 and 4: 2 and 4\)"):
        load_human(_camilliere(tmp_path, rows), stimuli)


def test_an_acceptance_that_differs_between_rows_is_an_error_in_the_plain_layout(tmp_path,
                                                                                 stimuli):
    items = stimuli["item"].tolist()[:3]
    path = tmp_path / "human.csv"
    pd.DataFrame({"participant": ["p1"] * 3, "item": items, "rating": [1, 2, 3],
                  "stage": "innovator", "nb_acceptance": [2, None, 3]}).to_csv(path, index=False)
    with pytest.raises(DataValidationError, match=r"'nb_acceptance'.*rows 2 and 4"):
        load_human(path, stimuli)


def test_a_blank_beside_a_value_is_the_value(tmp_path, stimuli):
    items = stimuli["item"].tolist()[:2]
    path = tmp_path / "human.csv"
    pd.DataFrame({"participant": ["p1"] * 2, "item": items, "rating": [1, 2],
                  "stage": "innovator", "nb_acceptance": [None, 3]}).to_csv(path, index=False)
    trials, _ = load_human(path, stimuli)
    assert A.participant_scores(trials)["nb_acceptance"].tolist() == [3]


def _people(stages, nb=None):
    return add_nb_groups(pd.DataFrame(
        [{"participant": f"p{k}", "item": "x", "rating": 1.0, "stage": stage,
          "nb_acceptance": None if nb is None else nb[k], "familiarity": None}
         for k, stage in enumerate(stages)]))


@pytest.mark.parametrize("stages, found", [
    (["innovator"] * 3, "non-innovator: 0, innovator: 3, super-innovator: 0"),
    (["innovator"] * 2 + ["non-innovator"] * 2 + ["super-innovator"], "super-innovator: 1")])
def test_stages_too_small_to_compare_are_a_clean_error(stages, found):
    with pytest.raises(DataValidationError, match=f"human.csv.*'stage'.*{found}"):
        require_comparable_stages(_people(stages), "human.csv")


def test_an_empty_acceptance_column_leaves_out_that_grouping_with_a_reason():
    human = _people(["innovator", "innovator", "non-innovator", "non-innovator"])
    assert list(A.usable_groupings(human)) == ["stage"]
    assert "nb_acceptance column is empty" in A.skipped_groupings(human)["nb_group"]


def test_a_person_alone_in_an_acceptance_group_leaves_that_grouping_only():
    human = _people(["innovator"] * 2 + ["non-innovator"] * 3, nb=[0, 0, 3, 4, 5])
    log = ExclusionLog()
    out = usable_nb_groups(human, log)
    assert out["nb_group"].tolist() == ["low", "low", "high", "high", "high"]
    human = _people(["innovator"] * 2 + ["non-innovator"] * 2, nb=[0, 0, 1, 3])
    out = usable_nb_groups(human, log)
    assert out["nb_group"].tolist()[:2] == ["low", "low"] and out["nb_group"][2:].isna().all()
    assert [e.n for e in log.entries] == [0, 2]


def test_a_stage_without_two_scored_people_has_no_test_and_is_counted():
    human = _people(["non-innovator"] * 2 + ["innovator"] * 2 + ["super-innovator"] * 2,
                    nb=[0, 1, 2, 3, 4, None])
    log = ExclusionLog()
    table = A.stage_mann_whitney(human, exclusions=log)
    assert table["label_a"].tolist() == ["non-innovator"]  # innovator vs super: one score
    assert [e.unit for e in log.entries if "not run" in e.reason] == ["tests"]


def test_the_human_models_note_states_the_ratings_own_scale():
    # issue 44, case 2: a 0-100 slider file was described as "points of the 1-7 scale"
    import pandas as pd

    from studies.singular_they.steps import rating_scale_words

    slider = pd.DataFrame({"rating": [0.0, 37.5, 100.0]})
    assert rating_scale_words(slider, simulated=False) == (
        "estimates in points of the ratings' own scale (the file's ratings run from 0 to 100)")
    assert "1-7" in rating_scale_words(slider, simulated=True)
