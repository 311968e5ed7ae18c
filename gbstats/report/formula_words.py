"""An lme4 formula in the words a paper's table note uses (issue 43: no code in captions or
notes; the formula itself goes to results.json and the report's methods section).

    >>> formula_in_words("rating ~ score_z * group + (1 + score_z | participant) + (1 | item)",
    ...                  {"rating": "the rating", "score_z": "the model's surprisal (z)",
    ...                   "group": "the group"}, {"participant": "participants", "item": "items"})
    "the rating regressed on the model's surprisal (z), the group and their interaction, with random intercepts and slopes for the model's surprisal (z) by participants, and random intercepts for items"

`variables` gives a variable's words and `groups` a grouping factor's (plural); a name with
neither is written with its underscores as spaces, so that no identifier reaches a table.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

_RANDOM = re.compile(r"\(\s*([^()|]*?)\s*\|\|?\s*([^()]+?)\s*\)")


def plain_words(name: str) -> str:
    """An unknown name as words: underscores and camelCase humps as spaces, lower case but
    for acronyms ("PSA")."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name.strip())
    words = re.sub(r"[_.]+", " ", spaced).split()
    return " ".join(w if len(w) > 1 and w.isupper() else w.lower() for w in words)


def _listed(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _variable(name: str, variables: Mapping[str, str]) -> str:
    return variables.get(name.strip(), plain_words(name))


def _group(name: str, groups: Mapping[str, str]) -> str:
    name = name.strip()
    if name in groups:
        return groups[name]
    parts = [groups.get(p.strip(), plain_words(p) + "s") for p in name.split(":")]
    return " within ".join(parts) if len(parts) > 1 else parts[0]


def _top_level_terms(rhs: str) -> list[str]:
    """`rhs` split at the + signs outside parentheses."""
    terms, depth, current = [], 0, ""
    for char in rhs:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "+" and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    return terms + [current.strip()]


_DISTRIBUTED = re.compile(r"^(?P<outer>[\w.]+)\s*\*\s*\((?P<inner>[^()]*)\)$")


def _fixed_words(rhs: str, variables: Mapping[str, str]) -> list[str]:
    words = []
    for term in _top_level_terms(rhs):
        if term in ("", "1", "0", "-1"):
            continue
        distributed = _DISTRIBUTED.match(term)
        if distributed:   # group * (a + b): group, a, b and group's interaction with each
            outer = _variable(distributed["outer"], variables)
            inner = [_variable(v, variables) for v in _top_level_terms(distributed["inner"])]
            words.append(f"{outer}, {_listed(inner)}, and the interaction of {outer} with each")
            continue
        if "*" in term:
            names = [_variable(v, variables) for v in term.split("*")]
            tail = "their interaction" if len(names) == 2 else "all their interactions"
            words.append(", ".join(names) + " and " + tail)
        elif ":" in term:
            words.append("the interaction of " + _listed([_variable(v, variables)
                                                          for v in term.split(":")]))
        else:
            words.append(_variable(term, variables))
    return words


def _random_words(lhs: str, group: str, variables: Mapping[str, str],
                  groups: Mapping[str, str]) -> str:
    terms = [t.strip() for t in lhs.split("+") if t.strip()]
    intercept = "0" not in terms and "-1" not in terms
    slopes = [_variable(t, variables) for t in terms if t not in ("0", "1", "-1")]
    who = _group(group, groups)
    if not slopes:
        return f"random intercepts for {who}"
    slope_text = f"slopes for {_listed(slopes)}"
    return (f"random intercepts and {slope_text} by {who}" if intercept
            else f"random {slope_text} by {who}")


def formula_in_words(formula: str, variables: Mapping[str, str] | None = None,
                     groups: Mapping[str, str] | None = None) -> str:
    """`formula` (lme4 syntax) as a clause: "<response> regressed on <fixed effects>, with
    <random effects>" (see the module doc)."""
    variables, groups = dict(variables or {}), dict(groups or {})
    lhs, sep, rhs = str(formula).partition("~")
    if not sep:
        raise ValueError(f"formula {formula!r} has no '~'; expected 'response ~ predictors'")
    random = [_random_words(inner, group, variables, groups)
              for inner, group in _RANDOM.findall(rhs)]
    fixed = _fixed_words(_RANDOM.sub("", rhs), variables)
    text = f"{_variable(lhs, variables)} regressed on {_listed(fixed) or 'an intercept only'}"
    if random:
        text += ", with " + (", and ".join(random) if len(random) < 3
                             else ", ".join(random[:-1]) + ", and " + random[-1])
    return text
