"""Where does pronoun_fidelity's GLMM stop, under a chosen process state? (issue 33)

    python tests/reference/process_state_probe.py INSTANCES.csv MODE [K]

INSTANCES.csv is a pronoun_fidelity report's instance_results.csv (the baseline settings:
--no-bayes --distractors 0,1 --per-seed 36 --occupations 3 --seed 2023). MODE:
- `here`: fit in this process after allocating K small R vectors (R's allocation history);
- `torch`: import torch and run one matrix product first, then fit here;
- `clean`: allocate K vectors and import torch here, then fit in the clean R process
  (gbstats.mixed.clean_process).
Prints bglmer's pronoun_setthey:distractors1 estimate and glmer's SE of pronoun_setshe,
the two numbers that moved. tests/reference/process_state.md records what it printed.
"""
from __future__ import annotations

import sys

import pandas as pd


def main(path: str, mode: str, k: int = 0) -> None:
    if mode in ("torch", "clean"):
        import torch

        torch.ones(64, 64) @ torch.ones(64, 64)
    import rpy2.robjects as ro

    ro.r(f"junk <- lapply(seq_len({k}), function(i) numeric(i))")
    from gbstats.mixed.clean_process import clean_fits
    from studies.pronoun_fidelity import analysis as A

    results = pd.read_csv(path)
    with clean_fits(mode == "clean"):
        fits = A.fit_glmms(results, lme4=True, bayes=False, draws=10, seed=1, notes=[])
    blme = fits["blme"].coefs.set_index("term")["estimate"]["pronoun_setthey:distractors1"]
    glmer = fits["lme4"].coefs.set_index("term")["se"]["pronoun_setshe"]
    print(f"{mode} k={k}: bglmer pronoun_setthey:distractors1 {blme:.6f}, "
          f"glmer se(pronoun_setshe) {glmer:.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
