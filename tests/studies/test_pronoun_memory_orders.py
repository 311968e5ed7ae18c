"""pronoun_memory's model side measures what it claims (issue 40): the options in every
order (a real model: the average is the same whatever order the options come in), the
position bias on a case built by hand, contextual calibration by hand, the worked
example counterbalanced, the not-measuring-memory rule and the floor rule."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError
from models.option_orders import (check_balanced, contextual_calibration, option_orders,
                                  order_balanced, order_label, position_bias)
from studies.pronoun_memory import compare as K
from studies.pronoun_memory import contexts as C


@pytest.fixture(scope="module")
def tables(data_dir):
    from gbstats.data.registry import load_dataset

    return load_dataset("gardner2023", data_dir).tables


# --------------------------------------------------------------------------
# the orders

@pytest.mark.parametrize("design, n", [("all", 6), ("latin", 3)])
def test_every_option_fills_every_position_equally_often(design, n):
    orders = option_orders(("a", "b", "c"), design)
    assert len(orders) == n and len(set(orders)) == n
    assert orders[0] == ("a", "b", "c")                   # the given order first
    for position in range(3):
        assert sorted(o[position] for o in orders) == sorted(["a", "b", "c"] * (n // 3))


def test_orders_refuse_repeats_and_unknown_designs():
    with pytest.raises(DataValidationError, match="distinct"):
        option_orders(("a", "a", "b"))
    with pytest.raises(DataValidationError, match="one of"):
        option_orders(("a", "b"), "random")


def _choices(p_by_position, orders, prompts=("x",)):
    """Choice rows for a reader that gives p_by_position[k] to whatever sits in position k."""
    rows = []
    for prompt in prompts:
        for order in orders:
            for k, option in enumerate(order):
                rows.append({"prompt_id": prompt, "order": order_label(order), "option": option,
                             "position": k + 1, "probability": p_by_position[k]})
    return pd.DataFrame(rows)


def test_position_bias_of_a_reader_of_positions_only():
    """A reader that gives .7/.2/.1 to the first/second/third line whatever it says: its
    position bias is exactly .7/.2/.1, its most probable option always the first, and
    averaged over the six orders every option gets 1/3: no content preference is left."""
    choices = _choices([0.7, 0.2, 0.1], option_orders(C.OPTIONS), prompts=("x", "y"))
    bias = position_bias(choices)
    np.testing.assert_allclose(bias["p_chosen"], [0.7, 0.2, 0.1])
    np.testing.assert_allclose(bias["argmax_share"], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(bias["chance"], 1 / 3)
    assert (bias["n_orders"] == 6).all()
    balanced = order_balanced(choices)
    np.testing.assert_allclose(balanced["probability"], 1 / 3)
    listed = choices[(choices["order"] == order_label(C.OPTIONS)) & (choices["prompt_id"] == "x")]
    assert listed.set_index("option").loc["he/him", "probability"] == 0.7   # one order: he


def test_position_bias_with_content_by_hand():
    """Two options; the reader prefers option a (logit +1) and position 1 (logit +0.5):
    P(a first) = expit(1.5), P(a second) = expit(0.5). By hand: position 1 is chosen with
    (expit(1.5) + expit(-0.5)) / 2 = (0.8176 + 0.3775) / 2 = 0.5975; a, averaged over the
    two orders, (0.8176 + 0.6225) / 2 = 0.7200."""
    from scipy.special import expit

    rows = [{"prompt_id": "x", "order": "a | b", "option": "a", "position": 1,
             "probability": expit(1.5)},
            {"prompt_id": "x", "order": "a | b", "option": "b", "position": 2,
             "probability": 1 - expit(1.5)},
            {"prompt_id": "x", "order": "b | a", "option": "b", "position": 1,
             "probability": 1 - expit(0.5)},
            {"prompt_id": "x", "order": "b | a", "option": "a", "position": 2,
             "probability": expit(0.5)}]
    choices = pd.DataFrame(rows)
    bias = position_bias(choices).set_index("position")["p_chosen"]
    assert bias[1] == pytest.approx(0.5975, abs=1e-4)
    assert bias[2] == pytest.approx(1 - 0.5975, abs=1e-4)
    balanced = order_balanced(choices).set_index("option")["probability"]
    assert balanced["a"] == pytest.approx(0.7200, abs=1e-4)


def test_an_unbalanced_design_is_refused():
    choices = _choices([0.7, 0.2, 0.1], option_orders(C.OPTIONS)[:2])   # two orders only
    with pytest.raises(DataValidationError, match="balanced"):
        check_balanced(choices)


def test_contextual_calibration_by_hand():
    """p = (.6, .3, .1), content-free (.5, .25, .25): p / q = (1.2, 1.2, 0.4), over 2.8 =
    (3/7, 3/7, 1/7)."""
    out = contextual_calibration([0.6, 0.3, 0.1], [0.5, 0.25, 0.25])
    np.testing.assert_allclose(out, [3 / 7, 3 / 7, 1 / 7])
    # a content-free choice that is uniform changes nothing
    np.testing.assert_allclose(contextual_calibration([0.6, 0.3, 0.1], [1 / 3] * 3),
                               [0.6, 0.3, 0.1])
    with pytest.raises(DataValidationError, match="positive"):
        contextual_calibration([0.6, 0.3, 0.1], [0.5, 0.5, 0.0])


# --------------------------------------------------------------------------
# what the model reads

def test_worked_example_is_counterbalanced(tables):
    for experiment in ("1a", "1b", "2"):
        instruction = C.task_instructions(tables, experiment)["production"]
        variants = C.example_instructions(instruction)
        assert variants["he"] == instruction                 # as people read it
        for pronoun in ("she", "they"):
            assert variants[pronoun] == instruction.replace("he made dinner.",
                                                            f"{pronoun} made dinner.")
    prompts = C.build_prompts(tables, "1a", C.exp1_characters(tables, "1a"))
    row = prompts.iloc[0]
    assert row["production_prefix_he"] == row["production_prefix"]
    assert "they made dinner." in row["production_prefix_they"]
    assert row["production_prefix_they"].endswith(row["production_prefix"].rsplit("\n", 1)[1])


def test_content_free_question_and_the_probe(tables):
    assert C.content_free_question("What pronouns does Daniel use?") == \
        "What pronouns does N/A use?"
    assert C.content_free_question("What are Brian's pronouns?") == "What are N/A's pronouns?"
    prompts = C.all_prompts(tables, 2023, distractors=False, experiments=["2"])
    probe = prompts[prompts["probe"]]
    # the probe is scored whatever the experiments: Exp 1A's 36 characters, each alone
    assert len(probe) == 36 and (probe["experiment"] == "1a").all()
    assert (probe["n_characters"] == 1).all() and not probe["filler"].any()


@pytest.mark.needs_model
def test_order_balanced_choice_is_the_same_whatever_order_the_options_come_in(tables, smollm):
    """The real model: every order is presented equally often, the balanced probability is
    the mean of forced_choice over the six orders, and it does not change when the options
    are given in another order (the six orders are the same set), while the one listed
    order alone does (the model has a position bias, so this test can fail)."""
    from models.forced_choice import forced_choice
    from studies.pronoun_memory import model_side as M

    prompts = C.build_prompts(tables, "1a", C.exp1_characters(tables, "1a"), n_characters=1,
                              filler=False).head(3)
    units = M.continuation_units(prompts)
    memory = units[(units["task"] == "memory") & ~units["prompt_id"].str.endswith(
        M.CONTENT_FREE_SUFFIX)]
    assert memory.groupby("order").size().nunique() == 1 and memory["order"].nunique() == 6
    a = M.score_prompts(prompts, smollm, use_cache=False)
    shuffled = ("they/them", "he/him", "she/her")
    b = M.score_prompts(prompts, smollm, use_cache=False,
                        orders=option_orders(shuffled)[::-1])
    cols = ["p_mem_he", "p_mem_she", "p_mem_they"]
    np.testing.assert_allclose(a[cols].to_numpy(), b[cols].to_numpy(), atol=1e-6)
    np.testing.assert_allclose(a[cols].sum(axis=1), 1.0, atol=1e-9)
    # the average of forced_choice's own choice over the six orders
    by_order = []
    for order in option_orders(C.OPTIONS):
        frames = [C.memory_frame(h, q, order) for h, q in
                  zip(prompts["memory_head"], prompts["memory_question"])]
        choice = forced_choice(frames, list(C.OPTIONS), items=list(prompts["prompt_id"]),
                               lm=smollm, slot=C.SLOT, span="word", use_cache=False)
        by_order.append(choice.pivot(index="item", columns="variant", values="probability")
                        .loc[prompts["prompt_id"], list(C.OPTIONS)].to_numpy())
    np.testing.assert_allclose(a[cols].to_numpy(), np.mean(by_order, axis=0), atol=1e-5)
    # one order alone is not order-free: the listed order's choice differs from the average
    assert np.abs(a[["p_listed_he", "p_listed_she", "p_listed_they"]].to_numpy()
                  - a[cols].to_numpy()).max() > 0.01


# --------------------------------------------------------------------------
# the rules

def _probe(accuracy: dict, n: int = 12) -> pd.DataFrame:
    """A scored probe: n characters per pronoun with the given accuracy on both tasks."""
    rows = []
    for pronoun, acc in accuracy.items():
        for k in range(n):
            rows.append({"probe": True, "Pronoun": pronoun, "Name": f"{pronoun}{k}",
                         "memory_accuracy": acc + 0.01 * (k % 3 - 1),
                         "production_accuracy": acc + 0.01 * (k % 3 - 1),
                         "listed_accuracy": acc, "shown_accuracy": acc})
    return pd.DataFrame(rows)


def test_a_model_at_chance_alone_is_not_measuring_memory():
    """he .80, she .17, they .14 (issue 40's numbers): mean .37 but its interval reaches 1/3
    -> not measuring memory; he .9, she .8, they .7 -> measuring."""
    at_chance = K.memory_probe(_probe({"he/him": 0.80, "she/her": 0.17, "they/them": 0.14}),
                               seed=1)
    assert K.measuring(at_chance) == {"memory": False, "production": False}
    low = at_chance[(at_chance["task"] == "memory") & (at_chance["pronoun"] == "all")].iloc[0]
    assert low["accuracy"] == pytest.approx((0.80 + 0.17 + 0.14) / 3)
    assert low["ci_low"] <= 1 / 3
    good = K.memory_probe(_probe({"he/him": 0.9, "she/her": 0.8, "they/them": 0.7}), seed=1)
    assert K.measuring(good) == {"memory": True, "production": True}
    assert K.measuring(None) == {"memory": False, "production": False}


def _tables(p_value: float, they_model: tuple[float, float]):
    """One experiment's they cells and a 'gap closed by PSA' contrast."""
    cells = pd.DataFrame([{"experiment": "2", "task": t, "pronoun": "they/them", "cell": "all",
                           "people": 0.6, "model": 0.2, "difference": -0.4,
                           "difference_low": -0.5, "difference_high": -0.3,
                           "p_value": p_value} for t in K.TASKS])
    model = pd.DataFrame([{"experiment": "2", "task": "production", "Pronoun": p,
                           "PSA": psa, "Biographies": 0, "accuracy": acc}
                          for psa, they in zip((0, 1), they_model)
                          for p, acc in (("he/him", 0.5), ("she/her", 0.5),
                                         ("they/them", they))])
    sides = K.floor_sides(model, "2", "production", "gap closed by PSA", "all")
    contrasts = pd.DataFrame([{"experiment": "2", "task": "production",
                               "contrast": "gap closed by PSA", "condition": "all",
                               "people": 0.3, "model": 0.5, "difference": 0.2,
                               "difference_low": 0.1, "difference_high": 0.3,
                               "p_value": p_value,
                               "model_sides": ", ".join(f"{v:.4f}" for v in sides),
                               "at_floor": max(sides) < K.FLOOR}])
    return cells, contrasts, sides


def test_floor_rule():
    """P(they) .003 vs .005 (issue 40's 'gap closed by biographies'): both below the floor,
    so 'at floor: no comparison' however small p is, and out of the Holm family; .003 vs
    .05 is a comparison."""
    cells, contrasts, sides = _tables(0.001, (0.003, 0.005))
    assert sides == pytest.approx([0.003, 0.005])
    c, k = K.with_verdicts(cells, contrasts, {"memory": True, "production": True})
    assert k["verdict"].iloc[0] == K.AT_FLOOR and np.isnan(k["p_holm"].iloc[0])
    assert (c["verdict"] == "differs").all() and (c["family_size"] == 2).all()
    lines = K.verdicts(c, k, name="SmolLM2-135M-Instruct, 4-bit (Q4_1)")
    assert any(line.startswith("Exp 2, production, gap closed by the PSA: at floor: no "
                               "comparison") for line in lines)
    assert not any("gap closed by the PSA" in line and "differs" in line for line in lines)
    cells, contrasts, _ = _tables(0.001, (0.003, 0.05))
    _, k = K.with_verdicts(cells, contrasts, {"memory": True, "production": True})
    assert k["verdict"].iloc[0] == "differs" and k["family_size"].iloc[0] == 3


def test_no_memory_verdict_from_a_model_not_measuring_memory():
    cells, contrasts, _ = _tables(0.001, (0.2, 0.3))
    probe = K.memory_probe(_probe({"he/him": 0.80, "she/her": 0.17, "they/them": 0.14}),
                           seed=1)
    measures = {"memory": False, "production": True}
    c, k = K.with_verdicts(cells, contrasts, measures)
    memory = c[c["task"] == "memory"].iloc[0]
    assert memory["verdict"] == K.NOT_MEASURING and np.isnan(memory["p_holm"])
    assert c[c["task"] == "production"]["verdict"].iloc[0] == "differs"
    name = "SmolLM2-135M-Instruct, 4-bit (Q4_1)"
    lines = K.verdicts(c, k, name=name, probe=probe[probe["task"] == "memory"], p_floor=2 / 201)
    assert any(line.startswith(f"Memory: {name} is **not measuring memory**") for line in lines)
    assert not any(line.startswith("Exp 2, memory") for line in lines)
    # a bootstrap p at its floor (2 / (B + 1)) is not printed as exact
    # (the family here: the production they cell and the contrast, 2 x 2 / 201)
    assert any("Holm p ≤ .020" in line for line in lines if "production" in line)


def test_women_vs_men_to_name_gender_standard(tables):
    """Exp 2's people and a constructed model score per item: the primary test (corrected
    correlations) is declared, Holm runs over the tasks that are tested, TOST and the
    ceiling are reported, and a task that is not measuring memory gets no verdict and is
    not a test of the family."""
    from gbstats.exclusions import ExclusionLog

    log = ExclusionLog()
    people = K.people_long(tables, log)
    items = people[people["experiment"] == "2"].groupby(
        ["List", "Name", "Pronoun", "task"])["accuracy"].mean().reset_index()
    rng = np.random.default_rng(0)
    model = items.assign(experiment="2", accuracy=np.clip(
        items["accuracy"] + rng.normal(0, 0.1, len(items)), 0.01, 0.99))
    with pytest.warns(Warning):       # corrected correlations near 1 warn; not the point
        out = K.gender_alignment(people, model, log, n_boot=50, seed=1,
                                 measures={"memory": False, "production": True}, name="M")
    comparison = out["gender_comparison"].set_index("task")
    assert comparison["primary"].all() and (comparison["family"] == K.GENDER_FAMILY).all()
    assert comparison.loc["memory", "verdict"] == K.NOT_MEASURING
    assert np.isnan(comparison.loc["memory", "p_holm"])
    assert np.isfinite(comparison.loc["memory", "p_value"])          # shown, not tested
    assert comparison.loc["production", "family_size"] == 1
    assert comparison.loc["production", "equivalence_bound"] == K.EQUIVALENCE_BOUND
    assert np.isfinite(comparison.loc["production", "p_equivalence_holm"])
    assert set(out["gender_profile_agreement"]["task"]) == {"memory", "production"}
    assert "max_alignment_difference" in out["gender_profile_agreement"]
    assert "not measuring memory: no verdict" in out["gender_answer"]
    # no simulation has calibrated these tests on 0/1 answers in this design (issue 40):
    # the verdict says so in results.json, in the table and in the sentence
    assert comparison.loc["production", "verdict"].endswith(K.NOT_CALIBRATED)
    from studies.pronoun_memory.presentation import gender_comparison_view
    shown = gender_comparison_view(out["gender_comparison"]).set_index("task")["verdict"]
    assert shown["Production"].endswith("; " + K.NOT_CALIBRATED)
    assert shown["Memory"] == K.NOT_MEASURING
    assert f", {K.NOT_CALIBRATED}." in out["gender_answer"]


def test_a_corrected_profile_agreement_above_one_reads_its_ceiling_at_the_lower_end(tables):
    """Issue 40, item 9: a corrected agreement above 1 (noise) gives a ceiling of 0, which
    says nothing; the sentence reads the ceiling at the interval's lower end instead, never
    "at most 0.00"."""
    from gbstats.exclusions import ExclusionLog

    log = ExclusionLog()
    people = K.people_long(tables, log)
    items = people[people["experiment"] == "2"].groupby(
        ["List", "Name", "Pronoun", "task"])["accuracy"].mean().reset_index()
    model = items.assign(experiment="2")
    with pytest.warns(Warning):
        out = K.gender_alignment(people, model, log, n_boot=50, seed=1, name="M")
    profile = out["gender_profile_agreement"].set_index("task")
    above = profile[profile["r_profiles_corrected"] > 1]
    assert len(above), "the memory task's profiles came out above 1 in the recorded run"
    for task, row in above.iterrows():
        line = next(x for x in out["gender_answer"].splitlines() if f"**{task}**" in x)
        assert "at most 0.00" not in line
        assert f"read at its interval's lower end, {row['ci_low']:.2f}" in line
        assert f"up to {row['max_alignment_difference_upper']:.2f}" in line


def test_a_verdict_the_bootstrap_floor_would_decide_is_unresolved():
    """Issue 40: a bootstrap p of B replicates is at least 2 / (B + 1). With B = 50 the
    floor is 2/51 = .039; three tests at it get Holm p 3 x .039 = .118, which would read
    "no difference shown" although the data may hold p far below it: the verdict is
    UNRESOLVED, and the replicates to draw are the fewest with 3 x 2 / (B + 1) at most
    .005, B = 1199 (hand: 6 / .005 = 1200 = B + 1)."""
    floor = 2 / 51
    cells, contrasts, _ = _tables(floor, (0.2, 0.3))
    c, k = K.with_verdicts(cells, contrasts, {"memory": True, "production": True},
                           p_floor=floor)
    assert (c["verdict"] == K.UNRESOLVED).all() and (k["verdict"] == K.UNRESOLVED).all()
    assert c["p_holm"].iloc[0] == pytest.approx(3 * floor)
    assert c["p_holm_lower"].iloc[0] == 0.0 and c["p_at_floor"].all()
    assert K.replicates_to_resolve(c, k) == 1199
    lines = K.verdicts(c, k, name="m", p_floor=floor)
    assert any(K.UNRESOLVED in line and "Holm p ≤ .118" in line for line in lines)
    # without the floor in hand (no p_floor) the old reading stands: no unresolved rows
    c, k = K.with_verdicts(cells, contrasts, {"memory": True, "production": True})
    assert (c["verdict"] == "no difference shown").all()
    # at B = 1199 the p-values at the floor (2 / 1200) decide: Holm 3 x .00167 = .005
    floor = 2 / 1200
    cells, contrasts, _ = _tables(floor, (0.2, 0.3))
    c, k = K.with_verdicts(cells, contrasts, {"memory": True, "production": True},
                           p_floor=floor)
    assert (c["verdict"] == "differs").all() and K.replicates_to_resolve(c, k) == 0
    lines = K.verdicts(c, k, name="m", p_floor=floor)
    assert any("Holm p ≤ .005" in line for line in lines)
    # at B = 999 they decide too (Holm .006), but the floor is above .005: draw more
    cells, contrasts, _ = _tables(2 / 1000, (0.2, 0.3))
    c, k = K.with_verdicts(cells, contrasts, {"memory": True, "production": True},
                           p_floor=2 / 1000)
    assert (c["verdict"] == "differs").all() and K.replicates_to_resolve(c, k) == 1199


def test_a_holm_p_raised_by_a_floor_row_is_a_bound():
    """A p just above the floor whose Holm p is the floor row's (the step-down maximum) is a
    bound too: printed with "≤", and its lower end recorded."""
    floor = 2 / 1001
    cells, contrasts, _ = _tables(floor, (0.2, 0.3))
    # the next p above the floor, 4 / (B + 1) = 2 x floor; Holm, ranked third of three:
    # max(3 x floor, 1 x 2 x floor) = 3 x floor; with the two floor p-values at 0, 2 x floor
    cells.loc[1, "p_value"] = 2 * floor
    c, k = K.with_verdicts(cells, contrasts, {"memory": True, "production": True},
                           p_floor=floor)
    row = c.iloc[1]
    assert row["p_holm"] == pytest.approx(3 * floor)
    assert row["p_holm_lower"] == pytest.approx(2 * floor) and not row["p_at_floor"]
    assert K._holm_p(row, floor) == "≤ .006"
