"""Write tests/reference/name_gender_model_scores.csv from a name_gender run's model_scores.csv.

The embedded model's (smollm2-135m, float32, CPU) scores per prompt, with the columns the
model-side LMMs read: the R script tests/reference/name_gender_model_side.R fits them with
lmerTest and tests/studies/test_name_gender_model_side.py with gbstats, on the same rows.
These are this project's model outputs, not a copy of the public data.

    python -m studies.name_gender --no-bayes --no-prompt-sensitivity --out /tmp/ng
    python tests/reference/make_name_gender_model_scores.py /tmp/ng/model_scores.csv
    GBSTATS_DATA=... Rscript tests/reference/name_gender_model_side.R
"""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

COLUMNS = ["experiment", "prompt", "frame", "Condition", "item_key", "first_name", "name_unit",
           "GenderRatingCentered", "she_logit", "logit_two_way"]
OUT = Path(__file__).resolve().parent / "name_gender_model_scores.csv"


def main(source: str) -> None:
    scores = pd.read_csv(source)
    scores[COLUMNS].to_csv(OUT, index=False, float_format="%.17g")
    print(f"wrote {OUT} ({len(scores)} prompts)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1])
