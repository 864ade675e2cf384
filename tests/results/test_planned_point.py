"""What the runner planned, in the result (issues 39 and 35, leftovers): `results process` writes a
fixed-sequence point's ISL and OSL from job.json into result.json, so compare, pareto and report key
points of two sequence lengths apart; and it holds the records to the request count the runner planned
(job.json's client command), not only to what the export says of itself. Both on the recorded H100 job
(tests/data/h100/fixed-c16: vLLM, 1024/1024 at c16, 160 requests) and AIPerf's recorded export."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import click
from click.testing import CliRunner

from ci_tools.cli import main
from ci_tools.config.disagg import resolve_disagg
from ci_tools.config.recipe import recipe_from_data, resolve_point
from ci_tools.results import identity
from ci_tools.results.process import planned_client, point_from_job, process_dir
from ci_tools.runner.disagg import SlurmSettings, build_multinode_plan
from ci_tools.runner.plan import Settings, build_plan
from tests.conftest import H100_JOB, RECORDINGS
from tests.fuzz import results_mutations as mutations


def invoke(*args):
    """Through the entry point, so an InputError is a message and an exit code as for a user."""
    argv = [str(a) for a in args]
    return CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])


def h100_job(dest: Path, **edit) -> Path:
    """The recorded H100 job, its job.json edited as `edit` says (a function of the document)."""
    shutil.copytree(H100_JOB, dest)
    (dest / "result.json").unlink()
    job = json.loads((dest / "job.json").read_text())
    for fn in edit.values():
        fn(job)
    (dest / "job.json").write_text(json.dumps(job, indent=2))
    return dest


def as_8k1k(job: dict) -> None:
    """The same topology asked for 8192/1024 (another block of the master entry), as the runner writes it."""
    job["row"].update(isl=8192, **{"exp-name": "randllama_tp1_conc16_8k1k"})
    job["point"].update(isl=8192, osl=1024)
    job["result-filename"] = job["result-filename"].replace("1k1k", "8k1k")
    argv = job["commands"]["client"]["argv"]
    argv[argv.index("--isl") + 1] = "8192"


def test_the_recorded_job_writes_what_the_runner_asked_for(tmp_path):
    """The recorded job.json (an older runner's) has the lengths in its row only: they are read there."""
    result = process_dir(h100_job(tmp_path / "job"))
    assert result["valid"] is True, result["failures"]
    point = result["point"]
    assert (point["isl"], point["osl"], point["request-count"]) == (1024, 1024, 160)


def test_an_agentic_point_records_no_lengths(tmp_path):
    def agentic(job):
        job["point"]["scenario"] = "agentic-coding"

    point = process_dir(h100_job(tmp_path / "job", agentic=agentic))["point"]
    assert point["isl"] is None and point["osl"] is None


def test_two_sequence_lengths_of_one_topology_are_two_points(tmp_path):
    """1k/1k and 8k/1k at TP1 c16: one name, one topology. Without the lengths in result.json compare
    took one for the other's baseline and pareto drew them on one frontier."""
    runs = tmp_path / "runs"
    short = process_dir(h100_job(runs / "1k1k"))
    long = process_dir(h100_job(runs / "8k1k", as_8k1k=as_8k1k))
    for d, r in (("1k1k", short), ("8k1k", long)):
        (runs / d / "result.json").write_text(json.dumps(r))
    assert (long["point"]["isl"], long["point"]["osl"]) == (8192, 1024)
    assert identity.identity(short["point"]) != identity.identity(long["point"])
    assert identity.display_names([short["point"], long["point"]]) == ["tp1-c16 (1024/1024)", "tp1-c16 (8192/1024)"]

    res = invoke("results", "compare", runs / "8k1k", "--baseline", runs / "1k1k", "--format", "json")
    assert res.exit_code == 0, res.output
    [point] = json.loads(res.output)["points"]
    assert point["baseline"]["kind"] == "none" and json.loads(res.output)["point-summary"]["new"] == 1, point

    out = tmp_path / "results.json"
    assert invoke("results", "collect", runs, "--out", out).exit_code == 0
    res = invoke("results", "pareto", out, "--format", "json")
    assert res.exit_code == 0, res.output
    shown = json.loads(res.output)["points"]
    assert len(shown) == 2 and all(p["frontier"] for p in shown), shown    # each alone on its own workload


def test_a_count_other_than_the_planned_one_is_invalid(tmp_path):
    """The runner planned 170 requests (job.json's client command); AIPerf's export says 160 everywhere."""
    def planned_170(job):
        argv = job["commands"]["client"]["argv"]
        argv[argv.index("--request-count") + 1] = "170"

    result = process_dir(h100_job(tmp_path / "job", planned_170=planned_170))
    assert result["valid"] is False
    [f] = [f for f in result["failures"] if f["rule"] == "planned-requests"]
    assert "the runner planned 170 profiling requests" in f["message"]
    assert "run_info.cli_command asks for 160" in f["message"] and "the export holds 160" in f["message"]


def test_records_dropped_with_every_count_rewritten_are_caught_by_the_plan(tmp_path):
    """The thorough forgery of issue 35 that no check of the data sees: the slowest records dropped, the
    credits renumbered, the summary and every echo of the count (configuration, command line) rewritten.
    The runner's plan, outside the export, still says 40."""
    export = mutations.load_export(RECORDINGS)
    planned = shlex.split(export[1]["run_info"]["cli_command"])
    assert planned[planned.index("--request-count") + 1] == "40"
    recs, agg = mutations.mutant(export, "thorough-slowest-dropped", 0)
    run = tmp_path / "run"
    mutations.write(run / "aiperf_artifacts", recs, agg)
    (run / "job.json").write_text(json.dumps({
        "result-filename": "stub", "point": {"name": "stub", "tp": 4, "conc": 4, "scenario": "fixed-seq-len",
                                             "model": "stub", "isl": 100, "osl": 100},
        "commands": {"client": {"argv": planned, "env": {}, "log": "client.log"}}}))
    result = process_dir(run)
    assert not result["valid"] and {f["rule"] for f in result["failures"]} == {"planned-requests"}, result["failures"]
    assert f"the export holds {len(recs)}" in result["failures"][0]["message"]


def test_a_client_command_that_asks_for_no_count_is_no_plan_of_one(tmp_path):
    """A duration run (the agentic replay) plans no count: nothing to hold the records to."""
    def duration_run(job):
        argv = job["commands"]["client"]["argv"]
        at = argv.index("--request-count")
        del argv[at:at + 2]

    result = process_dir(h100_job(tmp_path / "job", duration_run=duration_run))
    assert result["point"]["request-count"] is None and result["valid"] is True, result["failures"]


def test_an_unreadable_planned_count_is_an_input_error(tmp_path):
    def bad(job):
        argv = job["commands"]["client"]["argv"]
        argv[argv.index("--request-count") + 1] = "many"

    res = invoke("results", "process", h100_job(tmp_path / "job", bad=bad))
    assert res.exit_code == 1 and "job.json: error: the point is unreadable" in res.output
    assert "asks for 'many' requests, not one count" in res.output and "Traceback" not in res.output


# What the runner writes: a fixed-sequence row's lengths in job.json's point, read back by `results process`
TINY = {"recipe-version": 1, "config-key": "tiny", "engine": "vllm", "engine-versions": ["0.26.0"],
        "model": "org/tiny", "serve": {"args": {"max-model-len": 4096}},
        "points": {"tp1-c4": {"tp": 1, "ep": 1, "conc": 4}}}
TINY_ROW = {"model": "org/tiny", "model-prefix": "tiny", "precision": "bf16", "framework": "vllm", "runner": "h100",
            "tp": 1, "ep": 1, "conc": 4, "isl": 1024, "osl": 256, "exp-name": "tiny", "scenario-type": "fixed-seq-len"}


def single_node_job(row: dict) -> dict:
    point = resolve_point(recipe_from_data(TINY, "recipe.yaml"), 1, 1, False, 4)
    return build_plan(row, point, Settings(backend="process", model_store="/m"), "/tmp/out").job_json()


def test_a_single_node_job_records_its_lengths_and_its_count():
    job = single_node_job(TINY_ROW)
    assert (job["point"]["isl"], job["point"]["osl"]) == (1024, 256)
    info = point_from_job(job)
    argv = planned_client(job)
    assert argv is not None and info.request_count == int(argv[argv.index("--request-count") + 1])
    assert (info.isl, info.osl) == (1024, 256)


def test_a_multinode_concurrency_records_its_lengths_and_its_own_count():
    image = "lmsysorg/sglang:v0.5.21@sha256:" + "1" * 64
    data = {"recipe-version": 1, "config-key": "k", "mode": "disaggregated", "engine": "sglang", "image": image,
            "model": "org/model", "kv-transfer": "nixl",
            "frontend": {"kind": "sglang-router", "name": "sglang-router", "version": "0.3.2", "args": {}},
            "points": {"1p1d": {"prefill": {"num-worker": 1, "tp": 4, "nodes": 1},
                                "decode": {"num-worker": 1, "tp": 4, "nodes": 1}, "conc": [8, 16]}}}
    row = {"image": image, "model": "org/model", "precision": "fp4", "framework": "sglang-disagg", "runner": "gb300",
           "isl": 8192, "osl": 1024, "spec-decoding": "none", "exp-name": "m_8k1k", "conc": [8, 16],
           "prefill": {"num-worker": 1, "tp": 4, "ep": 1, "dp-attn": False, "pp": 1},
           "decode": {"num-worker": 1, "tp": 4, "ep": 1, "dp-attn": False}, "kv-p2p-transfer": "nixl",
           "router": {"name": "sglang-router", "version": "0.3.2"}}
    pt = resolve_disagg(recipe_from_data(data), row["prefill"], row["decode"], row["conc"])
    plan = build_multinode_plan(row, pt, Settings(), "/job", 4, SlurmSettings(queue_timeout_s=600))
    for client in plan.clients:
        # a concurrency's own directory, as runner/multinode.py writes it
        job = {"point": plan.point_for(client), "parent": "..", "command": client.argv}
        info = point_from_job(job)
        assert (info.isl, info.osl, info.conc) == (8192, 1024, client.conc)
        assert info.request_count == int(client.argv[client.argv.index("--request-count") + 1])
