"""Real jobs of a real engine on real GPUs, as the project recorded them (tests/data/README.md): every job
folder under tests/data/ in which `results process` wrote a result.json on the GPU machine. vLLM 0.26.0
serving a random-weight 0.5 B Llama through `ci-tools runner run --backend process` and AIPerf 0.13.0, with the
runner's own nvidia-smi samples: two agentic jobs and a fixed-seq job on an H100, and the agentic and fixed jobs
of `runner selftest` on an H200 and, after the runner's rebuild, on an H100 (the cancelled job of each
self-test wrote no result). `results process` today must judge each as it did on that
machine, agree with AIPerf's own summary of it and find the client's exports as the runner hashed them."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ci_tools import names
from ci_tools.cli import main
from ci_tools.custody.record import parse_record
from ci_tools.results import custody, report_flow, telemetry
from ci_tools.results.flow import load_results_policy
from ci_tools.results.sources import load_side
from ci_tools.runner import nodecheck
from tests.conftest import H100_JOB, H100_SELFTEST, H200_SELFTEST, RECORDINGS, REPO, lay_out

POLICY = REPO / names.POLICY
JOBS = sorted(p.parent for p in RECORDINGS.rglob(names.RESULT_JSON) if (p.parent / names.JOB_JSON).is_file())


PLANNED = {"isl", "osl", "request-count"}


def rel(job: Path) -> str:
    return job.relative_to(RECORDINGS).as_posix()


# What the notes of each run quote (tests/data/README.md, docs/runner-operator.md): total tok/s/GPU, P90
# interactivity (tokens/s per user, 1 / ITL p90), TTFT p90 in ms, J per output token, mean GPU power in W.
FIGURES = {
    "h100/agentic-c16": (25042.78, 305.04, 110.9, 0.0475, 236.6),
    "h100/agentic-c4": (7224.56, 346.30, 52.0, 0.1326, 190.5),
    "h100/fixed-c16": (12582.71, 368.53, 127.2, 0.0405, 254.7),
    "h200-selftest/agentic": (20404.80, 486.14, 42.4, 0.0540, 220.0),
    "h200-selftest/fixed": (6847.54, 548.80, 48.8, 0.0976, 222.4),
    "h100-selftest/agentic": (15380.79, 361.83, 56.0, 0.0661, 203.1),
    "h100-selftest/fixed": (5067.76, 427.66, 46.4, 0.1162, 196.1),
}


def run(*args):
    argv = [*map(str, args)]
    return CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])


def test_every_recorded_job_is_found_and_has_its_figures():
    assert sorted(rel(j) for j in JOBS) == sorted(FIGURES)
    assert H100_JOB in JOBS and {d / j for d in (H100_SELFTEST, H200_SELFTEST) for j in ("agentic", "fixed")} <= set(JOBS)


@pytest.fixture(scope="module", params=JOBS, ids=rel)
def job(request, tmp_path_factory) -> tuple[Path, dict]:
    """(the recorded folder, the result `results process` writes today over a copy without its result.json)."""
    d = lay_out(request.param, tmp_path_factory.mktemp("gpu") / "job")
    (d / names.RESULT_JSON).unlink()
    r = run("results", "process", d, "--policy", POLICY)
    assert r.exit_code == 0, r.output
    return request.param, json.loads((d / names.RESULT_JSON).read_text())


def aiperf_summary(recorded: Path) -> dict:
    return json.loads((recorded / names.AIPERF_DIR / names.PROFILE_JSON).read_text())


def test_the_recorded_job_is_valid_with_the_figures_of_that_run(job):
    recorded, result = job
    assert result["valid"] is True, result["failures"]
    # one error in all: AIPerf's "no responses with actual content" at c16 (the random model sent EOS first)
    assert (result["requests"]["errors"], result["gpus"]) == (int(rel(recorded) == "h100/agentic-c16"), 1)
    # the H100 jobs predate the runner's engine check; the self-test's jobs record the release it found
    engine = result.get("engine")
    assert (engine is None) == rel(recorded).startswith("h100/")
    assert engine is None or (engine["name"], engine["version"], engine["backend"]) == ("vllm", "0.26.0", "process")
    h = result["headline"]
    tok, intvty, ttft_ms, j_out, watts = FIGURES[rel(recorded)]
    assert (round(h["tok_s_gpu"], 2), round(h["intvty_p90"], 2), round(h["ttft_p90_s"] * 1000, 1)) == (tok, intvty,
                                                                                                         ttft_ms)
    assert (round(h["j_per_output_token"], 4), round(result["energy"]["avg_power_w"], 1)) == (j_out, watts)


def test_results_process_today_gives_what_it_gave_on_that_machine(job):
    """result.json as `results process` wrote it on the GPU machine: the same headline and verdict today."""
    recorded, result = job
    then = json.loads((recorded / names.RESULT_JSON).read_text())
    assert {k: result["headline"][k] for k in then["headline"]} == then["headline"]
    assert (result["valid"], result["requests"]) == (then["valid"], then["requests"])
    # the point as then, plus what `results process` has read from job.json's plan since (the runner's lengths
    # and request count; None where it planned none)
    assert {k: result["point"][k] for k in then["point"]} == then["point"]
    assert set(result["point"]) - set(then["point"]) == PLANNED - set(then["point"])


def test_it_agrees_with_aiperfs_own_summary_within_the_policys_tolerance(job):
    recorded, result = job
    agg = aiperf_summary(recorded)
    tol = load_results_policy(POLICY).summary_tolerance
    h = result["headline"]
    assert result["requests"]["successful"] == agg["request_count"]["avg"]
    # the time bases differ (ci-tools: the records' span; AIPerf: its benchmark_duration)
    assert h["tok_s_gpu"] == pytest.approx(agg["total_token_throughput"]["avg"] / result["gpus"], rel=tol)
    assert h["ttft_p90_s"] * 1000 == pytest.approx(agg["time_to_first_token"]["p90"], rel=tol)
    assert h["intvty_p90"] == pytest.approx(1000 / agg["inter_token_latency"]["p90"], rel=tol)


def test_the_job_telemetry_covers_the_benchmark_window(job):
    recorded, result = job
    samples, problems = telemetry.parse_csv((recorded / names.GPU_TELEMETRY_CSV).read_text())
    facts, gpus = nodecheck.parse((recorded / names.NODE_CHECK_TXT).read_text())
    assert problems == [] and facts["model"] == "ok"
    # the GPU the node check listed is the one sampled, with its full memory and 700 W limit
    assert {s["name"] for s in samples} == {g["name"] for g in gpus} and len(gpus) == 1
    assert {s["uuid"] for s in samples} == {g["uuid"] for g in gpus} and {s["power_limit_w"] for s in samples} == {700.0}
    tel = result["gpu_telemetry"]
    [gpu] = tel["gpus"]
    assert gpu["coverage"] == 1.0 and tel["problems"] == [] and result["energy"]["valid"] is True
    # a 0.5 B model is far from a 700 W card's limit: never power-capped, the SM clock at its maximum throughout
    assert tel["power_capped"] is False
    assert gpu["sm_clock_mhz"]["min"] == gpu["sm_clock_mhz"]["max"] == gpu["max_sm_clock_mhz"] == 1980


CUSTODY = [j for j in JOBS if (j / names.EXPORT_RECORD).is_file()]


def test_the_selftest_jobs_carry_a_custody_record():
    # the H100 jobs were recorded by a runner that did not hash the client's exports yet
    assert [rel(j) for j in CUSTODY] == [f"{d}-selftest/{j}" for d in ("h100", "h200") for j in ("agentic", "fixed")]


@pytest.mark.parametrize("recorded", CUSTODY, ids=rel)
def test_the_custody_record_verifies(recorded: Path, tmp_path: Path):
    record = parse_record((recorded / names.EXPORT_RECORD).read_text())
    # sha256sum -c by hand: every file the client left is here as it was, but the prompts a job artifact
    # leaves out (AIPerf's inputs.json, kept out of the recording too)
    absent = [p for p in record if not (recorded / p).is_file()]
    assert absent == [f"{names.AIPERF_DIR}/inputs.json"] and all(custody.dropped_by_upload(p) for p in absent)
    assert all(hashlib.sha256((recorded / p).read_bytes()).hexdigest() == h for p, h in record.items() if p not in absent)
    # and `results process` says so: checked, nothing changed
    d = tmp_path / "job"
    shutil.copytree(recorded, d)
    r = run("results", "process", d, "--policy", POLICY, "--export-sha256",
            hashlib.sha256((recorded / names.EXPORT_RECORD).read_bytes()).hexdigest())
    assert r.exit_code == 0, r.output
    section = json.loads((d / names.RESULT_JSON).read_text())["custody"]
    assert section == {"record": names.EXPORT_RECORD, "sha256": section["sha256"], "checked": True,
                       "files": len(record), "anchored": True}


def test_an_edited_recorded_export_is_caught(tmp_path: Path):
    """The record is not decoration: one byte of the real export changed makes the result invalid."""
    d = tmp_path / "job"
    shutil.copytree(H200_SELFTEST / "fixed", d)
    export = d / names.AIPERF_DIR / names.PROFILE_JSON
    export.write_text(export.read_text().replace('"request_count"', '"request_count" ', 1))
    r = run("results", "process", d, "--policy", POLICY)
    assert r.exit_code == 1
    failures = json.loads((d / names.RESULT_JSON).read_text())["failures"]
    assert [f["rule"] for f in failures] == [custody.RULE] and names.PROFILE_JSON in failures[0]["message"]


def test_the_report_draws_the_recorded_collection_alone(tmp_path: Path):
    """`results report` of the self-test's collection, as the self-test ran it: no baseline, each job's own
    telemetry (the cancelled job's too, which wrote no result)."""
    out = tmp_path / "report.html"
    r = run("results", "report", H200_SELFTEST / "results.json", "--telemetry", H200_SELFTEST, "--out", out,
            "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output[r.output.index("{"):r.output.rindex("}") + 1])
    assert doc["points"] == 2 and doc["overall"] == "none" and out.is_file()
    assert any("no baseline" in n for n in doc["notes"])
    jobs = doc["telemetry-jobs"]
    assert len(jobs) == 3 and {"tp1-c8", "tp1-c4"} <= set(jobs)
    [cancelled] = [j for j in jobs if j not in ("tp1-c8", "tp1-c4")]
    assert "cancelled (SIGINT)" in cancelled
    page = out.read_text()
    assert 'id="overall">No baseline</span>' in page and 'data-name="tp1-c8"' in page
    assert '<p class="points">2 points measured, nothing compared</p>' in page
    # each job's telemetry is its own: the energy shown beside a point is the one its result.json holds
    shown, notes = report_flow.load_telemetry(H200_SELFTEST, load_side(H200_SELFTEST / "results.json"))
    assert notes == [] and sorted(j.name for j in shown) == sorted(jobs)
    own = {json.loads((H200_SELFTEST / d / names.RESULT_JSON).read_text())["point"]["name"]:
           json.loads((H200_SELFTEST / d / names.RESULT_JSON).read_text())["energy"] for d in ("agentic", "fixed")}
    assert {j.name: j.energy["avg_power_w"] for j in shown if j.energy} == {n: e["avg_power_w"] for n, e in own.items()}
