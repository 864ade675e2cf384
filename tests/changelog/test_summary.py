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


def test_summary_cells_keep_angle_brackets_and_the_suggested_entry_keeps_its_indentation():
    """Issue 24: cells escaped only `|`, so `"<what changed and why>"` and `@sha256:<digest>` became
    HTML tags GitHub strips, and the suggested YAML lost its indentation (it cannot be pasted)."""
    from ci_tools.changelog.coverage import entry_text
    from ci_tools.errors import Finding
    from ci_tools.render.findings import summary_markdown

    yaml_hint = entry_text(["cfg-a", "cfg-b"])
    findings = [
        Finding("recipes/a.yaml", 3, None, "changed without a changelog entry naming cfg-a, cfg-b",
                "append this entry:\n" + yaml_hint),
        Finding("configs/m.yaml", 7, 9, "image lmsysorg/sglang:v1 is not pinned; write it as name:tag@sha256:<digest>",
                "pin it: `lmsysorg/sglang:v1@sha256:<64 hex>` | or run `ci-tools config bump-image`"),
    ]
    md = summary_markdown("config validate", "rejected", findings)
    assert "@sha256:&lt;digest&gt;" in md and "<digest>" not in md    # outside code, < > are text, not tags
    assert "`lmsysorg/sglang:v1@sha256:<64 hex>`" in md          # code spans are literal: left as written
    assert "\\| or run" in md                                      # a pipe still cannot end the cell
    fenced = md[md.index("```yaml\n") + len("```yaml\n"):]
    assert fenced[:fenced.index("```")] == yaml_hint + "\n"        # pasteable: every space kept
    rows = [line for line in md.splitlines() if line.startswith("| `recipes/a.yaml:3`")]
    assert rows and "<br>" not in rows[0] and "- config-keys" not in rows[0]
