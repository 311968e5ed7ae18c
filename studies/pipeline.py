"""The study contract and the one runner every study runs on.

A study declares what is particular to it, as a `Study`:

    STUDY = Study(
        name="my_study", title="Report title", description="--help text",
        datasets=("watson2023",),            # registry names: checksums go to provenance
        add_flags=add_flags,                  # the study's own --flags (optional)
        model="optional",                     # "required", "optional" (--model none) or "many"
        bayes=True,                           # the --no-bayes / --draws flags
        load=load, score=score, fit=fit, tables=tables,   # run -> state -> state
        report=report)                        # (run, StudyReport, state): only writes

and its `run.py` ends with `main = STUDY.main`. The runner (`run_study`) owns
everything else: parsing and the common flags, the score-cache flags
(`run.cache`), loading models (`run.model()`), the lme4 availability notice
(`run.lme4_available()`, one message per run), the notes (`run.note()`,
shown by `run.notes_markdown()`), fit warnings (`run.warn()`; `run.record_fits()`
also records each Bayesian twin's convergence figures and priors), exclusions
(`run.log`), provenance, the CSV / JSON / LaTeX outputs, the closing message,
and error handling: every expected failure (a `GbstatsError`) becomes one
line on stderr and exit code 2, never a traceback.

Steps receive the `Run` and the previous step's result (`load` receives
None); a step a study does not need is left out.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from gbstats.errors import GbstatsError
from gbstats.exclusions import ExclusionLog
from models.engine import add_engine_flags, engine_from_args
from studies.common import (DEFAULT_MODEL, add_common_flags, dataset_checksums, load_model,
                            model_record, say, wants_model)

Step = Callable[["Run", Any], Any]

MODEL_CHOICES = ("required", "optional", "many")

LME4_MISSING = ("R/lme4 is not installed, so {skipped} {verb} skipped. Install R and lme4 with "
                "`make setup` as root, or apt-get install r-base-core r-cran-lme4 "
                "r-cran-lmertest (and pip install pymer4==0.8.2 rpy2==3.5.17).")


def _unchanged(run: "Run", state: Any) -> Any:
    return state


@dataclass(frozen=True)
class Study:
    """What a study declares; the runner does the rest (see the module docstring)."""
    name: str
    title: str
    description: str
    load: Step
    report: Callable[["Run", Any, Any], None]
    score: Step = _unchanged
    fit: Step = _unchanged
    tables: Step = _unchanged
    datasets: tuple[str, ...] = ()
    add_flags: Callable[[argparse.ArgumentParser], None] | None = None
    model: str = "required"
    bayes: bool = True
    # True: the --engine / --ray-address flags, so the score step can run on Ray
    # (for studies whose scoring is large; models.engine)
    engine: bool = False
    # An action that replaces the run when its flag is given (e.g. --write-stimuli):
    # returns True when it did the work, and then nothing else runs.
    shortcut: Callable[["Run"], bool] | None = None

    def __post_init__(self):
        if self.model not in MODEL_CHOICES:
            raise ValueError(f"Study {self.name!r}: model={self.model!r}, expected one of "
                             f"{', '.join(MODEL_CHOICES)}")

    @property
    def prog(self) -> str:
        return f"python -m studies.{self.name}"

    def build_parser(self, prog: str | None = None) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(prog=prog or self.prog, description=self.description)
        if self.add_flags is not None:
            self.add_flags(parser)
        if self.engine:
            add_engine_flags(parser)
        return add_common_flags(parser, self.name, model_none=self.model == "optional",
                                multiple_models=self.model == "many", bayes=self.bayes)

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Run with these flags (default: the command line); the exit code."""
        return run_study(self, argv)

    def run_as_main(self):
        """`python -m studies.<name>`: run with the command-line flags, then exit_process."""
        exit_process(self.main())


