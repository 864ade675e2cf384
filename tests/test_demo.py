"""The README's first command: the demo replays the seed PR through every step, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))

import demo  # noqa: E402


def test_demo_runs_every_step_and_passes():
    out = subprocess.run([sys.executable, str(REPO / "examples" / "demo.py")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert text.count("(exit 0)") == 5
    assert "demo: all steps passed" in text
    assert "accepted: 1 new entry" in text
    # The plan shows the seed PR's seven points, and the AgentX-fast smoke canary on TP4 c1 besides them.
    assert "total: 9 jobs (7 points, 1 smoke canary, 1 eval row)" in text    # the eval row is not a point (#17)
    # The runner step renders the router in front of the DEP2 point, from the plan's own row.
    assert "sglang_router.launch_router" in text and "--dp-size 2" in text
    assert "Traceback" not in out.stderr


def test_readme_example_row_is_the_row_the_plan_emits(tmp_path):
    demo.build_scratch_repo(tmp_path)
    planned = demo.plan_row(tmp_path, tp=2, ep=2, conc=64)
    documented = json.loads((REPO / "docs/examples/row-dep2-c64.json").read_text())
    assert documented == planned


def test_walkthrough_plays_the_comment_commands_against_the_fake_github():
    """`python3 dev.py demo --walkthrough` (issue 24): a contributor's PR, a maintainer's label, `/use`,
    and every reply as the bot posts it."""
    out = subprocess.run([sys.executable, str(REPO / "examples" / "walkthrough.py")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    text = out.stdout
    assert "Thanks for opening this pull request!" in text                        # the welcome
    assert "Did you mean `/use`?" in text                                        # /usee 19384721
    assert "`/use 12345` was not run: no run 12345 exists in this repository" in text
    assert "noted: run 19384721 is pinned for reuse at merge" in text
    assert "skip-pr-sweep: true" in text and "reuse-source-run-id: 19384721" in text   # the push, the merge
    assert "walkthrough: done" in text and "Traceback" not in out.stderr
