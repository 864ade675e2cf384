"""The docker backend end to end against a real Docker daemon (Debian's docker.io; dev.py starts it).

`runner run --backend docker` runs the stub engine in a container of an image pinned by digest (built
here from this machine's Python and pulled from a registry on 127.0.0.1, docker_host.py), waits for it
through the host network, runs the real AIPerf 0.13 on the host and stops the container. Left out is
what this machine cannot grant: the GPU request (no NVIDIA container runtime, so `--gpus` is refused
with "could not select device driver") and an unlimited memlock (no CAP_SYS_RESOURCE here, so runc
refuses `--ulimit memlock=-1`; the stand-in passes the machine's hard limit instead). The client
stand-in in tests/runner/nogpu_docker/ changes exactly those two and records the argv the runner gave
it; everything else reaches the real daemon unchanged.
The cancel test replays GitHub's sequence (SIGINT, SIGTERM 7.5 s later, SIGKILL 2.5 s after that) and
then requires `docker ps -a` to show nothing carrying the job's label.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from docker_host import DockerUnavailable, build_pinned_image, check_daemon, docker, remove_image, start_registry
from runner_support import (AIPERF_NO_FLUSH, HERE, STUB, cancel_in_the_client, free_port, gpu_host_env, nothing_left_behind,
                            runner_run, step_in_its_client, stub_recipe, stub_row)

NOGPU_DOCKER = HERE / "nogpu_docker"


@pytest.fixture(scope="module")
def image():
    """The stub engine's image, pinned by digest and held by a registry on 127.0.0.1 for this module."""
    try:
        check_daemon()
        registry = start_registry(free_port())
    except DockerUnavailable as exc:
        pytest.fail(f"the docker tests need a Docker daemon: {exc}", pytrace=False)
    try:
        ref = build_pinned_image(registry)
    except DockerUnavailable as exc:
        registry.stop()
        pytest.fail(str(exc), pytrace=False)
    yield ref
    remove_image(ref)
    registry.stop()


def labelled(label: str) -> list[str]:
    res = docker("ps", "-a", "--filter", f"label=ci-tools.job={label}", "--format", "{{.Names}} {{.Status}}")
    assert res.returncode == 0, res.stderr
    return res.stdout.decode().splitlines()


@pytest.fixture
def djob(tmp_path, aiperf, hf_home, image):
    (tmp_path / "recipe.yaml").write_text(stub_recipe().replace("example.org/stub:1@sha256:" + "0" * 64, image))
    store = tmp_path / "models"
    (store / "stub").mkdir(parents=True)
    (store / "stub" / "config.json").write_text("{}")
    # the engine's code reaches the container the way a model does: through the read-only model mount
    (store / "stub_server.py").write_bytes(STUB.read_bytes())
    (tmp_path / "row.json").write_text(json.dumps(stub_row(image=image)))
    port = free_port()
    with nothing_left_behind() as box:
        host = gpu_host_env()
        env = box.env(hf_home, host, {"PATH": f"{NOGPU_DOCKER}{os.pathsep}{host['PATH']}",
                                      "CIT_DOCKER_LOG": str(tmp_path / "docker.jsonl"), "CUDA_VISIBLE_DEVICES": "2,3"},
                      AIPERF_NO_FLUSH)

        def argv(server_flags: str = "", duration: float = 2) -> list[str]:
            return runner_run(tmp_path, "row.json", backend="docker", aiperf=aiperf, hf_home=hf_home,
                              model_store=store, port=port, ready_timeout=60, duration=duration,
                              server_cmd=f"python3 /models/stub_server.py --port {{port}} --model {{model}} "
                                         f"{server_flags}")

        yield {"dir": tmp_path, "out": tmp_path / "out", "env": env, "argv": argv, "port": port}


def docker_runs(job, version: bool = False) -> list[list[str]]:
    """The `docker run`s of the job: the engine's (and router's); with `version`, the version command's too."""
    lines = (job["dir"] / "docker.jsonl").read_text().splitlines()
    runs = [a for a in map(json.loads, lines) if a[:1] == ["run"]]
    return runs if version else [a for a in runs if not a[a.index("--name") + 1].endswith("-version")]


# 2 ms between tokens, not the stub's 20 (its 20 warmup requests were 1.7 s of waiting), where no result's
# validity is judged: at 2 ms a loaded machine may join tokens into one chunk, which results refuses as ITL 0
QUICK = "--itl 0.002"


