"""`ci-tools matrix full-sweep|test-config`: master configs -> a JSON array of benchmark rows.

The rows are InferenceX's (`generate_sweep_configs.py`): same keys, key order and defaults, printed
as one line with Python's default JSON separators, so existing tooling can consume them unchanged.
"""

from __future__ import annotations

import json
import sys

import click

# What `--format github` writes to $GITHUB_OUTPUT (read by the workflow contract test).
GITHUB_OUTPUTS = {"matrix full-sweep": ("matrix", "rows"), "matrix test-config": ("matrix", "rows")}


def _common(f):
    options = [
        click.option("--config-file", "config_files", multiple=True, type=click.Path(dir_okay=False),
                     help="Master config file (repeatable, merged in order; default: "
                          "inferencex-e2e/configs/*-master.yaml)."),
        click.option("--runners", "runners_file", type=click.Path(dir_okay=False),
                     help="runners.yaml (default: beside the first config file)."),
        click.option("--model-prefix", multiple=True, help="Keep config keys starting with this (repeatable)."),
        click.option("--precision", multiple=True, help="Keep entries with this precision (repeatable)."),
        click.option("--framework", multiple=True, help="Keep entries with this framework (repeatable)."),
        click.option("--runner-type", multiple=True, help="Keep entries on this runner label (repeatable)."),
        click.option("--seq-lens", multiple=True, type=click.Choice(["1k1k", "8k1k"]),
                     help="Fixed-seq-len only: keep these sequence lengths (repeatable)."),
        click.option("--scenario-type", multiple=True, type=click.Choice(["fixed-seq-len", "agentic-coding"]),
                     help="Keep these scenarios (repeatable; default both)."),
        click.option("--min-conc", type=int, help="Lowest concurrency (InferenceX per-path semantics)."),
        click.option("--max-conc", type=int, help="Highest concurrency (InferenceX per-path semantics)."),
        click.option("--step-size", type=int, default=2, show_default=True, help="Concurrency ladder factor."),
        click.option("--max-tp", type=int, help="Fixed single-node only: skip entries with a larger tp."),
        click.option("--max-ep", type=int, help="Fixed single-node only: clamp ep to this."),
        click.option("--single-node", is_flag=True, help="Only single-node entries."),
        click.option("--multi-node", is_flag=True, help="Only multi-node entries."),
        click.option("--no-evals", is_flag=True, help="Throughput rows only, no eval marking."),
        click.option("--evals-only", is_flag=True, help="Only the rows selected for evals."),
        click.option("--all-evals", is_flag=True, help="Expand eval selection (alone: eval rows only)."),
        click.option("--with-config-key", is_flag=True,
                     help="Add each row's `config-key` (not an InferenceX key): what `runner run` and `runner "
                          "profile` read to find the row's recipe."),
        click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text",
                     show_default=True, help="text: one line per row; json: InferenceX's JSON array of rows; "
                                             "github: the array as step output `matrix`, the count in the summary."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


def _run(config_keys, concs, fmt, **options) -> None:
    from ci_tools.sweep.flow import MatrixRequest, matrix_rows

    rows = matrix_rows(MatrixRequest(config_keys=config_keys, concs=tuple(concs), **options))
    if fmt == "text":
        from ci_tools.sweep.render import matrix_text

        click.echo(matrix_text(rows), nl=False)
        return
    # one write of the whole ~1 MB line: click.echo's per-call processing is measurable here
    text = json.dumps([r.as_dict() for r in rows])
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if fmt == "github":
        from ci_tools.github import actions
        from ci_tools.sweep.render import matrix_summary

        actions.append_outputs({"matrix": text, "rows": str(len(rows))})
        actions.append_step_summary(matrix_summary(rows))


@click.group("matrix")
def cli() -> None:
    """Expand master configs into benchmark matrix rows (JSON array on stdout).

    \b
    Examples:
      ci-tools matrix full-sweep --no-evals
      ci-tools matrix full-sweep --config-file configs/nvidia-master.yaml --seq-lens 8k1k --max-conc 64
      ci-tools matrix test-config --config-key 'dsv41flash-*' --evals-only
    """


@cli.command("full-sweep")
@_common
def full_sweep(**kw) -> None:
    """Every entry of the master configs, filtered.

    \b
    Example:
      ci-tools matrix full-sweep --no-evals --single-node --framework sglang
    """
    _run(config_keys=None, concs=(), **kw)


@cli.command("test-config")
@click.option("--config-key", "config_keys", multiple=True, required=True,
              help="Config key or pattern with * and ? (repeatable).")
@click.option("--conc", "concs", multiple=True, type=int, help="Keep only these concurrencies (repeatable).")
@_common
def test_config(config_keys, concs, **kw) -> None:
    """Selected entries (exact keys or * / ? patterns), filtered.

    \b
    Example:
      ci-tools matrix test-config --config-key dsv41flash-fp4-b300-sglang --seq-lens 1k1k --conc 4
    """
    _run(config_keys=config_keys, concs=concs, **kw)
