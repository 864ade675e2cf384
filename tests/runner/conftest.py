"""Fixtures for the runner tests: the AIPerf executable and the offline stub tokenizer."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runner_support import aiperf_bin, lm_eval_bin


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
