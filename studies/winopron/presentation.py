"""How the WinoPron tables read in a paper: words for columns and values, and the views that
reshape a long table for print (results.json keeps every table as computed)."""
from __future__ import annotations

import pandas as pd

TEMPLATE_SETS = {"new": "WinoPron", "old": "Winogender (original)"}
VERSIONS = {"double": "two entities", "single": "one entity"}
GROUPINGS = {"overall": "overall", "case": "case", "pronoun_set": "pronoun set",
             "case_pronoun": "case and pronoun set"}
METRICS = {"f1_macro": "Macro F1", "f1_occupation": "F1 occupation",
           "f1_participant": "F1 participant", "accuracy": "Accuracy",
           "pronoun_consistency": "Pronoun consistency",
           "disambiguation_consistency": "Disambiguation consistency"}
LABELS = {"grouping": "Grouping", "level": "Level", "case": "Case", "pronoun_set": "Pronoun set",
          "metric": "Metric", "value": "Value", "chance": "Chance", "n": "N", "unit": "Unit",
          "p_below_chance": "p (below chance)", **METRICS}
VALUES = {"grouping": GROUPINGS, "metric": METRICS}


def with_subset(table: pd.DataFrame) -> pd.DataFrame:
    """`table` with one `subset` column ("WinoPron, two entities") in place of template_set and
    version, and a level such as "accusative|he" written "accusative, he"."""
    subset = [f"{TEMPLATE_SETS.get(t, t)}, {VERSIONS.get(v, v)}"
              for t, v in zip(table["template_set"], table["version"])]
    out = table.drop(columns=["template_set", "version"]).copy()
    out.insert(0, "subset", subset)
    if "level" in out.columns:
        out["level"] = out["level"].astype(str).str.replace("|", ", ", regex=False) \
            .replace({"all": "overall"})
    return out
