"""The Slurm image import (backends.import_script): one `enroot import` per image, under a file lock.

The script runs here as it runs in the job's first step, with real `sh` and `flock` and the enroot
stand-in of tests/runner/pyxis/ (real enroot cannot run on this machine: it needs user namespaces and
a registry to pull from, so what is not checked here is the pull itself and the squashfs it writes).
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time

import pytest

from ci_tools.runner.backends import import_script, squash_file
from runner_support import PYXIS, pyxis_log

IMAGE = "lmsysorg/sglang:v0.5.22-cu130@sha256:" + "ab" * 32


@pytest.mark.parametrize("image,expected", [
    (IMAGE, "/sq/lmsysorg+sglang+sha256+" + "ab" * 32 + ".sqsh"),        # the tag dropped: the digest decides
    ("nvcr.io/nvidia/trtllm@sha256:" + "0" * 64, "/sq/nvcr.io+nvidia+trtllm+sha256+" + "0" * 64 + ".sqsh"),
])
def test_one_file_per_pinned_image(image, expected):
    assert squash_file(image, "/sq/") == expected


def _env(tmp_path, seconds: float = 1.0) -> dict:
    return {**os.environ, "PATH": f"{PYXIS}{os.pathsep}{os.environ['PATH']}", "CIT_ENROOT_IMPORT_S": str(seconds),
            "CIT_PYXIS_LOG": str(tmp_path / "log.jsonl")}


def _start(script: str, env: dict) -> subprocess.Popen:
    return subprocess.Popen(["sh", "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def test_concurrent_jobs_import_the_image_once(tmp_path):
    sqsh = squash_file(IMAGE, str(tmp_path / "squash"))
    env = _env(tmp_path)
    procs = [_start(import_script(IMAGE, sqsh, 60), env) for _ in range(3)]   # three jobs, or three nodes
    outputs = [p.communicate(timeout=60)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outputs
    imports = pyxis_log(tmp_path / "log.jsonl")[1]
    assert [i["uri"] for i in imports] == ["docker://lmsysorg/sglang@sha256:" + "ab" * 32]
    assert sum("is already imported" in o for o in outputs) == 2
    assert os.path.isfile(sqsh) and not os.path.exists(sqsh + ".part")


def test_a_killed_import_leaves_nothing_that_looks_whole(tmp_path):
    sqsh = squash_file(IMAGE, str(tmp_path / "squash"))
    (tmp_path / "squash").mkdir()
    with open(sqsh + ".part", "w") as fh:     # what an import killed half-way leaves
        fh.write("half")
    p = _start(import_script(IMAGE, sqsh, 60), _env(tmp_path, seconds=30))
    deadline = time.monotonic() + 20
    while os.path.exists(sqsh + ".part"):     # the stale part is removed, then the import starts
        assert time.monotonic() < deadline and p.poll() is None, p.communicate()
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(p.pid, signal.SIGKILL)          # the job cancelled during the pull
    p.communicate(timeout=10)
    assert not os.path.exists(sqsh)
    again = subprocess.run(["sh", "-c", import_script(IMAGE, sqsh, 60)], env=_env(tmp_path, 0.1),
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    assert os.path.isfile(sqsh) and len(pyxis_log(tmp_path / "log.jsonl")[1]) == 1   # the second one finished


def test_a_lock_held_too_long_fails_with_the_reason(tmp_path):
    sqsh = squash_file(IMAGE, str(tmp_path / "squash"))
    (tmp_path / "squash").mkdir()
    with open(sqsh + ".lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)      # another job's import, still pulling
        res = subprocess.run(["sh", "-c", import_script(IMAGE, sqsh, 1)], env=_env(tmp_path),
                             capture_output=True, text=True, timeout=30)
    assert res.returncode == 75, res.stdout + res.stderr
    assert f"no lock on {sqsh}.lock within 1 s: another import holds it" in res.stderr
    assert pyxis_log(tmp_path / "log.jsonl")[1] == []


def test_enroot_refuses_what_the_script_must_avoid(tmp_path):
    """The stand-in holds enroot's rules: an existing output is refused, so the script removes a stale .part."""
    out = tmp_path / "x.sqsh"
    out.write_text("old")
    res = subprocess.run(["enroot", "import", "--output", str(out), "docker://example.org/a@sha256:" + "0" * 64],
                         env=_env(tmp_path, 0), capture_output=True, text=True)
    assert res.returncode == 1 and "File already exists" in res.stderr
    res = subprocess.run(["enroot", "import", "-o", str(tmp_path / "y.sqsh"), "docker://Example.org/A"],
                         env=_env(tmp_path, 0), capture_output=True, text=True)
    assert res.returncode == 1 and "Invalid image reference" in res.stderr


def test_a_node_that_does_not_see_the_job_directory_fails_before_importing(tmp_path):
    """Multi-node: the steps mount folders of the runner's job directory (Dynamo's store, the recipe's
    install), so a node that does not see the file the runner wrote there (its job.json) stops the job
    here, naming the node and the file."""
    sqsh = squash_file(IMAGE, str(tmp_path / "squash"))
    job = tmp_path / "job"
    job.mkdir()
    must_see = job / "job.json"
    res = subprocess.run(["sh", "-c", import_script(IMAGE, sqsh, 60, str(must_see))], env=_env(tmp_path, 0),
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 78, res.stdout + res.stderr
    assert f"{must_see} is not on this node" in res.stderr
    assert "all nodes mount at the same path" in res.stderr and not os.path.exists(sqsh)
    must_see.write_text("{}")                    # what the runner wrote before the allocation
    res = subprocess.run(["sh", "-c", import_script(IMAGE, sqsh, 60, str(must_see))], env=_env(tmp_path, 0),
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 0 and os.path.isfile(sqsh), res.stdout + res.stderr
