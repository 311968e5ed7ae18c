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

and its `run.py` ends with `main = STUDY.main`; `python -m studies` finds it
by its folder (studies.discovery). The runner (`run_study`) owns everything
else: parsing and the common flags, the score-cache flags (`run.cache`),
loading models (`run.model()`), mixed-model fits (`run.fit()`: lme4, the
statsmodels fallback without R, the Bayesian twin, the fit cache, warnings and
the reused-fits note; `run.record_fits()` also records each Bayesian twin's
convergence figures and priors), progress lines (`run.say()`), the notes
(`run.note()`, shown by `run.notes_markdown()`), exclusions and design
selections (`run.log`), provenance (with the command that re-runs it), the
CSV / JSON / LaTeX outputs, the closing message, and error handling: every
expected failure (a `GbstatsError`) becomes one line on stderr and exit code
2, never a traceback.

Steps receive the `Run` and the previous step's result (`load` receives
None); a step a study does not need is left out.
"""
from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from gbstats.blas import one_blas_thread
from gbstats.cli import print_interrupted
from gbstats.errors import GbstatsError
from gbstats.exclusions import ExclusionLog
from models.batching import on_scoring_compute, scoring_totals
from models.cache import rejected_snapshot, rejected_summary, stored_summary
from models.engine import add_engine_flags, engine_from_args
from studies.common import (DEFAULT_MODEL, add_common_flags, check_twin_budget,
                            dataset_checksums, load_model, model_record, ranked_model_names,
                            say, show_gbstats_progress, wants_model)

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
    # one line for the `python -m studies` listing (default: the description's first sentence)
    summary: str = ""
    score: Step = _unchanged
    fit: Step = _unchanged
    tables: Step = _unchanged
    datasets: tuple[str, ...] = ()
    add_flags: Callable[[argparse.ArgumentParser], None] | None = None
    model: str = "required"
    bayes: bool = True
    # False: the fit step fits nothing with R (lme4, blme), so the clean R server is not
    # started while the study scores (_execute); a fit that needs it still starts it
    r_fits: bool = True
    # True: the --engine / --ray-address flags, so the score step can run on Ray
    # (for studies whose scoring is large; models.engine)
    engine: bool = False
    # An action that replaces the run when its flag is given (e.g. --write-stimuli):
    # returns True when it did the work, and then nothing else runs.
    shortcut: Callable[["Run"], bool] | None = None
    # Many models against people (studies.ranking): --model may be repeated and --models
    # names a file; the first model gets the full analysis, and all are ranked.
    ranking: Any = None

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
                                multiple_models=self.model == "many", bayes=self.bayes,
                                ranking=self.ranking is not None)

    def main(self, argv: Sequence[str] | None = None, prog: str | None = None) -> int:
        """Run with these flags (default: the command line); the exit code. `prog` is the
        command that runs the study (default `python -m studies.<name>`)."""
        return run_study(self, argv, prog)

    def run_as_main(self):
        """`python -m <package>`: run with the command-line flags, then exit_process. The
        provenance records the module that was run (a study in another package too)."""
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        prog = f"python -m {spec.name.removesuffix('.__main__')}" if spec else None
        exit_process(self.main(prog=prog))


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
    # {what was fitted: {backend label: FitResult}}, from run.fit / run.record_fits
    fits: dict[str, dict] = field(default_factory=dict)
    # the command that runs this study, as a user types it (provenance adds the flags)
    command: str = ""
    # {what: its twin's convergence figures and priors} (record_fits), and
    # --prior-sensitivity's {what: default vs 2x-wider-prior table}
    bayes_twins: dict[str, dict] = field(default_factory=dict)
    prior_sensitivity: dict[str, pd.DataFrame] = field(default_factory=dict)
    # {R term name: its label in words} of the twins in prior_sensitivity (for its table)
    prior_sensitivity_terms: dict[str, str] = field(default_factory=dict)
    # where the time went (provenance "timings"): seconds per step, and one record per fit
    # (record_fits / record_twins), twins with their attempts
    step_seconds: dict[str, float] = field(default_factory=dict)
    fit_seconds: list[dict] = field(default_factory=list)
    # texts scored by a model and texts answered by the score cache during the run, and the
    # seconds of the scoring loops (models.batching.SCORING_TOTALS)
    scored: dict[str, float] = field(default_factory=dict)
    # seconds of those loops inside the score step (the rest ran in a later step)
    scoring_in_score_step_s: float = 0.0
    simulated: bool = False
    _lme4: bool | None = None
    # twins started early by start_twin, collected by run.fit (gbstats.mixed.background)
    _background: Any = None
    # {name: seconds the run waited for that background twin when run.fit collected it}
    _background_twins: dict[str, float] = field(default_factory=dict)

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
        if self.study.ranking is not None:
            return ranked_model_names(self.args)
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

    def check_prior_sensitivity(self, what: str, twin) -> None:
        """--prior-sensitivity: refit `twin` with priors twice as wide
        (`gbstats.mixed.fitting.prior_sensitivity`); the runner shows the table."""
        from gbstats.mixed.fitting import prior_sensitivity

        if twin.handle is None:
            self.note(f"prior sensitivity of {what}: its twin was reused from the fit cache, "
                      "which keeps no data to refit; rerun with --no-cache")
            return
        say(f"prior sensitivity: refitting the {what} twin with priors twice as wide")
        self.prior_sensitivity[what] = prior_sensitivity(twin, widen=2.0,
                                                         max_draws=self.max_draws)
        from gbstats.report.model_table import fit_term_labels

        self.prior_sensitivity_terms.update(fit_term_labels(twin))

    def lme4_available(self, skipped: str = "the lme4 fits", plural: bool = True) -> bool:
        """Whether R/lme4 can be used; if not, one note says what was skipped (once per run)."""
        if self._lme4 is None:
            from gbstats.mixed.engines.lme4 import available

            self._lme4 = bool(available())
            if not self._lme4:
                self.note(LME4_MISSING.format(skipped=skipped, verb="were" if plural else "was"))
        return self._lme4

    # -- mixed models --------------------------------------------------------------
    def fit(self, formula: str, data: pd.DataFrame, *, name: str, family: str = "gaussian",
            backends: Sequence[str] = ("lme4",), twin: bool | None = None,
            contrasts: Mapping | None = None, optimizer: str | None = None,
            priors: Mapping | None = None, draws: int | None = None, seed: int | None = None,
            loo: bool = True, target_accept: float | None = None) -> dict:
        """Fit `formula` on `data`: {backend label: FitResult}, in stack_fits' order.

        Each of `backends` ("lme4", "statsmodels"; empty for the twin only),
        then the Bayesian twin ("pymc") when `twin` (default: unless
        --no-bayes). Without R, "lme4" becomes "statsmodels" where statsmodels
        can fit the model (gaussian, one grouping factor) and is skipped
        otherwise, with a note either way. Fits go through the fit cache with
        the run's flags (--no-cache, --cache-dir). The warnings go to the
        report, labelled with `name`; the runner adds the reused-fits note. `draws` (default
        --draws) and `target_accept` (default the sampler's) set the twin's first attempt, for a
        model whose posterior is known to need more (its refits go on from there).
        """
        from gbstats.mixed.fitting import fit_bayes_twin, fit_with_twin

        if name in self.fits:
            raise ValueError(f"run.fit: the name {name!r} is already used by another fit of "
                             f"this run; expected one name per fit (it labels the warnings)")
        twin = self.bayes if twin is None else twin
        chosen = self.frequentist_backends(formula, family, list(backends), name)
        engines = chosen + (["pymc"] if twin else [])
        if not engines:
            return self.record_fits(name, {})
        self.say(f"      fitting {name}: {formula} ({', '.join(engines)})")
        options = self._twin_options(family, contrasts, priors, draws, seed, loo, target_accept)
        started = (self._background.take(name, fit_bayes_twin, formula, data, options)
                   if self._background is not None and twin else None)
        if started is not None:
            started = WaitTimed(started)
        fits = fit_with_twin(formula, data, backends=chosen, family=family, bayes=twin,
                             draws=options["draws"], seed=options["seed"], loo=loo,
                             optimizer=optimizer, contrasts=contrasts, priors=priors,
                             twin_started=started, max_draws=options["max_draws"],
                             target_accept=target_accept, **self.cache)
        if started is not None:
            self._background_twins[name] = started.waited
        if twin:
            self.say(f"      {name}: fitted")
        return self.record_fits(name, fits)

    def start_twin(self, formula: str, data: pd.DataFrame, *, name: str,
                   family: str = "gaussian", contrasts: Mapping | None = None,
                   priors: Mapping | None = None, draws: int | None = None,
                   seed: int | None = None, loo: bool = True,
                   target_accept: float | None = None) -> None:
        """Start now, in a worker thread, the Bayesian twin that a later
        `run.fit(formula, data, name=name, ...)` with the same arguments will collect
        (nothing without the twin: --no-bayes). Its compiling and sampling then overlap
        with what the run does in between (gbstats.mixed.background says why); the
        numbers are those of a twin fitted in place. run.fit refuses a twin started with
        other inputs than its own."""
        from gbstats.mixed.background import BackgroundFits
        from gbstats.mixed.fitting import fit_bayes_twin

        if not self.bayes:
            return
        if self._background is None:
            self._background = BackgroundFits()
        self._background.start(name, fit_bayes_twin, formula, data,
                               **self._twin_options(family, contrasts, priors, draws, seed,
                                                    loo, target_accept), **self.cache)

    def twin(self, formula: str, data: pd.DataFrame, *, name: str, family: str = "gaussian",
             contrasts: Mapping | None = None, priors: Mapping | None = None,
             draws: int | None = None, seed: int | None = None, loo: bool = True,
             target_accept: float | None = None):
        """The Bayesian twin of `formula` alone (a FitResult), *not recorded*: for a study
        that records it itself with `record_fits`, e.g. after renaming its terms. The twin
        `start_twin` started under `name` with these arguments when there is one (the wait
        for it is timed), else fitted now; through the fit cache either way."""
        from gbstats.mixed.fit_cache import cached_fit
        from gbstats.mixed.fitting import fit_bayes_twin

        options = self._twin_options(family, contrasts, priors, draws, seed, loo, target_accept)
        started = (self._background.take(name, fit_bayes_twin, formula, data, options)
                   if self._background is not None else None)
        if started is None:
            return cached_fit(fit_bayes_twin, formula, data, **options, **self.cache)
        started = WaitTimed(started)
        try:
            return started.result()
        finally:
            self._background_twins[name] = started.waited

    def _twin_options(self, family, contrasts, priors, draws, seed, loo,
                      target_accept=None) -> dict:
        from gbstats.mixed.fitting import twin_options

        return twin_options(family=family, contrasts=contrasts, priors=priors, loo=loo,
                            draws=getattr(self.args, "draws", 1000) if draws is None else draws,
                            seed=self.seed if seed is None else seed,
                            max_draws=self.max_draws, target_accept=target_accept)

    @property
    def max_draws(self) -> int | None:
        """--max-draws: every twin's refit budget of draws per chain (None: the default)."""
        return getattr(self.args, "max_draws", None)

    def cancel_background_fits(self) -> None:
        """Forget the twins started and not yet collected (a run that stops early)."""
        if self._background is not None:
            self._background.cancel()

    def background_fits_left(self) -> None:
        """At the end of the fit steps: every twin started was collected by run.fit or
        run.twin (a study's own mistake otherwise: one sampled for nothing)."""
        if self._background is not None and self._background.pending():
            left = self._background.pending()
            self._background.cancel()
            raise ValueError(f"twins started with run.start_twin and never collected by "
                             f"run.fit or run.twin: {', '.join(left)}")

    def frequentist_backends(self, formula: str, family: str, wanted: list[str],
                             name: str) -> list[str]:
        """`wanted`, with lme4 replaced (or dropped, noted) when R/lme4 is absent: the
        backends run.fit will fit (a study that needs them before the fit asks here, and
        passes them to run.fit, which then notes nothing again)."""
        if "lme4" not in wanted or self.lme4_available("the lme4 fits"):
            return wanted
        rest = [b for b in wanted if b != "lme4"]
        from gbstats.mixed.engines.statsmodels import unsupported_reason
        from gbstats.mixed.formula import parse_formula

        reason = unsupported_reason(parse_formula(formula), family)
        if reason is None and "statsmodels" not in rest:
            self.note(f"{name}: fitted with statsmodels instead of lme4 (REML, Wald tests)")
            return rest + ["statsmodels"]
        if reason is not None:
            self.note(f"{name}: no lme4 fit, and statsmodels cannot fit it ({reason})")
        return rest

    def record_fits(self, name: str, fits: Mapping) -> dict:
        """Fits of one model, {backend label: FitResult}, made by run.fit or by a gbstats
        function that fits for the study: their warnings go to the report's Warnings
        section, the reused-fits note names them, and each Bayesian twin among them goes
        to results.json's "bayes_twins" and the report's "Bayesian twins" section
        (convergence figures and priors, `gbstats.mixed.fitting.twin_record`)."""
        from gbstats.mixed.fitting import fit_warnings

        INTERRUPTS.check()  # a Ctrl-C that R swallowed during these fits stops the run here
        self.fits[name] = dict(fits)
        self.warn(fit_warnings(fits, name))
        self.record_twins(name, fits)
        return self.fits[name]

    def record_twins(self, name: str, fits: Mapping) -> None:
        """The Bayesian twins among `fits` (the part of `record_fits` for a study that
        collects warnings itself): results.json's "bayes_twins", the report's "Bayesian
        twins" section, and --prior-sensitivity's refit of each. The seconds of every fit
        in `fits`, twin or not, go to the time split (provenance "timings")."""
        from gbstats.mixed.fitting import BAYES_BACKEND, bayes_twins_of, twin_record

        self.fit_seconds += [fit_timing(name, label, fit, background=(
                                 label == BAYES_BACKEND and name in self._background_twins),
                                 waited=self._background_twins.get(name))
                             for label, fit in fits.items()]
        for label, twin in bayes_twins_of(fits).items():
            if "rhat_max" not in twin.fit_stats:
                continue
            key = name if label == BAYES_BACKEND else f"{name} [{label}]"
            self.bayes_twins[key] = twin_record(twin)
            if getattr(self.args, "prior_sensitivity", False):
                self.check_prior_sensitivity(key, twin)

    # -- progress --------------------------------------------------------------
    @staticmethod
    def say(message: str) -> None:
        """A progress line on stderr with the time elapsed: before every long step (scoring,
        a bootstrap, a Bayesian fit), so a run is never silent for a minute."""
        say(message)

    # -- outputs besides the report ----------------------------------------------
    def write_csv(self, name: str, table: pd.DataFrame, sep: str = ",") -> None:
        """Write `table` to <out>/<name> with the report (CSV or, with sep="\\t", TSV)."""
        self.csv_outputs[name] = (table, sep)

    def add_provenance(self, **values) -> None:
        """Study-specific entries of results.json's provenance (flags that shaped the run)."""
        self.provenance_extra.update(values)

    def add_data_files(self, paths: Sequence) -> None:
        """Checksums of files outside the dataset registry (a --human or --predictions file)."""
        from gbstats.report.provenance import file_checksums

        self.data_files.update(file_checksums([p for p in paths if p]))


class WaitTimed:
    """A started fit (a Future) that records how long its `result()` waited."""

    def __init__(self, future):
        self.future, self.waited = future, 0.0

    def result(self):
        began = time.perf_counter()
        try:
            return self.future.result()
        finally:
            self.waited += time.perf_counter() - began


def fit_timing(name: str, label: str, fit, background: bool = False,
               waited: float | None = None) -> dict:
    """What one fit cost (`Run.fit_seconds`): its wall time (0 when reused from the fit
    cache), whether it ran in the background (`Run.start_twin`: its seconds overlap with
    the run's other work), and for a Bayesian twin each attempt's draws, seconds and ESS
    per second."""
    stats = fit.fit_stats
    reused = bool(stats.get("reused_from_cache"))
    record = {"name": name, "backend": label, "bayes": getattr(fit, "backend", None) == "bambi",
              "reused": reused, "seconds": 0.0 if reused else stats.get("seconds"),
              "background": background}
    if background:
        record["waited"] = round(waited or 0.0, 3)
    if record["bayes"] and "attempts" in stats:
        record["stopped_by"] = stats.get("stopped_by")
        record["attempts"] = [
            {k: a.get(k) for k in ("n_draws", "n_tune", "seconds", "sampling_seconds",
                                   "rhat_max", "ess_bulk_min", "ess_tail_min", "divergences",
                                   "converged")}
            | {"ess_bulk_per_second": (a["ess_bulk_min"] / a["seconds"]
                                       if a.get("seconds") else None)}
            for a in stats["attempts"]]
    return record


def timings_record(run: "Run") -> dict:
    """results.json's provenance "timings": seconds per step, per fit, and the split a
    reader (benchmarks/study_times.py) needs: scoring, frequentist fits, twins, the rest."""
    fits = run.fit_seconds
    frequentist = sum(f["seconds"] or 0.0 for f in fits if not f["bayes"])
    # twins fitted in place take their seconds from the steps; those started in the
    # background overlap with the steps, and only the time the run waited for them counts
    twins = sum((f.get("waited", 0.0) if f.get("background") else f["seconds"]) or 0.0
                for f in fits if f["bayes"])
    background = sum(f["seconds"] or 0.0 for f in fits if f["bayes"] and f.get("background"))
    steps = dict(run.step_seconds)
    timed = sum(steps.values())
    # the score step (model loading included), and the scoring loops that ran in a later
    # step: cognitive_bias scores its language-model side while it fits
    later = max(0.0, run.scored.get("seconds", 0.0) - run.scoring_in_score_step_s)
    scoring = steps.get("score", 0.0) + later
    return {"steps": steps, "scoring_s": scoring, "scoring_after_score_step_s": later,
            "frequentist_fits_s": frequentist,
            "twins_s": twins, "background_twins_s": background,
            "rest_s": max(0.0, timed - scoring - frequentist - twins),
            "scored_texts": run.scored.get("computed", 0),
            "cached_texts": run.scored.get("cache_hits", 0),
            "forward_batches": run.scored.get("batches", 0), "fits": fits}


def report_prior_sensitivity(report, tables: Mapping[str, pd.DataFrame],
                             terms: Mapping[str, str] | None = None) -> None:
    """The --prior-sensitivity table: every twin's default and 2x-wider-prior summaries."""
    columns = next(iter(tables.values())).columns
    report.table("prior_sensitivity", pd.concat(
        [t.assign(model=what) for what, t in tables.items()], ignore_index=True)[
            ["model", *columns]],
        "Prior sensitivity of the Bayesian twins: default priors against priors twice as wide",
        values={"term": dict(terms or {})},
        labels={"model": "Model", "estimate": "Mean", "ci": "95% interval",
                "estimate_wide": "Mean, wide", "ci_wide": "95% interval, wide",
                "shift_in_sd": "Shift (SD)", "converged_wide": "Wide converged"},
        groups="model",
        notes=["Posterior mean and 95% interval with the default priors and with every default "
               "prior twice as wide; shift: the difference of the means in posterior SDs of the "
               "default fit. Default priors: rstanarm's autoscaled weakly-informative priors "
               "(see Bayesian twins); the wide fit multiplies every scale by 2."])


# The exit code of a run stopped by Ctrl-C (SIGINT), as a shell reports it: 128 + 2.
EXIT_INTERRUPTED = 130
# Below this many replicates a 95% percentile interval's ends are the smallest and the
# largest replicate: its quantiles 0.025 and 0.975 need 0.025 * (B + 1) >= 1, B >= 39.
MIN_BOOT_FOR_95 = 39


def input_and_cache_places(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(flag, path) of every file or folder the run reads or writes besides --out: each
    flag whose value names an existing path (--human, --stimuli, --predictions, --model
    as a folder...), the score and fit cache (unless --no-cache) and the data directory,
    named as the user set them (flag, environment variable, or the default)."""
    from gbstats.config import ENV_CACHE_DIR, ENV_DATA_DIR, resolve_cache_dir, resolve_data_dir

    places = []
    for dest, value in vars(args).items():
        if dest == "out" or dest.startswith("_"):  # "_": the parser's own bookkeeping
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, (str, os.PathLike)) and os.fspath(item) \
                    and os.path.lexists(item):
                places.append((f"--{dest.replace('_', '-')}", os.fspath(item)))

    def named(flag: str, env: str, given, what: str) -> str:
        return flag if given else (f"${env}" if os.environ.get(env) else what)

    if not getattr(args, "no_cache", False):
        cache_dir = getattr(args, "cache_dir", None)
        places.append((named("--cache-dir", ENV_CACHE_DIR, cache_dir,
                             "the score and fit cache"),
                       cache_dir or str(resolve_cache_dir(cache_dir))))
    data_dir = getattr(args, "data_dir", None)
    places.append((named("--data-dir", ENV_DATA_DIR, data_dir, "the data directory"),
                   data_dir or str(resolve_data_dir(data_dir))))
    return places


def check_resampling_flags(run: "Run") -> None:
    """--n-boot 1 gives a "95% CI" of zero width and a p-value of 1 whatever the data:
    refused. Fewer than 39 replicates (or 19 permutations) are allowed for quick runs,
    with a note in the report saying what they cannot give."""
    from gbstats.errors import DataValidationError

    n_boot = getattr(run.args, "n_boot", None)
    if n_boot is not None:
        if n_boot < 2:
            raise DataValidationError(
                "too few bootstrap replicates: with fewer than 2 an interval has zero width "
                "and a bootstrap p-value is 1 whatever the data", source="--n-boot",
                expected=f"2 or more ({MIN_BOOT_FOR_95} or more for a 95% interval whose "
                         "ends are not simply the extreme replicates; the default for "
                         "results you report)", found=str(n_boot))
        if n_boot < MIN_BOOT_FOR_95:
            run.note(f"--n-boot {n_boot} is a quick run: below {MIN_BOOT_FOR_95} replicates a "
                     "95% percentile interval is bounded by the smallest and largest "
                     "replicate, so it is too narrow (its coverage is below 95%), and a "
                     f"bootstrap p-value cannot be below 1/{n_boot + 1} = "
                     f"{1 / (n_boot + 1):.3f}. Rerun with the default for results you report.")
    n_perm = getattr(run.args, "n_perm", None)
    if n_perm is not None:
        if n_perm < 1:
            raise DataValidationError("a permutation test needs at least one permutation",
                                      source="--n-perm", expected="1 or more",
                                      found=str(n_perm))
        if n_perm < 19:
            run.note(f"--n-perm {n_perm} is a quick run: a permutation p-value cannot be "
                     f"below 1/{n_perm + 1} = {1 / (n_perm + 1):.3f}, so no test can reach "
                     "p < .05. Rerun with the default for results you report.")


class InterruptWatch:
    """Ctrl-C must stop a run, but two libraries a study calls swallow it: R (through rpy2,
    whose event callback catches the KeyboardInterrupt, prints "Exception ignored" and
    lets the fit finish, or fail at R's next call) and the samplers (handled in
    gbstats.mixed.bayes). While a run is watched, every SIGINT is recorded before the
    KeyboardInterrupt is raised, and a KeyboardInterrupt that a C callback could not
    raise is recorded and not printed; `check()`, between the steps, raises it again."""

    def __init__(self):
        self.seen = False
        self.terminated = False
        self.active = False
        self._old_handler = self._old_hook = self._old_term = None

    def __enter__(self):
        self.seen, self.terminated, self.active = False, False, True
        self.arm()
        self._old_hook = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        return self

    def arm(self) -> None:
        """(Re)install the recording SIGINT handler: R's start-up resets SIGINT's."""
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, self._on_sigint)
            if self._old_handler is None:
                self._old_handler = previous
            # SIGTERM (timeout, a scheduler's time limit, docker stop) stops the run as
            # Ctrl-C does: the R server and its fit are ended, one line is printed
            previous = signal.signal(signal.SIGTERM, self._on_sigterm)
            if self._old_term is None:
                self._old_term = previous

    def _on_sigint(self, signum, frame):
        self.seen = True
        raise KeyboardInterrupt

    def _on_sigterm(self, signum, frame):
        from gbstats.cli import Terminated

        self.seen = self.terminated = True
        raise Terminated("terminated (SIGTERM)")

    def _unraisable(self, unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            self.seen = True
            return
        self._old_hook(unraisable)

    def check(self) -> None:
        """Raise the KeyboardInterrupt a library swallowed, if any; then re-arm."""
        if not self.active:  # outside a run (a notebook calling run.record_fits)
            return
        if self.seen:
            raise KeyboardInterrupt("interrupted while a library held the signal")
        self.arm()

    def __exit__(self, *exc) -> bool:
        import signal
        import threading

        self.active = False
        sys.unraisablehook = self._old_hook
        if threading.current_thread() is threading.main_thread():
            if self._old_handler is not None:
                signal.signal(signal.SIGINT, self._old_handler)
            if self._old_term is not None:
                signal.signal(signal.SIGTERM, self._old_term)
        self._old_handler = self._old_term = None
        return False


INTERRUPTS = InterruptWatch()


def interrupted_summary(out) -> str:
    """What a run stopped by Ctrl-C kept, and how to go on (one sentence)."""
    from gbstats.mixed.fit_cache import fit_cache_stored

    kept = [part for part in (stored_summary(), fit_cache_stored()) if part]
    what = (" and ".join(kept) + " kept in the cache" if kept
            else "nothing was computed into the cache yet")
    return (f"{what}; {out} was not written or changed; rerun the same command to resume "
            f"(what the cache holds is not computed again)")


def _execute(study: Study, args: argparse.Namespace, command: str) -> dict | None:
    from gbstats.mixed import fit_cache
    from gbstats.mixed.clean_process import clean_fits, start_server_early
    from gbstats.mixed.fit_cache import fit_cache_snapshot, fit_cache_store_failures
    from gbstats.mixed.fitting import reused_fits_note
    from gbstats.report.study_report import StudyReport
    from gbstats.report.files import check_output_folder, check_outside_output, staged_folder
    from gbstats.report.provenance import prefetch_r_versions, provenance

    run = Run(study, args, command=command)
    if study.shortcut is not None and study.shortcut(run):
        return None
    # An unwritable --out, one that holds files gbstats did not write, or an input or a
    # cache inside it, is found now, not after minutes of scoring and fitting.
    check_output_folder(run.out)
    check_outside_output(run.out, input_and_cache_places(args))
    # last: another study's report folder (the more specific refusals above come first)
    check_output_folder(run.out, study=run.study.name)
    check_resampling_flags(run)
    ranked = run.model_names() if study.ranking is not None else []  # refused now, not later
    if len(ranked) > 1:
        for name in ranked:  # a model that cannot be loaded fails now, not after the study
            run.model(name)
    prefetch_r_versions()  # R's versions for the provenance, asked for while the run works
    stores_before = fit_cache_snapshot()
    scored_before = scoring_totals()
    # The clean R server (gbstats.mixed.clean_process) takes about 8 s of one core to start.
    # It starts when the study has texts to score (on_scoring_compute), so that its start
    # overlaps with the scoring; in a run whose scores all come from the cache, at the
    # first R fit the fit cache does not hold: not at all where every fit is cached or the
    # run stops before its fits, and never early in a study that fits nothing with R
    # (Study.r_fits). When every run started it before loading, 21 of the 32 servers that a
    # make test's first eight minutes started fitted nothing, at about 7 s of CPU each
    # (issue 41).
    overlap = ExitStack()
    if study.r_fits:
        overlap.enter_context(on_scoring_compute(start_server_early))
    with overlap:
        started = time.perf_counter()
        state = study.load(run, None)
        run.step_seconds["load"] = time.perf_counter() - started
        cache_counts = rejected_snapshot()
        started, scoring_before = time.perf_counter(), scoring_totals()["seconds"]
        with engine_from_args(args):  # the local engine unless the study has --engine ray
            state = study.score(run, state)
        run.step_seconds["score"] = time.perf_counter() - started
        run.scoring_in_score_step_s = scoring_totals()["seconds"] - scoring_before
        INTERRUPTS.check()
        # every model on the study's items, ranked against people: needs the scores and the
        # people's data, not the fits (which are the first model's only)
        ranking = None
        if len(ranked) > 1:
            from studies.ranking import rank_many

            say(f"ranking {len(ranked)} models against people")
            started = time.perf_counter()
            with engine_from_args(args):
                ranking = rank_many(run, state, study.ranking, ranked)
            run.step_seconds["ranking"] = time.perf_counter() - started
    rejected = rejected_summary(since=cache_counts)
    if rejected:
        run.note(f"Score cache: {rejected}")
    INTERRUPTS.check()
    damaged_fits = len(fit_cache.rejected)
    # R fits in a clean process: the same numbers whichever way the scores arrived
    with clean_fits():
        started = time.perf_counter()
        try:
            state = study.fit(run, state)
        except BaseException:
            run.cancel_background_fits()  # an early stop: nothing left to start
            raise
        run.background_fits_left()
        run.step_seconds["fit"] = time.perf_counter() - started
        INTERRUPTS.check()
        started = time.perf_counter()
        state = study.tables(run, state)
        run.step_seconds["tables"] = time.perf_counter() - started
    INTERRUPTS.check()
    for note in reused_fits_note(run.fits):
        run.note(note)
    damaged = fit_cache.rejected_note(since=damaged_fits)
    if damaged:
        run.note(damaged)
    not_stored = fit_cache_store_failures(since=stores_before)
    if not_stored:
        run.say(f"note: {not_stored}")
        run.note(not_stored)

    say("writing the report")
    started = time.perf_counter()
    # Everything is written into a hidden sibling folder that replaces --out at the end,
    # so a crash mid-write leaves the previous outputs whole (never a mix of two runs).
    with staged_folder(run.out, study.name) as staging:
        report = StudyReport(study.name, staging, study.title, simulated=run.simulated,
                             cache=run.cache)
        study.report(run, report, state)
        if ranking is not None:
            from gbstats.report.ranking_report import write_ranking

            write_ranking(report, ranking, statistic=study.ranking.statistic,
                          simulated=run.simulated or ranking.settings["simulated"])
        if run.prior_sensitivity:
            report_prior_sensitivity(report, run.prior_sensitivity, run.prior_sensitivity_terms)
        report.bayes_twins(run.bayes_twins)
        report.warnings(run.warnings)
        report.exclusions(run.log)
        for name, (table, sep) in run.csv_outputs.items():
            table.to_csv(staging / name, sep=sep, index=False)
        data_files = dataset_checksums(list(study.datasets), args.data_dir)
        data_files.update(run.data_files)
        run.step_seconds["report"] = time.perf_counter() - started  # up to writing it
        run.scored = {k: v - scored_before[k] for k, v in scoring_totals().items()}
        run.add_provenance(timings=timings_record(run))
        prov = provenance(study.name, argv=shlex.split(run.command), seed=args.seed,
                          models=run.models, data_files=data_files, extra=run.provenance_extra)
        written = report.write(prov)
    paths = {key: run.out / Path(path).relative_to(staging) for key, path in written.items()}
    say(f"wrote {paths['report']} and {paths['results']}")
    return paths


def run_study(study: Study, argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Parse the flags, run the steps, write the report; 0, or 2 with one clean message."""
    prog = prog or study.prog
    argv = sys.argv[1:] if argv is None else list(argv)
    args = None
    show_gbstats_progress()  # each Bayesian twin attempt, as a progress line
    try:
        with INTERRUPTS:
            args = study.build_parser(prog).parse_args(argv)
            check_twin_budget(args)
            # provenance records what a user types to run it again: `python -m studies.<name> ...`
            with one_blas_thread():  # the bootstraps and the twins' chains share the cores
                _execute(study, args, shlex.join([*shlex.split(prog), *argv]))
    except GbstatsError as exc:
        if not INTERRUPTS.seen:  # else R failing on the interrupt it was sent: not an error
            print(f"studies.{study.name}: error: {exc}", file=sys.stderr)
            return 2
        return _stopped(study, args)
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: one line on what was kept, not a traceback through torch, R
        # or PyMC
        return _stopped(study, args)
    return 0


def _stopped(study, args) -> int:
    """The one line of a run stopped by Ctrl-C or SIGTERM, and its exit code."""
    from gbstats.cli import EXIT_TERMINATED

    out = getattr(args, "out", "the output folder")
    how = "terminated (SIGTERM)" if INTERRUPTS.terminated else "interrupted"
    print_interrupted(f"\nstudies.{study.name}: {how}: {interrupted_summary(out)}")
    return EXIT_TERMINATED if INTERRUPTS.terminated else EXIT_INTERRUPTED


def exit_process(code: int):
    """End `python -m studies.<name>` with `code`, skipping the interpreter's teardown.

    Once the report is written there is nothing left to do, but tearing down
    torch, numba and R object by object took 2-3 s of a 45 s main job
    (benchmarks/singular_they.py). Every output is written and closed by then;
    the standard streams and logging are flushed here. A running Ray instance
    is left to the normal exit, whose hooks stop its processes.
    """
    if code in (EXIT_INTERRUPTED, 143):  # a second Ctrl-C or SIGTERM while it ends: no traceback
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    clean = sys.modules.get("gbstats.mixed.clean_process")
    if clean is not None:
        # os._exit skips atexit: end the R server (and remove its temporary folder) here
        clean._close_server(abandon=True)
    ray = sys.modules.get("ray")
    if ray is not None and getattr(ray, "is_initialized", lambda: True)():
        sys.exit(code)
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)

