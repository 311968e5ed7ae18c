"""GenDa Lens (2023): gender bias in Danish coreference and language models.

DaWinoBias (pro vs anti F1, coreference and LM pronoun choice) and ABC
(anti-reflexive possessives: coreference FPR by gender, LM relative
perplexity), with bootstrap CIs and a mixed model of log relative perplexity.
The two LM tasks are gbstats' own variants (a two-way pronoun choice, a
perplexity ratio), not GenDa Lens' top-1 accuracy and perplexity difference:
see `analysis.LM_VARIANTS`.

Run it with `python -m studies.genda_lens --help`.
"""
