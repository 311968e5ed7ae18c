"""Record each study's numeric tables before the runner rewrite (issue 15).

Taken at commit 834571a (main before studies/pipeline.py); each file records
the commit it was made at. singular_they, pronoun_fidelity, winopron and
genda_lens were remade on branch `fidelity` after issue 19's method fixes,
which change their tables on purpose (paper-scale LMM table; the GLMM on
unique instances with distractors as a factor, one case-consistency r per
pair of cases, the she-xe test; the he/she/they Winogender baseline; the LM
metrics named as gbstats' variants). singular_they was remade again on branch
`camilliere` (issue 23, part A): it now scores the published Camilliere et al.
(2021) stimuli (typos corrected), its simulated panel has the published
acceptance counts, and its paper-scale table is Watson et al.'s
`surprisal_they ~ gendered + close + (1|itm)`. On the integrated main of issues
23-27, singular_they was remade once more (issue 25's Fisher-z corrected-r and
centred raw-r intervals, the corrected comparison table) and pronoun_fidelity too
(issue 25: bglmer's penalised GLMM leads its glmm and distractor_effects tables,
glmer beside it); name_gender was added (issue 23, part B). singular_they was remade
on branch `they` (issue 31, point 9): its simulated panel draws people first and has
calibrated survey scores (every SIMULATED table changed), and four tables were added
(published_anchor, panel_parameters, panel_rating_means, panel_survey_tests);
pronoun_memory was added (issue 30), with the embedded model on Exp 1A's lists. Each study runs
once with the smallest settings it offers, seeded, without Bayesian fits and,
where the study allows it, without a language model (`--model none`);
otherwise with the embedded model (smollm2-135m). The `tables` section of each
results.json is kept as `<study>.json` here; provenance (dates, timings, git
hash, versions) is dropped because it changes on every run.

On branch `like` (issue 31) name_gender gained table like_for_like_models (its human
tables are kept as recorded at b01a908: a fresh run here moved only glmer's SEs, within
FITTED, as issue 33 records), and singular_they was remade: its corrected_comparisons
carry the equivalence test and verdict, and group_profile_agreement is new (every other
table the same as before).

pronoun_memory gained table pronoun_mass (the production pronoun mass, issue 30's last
commit on branch `memory`); it was added from the baseline run of a clean clone of main at
19cb156, and the other tables kept as recorded (that run's tables, in both environments,
were within tolerance of them).

pronoun_memory was remade for issue 40 (a model side that measures what it claims): the
memory options are presented in all six orders and averaged (they came in one order, and
the embedded model's "memory" was a first-option bias), the production prompt's worked
example is read with he, she and they and averaged, Exp 1A's characters are also scored
each alone without the math text (the memory probe), and the contrasts and they cells
carry Holm p and a verdict (not measuring memory, at floor, differs). model_vs_people,
contrasts and pronoun_mass change because the model's numbers do; memory_probe,
position_bias and memory_calibration are new; the human tables are as before. Remade again
for issue 40's bootstrap floor: where a tested p sits at 2 / (B + 1) and the family's size
times that floor is above .005, the comparison draws enough replicates for it to be .005 or
less (the baseline's 200 became 1599, for a family of 4), so model_vs_people and contrasts
change in their interval ends and p-values only, and gain n_boot, p_holm_lower (Holm with
the floor's p-values at 0) and p_at_floor; the verdicts are as before.

pronoun_fidelity was remade for issue 41 (item 4): a sample smaller than the full design
keeps the same cells (occupation x case x pronoun set x distractor pronoun) in every seed,
each seed's own full-design instance in each (the default run's stratified sample), where
each seed took its own first cells before; the run's tables change because its instances
do, and table sampling (the sample against the full design per stratum) is new.

Rerun:  GBSTATS_DATA=/work/shared/data python tests/reference/study_baselines/make_baselines.py
The regression test tests/studies/test_study_baselines.py runs the same
commands and compares the tables.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

# study -> flags (besides --out); every run is seeded (--seed 2023, the default, made explicit)
RUNS: dict[str, list[str]] = {
    "singular_they": ["--no-bayes", "--n-boot", "200"],
    "role_nouns": ["--model", "none", "--no-bayes", "--n-boot", "200", "--n-perm", "200"],
    "cognitive_bias": ["--model", "none", "--no-bayes"],
    "pronoun_fidelity": ["--no-bayes", "--distractors", "0,1", "--per-seed", "36",
                         "--occupations", "3"],
    "winopron": ["--limit", "2"],
    "genda_lens": ["--limit", "5", "--n-boot", "200"],
    "name_gender": ["--model", "none", "--no-bayes"],
    # the model reads Exp 1A's three lists only (faithful condition), 200 bootstrap replicates
    "pronoun_memory": ["--experiments", "1a", "--no-distractors", "--ruff-per-seed", "0",
                       "--no-bayes", "--n-boot", "200"],
}


def run_study(study: str, out: Path, env: dict | None = None) -> dict:
    """Run `python -m studies.<study>` with the recorded flags (and `env` added to the
    environment); return results.json's tables."""
    cmd = [sys.executable, "-m", f"studies.{study}", *RUNS[study], "--seed", "2023",
           "--out", str(out)]
    subprocess.run(cmd, check=True, env=None if env is None else {**os.environ, **env})
    return json.loads((out / "results.json").read_text())["tables"]


def main(studies: list[str]) -> None:
    for study in studies or list(RUNS):
        with tempfile.TemporaryDirectory() as tmp:
            tables = run_study(study, Path(tmp) / study)
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True, cwd=HERE).stdout.strip()
        record = {"commit": commit, "flags": RUNS[study], "tables": tables}
        (HERE / f"{study}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"wrote {HERE / f'{study}.json'}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