@dataclass
class Run:
    """One run of a study: its flags, and what the steps tell the runner along the way."""
    study: Study
    args: argparse.Namespace
    log: ExclusionLog = field(default_factory=ExclusionLog)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    models: list[dict] = field(default_factory=list)
    data_files: dict[str, str] = field(default_factory=dict)
    provenance_extra: dict[str, Any] = field(default_factory=dict)
    csv_outputs: dict[str, tuple[pd.DataFrame, str]] = field(default_factory=dict)
    bayes_twins: dict[str, dict] = field(default_factory=dict)
    prior_sensitivity: dict[str, pd.DataFrame] = field(default_factory=dict)
    simulated: bool = False
    _lme4: bool | None = None

    # -- flags every study has -------------------------------------------------
    @property
    def out(self) -> Path:
        return Path(self.args.out)

    @property
    def seed(self) -> int:
        return self.args.seed

    @property
    def bayes(self) -> bool:
        """True unless --no-bayes (always False for a study without Bayesian fits)."""
        return self.study.bayes and not self.args.no_bayes

    @property
    def cache(self) -> dict:
        """The score-cache keywords every scoring function takes: use_cache, cache_dir."""
        return {"use_cache": not self.args.no_cache, "cache_dir": self.args.cache_dir}

    # -- models ----------------------------------------------------------------
    def model_names(self) -> list[str]:
        """The --model names (a list for `model="many"` studies)."""
        names = self.args.model
        if self.study.model == "many":
            names = names or [DEFAULT_MODEL]
            if len(set(names)) != len(names):
                from gbstats.errors import DataValidationError

                raise DataValidationError("a model is named twice", source="--model",
                                          expected="distinct model names", found=repr(names))
            return list(names)
        return [names] if wants_model(names) else []

    @property
    def wants_model(self) -> bool:
        return bool(self.model_names())

    def model(self, name: str | None = None):
        """Load the LanguageModel `name` (default: --model); recorded in the provenance."""
        lm = load_model(self.args, name)
        record = model_record(lm)
        if record not in self.models:
            self.models.append(record)
        return lm

    # -- what the report says besides the tables ---------------------------------
    def note(self, text: str) -> None:
        """A note shown under the report's design (a skipped part, a quick run...)."""
        self.notes.append(text)

    def notes_markdown(self, bullet: str = "- ") -> str:
        """The notes as a Markdown list after a blank line, or "" when there are none."""
        return ("\n\n" + "\n".join(f"{bullet}{n}" for n in self.notes)) if self.notes else ""

    def warn(self, warnings: Sequence[str]) -> None:
        """Fit warnings (convergence, singular fit, R-hat...) for the report's Warnings section."""
        self.warnings.extend(warnings)

    def record_fits(self, what: str, fits) -> None:
        """Fits of one model, {backend label: FitResult}: their warnings go to
        the report's Warnings section, and the Bayesian twin among them (if
        any) to results.json's "bayes_twins" and the report's "Bayesian twins"
        section (convergence figures and priors, `gbstats.mixed.fitting.twin_record`)."""
        from gbstats.mixed.fitting import BAYES_BACKEND, bayes_twins_of, fit_warnings, twin_record

        self.warn(fit_warnings(fits, what))
        for label, twin in bayes_twins_of(fits).items():
            if "rhat_max" not in twin.fit_stats:
                continue
            key = what if label == BAYES_BACKEND else f"{what} [{label}]"
            self.bayes_twins[key] = twin_record(twin)
            if getattr(self.args, "prior_sensitivity", False):
                self.check_prior_sensitivity(key, twin)

    def check_prior_sensitivity(self, what: str, twin) -> None:
        """--prior-sensitivity: refit `twin` with priors twice as wide
        (`gbstats.mixed.fitting.prior_sensitivity`); the runner shows the table."""
        from gbstats.mixed.fitting import prior_sensitivity

        if twin.handle is None:
            self.note(f"prior sensitivity of {what}: its twin was reused from the fit cache, "
                      "which keeps no data to refit; rerun with --no-cache")
            return
        say(f"prior sensitivity: refitting the {what} twin with priors twice as wide")
        self.prior_sensitivity[what] = prior_sensitivity(twin, widen=2.0)

    def lme4_available(self, skipped: str = "the lme4 fits", plural: bool = True) -> bool:
        """Whether R/lme4 can be used; if not, one note says what was skipped (once per run)."""
        if self._lme4 is None:
            from gbstats.mixed.engines.lme4 import available

            self._lme4 = bool(available())
            if not self._lme4:
                self.note(LME4_MISSING.format(skipped=skipped, verb="were" if plural else "was"))
        return self._lme4

    # -- outputs besides the report ----------------------------------------------
    def write_csv(self, name: str, table: pd.DataFrame, sep: str = ",") -> None:
        """Write `table` to <out>/<name> with the report (CSV or, with sep="\\t", TSV)."""
        self.csv_outputs[name] = (table, sep)

    def add_provenance(self, **values) -> None:
        """Study-specific entries of results.json's provenance (flags that shaped the run)."""
        self.provenance_extra.update(values)

    def add_data_files(self, paths: Sequence) -> None:
        """Checksums of files outside the dataset registry (a --human or --predictions file)."""
        from gbstats.report.outputs import file_checksums

        self.data_files.update(file_checksums([p for p in paths if p]))


