"""The study runner: discovery, did-you-mean, clean errors, outputs it owns."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from gbstats.errors import DataValidationError, GbstatsError, JoinError
from studies.__main__ import main as studies_main
from studies.pipeline import Study
from studies.discovery import discover, get_study

STUDIES = discover()


def test_every_found_study_declares_itself_under_its_name():
    assert {"singular_they", "example_they", "winopron"} <= set(STUDIES)
    for name in STUDIES:
        assert get_study(name).name == name


def test_listing_reads_summaries_without_importing_the_studies():
    """The summaries come from each run.py's source; equal to what the Study declares."""
    from studies.discovery import summary_of

    for name, entry in STUDIES.items():
        assert entry.summary and entry.summary == summary_of(get_study(name)), name


def test_unknown_study_suggests_the_close_name(capsys):
    assert studies_main(["singular_tehy"]) == 2
    err = capsys.readouterr().err
    assert "Did you mean 'singular_they'?" in err and "Traceback" not in err
    # and how to make a new study known
    assert "studies/<name>/" in err and "run.py" in err and "gbstats.studies" in err


def test_listing_names_every_study(capsys):
    assert studies_main([]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in STUDIES)


def _tiny_study(fail_with: Exception | None = None) -> Study:
    def load(run, _):
        run.note("a note")
        run.log.record("rows dropped for the test", 2, unit="rows", stage="test")
        if fail_with is not None:
            raise fail_with
        return pd.DataFrame({"x": [1.0, 2.0]})

    def report(run, report, table):
        report.section("Design", "tiny" + run.notes_markdown())
        report.table("x", table, "x")
        run.write_csv("x.csv", table)

    return Study(name="tiny", title="Tiny", description="a test study", model="optional",
                 bayes=False, load=load, report=report)


