"""`ci-tools changelog`: the append-only gate and the two rewriting helpers.

Imports stay light at module level (the gate's whole process has a 0.25 s budget); the core is
imported inside each command.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from ci_tools import names
from ci_tools.cli.options import repo_option, root_option
from ci_tools.errors import UsageError, cap_per_file

_FILE = click.option("--changelog-file", "file", default=names.CHANGELOG, show_default=True, metavar="PATH",
                     help="The changelog, as a path inside the repository.")
_REPO = repo_option(envvar=False, callback=None, help="Repository that canonical pr-links name. Default: `repository:` in the policy "
                                       "file, else $GITHUB_REPOSITORY, else the origin remote.")
# the checkout: the commands read git objects and files relative to it
_ROOT = root_option(help="The checkout (a git repository) [default: the current directory].")


_FORMAT = click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text",
                       show_default=True, help="text for people, json for tools, github for a workflow annotation.")


def _report(fmt: str, file: str, changed: bool, message: str) -> None:
    """What a rewriting command did, in the three formats every command speaks."""
    if fmt == "json":
        click.echo(json.dumps({"file": file, "changed": changed, "message": message}, ensure_ascii=False))
    elif fmt == "github":
        from ci_tools.github.actions import annotation

        click.echo(annotation("notice", message, file=file, title="changelog"))
    else:
        click.echo(message)


def _enter(root: Path) -> None:
    """Work in the checkout `--root` names (the commands read git and files relative to it)."""
    if str(root) not in ("", "."):
        os.chdir(root)


def _pr_option(required: bool):
    return click.option("--pr", type=click.IntRange(min=1), required=required, metavar="N",
                        help="Pull request number.")


@click.group()
def cli() -> None:
    """The append-only benchmark changelog (perf-changelog.yaml).

    \b
    Examples:
      ci-tools changelog lint --base origin/main --head HEAD --pr 3801
      ci-tools changelog lint --hook --fix              # what the pre-commit hook runs
      ci-tools changelog canonicalize --pr 3801
      ci-tools changelog resolve-conflict --pr 3801     # during `git merge origin/main`
    """


@cli.command(short_help="Check that a changelog change is append-only and its new entries valid.")
@click.option("--base", metavar="REF",
              help="What the change is compared with (e.g. the PR's base branch); the file is read at the merge"
                   " base of BASE and HEAD, as `git diff BASE...HEAD` does.")
@click.option("--head", metavar="REF", help="The version to judge (e.g. the PR's head commit).")
@click.option("--staged", is_flag=True,
              help="Judge what is staged for commit against HEAD (pre-commit mode; placeholders accepted).")
@click.option("--hook", is_flag=True,
              help="What the pre-commit hook runs: the range of --from-ref/--to-ref and pre-push"
                   " ($PRE_COMMIT_FROM_REF/TO_REF), else the index against HEAD when the changelog is staged,"
                   " else (--all-files) HEAD against its merge base with the upstream branch.")
@click.option("--fix", is_flag=True,
              help="Repair the whitespace and empty-line layout of the new lines in the working-tree file"
                   " (history is never touched), then report what is left; exit 1 when the file was changed.")
@_FILE
@_pr_option(False)
@_REPO
@_ROOT
@click.option("--master", "masters", multiple=True, metavar="PATH",
              help=f"Master config (path inside the repository, read at the head version); repeatable."
                   f" Default: {names.MASTER_GLOB}.")
@click.option("--event-path", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="A workflow's event payload instead of --base/--head/--pr: a pull request's base and head, or a "
                   "merge queue group's base and head and the PR it tests.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True)
def lint(base: str | None, head: str | None, staged: bool, hook: bool, fix: bool, file: str, pr: int | None,
         repo: str | None, root: Path, masters: tuple[str, ...], event_path: str | None, fmt: str) -> None:
    """Check that the changelog change from BASE to HEAD is append-only and every new entry is valid.

    Both versions are read from git objects, not from the working tree. With --pr (PR mode) new
    entries may use the placeholder XXX or the PR's own link; without it (main mode) only
    canonical links pass. Exit 0 accepted, 1 rejected, 2 usage error or missing input (unknown ref, missing file).

    \b
    Examples:
      ci-tools changelog lint --base "$BASE_SHA" --head "$HEAD_SHA" --pr 3801 --format github
      ci-tools changelog lint --base HEAD~1 --head HEAD        # main mode, after a merge
      ci-tools changelog lint --staged                         # before `git commit`
    """
    from ci_tools.changelog import flow

    _enter(root)
    if event_path is not None:
        if base or head or staged or hook:
            raise UsageError("--event-path names the range itself; do not combine it with --base/--head/--staged/--hook")
        base, head, pr = _range_of_event(event_path, pr)
    if (staged or hook) and (base or head):
        raise UsageError("--staged compares HEAD with the index; do not combine it with --base/--head" if staged else
                         "--hook chooses the comparison from how pre-commit runs; do not combine it with --base/--head")
    if staged and hook:
        raise UsageError("--hook already uses the index when the changelog is staged; give one of --staged and --hook")
    if not (staged or hook) and not (base and head):
        raise UsageError("give --base REF and --head REF (or --staged for the pre-commit check)")
    out = flow.lint(flow.LintRequest(base=base, head=head, staged=staged, hook=hook, fix=fix, file=file, pr=pr,
                                     repo=repo, masters=masters, env=dict(os.environ)))
    result, how, fixed_note = out.result, out.how, out.fixed_note
    if how and fmt == "text":
        click.echo(f"{file}: checked {how}")
    click.echo(render(result, file, fmt))
    if fmt == "github":
        from ci_tools.github.actions import append_summary
        from ci_tools.render.findings import summary_markdown

        verdict = "accepted, " + _summary(result) if result.ok else f"rejected, {len(result.errors)} error(s)"
        append_summary(summary_markdown(f"changelog lint (`{file}`)", verdict, cap_per_file(result.errors)), required=False)
    if fixed_note:
        click.echo(fixed_note, err=fmt != "text")
        sys.exit(1)
    if not result.ok:
        # sys.exit, not ctx.exit: the top-level main runs click with standalone_mode=False, where
        # ctx.exit's code is returned and lost.
        sys.exit(1)


def _range_of_event(event_path: str, pr: int | None) -> tuple[str, str, int | None]:
    """(base, head, PR) of the change a workflow's event is about: a pull request's base and head
    commits, or a merge queue group's base and head and the PR it tests (PR mode: the PR passed the
    same gate)."""
    from ci_tools.github.events import load_event

    event = load_event(event_path)
    if event.merge_group is not None:
        mg = event.merge_group
        return mg.base, mg.head_sha, pr or mg.pr
    if event.pull_request is not None:
        return event.pull_request.base_sha, event.pull_request.head_sha, pr or event.pull_request.number
    raise UsageError(f"{event_path}: a {event.name} event names no change to lint; give --base and --head")


def render(result, file: str, fmt: str) -> str:
    # the first findings of a file and one that counts the rest, as config validate shows them (a file of
    # 64,000 unseparated entries printed 63,999); the verdict and the count say all of them
    errors = cap_per_file(result.errors)
    # `number` is the entry's place in the file, 1-based, as the text and every message say it ("entry 4")
    added = [{"number": e.index + 1, "line": e.line, "entry": e.data, "resolved-keys": result.resolved.get(e.index, [])}
             for e in result.added]
    if fmt == "json":
        return json.dumps({"ok": result.ok,
                           "errors": [{"file": f.file, "line": f.line, "message": f.message, "hint": f.hint}
                                      for f in errors],
                           "added": added, "corrections": result.corrections}, indent=2, ensure_ascii=False,
                          default=str)  # YAML dates, sets, bytes in a rejected entry: echoed as text
    if fmt == "github":
        from ci_tools.github.actions import annotation, finding_annotation

        lines = [finding_annotation(f, "changelog lint") for f in errors]
        if result.ok:
            lines.append(annotation("notice", _summary(result), file=file, title="changelog lint"))
        return "\n".join(lines)
    lines = [f.as_text() for f in errors]
    lines.append(f"{file}: {'accepted' if result.ok else 'rejected'}: "
                 + (_summary(result) if result.ok else f"{len(result.errors)} error(s)"))
    if result.ok:
        for e in result.added:
            keys = result.resolved.get(e.index, [])
            lines.append(f"  entry {e.index + 1} (line {e.line}): {len(keys)} config(s): {', '.join(keys)}")
    return "\n".join(lines)


def _summary(result) -> str:
    n = len(result.added)
    if n:
        return f"{n} new entr{'y' if n == 1 else 'ies'}"
    if result.corrections:
        return f"{result.corrections} pr-link correction(s)"
    return "no change"


@cli.command(short_help="Point the new entries' placeholder pr-links at the PR.")
@_pr_option(True)
@_REPO
@_ROOT
@click.option("--base", metavar="REF",
              help="What the PR is compared with; read at the merge base of BASE and HEAD. Default: origin/main.")
@_FILE
@_FORMAT
def canonicalize(pr: int, repo: str | None, root: Path, base: str | None, file: str, fmt: str) -> None:
    """Rewrite the placeholder pr-links of the entries appended since BASE to the PR's link.

    Reads the working-tree file, changes no other byte, and writes it back only when it changed.

    \b
    Example:
      ci-tools changelog canonicalize --pr 3801 && git commit -am "Link the changelog entry to #3801"
    """
    from ci_tools.changelog import shell
    from ci_tools.changelog.merge import canonicalize as run
    from ci_tools.gitio import Git

    from ci_tools.changelog.flow import read_worktree
    from ci_tools.errors import InputError

    _enter(root)
    git = Git(".")
    if not base:
        try:
            base = git.merge_base("HEAD", "origin/main")
        except InputError as exc:
            raise UsageError(f"no --base given and the default, the merge base of HEAD and origin/main, is unavailable"
                             f" ({exc.message}); pass --base REF") from None
    else:
        base = git.merge_base(base, "HEAD")  # the same reading of --base as `lint`
    repo = shell.check_repo(repo) if repo else shell.default_repo(git, "HEAD")
    target = git.toplevel() / file
    head = read_worktree(target, file)
    out = run(git.show(base, file), head, file=file, repo=repo, pr=pr)
    if out == head:
        _report(fmt, file, False, f"{file} already links PR #{pr}; nothing to do")
        return
    target.write_bytes(out)
    _report(fmt, file, True, f"{file}: pr-links of the new entries now point to PR #{pr}")


@cli.command("resolve-conflict", short_help="Resolve a changelog-only conflict of merging main into a PR.")
@_pr_option(True)
@_REPO
@_ROOT
@_FILE
@_FORMAT
def resolve_conflict(pr: int, repo: str | None, root: Path, file: str, fmt: str) -> None:
    """Resolve a merge of main into the PR that conflicts only on the changelog.

    Starts from main's version and re-appends the PR's own entries (each once, linked to the PR),
    then checks the result with the gate and writes it. Refuses when another file conflicts,
    the PR edits history, or the outcome would be ambiguous; run it while the merge is stopped.

    \b
    Example:
      git merge origin/main          # stops: CONFLICT in inferencex-e2e/perf-changelog.yaml
      ci-tools changelog resolve-conflict --pr 3801
      git add inferencex-e2e/perf-changelog.yaml && git commit --no-edit
    """
    from ci_tools.changelog import shell
    from ci_tools.changelog.lint import Mode, lint_change
    from ci_tools.changelog.merge import resolve_conflict as run
    from ci_tools.errors import InputError
    from ci_tools.gitio import Git

    _enter(root)
    git = Git(".")
    stages = shell.conflict_stages(git, file)
    repo = shell.check_repo(repo) if repo else shell.default_repo(git, None)
    out = run(*stages, file=file, repo=repo, pr=pr)
    # The keys of the re-appended entries must exist in the merged masters (the index, stage 0).
    keys, label = shell.staged_master_keys(git)
    check = lint_change(stages[2], out, file=file, mode=Mode(repo=repo, pr=pr), master_keys=keys, masters_label=label)
    if not check.ok:
        raise InputError("the resolved changelog does not pass the gate against main's master configs; nothing was written",
                         findings=check.errors)
    (git.toplevel() / file).write_bytes(out)
    n = len(check.added)
    kept = (f"plus {n} entr{'y' if n == 1 else 'ies'} of PR #{pr}" if n
            else f"with the {check.corrections} pr-link correction(s) of PR #{pr}")
    _report(fmt, file, True, f"{file}: resolved: main's version {kept}\nnext: git add {file} && git commit --no-edit")
