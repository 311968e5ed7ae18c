"""How the singular-*they* tables read in a paper: words for columns, values and model terms,
and the views that reshape a table for print (results.json keeps every table as computed;
docs/tables.md)."""
from __future__ import annotations

import pandas as pd

from gbstats.alignment.group_comparison import short_verdict
from gbstats.report.study_report import ENGINE_WORDS as ENGINES
from studies.singular_they.analysis import (GROUPINGS, ITEM_SETS, MEASURES, NB_ORDER,
                                            STAGE_ORDER)
from studies.singular_they.stimuli import (ANTECEDENT_LABELS, CAMILLIERE_CONDITIONS,
                                           camilliere_item_id)

GROUPING_WORDS = {"stage": "Linguistic stage", "nb_group": "Nonbinary acceptance"}
MEASURE_WORDS = {"surprisal": "surprisal (bits)", "probability": "probability"}
SCORE_WORDS = {"nb_acceptance": "Nonbinary acceptance", "familiarity": "Familiarity"}
LABELS = {"label": "Antecedent type", "n": "Stimuli", "group": "Group",
          "n_participants": "Participants", "n_obs": "Ratings", "comparison": "Comparison",
          "reliability": "Reliability", "noise_ceiling": "Noise ceiling",
          "r_corrected": "Corrected r", "statistic": "z", "p_holm": "p (Holm)",
          "backend": "Engine", "p_equivalence_holm": "p equivalence (Holm)",
          "verdict": "Conclusion"}

# ---------------------------------------------------------------------------
# the model-side regressions: terms and groups in words

# Watson et al.'s coding: +1/-1 in the data (+1 = gendered, +1 = close)
PAPER_TERMS = {"gendered": "Gendered (+1) vs non-gendered (−1)",
               "close": "Close (+1) vs distant (−1)"}
# gbstats' indicator view: 0/1 in the data
INDICATOR_TERMS = {"gendered": "Gendered (1) vs non-gendered (0)",
                   "close": "Close (1) vs distant (0)"}
# the item number: `itm` in Watson et al.'s regression, `frame` in gbstats' (the item
# shared by the 8 antecedent conditions of one published item or one gbstats frame)
ITEM_GROUPS = {"itm": "Items", "frame": "Items"}
# the human data's model: sum-coded factors, +1 = close, +1 = gendered
HUMAN_TERMS = {"close1": "Close (+1) vs distant (−1)",
               "gendered1": "Gendered (+1) vs non-gendered (−1)",
               "close1:gendered1": "Close × gendered"}
HUMAN_VARIABLES = {"close": "Closeness", "gendered": "Gender marking"}
HUMAN_LEVELS = {"gendered": {"nongendered": "non-gendered"}}
HUMAN_GROUPS = {"participant": "Participants", "item": "Items"}
# the alignment mixed model (gbstats.alignment.mixed_model's column names)
ALIGNMENT_VARIABLES = {"score_z": "Surprisal (z)"}
ALIGNMENT_GROUPS = {"participant_id": "Participants", "item_id": "Items",
                    "item_group": "Items × groups"}


def engine_models(fits: dict) -> dict:
    """{engine in words: FitResult} for one formula's fits."""
    return {ENGINES.get(label, label): fit for label, fit in fits.items()}


# ---------------------------------------------------------------------------
# stimuli

def stimuli_view(summary: pd.DataFrame) -> pd.DataFrame:
    """stimuli_summary for print: the antecedent type in words and its count."""
    return summary[["label", "n"]]


def typo_excerpts(original: str, corrected: str, context: int = 2) -> tuple[str, str]:
    """(published, corrected) shortened to the words around the typo: the text the two share
    before and after it keeps the word the typo touches and `context` more, and "…" marks
    what was cut."""
    start = 0
    while start < min(len(original), len(corrected)) and original[start] == corrected[start]:
        start += 1
    end = 0
    while (end < min(len(original), len(corrected)) - start
           and original[-1 - end] == corrected[-1 - end]):
        end += 1

    def cut(text: str) -> str:
        head, middle, tail = text[:start], text[start:len(text) - end], text[len(text) - end:]
        words = head.split(" ")
        if len(words) > context + 1:
            head = "…" + " ".join(words[-context - 1:])
        words = tail.split(" ")
        if len(words) > context + 1:
            tail = " ".join(words[:context + 1]) + "…"
        return head + middle + tail

    return cut(original), cut(corrected)


