"""WinoPron templates -> sentences (in memory only) and candidate substitutions.

The authors ask that the data not be redistributed in plain text, so sentence
texts live only in DataFrames in memory: nothing here writes them anywhere, and
the study writes sentence ids and metrics, never texts.

Sentence ids (what a predictions file names):

    <template_set>.<version>.<template item>.<pronoun_set>
    new.double.technician.customer.nominative.1.xe
    new.single.technician.customer.nominative.1.xe
    old.double.technician.customer.1.he

`template_set` is `new` (WinoPron) or `old` (the original Winogender
templates, which have no single-entity version); the template item is the
loader's `item` (occupation.participant[.case].answer).

Singular *they* takes plural verb agreement ("they were", not "they was").
The templates were written with a singular verb after the nominative pronoun,
so for *they* only, the word right after the pronoun is changed when it is one
of `THEY_AGREEMENT`. The WinoPron templates never need it (the verb after
the pronoun is a modal or past tense other than "was"); 17 old Winogender
templates have "was" there. The count of changed sentences is reported. *xe* keeps the singular verb ("xe was").
"""
from __future__ import annotations

import re

import pandas as pd

from gbstats.errors import DataValidationError, UnknownNameError

# Four pronoun sets, each with its nominative, accusative and possessive
# (dependent, "his car") form; the order is the order of report columns.
PRONOUN_SETS: dict[str, dict[str, str]] = {
    "he": {"nominative": "he", "accusative": "him", "possessive": "his"},
    "she": {"nominative": "she", "accusative": "her", "possessive": "her"},
    "they": {"nominative": "they", "accusative": "them", "possessive": "their"},
    "xe": {"nominative": "xe", "accusative": "xem", "possessive": "xyr"},
}
# The original Winogender baseline is what Rudinger et al. (2018) published and
# Gautam et al. (2024) compare against: 120 templates x he/she/they = 360
# sentences. xe is new in WinoPron; instantiating the old templates with it
# would add 120 sentences the baseline never had and lower its F1, which
# understates the drop from Winogender to WinoPron.
PRONOUN_SETS_OF_TEMPLATE_SET: dict[str, tuple[str, ...]] = {
    "new": tuple(PRONOUN_SETS), "old": ("he", "she", "they")}
CASES = ("nominative", "accusative", "possessive")
SLOT_OF_CASE = {"nominative": "$NOM_PRONOUN", "accusative": "$ACC_PRONOUN",
                "possessive": "$POSS_PRONOUN"}
ENTITIES = ("occupation", "participant")
THEY_AGREEMENT = {"was": "were", "is": "are", "has": "have", "does": "do",
                  "wasn't": "weren't", "isn't": "aren't", "hasn't": "haven't",
                  "doesn't": "don't"}
TEMPLATE_COLUMN = {("new", "double"): "template", ("new", "single"): "single_version",
                   ("old", "double"): "sentence"}


def fill_entities(template: str, occupation: str, participant: str) -> str:
    """Put the occupation and participant nouns into their slots."""
    return template.replace("$OCCUPATION", occupation).replace("$PARTICIPANT", participant)


def place_at_slot(text: str, slot: str, word: str) -> str:
    """Replace the pronoun slot by `word`, capitalised when it starts the sentence."""
    at = text.find(slot)
    if at < 0:
        raise DataValidationError("the pronoun slot is missing", source="template",
                                  expected=slot, found="a template without it (text not shown)")
    if at == 0 or text[:at].rstrip().endswith((".", "!", "?")):
        word = word[:1].upper() + word[1:]
    return text[:at] + word + text[at + len(slot):]


def they_agreement(text: str, pronoun: str) -> tuple[str, bool]:
    """Plural verb agreement for singular *they* right after the nominative pronoun."""
    pattern = re.compile(rf"\b({re.escape(pronoun)}) ({'|'.join(map(re.escape, THEY_AGREEMENT))})\b",
                         flags=re.IGNORECASE)
    fixed = pattern.sub(lambda m: f"{m.group(1)} {THEY_AGREEMENT[m.group(2).lower()]}", text,
                        count=1)
    return fixed, fixed != text


