"""studies.singular_they beside Watson et al. (2023), issue 31 (reviewer point 9).

- Which text is scored: real ratings imply the published text (`choose_text`).
- The SIMULATED panel: what it gives over seeds, and its parameters in the report.
- The published anchor: Watson et al.'s BERT estimates beside this run's.
- A masked model scores the they-form as Watson et al. did: checked against a
  hand computation of their procedure and against minicons, on a tiny BERT.

Reference values: the published survey summaries and regression estimates are
Watson et al.'s recorded output (juliawatson/bert-social-attitudes at commit
ef1358f: the printed output recorded in camilliere/part_4_cluster_correlations.py,
and camilliere/gender_closeness_regression.txt); everything else is computed
here by an independent route.
"""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gbstats.errors import GbstatsError
from studies.singular_they import analysis as A
from studies.singular_they import panel as PANEL
from studies.singular_they import published as P
from studies.singular_they.stimuli import choose_text, select_stimuli

REFERENCE = Path(__file__).resolve().parents[1] / "reference"


@pytest.fixture(scope="module")
def stimuli(data_dir):
    return select_stimuli("camilliere2021", data_dir)[0]


# --- which text is scored ------------------------------------------------------------

@pytest.mark.parametrize("human,as_published,keep,expected", [
    (False, False, False, False),   # simulated panel: corrected
    (False, True, False, True),     # --as-published
    (True, False, False, True),     # real ratings: as published
    (True, False, True, False),     # real ratings + --keep-corrections: corrected
    (True, True, False, True),      # real ratings + --as-published: as published
    (False, False, True, False),    # --keep-corrections without --human: the default anyway
])
def test_real_ratings_imply_the_published_text(human, as_published, keep, expected):
    chosen, reason = choose_text("camilliere2021", human_given=human, as_published=as_published,
                                 keep_corrections=keep)
    assert chosen is expected
    assert reason   # every choice says why
    if human and not as_published:
        assert ("--keep-corrections" in reason) and ("--human" in reason)


def test_contradicting_or_misplaced_text_flags_are_errors():
    with pytest.raises(GbstatsError, match="contradict"):
        choose_text(None, human_given=True, as_published=True, keep_corrections=True)
    for flags in ({"as_published": True, "keep_corrections": False},
                  {"as_published": False, "keep_corrections": True}):
        with pytest.raises(GbstatsError, match="published stimuli"):
            choose_text("gbstats", human_given=True, **flags)
    assert choose_text("gbstats", human_given=True, as_published=False,
                       keep_corrections=False) == (False, "")


@pytest.fixture(scope="module")
def camilliere_file(stimuli, tmp_path_factory):
    panel = PANEL.simulate_panel(stimuli, seed=7)
    path = tmp_path_factory.mktemp("human") / "camilliere_data.txt"
    PANEL.as_camilliere_data(panel, stimuli).to_csv(path, sep=" ", index=False, na_rep="NA")
    return path


def _load(data_dir, tmp_path, *flags):
    from studies.pipeline import Run
    from studies.singular_they import steps
    from studies.singular_they.run import STUDY

    args = STUDY.build_parser().parse_args(["--data-dir", str(data_dir), "--out", str(tmp_path),
                                            *flags])
    run = Run(STUDY, args)
    return run, steps.load(run, None)


def test_study_scores_the_published_text_with_real_ratings(data_dir, tmp_path, camilliere_file):
    from studies.singular_they import steps

    run, s = _load(data_dir, tmp_path, "--human", str(camilliere_file))
    assert len(s.corrections) == 0 and not s.simulated
    assert s.stimuli["stimuli_version"].iloc[0].endswith("as published")
    # the stray clause of item 37 is scored as the participants saw it
    assert s.stimuli.set_index("item").loc["gfamily-37", "sentence"].startswith(
        "Someone said that my son bought")
    assert not any(p.endswith("camilliere_corrections.csv") for p in run.data_files)
    text = steps.stimuli_description(s.stimuli, s.corrections, s.text_reason)
    assert "Text scored: as published, because real ratings were joined" in text
    assert not run.notes

    run, s = _load(data_dir, tmp_path, "--human", str(camilliere_file), "--keep-corrections")
    assert len(s.corrections) == 4
    assert any(p.endswith("camilliere_corrections.csv") for p in run.data_files)
    assert "Text scored: corrected, because `--keep-corrections` was given" in \
        steps.stimuli_description(s.stimuli, s.corrections, s.text_reason)
    assert any("--keep-corrections" in n for n in run.notes)   # shown in the Design notes


