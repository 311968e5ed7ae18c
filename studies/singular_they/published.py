"""Watson et al.'s (2023) published BERT numbers, and how the they-form is scored.

The anchor: Watson, Beekhuizen & Stevenson (2023, ACL) fitted
`surprisal_they ~ gendered + close + (1|itm)` (lmerTest, REML, Satterthwaite df;
surprisal in nats; gendered and close coded +1/-1) to bert-base-uncased's
surprisal of the they-form in the 160 closeness x gender stimuli of Camilliere
et al. (2021). The estimates below are the output their code committed,
`camilliere/gender_closeness_regression.txt` (written by
`camilliere/part_5_regression.R`) in juliawatson/bert-social-attitudes at
commit ef1358fb0307aeb44bf4ac7f6aae7251e979363b, digit for digit: gendered
0.34479 (SE 0.07474), close 0.50756 (SE 0.07474), df 118. The paper's own
table could not be read offline (the repository's PDF has no text layer here);
the committed lmerTest output is the recorded source.

How they scored (same repository and commit): `camilliere/part_1_create_stimuli.py`
replaces the form in each published sentence with one `[MASK]`;
`camilliere/part_2_compute_bert_predictions.py` runs bert-base-uncased on the
whole masked sentence and reads the softmax at the mask at the form's
vocabulary entry (`tokenizer.vocab[form]`); `part_3_create_visualizations.py`
takes surprisal = -ln P. The vocabulary lookup scores a form that is one
piece only: they, them, their and themselves all are in bert-base-uncased, so
no rule for a form of several pieces was needed there, and there is no PLL.
gbstats' masked path (models.masked.masked_word_surprisal) computes exactly
that quantity for a one-piece form; a form that splits into pieces in another
model's vocabulary is predicted left to right, each piece with the later pieces
masked (the chain rule; Kauf & Ivanova 2023's within-word l2r), and the report
counts such forms. Watson et al. scored the text as published.

A causal model is different in kind: it reads only the words before the form,
P(form | left context), where BERT also reads the words after it. The report
shows the published numbers beside this run's as an anchor, not as a
replication, and says which of the two this run is.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

REPOSITORY = "juliawatson/bert-social-attitudes"
COMMIT = "ef1358fb0307aeb44bf4ac7f6aae7251e979363b"
REGRESSION_FILE = "camilliere/gender_closeness_regression.txt"
# (in words, for a table's notes: the file names are in the module doc)
SOURCE = (f"Watson, Beekhuizen & Stevenson (2023), the lmerTest output of their regression "
          f"script in their code repository ({REPOSITORY}, commit {COMMIT[:7]})")
SCORING_SOURCE = (f"{REPOSITORY} camilliere/part_1_create_stimuli.py and "
                  f"part_2_compute_bert_predictions.py, commit {COMMIT[:7]}")
PUBLISHED_MODEL = "bert-base-uncased"
# term: (estimate, SE, Satterthwaite df, t, p as printed; None where R printed "< 2e-16")
PUBLISHED_BERT = {
    "(Intercept)": (5.54177, 0.37634, 39.0, 14.726, None),
    "gendered": (0.34479, 0.07474, 118.0, 4.613, 1.01e-05),
    "close": (0.50756, 0.07474, 118.0, 6.791, 4.76e-10),
}
PUBLISHED_VARIANCES = {"itm": 5.4417, "residual": 0.8937}
ANCHOR_FIELDS = ["term", "source", "model", "context", "text", "estimate", "se", "df",
                 "p_value"]
READS = {"causal": "the words before the form",
         "masked": "the whole sentence, form masked"}


def published_p(term: str) -> float:
    """The printed p, or for the intercept (printed "< 2e-16") the two-sided p of its
    printed t on its printed df."""
    _, _, df, t, p = PUBLISHED_BERT[term]
    return float(p) if p is not None else float(2 * stats.t.sf(abs(t), df))


def reads(scoring: str) -> str:
    """What a model scored with `scoring` conditions the form on."""
    return READS.get(scoring, f"the whole sentence ({scoring})")


def anchor_backend(paper_fits: dict) -> str | None:
    """The fit set beside the published one: lme4 where it was fitted (the software Watson
    et al. used), else the first backend there is."""
    return "lme4" if "lme4" in paper_fits else next(iter(paper_fits), None)


def anchor_table(paper_fits: dict, *, model: str, scoring: str, text: str) -> pd.DataFrame:
    """Watson et al.'s published estimates beside this run's paper-scale fit, term by term.

    This run's row comes from lme4 where it was fitted (the software Watson et
    al. used), else from the first backend there is. `text`: "as published" or
    "corrected".
    """
    rows = [{"term": term, "source": "Watson et al. (2023)", "model": PUBLISHED_MODEL,
             "context": READS["masked"], "text": "as published", "estimate": est, "se": se,
             "df": df, "p_value": published_p(term)}
            for term, (est, se, df, _, _) in PUBLISHED_BERT.items()]
    backend = anchor_backend(paper_fits)
    if backend is not None:
        fit = paper_fits[backend]
        for term in PUBLISHED_BERT:
            row = fit.coef(term)
            rows.append({"term": term, "source": f"this run ({backend})", "model": model,
                         "context": reads(scoring), "text": text,
                         "estimate": float(row["estimate"]), "se": float(row["se"]),
                         "df": float(row["df"]) if pd.notna(row["df"]) else float("nan"),
                         "p_value": float(row["p_value"])})
    order = {term: k for k, term in enumerate(PUBLISHED_BERT)}
    return (pd.DataFrame(rows, columns=ANCHOR_FIELDS)
            .sort_values("term", key=lambda t: t.map(order), kind="stable")
            .reset_index(drop=True))


def anchor_notes(*, scoring: str, model: str, text: str, corrected_bold_items: list[str]
                 ) -> list[str]:
    """The table notes: the source, and every way this run differs from Watson et al.'s."""
    notes = [f"Published values: {SOURCE}. Both fits' df and p are in results.json (the "
             "published intercept's p computed from its printed t and df: R printed "
             "< 2e-16)."]
    if scoring == "causal":
        notes.append("This run's model is causal: it reads only the words before the form, "
                     "P(form | left context). Watson et al. scored a masked model with the form "
                     "masked in the whole sentence, so the words after the form informed their "
                     "estimates and not these: an anchor, not a replication.")
    elif model != PUBLISHED_MODEL:
        notes.append(f"Scored as Watson et al. did (form masked in the whole sentence), with "
                     f"another model ({model}).")
    if text != "as published" and corrected_bold_items:
        notes.append(f"Watson et al. scored the text as published; this run scored the corrected "
                     f"text, which differs in {len(corrected_bold_items)} of the 160 rows "
                     f"({', '.join(corrected_bold_items)}).")
    return notes