def template_rows(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per template (new double, new single, old double), text column `template_text`."""
    new, old = tables["new_templates"], tables["old_templates"]
    parts = []
    for (template_set, version), column in TEMPLATE_COLUMN.items():
        source = new if template_set == "new" else old
        part = pd.DataFrame({
            "template_set": template_set, "version": version,
            "template_id": template_set + "." + version + "." + source["item"],
            "item": source["item"], "occupation": source["occupation"],
            "participant": source["participant"], "case": source["case"],
            "answer_entity": source["answer_entity"],
            "template_text": source[column]})
        # A pair is the two disambiguations (answer 0 and 1) that share everything else;
        # in WinoPron the case is part of it, in the old templates the two may differ in case.
        part["pair"] = (template_set + "." + version + "." + source["occupation"] + "."
                        + source["participant"]
                        + (("." + source["case"]) if template_set == "new" else ""))
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def instantiate(templates: pd.DataFrame, pronoun_sets=None) -> pd.DataFrame:
    """Every template with its pronoun sets: one row per sentence, `text` in memory only.

    By default each template set gets its own sets (PRONOUN_SETS_OF_TEMPLATE_SET:
    all four for WinoPron, he/she/they for the original Winogender templates);
    `pronoun_sets` overrides that for every template. Adds sentence_id,
    pronoun_set, pronoun, text and they_agreement_changed.
    """
    if pronoun_sets is not None:
        unknown = [p for p in pronoun_sets if p not in PRONOUN_SETS]
        if unknown:
            raise UnknownNameError("pronoun set", unknown[0], list(PRONOUN_SETS))
    rows = []
    for row in templates.itertuples(index=False):
        base = fill_entities(row.template_text, row.occupation, row.participant)
        names = (pronoun_sets if pronoun_sets is not None
                 else PRONOUN_SETS_OF_TEMPLATE_SET[row.template_set])
        for name in names:
            pronoun = PRONOUN_SETS[name][row.case]
            text = place_at_slot(base, SLOT_OF_CASE[row.case], pronoun)
            changed = False
            if name == "they" and row.case == "nominative":
                text, changed = they_agreement(text, pronoun)
            rows.append({**row._asdict(), "sentence_id": f"{row.template_id}.{name}",
                         "pronoun_set": name, "pronoun": pronoun, "text": text,
                         "they_agreement_changed": changed})
    out = pd.DataFrame(rows).drop(columns=["template_text"])
    first = ["sentence_id", "template_id", "template_set", "version", "pair", "item",
             "occupation", "participant", "case", "answer_entity", "pronoun_set", "pronoun"]
    return out[first + [c for c in out.columns if c not in first]]


def candidate_text(template_text: str, occupation: str, participant: str, case: str,
                   candidate: str) -> str:
    """The template with the pronoun replaced by the candidate noun phrase, case-appropriately.

    nominative "he" and accusative "him" become "the technician"; possessive
    "his" becomes "the technician's". The candidate NP is singular, so the
    template's own singular verb agrees with it and nothing else changes.
    """
    if candidate not in ENTITIES:
        raise UnknownNameError("candidate", candidate, list(ENTITIES))
    noun = occupation if candidate == "occupation" else participant
    phrase = f"the {noun}'s" if case == "possessive" else f"the {noun}"
    return place_at_slot(fill_entities(template_text, occupation, participant), SLOT_OF_CASE[case], phrase)


def candidate_texts(templates: pd.DataFrame) -> pd.DataFrame:
    """Two rows per template (candidate occupation / participant) with the substituted `text`.

    The substitution removes the pronoun, so these texts, and the resolver's
    choice, are the same for every pronoun set.
    """
    rows = []
    for row in templates.itertuples(index=False):
        for candidate in ENTITIES:
            rows.append({"template_id": row.template_id, "candidate": candidate,
                         "text": candidate_text(row.template_text, row.occupation,
                                                row.participant, row.case, candidate)})
    return pd.DataFrame(rows)


def limit_occupations(templates: pd.DataFrame, n: int | None) -> pd.DataFrame:
    """Keep the first `n` occupations of the new templates (both sets), for quick runs."""
    if n is None:
        return templates
    if n < 1:
        raise DataValidationError("--limit must be at least 1", source="--limit",
                                  expected="a positive number of occupations", found=str(n))
    keep = list(dict.fromkeys(templates.loc[templates["template_set"] == "new", "occupation"]))[:n]
    return templates[templates["occupation"].isin(keep)].reset_index(drop=True)
