"""The workflows and the CLI agree: commands parse, outputs read are outputs written, actions pinned."""

from __future__ import annotations

import textwrap
from pathlib import Path

import click
import pytest

import wf_contract as wc
from wf_env import REPO, WORKFLOWS


# Steps wired to a command (or option) that no branch provides yet, with who owes it. Listed, not
# skipped: the test below fails as soon as one of them parses, so the entry must then be removed
# and the step is checked like every other. docs/workflows.md lists them too.
PENDING: dict[tuple[str, str, str], str] = {}


def test_real_workflows_keep_the_contract(tmp_path):
    workflows = wc.load_workflows(WORKFLOWS)
    assert len(workflows) >= 9
    problems = wc.check_all(workflows, wc.real_cli(tmp_path), REPO)
    unexpected = [p for p in problems if (p.file, p.job, p.step) not in PENDING]
    assert not unexpected, "\n".join(map(str, unexpected))


def test_pending_commands_are_still_missing(tmp_path):
    # A loop rather than a parametrisation: with nothing pending there is nothing to check, not a skip.
    problems = wc.check_all(wc.load_workflows(WORKFLOWS), wc.real_cli(tmp_path), REPO) if PENDING else []
    for key in sorted(PENDING):
        assert any((p.file, p.job, p.step) == key and "does not parse" in p.message for p in problems), (
            f"{key} now parses ({PENDING[key]} has landed): remove it from PENDING so it is checked")


def test_every_run_step_calls_at_most_one_command_and_most_call_ci_tools():
    workflows = wc.load_workflows(WORKFLOWS)
    found = wc.invocations(workflows)
    assert len(found) >= 15
    commands = {" ".join(inv.argv[:2]) for inv in found}
    assert {"plan --event-path", "reuse resolve", "runner run", "comment handle",
            "signoff verify", "changelog lint"} <= commands


# --- planted examples, checked against a small CLI defined here --------------------------------

@click.group()
def fake() -> None:
    """A stand-in CLI so the checks are exercised independently of the real commands."""


@fake.command()
@click.option("--event-path", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "github"]), default="text")
def gate(event_path, fmt):
    """Decide."""


@fake.group()
def reuse():
    """Reuse."""


@reuse.command()
@click.option("--pr", type=int, required=True)
def resolve(pr):
    """Resolve."""


FAKE_OUTPUTS = {("gate",): ("plan", "concurrency-group"), ("reuse", "resolve"): ("reuse",)}


@pytest.fixture
def fake_cli(tmp_path):
    def parse(argv):
        env = wc.dummy_env(tmp_path)
        args = wc.expand_words(argv, env)
        wc.materialise_paths(args, tmp_path)
        return wc.resolve_command(fake, args)
    return wc.CliModel(parse=parse, outputs=lambda resolved: FAKE_OUTPUTS.get(resolved.path))


GOOD = """\
name: planted
on: pull_request
permissions: {}
jobs:
  gate:
    runs-on: ubuntu-latest
    outputs:
      plan: ${{ steps.gate.outputs.plan }}
    steps:
      - uses: actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8 # v5.0.0
      - id: gate
        run: ci-tools gate --event-path "$GITHUB_EVENT_PATH" --format github
      - id: reuse
        env:
          PR: ${{ github.event.pull_request.number }}
        run: |
          ci-tools reuse resolve \\
            --pr "$PR"
  after:
    needs: gate
    if: needs.gate.outputs.plan == 'true'
    runs-on: ubuntu-latest
    steps:
      - run: echo done
"""


def check(tmp_path, cli, text):
    directory = tmp_path / "wf"
    directory.mkdir(exist_ok=True)
    (directory / "planted.yml").write_text(text)
    return [str(p) for p in wc.check_all(wc.load_workflows(directory), cli, tmp_path)]


def test_planted_good_example_passes(tmp_path, fake_cli):
    assert check(tmp_path, fake_cli, GOOD) == []


@pytest.mark.parametrize("old, new, expected", [
    # a misspelled step output
    ("${{ steps.gate.outputs.plan }}", "${{ steps.gate.outputs.plans }}",
     "reads steps.gate.outputs.plans, which `ci-tools gate` does not write (it writes: plan, concurrency-group)"),
    # a misspelled job output
    ("needs.gate.outputs.plan ==", "needs.gate.outputs.paln ==",
     "reads needs.gate.outputs.paln, which job 'gate' does not declare (it declares: plan)"),
    # reading a job that is not in needs
    ("    needs: gate\n", "", "reads needs.gate.outputs.plan but 'gate' is not in its needs"),
    # a step id that does not exist
    ("${{ steps.gate.outputs.plan }}", "${{ steps.gates.outputs.plan }}", "no step with id 'gates'"),
    # an option the command does not have
    ("--format github", "--fromat github", "does not parse: No such option '--fromat'"),
    # a bad choice value
    ("--format github", "--format yaml", "does not parse: Invalid value for '--format'"),
    # a sub-command that does not exist
    ("ci-tools reuse resolve", "ci-tools reuse resolv", "does not parse: No such command 'resolv'"),
    # an unpinned action
    ("actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8 # v5.0.0", "actions/checkout@v5",
     "actions/checkout@v5 is not pinned by a full 40-hex commit SHA"),
    # a pin without its version comment
    ("# v5.0.0", "", "has no `# vX.Y.Z` comment naming its version"),
    # untrusted text interpolated into run:
    ('--pr "$PR"', "--pr ${{ github.event.pull_request.title }}", "`${{ }}` inside run:"),
    # two commands in one step
    ("--format github\n", "--format github && ci-tools gate --event-path x\n", "2 ci-tools commands in one step"),
])
def test_planted_fault_is_reported(tmp_path, fake_cli, old, new, expected):
    assert old in GOOD
    problems = check(tmp_path, fake_cli, GOOD.replace(old, new, 1))
    assert any(expected in p for p in problems), problems


