"""pronoun_memory's model side and comparison: what the model reads (against the source
files), the scores (against models/' own entries), the comparison's arithmetic (by
hand) and the coverage of its two-way bootstrap intervals (simulation)."""
from __future__ import annotations

import html
import re

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from studies.pronoun_memory import compare as K
from studies.pronoun_memory import contexts as C


@pytest.fixture(scope="module")
def tables(data_dir):
    from gbstats.data.registry import load_dataset

    return load_dataset("gardner2023", data_dir).tables


def test_sentence_beginning_ends_where_people_began_typing():
    assert C.sentence_beginning("After Melissa got home from working in IT...") == \
        "After Melissa got home from working in IT,"
    assert C.sentence_beginning("After Amanda got home from working as an engineer…") == \
        "After Amanda got home from working as an engineer,"
    with pytest.raises(ValueError, match="ellipsis"):
        C.sentence_beginning("After Amanda got home")


def test_quartets_mix_the_pronouns_and_cover_the_list(tables):
    characters = C.exp1_characters(tables, "1a")
    quartets = C.context_groups(characters, 4)
    assert len(quartets) == 9 and all(len(q) == 4 for q in quartets)
    for q in quartets:
        assert set(q["Pronoun"]) == set(C.OPTIONS)       # every quartet mixes the three
    per_list = pd.concat(quartets).groupby("List")["position"].apply(sorted)
    assert all(v == list(range(1, 13)) for v in per_list)
    assert [len(g) for g in C.context_groups(characters, 1)] == [1] * 36
    assert [len(g) for g in C.context_groups(characters, 12)] == [12] * 3


@pytest.mark.parametrize("exp", ["1a", "1b"])
def test_what_the_model_reads_is_what_people_read_exp1(tables, data_dir, exp):
    """Every piece of the faithful context comes from the Qualtrics export (found there
    by a regex over document.xml, not by the loader's XML parse), in the survey's order."""
    import zipfile

    docx = {"1a": "exp1_qualtrics.docx", "1b": "exp1b_qualtrics.docx"}[exp]
    xml = zipfile.ZipFile(data_dir / "gardner2023" / "materials" / docx).read(
        "word/document.xml").decode()
    runs = "".join(html.unescape(t) for t in re.findall(r"<w:t(?: [^>]*)?>([^<]*)</w:t>", xml))
    prompts = C.build_prompts(tables, exp, C.exp1_characters(tables, exp))
    stimuli = tables[f"exp{exp}_stimuli"]
    for (lst, _), group in prompts.groupby(["List", "context_id"]):
        frame = group["memory_frame"].iloc[0]
        intros = stimuli[stimuli["List"] == lst].sort_values("position")["introduction"]
        positions = [frame.index(i) for i in intros]
        assert positions == sorted(positions)                  # in the list's order
        for text in intros:
            if text not in runs:   # only the two workbook sentences of Exp 1A list 3
                assert exp == "1a" and lst == "3"
        assert frame.index("You're going to meet 12 different people") < positions[0]
        assert frame.index("5 x 4 =") > positions[-1]          # the math, after them
    for r in prompts.itertuples():
        assert r.memory_frame.endswith(f"he/him\nshe/her\nthey/them\nAnswer: {C.SLOT}")
        question = stimuli[(stimuli["List"] == r.List) & (stimuli["Name"] == r.Name)][
            "memory_question"].iloc[0]
        assert question in runs and question in r.memory_frame
        beginning = r.production_prefix.rsplit("\n", 1)[1]
        assert beginning.endswith(",") and beginning[:-1] in runs


