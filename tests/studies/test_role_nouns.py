"""studies.role_nouns: the pure analysis functions on hand-built tables, then the
command end to end (`--model none` on the real data, checked against Watson et
al.'s published numbers; smollm2 on two sets and two states)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import DataValidationError, UnknownNameError
from studies.role_nouns import analysis as A
from studies.role_nouns.stimuli import STATES, choose_states, stimulus_grid

REQUIRED_FIELDS = ["method", "set_type", "grouping", "group", "loglik_mens_names",
                   "loglik_womens_names", "loglik_all", "n_participants", "n_obs"]


# ---------------------------------------------------------------- stimuli

def test_grid_has_every_name_set_variant_state():
    grid = stimulus_grid(["Ohio", "Texas"])
    # 24 names x 2 states x (14 sets x 3 variants + 6 sets x 2 variants = 54 variants)
    assert len(grid) == 24 * 2 * 54
    assert grid["cell"].nunique() == 24 * 2 * 20
    assert not grid.duplicated(["cell", "variant"]).any()
    # the continuation is what differs between the variants of a frame
    assert (grid["prefix"] + grid["continuation"] == grid["text"]).all()
    assert (grid.groupby("cell")["prefix"].nunique() == 1).all()


def test_article_is_grammatical_and_shared_within_a_set():
    grid = stimulus_grid(["Ohio"])
    texts = set(grid["text"])
    assert {"Emily is an heir from Ohio.", "Emily is an heiress from Ohio.",
            "John is an anchorwoman from Ohio.", "John is an actress from Ohio.",
            "John is a host from Ohio.", "Sarah is a police officer from Ohio."} <= texts
    assert (grid.groupby("role_noun_set")["article"].nunique() == 1).all()


def test_choose_states_is_seeded_and_checked():
    assert choose_states(None, seed=1) == list(STATES)
    assert choose_states(50, seed=1) == list(STATES)
    three = choose_states(3, seed=7)
    assert three == choose_states(3, seed=7) and len(set(three)) == 3
    assert three == sorted(three) and set(three) <= set(STATES)
    for bad in (0, 51):
        with pytest.raises(DataValidationError, match="--states"):
            choose_states(bad, seed=1)


def test_parse_sets_names_unknown_sets():
    assert A.parse_sets("firefighter, actor,firefighter") == ["firefighter", "actor"]
    with pytest.raises(UnknownNameError, match="firefighter"):
        A.parse_sets("firefigter")
    with pytest.raises(DataValidationError):
        A.parse_sets(" , ")


# ---------------------------------------------------------------- model probabilities

def frame(cell, state, item, variants, logprobs, set_type="2-way"):
    return pd.DataFrame({
        "cell": cell, "state": state, "item": item, "name": item.split("|")[1],
        "name_gender": "women", "role_noun_set": item.split("|")[0], "set_type": set_type,
        "variant": variants, "variant_gender": ["G-NEUT", "FEM"][:len(variants)],
        "logprob": logprobs})


def actor_actress(score_is):
    """Scores ln .8 - 30 (actor) and ln .2 - 30 (actress), corpus prior .25 / .75."""
    scored = frame("actor|Emily|Ohio", "Ohio", "actor|Emily", ["actor", "actress"],
                   [math.log(.8) - 30, math.log(.2) - 30])
    prior = pd.DataFrame({"variant": ["actor", "actress"], "prior": [.25, .75]})
    out = A.frame_probabilities(scored, prior, score_is=score_is)
    return out.set_index(["method", "variant"])["prob"]


def test_three_methods_by_hand_from_a_likelihood():
    # Masked LM, score = log P(C|V): ln .8 - 30 and ln .2 - 30 -> model_likelihood
    # .8 / .2 (a constant shared by the variants cancels).
    # Corpus prior .25 / .75 -> posterior: .8 x .25 = .2 and .2 x .75 = .15,
    # normalised .2 / .35 = 4/7 and .15 / .35 = 3/7.
    out = actor_actress("likelihood")
    assert out[("model_likelihood", "actor")] == pytest.approx(.8)
    assert out[("corpus_prior", "actress")] == pytest.approx(.75)
    assert out[("posterior", "actor")] == pytest.approx(4 / 7)
    assert out[("posterior", "actress")] == pytest.approx(3 / 7)


def test_three_methods_by_hand_from_a_joint_score():
    # Causal LM, score = log P(sentence) = log P(C, V) + const: ln .8 - 30 and
    # ln .2 - 30 -> posterior P(V|C) = .8 / .2 directly. The implied likelihood
    # divides the prior out: .8 / .25 = 3.2 and .2 / .75 = 4/15, sum 52/15,
    # normalised 48/52 = 12/13 and 4/52 = 1/13. Multiplying it by the prior again
    # gives back the posterior (Bayes' rule holds among the three methods).
    out = actor_actress("joint")
    assert out[("posterior", "actor")] == pytest.approx(.8)
    assert out[("model_likelihood", "actor")] == pytest.approx(12 / 13)
    assert out[("model_likelihood", "actress")] == pytest.approx(1 / 13)
    with pytest.raises(UnknownNameError):
        actor_actress("posterior")


def test_average_over_states_by_hand():
    # Ohio: .8 / .2, Texas: .4 / .6 -> mean .6 / .4 (still sums to 1)
    scored = pd.concat([
        frame("actor|Emily|Ohio", "Ohio", "actor|Emily", ["actor", "actress"],
              [math.log(.8), math.log(.2)]),
        frame("actor|Emily|Texas", "Texas", "actor|Emily", ["actor", "actress"],
              [math.log(.4), math.log(.6)])])
    prior = pd.DataFrame({"variant": ["actor", "actress"], "prior": [.5, .5]})
    items = A.average_over_states(A.frame_probabilities(scored, prior))
    lik = items[items["method"] == "model_likelihood"].set_index("variant")
    assert lik.loc["actor", "prob"] == pytest.approx(.6)
    assert lik.loc["actress", "prob"] == pytest.approx(.4)
    assert (lik["n_states"] == 2).all()
    # with a uniform prior the posterior is the likelihood
    post = items[items["method"] == "posterior"].set_index("variant")
    assert post.loc["actor", "prob"] == pytest.approx(.6)


def test_missing_score_is_an_error():
    scored = frame("actor|Emily|Ohio", "Ohio", "actor|Emily", ["actor", "actress"],
                   [math.log(.8), np.nan])
    prior = pd.DataFrame({"variant": ["actor", "actress"], "prior": [.5, .5]})
    with pytest.raises(DataValidationError, match="actor\\|Emily\\|Ohio"):
        A.frame_probabilities(scored, prior)


def test_prior_item_probabilities_cover_every_name_and_set(data_dir):
    from gbstats.data.registry import load_dataset

    prior = load_dataset("papineau2022", data_dir).tables["variant_prior"]
    items = A.prior_item_probabilities(prior)
    assert len(items) == 24 * 54
    assert np.allclose(items.groupby("item")["prob"].sum(), 1.0)


# ---------------------------------------------------------------- group log-likelihood

def hand_trials():
    # Item "firefighter|John" (men's name): G .2, M .7, F .1
    # Item "firefighter|Emily" (women's name): G .5, M .1, F .4
    probs = pd.DataFrame({
        "method": "corpus_prior",
        "item": ["firefighter|John"] * 3 + ["firefighter|Emily"] * 3,
        "name": ["John"] * 3 + ["Emily"] * 3, "name_gender": ["men"] * 3 + ["women"] * 3,
        "role_noun_set": "firefighter", "set_type": "3-way",
        "variant": ["firefighter", "fireman", "firewoman"] * 2,
        "variant_gender": ["G-NEUT", "MASC", "FEM"] * 2,
        "prob": [.2, .7, .1, .5, .1, .4]})
    people = [("p1", "progressive", "Democrat", "firefighter", "firefighter"),
              ("p2", "conservative", "Republican", "fireman", "firewoman"),
              ("p3", "progressive", "Democrat", "fireman", "firefighter")]
    rows = []
    for p, attitude, party, on_john, on_emily in people:
        for item, name, gender, response in (("firefighter|John", "John", "men", on_john),
                                             ("firefighter|Emily", "Emily", "women", on_emily)):
            rows.append({"participant": p, "attitude_group": attitude, "party": party,
                         "item": item, "name": name, "name_gender": gender,
                         "role_noun_set": "firefighter", "set_type": "3-way",
                         "response": response,
                         "response_gender": {"firefighter": "G-NEUT", "fireman": "MASC",
                                             "firewoman": "FEM"}[response]})
    return pd.DataFrame(rows), probs


def test_group_loglik_table_by_hand():
    trials, probs = hand_trials()
    out = A.group_loglik_table(trials, probs, n_boot=20, seed=1)
    assert list(out.columns[:9]) == REQUIRED_FIELDS
    assert list(out["grouping"]) == ["attitude", "attitude", "party", "party"]
    assert list(out["group"]) == ["progressive", "conservative", "Democrat", "Republican"]
    prog = out.iloc[0]
    # progressive = p1 and p3: men's names ln .2, ln .7; women's names ln .5 twice
    assert prog["loglik_mens_names"] == pytest.approx((math.log(.2) + math.log(.7)) / 2)
    assert prog["loglik_womens_names"] == pytest.approx(math.log(.5))
    assert prog["loglik_all"] == pytest.approx((math.log(.2) + math.log(.7)
                                                + 2 * math.log(.5)) / 4)
    assert (prog["n_participants"], prog["n_obs"]) == (2, 4)
    cons = out.iloc[1]
    assert cons["loglik_mens_names"] == pytest.approx(math.log(.7))
    assert cons["loglik_womens_names"] == pytest.approx(math.log(.4))
    assert (cons["n_participants"], cons["n_obs"]) == (1, 2)
    # same people, so the party rows equal the attitude rows
    assert out.iloc[2]["loglik_all"] == prog["loglik_all"]
    assert out.iloc[3]["loglik_all"] == cons["loglik_all"]
    # one participant: every resample is that person, so the CI is the point
    assert cons["ci_low_all"] == pytest.approx(cons["loglik_all"])


def test_human_proportions_by_hand():
    trials, probs = hand_trials()
    people = A.human_proportions(trials)
    prog_men = people[(people["group"] == "progressive") & (people["name_gender"] == "men")]
    shares = prog_men.set_index("response_gender")["proportion"]
    # p1 said firefighter, p3 fireman, nobody firewoman: 1/2, 1/2, 0 (the 0 is a row)
    assert shares.to_dict() == {"FEM": 0.0, "G-NEUT": 0.5, "MASC": 0.5}
    model = A.model_proportions(probs).set_index(["name_gender", "response_gender"])
    assert model.loc[("men", "MASC"), "proportion"] == pytest.approx(.7)
    assert model.loc[("women", "FEM"), "proportion"] == pytest.approx(.4)


# ---------------------------------------------------------------- direct method, GLMM rows

def test_single_token_sets():
    variants = pd.DataFrame({"role_noun_set": ["actor", "actor", "hero", "hero"],
                             "variant": ["actor", "actress", "hero", "heroine"]})
    pieces = {"actor": 1, "actress": 1, "hero": 1, "heroine": 2}
    assert A.single_token_sets(variants, pieces.__getitem__) == ["actor"]


def test_direct_vs_posterior_correlation():
    posterior = [.9, .1, .6, .4, .3, .7]
    direct = [.8, .2, .5, .5, .4, .6]
    cells = ["c1", "c1", "c2", "c2", "c3", "c3"]
    variants = ["actor", "actress"] * 3
    frame_probs = pd.DataFrame({"cell": cells, "variant": variants, "method": "posterior",
                                "prob": posterior})
    direct_table = pd.DataFrame({"cell": cells, "role_noun_set": "actor", "variant": variants,
                                 "probability": direct})
    joined, row = A.direct_vs_posterior(direct_table, frame_probs)
    assert len(joined) == 6
    assert row.loc[0, "r"] == pytest.approx(np.corrcoef(direct, posterior)[0, 1])
    assert (row.loc[0, "n_sets"], row.loc[0, "sets"], row.loc[0, "n_cells"]) == (1, "actor", 6)


def test_glmm_rows_code_the_neutral_form():
    trials, _ = hand_trials()
    trials["attitude_score"] = 10.0
    rows = A.glmm_rows(trials)
    assert rows["neutral"].tolist() == [1, 1, 0, 0, 0, 1]
    assert list(rows["name_gender"].cat.categories) == ["men", "women"]


# ---------------------------------------------------------------- end to end

def run_study(argv) -> dict:
    from studies.role_nouns.run import main

    assert main(argv) == 0
    return json.loads((__import__("pathlib").Path(argv[argv.index("--out") + 1])
                       / "results.json").read_text())


def test_model_none_reproduces_watson_corpus_prior(data_dir, tmp_path, watson_corpus_prior):
    """Watson et al.'s published values (tests/reference/watson2023_corpus_prior_loglik.csv;
    the same values check gbstats.alignment.groups in tests/stats/test_alignment.py)."""
    out = tmp_path / "none"
    results = run_study(["--model", "none", "--no-bayes", "--no-lme4", "--n-boot", "50",
                         "--n-perm", "50", "--out", str(out), "--data-dir", str(data_dir)])
    records = results["tables"]["group_loglik"]
    # 1 method x 2 set types x (3 attitude + 3 party groups)
    assert len(records) == 12
    for rec in records:
        assert list(rec)[:9] == REQUIRED_FIELDS
        assert rec["method"] == "corpus_prior"
        ref = watson_corpus_prior.loc[(rec["set_type"], rec["group"])]
        men, women, both = ref["loglik_men"], ref["loglik_women"], ref["loglik_all"]
        n_p, n_obs = ref["n_participants"], ref["n_obs_all"]
        assert rec["loglik_mens_names"] == pytest.approx(men, rel=1e-9)
        assert rec["loglik_womens_names"] == pytest.approx(women, rel=1e-9)
        assert rec["loglik_all"] == pytest.approx(both, rel=1e-9)
        assert (rec["n_participants"], rec["n_obs"]) == (n_p, n_obs)
        assert rec["ci_low_all"] <= rec["loglik_all"] <= rec["ci_high_all"]
    assert {(r["grouping"], r["group"]) for r in records} == {
        ("attitude", "progressive"), ("attitude", "moderate"), ("attitude", "conservative"),
        ("party", "Democrat"), ("party", "Non-Partisan"), ("party", "Republican")}
    # every best-vs-next test: 2 set types x 2 groupings x 3 splits
    assert len(results["tables"]["best_group_tests"]) == 12
    assert all(0 < t["p_value"] <= 1 for t in results["tables"]["best_group_tests"])
    # the loader's exclusions reach the report (data README: attention < .80)
    reasons = {e["reason"]: e["n"] for e in results["exclusions"] if e["unit"] == "participants"}
    assert any("attention" in r for r in reasons)
    assert results["provenance"]["models"] == []
    assert (out / "report.md").exists() and (out / "tables" / "group_loglik.tex").exists()
    assert (out / "figures" / "proportions_3way.png").exists()
    # people's proportions: after the exclusions 271 participants each answer one
    # trial per set (none skipped), so the 14 three-way sets give 271 x 14 = 3794
    people = [r for r in results["tables"]["proportions"] if r["source"] == "people"]
    assert sum(r["n"] for r in people if r["set_type"] == "3-way") == 3794


def test_unknown_set_is_a_clean_error(data_dir, tmp_path, capsys):
    from studies.role_nouns.run import main

    code = main(["--model", "none", "--sets", "fireman", "--out", str(tmp_path),
                 "--data-dir", str(data_dir)])
    assert code == 2
    assert "firefighter" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.needs_model
def test_smollm2_two_sets_one_state(data_dir, tmp_path):
    from models.causal import score_sentences
    from models.loading import load_scorer

    out = tmp_path / "smol"
    cache = tmp_path / "cache"
    results = run_study(["--sets", "firefighter,actor", "--states", "1", "--no-bayes",
                         "--no-lme4", "--n-boot", "30", "--n-perm", "30", "--out", str(out),
                         "--data-dir", str(data_dir), "--cache-dir", str(cache)])
    records = pd.DataFrame(results["tables"]["group_loglik"])
    assert len(records) == 3 * 2 * 6
    assert set(records["method"]) == set(A.METHODS)
    assert results["provenance"]["extra"]["n_states"] == 1

    # The corpus-prior rows, recomputed directly: the mean of ln P(response)
    # over each attitude group's trials of the chosen sets.
    from gbstats.data.registry import load_dataset

    data = load_dataset("papineau2022", data_dir)
    trials = data.tables["trials"]
    trials = trials[trials["role_noun_set"].isin(["firefighter", "actor"])]
    prior = data.tables["variant_prior"].set_index("variant")["prior"]
    logp = np.log(trials["response"].map(prior))
    expected = logp.groupby([trials["set_type"], trials["attitude_group"]]).mean()
    got = records[(records["method"] == "corpus_prior") & (records["grouping"] == "attitude")]
    for _, rec in got.iterrows():
        assert rec["loglik_all"] == pytest.approx(expected[(rec["set_type"], rec["group"])])

    scores = pd.read_csv(out / "sentence_scores.csv")
    assert len(scores) == 24 * 5              # names x (3 + 2 variants) x 1 state
    items = pd.read_csv(out / "item_probabilities.csv")
    assert np.allclose(items.groupby(["method", "item"])["prob"].sum(), 1.0)

    # Normalising log P(continuation | "NAME is a") over the variants equals
    # normalising the whole sentence's probability (log P(prefix) cancels), and
    # for a causal LM that is the posterior; with one state the item-level
    # probabilities are the frame-level ones.
    from scipy.special import softmax

    cell = scores[scores["cell"] == scores["cell"].iloc[0]]
    whole = score_sentences(list(cell["text"]), lm=load_scorer("smollm2-135m"),
                            cache_dir=cache)["logprob"].to_numpy()
    assert softmax(whole) == pytest.approx(softmax(cell["logprob"].to_numpy()), abs=1e-4)
    posterior = items[(items["method"] == "posterior") & (items["item"] == cell["item"].iloc[0])]
    assert posterior.set_index("variant").loc[list(cell["variant"]), "prob"].to_numpy() == \
        pytest.approx(softmax(whole), abs=1e-4)

    # smollm2 has actor and actress as single tokens, firefighter/fireman/firewoman not
    corr = results["tables"]["direct_method_correlation"][0]
    assert (corr["n_sets"], corr["sets"], corr["n_cells"]) == (1, "actor", 24 * 2)
    # r recomputed independently: the direct method is actor/actress in the slot of
    # "NAME is an ___ from STATE." renormalised over the pair (forced_choice, word span);
    # with one state the posterior of a cell is its item's (item_probabilities.csv)
    from models.forced_choice import forced_choice
    from scipy import stats

    state = results["provenance"]["extra"]["states"][0]
    actor = items[(items["method"] == "posterior") & (items["role_noun_set"] == "actor")]
    names = list(dict.fromkeys(actor["name"]))
    direct = forced_choice([f"{n} is an [BLANK] from {state}." for n in names],
                           ["actor", "actress"], items=names, lm=load_scorer("smollm2-135m"),
                           span="word", cache_dir=cache)
    both = direct.merge(actor, left_on=["item", "variant"], right_on=["name", "variant"])
    assert len(both) == 48
    assert corr["r"] == pytest.approx(stats.pearsonr(both["probability"], both["prob"])[0],
                                      abs=1e-6)
    reasons = [e["reason"] for e in results["exclusions"]]
    assert "role-noun set not among --sets firefighter,actor" in reasons


@pytest.mark.slow
@pytest.mark.needs_r
def test_human_glmm_with_lme4(data_dir):
    from gbstats.data.registry import load_dataset
    from gbstats.mixed.lmm import fit_glmm

    trials = load_dataset("papineau2022", data_dir).tables["trials"]
    fit = fit_glmm(A.GLMM_FORMULA, A.glmm_rows(trials), family="binomial", backend="lme4")
    assert list(fit.coefs["term"]) == ["(Intercept)", "name_genderwomen", "attitude_score",
                                       "name_genderwomen:attitude_score"]
    assert set(fit.ranef_var["group"]) >= {"participant", "role_noun_set"}
    # 271 participants x 20 sets, no trial lost to the fit
    assert fit.fit_stats["nobs"] == len(trials) == 271 * 20


# ---------------------------------------------------------------- masked path (tiny BERT)

def build_stimulus_bert(folder, texts, seed: int = 0):
    """The shared tiny random BERT (tests/tiny_models.py) with a vocabulary from `texts`.

    No masked LM is reachable offline (DESIGN.md). Random weights are enough:
    the test compares the study's P(C | V) with a direct computation of the
    same quantity, never a value that would need a trained model. The
    vocabulary is small, so role nouns split into several pieces.
    """
    from tiny_models import build_tiny_bert

    return build_tiny_bert(folder, seed, 120, sentences=texts, hidden_size=32, intermediate_size=64)


def context_pll_by_hand(folder, text: str, variant: str) -> float:
    """sum over the tokens outside the variant of log P(token | sentence with it masked)."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForMaskedLM.from_pretrained(folder).eval()
    enc = tokenizer(text, return_offsets_mapping=True)
    start = text.index(" " + variant + " ") + 1
    end = start + len(variant)
    ids = enc["input_ids"]
    total = 0.0
    for pos, (a, b) in enumerate(enc["offset_mapping"]):
        if a == b or (a >= start and b <= end):     # special tokens, or the variant itself
            continue
        masked = list(ids)
        masked[pos] = tokenizer.mask_token_id
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([masked])).logits[0, pos]
        total += float(torch.log_softmax(logits, -1)[ids[pos]])
    return total


