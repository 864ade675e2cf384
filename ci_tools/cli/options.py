"""The option vocabulary every command shares: one name for one thing.

- `--repo OWNER/NAME`: a GitHub repository, as `gh` spells it (default $GITHUB_REPOSITORY);
- `--root DIR`: the checkout the command reads (default the current directory).

The spellings commands used before (`--repo-root`, `--github-repo`, `--repository`, and `plan`'s
`--repo DIR`) are still accepted for a release and no longer shown in `--help`
(tests/test_cli_seams.py holds both).
"""

from __future__ import annotations

import re
from pathlib import Path

import click

OWNER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")


class Aliased(click.Option):
    """An option whose first long name is shown in help; the later ones are old spellings, still
    parsed but hidden (Click would list them all)."""

    def get_help_record(self, ctx: click.Context):
        opts = self.opts
        self.opts = opts[:1]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = opts


def _owner_name(ctx, param, value):
    if value in (None, ""):
        return value
    if not OWNER_NAME.match(value):
        raise click.BadParameter(f"{value!r} is not OWNER/NAME (a GitHub repository, as gh spells it)")
    return value


def repo_option(*old: str, name: str = "repo", required: bool = False, help: str = "The GitHub repository.",
                envvar: bool = True, default=None, callback=_owner_name):
    """`--repo OWNER/NAME` (old spellings in `old`, hidden)."""
    return click.option("--repo", *old, name, cls=Aliased, metavar="OWNER/NAME", required=required, default=default,
                        envvar="GITHUB_REPOSITORY" if envvar else None, show_envvar=envvar, callback=callback,
                        help=help)


def root_option(*old: str, name: str = "root", exists: bool = True, help: str = "The checkout to read.",
                default: Path | None = Path(".")):
    """`--root DIR` (old spellings in `old`, hidden)."""
    return click.option("--root", *old, name, cls=Aliased, default=default, show_default=default is not None,
                        type=click.Path(exists=exists, file_okay=False, path_type=Path), help=help)
