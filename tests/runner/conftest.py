"""Fixtures for the runner tests: the AIPerf executable, the offline stub tokenizer, a real local Slurm."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runner_support import aiperf_bin


@pytest.fixture(scope="session")
def aiperf() -> str:
    return aiperf_bin()


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
    """A one-node Slurm of this test session (own directory and ports; see slurm_cluster.py).

    Fails, never skips, when it cannot start: the Slurm tests are part of the suite's promise."""
    from slurm_cluster import LocalSlurm, SlurmUnavailable

    cluster = LocalSlurm(gpus=4)
    try:
        cluster.start()
    except SlurmUnavailable as exc:
        pytest.fail(f"the local Slurm for the runner tests did not start: {exc}", pytrace=False)
    yield cluster
    cluster.stop()