def _execute(study: Study, args: argparse.Namespace) -> dict | None:
    from gbstats.report.outputs import StudyReport, provenance

    run = Run(study, args)
    if study.shortcut is not None and study.shortcut(run):
        return None
    state = study.load(run, None)
    with engine_from_args(args):  # the local engine unless the study has --engine ray
        state = study.score(run, state)
    state = study.fit(run, state)
    state = study.tables(run, state)

    say("writing the report")
    report = StudyReport(study.name, run.out, study.title, simulated=run.simulated)
    study.report(run, report, state)
    if run.prior_sensitivity:
        report.table("prior_sensitivity", pd.concat(
            [t.assign(model=what) for what, t in run.prior_sensitivity.items()],
            ignore_index=True)[["model", *run.prior_sensitivity[next(iter(run.prior_sensitivity))].columns]],
            "Prior sensitivity of the Bayesian twins: posterior mean and 95% interval with the "
            "default priors and with every default prior twice as wide (_wide); shift_in_sd = "
            "difference of the means in posterior SDs of the default fit",
            notes=["Default priors: rstanarm's autoscaled weakly-informative priors "
                   "(see Bayesian twins); the wide fit multiplies every scale by 2."])
    report.bayes_twins(run.bayes_twins)
    report.warnings(run.warnings)
    report.exclusions(run.log)
    run.out.mkdir(parents=True, exist_ok=True)
    for name, (table, sep) in run.csv_outputs.items():
        table.to_csv(run.out / name, sep=sep, index=False)
    data_files = dataset_checksums(list(study.datasets), args.data_dir)
    data_files.update(run.data_files)
    prov = provenance(study.name, seed=args.seed, models=run.models, data_files=data_files,
                      extra=run.provenance_extra)
    paths = report.write(prov)
    say(f"wrote {paths['report']} and {paths['results']}")
    return paths


def run_study(study: Study, argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Parse the flags, run the steps, write the report; 0, or 2 with one clean message."""
    args = study.build_parser(prog).parse_args(argv)
    try:
        _execute(study, args)
    except GbstatsError as exc:
        print(f"studies.{study.name}: error: {exc}", file=sys.stderr)
        return 2
    return 0


def exit_process(code: int):
    """End `python -m studies.<name>` with `code`, skipping the interpreter's teardown.

    Once the report is written there is nothing left to do, but tearing down
    torch, numba and R object by object took 2-3 s of a 45 s main job
    (benchmarks/singular_they.py). Every output is written and closed by then;
    the standard streams and logging are flushed here. A running Ray instance
    is left to the normal exit, whose hooks stop its processes.
    """
    ray = sys.modules.get("ray")
    if ray is not None and getattr(ray, "is_initialized", lambda: True)():
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)

