"""name_gender's figures: one named quantity per axis, P(she | he or she) on both sides.

* `people_vs_model_figure`: per name item (a name as shown, in one condition), people's
  share of she among their he and she responses (Wilson 95% interval over trials)
  against the model's P(she) / (P(he) + P(she)) averaged over the item's prompts; one
  panel per experiment x condition; the diagonal is equality.
* `rating_figure`: the same share against the first name's gender rating (1 = most
  masculine, 7 = most feminine), one point per first name (its items pooled: the items of
  a first name share its rating, and drawn one by one they sat on top of each other),
  people and the model in two colours and shapes, nudged apart; one panel per experiment
  x condition that has a rating (Exp 1's last-name items show no first name, so that panel
  is left out, not drawn empty), a dashed line at the rating scale's midpoint (4) and a
  grey one at P = .5.
* `effects_frame`: the headline effects (population-averaged log-odds of she, people's
  GLMM on their he/she responses beside the model's LMM) from the study's `effects`
  table, for `gbstats.report.effects_figure`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.alignment.like_for_like import wilson_interval

PANELS = [(1, "first"), (1, "full"), (1, "last"), (3, "first"), (3, "full"), (3, "last")]
SHARE_LABEL = "P(she | he or she)"
RATING_LABEL = "first name's gender rating (1 masculine - 7 feminine)"
RATING_MIDPOINT = 4.0


def _people_items(tables: dict) -> pd.DataFrame:
    """People's he/she counts per experiment x item x condition, from the trials."""
    parts = []
    for exp in (1, 3):
        t = tables[f"exp{exp}"]
        parts.append(t.groupby(["Item", "Condition"], as_index=False).agg(
            n_he_she=("He", "size"), n_she=("She", "sum"), n_he=("He", "sum"),
            GenderRating=("GenderRating", "first")).assign(experiment=exp))
    out = pd.concat(parts, ignore_index=True)
    out["n_he_she"] = out["n_he"] + out["n_she"]
    out["she_share"] = out["n_she"] / out["n_he_she"]
    return out.rename(columns={"Item": "item_key"})


def _intervals(items: pd.DataFrame) -> np.ndarray:
    low, high = wilson_interval(items["n_she"], items["n_he_she"])
    return np.clip(np.vstack([items["she_share"] - low, high - items["she_share"]]), 0, None)


def people_vs_model_figure(items: pd.DataFrame):
    """One panel per experiment x condition: people's share per item against the model's.
    One colour for every panel (the panel's title says the experiment; a colour per
    experiment had no legend and said nothing the title does not); sized for a two-column
    page."""
    from matplotlib.lines import Line2D

    from gbstats.report.figures import OKABE_ITO, figure_style, new_figure

    fig, axes = new_figure(2, 3, sharex=True, sharey=True, width=7.0, height=5.4)
    with figure_style():
        for ax, (exp, cond) in zip(axes.ravel(), PANELS):
            part = items[(items["experiment"] == exp) & (items["Condition"] == cond)
                         & (items["n_he_she"] > 0)]
            ax.plot([0, 1], [0, 1], color="0.5", lw=1, ls="--", zorder=0)
            # many items per panel: small, half-transparent points and thin whiskers
            ax.errorbar(part["share_two_way"], part["she_share"], yerr=_intervals(part),
                        fmt="o", ms=2.5, lw=0.5, alpha=0.6, color=OKABE_ITO[0])
            ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), aspect="equal",
                   title=f"Exp {exp}, {cond} name ({len(part)} items)")
            ax.title.set_fontsize(9)
            ax.grid(True, alpha=0.3)
        handles = [Line2D([], [], color=OKABE_ITO[0], marker="o", ms=3, lw=0.5, alpha=0.6),
                   matplotlib_line("--", "0.5")]
        fig.legend(handles, ["a name item: people (95% Wilson interval) and the model",
                             "equality"], loc="outside upper center", ncol=2, fontsize=8)
        fig.supxlabel(f"model: {SHARE_LABEL}, mean over the item's prompts", fontsize=9)
        fig.supylabel(f"people: {SHARE_LABEL}", fontsize=9)
    return fig


def first_name_points(items: pd.DataFrame) -> pd.DataFrame:
    """One row per experiment x condition x first name: people's she and he/she counts
    summed over the name's items, their share, and the model's share averaged over the
    items (NaN without a model column)."""
    from studies.name_gender.alignment import first_name_of

    rated = items[items["GenderRating"].notna() & (items["n_he_she"] > 0)]
    rated = rated.assign(first_name=first_name_of(rated["item_key"]))
    model = rated["share_two_way"] if "share_two_way" in rated else np.nan
    pooled = (rated.assign(model_share=model)
              .groupby(["experiment", "Condition", "first_name"], as_index=False)
              .agg(n_she=("n_she", "sum"), n_he_she=("n_he_she", "sum"),
                   GenderRating=("GenderRating", "first"), n_items=("item_key", "size"),
                   model_share=("model_share", "mean")))
    return pooled.assign(she_share=pooled["n_she"] / pooled["n_he_she"])