def test_what_the_model_reads_is_what_people_read_exp2(tables, data_dir):
    folder = data_dir / "gardner2023" / "materials" / "exp2"
    prompts = C.build_prompts(tables, "2", C.exp2_characters(tables, seed=3))
    csv = pd.read_csv(folder / "stimuli_characters.csv", dtype=str, keep_default_na=False)
    training = pd.read_csv(folder / "stimuli_training.csv", dtype=str)
    for group, block in prompts.groupby("List"):
        frame = block["memory_frame"].iloc[0]
        flat = "".join(frame.split())
        mine = csv[csv["group"] == group]
        for intro in mine["introduction"]:
            assert "".join(intro.replace("<br>", " ").split()) in flat
        files = training[training["group"] == group].iloc[0]
        order = []
        for name in (files["psa"], files["story1"], files["story2"]):
            raw = html.unescape(re.sub(r"<[^>]+>", "", (folder / name).read_text()))
            words = "".join(raw.split())
            assert words[:200] in flat and words[-200:] in flat
            order.append(flat.index(words[:200]))
        assert order == sorted(order)                          # PSA, story 1, story 2
        assert set(block["Name"]) == set(mine["name"])
    # one seeded random order per list (PCIbex randomised the characters)
    again = C.build_prompts(tables, "2", C.exp2_characters(tables, seed=3))
    other = C.build_prompts(tables, "2", C.exp2_characters(tables, seed=4))
    assert again["memory_frame"].equals(prompts["memory_frame"])
    assert not other["memory_frame"].equals(prompts["memory_frame"])


@pytest.mark.needs_model
def test_scores_equal_models_own_forced_choice_and_continuations(tables, smollm, tmp_path):
    """One call for both tasks (so contexts share batches) gives what forced_choice and
    continuation_logprobs give on their own."""
    from models.forced_choice import forced_choice
    from models.logprob import continuation_logprobs
    from studies.pronoun_memory import model_side as M

    prompts = C.build_prompts(tables, "1a", C.exp1_characters(tables, "1a"), n_characters=1,
                              filler=False).head(4)
    scored = M.score_prompts(prompts, smollm, batch_size=1024, use_cache=False)
    choice = forced_choice(list(prompts["memory_frame"]), list(C.OPTIONS),
                           items=list(prompts["prompt_id"]), lm=smollm, slot=C.SLOT,
                           span="word", use_cache=False)
    wide = choice.pivot(index="item", columns="variant", values="probability").loc[
        prompts["prompt_id"]]
    # the options in the order people saw them: forced_choice on the frame as listed
    np.testing.assert_allclose(scored[["p_listed_he", "p_listed_she", "p_listed_they"]].to_numpy(),
                               wide[list(C.OPTIONS)].to_numpy(), atol=1e-5)
    words = [" he", " she", " they"]
    raw = []
    for example in C.EXAMPLE_PRONOUNS:     # the worked example with he, she, they in turn
        prefixes = prompts[f"production_prefix_{example}"]
        direct = continuation_logprobs([p for p in prefixes for _ in words],
                                       words * len(prompts), lm=smollm, use_cache=False)
        raw.append(np.exp(direct["logprob"].to_numpy()).reshape(len(prompts), 3))
    np.testing.assert_allclose(scored[["p_raw_he", "p_raw_she", "p_raw_they"]].to_numpy(),
                               np.mean(raw, axis=0), rtol=1e-4)
    np.testing.assert_allclose(scored["pronoun_mass"], np.mean(raw, axis=0).sum(axis=1),
                               rtol=1e-4)
    shown = raw[0] / raw[0].sum(axis=1, keepdims=True)     # "he made dinner.", as people read
    np.testing.assert_allclose(scored[["p_shown_he", "p_shown_she", "p_shown_they"]].to_numpy(),
                               shown, rtol=1e-4)
    truth = [C.OPTIONS.index(p) for p in prompts["Pronoun"]]
    np.testing.assert_allclose(scored["listed_accuracy"], wide.to_numpy()[range(4), truth],
                               atol=1e-5)


# --------------------------------------------------------------------------
# the comparison's arithmetic

def _people(rows):
    return pd.DataFrame(rows, columns=["experiment", "participant", "List", "Name", "Pronoun",
                                       "PSA", "Biographies", "gender", "task", "accuracy",
                                       "produced"])


