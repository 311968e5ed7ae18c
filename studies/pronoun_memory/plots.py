"""Figures: accuracy by pronoun and task (people vs model), the PSA x Biographies effect on
they, the model's accuracy against context size, and the headline effects (the they gap
and what closes it, people beside the model: `effects_frame`, `write_effects_figure`).

Colours are Okabe & Ito's (gbstats.report.figures.OKABE_ITO), people blue and the model
vermillion as in every study's effects figure."""
from __future__ import annotations

import numpy as np
import pandas as pd

from gbstats.report.figures import OKABE_ITO

PRONOUNS = ("he/him", "she/her", "they/them")
PEOPLE, MODEL = OKABE_ITO[0], OKABE_ITO[3]
PRONOUN_COLOURS = {"he/him": OKABE_ITO[2], "she/her": OKABE_ITO[4], "they/them": OKABE_ITO[1]}
# below this the model's they accuracy is at floor (compare.FLOOR's rule for contrasts)
FLOOR = 0.01


def accuracy_figure(cells: pd.DataFrame):
    """One panel per experiment x task: accuracy per pronoun, people and model side by side."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from gbstats.report.figures import figure_style

    overall = cells[cells["cell"] == "all"]
    experiments = [e for e in ("1a", "1b", "2") if (overall["experiment"] == e).any()]
    with figure_style():
        # one experiment: a one-column figure (3.5 in); more: a two-column one (7 in)
        width = 3.5 if len(experiments) == 1 else 7.0
        fig, axes = plt.subplots(2, len(experiments), figsize=(width, 6.2),
                                 squeeze=False, sharey=True)
        x = np.arange(len(PRONOUNS))
        for j, experiment in enumerate(experiments):
            for i, task in enumerate(("memory", "production")):
                ax = axes[i, j]
                part = overall[(overall["experiment"] == experiment) & (overall["task"] == task)]
                part = part.set_index("pronoun").loc[list(PRONOUNS)]
                for offset, side, color in ((-0.18, "people", PEOPLE), (0.18, "model", MODEL)):
                    y = part[side].to_numpy()
                    err = np.vstack([y - part[f"{side}_low"].to_numpy(),
                                     part[f"{side}_high"].to_numpy() - y])
                    ax.bar(x + offset, y, width=0.34, color=color,
                           label="people" if side == "people" else "model")
                    ax.errorbar(x + offset, y, yerr=err, fmt="none", ecolor="black", capsize=3,
                                linewidth=1)
                ax.set_xticks(x, [p.split("/")[0] for p in PRONOUNS])
                ax.set_ylim(0, 1)
                ax.axhline(1 / 3, color="grey", linestyle=":", linewidth=1)
                ax.set_title(f"Exp {experiment.upper()}, {task}")
                ax.set_xlabel("character's pronoun")
                if j == 0:
                    ax.set_ylabel("accuracy (model: P(correct))")
        handles, labels = axes[0, 0].get_legend_handles_labels()
        chance = Line2D([], [], color="grey", linestyle=":", linewidth=1)
        fig.legend(handles[:2] + [chance], labels[:2] + ["chance (1/3)"], frameon=False,
                   loc="upper center", ncol=3)
        fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def psa_figure(cells: pd.DataFrame):
    """Exp 2: they accuracy in each PSA x Biographies cell, per task, people vs model."""
    import matplotlib.pyplot as plt

    from gbstats.report.figures import figure_style

    they = cells[(cells["experiment"] == "2") & (cells["pronoun"] == "they/them")
                 & (cells["cell"] != "all")]
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.6), sharey=True)   # two-column
        for ax, task in zip(axes, ("memory", "production")):
            part = they[they["task"] == task]
            for side, color, marker in (("people", PEOPLE, "o"), ("model", MODEL, "s")):
                for bio, style in ((0, "--"), (1, "-")):
                    line = part[part["Biographies"] == bio].sort_values("PSA")
                    ax.errorbar(line["PSA"] + (0.03 if side == "model" else -0.03),
                                line[side], yerr=[line[side] - line[f"{side}_low"],
                                                  line[f"{side}_high"] - line[side]],
                                color=color, linestyle=style, marker=marker, capsize=3,
                                label=f"{side}, {'they' if bio else 'he/she'} biographies")
            ax.set_xticks([0, 1], ["unrelated\nPSA", "gendered-language\nPSA"])
            ax.set_ylim(0, 1)
            ax.set_title(f"they/them characters, {task}")
            ax.set_xlabel("PSA")
        axes[0].set_ylabel("accuracy (model: P(correct))")
        # the legend's own lines: errorbar handles do not show the dashes apart
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color=color, marker=marker, linestyle=style, lw=1.5,
                          label=f"{side}, {'they' if bio else 'he/she'} biographies")
                   for side, color, marker in (("people", PEOPLE, "o"), ("model", MODEL, "s"))
                   for bio, style in ((0, "--"), (1, "-"))]
        axes[1].legend(handles=handles, frameon=False, fontsize=8, handlelength=3)
        fig.tight_layout()
    return fig


def distractor_figure(distractors: pd.DataFrame):
    """The model's accuracy against characters in context, one panel per task, one line per
    pronoun (solid: no math text; dashed: with it), chance (1/3) dotted.

    All three pronouns are drawn, not they alone: production's they sits at about 0
    whatever the context, which a panel of they alone shows as a flat line that says
    nothing; beside he and she it reads as what it is, a floor (marked in the panel).
    RUFF's they-fidelity is not drawn here: it is another metric (a four-way choice of the
    whole task sentence) on 27 instances with an SD over 3 seeds, not an interval, so it has
    its own table (ruff_they_fidelity)."""
    from matplotlib.lines import Line2D

    from gbstats.report.figures import figure_style, new_figure

    tasks = [t for t in ("memory", "production") if (distractors["task"] == t).any()]
    fig, axes = new_figure(1, len(tasks), width=7.0, height=3.4, sharey=True, squeeze=False)
    with figure_style():
        for ax, task in zip(axes[0], tasks):
            part = distractors[distractors["task"] == task]
            ax.axhline(1 / 3, color="0.5", linestyle=":", linewidth=1)
            for pronoun in PRONOUNS:
                for filler, style in (("none", "-"), ("with math text", "--")):
                    line = part[(part["pronoun"] == pronoun)
                                & (part["filler"] == filler)].sort_values("n_characters")
                    if line.empty:
                        continue
                    ax.errorbar(line["n_characters"], line["accuracy"],
                                yerr=[line["accuracy"] - line["ci_low"],
                                      line["ci_high"] - line["accuracy"]],
                                marker="o", ms=4, linestyle=style, capsize=2, lw=1.2,
                                color=PRONOUN_COLOURS[pronoun])
            they = part[part["pronoun"] == "they/them"]["accuracy"]
            if len(they) and float(they.max()) < FLOOR:
                ax.annotate(f"they: at floor (below {FLOOR}) at every context size",
                            (0.03, 0.04), xycoords="axes fraction", fontsize=8,
                            color=PRONOUN_COLOURS["they/them"])
            ax.set_xscale("log")
            ax.set_xticks([1, 4, 12], ["1", "4", "12"])
            ax.minorticks_off()
            ax.set_ylim(0, 1)
            ax.set_title(f"{task.capitalize()} (Exp 1A's lists)", fontsize=10)
            ax.set_xlabel("characters in context")
        axes[0, 0].set_ylabel("model: probability on the correct option")
        handles = [Line2D([], [], color=PRONOUN_COLOURS[p], marker="o", label=p.split("/")[0])
                   for p in PRONOUNS]
        handles += [Line2D([], [], color="0.3", ls="-", label="no math text"),
                    Line2D([], [], color="0.3", ls="--", label="with the math text"),
                    Line2D([], [], color="0.5", ls=":", label="chance (1/3)")]
        fig.legend(handles=handles, loc="outside lower center", ncol=6, fontsize=8)
    return fig


# The headline effects: the they gap and how much the PSA and the biographies close it
# (compare.compare's contrasts over all cells), in the order the contrasts table shows them.
HEADLINE_CONTRASTS = [("they gap", "all"), ("gap closed by PSA", "all"),
                      ("gap closed by Biographies", "all")]
EXPERIMENT_WORDS = {"1a": "Exp 1A", "1b": "Exp 1B", "2": "Exp 2"}
CONTRAST_LABELS = {"they gap": "they gap", "gap closed by PSA": "gap closed by the PSA",
                   "gap closed by Biographies": "gap closed by the biographies"}
EFFECTS_XLABEL = ("log-odds of a correct answer (they gap: he and she minus they, "
                  "positive: they is worse)")


def effects_frame(contrasts: pd.DataFrame) -> pd.DataFrame:
    """The headline contrasts of compare.compare's `contrasts` table (experiment, task,
    contrast, condition, people, people_low, people_high, model, model_low, model_high) as
    the effects figure reads them: one panel per experiment, a row per task and contrast,
    people and the model. A model side at floor (`at_floor`, where the table has it) is
    left out and the row's label says so: a log-odds contrast of two probabilities near 0
    is no comparison."""
    rows = []
    rank = {key: k for k, key in enumerate(HEADLINE_CONTRASTS)}
    chosen = contrasts[[(c, w) in rank for c, w in zip(contrasts["contrast"],
                                                        contrasts["condition"])]]
    chosen = chosen.assign(_rank=[rank[(c, w)] for c, w in zip(chosen["contrast"],
                                                                 chosen["condition"])])
    for r in chosen.sort_values(["experiment", "task", "_rank"], kind="stable").itertuples():
        floor = bool(getattr(r, "at_floor", False))
        label = f"{r.task.capitalize()}: {CONTRAST_LABELS[r.contrast]}" + (
            " (model at floor: not drawn)" if floor else "")
        panel = EXPERIMENT_WORDS.get(str(r.experiment), str(r.experiment))
        rows.append({"panel": panel, "label": label, "side": "people", "estimate": r.people,
                     "ci_lo": r.people_low, "ci_hi": r.people_high})
        if not floor:
            rows.append({"panel": panel, "label": label, "side": "model", "estimate": r.model,
                         "ci_lo": r.model_low, "ci_hi": r.model_high})
    return pd.DataFrame(rows, columns=["panel", "label", "side", "estimate", "ci_lo", "ci_hi"])


def write_effects_figure(report, contrasts: pd.DataFrame, model: str, n_boot: int) -> None:
    """figures/pronoun_memory_effects.png (and .pdf): the headline effects, people beside
    `model`."""
    from gbstats.report.effects_figure import TWO_COLUMN, report_effects_figure

    frame = effects_frame(contrasts)
    if frame.empty:
        return
    report_effects_figure(
        report, "pronoun_memory_effects", frame,
        "The headline effects, people beside the model: the they gap (he and she against "
        "they) and how much the PSA and the biographies close it, in log-odds of a correct "
        "answer, per experiment and task, with 95% intervals from a two-way bootstrap over "
        f"participants and characters ({n_boot} replicates)",
        simulated=False, width=TWO_COLUMN, xlabel=EFFECTS_XLABEL,
        title=f"The they gap and what closes it: people and {model}",
        side_labels={"people": "people", "model": "the model"})
