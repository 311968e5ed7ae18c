"""A model ranking (`gbstats.alignment.ranking.ModelRanking`) in a study's report: the
answer in words, the table a paper prints, the two figures, and results.json's
`model_ranking` and `model_differences` tables.

    write_ranking(report, result, statistic="correlation with people's item means")
"""
from __future__ import annotations

import pandas as pd

RANKING_LABELS = {"model": "Model", "parameters": "Parameters", "estimate": "Estimate",
                  "ci": "Simultaneous 95% CI", "share_of_ceiling": "Share of ceiling",
                  "rank_set_marginal": "Rank (set)", "rank_set_simultaneous": "Rank set (all)",
                  "in_best_set": "May be best"}


def _rank_set(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}–{hi}"


def ranking_view(result) -> pd.DataFrame:
    """One row per model, best first: estimate with its simultaneous interval, its share of
    the people's ceiling, its rank, its marginal and simultaneous rank sets, and whether it
    may be the best (MRSW's tau-best set, tau = 1)."""
    table = result.ranking.sort_values("estimate", ascending=False)
    counts = result.settings.get("parameters") or {}
    view = pd.DataFrame({
        "model": [str(m) for m in table.index],
        "parameters": [parameters_in_words(counts.get(str(m))) for m in table.index],
        "estimate": table["estimate"].to_numpy(),
        "ci_low": table["ci_low"].to_numpy(), "ci_high": table["ci_high"].to_numpy(),
        "share_of_ceiling": table["share_of_ceiling"].to_numpy(),
        # the rank and its marginal set in one column: the table stays within 8 columns
        "rank_set_marginal": [f"{int(r)} ({_rank_set(a, b)})" for r, a, b in
                              zip(table["rank"], table["rank_lo_marginal"],
                                  table["rank_hi_marginal"])],
        "rank_set_simultaneous": [_rank_set(a, b) for a, b in
                                  zip(table["rank_lo_simultaneous"],
                                      table["rank_hi_simultaneous"])],
        "in_best_set": ["yes" if b else "no" for b in table["in_best_set"]]})
    return view if counts else view.drop(columns="parameters")


def parameters_in_words(count) -> str:
    """135M, 1.7B, 3.2M: a model's size as papers print it; an en dash where not known."""
    if count is None:
        return "–"
    count = int(count)
    if count >= 10**9:
        return f"{count / 10**9:.1f}B"
    if count >= 10**8:
        return f"{count / 10**6:.0f}M"
    if count >= 10**6:
        return f"{count / 10**6:.1f}M"
    return f"{count / 10**3:.0f}K"


def ranking_in_words(result, near: float = 0.10) -> str:
    """The answer a reader wants, from the rank sets and the ceiling: which models cannot be
    ranked against each other, which may be the best, and which come within `near` of the
    people's ceiling."""
    ranking = result.ranking
    best = [str(m) for m in ranking.index[ranking["in_best_set"]]]
    groups: dict[tuple[int, int], list[str]] = {}
    for model, row in ranking.iterrows():
        key = (int(row["rank_lo_marginal"]), int(row["rank_hi_marginal"]))
        groups.setdefault(key, []).append(str(model))
    sentences = []
    for (lo, hi), models in sorted(groups.items()):
        if lo != hi and len(models) > 1:
            listed = (f"{', '.join(models[:-1])} and {models[-1]}" if len(models) > 2
                      else " and ".join(models))
            sentences.append(f"{listed} cannot be ranked against each other "
                             f"(rank sets [{lo}, {hi}] each)")
    if len(best) == 1:
        sentences.append(f"{best[0]} is the best of these models at 95% confidence")
    else:
        sentences.append(f"the best model is one of {', '.join(best)} (95% confidence)")
    ceiling = result.ceiling["estimate"]
    close = [str(m) for m, row in ranking.iterrows() if row["ci_high"] >= ceiling - near]
    sentences.append(
        f"{'none' if not close else ', '.join(close)} "
        f"{'comes' if len(close) == 1 else 'come'} within {near:.2f} of the people's ceiling "
        f"({ceiling:.2f}) at the upper end of {'its' if len(close) == 1 else 'their'} "
        f"interval")
    # model names keep their case: the sentence opens with words, not with a name
    return "Of these models: " + "; ".join(sentences) + "."


def ranking_settings_rows(result) -> pd.DataFrame:
    """The ranking's settings and ceiling as setting/value rows (results.json), every value
    as text so that one column holds numbers, words and lists alike."""
    import json

    values = {**{k: v for k, v in result.settings.items()},
              **{f"ceiling_{k}": v for k, v in result.ceiling.items()}}
    return pd.DataFrame({"setting": list(values),
                         "value": [v if isinstance(v, str) else json.dumps(v, default=str)
                                   for v in values.values()]})


def write_ranking(report, result, *, statistic: str, name: str = "model_ranking",
                  simulated: bool | None = None) -> None:
    """The ranking section of a StudyReport: words, table, figures, results.json."""
    from gbstats.report.ranking_figures import difference_heatmap, ranking_forest

    settings = result.settings
    shown_simulated = bool(simulated)
    report.section("Which model is most like people", ranking_in_words(result))
    unit = ("participants and clusters of items" if settings.get("n_clusters")
            else "participants and items")
    over = (f" over {settings['items']}" if settings.get("items") else "")
    notes = [f"Estimate: the {statistic}{over}; {settings['n_items']:,} items, "
             f"{settings['n_participants']:,} people, {len(result.ranking)} models. "
             f"Intervals are simultaneous over the models, from "
             f"one two-way bootstrap ({unit}; {settings['n_boot']:,} "
             f"replicates, seed {settings['seed']}) shared by every model.",
             "Rank sets: Mogstad, Romano, Shaikh and Wilhelm (2023), with stepdown; "
             "'Rank (set)': the model's rank by its estimate and the set that covers its "
             "own rank; 'Rank set (all)': the sets that cover every rank at once; each with "
             "95% confidence. 'May be best': the set that holds the best model.",
             f"Ceiling: the square root of the people's split-half (Spearman-Brown) "
             f"reliability of their item means, {result.ceiling['estimate']:.3f}; share of "
             f"ceiling: the estimate divided by it."]
    report.table(name, ranking_view(result), "Models ranked by their agreement with people",
                 labels=RANKING_LABELS, notes=notes, simulated=simulated,
                 record=pd.DataFrame(result.records()["model_ranking"]),
                 kinds={"parameters": "text", "rank_set_marginal": "text",
                        "rank_set_simultaneous": "text", "in_best_set": "text"})
    report.record("model_differences", result.differences,
                  "Every pair of models: difference, SE, simultaneous interval, Holm p, TOST")
    report.record("model_ranking_settings", ranking_settings_rows(result),
                  "How the ranking was made: the statistic, the bootstrap, the ceiling, and "
                  "each model's name as given")
    report.figure(f"{name}_forest", ranking_forest(result, statistic=statistic,
                                                   simulated=shown_simulated),
                  "Models ranked against people, with simultaneous 95% intervals and the "
                  "people's ceiling", simulated=simulated)
    report.figure(f"{name}_differences", difference_heatmap(result, simulated=shown_simulated),
                  "Pairwise differences between the models", simulated=simulated)
