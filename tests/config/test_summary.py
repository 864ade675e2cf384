"""config validate on a PR: titled annotations and a job summary with every finding."""

from __future__ import annotations

import shutil
import subprocess
import sys


def test_config_validate_writes_all_findings_to_the_job_summary(repo_root, tmp_path):
    for d in ("inferencex-e2e", "recipes"):
        shutil.copytree(repo_root / d, tmp_path / d)
    master = tmp_path / "inferencex-e2e/configs/nvidia-master.yaml"
    master.write_text(master.read_text().replace("runner: gb300", "runner: gb300-typo", 1))
    summary = tmp_path / "summary.md"
    out = subprocess.run([sys.executable, "-m", "ci_tools", "config", "validate", "--root", str(tmp_path),
                          "--format", "github"], capture_output=True, text=True,
                         env={"GITHUB_STEP_SUMMARY": str(summary), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 1, out.stderr
    errors = [line for line in out.stdout.splitlines() if line.startswith("::error ")]
    assert errors and all(",title=config validate::" in e for e in errors)
    text = summary.read_text()
    assert text.startswith(f"### config validate: {len(errors)} error(s),")
    assert "runner label 'gb300-typo'" in text and text.count("| error |") == len(errors)