@pytest.mark.slow
def test_masked_path_uses_the_context_pll(data_dir, tmp_path):
    import torch

    torch.set_num_threads(1)
    states = choose_states(1, seed=2023)       # what --states 1 --seed 2023 picks
    grid = stimulus_grid(states)
    sets = ["firefighter", "actor"]
    grid = grid[grid["role_noun_set"].isin(sets)]
    folder = build_stimulus_bert(tmp_path / "bert", list(grid["text"]))
    out = tmp_path / "masked"
    results = run_study(["--model", str(folder), "--sets", ",".join(sets), "--states", "1",
                         "--no-bayes", "--no-lme4", "--n-boot", "20", "--n-perm", "20",
                         "--out", str(out), "--data-dir", str(data_dir),
                         "--cache-dir", str(tmp_path / "cache")])
    assert results["provenance"]["extra"]["scoring"].startswith("masked")
    assert len(results["tables"]["group_loglik"]) == 3 * 2 * 6
    scores = pd.read_csv(out / "sentence_scores.csv")
    assert set(scores["scoring"]) == {"pll_original"}
    one_cell = scores[scores["cell"] == "firefighter|Emily|" + states[0]]
    for _, row in one_cell.iterrows():
        assert row["logprob"] == pytest.approx(
            context_pll_by_hand(folder, row["text"], row["variant"]), abs=1e-4)


