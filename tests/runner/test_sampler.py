"""The GPU telemetry sampler's query (runner/sampler.py) against the one recorded on two real H200s
(tests/data/nvidia-smi-h200/, nvidia-smi-h200-selftest/), the self-test's reading of GPU memory from it,
and the node check's verdicts."""

from __future__ import annotations

import pytest

from ci_tools import names
from ci_tools.results import telemetry
from ci_tools.runner import nodecheck, selftest
from ci_tools.runner.sampler import sampler_argv
from tests.conftest import NVIDIA_SMI_H200, NVIDIA_SMI_H200_SELFTEST

H200S = [NVIDIA_SMI_H200, NVIDIA_SMI_H200_SELFTEST]
each_h200 = pytest.mark.parametrize("folder", H200S, ids=lambda p: p.name)


@each_h200
def test_the_recorded_query_is_the_one_the_sampler_sends(folder):
    readme = " ".join((folder / "README.md").read_text().split())
    assert f"--query-gpu={','.join(names.GPU_TELEMETRY_FIELDS)} --format=csv" in readme.replace(", ", ",")
    argv = sampler_argv(["2", "3"])
    assert argv[:2] == ["nvidia-smi", f"--query-gpu={','.join(names.GPU_TELEMETRY_FIELDS)}"]
    assert argv[2:] == ["--format=csv,nounits", "--loop-ms=1000", "--id=2,3"]


@pytest.mark.parametrize("csv", ["telemetry-load.csv", "telemetry-idle-noheader.csv"])
@each_h200
def test_the_selftest_reads_memory_as_the_results_parser_does(folder, csv):
    """The self-test's own reading of memory.used (runner side) gives what results/telemetry.py reads from
    the same recorded output, and skips what is not a sample."""
    text = (folder / csv).read_text()
    samples, _ = telemetry.parse_csv(text)
    want = [s["mem_used_mib"] or 0.0 for s in samples]
    assert want and selftest.memory_used(text) == want
    na = text.splitlines()[-1].split(", ")
    na[names.GPU_TELEMETRY_FIELDS.index("memory.used")] = "[N/A]"
    noise = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver\n"
    assert selftest.memory_used(noise + text + ", ".join(na) + "\n") == want + [0.0]


L_LINES = "\n".join(f"GPU {i}: NVIDIA H200 (UUID: GPU-5e1f0c2a-7b3d-4c9e-8a61-2f4d9b0e000{i})" for i in range(4))


def check_output(gpus: str = L_LINES, smi: str = "0", model: str = "ok", free_kb: int = 50 * 2**20) -> str:
    return f"{gpus}\nnvidia_smi={smi}\nmodel={model}\ndisk_free_kb={free_kb}\ndisk_path=/mnt/hf_hub_cache\n"


@pytest.mark.parametrize("output,need,devices,expect", [
    (check_output(), 4, None, []),
    (check_output(), 2, ["2", "3"], []),
    (check_output(), 1, ["GPU-5e1f0c2a-7b3d-4c9e-8a61-2f4d9b0e0003"], []),
    (check_output(), 8, None, ["GPUs: the point needs 8, the node shows 4"]),
    (check_output(), 2, ["3", "7"], ["GPUs: device(s) 7 given to this runner are not on the node"]),
    (check_output(gpus="", smi="missing"), 1, None, ["GPUs: nvidia-smi is not on the node's PATH"]),
    (check_output(gpus="NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", smi="9"),
     1, None, ["GPUs: `nvidia-smi -L` failed (exit 9)"]),
    (check_output(model="missing"), 1, None, ["model: org/m is not in the model store (/store/org/m does not exist)"]),
    (check_output(model="no-config"), 1, None, ["model: /store/org/m exists but has no config.json"]),
    (check_output(free_kb=5 * 2**20), 1, None, ["disk: 5.0 GiB free on /mnt/hf_hub_cache"]),
    ("nvidia_smi=0\n", 0, None, ["model: the check printed no model line", "disk: could not read"]),
])
def test_node_check_verdicts(output, need, devices, expect):
    found = nodecheck.problems(output, need_gpus=need, devices=devices, model="org/m", model_path="/store/org/m",
                               hf_cache="/mnt/hf_hub_cache")
    assert len(found) == len(expect), found
    for got, want in zip(found, expect):
        assert got.startswith(want), (got, want)


def test_node_check_script_runs_in_sh(tmp_path):
    import subprocess

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    import shutil

    bin_dir = tmp_path / "bin"  # a PATH with the script's tools and no nvidia-smi, even on a GPU machine
    bin_dir.mkdir()
    for tool in ("sh", "df", "awk", "dirname"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    out = subprocess.run([str(bin_dir / "sh"), "-c", nodecheck.script(str(tmp_path / "m"), str(tmp_path / "no" / "x"))],
                         capture_output=True, text=True, env={"PATH": str(bin_dir)}).stdout
    facts, gpus = nodecheck.parse(out)
    assert facts["model"] == "ok" and facts["nvidia_smi"] == "missing" and gpus == []
    assert int(facts["disk_free_kb"]) > 0 and facts["disk_path"] == str(tmp_path)
