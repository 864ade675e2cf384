"""One convention across commands: a missing input (an unknown ref, a file that is not there) exits 2,
like a usage error; findings in the input exit 1. Checked on every command that takes a git ref."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("conv") / "repo"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "inferencex-e2e", "recipes"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for rel in (f.decode() for f in files if f):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes((ROOT / rel).read_bytes())
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(dest), *args], check=True, capture_output=True)
    return dest


REF_COMMANDS = [
    ["changelog", "lint", "--base", "no-such-ref", "--head", "HEAD"],
    ["changelog", "lint", "--base", "HEAD", "--head", "no-such-ref"],
    ["changelog", "canonicalize", "--pr", "1", "--base", "no-such-ref"],
    ["plan", "--base", "no-such-ref", "--head", "HEAD", "--label", "full-sweep-fail-fast"],
    ["config", "validate", "--base", "no-such-ref"],
]


@pytest.mark.parametrize("args", REF_COMMANDS, ids=[" ".join(a[:2]) + " " + a[2] for a in REF_COMMANDS])
def test_an_unknown_ref_exits_2_naming_it(clone, args):
    out = subprocess.run([sys.executable, "-m", "ci_tools", *args], cwd=clone, capture_output=True, text=True)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "no-such-ref" in out.stderr and "Traceback" not in out.stderr


def test_a_missing_changelog_or_master_exits_2(clone):
    for extra in (["--changelog-file", "nope.yaml"], ["--master", "nope-master.yaml"]):
        out = subprocess.run([sys.executable, "-m", "ci_tools", "changelog", "lint", "--base", "HEAD", "--head", "HEAD",
                              *extra], cwd=clone, capture_output=True, text=True)
        assert out.returncode == 2, out.stderr


# ---- every command of the group: walked, never listed by hand ------------------------------------

def _leaf_commands() -> dict[str, "click.Command"]:
    import click

    from ci_tools.cli import cli

    found: dict[str, click.Command] = {}

    def walk(cmd: click.Command, path: tuple[str, ...]) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), (*path, name))
        else:
            found[" ".join(path)] = cmd

    walk(cli, ())
    return found


COMMANDS = _leaf_commands()
FORMATS = {"text", "json", "github"}


def test_the_walk_finds_the_commands():
    # guards the walk itself: a group that stopped listing its commands would make every check vacuous
    assert {"plan", "changelog lint", "results pareto", "runner run", "matrix full-sweep"} <= set(COMMANDS)
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_speaks_text_json_github_defaulting_to_text(name):
    import click

    options = [p for p in COMMANDS[name].params if "--format" in getattr(p, "opts", ())]
    assert len(options) == 1, f"`ci-tools {name}` has no --format option (docs/reference.md: 'Output, everywhere')"
    fmt = options[0]
    assert isinstance(fmt.type, click.Choice), name
    choices = set(fmt.type.choices)
    assert FORMATS <= choices <= FORMATS | {"markdown"}, (name, sorted(choices))
    assert fmt.default == "text", (name, fmt.default)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "CI_TOOLS_BACKEND"))}
    return subprocess.run([sys.executable, "-m", "ci_tools", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=120)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_unknown_option_exits_2(name):
    from ci_tools.cli import main

    with pytest.raises(SystemExit) as exc:
        main([*name.split(), "--no-such-option"])
    assert exc.value.code == 2, name


# A missing input for each command: the path named here does not exist. A command without one says
# why (a string instead of arguments). The walk below fails for a command missing from this table.
MISSING: dict[str, list[str] | tuple[list[str], str] | str] = {
    "bot card-pr": ["--event-path", "nope.json"],
    "bot labels": ["--repo", "o/n", "--root", "nope"],
    "bot pr-body": ["--event-path", "nope.json"],
    "bot status-card": ["--event-path", "nope.json"],
    "bot welcome": ["--event-path", "nope.json"],
    "changelog canonicalize": ["--pr", "1", "--base", "HEAD", "--changelog-file", "nope.yaml"],
    "changelog lint": ["--base", "HEAD", "--head", "HEAD", "--changelog-file", "nope.yaml"],
    "changelog resolve-conflict": (["--pr", "1"], "no merge is in progress"),  # its input is the merge
    "comment check-approval": ["--pr", "1", "--sha", "0" * 40, "--comment", "1", "--root", "nope"],
    "comment handle": ["--event-path", "nope.json"],
    "config bump-image": ["--config-key", "k", "--image", "r:t@sha256:" + "0" * 64, "--root", "nope"],
    "config acceptance-matrix": ["--root", "nope"],
    "config acceptance-update": ["--results", "nope", "--run-id", "1", "--repo", "o/r"],
    "config validate": ["--master", "nope-master.yaml"],
    "matrix full-sweep": ["--config-file", "nope-master.yaml"],
    "matrix test-config": ["--config-key", "k", "--config-file", "nope-master.yaml"],
    "plan": ["--event-path", "nope.json"],
    "results collect": ["nope", "--out", "out.json"],
    "results compare": ["nope.json", "--baseline", "nope-base.json"],
    "results report": ["nope.json", "--baseline", "nope-base.json", "--out", "nope.html"],
    "results publish": ["nope.html", "--enabled", "true", "--run-id", "5", "--event-name", "push"],
    "results dispatch": ["--event-path", "nope.json"],
    "results pareto": ["nope.csv"],
    "results process": ["nope"],
    "reuse ready": ["--event-path", "nope.json"],
    "reuse ready-pr": ["--event-path", "nope.json"],
    "reuse recover": ["--merge-commit", "0" * 40, "--run", "1", "--root", "nope"],
    "reuse resolve": ["--event-path", "nope.json"],
    "runner cleanup": "every input is optional: it runs under `if: always()` and must clean up whatever exists",
    "runner digest": ["--repo", "o/n", "--runners", "nope.yaml"],
    "runner evals": ["nope"],
    "runner run": ["--row", "nope.json"],
    "runner profile": ["--row", "nope.json"],
    "runner acceptance": ["--row", "nope.json"],
    "runner selftest": ["--out", "selftest", "--recipe", "nope.yaml"],
    "signoff record": ["--event-path", "nope.json", "--out", "record"],
    "signoff verify": ["--event-path", "nope.json"],
    "stage callback": ["--event-path", "nope.json"],
    "stage dispatch": ["--payload", "{}", "--event-path", "nope.json"],
}


def test_every_command_has_a_missing_input_case():
    assert set(MISSING) == set(COMMANDS), ("add the new command to MISSING in tests/test_conventions.py: "
                                            f"{sorted(set(COMMANDS) - set(MISSING))}; gone: "
                                            f"{sorted(set(MISSING) - set(COMMANDS))}")


@pytest.mark.parametrize("name", sorted(n for n, a in MISSING.items() if not isinstance(a, str)))
def test_a_missing_input_exits_2_naming_it(clone, name):
    case = MISSING[name]
    args, said = case if isinstance(case, tuple) else (case, next(a for a in case if a.startswith("nope")))
    out = _run([*name.split(), *args], clone)
    assert out.returncode == 2, (name, out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and "internal error" not in out.stderr, out.stderr
    assert said in out.stderr, (name, out.stderr)


@pytest.mark.parametrize("name", sorted(n for n, a in MISSING.items() if not isinstance(a, str)))
def test_json_stdout_stays_parseable_when_the_input_is_missing(clone, name):
    # a tool reading `--format json` gets a JSON document or nothing on stdout, never prose
    import json

    case = MISSING[name]
    args = case[0] if isinstance(case, tuple) else case
    out = _run([*name.split(), *args, "--format", "json"], clone)
    assert out.returncode == 2, (name, out.stderr)
    if out.stdout.strip():
        json.loads(out.stdout)


def test_a_mistyped_command_gets_a_did_you_mean():
    """Issue 24: the lazy group listed no commands to Click, so `ci-tools reslts` got no suggestion."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "ci_tools", "reslts"], capture_output=True, text=True)
    assert out.returncode == 2 and "No such command 'reslts'" in out.stderr and "Did you mean 'results'?" in out.stderr
