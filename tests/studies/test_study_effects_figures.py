"""Each people-vs-model study's effects figure reads the right rows of its own results table
(issue 43), and the figure fixes of name_gender and pronoun_memory hold. Pure functions over
small frames; the whole-study runs that write the figures are checked in
test_study_tables.py (test_every_figure_opens_as_an_image_and_is_listed)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gbstats.report.effects_figure import check_effects


def _name_gender_effects() -> pd.DataFrame:
    """comparison.effects' shape: every mirror x effect x source x scale, the estimate
    numbered so that each row can be told apart."""
    from studies.name_gender.comparison import EFFECT_SOURCES

    rows, k = [], 0
    for exp, mirror, effects in ((1, "m_cond", ["last minus first and full", "full minus first"]),
                                 (1, "m_nameGender", ["full minus first",
                                                      "rating slope (per point)"]),
                                 (3, "m_noOther", ["last minus first and full", "full minus first",
                                                   "rating slope (per point)"])):
        for effect in effects:
            for source in EFFECT_SOURCES.values():
                for scale in ("conditional", "population-averaged"):
                    k += 1
                    rows.append({"experiment": exp, "model": mirror, "effect": effect,
                                 "source": source, "scale": scale, "estimate": float(k),
                                 "std_error": 0.1, "ci_low": k - 0.2, "ci_high": k + 0.2})
    return pd.DataFrame(rows)


def test_name_gender_draws_the_verdicts_effects_like_for_like_and_averaged():
    from studies.name_gender.plots import effects_frame

    effects = _name_gender_effects()
    frame = check_effects(effects_frame(effects))
    assert len(frame) == 12                             # 6 effects x people and model
    assert set(frame["side"]) == {"people", "model"}
    assert list(dict.fromkeys(frame["panel"])) == ["Exp 1", "Exp 3"]
    # every row drawn is a population-averaged like-for-like or model row of the table
    chosen = effects[(effects["scale"] == "population-averaged")
                     & effects["source"].isin(["People, like for like", "Model"])]
    assert set(frame["estimate"]) <= set(chosen["estimate"])
    # Exp 1's rating slope is the gender-rating model's, its conditions the condition model's
    exp1 = frame[frame["panel"] == "Exp 1"]
    slope = exp1[exp1["label"] == "Gender rating, per point"]
    expected = chosen[(chosen["model"] == "m_nameGender")
                      & (chosen["effect"] == "rating slope (per point)")]
    assert sorted(slope["estimate"]) == sorted(expected["estimate"])
    assert "Full name minus first name" in set(exp1["label"])


def test_name_gender_without_a_model_draws_people_alone():
    from studies.name_gender.plots import effects_frame

    effects = _name_gender_effects()
    frame = effects_frame(effects[effects["source"] != "Model"])
    assert set(frame["side"]) == {"people"} and len(frame) == 6


def test_name_gender_rating_points_pool_each_first_names_items():
    from studies.name_gender.plots import first_name_points

    items = pd.DataFrame({"experiment": 3, "Condition": "full",
                          "item_key": ["Blair Young", "Blair Smith", "Ann Lee", "Ann Roe"],
                          "n_she": [1, 3, 8, 9], "n_he_she": [10, 10, 10, 10],
                          "GenderRating": [4.2, 4.2, 6.8, 6.8],
                          "share_two_way": [0.2, 0.4, 0.9, 0.7]})
    points = first_name_points(items).set_index("first_name")
    assert points.loc["Blair", "she_share"] == pytest.approx(4 / 20)   # trials pooled
    assert points.loc["Blair", "model_share"] == pytest.approx(0.3)    # items averaged
    assert points.loc["Ann", "n_items"] == 2


def test_name_gender_rating_figure_has_no_empty_panel():
    from studies.name_gender.plots import rating_figure

    rows = []
    for exp, cond in ((1, "first"), (1, "full"), (1, "last"), (3, "first"), (3, "full"),
                      (3, "last")):
        for name, rating in (("Ann", 6.5), ("Bob", 1.5)):
            rows.append({"experiment": exp, "Condition": cond, "item_key": name,
                         "n_she": 5, "n_he_she": 10, "share_two_way": 0.5,
                         # Exp 1's last-name items show no first name: no rating
                         "GenderRating": np.nan if (exp, cond) == (1, "last") else rating})
    fig = rating_figure(pd.DataFrame(rows))
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == 5
    assert all(ax.lines or ax.collections for ax in shown)
    assert "Exp 1, last name" not in {ax.get_title() for ax in shown}
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:2] == ["people (95% Wilson interval)", "model"]


def _pronoun_memory_contrasts(at_floor: bool | None = None) -> pd.DataFrame:
    rows, k = [], 0
    for exp, contrasts in (("1a", [("they gap", "all")]),
                           ("2", [("they gap", "all"), ("they gap", "PSA=0"),
                                  ("gap closed by PSA", "all"),
                                  ("gap closed by Biographies", "all")])):
        for task in ("memory", "production"):
            for contrast, condition in contrasts:
                k += 1
                rows.append({"experiment": exp, "task": task, "contrast": contrast,
                             "condition": condition, "people": k, "people_low": k - 0.5,
                             "people_high": k + 0.5, "model": -k, "model_low": -k - 0.5,
                             "model_high": -k + 0.5})
    out = pd.DataFrame(rows)
    if at_floor is not None:
        out["at_floor"] = [at_floor and t == "production" for t in out["task"]]
    return out


def test_pronoun_memory_draws_the_gap_and_what_closes_it():
    from studies.pronoun_memory.plots import effects_frame

    frame = check_effects(effects_frame(_pronoun_memory_contrasts()))
    # 1a: 2 tasks x the gap; 2: 2 tasks x (gap, closed by PSA, closed by biographies)
    assert len(frame) == 2 * (2 + 6)
    assert list(dict.fromkeys(frame["panel"])) == ["Exp 1A", "Exp 2"]
    assert "Memory: gap closed by the PSA" in set(frame["label"])
    assert not frame["label"].str.contains("PSA=0").any()        # per-level gaps left out
    people = frame[(frame["side"] == "people") & (frame["label"] == "Production: they gap")]
    assert people["estimate"].tolist() == [2, 7]        # Exp 1A's row 2, Exp 2's row 7


def test_pronoun_memory_leaves_a_model_side_at_floor_out_and_says_so():
    from studies.pronoun_memory.plots import effects_frame

    frame = effects_frame(_pronoun_memory_contrasts(at_floor=True))
    production = frame[frame["label"].str.startswith("Production")]
    assert set(production["side"]) == {"people"}
    assert production["label"].str.endswith("(model at floor: not drawn)").all()
    memory = frame[frame["label"].str.startswith("Memory")]
    assert set(memory["side"]) == {"people", "model"}


def test_pronoun_memory_distractor_figure_shows_every_pronoun_and_no_ruff_panel():
    from studies.pronoun_memory.plots import distractor_figure

    rows = []
    for task in ("memory", "production"):
        for pronoun, acc in (("he/him", 0.6), ("she/her", 0.55), ("they/them", 0.003)):
            for n in (1, 4, 12):
                for filler in ("none", "with math text"):
                    rows.append({"task": task, "pronoun": pronoun, "n_characters": n,
                                 "filler": filler, "accuracy": acc, "ci_low": acc / 2,
                                 "ci_high": acc * 1.5})
    fig = distractor_figure(pd.DataFrame(rows))
    assert len(fig.axes) == 2
    assert [ax.get_title() for ax in fig.axes] == ["Memory (Exp 1A's lists)",
                                                   "Production (Exp 1A's lists)"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend[:3] == ["he", "she", "they"] and "chance (1/3)" in legend
    assert any("at floor" in t.get_text() for t in fig.axes[1].texts)


def test_singular_they_draws_both_effects_on_each_sides_scale():
    from studies.singular_they.plots import effects_frame

    both = pd.DataFrame([
        {"effect": e, "side": side, "backend": b, "estimate": est, "ci_low": est - 0.1,
         "ci_high": est + 0.1}
        for side in ("model surprisal", "human rating")
        for b in ("lme4", "statsmodels")
        for e, est in (("(Intercept)", 5.0), ("close", 0.25), ("gendered", -0.5))])
    frame = check_effects(effects_frame(both))
    assert len(frame) == 4 and set(frame["side"]) == {"people", "model"}
    # the +1/-1 slope doubled: the whole difference between the two levels
    assert sorted(frame["estimate"]) == [-1.0, -1.0, 0.5, 0.5]
    assert frame["panel"].nunique() == 2


def test_name_gender_people_vs_model_has_one_colour_and_a_legend_for_it():
    from studies.name_gender.plots import people_vs_model_figure

    rows = [{"experiment": exp, "Condition": cond, "item_key": f"n{k}", "n_she": k,
             "n_he_she": 10, "she_share": k / 10, "share_two_way": 0.1 * k}
            for exp in (1, 3) for cond in ("first", "full", "last") for k in range(1, 6)]
    fig = people_vs_model_figure(pd.DataFrame(rows))
    colours = {tuple(c.get_color()) if not isinstance(c.get_color(), str) else c.get_color()
               for ax in fig.axes for c in ax.lines if c.get_linestyle() == "None"}
    assert len(colours) == 1
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["a name item: people (95% Wilson interval) and the model", "equality"]
    assert fig.get_size_inches()[0] == pytest.approx(7.0)
