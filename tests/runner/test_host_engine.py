"""The engine a runner host runs itself (the process backend), as the first real-GPU run found it
(../shared/reference/gpu-smoke/README.md, "What it showed missing"): the model path from the model
store, the engine's version checked and recorded, an image only where a container runs, the offline
agentic path, and the open-files limit of the engine process."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tools import engines
from ci_tools.config.recipe import recipe_from_data, resolve_point
from ci_tools.errors import InputError
from ci_tools.runner.backends import Host, launches, model_path, node_check
from ci_tools.runner.plan import Settings, build_plan
from runner_support import STUB, stub_recipe, stub_row
from tests.engines.harness import dist_dir

RECIPE = {"recipe-version": 1, "config-key": "tiny", "engine": "vllm", "engine-versions": ["0.26.0"],
          "model": "org/tiny", "serve": {"args": {"max-model-len": 4096}},
          "points": {"tp1-c4": {"tp": 1, "ep": 1, "conc": 4}}}
ROW = {"model": "org/tiny", "model-prefix": "tiny", "precision": "bf16", "framework": "vllm", "runner": "h100",
       "tp": 1, "ep": 1, "conc": 4, "isl": 1024, "osl": 256, "exp-name": "tiny", "scenario-type": "fixed-seq-len"}
IMAGE = "vllm/vllm-openai:v0.26.0@sha256:" + "2" * 64


def plan_for(backend: str, recipe: dict, row: dict, **settings):
    point = resolve_point(recipe_from_data(recipe, "recipe.yaml"), 1, 1, False, 4)
    s = Settings(backend=backend, model_store="/data/models", **settings)
    return build_plan(row, point, s, "/tmp/out"), s


@pytest.mark.parametrize("backend, engine_sees", [
    ("process", "/data/models/org/tiny"),     # the host's engine reads the store itself
    ("docker", "/models/org/tiny"),           # the container sees the store at its mount point
    ("slurm", "/models/org/tiny"),
])
def test_the_engine_reads_the_model_the_node_check_looked_at(backend, engine_sees):
    recipe, row = {**RECIPE, "image": IMAGE}, {**ROW, "image": IMAGE}
    plan, settings = plan_for(backend, recipe, row)
    server = plan.proc("server")
    assert server.argv[:3] == ["vllm", "serve", engine_sees]
    # the node check always looks on the host, at the store the engine's path comes from
    assert model_path(plan, settings) == "/data/models/org/tiny"
    assert "/data/models/org/tiny/config.json" in node_check(plan, backend, settings).argv[-1]
    if backend == "docker":
        [lc] = [lc for lc in launches(plan, backend, settings, Host()) if lc.role == "server"]
        assert "/data/models:/models:ro" in lc.argv


def test_an_image_is_needed_only_where_a_container_runs():
    plan, _ = plan_for("process", RECIPE, ROW)       # neither the recipe nor the row names an image
    assert plan.image is None and plan.job_json()["point"]["image"] is None
    for backend in ("docker", "slurm"):
        with pytest.raises(InputError, match="the row has no `image`"):
            plan_for(backend, RECIPE, ROW)
    with pytest.raises(InputError, match="not pinned by digest"):
        plan_for("docker", {**RECIPE, "image": "vllm/vllm-openai:latest"}, {**ROW, "image": "vllm/vllm-openai:latest"})


@pytest.mark.parametrize("output, version", [
    ("0.26.0\n", "0.26.0"),
    ("INFO 12-07 04:01:02 [__init__.py:216] Automatically detected platform cuda.\n0.26.0\n", "0.26.0"),
    ("0.5.22rc0\n", "0.5.22rc0"),
    ("0.10.1.dev3+gabc1234.cu130\n", "0.10.1.dev3+gabc1234.cu130"),
    ("Traceback (most recent call last):\nModuleNotFoundError: No module named 'vllm'\n", None),
    ("", None),
])
def test_the_printed_version_is_the_last_line_that_is_one(output, version):
    assert engines.printed_version(output) == version


@pytest.mark.parametrize("installed, declared, ok", [
    ("0.26.0", ("0.26.0",), True),
    ("0.26", ("0.26.0",), True),
    ("0.26.0+cu130", ("0.26.0",), True),
    ("0.26.1", ("0.26.0",), False),
    ("0.25.9", ("0.26.0",), False),
    ("0.5.22rc0", ("0.5.21", "0.5.22"), True),      # a nightly between the releases it declares
    ("0.5.21.post2", ("0.5.21", "0.5.22"), True),
    ("0.5.23", ("0.5.21", "0.5.22"), False),
    ("0.5.20", ("0.5.21", "0.5.22"), False),
    ("0.5.23", (), True),                            # nothing declared: recorded, not checked
    (None, (), True),
    (None, ("0.5.21",), False),                      # declared, but no version printed
])
def test_the_installed_release_must_be_one_the_recipe_declares(installed, declared, ok):
    problems = engines.installed_version_problems("SGLang", installed, declared, "the runner host")
    assert (problems == []) is ok, problems
    if not ok:
        assert problems[0].startswith("engine: the runner host") and "engine-versions [" in problems[0]


def test_the_dry_run_shows_the_version_command_where_the_engine_runs(tmp_path):
    (tmp_path / "recipe.yaml").write_text(json.dumps(RECIPE))
    (tmp_path / "row.json").write_text(json.dumps({**ROW, "recipe": "recipe.yaml"}))
    run = subprocess.run([sys.executable, "-m", "ci_tools", "runner", "run", "--row", str(tmp_path / "row.json"),
                          "--root", str(tmp_path), "--backend", "process", "--model-store", "/data/models",
                          "--dry-run"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "# engine version (recipe's engine-versions: 0.26.0; log: engine_version.txt): vllm --version" in run.stdout
    assert "vllm serve /data/models/org/tiny" in run.stdout


def sglang_job(job, versions: list[str] | None, server_flags: str = ""):
    """The stub job with `engine-versions` declared and SGLang 0.5.21's real wheel where the engine runs."""
    recipe = stub_recipe()
    if versions is not None:
        recipe = recipe.replace("engine: sglang\n", f"engine: sglang\nengine-versions: {json.dumps(versions)}\n")
    (job["dir"] / "recipe.yaml").write_text(recipe)
    env = {**job["env"], "PYTHONPATH": os.pathsep.join(filter(None, [str(dist_dir("sglang", "0.5.21")),
                                                                     job["env"].get("PYTHONPATH")]))}
    return subprocess.run(job["argv"](server_flags), env=env, capture_output=True, text=True, timeout=120)


