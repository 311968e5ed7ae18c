"""WinoPron metrics as pure functions over a table of resolved sentences.

Input everywhere: one row per sentence with at least template_set, version,
template_id, pair, occupation, participant, case, pronoun_set, answer_entity
and prediction (`occupation`, `participant` or `none`).

Metrics and their chance levels (a resolver that picks either entity with
probability 1/2, independently per sentence):

- F1 of a class c (occupation or participant) = 2TP / (2TP + FP + FN), from
  `gbstats.inference.metrics.f1`; a `none` prediction is a miss (FN) for the gold class
  and a false positive for neither. `f1_macro` is the mean over the two
  classes. Chance, at expected counts, for a class with gold share pi among n
  sentences: TP = n pi/2, FP = n (1-pi)/2, FN = n pi/2, so
  F1 = n pi / (n pi + n/2) = 2 pi / (2 pi + 1); 0.5 when the classes are
  balanced (WinoPron is: each pair has one template per answer).
- accuracy: share of sentences resolved to the gold entity; chance 0.5.
- pronoun consistency: a template counts only if it is solved with all its
  pronoun sets (`gbstats.inference.metrics.group_minimum_consistency`): four on WinoPron,
  chance 0.5^4; he/she/they on the original Winogender templates, chance 0.5^3.
- disambiguation consistency: a pair (the two templates that differ only in
  the answer) counts, per pronoun set, only if both are solved; chance 0.25.

`below_chance` marks a value under its chance level; `p_below_chance` is the
exact one-sided binomial p-value of the count for proportion metrics (it
treats units as independent, which sentences sharing a template are not:
read it as a screen, not a test of a hypothesis).
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from gbstats.inference import metrics as M
from gbstats.errors import DataValidationError
from studies.winopron.sentences import (CASES, ENTITIES, PRONOUN_SETS,
                                       PRONOUN_SETS_OF_TEMPLATE_SET)

DISAMBIGUATION_CHANCE = 0.25
ACCURACY_CHANCE = 0.5
METRIC_COLUMNS = ["template_set", "version", "grouping", "level", "metric", "value", "chance",
                  "below_chance", "p_below_chance", "n", "unit", "note"]
BIAS_LABELS = ("positive", "negative", "none", "not capable")


def with_correct(resolved: pd.DataFrame) -> pd.DataFrame:
    """Add `correct` (prediction == answer_entity); a missing prediction is an error."""
    if resolved["prediction"].isna().any():
        first = resolved.loc[resolved["prediction"].isna(), "sentence_id"].iloc[0]
        raise DataValidationError("a sentence has no prediction", source="predictions",
                                  column="prediction", expected="occupation, participant or none",
                                  found=f"missing for {first!r}")
    return resolved.assign(correct=(resolved["prediction"] == resolved["answer_entity"]).astype(int))


def _undefined_notes(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, M.UndefinedMetricWarning)]


def f1_chance(gold_share: float) -> float:
    """F1 of the coin-flip resolver for a class with this gold share (module docstring)."""
    return 2 * gold_share / (2 * gold_share + 1)


def f1_scores(resolved: pd.DataFrame) -> list[dict]:
    """F1 per class, macro F1 and accuracy of one group of sentences, with chance levels.

    Returns one dict per metric (metric, value, chance, n, unit, note). Undefined
    values (a class with no gold sentences and no predictions: 0/0) are NaN, and
    `note` says why; an empty group gives NaN everywhere with note "no sentences".
    """
    n = len(resolved)
    if n == 0:
        return [{"metric": m, "value": np.nan, "chance": np.nan, "n": 0, "unit": "sentences",
                 "note": "no sentences"} for m in
                ("f1_occupation", "f1_participant", "f1_macro", "accuracy")]
    rows, per_class, chances = [], [], []
    for entity in ENTITIES:
        counts = M.confusion_counts(resolved["answer_entity"], resolved["prediction"],
                                    positive=entity)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", M.UndefinedMetricWarning)
            value = M.f1(counts["tp"], counts["fp"], counts["fn"])
        note = "; ".join(f"F1 for {entity}: {m}" for m in _undefined_notes(caught))
        share = float((resolved["answer_entity"] == entity).mean())
        chance = f1_chance(share)
        per_class.append(value)
        chances.append(chance)
        rows.append({"metric": f"f1_{entity}", "value": value, "chance": chance, "n": n,
                     "unit": "sentences", "note": note})
    undefined = [r["metric"] for r in rows if np.isnan(r["value"])]
    rows.append({"metric": "f1_macro", "value": float(np.mean(per_class)),
                 "chance": float(np.mean(chances)), "n": n, "unit": "sentences",
                 "note": (f"undefined because {', '.join(undefined)} is undefined"
                          if undefined else "")})
    correct = int((resolved["prediction"] == resolved["answer_entity"]).sum())
    rows.append({"metric": "accuracy", "value": M.accuracy(correct, n), "chance": ACCURACY_CHANCE,
                 "n": n, "unit": "sentences", "note": "", "successes": correct})
    return rows


def expected_pronoun_sets(resolved: pd.DataFrame) -> list[str]:
    """The pronoun sets every template of this table is meant to have.

    WinoPron templates come with all four sets; the original Winogender
    templates with he/she/they only (PRONOUN_SETS_OF_TEMPLATE_SET). A table
    without a template_set column, or mixing both, is held to all four.
    """
    sets = set(resolved["template_set"]) if "template_set" in resolved.columns else set()
    if len(sets) == 1:
        return list(PRONOUN_SETS_OF_TEMPLATE_SET[sets.pop()])
    return list(PRONOUN_SETS)


def pronoun_consistency(resolved: pd.DataFrame) -> dict:
    """Share of templates solved with every pronoun set of their template set.

    Chance is 0.5^k for k sets: 0.5^4 on WinoPron, 0.5^3 on the original
    Winogender templates (he/she/they).
    """
    levels = expected_pronoun_sets(resolved)
    chance = 0.5 ** len(levels)
    if resolved.empty:
        return {"metric": "pronoun_consistency", "value": np.nan, "chance": chance, "n": 0,
                "unit": "templates", "note": "no templates"}
    per_template = M.group_minimum_consistency(
        with_correct(resolved), unit="template_id", over="pronoun_set", score="correct",
        expected_levels=levels)
    solved = int((per_template["consistency"] == 1).sum())
    return {"metric": "pronoun_consistency", "value": solved / len(per_template),
            "chance": chance, "n": len(per_template), "unit": "templates",
            "note": f"solved with all of {'/'.join(levels)}", "successes": solved}


def disambiguation_consistency(resolved: pd.DataFrame, *, split_pairs: str = "error") -> dict:
    """Share of pair x pronoun-set units whose two templates are both solved (chance 0.25).

    A pair whose two templates are not both in `resolved` cannot be scored.
    That happens by design when the old Winogender templates are grouped by
    case (a pair's two templates may differ in case): `split_pairs="note"`
    then scores the complete pairs and says in `note` how many were left out;
    the default raises.
    """
    unit = "pairs x pronoun sets"
    if resolved.empty:
        return {"metric": "disambiguation_consistency", "value": np.nan,
                "chance": DISAMBIGUATION_CHANCE, "n": 0, "unit": unit, "note": "no pairs"}
    table = with_correct(resolved).assign(
        pair_pronoun=resolved["pair"] + "|" + resolved["pronoun_set"])
    note = ""
    if split_pairs == "note":
        answers = table.groupby("pair")["answer_entity"].nunique()
        split = answers.index[answers < len(ENTITIES)]
        if len(split):
            note = (f"{len(split)} pair(s) left out: their other template is in another "
                    "group (e.g. another case)")
            table = table[~table["pair"].isin(split)]
        if table.empty:
            return {"metric": "disambiguation_consistency", "value": np.nan,
                    "chance": DISAMBIGUATION_CHANCE, "n": 0, "unit": unit,
                    "note": note + "; no complete pairs"}
    per_pair = M.group_minimum_consistency(table, unit="pair_pronoun", over="answer_entity",
                                           score="correct", expected_levels=list(ENTITIES))
    solved = int((per_pair["consistency"] == 1).sum())
    return {"metric": "disambiguation_consistency", "value": solved / len(per_pair),
            "chance": DISAMBIGUATION_CHANCE, "n": len(per_pair), "unit": unit,
            "note": note, "successes": solved}


def p_below_chance(successes, n, chance) -> float:
    """Exact one-sided binomial P(X <= successes) under the chance rate; NaN without a count."""
    from gbstats.inference.hypothesis_tests import binomial_tail_p

    return binomial_tail_p(successes, n, chance, tail="lower")


def mark_chance(rows: list[dict]) -> list[dict]:
    """Add below_chance (value < chance; None when undefined) and p_below_chance."""
    out = []
    for row in rows:
        value, chance = row["value"], row["chance"]
        below = None if (pd.isna(value) or pd.isna(chance)) else bool(value < chance)
        p = p_below_chance(row.get("successes"), row["n"], chance)
        out.append({k: v for k, v in row.items() if k != "successes"}
                   | {"below_chance": below, "p_below_chance": p})
    return out


def _levels(resolved: pd.DataFrame, column: str, order) -> list:
    present = set(resolved[column])
    return [lv for lv in order if lv in present]


def subset_metrics(resolved: pd.DataFrame) -> pd.DataFrame:
    """The long metrics table for one template set and version (one subset)."""
    rows = []

    def add(grouping: str, level: str, group: pd.DataFrame, with_pronoun: bool,
            with_disambiguation: bool = True) -> None:
        found = f1_scores(group)
        if with_pronoun:
            found.append(pronoun_consistency(group))
        if with_disambiguation:
            found.append(disambiguation_consistency(
                group, split_pairs="note" if grouping == "case" else "error"))
        rows.extend({"grouping": grouping, "level": level, **r} for r in mark_chance(found))

    add("overall", "all", resolved, with_pronoun=True)
    for case in _levels(resolved, "case", CASES):
        add("case", case, resolved[resolved["case"] == case], with_pronoun=True)
    for name in _levels(resolved, "pronoun_set", PRONOUN_SETS):
        # Within one pronoun set, "solved with all four sets" is not defined.
        add("pronoun_set", name, resolved[resolved["pronoun_set"] == name], with_pronoun=False)
    for case in _levels(resolved, "case", CASES):
        for name in _levels(resolved, "pronoun_set", PRONOUN_SETS):
            cell = resolved[(resolved["case"] == case) & (resolved["pronoun_set"] == name)]
            add("case_pronoun", f"{case}|{name}", cell, with_pronoun=False,
                with_disambiguation=False)
    return pd.DataFrame(rows)


def metrics_table(resolved: pd.DataFrame) -> pd.DataFrame:
    """Every metric for every subset (new/old templates x double/single-entity sentences)."""
    parts = []
    for (template_set, version), subset in resolved.groupby(["template_set", "version"],
                                                            sort=False):
        parts.append(subset_metrics(subset).assign(template_set=template_set, version=version))
    if not parts:
        return pd.DataFrame(columns=METRIC_COLUMNS)
    return pd.concat(parts, ignore_index=True)[METRIC_COLUMNS]


def template_counts(sentences: pd.DataFrame) -> pd.DataFrame:
    """Templates, pairs and sentences by subset, case and pronoun set."""
    grouped = sentences.groupby(["template_set", "version", "case", "pronoun_set"], sort=False)
    out = grouped.agg(n_templates=("template_id", "nunique"), n_pairs=("pair", "nunique"),
                      n_sentences=("sentence_id", "size"),
                      n_they_agreement_changed=("they_agreement_changed", "sum")).reset_index()
    out["case"] = pd.Categorical(out["case"], CASES)
    out["pronoun_set"] = pd.Categorical(out["pronoun_set"], list(PRONOUN_SETS))
    out = out.sort_values(["template_set", "version", "case", "pronoun_set"])
    out["case"] = out["case"].astype(str)
    out["pronoun_set"] = out["pronoun_set"].astype(str)
    return out.reset_index(drop=True)


def _require_pairs(resolved: pd.DataFrame) -> None:
    sizes = resolved.groupby(["pair", "pronoun_set"])["answer_entity"].agg(
        lambda s: tuple(sorted(s)))
    bad = sizes[sizes != tuple(sorted(ENTITIES))]
    if len(bad):
        (pair, pronoun), found = bad.index[0], bad.iloc[0]
        raise DataValidationError(
            f"{len(bad)} pair x pronoun-set cell(s) without exactly one template per answer",
            source="resolved sentences", column="pair",
            expected="one occupation-answer and one participant-answer template per pair",
            found=f"pair {pair!r} with {pronoun}: answers {list(found)}")


def pronominal_bias(resolved: pd.DataFrame) -> pd.DataFrame:
    """The paper's §5 method, per pair (occupation, participant, case) and pronoun set.

    A pair is capable when the resolver solves both of its templates with
    some pronoun set. For a capable pair and pronoun p: both templates
    resolved to the occupation = positive bias of p toward the occupation;
    both to the participant = negative; otherwise none (no evidence). A pair
    that is not capable gives no evidence for any pronoun ("not capable").
    """
    _require_pairs(resolved)
    table = with_correct(resolved)
    cells = table.groupby(["pair", "pronoun_set"]).agg(
        occupation=("occupation", "first"), participant=("participant", "first"),
        case=("case", "first"), solved=("correct", "min"),
        to_occupation=("prediction", lambda s: bool((s == "occupation").all())),
        to_participant=("prediction", lambda s: bool((s == "participant").all()))).reset_index()
    capable = cells.groupby("pair")["solved"].max().astype(bool)
    cells["capable"] = cells["pair"].map(capable)
    cells["bias"] = np.select(
        [~cells["capable"], cells["to_occupation"], cells["to_participant"]],
        ["not capable", "positive", "negative"], default="none")
    return cells[["pair", "occupation", "participant", "case", "pronoun_set", "capable",
                  "bias"]]


def bias_by_pronoun_case(bias: pd.DataFrame) -> pd.DataFrame:
    """Counts and lists of positively and negatively biased occupations per pronoun and case."""
    rows = []
    for name in _levels(bias, "pronoun_set", PRONOUN_SETS):
        for case in _levels(bias, "case", CASES):
            cell = bias[(bias["pronoun_set"] == name) & (bias["case"] == case)]
            positive = sorted(cell.loc[cell["bias"] == "positive", "occupation"])
            negative = sorted(cell.loc[cell["bias"] == "negative", "occupation"])
            rows.append({"pronoun_set": name, "case": case, "n_pairs": len(cell),
                         "n_capable": int(cell["capable"].sum()),
                         "n_positive": len(positive), "n_negative": len(negative),
                         "positive_occupations": ", ".join(positive),
                         "negative_occupations": ", ".join(negative)})
    return pd.DataFrame(rows)


def agreement_across_cases(labels) -> str:
    """Do the biases of one occupation and pronoun agree across cases?

    Only positive/negative are evidence. Both signs: "disagree"; one sign in
    two or more cases: "agree"; evidence in one case only: "one case only";
    none: "no evidence".
    """
    evidence = [lb for lb in labels if lb in ("positive", "negative")]
    if not evidence:
        return "no evidence"
    if len(set(evidence)) > 1:
        return "disagree"
    return "agree" if len(evidence) >= 2 else "one case only"


def bias_agreement(bias: pd.DataFrame) -> pd.DataFrame:
    """One row per occupation x pronoun set: its bias in each case and whether they agree."""
    wide = bias.pivot_table(index=["occupation", "participant", "pronoun_set"], columns="case",
                            values="bias", aggfunc="first").reset_index()
    cases = [c for c in CASES if c in wide.columns]
    wide["agreement"] = [agreement_across_cases(row) for row in wide[cases].itertuples(index=False)]
    wide["pronoun_set"] = pd.Categorical(wide["pronoun_set"], list(PRONOUN_SETS))
    wide = wide.sort_values(["pronoun_set", "occupation"])
    wide["pronoun_set"] = wide["pronoun_set"].astype(str)
    wide.columns.name = None
    return wide[["pronoun_set", "occupation", "participant", *cases, "agreement"]].reset_index(
        drop=True)


def agreement_summary(agreement: pd.DataFrame) -> pd.DataFrame:
    """Per pronoun set: how many occupations agree, disagree, ... across cases."""
    kinds = ["agree", "disagree", "one case only", "no evidence"]
    counts = pd.crosstab(agreement["pronoun_set"], agreement["agreement"]).reindex(
        index=_levels(agreement, "pronoun_set", PRONOUN_SETS), columns=kinds, fill_value=0)
    counts.columns = [f"n_{k.replace(' ', '_')}" for k in kinds]
    return counts.reset_index()


def below_chance_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of a metrics table whose value is under chance."""
    return table[table["below_chance"].fillna(False).astype(bool)]


def f1_by_case_and_pronoun(table: pd.DataFrame, template_set: str = "new",
                           version: str = "double") -> pd.DataFrame:
    """Macro F1 of one subset as a case x pronoun-set grid (rows: cases)."""
    rows = table[(table["template_set"] == template_set) & (table["version"] == version)
                 & (table["metric"] == "f1_macro") & (table["grouping"] == "case_pronoun")]
    split = rows["level"].str.split("|", expand=True)
    grid = pd.DataFrame({"case": split[0], "pronoun_set": split[1], "value": rows["value"]})
    return grid.pivot(index="case", columns="pronoun_set", values="value").reindex(
        index=[c for c in CASES if c in set(grid["case"])],
        columns=[p for p in PRONOUN_SETS if p in set(grid["pronoun_set"])])


def plot_f1_by_case_and_pronoun(grid: pd.DataFrame, title: str):
    """Grouped bars of a case x pronoun-set F1 grid, with the coin-flip level (0.5)."""
    from gbstats.report.figures import new_figure

    fig, ax = new_figure()
    width = 0.8 / max(len(grid.columns), 1)
    positions = np.arange(len(grid.index))
    for k, name in enumerate(grid.columns):
        offset = (k - (len(grid.columns) - 1) / 2) * width
        ax.bar(positions + offset, grid[name].to_numpy(dtype=float), width, label=name)
    ax.axhline(0.5, color="black", linestyle="--", linewidth=1, label="chance")
    ax.set_xticks(positions, list(grid.index))
    ax.set_xlabel("grammatical case of the pronoun")
    ax.set_ylabel("macro F1")
    ax.set_ylim(0, 1.3)  # head room for the legend above the bars
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_title(title)
    ax.legend(title="pronoun set", ncols=5, fontsize="small", loc="upper center")
    return fig
