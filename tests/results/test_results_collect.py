"""`results process` and `results collect` through the CLI on the real export; invalid never collected as valid."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from ci_tools.cli import cli
from tests.conftest import AIPERF_EXPORT


def invoke(*args):
    return CliRunner().invoke(cli, list(args))


def export_copy(dest: Path) -> Path:
    shutil.copytree(AIPERF_EXPORT, dest / "aiperf_artifacts")
    return dest


def test_process_valid_and_invalid_then_collect(tmp_path):
    good = export_copy(tmp_path / "runs/good")
    res = invoke("results", "process", str(good), "--tp", "4", "--conc", "4", "--scenario", "fixed-seq-len",
                 "--model", "stub", "--name", "tp4-c4")
    assert res.exit_code == 0, res.output
    assert "tp4-c4: VALID" in res.output and "tok/s/GPU over 4 GPU(s)" in res.output

    bad = export_copy(tmp_path / "runs/bad")
    res = invoke("results", "process", str(bad), "--tp", "2", "--conc", "32", "--model", "other", "--duration", "3600",
                 "--name", "tp2-c32")
    assert res.exit_code == 1
    for rule in ("min-requests", "min-duration", "echo-concurrency", "echo-model"):
        assert f"invalid [{rule}]" in res.output, rule
    assert json.loads((bad / "result.json").read_text())["valid"] is False

    out = tmp_path / "results.json"
    res = invoke("results", "collect", str(tmp_path / "runs"), "--out", str(out))
    assert res.exit_code == 0, res.output
    assert "2 result(s): 1 valid, 1 invalid" in res.output
    data = json.loads(out.read_text())
    assert [r["point"]["name"] for r in data["results"]] == ["tp2-c32", "tp4-c4"]

    res = invoke("results", "pareto", str(out), "--format", "json")
    assert res.exit_code == 0, res.output
    names = [p["point"] for p in json.loads(res.output)["points"]]
    assert names == ["tp4-c4"]  # the invalid result never reaches the frontier


def test_process_without_job_json_asks_for_the_point(tmp_path):
    d = export_copy(tmp_path / "x")
    res = invoke("results", "process", str(d))
    assert res.exit_code == 1 and "no job.json" in str(res.exception)


def test_process_with_workers_gives_the_same_result(tmp_path):
    d = export_copy(tmp_path / "w")
    point = ["--tp", "4", "--conc", "4", "--scenario", "fixed-seq-len", "--model", "stub"]
    one = invoke("results", "process", str(d), *point, "--workers", "1", "--out", str(tmp_path / "one.json"))
    three = invoke("results", "process", str(d), *point, "--workers", "3", "--out", str(tmp_path / "three.json"))
    assert one.exit_code == three.exit_code == 0, one.output + three.output
    assert json.loads((tmp_path / "one.json").read_text()) == json.loads((tmp_path / "three.json").read_text())
    bad = invoke("results", "process", str(d), *point, "--workers", "0")
    assert bad.exit_code == 2 and "--workers" in bad.output


def test_collect_of_only_unreadable_results_fails(tmp_path):
    # a truncated upload: the collect job must fail rather than publish an empty collection
    (tmp_path / "job").mkdir()
    (tmp_path / "job/result.json").write_text('{"schema":')
    (tmp_path / "other").mkdir()
    (tmp_path / "other/result.json").write_text('{"schema": "something-else"}')
    out = tmp_path / "results.json"
    res = invoke("results", "collect", str(tmp_path), "--out", str(out))
    assert res.exit_code == 1, res.output
    msg = str(res.exception)
    assert "no result could be collected from 2 result.json file(s)" in msg
    assert "job/result.json: skipped, not valid JSON" in msg and "not a ci-tools/result" in msg
    assert not out.exists()


def test_process_of_a_file_says_it_wants_the_directory(tmp_path):
    f = tmp_path / "profile_export.jsonl"
    f.write_text("{}\n")
    res = invoke("results", "process", str(f))
    assert res.exit_code == 1
    assert f"{f}: not a directory; pass the job directory" in str(res.exception)


def test_an_incomplete_sweep_fails_collect_so_it_is_never_ingested(tmp_path):
    """Issue 15 item 4: a canary or a family failed, so some points are invalid or missing; collect used to
    succeed whenever any result.json existed, and the results app was dispatched."""
    good = export_copy(tmp_path / "runs/good")
    assert invoke("results", "process", str(good), "--tp", "4", "--conc", "4", "--scenario", "fixed-seq-len",
                  "--model", "stub", "--name", "tp4-c4").exit_code == 0
    out = tmp_path / "results.json"
    missing = invoke("results", "collect", str(tmp_path / "runs"), "--out", str(out), "--expect", "3")
    assert missing.exit_code == 1 and "1 valid results for the 3 points planned" in missing.output
    assert out.exists()                                    # still written, for the status card
    complete = invoke("results", "collect", str(tmp_path / "runs"), "--out", str(out), "--expect", "1")
    assert complete.exit_code == 0, complete.output
    bad = export_copy(tmp_path / "runs/bad")
    assert invoke("results", "process", str(bad), "--tp", "2", "--conc", "32", "--name", "tp2-c32").exit_code == 1
    invalid = invoke("results", "collect", str(tmp_path / "runs"), "--out", str(out), "--expect", "2")
    assert invalid.exit_code == 1 and "1 of its results are invalid" in invalid.output
    reused = invoke("results", "collect", str(tmp_path / "runs"), "--out", str(out))   # --expect 0: a reused run
    assert reused.exit_code == 0
