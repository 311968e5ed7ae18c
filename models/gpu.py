"""What scoring does differently on a GPU (issue 41, item 5). Nothing here runs on a CPU.

Two pieces:

- `target_logprobs`: log P(wanted token) at each scored position, as the log-softmax
  over the vocabulary picked at the wanted token, computed as logit(wanted) minus the
  log-sum-exp of the row, in float32. The CPU path takes the whole float32 log-softmax
  and gathers from it (the same number up to float32 rounding, ~1e-6 nats a token);
  on a GPU that wrote and read three vocabulary-sized float32 tensors per pass (a
  float32 copy of the logits, the log-softmax, its read for the gather), which for
  ~11,000 positions x 49,152 entries is ~2 GB each. Here the row's log-sum-exp is
  reduced from the model-dtype logits (accumulated in float32), in slices of rows so
  that the float32 copy of a slice is all that is held; where the model's blocks are
  compiled (`compile_blocks`) the reduction is one compiled kernel that reads the
  bf16 logits without the float32 copy.
- `compile_blocks`: opt-in. Each transformer block (a decoder layer of a Llama-style
  model, an encoder layer of BERT) is compiled in place with torch.compile, with
  dynamic shapes, so that every pass's (rows, width) runs the same compiled code.
  The blocks are identical, so they share one compilation (regional compilation),
  which takes tens of seconds once per process and pays off only on runs of many
  thousand texts. The compiled kernels fuse the norms, rotary embeddings and
  activations that eager mode runs as separate memory-bound kernels. Scores agree
  with eager mode's to float rounding (benchmarks/results/gpu_scoring.json records
  the compiled float32 scores against minicons'), not bit for bit.
"""
from __future__ import annotations

# The log-sum-exp head (`target_logprobs`) on a GPU; False: the float32 log-softmax over
# the whole vocabulary, as on a CPU (benchmarks/gpu_scoring.py times both)
FUSED_HEAD = True
# rows of logits reduced at a time by the eager log-sum-exp: a float32 copy of 4,096 rows of
# a 50,000-entry vocabulary is 0.8 GB
LSE_ROWS = 4096
_COMPILED_LSE: list = []  # the compiled log-sum-exp, made on first use


def _blocks(model):
    """The repeated transformer blocks of `model` (a list of modules), or None."""
    base = getattr(model, "base_model", model)
    for path in (("layers",), ("h",), ("encoder", "layer"), ("layer",)):
        found = base
        for name in path:
            found = getattr(found, name, None)
            if found is None:
                break
        if found is not None and len(found):
            return list(found)
    return None


def is_compiled(model) -> bool:
    return bool(getattr(model, "_gbstats_compiled", False))


def compile_blocks(model, *, allow_cpu: bool = False) -> int:
    """Compile each transformer block of `model` (on a CUDA device) in place; returns how
    many. A model on another device (unless allow_cpu, for tests), or one whose blocks
    are not found, is refused."""
    import torch

    device = next(model.parameters()).device
    if device.type != "cuda" and not allow_cpu:
        raise ValueError(f"compile_blocks is for a model on a CUDA device; this one is on "
                         f"{device}")
    blocks = _blocks(model)
    if not blocks:
        raise ValueError(f"no repeated transformer blocks found in {type(model).__name__}")
    # every model and dtype compiled in one process counts against dynamo's limit on
    # recompilations of the one block code (8 by default), past which it runs eagerly
    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, name):
            setattr(config, name, max(getattr(config, name), 64))
    for block in blocks:
        block.compile(dynamic=True)
    model._gbstats_compiled = True
    return len(blocks)


def _lse_float32(logits):
    import torch

    return torch.logsumexp(logits.float(), dim=-1)


def row_logsumexp(logits, compiled: bool = False):
    """log sum exp over the last dimension, in float32, of 2D logits in any float dtype."""
    import torch

    if compiled:
        if not _COMPILED_LSE:
            _COMPILED_LSE.append(torch.compile(_lse_float32, dynamic=True))
        return _COMPILED_LSE[0](logits)
    out = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
    for start in range(0, logits.shape[0], LSE_ROWS):
        out[start:start + LSE_ROWS] = _lse_float32(logits[start:start + LSE_ROWS])
    return out


def target_logprobs(logits, wanted, compiled: bool = False):
    """log softmax(logits[k])[wanted[k]] for each row k, in float32 (see the module's
    docstring): logits (positions, vocabulary) in the model's dtype, wanted (positions,)."""
    picked = logits.gather(1, wanted[:, None])[:, 0].float()
    return picked - row_logsumexp(logits, compiled)