def test_runner_writes_report_results_csv_and_exclusions(tmp_path):
    out = tmp_path / "tiny"
    assert _tiny_study().main(["--model", "none", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["tables"]["x"] == [{"x": 1.0}, {"x": 2.0}]
    assert results["exclusions"][0]["n"] == 2
    assert (out / "x.csv").read_text().splitlines() == ["x", "1.0", "2.0"]
    assert "- a note" in (out / "report.md").read_text()


def test_a_study_runs_its_steps_on_one_blas_thread(tmp_path, monkeypatch):
    """numpy's and scipy's BLAS on one thread through every step (gbstats.blas: the
    bootstraps and the twins' chains share the cores), as before once the run ends."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from gbstats.blas import BLAS_THREAD_VARIABLES

    def blas_threads():
        # {library: threads}; a serial build (Debian's, which PyTensor loads in a process
        # that ran a Bayesian fit) always reports one
        return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
                if lib["user_api"] == "blas"}

    for variable in BLAS_THREAD_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    seen = []
    study = Study(name="tiny", title="Tiny", description="a test study", model="optional",
                  bayes=False, load=lambda run, _: seen.append(blas_threads()),
                  report=lambda run, report, state: seen.append(blas_threads()))
    # two threads going in (the test processes run on one: tests/conftest.py), so that a
    # runner that left them alone would fail
    with threadpool_limits(limits=2, user_api="blas"):
        going_in = blas_threads()
        assert 2 in going_in.values()
        assert study.main(["--model", "none", "--out", str(tmp_path / "t")]) == 0
        assert [set(threads.values()) for threads in seen] == [{1}, {1}]
        assert blas_threads() == going_in


@pytest.mark.parametrize("error", [DataValidationError("bad cell", source="f.tsv", row=3),
                                   JoinError("a join lost rows")])
def test_expected_failures_give_one_line_and_exit_2(tmp_path, capsys, error):
    code = _tiny_study(error).main(["--model", "none", "--out", str(tmp_path / "t")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [f"studies.tiny: error: {error}"]


# --- exit_process: `python -m studies.<name>` ends without the interpreter's teardown -----

def _run_module(args: list[str], tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-m", *args], cwd=repo, capture_output=True,
                          text=True, timeout=600)


def test_a_study_run_as_a_module_writes_everything_and_its_exit_code(tmp_path):
    # os._exit skips Python's teardown, so anything left unflushed would be lost: the
    # run's last stdout line, results.json and the report must all be complete.
    out = tmp_path / "out"
    done = _run_module(["studies.example_they", "--frames", "2", "--no-bayes", "--out",
                        str(out), "--cache-dir", str(tmp_path / "cache")], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stderr.strip().splitlines()[-1]
    results = json.loads((out / "results.json").read_text())
    assert results["tables"]
    assert (out / "report.md").read_text().rstrip()
    # what the user typed, not the path of a __main__.py
    assert results["provenance"]["command"] == (
        f"python -m studies.example_they --frames 2 --no-bayes --out {out} "
        f"--cache-dir {tmp_path / 'cache'}")


def test_a_failing_study_run_as_a_module_keeps_its_exit_code(tmp_path):
    done = _run_module(["studies", "singular_tehy"], tmp_path)
    assert done.returncode == 2 and "Did you mean" in done.stderr
    done = _run_module(["studies.example_they", "--frames", "0", "--out",
                        str(tmp_path / "o")], tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "--frames: expected 1 or more, found 0" in done.stderr


# --- run.fit: one call for lme4 / statsmodels / the twin, the fit cache, warnings, notes ----

def _run(tmp_path, *flags):
    """A Run of the tiny study with parsed flags (what the runner hands every step)."""
    from studies.pipeline import Run

    study = Study(name="tiny", title="Tiny", description="a test study", model="optional",
                  load=lambda run, _: None, report=lambda run, report, state: None)
    args = study.build_parser().parse_args(["--model", "none", "--cache-dir",
                                            str(tmp_path / "cache"), *flags])
    return Run(study, args)


def _paired_rows(seed=5):
    import numpy as np

    rng = np.random.default_rng(seed)
    frame = np.repeat([f"f{i:02d}" for i in range(12)], 2)
    x = np.tile([0, 1], 12)
    y = 0.8 * x + np.repeat(rng.normal(size=12), 2) + rng.normal(scale=0.5, size=24)
    return pd.DataFrame({"frame": frame, "x": x, "y": y})


@pytest.mark.needs_r
def test_run_fit_uses_the_fit_cache_by_default_and_notes_the_reuse(tmp_path):
    from gbstats.mixed.lmm import fit_lmm

    rows = _paired_rows()
    first = _run(tmp_path, "--no-bayes").fit("y ~ x + (1|frame)", rows, name="m")
    assert list(first) == ["lme4"] and not first["lme4"].fit_stats.get("reused_from_cache")
    again = _run(tmp_path, "--no-bayes")
    second = again.fit("y ~ x + (1|frame)", rows, name="m")
    assert second["lme4"].fit_stats.get("reused_from_cache")
    pd.testing.assert_frame_equal(second["lme4"].coefs, first["lme4"].coefs)
    # the same numbers as gbstats' own lme4 fit, made here without the runner
    direct = fit_lmm("y ~ x + (1|frame)", rows, backend="lme4")
    pd.testing.assert_frame_equal(second["lme4"].coefs, direct.coefs, rtol=1e-6)
    # --no-cache refits
    fresh = _run(tmp_path, "--no-bayes", "--no-cache").fit("y ~ x + (1|frame)", rows, name="m")
    assert not fresh["lme4"].fit_stats.get("reused_from_cache")


def test_run_fit_without_r_falls_back_to_statsmodels_with_a_note(tmp_path, monkeypatch):
    import gbstats.mixed.engines.lme4 as lme4_engine

    # R is absent for this run (the fallback is tested; the statsmodels fit is real)
    monkeypatch.setattr(lme4_engine, "available", lambda: False)
    run = _run(tmp_path, "--no-bayes")
    fits = run.fit("y ~ x + (1|frame)", _paired_rows(), name="paired LMM")
    assert list(fits) == ["statsmodels"]
    assert any("R/lme4 is not installed" in n for n in run.notes)
    assert "paired LMM: fitted with statsmodels instead of lme4 (REML, Wald tests)" in run.notes
    # a GLMM or crossed random effects: nothing statsmodels can fit, so nothing, and a note
    crossed = _paired_rows().assign(item=lambda d: d["x"].astype(str))
    assert run.fit("y ~ x + (1|frame) + (1|item)", crossed, name="crossed") == {}
    assert any(n.startswith("crossed: no lme4 fit, and statsmodels cannot fit it")
               for n in run.notes)
    assert run.fits == {"paired LMM": fits, "crossed": {}}
    with pytest.raises(ValueError, match="already used"):
        run.fit("y ~ x + (1|frame)", _paired_rows(), name="paired LMM")


def test_run_fit_puts_each_fits_warnings_in_the_report_labelled(tmp_path):
    from gbstats.mixed.results import COEF_COLUMNS, FitResult

    run = _run(tmp_path)
    fit = FitResult(backend="lme4", formula="y ~ x", family="gaussian",
                    coefs=pd.DataFrame(columns=COEF_COLUMNS),
                    fit_stats={"reused_from_cache": True}, warnings=["boundary (singular) fit"])
    run.record_fits("alignment model", {"lme4": fit})
    assert run.warnings == ["alignment model [lme4]: boundary (singular) fit"]
    from gbstats.mixed.fitting import reused_fits_note

    assert "alignment model [lme4]" in reused_fits_note(run.fits)[0]


@pytest.mark.slow
def test_run_fit_adds_the_bayesian_twin_unless_no_bayes(tmp_path):
    run = _run(tmp_path, "--draws", "200", "--no-cache")
    run._lme4 = False          # statsmodels, so the test needs no R
    fits = run.fit("y ~ x + (1|frame)", _paired_rows(), name="m")
    assert list(fits) == ["statsmodels", "pymc"]
    slope = {b: f.coefs.set_index("term").loc["x", "estimate"] for b, f in fits.items()}
    # well-identified data: the posterior mean lies within 0.15 of the REML estimate (0.8 true)
    assert abs(slope["pymc"] - slope["statsmodels"]) < 0.15
    assert list(_run(tmp_path, "--no-bayes", "--no-cache").fit(
        "y ~ x + (1|frame)", _paired_rows(), name="m", backends=[])) == []
def _tiny_twin_study(formula: str, rows: pd.DataFrame, contrasts=None) -> Study:
    """A study that fits one 20-draw Bayesian twin (too short to converge) and records it."""
    from gbstats.mixed.fitting import fit_bayes_twin

    def fit(run, _):
        twin = fit_bayes_twin(formula, rows, draws=20, max_draws=20, seed=run.seed, loo=False,
                              contrasts=contrasts)
        run.record_fits("tiny twin", {"pymc": twin})
        return twin

    def report(run, report, twin):
        report.table("coefs", twin.coefs, "coefs")

    return Study(name="tiny_bayes", title="Tiny", description="a test study", model="optional",
                 load=lambda run, _: None, fit=fit, report=report)


def test_the_runner_records_every_bayesian_twin(tmp_path):
    """Run.record_fits puts each twin's convergence figures and priors in
    results.json ("bayes_twins") and in the report, for every study alike."""
    import numpy as np

    rng = np.random.default_rng(4)
    g = np.repeat(np.arange(8), 6)
    rows = pd.DataFrame({"g": [f"g{k}" for k in g],
                         "y": rng.normal(0, 1, 8)[g] + rng.normal(0, 1, g.size)})
    study = _tiny_twin_study("y ~ 1 + (1|g)", rows)
    out = tmp_path / "tiny_bayes"
    assert study.main(["--model", "none", "--out", str(out)]) == 0
    record = json.loads((out / "results.json").read_text())["bayes_twins"]["tiny twin"]
    assert record["converged"] is False and record["n_draws"] == 20
    assert record["ess_bulk_min"] < 400 and record["divergences"] >= 0
    assert set(record["priors"]) == {"(Intercept)", "1|g", "sigma"}
    text = (out / "report.md").read_text()
    assert "## Bayesian twins" in text and "| tiny twin" in text and "| NO " in text


def test_prior_sensitivity_refits_the_twin_with_twice_wider_priors(tmp_path):
    import numpy as np

    rng = np.random.default_rng(5)
    g = np.repeat(np.arange(8), 6)
    x = np.tile(["a", "b"], 24)
    rows = pd.DataFrame({"g": [f"g{k}" for k in g], "x": x,
                         "y": rng.normal(0, 1, 8)[g] + (x == "b") + rng.normal(0, 1, g.size)})
    study = _tiny_twin_study("y ~ x + (1|g)", rows, contrasts={"x": "sum"})
    out = tmp_path / "tiny_bayes"
    assert study.main(["--model", "none", "--out", str(out), "--prior-sensitivity"]) == 0
    results = json.loads((out / "results.json").read_text())
    table = pd.DataFrame(results["tables"]["prior_sensitivity"])
    # the refit kept the sum coding (term x1) and the default fit's own numbers
    assert list(table["term"]) == ["(Intercept)", "x1"]
    coefs = pd.DataFrame(results["tables"]["coefs"]).set_index("term")
    assert table.set_index("term")["estimate"].to_dict() == coefs["estimate"].to_dict()
    assert (table["model"] == "tiny twin").all()


# --- run.start_twin: a twin started early is collected only by the fit it was started for ---

def test_a_twin_started_with_other_data_is_refused_by_run_fit(tmp_path):
    """The twin (an unsupported family, so that the worker stops at once instead of
    compiling) was started on other rows than run.fit's: run.fit refuses to collect it."""
    run = _run(tmp_path)
    rows = _paired_rows()
    run.start_twin("y ~ x + (1|frame)", rows, name="m", family="poisson")
    with pytest.raises(GbstatsError, match="'m' was started with another formula, data"):
        run.fit("y ~ x + (1|frame)", rows.assign(y=rows["y"] * 2), name="m", backends=(),
                family="poisson")


def test_a_twin_started_and_never_fitted_is_a_mistake_the_runner_names(tmp_path):
    run = _run(tmp_path)
    run.start_twin("y ~ x + (1|frame)", _paired_rows(), name="forgotten", family="poisson")
    with pytest.raises(ValueError, match="never collected by run.fit or run.twin: forgotten"):
        run.background_fits_left()
    run.background_fits_left()  # said once; nothing is left after it


def test_a_background_twin_error_is_raised_by_run_fit_and_start_twin_obeys_no_bayes(tmp_path):
    run = _run(tmp_path)
    rows = _paired_rows()
    run.start_twin("y ~ x + (1|frame)", rows, name="m", family="poisson")
    with pytest.raises(GbstatsError, match="unsupported family 'poisson'"):
        run.fit("y ~ x + (1|frame)", rows, name="m", backends=(), family="poisson")
    quiet = _run(tmp_path, "--no-bayes")
    quiet.start_twin("y ~ x + (1|frame)", rows, name="m")
    quiet.background_fits_left()  # --no-bayes: nothing was started


def test_run_twin_collects_the_twin_started_under_its_name_and_times_the_wait(tmp_path):
    """run.twin (a study that records the twin itself) takes the started twin, as run.fit
    does: the error the worker met comes back from it, the wait is timed under the name
    (so that the time split counts the twin as a background one), and nothing is left."""
    run = _run(tmp_path)
    rows = _paired_rows()
    run.start_twin("y ~ x + (1|frame)", rows, name="m (twin)", family="poisson")
    with pytest.raises(GbstatsError, match="unsupported family 'poisson'"):
        run.twin("y ~ x + (1|frame)", rows, name="m (twin)", family="poisson")
    assert "m (twin)" in run._background_twins and run._background_twins["m (twin)"] >= 0
    run.background_fits_left()  # collected: not a forgotten twin


def test_run_twin_refuses_a_twin_started_with_other_data_and_fits_in_place_otherwise(tmp_path):
    run = _run(tmp_path)
    rows = _paired_rows()
    run.start_twin("y ~ x + (1|frame)", rows, name="m", family="poisson")
    with pytest.raises(GbstatsError, match="'m' was started with another formula, data"):
        run.twin("y ~ x + (1|frame)", rows.assign(y=rows["y"] * 2), name="m", family="poisson")
    # nothing started under this name: fitted in place (the same refusal of the family,
    # raised in this thread, and no wait recorded)
    with pytest.raises(GbstatsError, match="unsupported family 'poisson'"):
        run.twin("y ~ x + (1|frame)", rows, name="other", family="poisson")
    assert "other" not in run._background_twins


# --- when the clean R server starts (issue 41) ---------------------------------------------
# Its start costs about 8 s of one core. A run starts it as soon as it has texts to score (to
# overlap with the scoring), else at its first R fit the fit cache does not hold; a study
# that declares no R fits (Study.r_fits=False) does not start it while it scores.

def _server_watching_study(gpt2_dir, seen: dict, r_fits: bool = True) -> Study:
    from gbstats.mixed import clean_process
    from models.causal import score_sentences
    from models.loading import load_scorer
    from tiny_models import SENTENCES

    def server_up() -> bool:
        return clean_process._SERVER is not None and clean_process._SERVER.alive()

    def load(run, _):
        seen["after load"] = server_up()

    def score(run, _):
        scores = score_sentences(SENTENCES, lm=load_scorer(str(gpt2_dir)), **run.cache)
        seen["after scoring"] = server_up()
        return scores

    def fit(run, scores):
        if r_fits:
            seen["fit"] = run.fit("y ~ x + (1|frame)", _paired_rows(), name="m")["lme4"]
        seen["after fits"] = server_up()
        return scores

    return Study(name="tiny_server", title="Tiny", description="a test study", model="optional",
                 bayes=False, r_fits=r_fits, load=load, score=score, fit=fit,
                 report=lambda run, report, state: None)


@pytest.fixture(scope="module")
def tiny_gpt2_folder(tmp_path_factory):
    from tiny_models import build_tiny_bert, build_tiny_gpt2

    bert = build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"), bert)


@pytest.mark.needs_r
def test_the_r_server_starts_with_the_scoring_and_not_for_a_run_the_caches_answer(
        tmp_path, tiny_gpt2_folder):
    from gbstats.mixed import clean_process

    def run(r_fits=True):
        clean_process._close_server()  # each run as in a process of its own
        seen: dict = {}
        study = _server_watching_study(tiny_gpt2_folder, seen, r_fits)
        assert study.main(["--model", "none", "--cache-dir", str(tmp_path / "cache"),
                           "--out", str(tmp_path / f"out{len(runs)}")]) == 0
        runs.append(seen)
        return seen

    runs: list[dict] = []
    cold = run()
    # nothing started while loading; started once texts were to be scored, so up by the
    # end of the scoring, and the fit used it
    assert cold["after load"] is False and cold["after scoring"] is True
    assert cold["after fits"] is True and not cold["fit"].fit_stats.get("reused_from_cache")
    warm = run()
    # every score and the fit from the caches: no server at any point
    assert warm == {**warm, "after load": False, "after scoring": False, "after fits": False}
    assert warm["fit"].fit_stats.get("reused_from_cache")
    pd.testing.assert_frame_equal(warm["fit"].coefs, cold["fit"].coefs)
    # a study without R fits scoring afresh (another cache): never started
    (tmp_path / "cache").rename(tmp_path / "cache-before")
    assert run(r_fits=False) == {"after load": False, "after scoring": False,
                                 "after fits": False}
    # that cache holds the scores but no fit: started at the fit, which it answered
    refit = run()
    assert refit["after scoring"] is False and refit["after fits"] is True
    pd.testing.assert_frame_equal(refit["fit"].coefs, cold["fit"].coefs)
