"""Many models in one study run (issue 42): the flags, the shared ranking step on a study's
real data, and one whole run that ranks three models against people.

The models are real transformers models built here: tiny Llamas with random weights and
SmolLM2's own tokenizer (saved from the embedded model), so that every name, prompt and
stimulus is tokenised as the embedded model does. Two folders with the same files are
"two copies of one model": their statistics must be identical, their difference 0, and
the answer must say they cannot be ranked.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gbstats.errors import DataValidationError, GbstatsError

REPO = Path(__file__).resolve().parents[2]


def _parse(study: str, argv: list[str]):
    from studies.discovery import get_study

    return get_study(study).build_parser().parse_args(argv)


def test_repeated_model_keeps_every_name_in_order_and_the_first_as_primary(tmp_path):
    from studies.common import ranked_model_names

    listed = tmp_path / "models.txt"
    listed.write_text("# models for the paper\n\nmodel-c   # the third\nmodel-d\n")
    args = _parse("name_gender", ["--model", "model-a", "--model", "model-b",
                                  "--models", str(listed)])
    assert args.model == "model-a"
    assert ranked_model_names(args) == ["model-a", "model-b", "model-c", "model-d"]
    only_file = _parse("singular_they", ["--models", str(listed)])
    assert only_file.model == "model-c" and ranked_model_names(only_file) == ["model-c", "model-d"]
    default = _parse("singular_they", [])
    assert ranked_model_names(default) == ["smollm2-135m"]
    assert ranked_model_names(_parse("name_gender", ["--model", "none"])) == []


@pytest.mark.parametrize("argv, message", [
    (["--model", "a", "--model", "a"], "a model is named twice"),
    (["--model", "none", "--model", "a"], "'none' was named among several models"),
])
def test_a_model_named_twice_or_none_among_models_is_refused(argv, message):
    from studies.common import ranked_model_names

    with pytest.raises(DataValidationError, match=message):
        ranked_model_names(_parse("name_gender", argv))


@pytest.mark.parametrize("content, message", [
    ("# only a comment\n\n", "no model is named"),
    (None, "file not found"),
])
def test_a_models_file_without_models_is_refused_with_its_name(tmp_path, capsys, content, message):
    path = tmp_path / "models.txt"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as stop:
        _parse("singular_they", ["--models", str(path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "models.txt" in err


def test_ranking_table_refuses_models_scored_on_different_items():
    import pandas as pd

    from studies.ranking import RankingSpec, ranking_table

    class Named:  # a model known by its name only: no weights, no folder to count
        weights_loaded, content_path = False, None

        def __init__(self, name):
            self.name = name

    class FakeRun:  # the Run's interface that ranking_table uses
        study = type("S", (), {"name": "demo"})()

        @staticmethod
        def say(_):
            pass

        @staticmethod
        def model(name):
            return Named(name)

    def scores(run, state, lm):
        n = 5 if lm.name == "short" else 6
        return pd.DataFrame({"item": [f"i{k}" for k in range(n)], "score": np.arange(n) * 1.0})

    spec = RankingSpec(statistic="s", items="i", item_scores=scores, people=None,
                       item_keys=("item",), rating="r", participant="p")
    table = ranking_table(FakeRun, None, spec, ["long", "long2"])
    assert list(table.columns) == ["item", "long", "long2"] and len(table) == 6
    with pytest.raises(GbstatsError, match="short was scored on 5 items and the models before "
                                           "it on 6"):
        ranking_table(FakeRun, None, spec, ["long", "short"])


# --- real models ------------------------------------------------------------------------

def _tiny_llama(folder: Path, tokenizer_folder: Path, seed: int) -> Path:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_folder)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=1024, tie_word_embeddings=True,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         initializer_range=0.2)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def three_models(smollm, tmp_path_factory):
    """[A, a copy of A, B]: tiny Llamas with SmolLM2's tokenizer (seeds 1 and 2), as the
    folders given to --model; they go by their folder names in the ranking."""
    root = tmp_path_factory.mktemp("models")
    smollm.tokenizer.save_pretrained(root / "tokenizer")
    a = _tiny_llama(root / "model-a", root / "tokenizer", seed=1)
    copy = root / "model-a-copy"
    shutil.copytree(a, copy)
    b = _tiny_llama(root / "model-b", root / "tokenizer", seed=2)
    return [str(a), str(copy), str(b)]


def _run_for(study: str, argv: list[str]):
    from studies.discovery import get_study
    from studies.pipeline import Run

    spec = get_study(study)
    return Run(spec, spec.build_parser().parse_args(argv))


@pytest.mark.needs_model
def test_name_gender_ranks_models_on_exp3_clustered_by_first_name(three_models, data_dir,
                                                                   tmp_path):
    from studies.name_gender import steps
    from studies.name_gender.ranking import SPEC
    from studies.ranking import rank_many

    argv = [flag for m in three_models for flag in ("--model", m)]
    run = _run_for("name_gender", argv + ["--data-dir", str(data_dir),
                                          "--cache-dir", str(tmp_path / "cache")])
    state = steps.load(run, None)
    result = rank_many(run, state, SPEC, run.model_names())
    a, copy, b = "model-a", "model-a-copy", "model-b"
    assert result.settings["models_as_given"] == dict(zip((a, copy, b), three_models))
    ranking = result.ranking
    # Exp 3: 21 first names x 3 surnames x 3 conditions, resampled by first name
    assert result.settings["n_items"] == 189 and result.settings["n_clusters"] == 21
    assert ranking.loc[a, "estimate"] == ranking.loc[copy, "estimate"]
    assert (result.draws[a] == result.draws[copy]).all()
    pair = result.differences.set_index(["model_a", "model_b"]).loc[(a, copy)]
    assert pair["difference"] == 0 and pair["ci_low"] <= 0 <= pair["ci_high"]
    assert not pair["differs"]
    assert ranking.loc[a, "rank_lo_marginal"] != ranking.loc[a, "rank_hi_marginal"]
    # every response kept is a he or she continuation of Exp 3, each counted once
    counted = [e for e in run.log.entries if e.stage == "model ranking"]
    assert len(counted) == 1 and "neither he nor she" in counted[0].reason


@pytest.mark.slow
@pytest.mark.needs_model
@pytest.mark.needs_r
def test_singular_they_with_three_models_writes_the_ranking(three_models, data_dir, tmp_path):
    """The whole study, as a user runs it: the first model gets the full analysis; all
    three are ranked, in words, a table (in results.json and tables.tex, which compiles),
    both figures and the pairwise differences."""
    out = tmp_path / "they"
    argv = [flag for m in three_models for flag in ("--model", m)]
    done = subprocess.run([sys.executable, "-m", "studies.singular_they", *argv, "--no-bayes",
                           "--n-boot", "200", "--out", str(out), "--data-dir", str(data_dir),
                           "--cache-dir", str(tmp_path / "cache")],
                          cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    rows = {r["model"]: r for r in results["tables"]["model_ranking"]}
    a, copy, b = "model-a", "model-a-copy", "model-b"
    assert set(rows) == {a, copy, b}
    assert rows[a]["estimate"] == rows[copy]["estimate"]
    for row in rows.values():
        lo, hi = row["rank_set_marginal"]
        assert 1 <= lo <= row["rank"] <= hi <= 3
    pairs = results["tables"]["model_differences"]
    assert len(pairs) == 3
    same = next(p for p in pairs if {p["model_a"], p["model_b"]} == {a, copy})
    assert same["difference"] == 0 and not same["differs"]
    report = (out / "report.md").read_text()
    assert "Which model is most like people" in report
    words = report.split("## Which model is most like people")[1].split("\n\n")[1]
    unranked = next(part for part in words.split(";") if "cannot be ranked" in part)
    assert f"{a}," in unranked or f"{a} and" in unranked
    assert copy in unranked
    for figure in ("model_ranking_forest", "model_ranking_differences"):
        assert list(out.rglob(f"{figure}*.png")), figure
    # the simulated panel: the ranking's caption says so, where the eye lands
    caption = next(line for line in (out / "tables" / "model_ranking.tex").read_text()
                   .splitlines() if line.startswith("\\caption"))
    assert "SIMULATED" in caption and "Models ranked by their agreement with people" in caption
    # all three models are recorded; the copy has the same weights as the original
    recorded = results["provenance"]["models"]
    assert len(recorded) == 3 and len({m["weights_sha256"] for m in recorded}) == 2


@pytest.mark.needs_model
def test_role_nouns_ranks_models_clustered_by_role_noun_set(three_models, data_dir, tmp_path):
    from studies.ranking import rank_many
    from studies.role_nouns import steps
    from studies.role_nouns.ranking import SPEC

    sets = "firefighter,actor,anchor,businessperson,layperson"
    argv = [flag for m in three_models for flag in ("--model", m)]
    run = _run_for("role_nouns", argv + ["--sets", sets, "--states", "2", "--data-dir",
                                         str(data_dir), "--cache-dir", str(tmp_path / "cache")])
    state = steps.load(run, None)
    result = rank_many(run, state, SPEC, run.model_names())
    a, copy, b = "model-a", "model-a-copy", "model-b"
    assert result.settings["n_clusters"] == 5
    # one item per name x set shown to people in these five sets
    assert result.settings["n_items"] == state.trials["item"].nunique()
    assert result.ranking.loc[a, "estimate"] == result.ranking.loc[copy, "estimate"]
    assert result.ranking.loc[a, "estimate"] != result.ranking.loc[b, "estimate"]
    shares = result.ranking["share_of_ceiling"]
    assert np.allclose(shares, result.ranking["estimate"] / result.ceiling["estimate"])


@pytest.mark.parametrize("count, words", [(134_515_008, "135M"), (1_711_376_384, "1.7B"),
                                          (3_221_504, "3.2M"), (52_000, "52K"), (None, "–")])
def test_parameters_are_printed_as_papers_print_them(count, words):
    from gbstats.report.ranking_report import parameters_in_words

    assert parameters_in_words(count) == words


@pytest.mark.needs_model
def test_parameters_from_the_headers_equal_the_loaded_models(three_models):
    """safetensors headers give the parameter count without loading weights; the count of
    the loaded model (tied embeddings once) is the reference."""
    from models.loading import clear_loaded_models, load_scorer
    from studies.ranking import parameter_count, safetensors_parameters

    folder = Path(three_models[0])
    clear_loaded_models()  # earlier tests loaded this model's weights in this process
    lm = load_scorer(str(folder))
    from_headers = safetensors_parameters(folder)
    assert parameter_count(lm) == from_headers  # weights not loaded: the headers answer
    assert not lm.weights_loaded
    assert from_headers == sum(p.numel() for p in lm.model.parameters())
