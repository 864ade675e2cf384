"""`ci-tools config ...`: check master configs, runners.yaml and recipes."""

from __future__ import annotations

from pathlib import Path

import click

from ci_tools.cli.options import repo_option

from ci_tools.cli.emit import emit
from ci_tools.render.findings import FORMATS

# What `--format github` writes to $GITHUB_OUTPUT (read by the workflow contract test).
GITHUB_OUTPUTS = {"config acceptance-matrix": ("matrix", "count"),
                  "config acceptance-update": ("changed", "missing", "pr-url")}


@click.group()
def cli() -> None:
    """Master configs, runners and recipes."""


def upper_checks() -> tuple:
    """`config validate`'s checks that belong to the floors above config, in order: the sweep's numbers and
    the priority policy (sweep), the eval files and the acceptance comparison (evals), the results checks (results), then
    what a runner can serve (runner: last, on otherwise clean files)."""
    from ci_tools.evals import acceptance, policy
    from ci_tools.results import policy as results_policy
    from ci_tools.runner import servable
    from ci_tools.sweep import labels, priority

    return (labels.config_findings, priority.config_findings, policy.config_findings, acceptance.config_findings,
            results_policy.config_findings, servable.config_findings)


@cli.command()
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Repository root (default: the current directory, unless --master/--runners are given).")
@click.option("--master", "masters", multiple=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A master config file; repeat for several. Default: inferencex-e2e/configs/*-master.yaml.")
@click.option("--runners", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The runners file. Default: inferencex-e2e/configs/runners.yaml under the root.")
@click.option("--base", metavar="REF",
              help="Git revision the change is based on: entries that differ from it (or whose recipe changed) "
                   "count as touched, so their unpinned images are errors.")
@click.option("--changed-key", "changed_keys", multiple=True, metavar="KEY",
              help="Treat this config key (or fnmatch pattern) as touched by the change; repeatable.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text for people, json for tools, github for inline annotations on the PR diff.")
def validate(root: Path | None, masters: tuple[Path, ...], runners: Path | None, base: str | None,
             changed_keys: tuple[str, ...], fmt: str) -> None:
    """Validate master configs, runners.yaml and recipes, and the rules across them.

    Checks every entry against the schemas in ci_tools/schemas/, the cross-field rules (concurrency,
    dcp-size, router and kv-p2p-transfer placement, KV offload), and across files: runner labels are
    declared, referenced recipes exist, recipe image == master image pinned by @sha256 digest,
    recipe points == master search-space points. Naming-convention deviations are warnings.

    Exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage error.

    \b
    Examples:
      ci-tools config validate
      ci-tools config validate --base origin/main --format github
      ci-tools config validate --master amd-master.yaml --master nvidia-master.yaml --runners runners.yaml
    """
    from ci_tools.config.load import validate_flow
    from ci_tools.config.render import validate_output

    report = validate_flow(root, list(masters), runners, base, changed_keys, upper_checks())
    emit(validate_output(report, fmt), fmt)


@cli.command("bump-image")
@click.option("--config-key", "key", required=True, metavar="KEY", help="The master entry whose image changes.")
@click.option("--image", required=True, metavar="REPO:TAG@sha256:DIGEST", help="The new image, pinned by digest.")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Repository root.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="json: the edits and the entry as one object; github: a notice per edited line and the entry "
                   "in $GITHUB_STEP_SUMMARY.")
def bump_image(key: str, image: str, root: Path, fmt: str) -> None:
    """Point a config's image at a new digest-pinned reference: in the master entry, its recipe and
    every CONFIG_FILE= recipe, changing nothing but the image lines; then print the changelog entry.

    \b
    Example:
      ci-tools config bump-image --config-key dsv41flash-fp4-gb300-sglang-agentic-dspark \\
        --image lmsysorg/sglang:nightly-dev-cu13-20261101-abcdef12@sha256:<64 hex>
    """
    from ci_tools.changelog.coverage import entry_text
    from ci_tools.config.load import bump_image as bump
    from ci_tools.config.render import bump_output

    entry = entry_text([key]).replace("<what changed and why it can move the numbers>", f"Bump image to {image}.")
    emit(bump_output(key, image, bump(root, key, image), entry), fmt)


@cli.command("acceptance-matrix")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Repository root (its recipes/ and inferencex-e2e/acceptance-lengths.yaml).")
@click.option("--mtp", "mtp_levels", multiple=True, type=click.IntRange(1, 16), metavar="K",
              help="Speculative steps to measure (repeatable; default 1 2 3 4, plus each recipe's own).")
@click.option("--thinking", type=click.Choice(["both", "on", "off"]), default="both", show_default=True)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="json: the rows; github: `matrix` (compact JSON rows) and `count` in $GITHUB_OUTPUT, a table "
                   "in $GITHUB_STEP_SUMMARY.")
def acceptance_matrix(root: Path, mtp_levels: tuple[int, ...], thinking: str, fmt: str) -> None:
    """The SPEED-Bench acceptance-length collection matrix (the speedbench-al workflow's dry run):
    every model a recipe replays a synthetic acceptance for, x thinking on/off x speculative steps,
    each row naming the reference entry its measurement updates.

    \b
    Example:
      ci-tools config acceptance-matrix --mtp 2 --mtp 3 --thinking on
    """
    from ci_tools.config.acceptance_flow import acceptance_matrix as matrix
    from ci_tools.config.render import acceptance_matrix_output

    emit(acceptance_matrix_output(*matrix(root, mtp_levels, thinking)), fmt)


@cli.command("acceptance-update")
@click.option("--results", "results", type=click.Path(path_type=Path), required=True,
              help="Folder holding the collection cells' results (each measure job's acceptance.json, as the "
                   "acceptance_* artifacts download).")
@click.option("--run-id", type=int, required=True, help="The speedbench-al run that measured them (recorded per entry).")
@repo_option(help="The repository the update's PR goes to.")
@click.option("--matrix", "matrix", type=click.Path(path_type=Path), default=None,
              help="The run's matrix (JSON rows of acceptance-matrix): cells without a result are named.")
@click.option("--allow-partial", is_flag=True, envvar="CI_TOOLS_ACCEPTANCE_ALLOW_PARTIAL",
              help="(env CI_TOOLS_ACCEPTANCE_ALLOW_PARTIAL) Update the measured cells although some matrix cells have no result (they are listed in the PR).")
@click.option("--open-pr", is_flag=True, envvar="CI_TOOLS_ACCEPTANCE_OPEN_PR",
              help="(env CI_TOOLS_ACCEPTANCE_OPEN_PR) Commit the file to a new branch and open the pull request.")
@click.option("--base", default="main", show_default=True, help="Branch the pull request targets.")
@click.option("--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Repository root (its references file and recipes).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="json: the report; github: changed, missing, pr-url in $GITHUB_OUTPUT and the PR body in "
                   "$GITHUB_STEP_SUMMARY.")
def acceptance_update(results: Path, run_id: int, repo: str | None, matrix: Path | None, allow_partial: bool, open_pr: bool,
                      base: str, root: Path, fmt: str) -> None:
    """Turn the SPEED-Bench collection's measured acceptance lengths into the references file, as a PR.

    Each cell's entry in inferencex-e2e/acceptance-lengths.yaml gets the measured length and
    `measured-by` (the run's URL, the engine metric, the date); comments and other entries stay.
    The run must exist and be a speedbench-al run, and every result must name it. Refused, with
    nothing written: no results (exit 2), an unknown run (exit 2), no usable measurement, a partial
    matrix without --allow-partial (exit 1). The PR body lists old -> new per entry, the cells not
    measured, the results not used and the recipes whose synthetic acceptance is now stale.

    \b
    Example:
      ci-tools config acceptance-update --results cells/ --run-id 123456 --matrix matrix.json --open-pr
    """
    from ci_tools.config.acceptance_flow import acceptance_update as update
    from ci_tools.config.render import acceptance_update_output

    emit(acceptance_update_output(update(root, results, run_id, repo, matrix=matrix, allow_partial=allow_partial,
                                         open_pr=open_pr, base=base), fmt), fmt)
