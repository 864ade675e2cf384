"""A runner with AMD GPUs (runners.yaml `gpu-vendor: amd`, the example's MI355X): its containers get ROCm's
devices where NVIDIA's runtime is used, its GPUs are limited by ROCm's variable, listed by amd-smi, and no
nvidia-smi sampler is started (pure; the example repository's ATOM rows)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ci_tools.cli import cli
from ci_tools.runner import nodecheck
from ci_tools.runner.backends import Host, gpu_sampler, launches, node_check, render_dry_run
from ci_tools.runner.plan import Settings, build_plan
from ci_tools.config.load import load_recipe
from ci_tools.config.recipe import resolve_point

ROOT = Path(__file__).resolve().parents[2]
RECIPE = "recipes/mi355x-dsv41flash-fp4-atom/fixed-seq.yaml"


def _plan():
    recipe = load_recipe(ROOT / RECIPE, RECIPE)
    point = resolve_point(recipe, 8, 8, True, 128)
    row = {"tp": 8, "ep": 8, "dp-attn": True, "conc": 128, "image": recipe.image, "model": recipe.model,
           "isl": 8192, "osl": 1024, "runner": "mi355x"}
    return build_plan(row, point, Settings(), "/job")


AMD = Host(label="cit-x", vendor="amd", gpu_devices=["0", "1", "2", "3", "4", "5", "6", "7"])


def test_docker_gives_the_container_rocms_devices_not_nvidias_runtime():
    server = launches(_plan(), "docker", Settings(), AMD)[0].argv
    assert "--gpus" not in server
    for pair in (["--device", "/dev/kfd"], ["--device", "/dev/dri"], ["--group-add", "video"],
                 ["--group-add", "render"], ["--security-opt", "seccomp=unconfined"]):
        at = server.index(pair[0])
        assert any(server[i:i + 2] == pair for i in range(at, len(server) - 1)), pair
    assert "ROCR_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in server
    nvidia = launches(_plan(), "docker", Settings(), Host(label="cit-x"))[0].argv
    assert "--gpus" in nvidia and "/dev/kfd" not in nvidia


def test_a_process_is_limited_by_rocms_variable():
    server = launches(_plan(), "process", Settings(), Host(label="cit-x", vendor="amd", gpu_devices=["4", "5"]))[0]
    assert server.env.get("ROCR_VISIBLE_DEVICES") == "4,5" and "CUDA_VISIBLE_DEVICES" not in server.env


def test_no_nvidia_smi_sampler_on_amd_and_the_dry_run_says_so():
    assert gpu_sampler(_plan(), "docker", AMD) is None
    text = render_dry_run(_plan(), "docker", Settings(), AMD)
    assert "# GPU telemetry: none (amd GPUs: ci-tools samples nvidia-smi only)" in text
    assert "nvidia-smi --query" not in text and "nvidia-smi -L" not in text
    assert "amd-smi list" in node_check(_plan(), "docker", Settings(), "amd").argv[-1]


# `amd-smi list` prints each GPU as a "GPU: N" line with its BDF and UUID indented below it
AMD_LIST = "".join(f"GPU: {i}\n    BDF: 0000:{i + 5:02x}:00.0\n    UUID: 1fff74a1-0000-1000-80ab-d12bbd1ee6d{i}\n"
                   for i in range(8))


@pytest.mark.parametrize("output,need,devices,expect", [
    (AMD_LIST + "amd_smi=0\nmodel=ok\ndisk_free_kb=99999999\ndisk_path=/h\n", 8, None, []),
    (AMD_LIST + "amd_smi=0\nmodel=ok\ndisk_free_kb=99999999\ndisk_path=/h\n", 2, ["6", "9"],
     ["GPUs: device(s) 9 given to this runner are not on the node (amd-smi lists 0, 1, 2, 3, 4, 5, 6, 7)"]),
    ("amd_smi=missing\nmodel=ok\ndisk_free_kb=99999999\ndisk_path=/h\n", 8, None,
     ["GPUs: amd-smi is not on the node's PATH, so no AMD GPU or driver is usable there"]),
    ("".join(AMD_LIST.splitlines(keepends=True)[:6]) + "amd_smi=0\nmodel=ok\ndisk_free_kb=99999999\ndisk_path=/h\n", 8, None,
     ["GPUs: the point needs 8, the node shows 2 (`amd-smi list`)"]),
])
def test_amd_node_check_verdicts(output, need, devices, expect):
    found = nodecheck.problems(output, need_gpus=need, devices=devices, model="org/m", model_path="/s/org/m",
                               hf_cache="/h", vendor="amd")
    assert [f[:len(w)] for f, w in zip(found, expect)] == expect and len(found) == len(expect), found


def test_amd_node_check_script_runs_in_sh(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    bin_dir = tmp_path / "bin"   # the script's tools and a stand-in amd-smi printing the list above
    bin_dir.mkdir()
    for tool in ("sh", "df", "awk", "dirname", "cat"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    (tmp_path / "list.txt").write_text(AMD_LIST)
    (bin_dir / "amd-smi").write_text(f"#!{shutil.which('sh')}\n[ \"$1\" = list ] && exec cat {tmp_path / 'list.txt'}\n"
                                     "exit 2\n")
    (bin_dir / "amd-smi").chmod(0o755)
    out = subprocess.run([str(bin_dir / "sh"), "-c", nodecheck.script(str(tmp_path / "m"), str(tmp_path), "amd")],
                         capture_output=True, text=True, env={"PATH": str(bin_dir)}).stdout
    facts, gpus = nodecheck.parse(out)
    assert facts["amd_smi"] == "0" and [g["index"] for g in gpus] == [str(i) for i in range(8)]
    assert gpus[3]["uuid"] == "1fff74a1-0000-1000-80ab-d12bbd1ee6d3"


def test_the_example_amd_row_dry_runs_with_rocm(tmp_path):
    row = {"config-key": "dsv41flash-fp4-mi355x-atom", "tp": 8, "ep": 8, "dp-attn": True, "conc": 128,
           "image": load_recipe(ROOT / RECIPE, RECIPE).image, "model": "deepseek-ai/DeepSeek-V4.1-Flash",
           "isl": 8192, "osl": 1024, "runner": "mi355x", "precision": "fp4", "framework": "atom",
           "exp-name": "dsv41flash_8k1k", "spec-decoding": "none"}
    (tmp_path / "row.json").write_text(json.dumps(row))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(tmp_path / "row.json"), "--dry-run", "--root",
                                   str(ROOT), "--out", "out", "--runner-name", "", "--backend", "docker"],
                             env={"CUDA_VISIBLE_DEVICES": None, "CI_TOOLS_GPUS": None})
    assert res.exit_code == 0, res.output
    assert "--device /dev/kfd" in res.output and "--gpus" not in res.output
    assert "python3 -m atom.entrypoints.openai_server" in res.output and "--enable-dp-attention" in res.output


def test_the_amd_job_lists_its_gpus_with_amd_smi_and_starts_no_sampler():
    from ci_tools.runner.budget import job_budget
    from ci_tools.runner.produce import single_job

    spec = single_job(_plan(), "docker", Settings(), AMD, job_budget(None), "/job", "")
    assert spec.telemetry is None
    assert spec.check is not None and "amd-smi list" in spec.check.proc.argv[-1]
    assert spec.check.judge(AMD_LIST + "amd_smi=0\nmodel=ok\ndisk_free_kb=99999999\ndisk_path=/h\n") == []