def typos_view(corrections: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """(the typo table for print, notes): the antecedent type in words (a heading: `groups=
    "type"`), the item and the words around each typo as published and as corrected; why each
    is a typo goes to the notes, under the stimulus id (`<cond>-<itm>`, the key of the
    authors' rating file)."""
    excerpts = [typo_excerpts(o, c) for o, c in zip(corrections["original"],
                                                       corrections["corrected"])]
    types = [CAMILLIERE_CONDITIONS.get(c, c) for c in corrections["cond"]]
    order = {t: k for k, t in enumerate(ANTECEDENT_LABELS)}
    view = pd.DataFrame({
        "type": [ANTECEDENT_LABELS.get(t, t) for t in types],
        "itm": corrections["itm"].astype(int).to_numpy(),
        "published": [p for p, _ in excerpts], "corrected": [c for _, c in excerpts],
        "_order": [order.get(t, len(order)) for t in types]})
    view = view.sort_values(["_order", "itm"], kind="stable").drop(columns="_order")
    why = "; ".join(f"{camilliere_item_id(c, i)}: {r}" for c, i, r in
                    zip(corrections["cond"], corrections["itm"], corrections["reason"]))
    return (view.reset_index(drop=True),
            [f"Why each is a typo (stimulus id: reason): {why}."] if len(view) else [])


TYPO_LABELS = {"itm": "Item", "type": "Antecedent type", "published": "Published text",
               "corrected": "Corrected text"}


def surprisal_view(by_type: pd.DataFrame) -> pd.DataFrame:
    """surprisal_by_type for print: antecedent type in words, items, mean and interval."""
    return by_type[["label", "n", "mean", "ci_low", "ci_high"]]


SURPRISAL_LABELS = {"label": "Antecedent type", "n": "Items", "mean": "Mean (bits)"}


# ---------------------------------------------------------------------------
# the published anchor

def published_estimates(published: dict) -> pd.DataFrame:
    """Watson et al.'s {term: (estimate, SE, df, t, p)} as the model table's `published=`."""
    return pd.DataFrame({"term": list(published),
                         "estimate": [v[0] for v in published.values()],
                         "se": [v[1] for v in published.values()]})


# ---------------------------------------------------------------------------
# RQ2: the alignment tables

def _heading(grouping: str, item_set: str, n_items=None, measure: str | None = None) -> str:
    text = f"{GROUPING_WORDS.get(grouping, grouping)}, {item_set}"
    if n_items is not None:
        text += f" ({int(n_items)} items)"
    return text + (f"; {MEASURE_WORDS.get(measure, measure)}" if measure else "")


# the design's order of groupings, item sets, measures and groups (analysis.py)
DESIGN_ORDER = {"grouping": list(GROUPINGS), "item_set": list(ITEM_SETS),
                "measure": list(MEASURES), "group": STAGE_ORDER + NB_ORDER}


def in_design_order(table: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """`table` sorted by `columns` in the design's order (DESIGN_ORDER; a value it does not
    know goes last), ties kept as they were."""
    def rank(column: pd.Series) -> pd.Series:
        order = {v: k for k, v in enumerate(DESIGN_ORDER[column.name])}
        return column.map(lambda v: order.get(v, len(order)))

    return table.sort_values(columns, key=rank, kind="stable")


def _items_per_set(table: pd.DataFrame, n_items: pd.DataFrame | None) -> list:
    """The number of items of each row's item set, from `n_items` (a table with grouping,
    item_set and n_items) or the row's own n_items."""
    if "n_items" in table:
        return list(table["n_items"])
    if n_items is None:
        return [None] * len(table)
    counts = n_items.drop_duplicates(["item_set"]).set_index("item_set")["n_items"]
    return [counts.get(s) for s in table["item_set"]]


def reliability_view(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """group_reliability for print: one heading per grouping and item set, the groups in
    their order, a dagger on a group smaller than the calibrated designs; notes for the
    dagger and for bootstrap replicates without a corrected r."""
    from gbstats.alignment.reliability import (MIN_CALIBRATED_ITEMS, MIN_CALIBRATED_PEOPLE,
                                               SPARSE_CALIBRATED_ITEMS,
                                               SPARSE_CALIBRATED_RATERS)

    rows = in_design_order(table, ["grouping", "item_set", "group"])
    below = rows["below_calibrated_design"].astype(bool)
    view = pd.DataFrame({
        "heading": [_heading(g, s, n) for g, s, n in
                    zip(rows["grouping"], rows["item_set"], rows["n_items"])],
        "group": [g + ("†" if b else "") for g, b in zip(rows["group"], below)],
        **{c: rows[c].to_numpy() for c in ("n_participants", "reliability", "noise_ceiling",
                                           "r", "r_corrected", "se", "ci_low", "ci_high")}})
    notes = []
    if below.any():
        notes.append(f"† Smaller than the designs whose coverage the calibration benchmark "
                     f"shows ({MIN_CALIBRATED_ITEMS} items × {MIN_CALIBRATED_PEOPLE} raters "
                     f"per item, or {SPARSE_CALIBRATED_ITEMS} items × "
                     f"{SPARSE_CALIBRATED_RATERS:g} raters per item): its interval is not "
                     "calibrated.")
    undefined = rows[rows["n_boot_undefined"] > 0]
    if len(undefined):
        which = "; ".join(f"{int(r.n_boot_undefined)} for {r.group} "
                          f"({_heading(r.grouping, r.item_set).lower()})"
                          for r in undefined.itertuples())
        notes.append("Bootstrap replicates without a corrected r (reliability not positive), "
                     f"left out of its interval: {which}.")
    return view.reset_index(drop=True), notes


RELIABILITY_LABELS = {**LABELS, "r": "r", "ci": "95% CI (corrected r)"}


def comparison_words(a, b) -> list[str]:
    return [f"{x} vs {y}" for x, y in zip(a, b)]


def corrected_comparisons_view(table: pd.DataFrame, n_items: pd.DataFrame) -> pd.DataFrame:
    """corrected_comparisons for print: one heading per grouping and item set, the pair in
    one column; the corrected r of each group is in the reliability table."""
    return pd.DataFrame({
        "heading": [_heading(g, s, n) for g, s, n in
                    zip(table["grouping"], table["item_set"], _items_per_set(table, n_items))],
        "comparison": comparison_words(table["group_a"], table["group_b"]),
        **{c: table[c].to_numpy() for c in ("difference", "ci_low", "ci_high",
                                            "p_holm", "p_equivalence_holm")},
        "verdict": [short_verdict(v) for v in table["verdict"]]})


def profile_agreement_view(table: pd.DataFrame, n_items: pd.DataFrame) -> pd.DataFrame:
    """group_profile_agreement for print: one heading per grouping and item set, the pair in
    one column, the two groups' profile agreement and the ceiling it sets."""
    return pd.DataFrame({
        "heading": [_heading(g, s, n) for g, s, n in
                    zip(table["grouping"], table["item_set"], _items_per_set(table, n_items))],
        "comparison": comparison_words(table["group_a"], table["group_b"]),
        **{c: table[c].to_numpy() for c in ("r_profiles", "r_profiles_corrected", "ci_low",
                                            "ci_high", "max_alignment_difference",
                                            "max_alignment_difference_upper")}})


PROFILE_LABELS = {**LABELS, "r_profiles": "r of profiles",
                  "r_profiles_corrected": "Corrected r",
                  "max_alignment_difference": "Largest difference",
                  "max_alignment_difference_upper": "At lower end"}


def size_matched_view(table: pd.DataFrame, n_items: pd.DataFrame) -> pd.DataFrame:
    """size_matched_comparisons for print: one heading per grouping and item set (with the
    matched size), the pair in one column and each group's mean r at that size."""
    return pd.DataFrame({
        "heading": [f"{_heading(g, s, n)}; {int(m)} people per group" for g, s, n, m in
                    zip(table["grouping"], table["item_set"], _items_per_set(table, n_items),
                        table["matched_size"])],
        "comparison": comparison_words(table["group_a"], table["group_b"]),
        **{c: table[c].to_numpy() for c in ("r_a", "r_b", "difference", "ci_low", "ci_high",
                                            "p_value", "p_holm")}})


PAIR_LABELS = {**LABELS, "r_a": "r (first)", "r_b": "r (second)", "difference": "Difference"}


def correlations_view(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """group_correlations for print: one heading per grouping, item set and measure, the
    groups in their order; a note when an item had no rating in some group."""
    rows = in_design_order(table, ["grouping", "item_set", "measure", "group"])
    view = pd.DataFrame({
        "heading": [_heading(g, s, n, m) for g, s, n, m in
                    zip(rows["grouping"], rows["item_set"], rows["n_items"], rows["measure"])],
        **{c: rows[c].to_numpy() for c in ("group", "n_participants", "n_obs", "r", "ci_low",
                                           "ci_high", "p_value")}})
    unrated = rows[rows["n_items_unrated"] > 0]
    notes = [("Items without a rating in a group (left out of its r): " + "; ".join(
        f"{int(r.n_items_unrated)} for {r.group} ({_heading(r.grouping, r.item_set).lower()})"
        for r in unrated.itertuples()) + ".") if len(unrated) else
        "Every item was rated in every group."]
    return view.reset_index(drop=True), notes


def steiger_view(table: pd.DataFrame) -> pd.DataFrame:
    """group_correlation_comparisons for print: one heading per grouping, item set and
    measure; the two groups compared (the more strongly correlated first) in one column."""
    return pd.DataFrame({
        "heading": [_heading(g, s, n, m) for g, s, n, m in
                    zip(table["grouping"], table["item_set"], table["n"], table["measure"])],
        "comparison": comparison_words(table["group_best"], table["group_next"]),
        **{c: table[c].to_numpy() for c in ("difference", "ci_low", "ci_high", "statistic",
                                            "p_value", "p_holm")}})


STEIGER_LABELS = {**LABELS, "difference": "Difference", "statistic": "Z"}


def mann_whitney_view(table: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """mann_whitney for print: one heading per pair of stages, a row per survey score with
    each stage's N; people without a score go to the notes."""
    view = pd.DataFrame({
        "comparison": [f"{a[:1].upper()}{a[1:]}s vs {b}s" for a, b in
                       zip(table["label_a"], table["label_b"])],
        "score": table["score"].map(SCORE_WORDS).fillna(table["score"]).to_numpy(),
        **{c: table[c].to_numpy() for c in ("n_a", "n_b", "statistic", "estimate", "ci_low",
                                            "ci_high", "p_value", "p_holm")}})
    view = view.sort_values("comparison", kind="stable",
                            key=lambda c: c.map({v: k for k, v in enumerate(dict.fromkeys(c))}))
    missing = [f"{int(n)} {stage}{'s' if n != 1 else ''} ({SCORE_WORDS.get(s, s).lower()})"
               for s, stage, n in zip(list(table["score"]) * 2,
                                      list(table["label_a"]) + list(table["label_b"]),
                                      list(table["n_nan_a"]) + list(table["n_nan_b"])) if n > 0]
    missing = list(dict.fromkeys(missing))
    notes = [f"People without a score, left out of that test: {', '.join(missing)}."] \
        if missing else []
    return view.reset_index(drop=True), notes


MANN_WHITNEY_LABELS = {**LABELS, "score": "Score", "n_a": "N (first)", "n_b": "N (second)",
                       "statistic": "U",
                       "estimate": "r", "ci": "95% CI"}


def alignment_variables(grouping: str) -> dict:
    """The alignment model's variables in words, the group named by its grouping ("Stage:
    innovator vs non-innovator")."""
    return {**ALIGNMENT_VARIABLES, "group_level": GROUPING_WORDS.get(grouping, grouping)}


def p_equals(p: float) -> str:
    """"p = .094" or "p < .001", APA style."""
    from gbstats.report.formatting import format_p_value

    text = format_p_value(p)
    return f"p {text}" if text.startswith("<") else f"p = {text}"


def alignment_tests_note(table: pd.DataFrame, grouping: str) -> str:
    """The alignment differences' p-values of one grouping's fits, with Holm within the
    grouping (and engine), as a sentence for the model table's notes."""
    from gbstats.alignment.mixed_model import alignment_terms

    tests = table[alignment_terms(table) & table["p_value"].notna()
                  & (table["grouping"] == grouping)]
    if tests.empty:
        return ""
    parts = []
    engines = tests.groupby("backend", sort=False)
    for backend, rows in engines:
        cells = ", ".join(f"{term.split('[', 1)[1].rstrip(']')} {p_equals(p)} "
                          f"(Holm {p_equals(h)})"
                          for term, p, h in zip(rows["term"], rows["p_value"], rows["p_holm"]))
        parts.append(f"{ENGINES.get(backend, backend)}: {cells}" if len(engines) > 1 else cells)
    return ("Alignment differences (the Surprisal (z) × group terms), two-sided p with Holm "
            "within the grouping: " + "; ".join(parts) + ".")


# ---------------------------------------------------------------------------
# the human data's own model

def main_effects_view(effects: pd.DataFrame) -> pd.DataFrame:
    """human_main_effects for print: the difference of marginal means in words."""
    words = {"nongendered": "non-gendered"}
    effect = [" − ".join(words.get(level.strip(), level.strip()) for level in d.split(" - "))
              for d in effects["difference"]]
    return pd.DataFrame({"effect": [e[:1].upper() + e[1:] for e in effect],
                         **{c: effects[c].to_numpy() for c in ("backend", "estimate", "se",
                                                               "ci_low", "ci_high", "p_value")}})


EFFECT_WORDS = {"(Intercept)": "Intercept", "close": "Close (+1) vs distant (−1)",
                "gendered": "Gendered (+1) vs non-gendered (−1)",
                "close:gendered": "Close × gendered"}
SIDE_WORDS = {"model surprisal": "Model: surprisal (nats)",
              "human rating": "People: rating (points)"}


def side_by_side_view(table: pd.DataFrame) -> pd.DataFrame:
    """model_vs_human_effects for print: one heading per effect (in the order of the
    regressions), the side in words with its unit, then engine, estimate, interval, p."""
    order = {e: k for k, e in enumerate(EFFECT_WORDS)}
    # a paper compares the effects, not the intercepts (a surprisal and a rating have no
    # common zero), and prints one engine's fit per side (lme4 where R is installed; the
    # engines agree, and the appendix of tables.tex compares them) (issue 43)
    effects = table[~table["effect"].astype(str).str.strip("()").str.lower().eq("intercept")]
    first = effects.groupby("side", sort=False)["backend"].transform("first")
    effects = effects[effects["backend"] == first]
    rows = effects.assign(_order=effects["effect"].map(order).fillna(len(order))) \
        .sort_values(["_order", "side"], kind="stable", ascending=[True, False])
    return pd.DataFrame({
        "effect": rows["effect"].map(EFFECT_WORDS).fillna(rows["effect"]).to_numpy(),
        "side": rows["side"].map(SIDE_WORDS).fillna(rows["side"]).to_numpy(),
        **{c: rows[c].to_numpy() for c in ("backend", "estimate", "ci_low", "ci_high",
                                           "p_value")}})


SIDE_LABELS = {**LABELS, "side": "Side"}


# ---------------------------------------------------------------------------
# the SIMULATED panel

SOURCE_WORDS = {"published (Watson et al. 2023)": "published",
                "calibrated to a published mean": "calibrated",
                "illustrative (chosen, not estimated)": "illustrative",
                "this run's --seed": "run setting"}
STAGE_HEADINGS = {"all": "Every stage", "each": "Every stage",
                  "non-innovator": "Non-innovators", "innovator": "Innovators",
                  "super-innovator": "Super-innovators"}


def parameters_view(rows: pd.DataFrame) -> pd.DataFrame:
    """panel.parameter_rows for print: one heading per stage (the parameters of every stage
    first), the value, the mean it implies, the published mean and the kind in one word."""
    rank = {"all": 0, "each": 0, **{s: k + 1 for k, s in enumerate(STAGE_ORDER)}}
    rows = rows.sort_values("stage", key=lambda c: c.map(rank), kind="stable")
    return pd.DataFrame({
        "stage": rows["stage"].map(STAGE_HEADINGS).to_numpy(),
        "parameter": rows["parameter"].to_numpy(),
        "value": rows["value"].replace({"next table": "see the next table"}).to_numpy(),
        "simulated_mean": rows["simulated_mean"].to_numpy(),
        "published_mean": rows["published_mean"].to_numpy(),
        "source": rows["source"].map(SOURCE_WORDS).fillna(rows["source"]).to_numpy()})


PARAMETER_LABELS = {"parameter": "Parameter", "value": "Value", "simulated_mean": "Mean",
                    "published_mean": "Published mean", "source": "Kind"}
PARAMETER_NOTES = ["Kind: published, a value Watson et al. (2023) report; calibrated, set so "
                   "that the stage's expected mean is the published one; illustrative, chosen, "
                   "not estimated; run setting, the run's seed. Mean: the mean the "
                   "familiarity probabilities imply."]


def survey_tests_view(over: pd.DataFrame) -> pd.DataFrame:
    """panel_survey_tests for print: one heading per survey score, the stages compared in
    one column."""
    return pd.DataFrame({
        "score": over["score"].map(lambda s: s[:1].upper() + s[1:]).to_numpy(),
        "comparison": [f"{a}s vs {b}s" for a, b in zip(over["earlier_stage"],
                                                         over["later_stage"])],
        **{c: over[c].to_numpy() for c in ("p_this_seed", "p_median_over_seeds",
                                           "share_p_below_05", "p_published")}})


SURVEY_TESTS_LABELS = {"comparison": "Earlier vs later stage", "p_this_seed": "p, this seed",
                       "p_median_over_seeds": "Median p over seeds",
                       "share_p_below_05": "Share of seeds with p < .05",
                       "p_published": "p, Watson et al."}
