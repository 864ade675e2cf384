"""`config validate` checks the eval thresholds file and the policy's `evals:` section: located,
reviewer-style findings, exit 1; the shipped files are clean."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture
def root(tmp_path) -> Path:
    for part in ("inferencex-e2e", "recipes"):
        shutil.copytree(REPO / part, tmp_path / part)
    return tmp_path


def validate(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ci_tools", "config", "validate", "--root", str(root)],
                          capture_output=True, text=True, timeout=60)


def test_shipped_eval_files_are_valid(root):
    res = validate(root)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("text,want", [
    ("thresholds-version: 1\nfloor: 1.5\ndefault: {gsm8k: 0.9}\n", "inferencex-e2e/eval-thresholds.yaml:2"),
    ("thresholds-version: 1\nfloor: 0.8\ndefault: {gsm8k: '0.9'}\n", "inferencex-e2e/eval-thresholds.yaml:3"),
    ("thresholds-version: 1\nfloor: 0.8\ndefault: {gsm8k: 0.9}\nmodel: {qwen3.5: {gsm8k: 0.94}}\n",
     "inferencex-e2e/eval-thresholds.yaml:4"),
    ("thresholds-version: 1\ndefault: {gsm8k: 0.9}\n", "floor"),
])
def test_bad_thresholds_are_located(root, text, want):
    (root / "inferencex-e2e/eval-thresholds.yaml").write_text(text)
    res = validate(root)
    assert res.returncode == 1
    assert want in res.stdout + res.stderr


def test_missing_thresholds_file_is_an_error(root):
    (root / "inferencex-e2e/eval-thresholds.yaml").unlink()
    res = validate(root)
    assert res.returncode == 1 and "eval thresholds file not found" in res.stdout + res.stderr


def policy_with(root: Path, old: str, new: str) -> None:
    path = root / "inferencex-e2e/ci-policy.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize("old,new,want", [
    ("      harness: swebench-agentic\n", "      harness: swe-agent\n",
     "suite agentic-coding names harness 'swe-agent', which is not under evals.harnesses"),
    ("--results {results}", "--out {work_dir}/r.json", "the harness command never names {results}"),
    ("--conc {conc}", "--conc {concurrency}", "unknown placeholder(s) {concurrency} in the harness command"),
    ("          num-fewshot: 5\n", "          num-fewshot: five\n", "ci-policy.yaml:"),
])
def test_bad_evals_section_is_located(root, old, new, want):
    policy_with(root, old, new)
    res = validate(root)
    assert res.returncode == 1, res.stdout
    assert want in res.stdout + res.stderr
    assert "inferencex-e2e/ci-policy.yaml:" in res.stdout + res.stderr
