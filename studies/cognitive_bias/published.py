"""Lior & Stanovsky (2023) Table 2, as published: what the study reproduces.

People: (correct, total) per alpha and condition and the ignored non-coreference
answers (wino), as published with their counts in SLAB-NLP/Cog-GB-Eval
experiment_results/processed/humans/QA/{wino,BUG}/aggregated.md (wino at commit
9c58a38c, BUG at aad23139); the percentages are the paper's Table 2 and
experiment_results/processed/combined_table.md (commit c5c3a1f2).
Systems: percent correct, one decimal, = combined_table.md at commit c5c3a1f2.
"""
from __future__ import annotations

PUBLISHED_HUMANS = {
    ("wino", 0.75): {"pro": (546, 608), "anti": (567, 632), "ignored": 27},
    ("wino", 0.5): {"pro": (537, 605), "anti": (556, 635), "ignored": 30},
    ("wino", 0.25): {"pro": (457, 581), "anti": (482, 614), "ignored": 67},
    ("BUG", 0.75): {"pro": (445, 507), "anti": (424, 512), "ignored": 0},
    ("BUG", 0.5): {"pro": (442, 516), "anti": (406, 513), "ignored": 0},
    ("BUG", 0.25): {"pro": (422, 511), "anti": (386, 510), "ignored": 0},
}
PUBLISHED_SYSTEMS = {
    ("wino", "SpanBERT"): {"pro": 86.5, "anti": 73.4}, ("wino", "s2e"): {"pro": 91.3, "anti": 77.7},
    ("BUG", "SpanBERT"): {"pro": 62.1, "anti": 60.0}, ("BUG", "s2e"): {"pro": 61.7, "anti": 59.3},
}


def published_percent(dataset: str, source: str, alpha, condition: str) -> float | None:
    """Table 2's percent correct for one cell (people: from the published counts, to one
    decimal as the paper prints it), or None for a cell the paper does not have."""
    if source == "human":
        cell = PUBLISHED_HUMANS.get((dataset, float(alpha)))
        if cell is None:
            return None
        correct, total = cell[condition]
        return round(100 * correct / total, 1)
    return PUBLISHED_SYSTEMS.get((dataset, source), {}).get(condition)
