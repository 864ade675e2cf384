"""Fixtures for the runner tests: the AIPerf executable, the offline stub tokenizer, a real local
Slurm, and `job`: the stub recipe's row on the process backend (nothing may be left running)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner_support import (AIPERF_NO_FLUSH, SOLO_NODE, STUB, aiperf_bin, free_port, gpu_host_env, lm_eval_bin,
                            nothing_left_behind,
                            runner_run, start_slurm, stub_recipe, stub_row)


@pytest.fixture(scope="session")
def aiperf() -> str:
    return aiperf_bin()


@pytest.fixture(scope="session")
def lm_eval() -> str:
    return lm_eval_bin()


@pytest.fixture(scope="session")
def hf_home(tmp_path_factory, aiperf) -> Path:
    """A Hugging Face cache holding the stub tokenizer `local/stubtok` (AIPerf's venv builds it)."""
    home = tmp_path_factory.mktemp("hf")
    python = str(Path(aiperf).with_name("python"))
    subprocess.run([python, str(Path(__file__).with_name("make_tokenizer.py")), str(home)], check=True,
                   capture_output=True)
    return home


@pytest.fixture(scope="session")
def slurm():
    """A one-node Slurm of this test session. Its node's name is no DNS name (NodeAddr 127.0.0.1), as on
    clusters whose node names only Slurm knows: the runner must reach the engine at the NodeAddr."""
    cluster = start_slurm(nodes=1, node=SOLO_NODE)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def cluster():
    """A three-node Slurm (4 fake GPUs a node) of this test session, for the multi-node tests: started
    once, not per module (each test checks it leaves no job behind)."""
    slurm = start_slurm(nodes=3, gpus=4)
    yield slurm
    slurm.stop()


@pytest.fixture
def job(tmp_path, aiperf, hf_home):
    (tmp_path / "recipe.yaml").write_text(stub_recipe())
    (tmp_path / "models" / "stub").mkdir(parents=True)
    (tmp_path / "models" / "stub" / "config.json").write_text("{}")
    (tmp_path / "row.json").write_text(json.dumps(stub_row()))
    port = free_port()
    with nothing_left_behind() as box:
        def argv(server_flags: str = "", duration: float = 2, extra: list[str] | None = None) -> list[str]:
            return runner_run(tmp_path, "row.json", backend="process", aiperf=aiperf, hf_home=hf_home,
                              model_store=tmp_path / "models", port=port, ready_timeout=20, duration=duration,
                              server_cmd=f"{sys.executable} {STUB} --port {{port}} --model {{model}} {server_flags}",
                              extra=extra)

        yield {"dir": tmp_path, "out": tmp_path / "out", "env": box.env(hf_home, gpu_host_env(), AIPERF_NO_FLUSH),
               "argv": argv, "mark": box.mark, "systmp": box.systmp}