def test_they_gap_by_hand():
    """People: he 3/4, she 1/2, they 1/4 right; the model: 0.9, 0.6, 0.2 on the correct
    option. The gap is mean(logit he, logit she) - logit they."""
    rows = []
    for i, (pronoun, correct) in enumerate([("he/him", [1, 1, 1, 0]), ("she/her", [1, 0, 1, 0]),
                                            ("they/them", [1, 0, 0, 0])]):
        for k, c in enumerate(correct):
            rows.append(["1a", f"p{k}", "1", f"N{i}", pronoun, np.nan, np.nan, "female",
                         "memory", c, ""])
            rows.append(["1a", f"p{k}", "1", f"N{i}", pronoun, np.nan, np.nan, "female",
                         "production", c, "he/him"])
    people = _people(rows)
    model = pd.DataFrame({"experiment": "1a", "List": "1", "Name": ["N0", "N1", "N2"] * 2,
                          "Pronoun": list(C.OPTIONS) * 2, "task": ["memory"] * 3 + ["production"] * 3,
                          "accuracy": [0.9, 0.6, 0.2] * 2, "correct": [1, 1, 0] * 2,
                          "pronoun_mass": np.nan, "PSA": np.nan, "Biographies": np.nan})
    cells, contrasts = K.compare(people, model, n_boot=50, seed=1)
    gap = contrasts[(contrasts["task"] == "memory") & (contrasts["contrast"] == "they gap")].iloc[0]
    assert gap["people"] == pytest.approx((logit(0.75) + logit(0.5)) / 2 - logit(0.25))
    assert gap["model"] == pytest.approx((logit(0.9) + logit(0.6)) / 2 - logit(0.2))
    assert gap["difference"] == pytest.approx(gap["model"] - gap["people"])
    they = cells[(cells["task"] == "memory") & (cells["pronoun"] == "they/them")].iloc[0]
    assert (they["people"], they["model"], they["n_responses"]) == (0.25, 0.2, 4)


def test_production_without_a_pronoun_is_selected_out(tables):
    from gbstats.exclusions import ExclusionLog

    log = ExclusionLog()
    people = K.people_long(tables, log)
    counts = {e.reason.split(" completions")[0]: e.n for e in log.entries}
    # exp1a: 8 + 7 + 9 "none" completions (the authors' table), exp1b 14 + 15 + 12
    assert counts["Exp 1A"] == 24 and counts["Exp 1B"] == 41
    assert len(people) == 2 * (1224 + 1212 + 3840) - (24 + 41 + counts["Exp 2"])


@pytest.mark.slow
def test_two_way_bootstrap_intervals_cover_the_population_gap():
    """Coverage of the 95% interval of people's they gap on a crossed design of Exp 1A's
    size (60 participants x 12 names, each participant meeting every name once, pronouns
    rotated over 3 lists), with participant and name random intercepts on the log-odds
    scale. The estimand is the population-averaged gap (over new participants and names),
    computed by Monte Carlo. 100 data sets, 200 replicates each. The pigeonhole bootstrap
    is known to be conservative (it counts the participant x name noise twice); measured
    with this test's seed: 100 of 100 intervals cover, i.e. the intervals are wider than
    a 95% interval needs to be, and differences they call significant are safely so.
    The test only holds the coverage at 0.90 or more."""
    rng = np.random.default_rng(20231)
    mu = {"he/him": 1.4, "she/her": 1.5, "they/them": -0.3}
    sd_p, sd_n = 0.8, 0.3
    draws = rng.normal(0, sd_p, 400_000) + rng.normal(0, sd_n, 400_000)
    truth_p = {k: expit(v + draws).mean() for k, v in mu.items()}
    truth = (logit(truth_p["he/him"]) + logit(truth_p["she/her"])) / 2 - logit(truth_p["they/them"])
    names = [f"N{i}" for i in range(12)]
    covered = 0
    n_sets = 100
    for s in range(n_sets):
        u = rng.normal(0, sd_p, 60)
        v = dict(zip(names, rng.normal(0, sd_n, 12)))
        rows = []
        for p in range(60):
            lst = p % 3
            for i, name in enumerate(names):
                pronoun = C.OPTIONS[(i + lst) % 3]
                y = rng.random() < expit(mu[pronoun] + u[p] + v[name])
                rows.append(["1a", f"p{p}", str(lst), name, pronoun, np.nan, np.nan, "female",
                             "memory", int(y), ""])
        people = _people(rows)
        model = people.drop_duplicates(["List", "Name"]).assign(correct=1, pronoun_mass=np.nan)[
            ["experiment", "List", "Name", "Pronoun", "task", "accuracy", "correct",
             "pronoun_mass", "PSA", "Biographies"]]
        _, contrasts = K.compare(people, model, n_boot=200, seed=s)
        gap = contrasts[(contrasts["task"] == "memory") & (contrasts["contrast"] == "they gap")
                        & (contrasts["condition"] == "all")].iloc[0]
        covered += gap["people_low"] <= truth <= gap["people_high"]
    assert 0.90 <= covered / n_sets <= 1.0, covered / n_sets
