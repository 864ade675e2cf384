"""`config validate` runs checks that belong to the floors above config (issue 27): the priority policy
(sweep), the eval files (evals) and what a runner can serve (runner). Config's own `check` knows
nothing of them; the command composes them (`cli/config.py:upper_checks`)."""

from __future__ import annotations

from pathlib import Path

import click
import yaml
from click.testing import CliRunner

from ci_tools import names
from ci_tools.cli import main
from ci_tools.cli.config import upper_checks
from ci_tools.config.crossfile import Change
from ci_tools.config.load import load_sources
from ci_tools.config.validate import check

KEY = "floors-test-norecipe"      # an entry without `recipe:`: no runner knows how to serve it


def _add_entry(root: Path) -> None:
    """A copy of the repository's first single-node entry, without its recipe."""
    master = sorted((root / names.E2E_DIR / "configs").glob("*-master.yaml"))[0]
    data = yaml.safe_load(master.read_text(encoding="utf-8"))
    entry = next(dict(e) for e in data.values() if isinstance(e, dict) and not e.get("multinode") and e.get("recipe"))
    del entry["recipe"]
    master.write_text(master.read_text(encoding="utf-8") + "\n" + yaml.safe_dump({KEY: entry}), encoding="utf-8")


def _validate(root: Path) -> tuple[int, str]:
    argv = ["config", "validate", "--root", str(root), "--changed-key", KEY, "--format", "json"]
    r = CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])
    return r.exit_code, r.output


def test_the_command_runs_the_runner_check_on_a_touched_entry(scratch):
    _add_entry(scratch)
    code, out = _validate(scratch)
    assert code == 1 and f"{KEY}: no runner can serve it: the master entry has no `recipe:`" in out


def test_configs_own_check_knows_nothing_above_it(scratch):
    _add_entry(scratch)
    src = load_sources(scratch)
    change = Change(frozenset({KEY}))
    alone = check(src, change)
    composed = check(load_sources(scratch), change, upper_checks())
    assert not [f for f in alone.findings if "no runner can serve" in f.message]
    assert [f for f in composed.findings if "no runner can serve" in f.message]


def test_a_broken_priority_section_and_thresholds_file_are_the_commands_findings(scratch):
    policy = scratch / names.POLICY
    policy.write_text(policy.read_text(encoding="utf-8") + "\npriority: 7\n", encoding="utf-8")
    (scratch / names.EVAL_THRESHOLDS).unlink()
    argv = ["config", "validate", "--root", str(scratch)]
    r = CliRunner().invoke(click.Command("ci-tools", callback=lambda: main(argv)), [])
    assert r.exit_code == 1
    assert "priority" in r.output and "eval thresholds file not found" in r.output
