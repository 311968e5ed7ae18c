"""The dataset registry, checksums and `gbstats data fetch` against a file:// mirror.

No test touches the network: the mirror is a temporary folder laid out like the
source host (<base>/<owner>/<repo>/<commit>/<path>), filled from the shared
data directory.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gbstats.cli import main as cli_main
from gbstats.data.fetch import fetch_dataset
from gbstats.data.registry import DATASETS, get_dataset, sha256_of
from gbstats.errors import ChecksumError, DataValidationError, UnknownNameError

EXPECTED_NAMES = {"papineau2022", "watson2023", "cog_gb_eval2023", "ruff2024",
                  "winopron2024", "winogender2018", "winobias2018", "genda_lens2023",
                  "camilliere2021", "gardner2024", "gardner2023"}


def make_mirror(root: Path, name: str, data_dir: Path) -> Path:
    entry = get_dataset(name)
    for f in entry.files:
        target = root / entry.repo / entry.commit / f.source
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(data_dir / name / f.local, target)
    return root


def test_registry_has_every_dataset_with_pinned_commit_and_sha256():
    assert set(DATASETS) == EXPECTED_NAMES
    for entry in DATASETS.values():
        assert len(entry.commit) == 40 and all(c in "0123456789abcdef" for c in entry.commit)
        assert entry.files and entry.license and entry.loader.endswith(":load")
        for f in entry.files:
            assert len(f.sha256) == 64


def test_shared_data_verifies_against_registry(data_dir):
    for entry in DATASETS.values():
        assert entry.status(data_dir)["status"] == "verified", entry.name
        entry.verify(data_dir)


def test_unknown_dataset_name_suggests_close_match():
    with pytest.raises(UnknownNameError, match="Did you mean 'winobias2018'"):
        get_dataset("winobias")


def test_fetch_from_file_mirror_writes_verified_files(tmp_path, data_dir):
    mirror = make_mirror(tmp_path / "mirror", "watson2023", data_dir)
    target_dir = tmp_path / "data"
    written = fetch_dataset("watson2023", target_dir, mirror=mirror.as_uri())
    entry = get_dataset("watson2023")
    assert len(written) == len(entry.files)
    for f in entry.files:
        assert sha256_of(target_dir / "watson2023" / f.local) == f.sha256
    # idempotent: nothing is downloaded again when the files verify
    assert fetch_dataset("watson2023", target_dir, mirror=mirror.as_uri()) == []


def test_fetch_rejects_checksum_mismatch_and_leaves_nothing(tmp_path, data_dir):
    mirror = make_mirror(tmp_path / "mirror", "watson2023", data_dir)
    entry = get_dataset("watson2023")
    tampered = mirror / entry.repo / entry.commit / entry.files[0].source
    tampered.write_text(tampered.read_text() + "extra,1\n")
    target_dir = tmp_path / "data"
    with pytest.raises(ChecksumError, match="checksum mismatch"):
        fetch_dataset("watson2023", target_dir, mirror=mirror.as_uri())
    folder = target_dir / "watson2023"
    leftovers = [p.name for p in folder.iterdir()] if folder.exists() else []
    assert entry.files[0].local not in leftovers
    assert not any(name.endswith(".part") for name in leftovers)


def test_verify_names_corrupt_file(tmp_path, data_dir):
    shutil.copytree(data_dir / "watson2023", tmp_path / "watson2023")
    victim = tmp_path / "watson2023" / "wiki_counts.csv"
    victim.write_bytes(victim.read_bytes()[:-10])
    with pytest.raises(ChecksumError, match="wiki_counts.csv"):
        get_dataset("watson2023").verify(tmp_path)


def test_verify_missing_dataset_says_how_to_fetch(tmp_path):
    with pytest.raises(DataValidationError, match="gbstats data fetch ruff2024"):
        get_dataset("ruff2024").verify(tmp_path)


def test_cli_data_fetch_then_status_is_verified(tmp_path, data_dir, capsys):
    mirror = make_mirror(tmp_path / "mirror", "winogender2018", data_dir)
    rc = cli_main(["data", "fetch", "winogender2018", "--data-dir", str(tmp_path / "d"),
                   "--mirror", mirror.as_uri()])
    assert rc == 0
    assert "all checksums verified" in capsys.readouterr().out
    assert get_dataset("winogender2018").status(tmp_path / "d")["status"] == "verified"
    assert get_dataset("ruff2024").status(tmp_path / "d")["status"] == "missing"


def test_cli_data_list_json_reports_status(tmp_path, data_dir, capsys):
    shutil.copytree(data_dir / "watson2023", tmp_path / "watson2023")
    assert cli_main(["data", "list", "--json", "--data-dir", str(tmp_path)]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["watson2023"]["status"] == "verified"
    assert rows["ruff2024"]["status"] == "missing"


def test_cli_error_is_clean_not_a_traceback(tmp_path, capsys):
    rc = cli_main(["data", "summary", "winopron", "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert "unknown dataset 'winopron'" in err and "Traceback" not in err


def test_cli_data_summary_json_has_rows_participants_exclusions(data_dir, capsys):
    assert cli_main(["data", "summary", "papineau2022", "--json", "--data-dir", str(data_dir)]) == 0
    summary = json.loads(capsys.readouterr().out)
    # 271 participants analysed x 20 critical trials each (Watson et al. 2023;
    # one trial per role-noun set, 20 sets)
    assert summary["n_participants"] == 271 and summary["n_rows"] == 271 * 20
    assert summary["exclusions"] and all({"reason", "n"} <= set(e) for e in summary["exclusions"])
