"""`python -m models score`: every measure equals the library call it stands for, the output
is long (one row per item x model), a re-run scores nothing, and bad input names row and column."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from models.__main__ import main
from models.causal import score_continuations, score_sentences
from models.forced_choice import forced_choice
from models.masked import pll_sentences
from tiny_models import SENTENCES, build_tiny_gpt2

SCORE_COLUMNS = ["item", "logprob", "surprisal_bits", "n_tokens", "scoring", "model", "revision"]


@pytest.fixture(scope="module")
def second_gpt2_dir(tmp_path_factory, tiny_bert_dir):
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2_seed1"), tiny_bert_dir, seed=1)


def run_cli(*args) -> int:
    return main(["score", "--quiet", *map(str, args)])


def test_causal_sweep_of_two_models_is_long_and_equals_the_library(tiny_gpt2_dir, second_gpt2_dir,
                                                                   tiny_gpt2, tmp_path, cache_dir):
    stimuli = tmp_path / "stimuli.csv"
    pd.DataFrame({"item": [f"s{i}" for i in range(len(SENTENCES))], "text": SENTENCES,
                  "condition": "x"}).to_csv(stimuli, index=False)
    out = tmp_path / "scores.csv"
    assert run_cli("--stimuli", stimuli, "--model", tiny_gpt2_dir, "--model", second_gpt2_dir,
                   "--out", out, "--cache-dir", cache_dir) == 0
    scores = pd.read_csv(out)
    assert set(SCORE_COLUMNS) <= set(scores.columns)
    assert len(scores) == 2 * len(SENTENCES)
    assert scores.groupby("model")["item"].nunique().tolist() == [len(SENTENCES)] * 2
    expected = score_sentences(SENTENCES, lm=tiny_gpt2, use_cache=False)
    mine = scores[scores["model"] == str(tiny_gpt2_dir)].reset_index(drop=True)
    np.testing.assert_allclose(mine["logprob"], expected["logprob"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(mine["surprisal_bits"], -mine["logprob"] / np.log(2), rtol=1e-12)
    assert (mine["scoring"] == "causal").all()
    other = scores[scores["model"] == str(second_gpt2_dir)]["logprob"].to_numpy()
    assert not np.allclose(other, mine["logprob"])  # two different models, two different scores


def test_a_rerun_scores_nothing(tiny_gpt2_dir, tmp_path, cache_dir):
    from models.sweep import read_stimuli, sweep

    stimuli = tmp_path / "stimuli.tsv"
    pd.DataFrame({"sentence": SENTENCES}).to_csv(stimuli, sep="\t", index=False)
    read = read_stimuli(stimuli)
    assert read.table["item"].tolist() == list(range(2, len(SENTENCES) + 2))  # file rows
    assert "row numbers" in read.notes[0]
    runs = []
    for _ in range(2):
        sweep(read, [str(tiny_gpt2_dir)], cache_dir=cache_dir,
              report=lambda name, run: runs.append(run))
    assert runs[0]["computed"] == len(SENTENCES) and runs[0]["cache_hits"] == 0
    assert runs[1]["computed"] == 0 and runs[1]["cache_hits"] == len(SENTENCES)


def test_continuation_choice_and_pll_measures(tiny_gpt2_dir, tiny_gpt2, tiny_bert_dir, tiny_bert,
                                              tmp_path, cache_dir):
    prefixes = ["My sister said", "The dentists said", "Our neighbour said"]
    conts = [" they would come tomorrow.", " they were busy.", " she had seen the fox."]
    continuation = tmp_path / "continuation.parquet"
    pd.DataFrame({"item": [1, 2, 3], "prefix": prefixes, "continuation": conts}).to_parquet(continuation)
    out = tmp_path / "continuation_scores.parquet"
    assert run_cli("--stimuli", continuation, "--measure", "continuation", "--model", tiny_gpt2_dir,
                   "--out", out, "--cache-dir", cache_dir) == 0
    expected = score_continuations(prefixes, conts, lm=tiny_gpt2, use_cache=False)
    got = pd.read_parquet(out)
    assert got["item"].tolist() == [1, 2, 3]
    np.testing.assert_allclose(got["logprob"], expected["logprob"], rtol=0, atol=1e-12)

    # forced choice, variants given per item in a long file: rows come back in file order
    frames = ["My sister said [BLANK] would come tomorrow.", "Our neighbour said [BLANK] had seen the fox."]
    long = pd.DataFrame({"item": ["a", "a", "a", "b", "b"],
                         "frame": [frames[0]] * 3 + [frames[1]] * 2,
                         "variant": ["he", "she", "they", "she", "he"]})
    choice = tmp_path / "choice.csv"
    long.to_csv(choice, index=False)
    out = tmp_path / "choice_scores.csv"
    assert run_cli("--stimuli", choice, "--measure", "choice", "--model", tiny_gpt2_dir,
                   "--out", out, "--cache-dir", cache_dir) == 0
    got = pd.read_csv(out)
    assert list(zip(got["item"], got["variant"])) == list(zip(long["item"], long["variant"]))
    np.testing.assert_allclose(got.groupby("item")["probability"].sum(), [1.0, 1.0], rtol=1e-12)
    a = forced_choice(frames[:1], ["he", "she", "they"], items=["a"], lm=tiny_gpt2, use_cache=False)
    np.testing.assert_allclose(got["logprob"][:3], a["logprob"], rtol=0, atol=1e-12)

    # one variant list for every frame
    pd.DataFrame({"item": ["a", "b"], "frame": frames}).to_csv(choice, index=False)
    assert run_cli("--stimuli", choice, "--measure", "choice", "--variants", "he,she",
                   "--model", tiny_gpt2_dir, "--out", out, "--cache-dir", cache_dir) == 0
    assert len(pd.read_csv(out)) == 4

    texts = tmp_path / "texts.csv"
    pd.DataFrame({"item": range(4), "text": SENTENCES[:4]}).to_csv(texts, index=False)
    out = tmp_path / "pll.csv"
    assert run_cli("--stimuli", texts, "--measure", "pll_word_l2r", "--model", tiny_bert_dir,
                   "--out", out, "--cache-dir", cache_dir) == 0
    expected = pll_sentences(SENTENCES[:4], lm=tiny_bert, variant="pll_word_l2r", use_cache=False)
    got = pd.read_csv(out)
    np.testing.assert_allclose(got["logprob"], expected["logprob"], rtol=0, atol=1e-12)
    assert (got["scoring"] == "pll_word_l2r").all()


@pytest.mark.parametrize("content, options, message", [
    ("item,words\n1,Hello there.\n", [], "no text column"),
    ("item,text\n1,Hello there.\n2,\n", [], "row 3, column 'text'"),
    ("item,text\n1,Hello there.\n1,Bye.\n", [], "row 3, column 'item'"),
    ("item,text\n1,Hello there.\n,Bye.\n", [], "row 3, column 'item'"),
    ("item,prefix\n1,Hello\n", ["--measure", "continuation"], "missing column 'continuation'"),
    ("item,frame,variant\n1,A [BLANK] b.,he\n1,A [BLANK] c.,she\n", ["--measure", "choice"],
     "row 3, column 'frame'"),
    ("item,frame,variant\n1,A [BLANK] b.,he\n2,A [BLANK] c.,she\n", ["--measure", "choice"],
     "has one variant"),
])
def test_bad_input_names_row_and_column(tmp_path, capsys, content, options, message):
    stimuli = tmp_path / "bad.csv"
    stimuli.write_text(content)
    assert run_cli("--stimuli", stimuli, "--out", tmp_path / "out.csv", *options) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and str(stimuli) in err
    assert not (tmp_path / "out.csv").exists()


def test_a_measure_the_model_cannot_take_is_a_clean_error(tiny_bert_dir, tmp_path, capsys):
    stimuli = tmp_path / "texts.csv"
    pd.DataFrame({"text": SENTENCES[:2]}).to_csv(stimuli, index=False)
    assert run_cli("--stimuli", stimuli, "--model", tiny_bert_dir, "--out", tmp_path / "o.csv") == 2
    err = capsys.readouterr().err
    assert "--measure causal needs a causal LM" in err and "pll_original" in err


def test_unknown_file_types(tmp_path, capsys):
    (tmp_path / "s.xlsx").write_text("x")
    assert run_cli("--stimuli", tmp_path / "s.xlsx", "--out", tmp_path / "o.csv") == 2
    assert "unknown stimulus file type" in capsys.readouterr().err


def test_help_lists_measures_and_engines():
    result = subprocess.run([sys.executable, "-m", "models", "score", "--help"],
                            capture_output=True, text=True, check=True)
    for word in ["--stimuli", "--measure", "continuation", "pll_word_l2r", "choice", "--engine",
                 "--ray-address", "[BLANK]"]:
        assert word in result.stdout


def test_stray_and_special_spaces_in_texts_are_made_plain_and_counted(tmp_path):
    # issue 44, case 1: on smollm2 a leading space moved a score by 3.6 nats, a trailing one
    # by 3.8 and a no-break space before "they" by 12.5, and nothing said so
    from models.sweep import read_stimuli

    path = tmp_path / "s.csv"
    pd.DataFrame({"item": [1, 2, 3, 4],
                  "text": [" They left.", "They left. ", "Alex said\u00a0they left.",
                           "Alex said  they left."]}).to_csv(path, index=False)
    stimuli = read_stimuli(path)
    assert stimuli.table["text"].tolist() == ["They left.", "They left.",
                                              "Alex said they left.", "Alex said they left."]
    notes = " ".join(stimuli.notes)
    assert "2 text(s)" in notes and "began or ended with whitespace" in notes
    assert "(rows 2, 3, column 'text')" in notes and "(rows 4, 5, column 'text')" in notes
    verbatim = read_stimuli(path, verbatim_texts=True)
    assert verbatim.table["text"].tolist()[0] == " They left." and verbatim.notes == []
