"""A local (or hub) model loads as lazily as the embedded one.

A fresh process whose scores are all in the cache reads the model folder's
config.json and nothing else: no tokenizer, no weights, no torch, no
transformers, so no GPU is touched either (issue 26: a cached CLI run with a
hub or local model took 22 s against 23 s cold).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEXTS = ["My sister said they would come tomorrow.", "The dentists said they were busy."]

CHILD = textwrap.dedent("""
    import json, sys
    from models.causal import score_sentences
    from models.loading import load_scorer

    lm = load_scorer(sys.argv[2], device=sys.argv[4])
    out = score_sentences(json.loads(sys.argv[3]), lm=lm, cache_dir=sys.argv[1])
    print(json.dumps({"logprob": out["logprob"].tolist(), "run": out.attrs["run"],
                      "tokenizer_loaded": lm.tokenizer_loaded,
                      "weights_loaded": lm.weights_loaded,
                      "imported": sorted(m for m in ("torch", "transformers") if m in sys.modules)}))
""")


def _child(cache_dir, folder, texts, device="cpu") -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", CHILD, str(cache_dir), str(folder),
                           json.dumps(texts), device], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# the cached path imports neither torch nor transformers: pinned stack only (see the Makefile)
@pytest.mark.stack_independent
def test_a_cached_run_with_a_local_model_loads_nothing(tiny_gpt2_dir, tmp_path):
    from models.loading import clear_loaded_models, load_scorer

    cache = tmp_path / "cache"
    clear_loaded_models()  # a fresh handle, not the session fixture's (which has loaded both)
    lm = load_scorer(str(tiny_gpt2_dir))
    assert not lm.tokenizer_loaded and not lm.weights_loaded  # nothing until it is needed
    assert (lm.kind, lm.model_type) == ("causal", "gpt2")
    assert lm.revision == f"local-sha256:{lm.fingerprint[:16]}"  # the folder's content digest
    fresh = score_sentences_in_process(lm, cache)

    cached = _child(cache, tiny_gpt2_dir, TEXTS)
    assert cached["run"]["computed"] == 0 and cached["logprob"] == fresh
    assert not cached["tokenizer_loaded"] and not cached["weights_loaded"]
    assert cached["imported"] == []

    missed = _child(cache, tiny_gpt2_dir, TEXTS + ["Each student must hand in the essay."])
    assert missed["run"]["computed"] == 1 and missed["weights_loaded"]
    assert missed["logprob"][:2] == fresh


def score_sentences_in_process(lm, cache) -> list:
    from models.causal import score_sentences

    return score_sentences(TEXTS, lm=lm, cache_dir=cache)["logprob"].tolist()


def test_a_kind_mismatch_is_refused_from_the_config_alone(tiny_bert_dir):
    import pytest

    from models.loading import ModelUnavailableError, load_scorer

    with pytest.raises(ModelUnavailableError, match="is a masked LM; this scorer needs a causal LM"):
        load_scorer(str(tiny_bert_dir), kind="causal")


def test_a_folder_without_config_is_named(tmp_path):
    import pytest

    from models.loading import ModelUnavailableError, load_scorer

    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelUnavailableError, match="no readable config.json"):
        load_scorer(str(tmp_path / "empty"))