def rating_figure(items: pd.DataFrame | None, tables: dict | None = None):
    """People and (with `items`) the model against the rating; without `items` (no
    model scored) people's shares come from `tables`."""
    from gbstats.report.figures import OKABE_ITO, figure_style, new_figure

    points = first_name_points(items if items is not None else _people_items(tables))
    panels = [(exp, cond) for exp, cond in PANELS
              if ((points["experiment"] == exp) & (points["Condition"] == cond)).any()]
    ncols = 3
    nrows = -(-len(panels) // ncols)
    fig, axes = new_figure(nrows, ncols, sharex=True, sharey=True, width=7.0,
                           height=2.4 * nrows + 0.9, squeeze=False)
    with figure_style():
        for ax, (exp, cond) in zip(axes.ravel(), panels):
            part = points[(points["experiment"] == exp) & (points["Condition"] == cond)]
            ax.axvline(RATING_MIDPOINT, color="0.5", lw=1, ls="--", zorder=0)
            ax.axhline(0.5, color="0.8", lw=0.8, zorder=0)
            ax.set(xlim=(0.6, 7.4), ylim=(-0.03, 1.03),
                   title=f"Exp {exp}, {cond} name ({len(part)} names)")
            ax.title.set_fontsize(9)
            # people a little left of the rating, the model a little right: never on top
            ax.errorbar(part["GenderRating"] - 0.06, part["she_share"], yerr=_intervals(part),
                        fmt="o", ms=3.5, lw=0.8, alpha=0.8, color=OKABE_ITO[0],
                        label="people (95% Wilson interval)")
            if part["model_share"].notna().any():
                ax.plot(part["GenderRating"] + 0.06, part["model_share"], "s", ms=3.5,
                        alpha=0.8, color=OKABE_ITO[3], label="model")
        for k, ax in enumerate(axes.ravel()):
            if k >= len(panels):
                ax.set_visible(False)        # no empty panel: the slot is left blank
            elif k + ncols >= len(panels):   # nothing below it: it shows the rating's ticks
                ax.xaxis.set_tick_params(labelbottom=True)
        found = dict(zip(*reversed(axes[0, 0].get_legend_handles_labels())))
        labels = [k for k in ("people (95% Wilson interval)", "model") if k in found]
        handles = [found[k] for k in labels]
        handles.append(matplotlib_line("--", "0.5"))
        labels.append("the rating scale's midpoint")
        handles.append(matplotlib_line("-", "0.8"))
        labels.append("P = .5")
        fig.legend(handles, labels, loc="outside upper center", ncol=len(handles), fontsize=8)
        fig.supxlabel(RATING_LABEL, fontsize=9)
        fig.supylabel(SHARE_LABEL + ", each first name's items pooled", fontsize=9)
    return fig


def matplotlib_line(style: str, colour: str):
    from matplotlib.lines import Line2D

    return Line2D([], [], color=colour, lw=1, ls=style)


# The headline effects: the condition effects and the rating slope the report's verdicts
# compare (steps.condition_sentences, steps.rating_sentences), in the order they are told.
HEADLINE_EFFECTS = [(1, "m_cond", "last minus first and full"), (1, "m_cond", "full minus first"),
                    (1, "m_nameGender", "rating slope (per point)"),
                    (3, "m_noOther", "last minus first and full"),
                    (3, "m_noOther", "full minus first"),
                    (3, "m_noOther", "rating slope (per point)")]
EFFECT_SIDES = {"People, like for like": "people", "Model": "model"}
EFFECT_LABELS = {"last minus first and full": "Last name minus first and full",
                 "full minus first": "Full name minus first name",
                 "rating slope (per point)": "Gender rating, per point"}
EFFECTS_SCALE = "population-averaged"
EFFECTS_XLABEL = "population-averaged log-odds of she (among he and she)"


def effects_frame(effects: pd.DataFrame) -> pd.DataFrame:
    """The headline effects of the study's `effects` table (comparison.effects: experiment,
    model, effect, source, scale, estimate, ci_low, ci_high) as the effects figure reads
    them: people's like-for-like GLMM (he/she responses) and the model's LMM, each
    population-averaged, one panel per experiment. An effect missing from `effects` (no
    model scored, a fit that failed) is left out."""
    rows = []
    for exp, mirror, effect in HEADLINE_EFFECTS:
        sel = effects[(effects["experiment"] == exp) & (effects["model"] == mirror)
                      & (effects["effect"] == effect) & (effects["scale"] == EFFECTS_SCALE)
                      & effects["source"].isin(list(EFFECT_SIDES))]
        for r in sel.itertuples():
            rows.append({"panel": f"Exp {exp}", "label": EFFECT_LABELS[effect],
                         "side": EFFECT_SIDES[r.source], "estimate": r.estimate,
                         "ci_lo": r.ci_low, "ci_hi": r.ci_high})
    return pd.DataFrame(rows, columns=["panel", "label", "side", "estimate", "ci_lo", "ci_hi"])


def write_effects_figure(report, effects: pd.DataFrame, model: str | None) -> None:
    """figures/name_gender_effects.png (and .pdf): the headline effects, people beside
    `model` (None: no model was scored, people's effects alone, and the title says so)."""
    from gbstats.report.effects_figure import TWO_COLUMN, report_effects_figure

    frame = effects_frame(effects)
    if frame.empty:
        return
    shown = f"people and {model}" if model else "people (no model scored)"
    beside = ("people beside the model" if model
              else "people's alone (no language model was scored in this run)")
    report_effects_figure(
        report, "name_gender_effects", frame,
        f"The headline effects, {beside}: a last, full or first name and the first name's "
        "gender rating, as population-averaged log-odds of she among he and she responses, "
        "with 95% intervals (people: the mixed model of their he and she responses"
        + ("; the model: the mixed model of its log-ratio of P(she) to P(he))" if model
           else ")"),
        simulated=False, width=TWO_COLUMN, xlabel=EFFECTS_XLABEL,
        title=f"Which name was shown, and the first name's gender rating: {shown}",
        side_labels={"people": "people", "model": "the model"})