def test_cli_refuses_both_text_flags(tmp_path, capsys):
    from studies.singular_they.run import main

    rc = main(["--out", str(tmp_path / "o"), "--as-published", "--keep-corrections",
               "--no-bayes"])
    err = capsys.readouterr().err
    assert rc == 2 and "contradict" in err and "Traceback" not in err


# --- the simulated panel --------------------------------------------------------------

def test_panel_people_are_drawn_first(stimuli):
    """The documented property the over-seeds table rests on: the panel's people at a seed
    are simulate_people at that seed."""
    panel = PANEL.simulate_panel(stimuli, seed=11)
    people = panel.groupby("participant", sort=False)[
        ["stage", "nb_acceptance", "familiarity"]].first().reset_index()
    alone = PANEL.simulate_people(np.random.default_rng(11))
    pd.testing.assert_frame_equal(people, alone, check_dtype=False)


def test_unscored_people_are_non_innovators_as_published(stimuli):
    people = PANEL.simulate_people(np.random.default_rng(2023))
    scored = people.dropna(subset=["nb_acceptance"]).groupby("stage").size().to_dict()
    # Watson et al.'s output: 41 of 43 non-innovators, 89 of 89, 16 of 16 have scores
    assert scored == {"non-innovator": 41, "innovator": 89, "super-innovator": 16}


def test_survey_tests_equal_the_studys_mann_whitney(stimuli):
    """The over-seeds table's p at this seed is the p of the study's own table (pingouin)."""
    from studies.singular_they.analysis import stage_mann_whitney

    panel = PANEL.simulate_panel(stimuli, seed=2023)
    study = stage_mann_whitney(panel).set_index(["score", "label_a", "label_b"])["p_value"]
    table = PANEL.survey_tests_over_seeds(2023, n_seeds=5)
    names = {v: k for k, v in PANEL.SCORE_NAMES.items()}
    for row in table.itertuples():
        assert row.p_this_seed == pytest.approx(
            study[(names[row.score], row.earlier_stage, row.later_stage)], rel=1e-12)
    assert list(table["p_published"]) == [p for _, p in PANEL.PUBLISHED_SURVEY_TESTS.values()]


def test_panel_matches_the_published_survey_summaries_over_seeds():
    """Over 300 seeds the panel's mean acceptance per stage is the published mean (the
    calibration target, within 0.05), and the non-innovator vs innovator test of acceptance
    rejects at about its nominal rate: the panel builds in no difference Watson et al.'s
    data do not show (before issue 31 it rejected in 25% of seeds)."""
    samples = [PANEL._survey_samples(*PANEL.draw_people(np.random.default_rng(s)))
               for s in range(300)]
    for stage, published in PANEL.PUBLISHED_SURVEY_MEANS["nb_acceptance"].items():
        mean = np.mean([s[("nb_acceptance", stage)].mean() for s in samples])
        assert mean == pytest.approx(published, abs=0.05), stage
    p = PANEL.survey_tests(samples)[("nb_acceptance", "non-innovator", "innovator")]
    assert np.mean(p < 0.05) < 0.08   # nominal 0.05; binomial SE over 300 seeds 0.013


def test_parameter_tables_name_every_parameter_in_words():
    table = PANEL.parameter_table(2023)
    assert set(table["source"]) == {PANEL.PUBLISHED, PANEL.CALIBRATED, PANEL.ILLUSTRATIVE,
                                    "this run's --seed"}
    assert table.loc[table["parameter"] == "Seed", "value"].item() == "2023"
    values = " ".join(table["value"])
    for literal in ("[", "]", "{", "}", "None", "True", "nan"):
        assert literal not in values
    means = PANEL.rating_means_table()
    assert list(means.columns) == ["antecedent_type", *PANEL.STAGES]
    assert means.set_index("antecedent_type").loc["Close, gendered", "innovator"] == \
        PANEL.STAGE_MEANS["innovator"]["close_gendered"]
    params = PANEL.panel_parameters(5)
    assert params["seed"] == 5 and params["nb_latent_shift"] == PANEL.NB_LATENT_SHIFT
    assert params["stage_means"] == PANEL.STAGE_MEANS


# --- the published anchor --------------------------------------------------------------

@pytest.fixture(scope="module")
def paper_fit():
    """Watson et al.'s regression on smollm2-135m's recorded surprisal (statsmodels: no R
    needed; tests/reference/watson_regression.csv)."""
    from gbstats.mixed.lmm import fit_lmm

    rows = pd.read_csv(REFERENCE / "watson_regression.csv").assign(
        itm=lambda d: d["itm"].astype(str))
    return {"statsmodels": fit_lmm(A.PAPER_FORMULA, rows, backend="statsmodels")}