def test_docker_point_end_to_end(djob, image):
    t0 = time.monotonic()
    run = subprocess.run(djob["argv"](), env=djob["env"], capture_output=True, text=True, timeout=180)
    took = time.monotonic() - t0
    assert run.returncode == 0, run.stderr + run.stdout
    out = djob["out"]
    label = json.loads((out / "job.json").read_text())["label"]
    assert json.loads((out / "status.json").read_text())["ok"] is True
    assert f"ready: http://127.0.0.1:{djob['port']}" in run.stderr       # the host network
    # the engine ran in the container, from the pinned image, with the job's label and mounts
    server_log = (out / "server.log").read_text()
    assert "stub: serving stub on" in server_log and "POST /v1/chat/completions" in server_log, server_log
    # first the engine's version command, in a container of the image of its own, without a GPU
    version, argv = docker_runs(djob, version=True)
    assert version[version.index("--name") + 1] == f"{label}-version" and "--gpus" not in version
    assert version[version.index(image) + 1:][:2] == ["python3", "-c"]
    engine = json.loads((out / "job.json").read_text())["engine"]
    assert (engine["backend"], engine["image"], engine["declared"]) == ("docker", image, [])
    assert argv[argv.index("--label") + 1] == f"ci-tools.job={label}" and argv[argv.index("--name") + 1] == \
        f"{label}-server"
    assert argv[argv.index(image) + 1:][:2] == ["python3", "/models/stub_server.py"]
    # what the stand-in changed: the GPU request for the runner's GPUs, and the memlock limit
    assert argv[argv.index("--gpus") + 1] == '"device=2,3"' and "memlock=-1" in argv
    assert "--init" in argv and ["--network", "host"] == argv[argv.index("--network"):argv.index("--network") + 2]
    proc = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(out)], env=djob["env"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((out / "result.json").read_text())["valid"] is True
    assert labelled(label) == []                       # --rm, then `docker rm -f`: nothing of the job is left
    print(f"docker e2e: runner run {took:.1f} s")


def test_github_cancel_stops_the_container(djob):
    p = step_in_its_client(djob, djob["argv"](duration=120))
    label = json.loads((djob["out"] / "job.json").read_text())["label"]
    assert [line.split()[0] for line in labelled(label)] == [f"{label}-server"]     # running, labelled
    status, _, elapsed = cancel_in_the_client(djob, p)
    assert labelled(label) == [], "a container of the job outlived the cancel"
    print(f"docker cancel: stopped in {elapsed:.2f} s (stop_s {status['stop_s']})")


def test_the_daemon_refuses_the_gpu_request_here(image):
    """Why the stand-in drops `--gpus`: without an NVIDIA runtime the real daemon refuses it."""
    res = subprocess.run(["docker", "run", "--rm", "--gpus", '"device=0"', image, "python3", "-c", "1"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "could not select device driver" in res.stderr, res.stderr


def test_the_machine_refuses_an_unlimited_memlock_here(image):
    """Why the stand-in lowers `memlock=-1` (a GPU host's root, with CAP_SYS_RESOURCE, is granted it)."""
    import resource

    if resource.getrlimit(resource.RLIMIT_MEMLOCK)[1] == resource.RLIM_INFINITY:
        return   # this machine grants it; the stand-in then passes memlock=-1 through unchanged
    res = subprocess.run(["docker", "run", "--rm", "--ulimit", "memlock=-1", image, "python3", "-c", "1"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "setting rlimit type 8" in res.stderr, res.stderr


TRT_RECIPE = """recipe-version: 1
config-key: stub-trt
engine: trtllm
image: {image}
model: stub
serve:
  args: {{trust-remote-code: true}}
points:
  dep2-c2: {{tp: 2, ep: 2, dp-attn: true, conc: 2}}
"""


def test_the_engine_container_cannot_write_the_clients_exports(djob, image):
    """A TensorRT-LLM point with attention DP: the runner writes the engine's options file, the only file
    of the job directory its container sees, read-only. The stub engine in the container reads it, then
    tries to write into AIPerf's export folder, the options folder and the job directory, at start and
    again when it is stopped after AIPerf exited: none of it reaches the host, and the export judged is
    the one AIPerf left (its hashes match)."""
    d, out = djob["dir"], djob["out"]
    (d / "recipe.yaml").write_text(TRT_RECIPE.format(image=image))
    (d / "row.json").write_text(json.dumps(stub_row(image=image, framework="trt", ep=2, **{"dp-attn": True,
                                                                                       "spec-decoding": "none"})))
    options = out / "engine_files" / "extra-llm-api-options.yaml"
    targets = [out / "aiperf_artifacts" / "forged.jsonl", out / "aiperf_artifacts" / "profile_export.jsonl",
               options.with_name("forged"), out / "forged"]
    flags = f"{QUICK} --show {options} " + " ".join(f"--try-write {t}" for t in targets)
    gh_out = d / "github_output"
    run = subprocess.run([*djob["argv"](flags), "--format", "github"], env={**djob["env"], "GITHUB_OUTPUT": str(gh_out)},
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr + run.stdout
    log = (out / "server.log").read_text()
    assert f"stub: {options} reads 'enable_attention_dp: true\\n'" in log, log
    # what the container wrote elsewhere stayed in its own filesystem
    assert not (out / "aiperf_artifacts" / "forged.jsonl").exists() and not (out / "forged").exists()
    assert "written by the engine" not in (out / "aiperf_artifacts" / "profile_export.jsonl").read_text()
    for when in ("start", "stop"):
        assert f"stub: cannot write {options.with_name('forged')} at {when}: Read-only file system" in log, log
    argv = docker_runs(djob)[0]
    mounts = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    assert mounts[-1] == f"{options.parent}:{options.parent}:ro" and not any(
        m.split(":")[0] in (str(out), str(out / "aiperf_artifacts")) for m in mounts), mounts
    sealed = dict(line.split("=", 1) for line in gh_out.read_text().splitlines())["export-sha256"]
    proc = subprocess.run([sys.executable, "-m", "ci_tools", "results", "process", str(out), "--export-sha256", sealed],
                          env=djob["env"], capture_output=True, text=True, timeout=60)
    result = json.loads((out / "result.json").read_text())
    assert result["custody"]["checked"] is True and result["custody"]["anchored"] is True
    assert not [f for f in result["failures"] if f["rule"] == "export-custody"], result["failures"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
