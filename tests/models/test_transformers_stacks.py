"""transformers 4.57 and 5.x load the embedded SmolLM2 differently; the scores must not notice.

Recorded differences (README, "transformers 4.x and 5.x"):
- BOS: under 4.57 SmolLM2's tokenizer prepends <|im_start|> by default, under
  5.x it does not. gbstats always tokenizes without special tokens and adds
  BOS itself (`bos="prepend"`), so the ids it scores are the same.
- The tokenizer saved after the first GGUF load (the model cache) was reported
  to come back with a different pre-tokenizer under transformers 5.17; a
  different pre-tokenizer splits text differently and changes every score.
  Checked here: the saved tokenizer's normalizer, pre-tokenizer and decoder
  equal the GGUF-built one's, and both give the same ids and offsets on text
  that exercises the pre-tokenizer (digits, runs of spaces, tabs, apostrophes,
  accents, emoji).
- Where CI's second environment exists (.venv-tf5 beside .venv), the same
  sentences are scored under both and must agree within 1e-5 nats per token.
"""
from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.needs_model

REPO = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
HOSTILE = ["My sister said they'd come, 1234 times!", "Xe  said\tthat  the dentist's café",
           "  leading spaces and trailing  ", "naïve résumé — 3.14 🙂", "THEY/them, he/him; 2024-05-01"]
STIMULI = ["My sister said they would come tomorrow.", "The dentists said they were busy.",
           "Alex said xe would bring xyr notes and give them to xem."]


def _major() -> int:
    import transformers

    return int(transformers.__version__.split(".")[0])


def test_bos_is_ours_whatever_the_tokenizer_adds(smollm):
    from models.causal import prepare_units

    tok = smollm.tokenizer
    adds_bos = tok("x")["input_ids"][0] == tok.bos_token_id
    # the recorded difference: 4.57 adds <|im_start|>, 5.x does not
    assert adds_bos == (_major() < 5)
    units = prepare_units(smollm, [""] * len(STIMULI), STIMULI, "prepend")
    plain = tok(STIMULI, add_special_tokens=False)["input_ids"]
    for unit, ids in zip(units, plain):
        assert unit.ids == [tok.bos_token_id] + list(ids)
        assert unit.ids.count(tok.bos_token_id) == 1


def _pipeline(tokenizer) -> dict:
    state = json.loads(tokenizer.backend_tokenizer.to_str())
    return {part: state.get(part) for part in ("normalizer", "pre_tokenizer", "decoder")}


@pytest.mark.slow
def test_saved_tokenizer_splits_text_like_the_gguf_one(smollm, tmp_path, monkeypatch):
    from transformers import AutoTokenizer

    from models.loading import _load_embedded
    from models.registry import MODELS, embedded_model_folder

    spec = MODELS["smollm2-135m"]
    from_gguf = AutoTokenizer.from_pretrained(embedded_model_folder(), gguf_file=spec.model_id)
    monkeypatch.setenv("GBSTATS_MODEL_CACHE", str(tmp_path / "models"))
    _load_embedded(spec, "float32").tokenizer  # the first load saves it ...
    saved = _load_embedded(spec, "float32").tokenizer  # ... and this one reads it back
    assert _pipeline(saved) == _pipeline(from_gguf)
    a = from_gguf(HOSTILE, add_special_tokens=False, return_offsets_mapping=True)
    b = saved(HOSTILE, add_special_tokens=False, return_offsets_mapping=True)
    assert a["input_ids"] == b["input_ids"] and a["offset_mapping"] == b["offset_mapping"]


def _other_stack() -> Path | None:
    """The python of the other transformers environment (CI builds both), if there is one."""
    other = REPO / (".venv" if _major() >= 5 else ".venv-tf5") / "bin" / "python"
    return other if other.exists() else None


CHILD = textwrap.dedent("""
    import json, sys, transformers
    from models.causal import token_surprisals
    out = token_surprisals(json.loads(sys.argv[1]), lm="smollm2-135m", use_cache=False)
    print(json.dumps({"transformers": transformers.__version__,
                      "logprob": [None if v != v else v for v in out["logprob"]]}))
""")


@pytest.mark.slow
def test_both_stacks_score_alike(smollm):
    from models.causal import token_surprisals

    other = _other_stack()
    if other is None:
        reason = "no second transformers environment (.venv-tf5 / .venv) beside this one"
        if IN_CI:
            pytest.fail(f"{reason}; CI's setup builds both")
        pytest.skip(reason)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    # embedding R (rpy2, imported by earlier tests) puts the system's library folders first
    # on LD_LIBRARY_PATH; a child interpreter then loads the wrong libpython for _ssl
    # (models.engine explains the same for Ray). The child needs no R: drop the variable.
    env.pop("LD_LIBRARY_PATH", None)
    done = subprocess.run([str(other), "-c", CHILD, json.dumps(STIMULI)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    import transformers

    assert theirs["transformers"].split(".")[0] != transformers.__version__.split(".")[0]
    ours = token_surprisals(STIMULI, lm=smollm, use_cache=False)["logprob"].to_numpy()
    np.testing.assert_allclose(np.array(theirs["logprob"], dtype=float), ours, atol=1e-5, rtol=0)
