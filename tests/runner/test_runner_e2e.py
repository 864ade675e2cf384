"""End to end with real parts: the runner starts a stub OpenAI server as a process, waits for it,
runs the real AIPerf 0.13 offline, and `results process` is checked against values computed here,
independently, from the per-request records. Fault tests check that nothing is left running.
"""

from __future__ import annotations

import hashlib
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest


def independent(jsonl: Path, gpus: int) -> dict:
    """The headline metrics recomputed with json + statistics, sharing no code with ci_tools.results."""
    ok = []
    for line in jsonl.read_text().splitlines():
        rec = json.loads(line)
        if rec["metadata"].get("benchmark_phase") != "profiling" or rec.get("error"):
            continue
        ok.append(rec)
    m = lambda r, k: r["metrics"][k]["value"]  # noqa: E731
    span = (max(r["metadata"]["request_end_ns"] for r in ok) - min(r["metadata"]["request_start_ns"] for r in ok)) / 1e9
    isl = sum(m(r, "input_sequence_length") for r in ok)
    osl = sum(m(r, "output_sequence_length") for r in ok)

    def q(values, p):  # 'inclusive' quantiles interpolate linearly between closest ranks
        return statistics.quantiles(values, n=100, method="inclusive")[p - 1]

    # a latency counts only when positive (results.records' rule): under CPU load AIPerf can read two
    # streamed tokens at once and record an inter-token latency of exactly 0
    itl_s = [m(r, "inter_token_latency") / 1000 for r in ok if m(r, "inter_token_latency") > 0]
    ttft_s = [m(r, "time_to_first_token") / 1000 for r in ok if m(r, "time_to_first_token") > 0]
    norm = [m(r, "request_latency") / 1000 / m(r, "output_sequence_length") for r in ok
            if m(r, "request_latency") > 0]
    return {"n": len(ok), "duration": span, "tok_s_gpu": (isl + osl) / span / gpus,
            "output_tok_s_gpu": osl / span / gpus, "input_tok_s_gpu": isl / span / gpus,
            "intvty_p90": 1 / q(itl_s, 90), "intvty_p50": 1 / statistics.median(itl_s),
            "intvty_mean": 1 / statistics.fmean(itl_s), "intvty_std": statistics.pstdev([1 / x for x in itl_s]),
            "e2e_norm_p90": 1 / q(norm, 90), "ttft_p90": q(ttft_s, 90), "ttft_p50": statistics.median(ttft_s),
            "ttft_p95": q(ttft_s, 95), "ttft_std": statistics.pstdev(ttft_s)}


