"""`runner profile`: the stub engine (SGLang's profile endpoints, per-rank trace files) behind the real
AIPerf; the dry run of the seed's DEP2 c64 row parses with SGLang's own parser and carries the switch."""

from __future__ import annotations

import gzip
import json
import subprocess

import pytest

from ci_tools.errors import InputError
from ci_tools.github.models import PERMISSION_NOT_FOUND
from ci_tools.runner.profile import merge_traces, profiler_switch, requester_refusal, window_argv


def profile_argv(job, *extra: str) -> list[str]:
    argv = job["argv"]()
    argv[argv.index("run")] = "profile"
    return argv + list(extra)


def test_profile_merges_the_ranks_traces(job):
    run = subprocess.run(profile_argv(job, "--requests", "4"), env=job["env"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr + run.stdout
    traces = job["out"] / "profile_traces"
    assert sorted(p.name for p in traces.iterdir()) == ["README.md", "ci-tools-TP-0.trace.json.gz",
                                                         "ci-tools-TP-1.trace.json.gz", "merged.trace.json.gz"]
    merged = json.loads(gzip.decompress((traces / "merged.trace.json.gz").read_bytes()))
    names = {e["pid"]: e["args"]["name"] for e in merged["traceEvents"] if e.get("name") == "process_name"}
    assert names == {0: "TP-0: python3", 1: "TP-0: 0", 1000: "TP-1: python3", 1001: "TP-1: 1"}
    kernels = [e for e in merged["traceEvents"] if e.get("name") == "gemm_kernel"]
    # the window ran between start and stop: 4 requests plus one warmup per lane (conc 2)
    assert [k["args"]["requests"] for k in kernels] == [6, 6]
    assert "ui.perfetto.dev" in (traces / "README.md").read_text()
    assert json.loads((job["out"] / "status.json").read_text())["ok"] is True
    # the next step is the trace viewer, not `results process` (the profiler perturbed the window)
    assert run.stdout.splitlines()[-1].startswith(f"done: traces merged into {traces}/merged.trace.json.gz; next: "
                                                  "open it in https://ui.perfetto.dev")


def test_profile_of_an_engine_without_the_switch_fails_cleanly(job):
    # the stub refuses /start_profile without SGLANG_TORCH_PROFILER_DIR or output_dir, as the engine would
    argv = profile_argv(job)
    i = argv.index("--server-cmd") + 1
    argv[i] = "env -u SGLANG_TORCH_PROFILER_DIR " + argv[i]
    run = subprocess.run(argv, env=job["env"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr   # output_dir in the body still names the folder
    argv[i] = argv[i] + " --ranks 0"
    run = subprocess.run(argv, env=job["env"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "error: traces: the engine wrote no trace file" in run.stderr
    assert json.loads((job["out"] / "status.json").read_text())["phase"] == "traces"


def test_window_is_a_request_count():
    argv = ["aiperf", "profile", "--benchmark-duration", "3600", "--warmup-request-count", "640",
            "--artifact-dir", "x"]
    assert window_argv(argv, 64, None) == ["aiperf", "profile", "--warmup-request-count", "64",
                                           "--request-count", "128", "--artifact-dir", "x"]


def test_merge_keeps_ranks_apart():
    a = {"traceEvents": [{"ph": "X", "pid": 7, "tid": 1, "name": "k"}]}
    merged = merge_traces([("p-TP-0.trace.json", a), ("p-TP-1.trace.json", a)])
    assert sorted({e["pid"] for e in merged["traceEvents"]}) == [0, 1000]


@pytest.mark.parametrize("permission, refused", [
    ("admin", None), ("maintain", None), ("write", None),
    ("triage", "has triage permission"), ("read", "has read permission"),
    ("none", "is no collaborator of this repository"),
    # GitHub answers 404 for some logins that are not collaborators (an app's bot, a deleted user)
    (PERMISSION_NOT_FOUND, "is no collaborator of this repository"),
])
def test_only_a_maintainer_may_request_profiling(permission, refused):
    got = requester_refusal("ann", permission)
    if refused is None:
        assert got is None
    else:
        assert got.startswith(f"ann may not request profiling: ann {refused}; only maintainers "
                              "(admin, maintain, write permission)")


def test_the_maintainer_permissions_are_those_of_use():
    """One definition: who may request a profile is who may `/use` a run."""
    from ci_tools import names
    from ci_tools.prbot.commands import WRITE_PERMISSIONS

    assert WRITE_PERMISSIONS is names.MAINTAINER_PERMISSIONS


@pytest.mark.parametrize("engine, switch", [
    ("sglang", ({"SGLANG_TORCH_PROFILER_DIR": "/t"}, ())),
    ("vllm", ({"VLLM_TORCH_PROFILER_DIR": "/t"},
              ("--profiler-config", '{"profiler": "torch", "torch_profiler_dir": "/t"}'))),
    # TensorRT-LLM's switch is a range of iterations fixed at start: the refusal names it and why
    ("trtllm", "TLLM_PROFILE_START_STOP=A-B, a range of engine iterations"),
    ("sglang-router", "no profiler switch ci-tools knows"),
])
def test_profiler_switch_per_engine(engine, switch):
    if isinstance(switch, tuple):
        assert profiler_switch(engine, "/t") == switch
        return
    with pytest.raises(InputError) as err:
        profiler_switch(engine, "/t")
    assert switch in str(err.value)
    if engine == "trtllm":
        assert "no start/stop profile endpoint" in str(err.value) and "TLLM_TORCH_PROFILE_TRACE" in str(err.value)


@pytest.mark.parametrize("args, message", [
    (["--authorize-only"], "--authorize-only checks --requested-by LOGIN"),
    (["--dry-run"], "Missing option '--row'"),
])
def test_usage_errors_of_the_requester_check(args, message):
    import sys

    res = subprocess.run([sys.executable, "-m", "ci_tools", "runner", "profile", *args], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2 and message in res.stderr and "Traceback" not in res.stderr
