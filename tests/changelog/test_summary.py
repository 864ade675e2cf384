"""Gates on a PR: annotations carry a title, and the job summary carries every finding."""

from __future__ import annotations

from .helpers import entry, history
from .test_cli import LOG, cli, head_with, repo  # noqa: F401  (the repo fixture)


def test_changelog_lint_annotations_have_a_title_and_the_summary_lists_all_findings(repo, tmp_path):
    keys = tuple(f"nope-{i}" for i in range(12))  # more findings than GitHub shows as annotations
    head_with(repo, history(3) + b"\n" + entry(keys=keys))
    summary = tmp_path / "summary.md"
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42", "--format", "github",
              env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert out.returncode == 1
    annotations = out.stdout.splitlines()
    assert len(annotations) == 12 and all(",title=changelog lint::" in a for a in annotations)
    text = summary.read_text()
    assert text.startswith(f"### changelog lint (`{LOG}`): rejected, 12 error(s)\n")
    assert all(f"config key 'nope-{i}' is not in the master configs" in text for i in range(12))
    assert text.count(f"| `{LOG}:") == 12


def test_accepted_change_summary_and_notice(repo, tmp_path):
    head_with(repo, history(3) + b"\n" + entry())
    summary = tmp_path / "summary.md"
    out = cli(repo, "changelog", "lint", "--base", "base", "--head", "head", "--pr", "42", "--format", "github",
              env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert out.returncode == 0
    assert out.stdout == f"::notice file={LOG},title=changelog lint::1 new entry\n"
    assert summary.read_text() == f"### changelog lint (`{LOG}`): accepted, 1 new entry\n\n"
