"""The `ci-tools` command line.

Sub-command groups are imported lazily (only the one being run is loaded), so that `ci-tools --help`
and the changelog gate start fast. To add a group: write `ci_tools/cli/<name>.py` exposing a Click
object named `cli`, and add one line to `COMMANDS`.

Each command parses its options, calls one flow and renders the result. May import anything: this is
the outermost shell. Nothing imports `ci_tools.cli` but `ci_tools.__main__` and the tests.
"""

from __future__ import annotations

import importlib
import os
import sys

if sys.argv[1:3] == ["runner", "run"]:  # before the slow imports: a cancel then is not lost
    from ci_tools.runner import early

    early.defer()

import click

from ci_tools import __version__
from ci_tools.errors import InputError

# name -> (module, one-line help). The help is repeated here so `--help` needs no imports.
COMMANDS: dict[str, tuple[str, str]] = {
    "config": ("ci_tools.cli.config", "Validate master configs, runners and recipes."),
    "changelog": ("ci_tools.cli.changelog", "Append-only changelog gate, link canonicalisation, conflict resolution."),
    "matrix": ("ci_tools.cli.matrix", "Expand master configs into InferenceX benchmark matrix rows."),
    "plan": ("ci_tools.cli.plan", "Plan a change's sweep: gate verdict, canaries, points, GPU-hours."),
    "comment": ("ci_tools.cli.comment", "Act on PR comment commands (/use, /stage-results, /sweep plan)."),
    "reuse": ("ci_tools.cli.reuse", "Decide sweep-run reuse for a PR push or a merge to main."),
    "signoff": ("ci_tools.cli.signoff", "Verify a CODEOWNER sign-off and set its commit status."),
    "stage": ("ci_tools.cli.stage", "Handle the results app's staging callbacks."),
    "bot": ("ci_tools.cli.bot", "Welcome comment, status card and PR-description check."),
    "results": ("ci_tools.cli.results", "Process AIPerf exports, collect results, Pareto and claims."),
    "runner": ("ci_tools.cli.runner", "Serve one matrix row's recipe point and run the benchmark client."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return super().get_command(ctx, name)
        module = importlib.import_module(COMMANDS[name][0])
        return module.cli

    def resolve_command(self, ctx: click.Context, args: list[str]):
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand:
            # Click suggests from `self.commands`, which a lazy group leaves empty: suggest from the names
            raise click.exceptions.NoSuchCommand(args[0], possibilities=self.list_commands(ctx), ctx=ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ci-tools")
def cli() -> None:
    """CI for an InferenceX-style GPU benchmark repository.

    \b
    Example:
      ci-tools config validate
    Shell completion (bash): eval "$(_CI_TOOLS_COMPLETE=bash_source ci-tools)"
    """


def _github_format(argv: list[str]) -> bool:
    """Whether the command was asked for `--format github` (its errors then also go where a workflow
    reader looks: an annotation on the run and a section in the job summary)."""
    return any(a == "--format=github" or a == "github" and i and argv[i - 1] == "--format" for i, a in enumerate(argv))


def _command_words(argv: list[str]) -> str:
    words = []
    for a in argv:
        if a.startswith("-"):
            break
        words.append(a)
    return "ci-tools " + " ".join(words[:2])


def _report_for_github(argv: list[str], message: str, findings=(), hint: str = "") -> None:
    """The error as an annotation (each finding on its file and line) and in the step summary."""
    from ci_tools.github.actions import annotate, append_step_summary, finding_annotation

    title = _command_words(argv)
    if findings:
        for f in findings:
            click.echo(finding_annotation(f, title))
    else:
        annotate("error", message + (f" ({hint})" if hint else ""), title=title)
    lines = [f"- {f.as_text()}" for f in findings] or [f"- {message}" + (f"\n  {hint}" if hint else "")]
    append_step_summary(f"### {title}: failed\n\n" + "\n".join(lines) + "\n")


def _style(line: str) -> str:
    """`error:`/`warning:`/`note:` in colour (click drops it where stderr is no terminal; NO_COLOR:
    never, as no-color.org asks)."""
    if os.environ.get("NO_COLOR"):
        return line
    for word, colour in (("error:", "red"), ("warning:", "yellow"), ("note:", "cyan"), ("hint:", "cyan")):
        head, sep, rest = line.partition(word)
        if sep and (not head.strip() or head.rstrip().endswith(":")):
            return head + click.style(word, fg=colour, bold=word == "error:") + rest
    return line


def echo_err(line: str) -> None:
    """One line to stderr, its severity word coloured on a terminal."""
    click.echo(_style(line), err=True)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn known errors into clean messages and exit codes."""
    args = list(sys.argv[1:] if argv is None else argv)
    github = _github_format(args)
    try:
        rv = cli.main(args=argv, prog_name="ci-tools", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        if github:
            _report_for_github(args, exc.format_message(), hint="see the command's --help")
        sys.exit(exc.exit_code)
    except InputError as exc:
        if exc.findings:
            for finding in exc.findings:
                for line in finding.as_text().splitlines():
                    echo_err(line)
        else:
            echo_err(f"error: {exc.message}")
        if github:
            _report_for_github(args, exc.message, exc.findings)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except BrokenPipeError:
        sys.exit(1)
    except Exception as exc:  # a bug in ci-tools, not in the user's input
        if os.environ.get("CI_TOOLS_DEBUG"):
            raise
        click.echo(f"ci-tools: internal error: {type(exc).__name__}: {exc}\n"
                   "This is a bug in ci-tools. Re-run with CI_TOOLS_DEBUG=1 for the traceback and report it.",
                   err=True)
        sys.exit(3)
    # standalone_mode=False hands back ctx.exit(n) codes as the return value instead of exiting.
    sys.exit(rv if isinstance(rv, int) else 0)
