"""`results process` reads each job.json once: the directory's (whether it is an eval job, its
concurrency folders, its point, the custody of its exports) and each concurrency folder's, whose
parent is the directory (issue 38). On the recorded H100 job (tests/data/h100/fixed-c16)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ci_tools import names
from ci_tools.results.flow import run_process
from tests.conftest import H100_JOB


@pytest.fixture
def job_reads(monkeypatch) -> Counter:
    """How often each job.json was read (every reader goes through Path.read_text)."""
    reads: Counter = Counter()
    real = Path.read_text

    def counted(self: Path, *args, **kwargs) -> str:
        if self.name == names.JOB_JSON:
            reads[str(self)] += 1
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", counted)
    return reads


def _process(directory: Path) -> list:
    return run_process(directory, None, None, max_error_rate=0.10, min_requests=None, workers=1,
                       thresholds_path=None)


def _job(dest: Path, **extra) -> Path:
    shutil.copytree(H100_JOB, dest)
    (dest / "result.json").unlink()
    job = json.loads((dest / names.JOB_JSON).read_text())
    (dest / names.JOB_JSON).write_text(json.dumps({**job, **extra}))
    return dest


def test_a_job_directory_is_read_once(tmp_path, job_reads):
    job = _job(tmp_path / "job")
    job_reads.clear()
    (written,) = _process(job)
    assert written.result["point"]["conc"] == 16
    assert dict(job_reads) == {str(job / names.JOB_JSON): 1}


def test_a_multi_concurrency_job_reads_each_file_once(tmp_path, job_reads):
    top = tmp_path / "job"
    top.mkdir()
    (top / names.JOB_JSON).write_text(json.dumps({"multinode": True, "concurrencies": [
        {"conc": 16, "dir": "conc16"}, {"conc": 17, "dir": "conc17"}]}))
    for sub in ("conc16", "conc17"):
        _job(top / sub, parent="..")
    job_reads.clear()
    assert len(_process(top)) == 2
    assert dict(job_reads) == {str(top / f / names.JOB_JSON): 1 for f in ("", "conc16", "conc17")}