def test_runner_then_results_process_matches_independent_values(job):
    t0 = time.monotonic()
    gh_out = job["dir"] / "github_output"
    run = subprocess.run([*job["argv"](), "--format", "github"], env={**job["env"], "GITHUB_OUTPUT": str(gh_out)},
                         capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    assert run.returncode == 0, run.stderr + run.stdout
    out = job["out"]
    assert "ready: http://127.0.0.1" in run.stderr
    for name in ("job.json", "commands.txt", "server.log", "client.log", "status.json",
                 "aiperf_artifacts/profile_export.jsonl", "aiperf_artifacts/profile_export_aiperf.json"):
        assert (out / name).exists(), name
    assert json.loads((out / "status.json").read_text())["ok"] is True
    # AIPerf's memory-mapped dataset files went to the job directory and were removed with the job
    assert not (out / "aiperf_tmp").exists()
    assert not list(job["systmp"].glob("aiperf_mmap_*"))
    outputs = dict(line.split("=", 1) for line in gh_out.read_text().splitlines())
    rf = "stub_tp2_conc2_fp4_sglang_tp2-ep1-dpafalse_spec-mtp_conc2"
    record = (out / "client_exports.sha256").read_bytes()
    assert outputs == {"result-filename": rf, "out-dir": str(out), "artifact-result": f"bmk_{rf}",
                       "artifact-job": f"job_{rf}", "artifact-server-logs": f"server_logs_{rf}",
                       "export-sha256": hashlib.sha256(record).hexdigest()}
    # every file AIPerf wrote was hashed when it exited, as sha256sum checks them, and the log shows each
    recorded = [line.split("  ", 1)[1] for line in record.decode().splitlines()]
    written = sorted(p.relative_to(out).as_posix() for p in (out / "aiperf_artifacts").rglob("*") if p.is_file())
    assert recorded == written and "aiperf_artifacts/profile_export.jsonl" in recorded
    assert subprocess.run(["sha256sum", "--strict", "-c", "client_exports.sha256"], cwd=out,
                          capture_output=True).returncode == 0
    assert f"recorded in client_exports.sha256: sha256 {outputs['export-sha256']}" in run.stderr
    assert f"::notice title=runner run%3A chain of custody::the client's exports are recorded in " \
           f"client_exports.sha256, sha256 {outputs['export-sha256']}" in run.stdout, run.stdout
    # the recipe's env and synthetic acceptance reached the server process
    assert "SGLANG_SIMULATE_ACC_LEN" in (out / "commands.txt").read_text()

    proc = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(out), "--format", "json",
                           "--export-sha256", outputs["export-sha256"]],
                          env=job["env"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((out / "result.json").read_text())
    assert result["valid"] is True, result["failures"]
    assert result["custody"] == {"record": "client_exports.sha256", "sha256": outputs["export-sha256"],
                                 "checked": True, "files": len(recorded), "anchored": True}
    want = independent(out / "aiperf_artifacts/profile_export.jsonl", gpus=2)
    h = result["headline"]
    approx = lambda x: pytest.approx(x, rel=1e-9)  # noqa: E731
    assert result["requests"]["successful"] == want["n"] > 0
    assert result["requests"]["accounting"]["records_warmup_dropped"] == 2 * 10  # 10 per lane, conc 2
    assert result["requests"]["errors"] == 0
    assert result["gpus"] == 2
    assert result["duration_s"] == approx(want["duration"])
    assert h["tok_s_gpu"] == approx(want["tok_s_gpu"])
    assert result["throughput"]["per_gpu"]["output_tok_s_gpu"] == approx(want["output_tok_s_gpu"])
    assert result["throughput"]["per_gpu"]["input_tok_s_gpu"] == approx(want["input_tok_s_gpu"])
    assert h["intvty_p90"] == approx(want["intvty_p90"])
    assert h["intvty_p50"] == approx(want["intvty_p50"])
    assert result["intvty"]["mean"] == approx(want["intvty_mean"])
    assert result["intvty"]["std"] == approx(want["intvty_std"])
    assert result["e2e_norm_intvty"]["p90"] == approx(want["e2e_norm_p90"])
    assert h["ttft_p90_s"] == approx(want["ttft_p90"])
    assert h["ttft_p50_s"] == approx(want["ttft_p50"])
    assert result["latency_s"]["ttft"]["p95"] == approx(want["ttft_p95"])
    assert result["latency_s"]["ttft"]["std"] == approx(want["ttft_std"])
    assert h["intvty_p90"] < h["intvty_p50"]  # the P90 is the slow tail
    # the node check saw the (recorded) GPUs; the sampler recorded the job's two GPUs over the benchmark
    assert (out / "node_check.txt").read_text().count("NVIDIA H200") == 4
    tel = result["gpu_telemetry"]
    assert [g["index"] for g in tel["gpus"]] == ["0", "1"] and tel["problems"] == []
    assert tel["window_s"] == pytest.approx(want["duration"], rel=1e-6) and tel["energy_j"] > 0
    assert tel["energy_per_token"]["j_per_output_token"] == approx(tel["energy_j"] / result["tokens"]["output_total"])
    print(f"e2e runner job took {elapsed:.1f} s")


def test_server_never_ready(job):
    run = subprocess.run(job["argv"]("--never-ready", extra=["--ready-timeout", "2"]), env=job["env"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert "error: ready: the server was not ready within 2 s" in run.stderr
    assert "stub: serving stub" in run.stderr  # the log tail is shown
    status = json.loads((job["out"] / "status.json").read_text())
    assert {k: status[k] for k in ("ok", "phase", "exit_code")} == {"ok": False, "phase": "ready", "exit_code": 1}
    assert status["label"].startswith("cit-") and status["stop_s"] < 10


def test_server_dies_mid_run(job):
    run = subprocess.run(job["argv"]("--die-after 25", duration=30), env=job["env"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1
    assert "the server exited with code 17 during the benchmark" in run.stderr
    assert "simulated engine crash" in run.stderr


def test_aiperf_fails(job):
    argv = job["argv"]()
    argv[argv.index("local/stubtok")] = "local/no-such-tokenizer"
    run = subprocess.run(argv, env=job["env"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    assert "error: client: AIPerf exited with code" in run.stderr
    assert json.loads((job["out"] / "status.json").read_text())["phase"] == "client"
    # no exports: results process says so clearly
    proc = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(job["out"])],
                          env=job["env"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "no profile_export.jsonl" in proc.stderr


def test_sigterm_during_client(job):
    p = subprocess.Popen(job["argv"](duration=60), env=job["env"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    client_log = job["out"] / "client.log"
    while time.monotonic() < deadline and not (client_log.exists() and client_log.stat().st_size > 0):
        time.sleep(0.2)
    time.sleep(1.0)
    assert p.poll() is None, p.communicate()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert "cancelled by SIGTERM" in err
    assert json.loads((job["out"] / "status.json").read_text())["reason"] == "cancelled (SIGTERM)"


def test_aiperf_exit_zero_without_exports_is_a_failure(job):
    # a temp dir whose path is too long for AIPerf's ZMQ sockets: AIPerf 0.13 fails inside and exits 0
    long_tmp = job["dir"] / ("t" * 60) / ("u" * 40)
    long_tmp.mkdir(parents=True)
    run = subprocess.run(job["argv"](), env={**job["env"], "TMPDIR": str(long_tmp)}, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert "AIPerf exited 0 but did not write aiperf_artifacts/profile_export.jsonl" in run.stderr
    assert "longer than 107 characters" in run.stderr  # the client log tail says why


def test_an_export_the_engine_rewrites_after_the_client_exited_is_refused(job):
    """The engine rewrites AIPerf's records when the runner stops it, after AIPerf exited: the same data in
    other bytes, so every check of the data still passes and only the hashes taken at the client's exit
    can tell. `results process` refuses it, naming the file and both hashes; so it does when the record
    itself goes or is edited (the run step's output holds the record's hash)."""
    export = job["out"] / "aiperf_artifacts" / "profile_export.jsonl"
    gh_out = job["dir"] / "github_output"
    run = subprocess.run([*job["argv"](f"--rewrite-on-stop {export}"), "--format", "github"],
                         env={**job["env"], "GITHUB_OUTPUT": str(gh_out)}, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr + run.stdout
    assert f"stub: rewrote {export} on SIGTERM" in (job["out"] / "server.log").read_text()
    sealed = dict(line.split("=", 1) for line in gh_out.read_text().splitlines())["export-sha256"]
    then = next(line.split()[0] for line in (job["out"] / "client_exports.sha256").read_text().splitlines()
                if line.endswith("  aiperf_artifacts/profile_export.jsonl"))
    now = hashlib.sha256(export.read_bytes()).hexdigest()
    assert then != now

    def process(*extra: str) -> tuple[subprocess.CompletedProcess, dict]:
        proc = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(job["out"]), *extra],
                              env=job["env"], capture_output=True, text=True, timeout=60)
        return proc, json.loads((job["out"] / "result.json").read_text())

    proc, result = process("--export-sha256", sealed)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert result["valid"] is False
    # nothing but the hash found it: the records are the same data
    assert result["failures"] == [{"rule": "export-custody", "message":
                                   f"aiperf_artifacts/profile_export.jsonl changed after the client exited: "
                                   f"sha256 {then} then, {now} now"}]
    assert "export-custody" in proc.stderr or "1 rule(s) failed" in proc.stderr

    # the record edited to match (a later step): its own hash no longer matches the run step's output
    record = job["out"] / "client_exports.sha256"
    record.write_text(record.read_text().replace(then, now))
    proc, result = process("--export-sha256", sealed)
    assert proc.returncode == 1 and result["failures"][0]["rule"] == "export-custody"
    assert "the record was edited" in result["failures"][0]["message"]
    # the record removed
    record.unlink()
    proc, result = process("--export-sha256", sealed)
    assert proc.returncode == 1 and "the record of the client's exports was removed" in result["failures"][0]["message"]
    proc, result = process()       # without the step output: job.json says this runner keeps a record
    assert proc.returncode == 1 and "has lost it or was assembled by hand" in result["failures"][0]["message"]
