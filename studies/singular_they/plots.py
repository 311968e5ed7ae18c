"""singular_they's headline effects figure: closeness and gender marking, on people's
ratings beside the model's surprisal (gbstats.report.effects_figure).

The two sides are on different scales (rating points, surprisal in nats), so each has its
own panel and its own axis, one row per effect in both; the figure compares the signs and
the pattern of the two effects, never their sizes (as the model_vs_human_effects table
says). The estimates are read from that table (analysis.side_by_side): the +1/-1 coded
slopes, doubled, so that each is the whole difference between the factor's two levels.
"""
from __future__ import annotations

import pandas as pd

EFFECT_LABELS = {"close": "close minus distant antecedent",
                 "gendered": "gendered minus non-gendered antecedent"}
SIDES = {"human rating": ("people", "People: rating (points)"),
         "model surprisal": ("model", "Model: surprisal of the they-form (nats)")}
BACKEND = "lme4"


def effects_frame(side_by_side: pd.DataFrame) -> pd.DataFrame:
    """The closeness and gender effects of `side_by_side` (effect, side, backend, estimate,
    ci_low, ci_high; +1/-1 slopes) as the effects figure reads them: each side its own
    panel, the difference between the two levels (twice the slope), lme4's fit where there
    is one (else the first engine's)."""
    rows = []
    for side, (who, panel) in SIDES.items():
        part = side_by_side[(side_by_side["side"] == side)
                            & side_by_side["effect"].isin(list(EFFECT_LABELS))]
        if part.empty:
            continue
        backend = BACKEND if (part["backend"] == BACKEND).any() else part["backend"].iloc[0]
        part = part[part["backend"] == backend].set_index("effect")
        for effect, label in EFFECT_LABELS.items():
            if effect in part.index:
                r = part.loc[effect]
                rows.append({"panel": panel, "label": label, "side": who,
                             "estimate": 2 * r["estimate"], "ci_lo": 2 * r["ci_low"],
                             "ci_hi": 2 * r["ci_high"]})
    return pd.DataFrame(rows, columns=["panel", "label", "side", "estimate", "ci_lo", "ci_hi"])


def write_effects_figure(report, side_by_side: pd.DataFrame, model: str, *,
                         simulated: bool, cache: dict | None = None) -> None:
    """figures/singular_they_effects.png (and .pdf); `simulated` when people's ratings are
    the simulated panel; `cache` the run's cache settings (kept files of the same figure)."""
    from gbstats.report.effects_figure import ONE_COLUMN, report_effects_figure

    frame = effects_frame(side_by_side)
    if frame.empty:
        return
    people = "simulated people" if simulated else "people"
    report_effects_figure(
        report, "singular_they_effects", frame,
        f"Closeness and gender marking of the antecedent: the difference between the two "
        f"levels of each, on {people}'s ratings and on the model's surprisal of the they-form, "
        "with 95% intervals; each side on its own scale, so compare signs, not sizes "
        "(opposite signs are expected: surprisal is lower where ratings are higher)",
        simulated=simulated, width=ONE_COLUMN, sharex=False,
        xlabel="difference between the two levels",
        title=f"Closeness and gender marking: {people} and {model}",
        side_labels={"people": people, "model": "the model"}, cache=cache)