@pytest.mark.slow
def test_human_glmm_bayesian_backend_runs_through_the_study(data_dir):
    # Structure only, on 60 participants and a few draws (the full fit with the
    # default 1000 draws is what the study runs): the Bayesian GLMM gets the
    # same formula and R's term names, side by side with lme4 in the report.
    from types import SimpleNamespace

    from gbstats.data.registry import load_dataset
    from gbstats.mixed.fitting import stack_fits
    from studies.pipeline import Run
    from studies.role_nouns.run import STUDY
    from studies.role_nouns.steps import fit_human_model

    trials = load_dataset("papineau2022", data_dir).tables["trials"]
    some = trials[trials["participant"].isin(sorted(trials["participant"].unique())[:60])]
    run = Run(STUDY, SimpleNamespace(no_lme4=True, no_bayes=False, draws=50, seed=1,
                                     no_cache=True, cache_dir=None))
    fits = fit_human_model(run, some)
    assert list(fits) == ["pymc"] and run.notes == ["The lme4 GLMM was skipped (--no-lme4)."]
    table = stack_fits(fits, A.FIT_COLUMNS)
    assert list(table["term"]) == ["(Intercept)", "name_genderwomen", "attitude_score",
                                   "name_genderwomen:attitude_score"]
    assert (table["ci_low"] < table["estimate"]).all() and (table["estimate"] < table["ci_high"]).all()
    assert fits["pymc"].fit_stats["nobs"] == len(some) == 60 * 20


