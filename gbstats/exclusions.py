"""Counting every row a loader or study leaves out, with its reason.

Nothing in gbstats is dropped silently: code that excludes rows does it through
an `ExclusionLog`, and reports print the log.

Two kinds of leaving out are kept apart, because a reader judges them
differently. An *exclusion* (`drop`, `record`) removes data the analysis
wanted but could not use (a failed attention check, a form that could not be
scored). A *design selection* (`select`) is the analysis choosing its subset
(keep the name conditions, use the first N frames): nothing is lost, and a
report must not present it as data loss.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


EXCLUDED = "excluded"
SELECTED = "selected by design"
KINDS = (EXCLUDED, SELECTED)


@dataclass(frozen=True)
class Exclusion:
    reason: str
    n: int
    unit: str = "rows"      # "rows", "trials", "participants", ...
    stage: str = ""         # which loader or step excluded them
    kind: str = EXCLUDED    # EXCLUDED, or SELECTED: left out by the design's choice

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"exclusion kind {self.kind!r}: expected one of {', '.join(KINDS)}")

    def as_record(self) -> dict:
        return {"stage": self.stage, "reason": self.reason, "n": self.n, "unit": self.unit,
                "kind": self.kind}


@dataclass
class ExclusionLog:
    """An append-only list of exclusions, in the order they were applied."""

    entries: list[Exclusion] = field(default_factory=list)

    def record(self, reason: str, n: int, unit: str = "rows", stage: str = "",
               kind: str = EXCLUDED) -> None:
        self.entries.append(Exclusion(reason, int(n), unit, stage, kind))

    def drop(self, df: pd.DataFrame, mask, reason: str, unit: str = "rows",
             stage: str = "") -> pd.DataFrame:
        """Return `df` without the rows where `mask` is true, and log how many were excluded."""
        return self._leave_out(df, mask, reason, unit, stage, EXCLUDED)

    def select(self, df: pd.DataFrame, mask, reason: str, unit: str = "rows",
               stage: str = "") -> pd.DataFrame:
        """Like `drop`, for rows the design leaves out (`mask` true): logged as selected by design,
        not as excluded (e.g. "not a name condition", "frame beyond --frames")."""
        return self._leave_out(df, mask, reason, unit, stage, SELECTED)

    def _leave_out(self, df, mask, reason, unit, stage, kind) -> pd.DataFrame:
        mask = pd.Series(mask, index=df.index).fillna(False).astype(bool)
        self.record(reason, int(mask.sum()), unit, stage, kind)
        return df.loc[~mask]

    def extend(self, other: "ExclusionLog") -> None:
        self.entries.extend(other.entries)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([e.as_record() for e in self.entries],
                            columns=["stage", "reason", "n", "unit", "kind"])

    def to_records(self) -> list[dict]:
        return [e.as_record() for e in self.entries]
