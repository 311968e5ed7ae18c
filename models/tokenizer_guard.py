"""A tokenizer must be checked before it scores: a GGUF file's tokenizer is rebuilt by
transformers from the file's vocabulary, and a wrong rebuild scores garbage silently.

The case that made this necessary (issue 42, item 5): Gemma-3-270M's GGUF declares a
SentencePiece BPE vocabulary ("llama" in GGUF terms). transformers 4.57 rebuilds it as a
Unigram model, which splits "firefighter" into f/ir/ef/ight/er and "said" into sa/id.
Every id is a real vocabulary entry and decoding gives the sentence back, so an
encode-decode round trip alone PASSES; only the pieces show the fault. transformers 5.24
rebuilds it as BPE and gives the whole words.

So the guard checks two things on one fixed sentence:
1. decode(encode(sentence)) is the sentence (a tokenizer that drops or mangles text);
2. every word of the sentence that the vocabulary holds as one piece comes out as
   exactly that piece. A BPE or SentencePiece tokenizer that works never splits a common
   word its vocabulary has whole. Where the registry records the ids of those pieces (read
   from the GGUF file itself with the `gguf` library, not through transformers), the ids
   must be those; otherwise the tokenizer's own vocabulary says which words are whole.
"""
from __future__ import annotations

import re

from gbstats.errors import GbstatsError

GUARD_SENTENCE = "The firefighter said they would come."
WORD = re.compile(r"\w+|[^\w\s]")
# how BPE and SentencePiece vocabularies spell a word that follows a space
SPACE_MARKS = ("\u2581", "\u0120")  # "▁" (SentencePiece), "Ġ" (GPT-2 byte-level BPE)


class BrokenTokenizerError(GbstatsError):
    """A model's tokenizer does not tokenize a known sentence as its vocabulary says it must;
    nothing is scored with it."""


def _whole_word_ids(tokenizer, words: list[tuple[str, bool]]) -> dict[str, int]:
    """For each word the tokenizer's vocabulary holds as one piece: that piece's id."""
    vocab = tokenizer.get_vocab()
    found = {}
    for word, after_space in words:
        spellings = [mark + word for mark in SPACE_MARKS] if after_space else [word]
        for piece in spellings:
            if piece in vocab:
                found[word] = vocab[piece]
                break
    return found


def tokenizer_problems(tokenizer, whole_words: dict[str, int] | None = None,
                       sentence: str = GUARD_SENTENCE) -> list[str]:
    """What is wrong with `tokenizer` on `sentence` (an empty list where nothing is).

    whole_words: word -> the id its single piece must have (recorded from the model file);
    None: taken from the tokenizer's own vocabulary.
    """
    problems = []
    encoded = tokenizer(sentence, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(encoded["input_ids"]), list(encoded["offset_mapping"])
    decoded = tokenizer.decode(ids)
    if decoded.strip() != sentence:
        problems.append(f"encoding {sentence!r} and decoding it gives {decoded!r}")
    words = [(m.group(), m.start() > 0 and sentence[m.start() - 1] == " ", m.start(), m.end())
             for m in WORD.finditer(sentence)]
    expected = (whole_words if whole_words is not None
                else _whole_word_ids(tokenizer, [(w, space) for w, space, _, _ in words]))
    for word, _, start, end in words:
        if word not in expected:
            continue
        # the tokens whose characters fall inside this word (a leading space, which some
        # tokenizers count in the piece's offsets, is not the word's)
        inside = [(i, (a, b)) for i, (a, b) in zip(ids, offsets)
                  if b > a and max(a, start) < min(b, end)]
        got = [i for i, _ in inside]
        if got != [expected[word]]:
            pieces = tokenizer.convert_ids_to_tokens(got)
            problems.append(f"{word!r} should be the single piece id {expected[word]}, found "
                            f"ids {got} (pieces {pieces})")
    return problems


def require_sound_tokenizer(tokenizer, name: str, whole_words: dict[str, int] | None = None,
                            fix: str = "") -> None:
    """Raise BrokenTokenizerError naming the model, the problems and the fix, unless the
    tokenizer passes `tokenizer_problems`."""
    problems = tokenizer_problems(tokenizer, whole_words)
    if problems:
        import transformers

        backend = getattr(getattr(tokenizer, "backend_tokenizer", None), "model", None)
        raise BrokenTokenizerError(
            f"model {name!r}: the tokenizer transformers {transformers.__version__} built "
            f"({type(tokenizer).__name__}, {type(backend).__name__} model) does not tokenize "
            f"{GUARD_SENTENCE!r} as the model's vocabulary says: "
            + "; ".join(problems) + ". Scores from it would be wrong, so nothing was scored"
            + (f". {fix}" if fix else ""))
