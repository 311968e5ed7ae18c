"""minicons, the reference scorer, is optional: `pip install 'gbstats[reference]'`.

It is not a runtime dependency (its MaskedLMScorer breaks on transformers
5.x), so tests that compare against it skip with a reason where it is absent,
except in CI's pinned transformers-4.57 environment, which must have it
(a skip there would hide a broken setup). CI's transformers-5.x environment
runs without it.
"""
from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def transformers_major() -> int:
    import transformers

    return int(transformers.__version__.split(".")[0])


def minicons_scorer():
    """minicons.scorer, or a skip (a failure in CI's transformers-4.x environment)."""
    try:
        from minicons import scorer
    except ImportError as exc:
        reason = (f"minicons, the reference scorer, is not installed ({exc}); install it with "
                  f"pip install 'gbstats[reference]' (transformers 4.57)")
        if IN_CI and transformers_major() < 5:
            pytest.fail(f"{reason}; CI's transformers-4.57 environment must have it")
        pytest.skip(reason)
    return scorer
