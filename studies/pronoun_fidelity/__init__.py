"""Pronoun use fidelity with distractors (Gautam et al. 2024, RUFF).

An introduction ties an occupation to a pronoun; 0-5 distractor sentences talk
about another person with another pronoun; can the model still reuse the
introduced pronoun? Forced choice among he/she/they/xe, accuracy by pronoun set
and case, Welch's tests, error attribution (distraction vs. bias) and a
logistic mixed model of how fast fidelity decays.

Run it with `python -m studies.pronoun_fidelity --help`; `--counts` prints the
full dataset's instance counts without scoring. The default run scores a
stratified sample of the paper's design (the same 55 of 60 balanced blocks of
36 cells in every seed: intervals a few percent wider, measured in
benchmarks/results/pronoun_fidelity.json); `--full-design` scores all of it.
"""
