"""Figures: accuracy by pronoun and task (people vs model), the PSA x Biographies effect on
they, and they-fidelity against context size (with RUFF's)."""
from __future__ import annotations

import numpy as np
import pandas as pd

PRONOUNS = ("he/him", "she/her", "they/them")
PEOPLE, MODEL = "#4c72b0", "#dd8452"


def accuracy_figure(cells: pd.DataFrame):
    """One panel per experiment x task: accuracy per pronoun, people and model side by side."""
    import matplotlib.pyplot as plt

    from gbstats.report.figures import figure_style

    overall = cells[cells["cell"] == "all"]
    experiments = [e for e in ("1a", "1b", "2") if (overall["experiment"] == e).any()]
    with figure_style():
        fig, axes = plt.subplots(2, len(experiments), figsize=(3.6 * len(experiments), 6.2),
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
        fig.legend(handles[:2], labels[:2], frameon=False, loc="upper center", ncol=2)
        fig.tight_layout(rect=(0, 0, 1, 0.95))
    return fig


def psa_figure(cells: pd.DataFrame):
    """Exp 2: they accuracy in each PSA x Biographies cell, per task, people vs model."""
    import matplotlib.pyplot as plt

    from gbstats.report.figures import figure_style

    they = cells[(cells["experiment"] == "2") & (cells["pronoun"] == "they/them")
                 & (cells["cell"] != "all")]
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), sharey=True)
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
            ax.set_xticks([0, 1], ["unrelated PSA", "gendered-language PSA"])
            ax.set_ylim(0, 1)
            ax.set_title(f"they/them characters, {task}")
            ax.set_xlabel("PSA")
        axes[0].set_ylabel("accuracy (model: P(correct))")
        axes[1].legend(frameon=False, fontsize=8)
        fig.tight_layout()
    return fig


def distractor_figure(distractors: pd.DataFrame, ruff: pd.DataFrame | None):
    """They accuracy against characters in context (this study, production and memory,
    with and without filler) beside RUFF's they-fidelity against distractor sentences."""
    import matplotlib.pyplot as plt

    from gbstats.report.figures import figure_style

    they = distractors[distractors["pronoun"] == "they/them"]
    with figure_style():
        ncols = 2 if ruff is not None else 1
        fig, axes = plt.subplots(1, ncols, figsize=(4.6 * ncols, 3.8), squeeze=False)
        ax = axes[0, 0]
        for (task, filler), part in they.groupby(["task", "filler"]):
            part = part.sort_values("n_characters")
            ax.errorbar(part["n_characters"], part["accuracy"],
                        yerr=[part["accuracy"] - part["ci_low"], part["ci_high"] - part["accuracy"]],
                        marker="o" if task == "memory" else "s",
                        linestyle="-" if filler == "none" else "--", capsize=3,
                        label=f"{task}, filler: {filler}")
        ax.set_xscale("log")
        ax.set_xticks([1, 4, 12], ["1", "4", "12"])
        ax.set_ylim(0, 1)
        ax.set(title="This study (Exp 1A lists)", xlabel="characters in context",
               ylabel="they: P(correct)")
        ax.legend(frameon=False, fontsize=8)
        if ruff is not None:
            ax = axes[0, 1]
            ax.errorbar(ruff["n_distractors"], ruff["mean"], yerr=ruff["sd"].fillna(0),
                        marker="o", capsize=3, color=MODEL)
            ax.axhline(float(ruff["chance"].iloc[0]), color="grey", linestyle=":", linewidth=1)
            ax.set_ylim(0, 1)
            ax.set(title="RUFF (pronoun_fidelity)", xlabel="distractor sentences",
                   ylabel="they: accuracy (SD over seeds)")
        fig.tight_layout()
    return fig
