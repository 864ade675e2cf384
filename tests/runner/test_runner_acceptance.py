"""`runner acceptance`: one SPEED-Bench cell measured for real against the stub engine, which reports its
acceptance length under SGLang's and vLLM's own metric names, through the real AIPerf client."""

from __future__ import annotations

import json
import subprocess

import pytest

from runner_support import stub_recipe, stub_row

from ci_tools.runner.acceptance import Measured, check_range, measure, prometheus, spec_args, speedbench_argv

SPEC_POINTS = "  tp2-c2: {tp: 2, ep: 1, conc: 2}\n"


def cell(**fields) -> dict:
    serve = stub_row(**{"scenario-type": "fixed-seq-len", "isl": 40, "osl": 8, "exp-name": "stub_al"})
    return {"id": "stub-sglang-mtp2-thinking-on", "model": "stub", "engine": "sglang", "engine-version": "t",
            "dataset": "speed-bench-qualitative-coding", "thinking": True, "mtp": 2, "serve": serve, **fields}


def speed_bench_file(path) -> str:
    """A few rows in SPEED-Bench's JSONL form (question_id, category, messages), which AIPerf's own
    SPEED-Bench loader reads: the collection's dataset path, offline."""
    rows = [{"question_id": f"{i:032x}", "category": "coding",
             "messages": [{"role": "user", "content": f"Write a function number {i} that adds two integers."}]}
            for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def acceptance_argv(job, server_flags: str) -> list[str]:
    spec = stub_recipe(points=SPEC_POINTS).replace(
        "args: {trust-remote-code: true}",
        "args: {trust-remote-code: true, speculative-algorithm: NEXTN, speculative-num-steps: 3, "
        "speculative-eagle-topk: 1, speculative-num-draft-tokens: 4}")
    (job["dir"] / "recipe.yaml").write_text(spec)
    (job["dir"] / "cell.json").write_text(json.dumps(cell()))
    # 2 ms between tokens, not the stub's 20: the cell's 80 requests over 2 lanes took 7 s of waiting, and the
    # length is the engine's own figure, read from its metrics, whatever the pace
    argv = job["argv"](f"{server_flags} --itl 0.002")
    argv[argv.index("run")] = "acceptance"
    argv[argv.index("--row") + 1] = str(job["dir"] / "cell.json")
    at = argv.index("--dataset")
    del argv[at:at + 2]      # SPEED-Bench's file instead of the synthetic prompts
    return argv + ["--run-url", "https://github.com/octo/bench/actions/runs/77",
                   "--speed-bench", speed_bench_file(job["dir"] / "speed-bench-coding.jsonl")]


def test_measures_the_engines_reported_length(job):
    run = subprocess.run(acceptance_argv(job, "--spec-accept-length 2.73 --dp-ranks 2"), env=job["env"],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr + run.stdout
    doc = json.loads((job["out"] / "acceptance.json").read_text())
    assert doc["acceptance-length"] == 2.73 and doc["mtp"] == 2 and doc["thinking"] is True
    assert doc["source"].startswith("sglang /server_info internal_states[].avg_spec_accept_length (2 rank(s))")
    assert doc["run"] == "https://github.com/octo/bench/actions/runs/77"
    job_json = json.loads((job["out"] / "job.json").read_text())
    env = job_json["commands"]["server"]["env"]
    assert not any(k.startswith("SGLANG_SIMULATE_ACC") for k in env)    # real verification, not replayed
    client = job_json["commands"]["client"]["argv"]
    assert client[client.index("--extra-inputs") + 1] == '{"chat_template_kwargs":{"enable_thinking":true}}'
    assert client[client.index("--request-count") + 1] == "80"
    assert client[client.index("--custom-dataset-type") + 1] == "speed-bench-coding"
    records = (job["out"] / "aiperf_artifacts" / "profile_export.jsonl").read_text().splitlines()
    assert len(records) == 80 + 2     # the 80 requests (and one warmup per lane) the length covers
    sent = (job["out"] / "aiperf_artifacts" / "inputs.json").read_text()
    assert "adds two integers" in sent and "enable_thinking" in sent   # SPEED-Bench prompts, thinking mode
    assert run.stdout.splitlines()[-1].startswith("done: the measured acceptance length is in")


def test_an_engine_reporting_nothing_fails_the_cell(job):
    run = subprocess.run(acceptance_argv(job, ""), env=job["env"], capture_output=True, text=True, timeout=180)
    assert run.returncode == 1
    assert "error: acceptance: the engine reported no acceptance length" in run.stderr
    assert json.loads((job["out"] / "status.json").read_text())["phase"] == "acceptance"
    assert json.loads((job["out"] / "acceptance.json").read_text())["acceptance-length"] is None


def test_dry_run_carries_the_step_count_and_the_metric_reads(job):
    argv = acceptance_argv(job, "") + ["--dry-run"]
    run = subprocess.run(argv, env=job["env"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "# acceptance: the engine's metrics, before and after the client" in run.stdout
    assert "GET http://127.0.0.1:" in run.stdout and "/server_info" in run.stdout


def test_not_a_cell_is_refused(job):
    argv = acceptance_argv(job, "")
    (job["dir"] / "cell.json").write_text(json.dumps(stub_row()))
    run = subprocess.run(argv, env=job["env"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 or run.returncode == 1
    assert "not a SPEED-Bench collection cell" in run.stderr and "Traceback" not in run.stderr


VLLM_BEFORE = 'vllm:spec_decode_num_drafts_total{engine="0"} 100.0\nvllm:spec_decode_num_accepted_tokens_total{engine="0"} 150.0\n'
VLLM_AFTER = ('# TYPE vllm:spec_decode_num_drafts_total counter\n'
              'vllm:spec_decode_num_drafts_total{engine="0"} 300.0\nvllm:spec_decode_num_drafts_total{engine="1"} 100.0\n'
              'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 450.0\n'
              'vllm:spec_decode_num_accepted_tokens_total{engine="1"} 200.0\n')


@pytest.mark.parametrize("engine, before, after, length, problem", [
    ("sglang", {}, {"server_info.json": json.dumps({"internal_states": [{"avg_spec_accept_length": 3.0},
                                                                       {"avg_spec_accept_length": 3.5}]})},
     3.25, ""),
    ("sglang", {}, {"server_info.json": "{}", "metrics.txt": 'sglang:spec_accept_length{tp_rank="0"} 2.5\n'}, 2.5, ""),
    ("sglang", {}, {"server_info.json": "not json"}, None, "reported no acceptance length"),
    ("sglang", {}, {}, None, "reported no acceptance length"),
    # the window's deltas, every label set summed: drafts 400-100, accepted 650-150 -> 1 + 500/300
    ("vllm", {"metrics.txt": VLLM_BEFORE}, {"metrics.txt": VLLM_AFTER}, round(1 + 500 / 300, 4), ""),
    ("vllm", {"metrics.txt": VLLM_AFTER}, {"metrics.txt": VLLM_AFTER}, None, "did not grow"),
    ("vllm", {}, {"metrics.txt": "vllm:num_requests_running 0\n"}, None, "has no vllm:spec_decode_num_drafts_total"),
    ("trtllm", {}, {}, None, "publishes no acceptance metric"),
])
def test_measure(engine, before, after, length, problem):
    m = measure(engine, before, after)
    assert m.length == length and problem in m.problem


def test_range_is_one_to_mtp_plus_one():
    assert check_range(Measured(4.2, "x"), 3).length is None
    assert check_range(Measured(4.0, "x"), 3).length == 4.0
    assert check_range(Measured(0.5, "x"), None).length == 0.5    # no step count known: nothing to judge by


def test_prometheus_skips_comments_and_garbage():
    assert prometheus("# HELP x y\nx{a=\"1\"} 2\nx{a=\"2\"} 3\ny NaN\nz abc\n") == {"x": 5.0}


def test_spec_args_per_engine():
    assert spec_args("sglang", {"speculative-algorithm": "NEXTN", "speculative-num-steps": 3}, 1) == {
        "speculative-algorithm": "NEXTN", "speculative-num-steps": 1, "speculative-num-draft-tokens": 2}
    assert spec_args("vllm", {"speculative-config": '{"method":"mtp","num_speculative_tokens":3}'}, 2) == {
        "speculative-config": '{"method":"mtp","num_speculative_tokens":2}'}
    for engine, args in (("sglang", {}), ("vllm", {}), ("trtllm", {"x": 1})):
        with pytest.raises(Exception, match="no speculative decoding|no acceptance metric"):
            spec_args(engine, args, 2)


def test_speedbench_argv_uses_the_dataset_file():
    argv = ["aiperf", "profile", "--isl", "1024", "--osl", "1024", "--extra-inputs", "ignore_eos:true",
            "--request-count", "40", "--warmup-request-count", "8", "--artifact-dir", "a"]
    out = speedbench_argv(argv, 4, False, "/data/speed-bench.jsonl")
    assert out == ["aiperf", "profile", "--osl", "4096", "--request-count", "80", "--warmup-request-count", "4",
                   "--custom-dataset-type", "speed-bench-coding", "--input-file", "/data/speed-bench.jsonl",
                   "--extra-inputs", '{"chat_template_kwargs":{"enable_thinking":false}}', "--artifact-dir", "a"]
