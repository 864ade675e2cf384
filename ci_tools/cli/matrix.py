"""`ci-tools matrix full-sweep|test-config`: master configs -> a JSON array of benchmark rows.

The rows are InferenceX's (`generate_sweep_configs.py`): same keys, key order and defaults, printed
as one line with Python's default JSON separators, so existing tooling can consume them unchanged.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ci_tools.errors import InputError, UsageError

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
        click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text",
                     show_default=True, help="text: one line per row; json: InferenceX's JSON array of rows; "
                                             "github: the array as step output `matrix`, the count in the summary."),
    ]
    for opt in reversed(options):
        f = opt(f)
    return f


def _read_masters_fast(files: list[Path]):
    """Every master entry without line marks (the hot path). Files outside the plain YAML subset go
    through PyYAML; any problem re-reads everything with marks so the error is located."""
    from ci_tools.config.masters import merge_master_docs
    from ci_tools.config.load import read_masters
    from ci_tools.yamlio import YamlDoc, load_data_fast, read_text

    try:
        return merge_master_docs([YamlDoc(str(f), load_data_fast(read_text(f), str(f))) for f in files])
    except InputError:
        return read_masters(files)


def _run(config_files, runners_file, config_keys, concs, model_prefix, precision, framework, runner_type, seq_lens,
         scenario_type, min_conc, max_conc, step_size, max_tp, max_ep, single_node, multi_node, no_evals, evals_only,
         all_evals, fmt="text") -> None:
    from ci_tools.config.load import default_master_paths, read_masters
    from ci_tools.policy.matrix import Filters, expand, select_evals
    from ci_tools.yamlio import load_data_fast, read_text

    if no_evals and (evals_only or all_evals):
        raise UsageError("--no-evals cannot be combined with --evals-only or --all-evals")
    files = [Path(p) for p in config_files] or default_master_paths(Path("."))
    masters = _read_masters_fast(files) if files else read_masters(files)
    runners_path = Path(runners_file) if runners_file else files[0].parent / "runners.yaml"
    # mark-free like the masters; a problem is reported by the located loader all the same
    runners = load_data_fast(read_text(runners_path), str(runners_path)) if runners_path.exists() or runners_file else {}
    if runners is None or not isinstance(runners, dict):
        raise InputError(f"{runners_path}: expected a mapping with `labels` and `hardware`")
    labels = runners.get("labels") or {}
    bad = [r for r in runner_type if r not in labels]
    if bad:
        raise UsageError(f"invalid runner type(s): {', '.join(bad)}. Runner labels in {runners_path}: "
                         f"{', '.join(sorted(labels)) or '(none)'}")
    keys = None
    if config_keys is not None:
        from ci_tools.changelog.keys import resolve_keys

        keys, unmatched = resolve_keys(list(config_keys), masters.keys())
        if unmatched:
            import difflib

            parts = []
            for u in unmatched:
                close = difflib.get_close_matches(u, masters.keys(), n=3, cutoff=0.6)
                parts.append(f"{u!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
            raise UsageError(f"unknown config key(s): {', '.join(parts)}; {len(masters.keys())} keys are defined in "
                             f"{', '.join(str(f) for f in files)}")
    filters = Filters(config_keys=tuple(keys) if keys is not None else None, model_prefix=model_prefix,
                      precision=precision, framework=framework, runner_type=runner_type, seq_lens=seq_lens,
                      scenario_types=scenario_type, min_conc=min_conc, max_conc=max_conc, concs=tuple(concs),
                      max_tp=max_tp, max_ep=max_ep, step=step_size, single_node=single_node, multi_node=multi_node)
    try:
        rows = expand(masters.entries, runners.get("hardware") or {}, filters)
    except InputError as exc:
        if exc.message.startswith("--"):
            raise UsageError(exc.message) from None
        raise
    rows = select_evals(rows, all_evals=all_evals, evals_only=evals_only, no_evals=no_evals)
    if fmt == "text":
        click.echo("".join(_row_line(r.data) + "\n" for r in rows) + f"{len(rows)} row(s)", nl=True)
        return
    # one write of the whole ~1 MB line: click.echo's per-call processing is measurable here
    text = json.dumps([r.data for r in rows])
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    if fmt == "github":
        from ci_tools.github.actions import append_outputs, append_step_summary

        append_outputs({"matrix": text, "rows": str(len(rows))})
        append_step_summary(f"### matrix: {len(rows)} row(s)\n")


def _row_line(row: dict) -> str:
    """One row for people: what runs where, at which sizes."""
    def size(part: dict) -> str:
        return f"tp{part.get('tp')} ep{part.get('ep')}" + (" dp-attn" if part.get("dp-attn") else "")

    if "prefill" in row or "decode" in row:
        shape = (f"prefill {row.get('prefill', {}).get('num-worker')}x({size(row.get('prefill') or {})}) "
                 f"decode {row.get('decode', {}).get('num-worker')}x({size(row.get('decode') or {})})")
    else:
        shape = size(row)
    seq = row.get("scenario-type") or f"{row.get('isl')}/{row.get('osl')}"
    conc = row.get("conc")
    conc = ",".join(map(str, conc)) if isinstance(conc, list) else conc
    return (f"{row.get('exp-name')} {row.get('precision')} {row.get('framework')} on {row.get('runner')}: "
            f"{seq} {shape} conc {conc}" + (" +eval" if row.get("run-eval") else ""))


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