def test_command_without_output_registry_is_reported(tmp_path):
    cli = wc.CliModel(parse=lambda argv: wc.Resolved(("gate",), fake), outputs=lambda resolved: None)
    problems = check(tmp_path, cli, GOOD)
    assert any("declares no GITHUB_OUTPUTS" in p for p in problems), problems


@pytest.mark.parametrize("script, expected", [
    ('ci-tools plan --base "$A" --head "$B"', [["plan", "--base", "$A", "--head", "$B"]]),
    ("X=1 ci-tools gate \\\n  --format github", [["gate", "--format", "github"]]),
    ("# ci-tools commented out\necho hi", []),
    ('printf "%s" "$R" > f; ci-tools runner run --row f', [["runner", "run", "--row", "f"]]),
    ('ci-tools plan --format json > "$T/p.json" 2>&1', [["plan", "--format", "json"]]),
    ("ci-tools plan >>out.txt", [["plan"]]),
    ('ci-tools plan --after-canary "${args[@]}" --format github', [["plan", "--after-canary", "${args[@]}", "--format", "github"]]),
    ("ci-tools x --v '${{ a b }}'", [["x", "--v", "__EXPR__"]]),
])
def test_ci_tools_commands_are_found_in_shell(script, expected):
    assert wc.ci_tools_commands(script) == expected


def test_shell_defaults_are_used_when_unset():
    assert wc.expand_words(["--backend", "${B:-docker}", "${C:-x}"], {"C": "set"}) == ["--backend", "docker", "set"]


def test_array_expansion_expands_to_nothing():
    assert wc.expand_words(["plan", "${args[@]}", "--x", "$A"], {"A": "a"}) == ["plan", "--x", "a"]


def test_reusable_workflow_outputs_are_followed(tmp_path, fake_cli):
    directory = tmp_path / "wf"
    directory.mkdir()
    (directory / "called.yml").write_text(textwrap.dedent("""\
        on:
          workflow_call:
            outputs:
              verdict:
                value: ${{ jobs.j.outputs.v }}
        jobs:
          j:
            runs-on: ubuntu-latest
            outputs:
              v: x
            steps:
              - run: echo
        """))
    (directory / "caller.yml").write_text(textwrap.dedent("""\
        on: push
        jobs:
          call:
            uses: $/.github/workflows/called.yml
          after:
            needs: call
            if: needs.call.outputs.verdict == 'ok' && needs.call.outputs.verdcit == 'ok'
            runs-on: ubuntu-latest
            steps:
              - run: echo
        """))
    problems = [str(p) for p in wc.check_all(wc.load_workflows(directory), fake_cli, tmp_path)]
    assert len(problems) == 1 and "needs.call.outputs.verdcit" in problems[0], problems


def test_release_job_exports_every_bucket():
    """The stages spell one job output per bucket (GitHub needs them listed); keep them in step."""
    from ci_tools.sweep.buckets import BUCKETS

    stages = next(wf for wf in wc.load_workflows(WORKFLOWS) if wf.name == "sweep-stages.yml")
    outputs = stages.jobs["release"]["outputs"]
    expected = {f"{kind}-{b}" for b in BUCKETS for kind in ("matrix", "fail-fast")}
    spelled = {name for name in outputs if name.startswith(("matrix-", "fail-fast-"))}
    assert spelled == expected
    for name in expected:
        assert outputs[name] == "${{ steps.release.outputs.%s }}" % name


def test_github_output_file_is_read_like_github_does():
    text = "a=1\nmissing<<EOF_1\nline one\nline=two\nEOF_1\nb=x=y\n"
    assert wc.read_github_output(text) == {"a": "1", "missing": "line one\nline=two", "b": "x=y"}


def test_job_artifacts_are_named_by_runner_run(tmp_path):
    """benchmark.yml uploads under the name `runner run --format github` writes; without the flag
    nothing is written, and the contract says so."""
    text = (WORKFLOWS / "benchmark.yml").read_text()
    assert "name: ${{ steps.run.outputs.artifact-job ||" in text and "job_" not in text.replace(
        "format('job_{0}_{1}'", "")
    cli = wc.real_cli(tmp_path)
    problems = check(tmp_path, cli, text.replace(' --format github', '', 1))
    assert any("reads steps.run.outputs.artifact-job, which `ci-tools runner run` does not write" in p
               for p in problems), problems