def test_anchor_sets_the_published_estimates_beside_this_run(paper_fit):
    table = P.anchor_table(paper_fit, model="smollm2-135m", scoring="causal", text="corrected")
    published = table[table["source"] == "Watson et al. (2023)"].set_index("term")
    # the digits of camilliere/gender_closeness_regression.txt
    assert published.loc["gendered", ["estimate", "se", "df"]].tolist() == [0.34479, 0.07474, 118]
    assert published.loc["close", "estimate"] == 0.50756
    assert published.loc["close", "p_value"] == 4.76e-10
    # "< 2e-16" printed: the p of t = 14.726 on 39 df, by hand from scipy
    from scipy import stats
    assert published.loc["(Intercept)", "p_value"] == pytest.approx(2 * stats.t.sf(14.726, 39))
    ours = table[table["source"] == "this run (statsmodels)"].set_index("term")
    fit = paper_fit["statsmodels"]
    for term in ("(Intercept)", "gendered", "close"):
        assert ours.loc[term, "estimate"] == fit.coef(term)["estimate"]
    assert set(ours["context"]) == {"the words before the form"}
    assert set(published["context"]) == {"the whole sentence, form masked"}
    assert list(table["term"]) == ["(Intercept)"] * 2 + ["gendered"] * 2 + ["close"] * 2
    words = P.compare_in_words(table)
    assert "+0.345" in words and "+0.508" in words
    # issue 40: "the closeness effect the larger" was read off the point estimates; by hand,
    # (0.50756 - 0.34479) / sqrt(2 x 0.07474^2) = 1.540, p = .124: not significantly larger
    assert ("the closeness effect is larger, but not significantly (difference z = 1.54, "
            "p = 0.124)") in words
    z, p = P.order_test(0.50756, 0.07474, 0.34479, 0.07474)
    assert z == pytest.approx(0.16277 / (0.07474 * np.sqrt(2))) and p == pytest.approx(
        2 * stats.norm.sf(z))


def test_anchor_notes_say_how_this_run_differs(stimuli):
    from gbstats.data.camilliere2021 import read_corrections
    from studies.singular_they.steps import corrected_bold_items
    from studies.singular_they.stimuli import CORRECTIONS_FILE

    bold = corrected_bold_items(read_corrections(CORRECTIONS_FILE))
    # the four typos: ngnoun 7, gfamily 14 and gfamily 37 are closeness x gender rows,
    # plural 26 is not
    assert bold == ["ngnoun-07", "gfamily-14", "gfamily-37"]
    causal = " ".join(P.anchor_notes(scoring="causal", model="gpt2", text="corrected",
                                     corrected_bold_items=bold))
    assert "only the words before the form" in causal and "3 of the 160 rows" in causal
    masked = " ".join(P.anchor_notes(scoring="masked", model="roberta-base",
                                     text="as published", corrected_bold_items=bold))
    assert "another model (roberta-base)" in masked and "160 rows" not in masked
    same = P.anchor_notes(scoring="masked", model="bert-base-uncased", text="as published",
                          corrected_bold_items=bold)
    assert len(same) == 1   # the source alone: nothing differs


# --- a masked model scores the they-form as Watson et al. did -------------------------

def _tiny_bert_for(sentences, folder):
    """A tiny BERT whose vocabulary holds every word of `sentences` whole, except
    `themselves`, which splits into `them` + `##selves`: so they / them / their are one
    piece (as in bert-base-uncased) and one form exercises the multi-piece rule."""
    import re

    from tiny_models import build_tiny_bert

    words = sorted({w for s in sentences for w in re.findall(r"\w+|[^\w\s]", s.lower())})
    letters = sorted({c for w in words for c in w})
    vocab = [w for w in words if w != "themselves"] + ["them", "##selves"] + letters + \
        [f"##{c}" for c in letters]
    return build_tiny_bert(folder, seed=3, vocab=vocab, max_positions=128,
                           initializer_range=0.2)


@pytest.fixture(scope="module")
def masked_case(stimuli, tmp_path_factory):
    from models.loading import load_scorer

    # two published items of each form, all 8 conditions: 64 stimuli
    firsts = stimuli.groupby("target_form")["itm"].unique().map(lambda v: sorted(v)[:2])
    keep = stimuli[stimuli["itm"].isin([i for v in firsts for i in v])].reset_index(drop=True)
    folder = _tiny_bert_for(list(keep["sentence"]), tmp_path_factory.mktemp("bert"))
    lm = load_scorer(str(folder))
    return keep, lm, A.score_targets(keep, lm, use_cache=False)


