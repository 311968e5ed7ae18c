"""The sensitivities the people's data call for, beside the authors' fits (issue 40, item 5).

* **Exp 2, a participant intercept.** PSA and Biographies vary only between
  participants (each saw one PSA and one kind of biography), yet the authors' models have
  only `(1 | Name)`: each of a participant's 12 characters counts as independent evidence
  about that participant's condition (gbstats' design check says so). Each of the three
  main models is refitted with `(1 | participant)` added, with bobyqa in both of glmer's
  stages (with the default, bobyqa then Nelder-Mead, each refit ended on lme4's gradient
  warning).
* **Exp 1B, the failed by-participant fit.** The authors' `P_Acc ~ M_Acc_Factor *
  Pronoun + (1 | SubjID)` stops with max|grad| 0.0426 and SEs near 0.0017 under glmer's
  default optimizers (bobyqa, then Nelder-Mead); with bobyqa in both stages it converges.
  The authors' fit stays flagged FAILED in `human_models`; the bobyqa refit is set beside
  it.

`sensitivity_table` puts each term's published-model estimate, SE and p beside the
refit's, with whether p < .05 in each (`survives`). R reference:
tests/reference/pronoun_memory_sensitivity.R (lme4 glmer on the same rows and codings).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from studies.pronoun_memory.human import FAILED_FIT, HUMAN_MODELS, model_rows

PARTICIPANT_TERM = "(1 | participant)"
REFIT_OPTIMIZER = "bobyqa"


@dataclass(frozen=True)
class Sensitivity:
    key: str             # the refit's name
    authors: str         # the authors' model it refits (human.HUMAN_MODELS key)
    change: str          # what is changed, in words (a table's heading)
    extra_random: str = ""
    optimizer: str | None = None

    def spec(self):
        base = next(s for s in HUMAN_MODELS if s.key == self.authors)
        formula = base.formula + (f" + {self.extra_random}" if self.extra_random else "")
        return replace(base, key=self.key, formula=formula)


SENSITIVITIES = (
    Sensitivity("exp2_m_memory_participant", "exp2_m_memory",
                "Exp 2, memory: a participant intercept added", PARTICIPANT_TERM,
                REFIT_OPTIMIZER),
    Sensitivity("exp2_m_prod_participant", "exp2_m_prod",
                "Exp 2, production: a participant intercept added", PARTICIPANT_TERM,
                REFIT_OPTIMIZER),
    Sensitivity("exp2_m_mp_participant", "exp2_m_mp",
                "Exp 2, production by memory: a participant intercept added", PARTICIPANT_TERM,
                REFIT_OPTIMIZER),
    Sensitivity("exp1b_m_mp_subjInt_bobyqa", FAILED_FIT,
                "Exp 1B, production by memory, by-participant check: refitted with bobyqa",
                optimizer=REFIT_OPTIMIZER),
)


def fit_sensitivities(tables: dict, *, use_cache: bool = True, cache_dir=None) -> dict:
    """{sensitivity key: lme4 FitResult}."""
    from gbstats.mixed.fit_cache import cached_fit
    from gbstats.mixed.fitting import fit_frequentist

    fits = {}
    for s in SENSITIVITIES:
        spec = s.spec()
        rows, contrasts = model_rows(spec, tables[f"exp{spec.experiment}"])
        fits[s.key] = cached_fit(fit_frequentist, spec.formula, rows, backend="lme4",
                                 family="binomial", optimizer=s.optimizer, contrasts=contrasts,
                                 use_cache=use_cache, cache_dir=cache_dir)
    return fits


def sensitivity_table(human: dict, status: dict, fits: dict, tables: dict) -> pd.DataFrame:
    """One row per sensitivity x term: the authors' fit (estimate, SE, p, status) beside the
    refit (estimate, SE, p, status), and whether p < .05 in each. A FAILED fit's p is
    kept but `published_significant` is NaN: its SEs cannot be read."""
    from studies.pronoun_memory.human import fit_status, reference_glm_se

    rows = []
    for s in SENSITIVITIES:
        authors = (human.get(s.authors) or {}).get("lme4")
        refit = fits.get(s.key)
        if authors is None or refit is None:
            continue
        refit_status = fit_status(refit, reference_glm_se(s.spec(), tables))
        published_status = status.get(s.authors, {}).get("status", "")
        a = authors.coefs.set_index("term")
        for c in refit.coefs.itertuples():
            pub = a.loc[c.term] if c.term in a.index else None
            pub_p = float(pub["p_value"]) if pub is not None else np.nan
            readable = published_status != "FAILED"
            rows.append({
                "sensitivity": s.key, "model": s.authors, "change": s.change,
                "formula": s.spec().formula,
                "optimizer": s.optimizer or "glmerControl default: bobyqa, then Nelder_Mead",
                "term": c.term,
                "published_estimate": float(pub["estimate"]) if pub is not None else np.nan,
                "published_se": float(pub["se"]) if pub is not None else np.nan,
                "published_p": pub_p, "published_status": published_status,
                "estimate": c.estimate, "se": c.se, "p_value": c.p_value,
                "status": refit_status["status"],
                "n_obs": int(refit.fit_stats.get("nobs") or len(model_rows(
                    s.spec(), tables[f"exp{s.spec().experiment}"])[0])),
                "published_significant": (pub_p < 0.05) if readable and pub is not None
                else np.nan,
                "significant": bool(c.p_value < 0.05) if refit_status["se_usable"] else np.nan})
    return pd.DataFrame(rows)


TERM_WORDS = {"Biographies_They": "Biographies", "PSA_GenLang": "PSA",
              "Pronoun_T_HS": "Pronoun (they vs he+she)", "Pronoun_H_S": "Pronoun (he vs she)",
              "M_Acc_Factor_Wrong_Right": "memory accuracy",
              "M_Acc_Factorwrong vs right": "memory accuracy",
              "Pronounthey vs he+she": "Pronoun (they vs he+she)",
              "Pronounhe vs she": "Pronoun (he vs she)"}


def term_words(term: str) -> str:
    """"Pronoun_T_HS:PSA_GenLang" -> "Pronoun (they vs he+she) × PSA"."""
    return " × ".join(TERM_WORDS.get(p, p) for p in term.split(":"))


def sensitivity_sentences(table: pd.DataFrame) -> list[str]:
    """Which published effects (p < .05 in the authors' fit) survive the sensitivity refit,
    and which do not; for the failed fit, what the converged refit gives."""
    lines = []
    for key, part in table.groupby("sensitivity", sort=False):
        change = part["change"].iloc[0]
        if part["published_status"].iloc[0] == "FAILED":
            sig = part[(part["significant"] == True)  # noqa: E712 (NaN is neither)
                       & (part["term"] != "(Intercept)")]
            status = part["status"].iloc[0]
            lines.append(
                f"- **{change}.** The authors' fit failed (its SEs cannot be read; it stays "
                f"flagged). With bobyqa the same model "
                + ("converges" if status == "converged" else f"ends {status}") + ": "
                + (", ".join(f"{term_words(r.term)} {r.estimate:.2f} (SE {r.se:.2f}, "
                             f"{_p(r.p_value)})" for r in sig.itertuples()) + " at p < .05"
                   if len(sig) else "no term at p < .05") + ".")
            continue
        published = part[part["published_significant"] == True]  # noqa: E712
        published = published[published["term"] != "(Intercept)"]
        kept = published[published["significant"] == True]  # noqa: E712
        lost = published[published["significant"] != True]  # noqa: E712
        said = []
        if len(kept):
            said.append("survive: " + "; ".join(
                f"{term_words(r.term)} ({_p(r.published_p)} → {_p(r.p_value)})"
                for r in kept.itertuples()))
        if len(lost):
            said.append("do not survive: " + "; ".join(
                f"{term_words(r.term)} ({_p(r.published_p)} → {_p(r.p_value)})"
                for r in lost.itertuples()))
        lines.append(f"- **{change}.** Of the published effects at p < .05, "
                     + ("; ".join(said) if said else "there are none") + ".")
    return lines


def _p(p: float) -> str:
    return "p < .001" if p < 0.001 else "p = " + f"{p:.3f}".replace("0.", ".", 1)


def sensitivity_view(table: pd.DataFrame) -> pd.DataFrame:
    """For print: one heading per sensitivity, a row per term (intercept left out), the
    authors' fit beside the refit."""
    shown = table[table["term"] != "(Intercept)"]
    failed = shown["published_status"].eq("FAILED")
    # a failed fit's SEs (and so its p) cannot be read: shown blank, kept in results.json
    return shown.assign(heading=shown["change"], term=shown["term"].map(term_words),
                        published_se=shown["published_se"].mask(failed),
                        published_p=shown["published_p"].mask(failed))[
        ["heading", "term", "published_estimate", "published_se", "published_p", "estimate",
         "se", "p_value"]]


LABELS = {"term": "Term", "published_estimate": "Authors' model", "published_se": "SE",
          "published_p": "p", "estimate": "Refit", "se": "SE", "p_value": "p"}


def sensitivity_report(report, table: pd.DataFrame) -> None:
    """The section and the table."""
    report.section("Sensitivity: the published effects under the model the design calls for",
                   "\n".join(sensitivity_sentences(table)))
    report.table(
        "human_sensitivity", sensitivity_view(table),
        "The authors' models beside refits with a participant intercept (Exp 2) and with "
        "another optimizer (Exp 1B's failed fit)",
        # the N is said in the notes; results.json keeps the table as recorded
        record=table.drop(columns="n_obs", errors="ignore"), groups="heading",
        labels=LABELS, p_columns=["published_p", "p_value"],
        notes=["Exp 2: PSA and the kind of biography vary only between participants, and the "
               "authors' models have a random intercept for the character's name only; the "
               "refit adds one for the participant (optimizer bobyqa). Log-odds, the authors' "
               "codings.",
               "Exp 1B: the authors' by-participant check of production by memory accuracy "
               "did not converge under the default optimizers (its standard errors cannot be "
               "read, and it stays flagged as failed: its standard errors and p-values are "
               "left blank here); the refit uses bobyqa in both stages.",
               "Wald z tests; an effect survives when p < .05 in both fits.",
               n_sentence(table)])


def n_sentence(table: pd.DataFrame) -> str:
    """The N of each refit, in words (issue 43: every table states N)."""
    counts = table.groupby("change", sort=False)["n_obs"].first()
    return "N: " + "; ".join(f"{change.split(':')[0]}, {int(n):,} responses"
                             for change, n in counts.items()) + "."