def test_an_engine_release_the_recipe_does_not_declare_is_refused_before_it_starts(job):
    run = sglang_job(job, ["0.5.22"])
    assert run.returncode == 1, run.stderr
    assert "the runner host has SGLang 0.5.21, but the recipe declares engine-versions [0.5.22]" in run.stderr
    assert "Traceback" not in run.stderr
    out = job["out"]
    status = json.loads((out / "status.json").read_text())
    assert status["phase"] == "version" and status["ok"] is False
    assert (out / "engine_version.txt").read_text().strip().endswith("0.5.21")
    assert not (out / "server.log").exists()        # the engine never started


def test_the_engine_release_is_recorded_in_job_and_result(job):
    run = sglang_job(job, ["0.5.21", "0.5.22"])
    assert run.returncode == 0, run.stderr
    out = job["out"]
    engine = json.loads((out / "job.json").read_text())["engine"]
    assert engine == {"name": "sglang", "version": "0.5.21", "declared": ["0.5.21", "0.5.22"], "backend": "process",
                      "image": None, "exit_code": 0}
    status = json.loads((out / "status.json").read_text())
    assert status["engine"] == engine and status["ready_s"] > 0
    proc = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(out)], env=job["env"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((out / "result.json").read_text())
    assert result["engine"] == engine and result["point"]["image"] is None


def test_the_offline_agentic_path_asks_for_exact_output_lengths(tmp_path):
    point = resolve_point(recipe_from_data({**RECIPE, "image": IMAGE}, "recipe.yaml"), 1, 1, False, 4)
    agentic = {**ROW, "image": IMAGE, "scenario-type": "agentic-coding", "duration": 3600}
    for dataset, ignore_eos in (("synthetic:1024:256", True), ("semianalysis-cc-traces-weka-062126", False)):
        plan = build_plan(agentic, point, Settings(dataset=dataset, duration_override_s=30), "/tmp/out")
        argv = plan.proc("client").argv
        assert ("--extra-inputs" in argv and argv[argv.index("--extra-inputs") + 1] == "ignore_eos:true") is ignore_eos
        assert argv[argv.index("--benchmark-duration") + 1] == "30" and plan.duration_s == 30
    with pytest.raises(InputError, match="synthetic:ISL:OSL, two positive token counts"):
        build_plan(agentic, point, Settings(dataset="synthetic:1024"), "/tmp/out")
    help_text = subprocess.run([sys.executable, "-m", "ci_tools", "runner", "run", "--help"], capture_output=True,
                               text=True).stdout
    assert "--duration" in help_text and "synthetic:ISL:OSL" in help_text and "ignore_eos" in help_text


def test_the_process_backend_raises_the_engines_open_files_limit(job):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = min(1024, hard)
    if low == hard:
        pytest.fail(f"this host's hard open-files limit is {hard}: the test needs one above 1024 to show the raise")
    seen = job["dir"] / "nofile"
    server = f"sh -c 'ulimit -n > {seen}; exec {sys.executable} {STUB} --port {{port}} --model {{model}}'"
    argv = job["argv"]()
    argv[argv.index("--server-cmd") + 1] = server

    def lower() -> None:   # the runner service's own soft limit
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))

    run = subprocess.run(argv, env=job["env"], capture_output=True, text=True, timeout=120, preexec_fn=lower)
    assert run.returncode == 0, run.stderr
    assert seen.read_text().strip() in (str(hard), "unlimited")
