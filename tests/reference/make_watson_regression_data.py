"""Write the data of Watson et al.'s regression on the published stimuli.

Run from the repo root (needs the embedded model and the public data):
    .venv/bin/python tests/reference/make_watson_regression_data.py
then:
    Rscript tests/reference/watson_regression.R

Scores the 335 published Camilliere et al. (2021) stimuli, typos corrected as
in data/singular_they/camilliere_corrections.csv (the study's default), with
smollm2-135m, exactly as `python -m studies.singular_they` does, and keeps the
160 rows of the four closeness x gender conditions with the columns of Watson
et al.'s regression (studies.singular_they.analysis.paper_scale_rows):
`surprisal_they` in nats, `gendered` and `close` coded +1/-1, `itm`.
The R script fits the published model to this file; the test fits it with
gbstats and compares.
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "watson_regression.csv"
COLUMNS = ["item", "cond", "itm", "surprisal_they", "gendered", "close"]


def main() -> None:
    from models.loading import load_scorer
    from studies.singular_they import analysis as A
    from studies.singular_they.stimuli import select_stimuli

    stimuli, _ = select_stimuli(None)
    scored = A.score_targets(stimuli, load_scorer("smollm2-135m", device="cpu"))
    rows = A.paper_scale_rows(A.close_gendered_rows(scored))
    # 17 significant digits: the float64 value round-trips exactly through the CSV
    rows[COLUMNS].to_csv(OUT, index=False, float_format="%.17g")
    print(f"wrote {OUT} ({len(rows)} rows)")


if __name__ == "__main__":
    main()