def order_test(close: float, close_se: float, gendered: float, gendered_se: float
               ) -> tuple[float, float]:
    """(z, two-sided p) of close minus gendered. The two +1/-1 codes of this balanced
    closeness x gender design are orthogonal, so their estimates are close to uncorrelated
    and the difference's SE is sqrt(SE_close^2 + SE_gendered^2) (the covariance is not
    published, which is why it is left out on both sides)."""
    from scipy import stats

    z = (close - gendered) / float(np.hypot(close_se, gendered_se))
    return z, float(2 * stats.norm.sf(abs(z)))


def _which_larger(z: float, p: float) -> str:
    larger = "closeness" if z > 0 else "gender"
    verdict = ("" if p < 0.05 else ", but not significantly")
    return (f"the {larger} effect is larger{verdict} (difference z = {z:.2f}, "
            f"p = {p:.3f})")


def compare_in_words(table: pd.DataFrame) -> str:
    """One or two sentences: do this run's gendered and close effects have the published
    signs, and which effect is larger, each side by a test of the difference
    (`order_test`), not by the order of the point estimates (issue 40)."""
    mine = table[table["source"] != "Watson et al. (2023)"].set_index("term")
    if mine.empty:
        return "This run has no paper-scale fit to set beside the published estimates."
    ours = mine["estimate"]
    theirs = {t: PUBLISHED_BERT[t][0] for t in ("gendered", "close")}
    same_sign = all((ours[t] > 0) == (theirs[t] > 0) for t in theirs)
    z_pub, p_pub = order_test(theirs["close"], PUBLISHED_BERT["close"][1],
                              theirs["gendered"], PUBLISHED_BERT["gendered"][1])
    text = (f"Watson et al.'s BERT: the they-form is more surprising after gendered "
            f"(+{theirs['gendered']:.3f} nats per unit of the +1/-1 code) and after close "
            f"antecedents (+{theirs['close']:.3f}); {_which_larger(z_pub, p_pub)}. This run: "
            f"gendered {ours['gendered']:+.3f}, close {ours['close']:+.3f}; ")
    text += "the same signs" if same_sign else "not the published signs"
    if "se" in mine and np.isfinite(mine.loc[["close", "gendered"], "se"]).all():
        z, p = order_test(ours["close"], mine.loc["close", "se"], ours["gendered"],
                          mine.loc["gendered", "se"])
        text += f"; {_which_larger(z, p)}."
    else:
        text += "."
    return text


def scoring_counts(scored: pd.DataFrame) -> tuple[int, int]:
    """(forms scored as one piece, forms of several pieces), from the scores' n_tokens."""
    pieces = scored["n_tokens"].astype(int)
    return int((pieces == 1).sum()), int((pieces > 1).sum())


def scoring_description(scored: pd.DataFrame, scoring: str) -> str:
    """How the they-form was scored, for the report's Design section."""
    if scoring == "causal":
        return ("the probability of the target form given the words before it (causal LM: "
                "P(form | left context); the words after the form are not seen, unlike in "
                "Watson et al.'s masked scoring)")
    if scoring != "masked":
        return f"the target form in the sentence (`{scoring}`)"
    one, several = scoring_counts(scored)
    text = ("the target form as Watson et al. (2023) scored it with BERT: replaced by one mask "
            "token in the whole sentence, its probability read from the softmax at the mask "
            f"({SCORING_SOURCE}). {one} of {one + several} forms are one piece in this model's "
            "vocabulary and are scored exactly so")
    if several:
        text += (f"; {several} split into several pieces, which Watson et al.'s code does not "
                 "score (it reads one vocabulary entry): their pieces are predicted left to "
                 "right, each with the later pieces masked (the chain rule; Kauf & Ivanova "
                 "2023's within-word l2r)")
    return text
