"""Tiny randomly initialised models the tests build and save themselves.

No masked LM is reachable offline (DESIGN.md), so masked-LM code paths run on
a 2-layer BERT with a WordPiece vocabulary trained on the test sentences.
Random weights are enough: every test compares two computations of the same
quantity (ours vs minicons, batch 1 vs 16, cached vs fresh), never a value
that would need a trained model.
"""
from __future__ import annotations

from pathlib import Path

SENTENCES = [
    "My sister said they would come tomorrow.",
    "The dentists said they were busy.",
    "The firefighter carried the ladder to the truck.",
    "The fireman carried the ladder to the truck.",
    "The firewoman carried the ladder to the truck.",
    "The police officer wrote a report about the accident.",
    "Alex said xe would bring xyr notes and give them to xem.",
    "Someone left their umbrella, and we hope they come back for it.",
    "The chairperson opened the meeting at nine.",
    "Our neighbour said he had seen the fox.",
    "Our neighbour said she had seen the fox.",
    "Each student must hand in the essay before noon.",
]


def build_tiny_bert(folder: Path, seed: int = 0, vocab_size: int = 100, *, sentences=SENTENCES,
                    hidden_size: int = 64, intermediate_size: int = 128,
                    strip_accents: bool | None = None, vocab: list[str] | None = None,
                    max_positions: int = 64, initializer_range: float = 0.02) -> Path:
    """A 2-layer BERT with random weights and a WordPiece vocabulary trained on `sentences`.

    A small vocabulary makes longer words (firefighter, chairperson) split into
    pieces. strip_accents=False keeps letters such as Danish æ/ø/å whole.
    `vocab`: an explicit WordPiece vocabulary instead (the special tokens are
    added), for a test that needs a word to split into chosen pieces.
    `initializer_range`: the weights' SD; a larger one than BERT's 0.02 makes
    the random predictions depend clearly on the context.
    """
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    if vocab is None:
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    else:
        pieces = specials + [p for p in dict.fromkeys(vocab) if p not in specials]
        tok = Tokenizer(models.WordPiece({p: i for i, p in enumerate(pieces)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=strip_accents)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if vocab is None:
        tok.train_from_iterator(sentences, trainers.WordPieceTrainer(vocab_size=vocab_size,
                                                                     special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[(s, tok.token_to_id(s)) for s in ("[CLS]", "[SEP]")])
    fast = BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                             cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(folder)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=fast.vocab_size, hidden_size=hidden_size, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=intermediate_size,
                        max_position_embeddings=max_positions,
                        initializer_range=initializer_range)
    BertForMaskedLM(config).eval().save_pretrained(folder)
    return folder


def build_tiny_gpt2(folder: Path, bert_folder: Path, seed: int = 0, max_positions: int = 128) -> Path:
    """A 2-layer GPT-2 reusing the tiny BERT's vocabulary (for cache and kill tests)."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(bert_folder)
    tokenizer.bos_token = "[CLS]"
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2,
                        n_positions=max_positions,
                        bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id)
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    return folder


def build_tiny_causal(folder: Path, bert_folder: Path, model_type: str, seed: int = 0,
                      **settings) -> Path:
    """A 2-layer random causal LM of another architecture (llama, mistral, qwen2, gpt_neox)
    with the tiny BERT's vocabulary, for tests that must hold on each architecture."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(bert_folder)
    tokenizer.bos_token = "[CLS]"
    tokenizer.save_pretrained(folder)
    sizes = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
             "num_attention_heads": 4, "max_position_embeddings": 128}
    if model_type != "gpt_neox":
        sizes["num_key_value_heads"] = 2  # grouped-query attention, as SmolLM2 has
    config = AutoConfig.for_model(model_type, vocab_size=len(tokenizer),
                                  bos_token_id=tokenizer.cls_token_id,
                                  eos_token_id=tokenizer.sep_token_id, **{**sizes, **settings})
    torch.manual_seed(seed)
    AutoModelForCausalLM.from_config(config).eval().save_pretrained(folder)
    return folder


def reference_pll_terms(lm, text: str, variant: str) -> list[tuple[str, float]]:
    """(token, log P(token | masked copy)) for every real token of `text`, computed the
    plain way: one full forward pass per masked copy, no batching, no head shortcut.

    pll_original masks the token alone (Salazar et al. 2020); pll_word_l2r also
    masks the later pieces of the same word (Kauf & Ivanova 2023). An
    independent route to the numbers models.masked computes.
    """
    import torch

    enc = lm.tokenizer(text)
    ids, words = enc["input_ids"], enc.word_ids()
    terms = []
    for t, word in enumerate(words):
        if word is None:
            continue
        masked = list(ids)
        masked[t] = lm.tokenizer.mask_token_id
        if variant == "pll_word_l2r":
            for j in range(t + 1, len(ids)):
                if words[j] == word:
                    masked[j] = lm.tokenizer.mask_token_id
        with torch.no_grad():
            logits = lm.model(input_ids=torch.tensor([masked])).logits[0, t]
        terms.append((lm.tokenizer.convert_ids_to_tokens(ids[t]),
                      float(torch.log_softmax(logits.double(), -1)[ids[t]])))
    return terms
