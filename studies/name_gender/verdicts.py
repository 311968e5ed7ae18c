"""name_gender's people-vs-model verdicts in words, each read off its test (issue 40, item 4).

`comparison.effect_differences` tests every difference between people's population-
averaged effect and the model's (a joint fit, cluster-robust over first names, Holm within
the study's family, TOST at `comparison.EFFECT_EQUIVALENCE_BOUND`). This module only says
what those tests found: "differs (p = ...)", "equivalent within ±δ" or "inconclusive".
Whether two intervals overlap is never used.
"""
from __future__ import annotations

import pandas as pd

from studies.name_gender.presentation import EFFECT_WORDS, EXPERIMENTS, MIRROR_WORDS

EFFECT_NAMES = {**EFFECT_WORDS,
                "last minus first and full × rating slope":
                "last name minus first and full names × gender rating",
                "full minus first × rating slope": "full name minus first name × gender rating"}


def _p(p: float) -> str:
    return "p < .001" if p < 0.001 else "p = " + f"{p:.3f}".replace("0.", ".", 1)


def effect_test(tests: pd.DataFrame, experiment: int, model: str, effect: str) -> pd.Series:
    """The test row of one effect."""
    sel = tests[(tests["experiment"] == experiment) & (tests["model"] == model)
                & (tests["effect"] == effect)]
    if len(sel) != 1:
        raise KeyError(f"no single difference test for Exp {experiment}, {model}, {effect!r} "
                       f"({len(sel)} rows)")
    return sel.iloc[0]


def verdict_sentence(row: pd.Series) -> str:
    """"People −0.20 (SE 0.13), the model −0.02 (SE 0.08): difference 0.19 [−0.10, 0.47];
    **inconclusive** (p = .373 Holm; equivalence within ±0.2 not shown, TOST p = .459
    Holm)." The bold word is the test's."""
    said = (f"people {row['people_estimate']:.2f} (SE {row['people_se']:.2f}), the model "
            f"{row['model_estimate']:.2f} (SE {row['model_se']:.2f}); difference "
            f"{row['estimate']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]")
    bound = f"±{row['equivalence_bound']:g}"
    verdict = str(row["verdict"])
    if verdict.startswith("differs"):
        return f"{said}: **the model differs from people** ({_p(row['p_holm'])}, Holm)."
    if verdict.startswith("equivalent"):
        return (f"{said}: **equivalent within {bound}** (TOST {_p(row['p_equivalence_holm'])}, "
                "Holm).")
    return (f"{said}: **inconclusive**: no difference shown ({_p(row['p_holm'])}, Holm) and "
            f"no equivalence within {bound} shown (TOST {_p(row['p_equivalence_holm'])}, Holm).")


def effect_line(tests: pd.DataFrame, experiment: int, model: str, effect: str) -> str:
    """"Full name minus first name: people ...; difference ...: **...**"."""
    words = EFFECT_NAMES.get(effect, effect)
    return f"{words[0].upper()}{words[1:]}: {verdict_sentence(effect_test(tests, experiment, model, effect))}"


def differences_view(tests: pd.DataFrame) -> pd.DataFrame:
    """effect_differences for print: one heading per experiment and the authors' model
    mirrored, a row per effect with both sides, the difference, its interval and tests."""
    return tests.assign(
        heading=[f"{EXPERIMENTS[int(e)]}, {MIRROR_WORDS.get(m, m).lower()} model"
                 for e, m in zip(tests["experiment"], tests["model"])],
        effect=tests["effect"].map(lambda e: EFFECT_NAMES.get(e, e)),
        verdict=tests["verdict"].str.replace(r" \(.*\)$", "", regex=True).str.capitalize())[
        ["heading", "effect", "people_estimate", "model_estimate", "estimate", "ci_low",
         "ci_high", "p_value", "p_holm", "p_equivalence_holm", "verdict"]]


DIFFERENCE_LABELS = {"effect": "Effect", "people_estimate": "People", "model_estimate": "Model",
                     "estimate": "Difference", "p_equivalence_holm": "p equivalence (Holm)",
                     "verdict": "Conclusion"}


def differences_table(report, tests: pd.DataFrame, model_name: str) -> None:
    """The table every people-vs-model verdict of the report is read from; the model named
    as what it is (models.registry.described_as)."""
    from models.registry import described_as

    model_name = described_as(model_name)
    first = tests.iloc[0]
    units = sorted(set(tests["unit"]))
    report.table(
        "effect_differences", differences_view(tests),
        f"People minus {model_name}: each effect's difference, tested",
        record=tests, groups="heading", labels=DIFFERENCE_LABELS,
        p_columns=["p_value", "p_holm", "p_equivalence_holm"],
        notes=[
            "Effects: population-averaged log-odds of she among he and she (a rating effect "
            "per point of the first name's gender rating, at the centred rating), from "
            "logistic regressions of people's responses and of the model's P(she | he or "
            "she) per prompt on each model's conditions and rating, fitted jointly.",
            "Difference: people minus the model; 95% interval and p from t with the number of "
            f"clusters less one as degrees of freedom; standard errors robust to clustering "
            f"within {' and '.join(units)} on both sides at once, so the pairing of the two "
            "sides on the same names is counted.",
            f"p (Holm): over the {int(first['family_size'])} differences of this table. "
            f"Equivalence: two one-sided tests at ±{first['equivalence_bound']:g} log-odds "
            "(two effects that close change P(she) by amounts no more than 0.05 apart), "
            "Holm over the same family.",
            "Conclusion: Differs, Holm p < .05; Equivalent, equivalence shown at Holm p < "
            ".05; Inconclusive, neither. Overlapping intervals are not used."])


def condition_tests(tests: pd.DataFrame, experiment: int, model: str) -> list[str]:
    return [effect_line(tests, experiment, model, effect)
            for effect in ("last minus first and full", "full minus first")
            if len(tests[(tests["experiment"] == experiment) & (tests["model"] == model)
                         & (tests["effect"] == effect)])]


def rating_tests(tests: pd.DataFrame, experiment: int, model: str) -> list[str]:
    """The slope averaged over conditions, and how it changes between conditions (the
    interaction a slope averaged over conditions would hide)."""
    sel = tests[(tests["experiment"] == experiment) & (tests["model"] == model)]
    return [effect_line(tests, experiment, model, effect) for effect in sel["effect"]
            if effect == "rating slope (per point)" or effect.endswith("× rating slope")]