def watson_probability(lm, sentence: str, form: str) -> float:
    """Watson et al.'s procedure, written out here: the form replaced by one mask token
    (str.replace, which must leave exactly one), the model run on the whole masked sentence,
    the softmax at the mask read at the form's vocabulary entry."""
    import torch

    masked = sentence.replace(form, lm.tokenizer.mask_token)
    enc = lm.tokenizer(masked, return_tensors="pt")
    at = (enc["input_ids"][0] == lm.tokenizer.mask_token_id).nonzero()
    assert at.numel() == 1, masked
    with torch.no_grad():
        logits = lm.model(**enc).logits[0, at.item()]
    return float(torch.softmax(logits.double(), -1)[lm.tokenizer.vocab[form]])


def test_one_piece_forms_score_as_watson_did(masked_case):
    keep, lm, scored = masked_case
    one = scored[scored["n_tokens"] == 1]
    assert set(one["target_form"]) == {"they", "them", "their"} and len(one) == 48
    expected = [watson_probability(lm, s, f) for s, f in zip(one["sentence"], one["target_form"])]
    np.testing.assert_allclose(one["probability"], expected, rtol=1e-4)
    # the random BERT's probabilities differ across items, so the check has teeth
    assert np.ptp(expected) > 1e-3
    assert (scored["scoring"] == "masked").all()


def test_every_form_agrees_with_minicons_within_word_l2r(masked_case):
    """All 64 forms, multi-piece included: the sum of minicons' within_word_l2r token
    scores over the form's pieces (the chain rule, each piece with the later pieces
    masked) equals our log-probability."""
    from reference_scorers import minicons_scorer

    keep, lm, scored = masked_case
    several = scored[scored["n_tokens"] > 1]
    assert set(several["target_form"]) == {"themselves"} and (several["n_tokens"] == 2).all()
    reference = minicons_scorer().MaskedLMScorer(lm.model, tokenizer=copy.deepcopy(lm.tokenizer),
                                                 device="cpu")
    terms = reference.token_score(list(scored["sentence"]), PLL_metric="within_word_l2r")
    for row, tokens in zip(scored.itertuples(), terms):
        enc = lm.tokenizer(row.sentence, return_offsets_mapping=True, add_special_tokens=False)
        start = len(row.prefix) + 1   # the form follows the prefix and one space
        inside = [k for k, (a, b) in enumerate(enc["offset_mapping"])
                  if a >= start and b <= start + len(row.target_form)]
        assert len(inside) == row.n_tokens
        assert sum(tokens[k][1] for k in inside) == pytest.approx(row.logprob, abs=1e-4)


def test_report_says_how_a_masked_model_scored(masked_case):
    _, _, scored = masked_case
    text = P.scoring_description(scored, "masked")
    assert "as Watson et al. (2023) scored it with BERT" in text
    assert "48 of 64 forms are one piece" in text and "16 split into several pieces" in text
    assert P.scoring_counts(scored) == (48, 16)
    assert "left context" in P.scoring_description(scored, "causal")


@pytest.mark.slow
def test_a_masked_model_runs_the_study_end_to_end(stimuli, tmp_path):
    """`--model <a BERT folder>`: the report says the form was scored as Watson et al. did,
    and the anchor's row for this run reads the whole sentence."""
    import json

    from studies.singular_they.run import main

    folder = _tiny_bert_for(list(stimuli["sentence"]), tmp_path / "bert")
    out = tmp_path / "out"
    assert main(["--model", str(folder), "--out", str(out), "--no-bayes", "--n-boot", "20",
                 "--backend", "statsmodels", "--cache-dir", str(tmp_path / "cache")]) == 0
    results = json.loads((out / "results.json").read_text())
    report = (out / "report.md").read_text()
    assert "as Watson et al. (2023) scored it with BERT" in report
    assert "254 of 335 forms are one piece" in report   # every form but the 81 themselves
    anchor = pd.DataFrame(results["tables"]["published_anchor"])
    ours = anchor[anchor["source"] != "Watson et al. (2023)"]
    assert set(ours["context"]) == {"the whole sentence, form masked"}
    assert "Scored as Watson et al. did" in report and "only the words before" not in report
    assert results["provenance"]["extra"]["stimuli_text"] == "corrected"
    assert results["provenance"]["extra"]["simulated_panel"]["seed"] == 2023