def test_the_glmm_twin_starts_at_twice_the_draws_within_max_draws():
    from types import SimpleNamespace

    from studies.pipeline import Run
    from studies.role_nouns.run import STUDY
    from studies.role_nouns.steps import glmm_twin_settings

    def settings(draws, max_draws=None):
        return glmm_twin_settings(Run(STUDY, SimpleNamespace(
            no_bayes=False, draws=draws, max_draws=max_draws, seed=1, no_cache=True,
            cache_dir=None)))

    assert settings(1000) == {"draws": 2000, "target_accept": 0.9}
    # --max-draws caps the first attempt, never below --draws
    assert settings(1000, 1500)["draws"] == 1500
    assert settings(1000, 1000)["draws"] == 1000


def test_permutation_tests_are_holm_adjusted_within_each_method():
    # Holm by hand, family "posterior" with p = (.01, .04, .03): sorted .01, .03, .04
    # times 3, 2, 1 = .03, .06, .04, made monotone: .03, .06, .06. The one
    # corpus_prior test is a family of one: unchanged.
    from studies.role_nouns.analysis import holm_by_method

    tests = pd.DataFrame({"method": ["posterior", "posterior", "corpus_prior", "posterior"],
                          "p_value": [0.01, 0.04, 0.5, 0.03]})
    out = holm_by_method(tests)
    assert list(out["family"]) == ["permutation tests, posterior"] * 2 + [
        "permutation tests, corpus_prior", "permutation tests, posterior"]
    assert out["p_holm"].tolist() == pytest.approx([0.03, 0.06, 0.5, 0.06])
    assert out["family_size"].tolist() == [3, 3, 1, 3]
