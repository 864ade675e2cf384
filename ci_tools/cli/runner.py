"""`ci-tools runner run`: one matrix row on a self-hosted runner; `runner digest`: the runners' health."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from ci_tools.errors import InputError, UsageError

# What `--format github` writes to $GITHUB_OUTPUT (read by the workflow contract test).
GITHUB_OUTPUTS = {
    "runner run": lambda params: tuple(_layout_output_names()) if params.get("fmt") == "github" else (),
    "runner digest": ("offline", "missing", "busy", "total", "down-labels", "healthy"),
}


@click.group()
def cli() -> None:
    """Serve one recipe point and benchmark it (the benchmark workflow's job step); runner health.

    \b
    Example:
      ci-tools runner run --row row.json --backend docker --out out/ --dry-run
      ci-tools runner digest --repo owner/name --format markdown
    """


def _layout_output_names() -> list[str]:
    from ci_tools.runner import layout

    return list(layout.github_outputs("", ""))


def _load_row(path: Path) -> dict:
    from ci_tools.yamlio import read_text

    try:
        row = json.loads(read_text(path))
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(row, list) and len(row) == 1:
        row = row[0]
    if not isinstance(row, dict):
        raise InputError(f"{path}: expected one matrix row (a JSON object)")
    return row


def _recipe_path(row: dict, root: Path, row_path: Path) -> Path:
    from ci_tools.config.masters import default_master_paths, read_masters

    if row.get("recipe"):
        return root / str(row["recipe"])
    key = row.get("config-key")
    if not key:
        raise InputError(f"{row_path}: the row has neither `recipe` nor `config-key`, so its recipe cannot be "
                         "found; pass a row printed by `ci-tools plan` or `ci-tools matrix`")
    masters = read_masters(default_master_paths(root), root)
    entry = masters.entries.get(key)
    if entry is None:
        raise InputError(f"{row_path}: config key {key!r} is not in any master config under {root}")
    if not isinstance(entry, dict) or not entry.get("recipe"):
        raise InputError(f"master entry {key!r} has no `recipe:` field; `runner run` serves recipe entries only")
    return root / str(entry["recipe"])


def _gpus_per_node(row: dict, root: Path) -> int | None:
    from ci_tools import paths
    from ci_tools.config.masters import read_runners

    path = root / paths.RUNNERS
    if not path.is_file() or not row.get("runner"):
        return None
    hw = (read_runners(path, root).data or {}).get("hardware") or {}
    value = (hw.get(row["runner"]) or {}).get("gpus-per-node")
    return int(value) if value else None


@cli.command("run")
@click.option("--row", "row_path", type=click.Path(path_type=Path), required=True, help="Matrix row (JSON object).")
@click.option("--backend", type=click.Choice(["docker", "slurm", "process"]), default="docker", show_default=True,
              envvar="CI_TOOLS_BACKEND", show_envvar=True,
              help="How the host starts servers; a fact of the host, so its runner environment sets it.")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("out"), show_default=True,
              help="Job directory (logs, AIPerf artifacts, job.json, status.json).")
@click.option("--dry-run", is_flag=True, help="Print the exact commands and environment; run nothing.")
@click.option("--root", type=click.Path(path_type=Path), default=Path("."), show_default=True, help="Repository root.")
@click.option("--aiperf-bin", envvar="CI_TOOLS_AIPERF", default="aiperf", show_default=True,
              help="AIPerf executable (env CI_TOOLS_AIPERF).")
@click.option("--model-store", envvar="CI_TOOLS_MODEL_STORE", default="/mnt/models", show_default=True,
              help="Runner folder holding models as <store>/<org>/<name> (env CI_TOOLS_MODEL_STORE).")
@click.option("--hf-cache", envvar="CI_TOOLS_HF_CACHE", default="/mnt/hf_hub_cache", show_default=True)
@click.option("--tokenizer", help="Tokenizer for AIPerf (default: the row's model).")
@click.option("--dataset", default=None, help="AIPerf public dataset, or synthetic:ISL:OSL (offline tests).")
@click.option("--server-cmd", help="Replace the engine command ({port}, {model} filled in); for tests and smoke runs.")
@click.option("--port", type=int, default=8000, show_default=True, help="Port the client connects to.")
@click.option("--router-cmd", help="Multi-node: replace the frontend command ({port}, {prefill}, {decode} URLs filled in); for tests.")
@click.option("--worker-port", type=int, default=30000, show_default=True,
              help="Multi-node: first worker port (worker i uses this + 10 i).")
@click.option("--ready-timeout", type=float, default=4 * 3600.0, show_default=True, help="Seconds to wait for readiness.")
@click.option("--client-timeout", type=float, default=None, help="Seconds the client may run (default: duration + 600).")
@click.option("--duration-override", type=float, default=None, hidden=True, help="Tests only: benchmark seconds.")
@click.option("--runner-name", envvar="RUNNER_NAME", default="", help="Concrete runner name (env RUNNER_NAME).")
@click.option("--format", "fmt", type=click.Choice(["text", "github"]), default="text", show_default=True,
              help="github: write the job's file and artifact names to $GITHUB_OUTPUT first (also with --dry-run).")
def run_cmd(row_path: Path, backend: str, out: Path, dry_run: bool, root: Path, aiperf_bin: str, model_store: str,
            hf_cache: str, tokenizer: str | None, dataset: str | None, server_cmd: str | None, port: int,
            ready_timeout: float, client_timeout: float | None, duration_override: float | None,
            runner_name: str, fmt: str, router_cmd: str | None, worker_port: int) -> None:
    """Resolve the row's recipe point, start the server, wait, run AIPerf, clean up.

    The recipe is the row's `recipe`, or the `recipe:` of its master entry (`config-key`).
    A multi-node row (prefill/decode) runs its disaggregated recipe on Slurm only: one
    allocation, one srun step per worker, the frontend, one AIPerf run per concurrency.
    With --format github the step outputs result-filename, out-dir, artifact-result,
    artifact-job and artifact-server-logs (ci_tools.runner.layout) are written before anything
    starts, so a failed or cancelled job still uploads under its own names.
    Exit 0 when the client finished; 1 on failure (server never ready, died, client failed),
    143 when cancelled by SIGTERM. Then run `ci-tools results process OUT`.

    \b
    Example:
      ci-tools runner run --row row.json --backend docker --dry-run
      CI_TOOLS_BACKEND=slurm ci-tools runner run --row row.json --out results/ --format github
    """
    from ci_tools.config.recipe import load_recipe, resolve_point
    from ci_tools.runner import layout
    from ci_tools.runner.backends import launches, ready_urls, render_dry_run
    from ci_tools.runner.job import CLIENT_GRACE_S, JobFailed, run_job
    from ci_tools.runner.plan import AGENTX_DATASET, Settings, build_plan

    row = _load_row(row_path)
    recipe_file = _recipe_path(row, root, row_path)
    try:
        display = str(recipe_file.resolve().relative_to(root.resolve()))
    except ValueError:
        display = str(recipe_file)
    recipe = load_recipe(recipe_file, display)
    if "prefill" in row or "decode" in row:
        from ci_tools.runner.multinode import run_cli

        return run_cli(row, recipe, backend=backend, out=out, dry_run=dry_run, root=root, fmt=fmt,
                       settings=dict(model_store=model_store, hf_cache=hf_cache, aiperf_bin=aiperf_bin,
                                     tokenizer=tokenizer, dataset=dataset, server_cmd=server_cmd, port=port,
                                     ready_timeout_s=ready_timeout, runner_name=runner_name,
                                     duration_override_s=duration_override),
                       gpus_per_node=_gpus_per_node(row, root), router_cmd=router_cmd,
                       worker_port=worker_port, client_timeout=client_timeout)
    try:
        point = resolve_point(recipe, int(row["tp"]), int(row.get("ep", 1)), bool(row.get("dp-attn", False)),
                              int(row["conc"]))
    except KeyError as exc:
        raise InputError(f"{row_path}: the row has no `{exc.args[0]}`") from None
    settings = Settings(model_store=model_store, hf_cache=hf_cache, aiperf_bin=aiperf_bin, tokenizer=tokenizer,
                        dataset=dataset or AGENTX_DATASET, server_cmd=server_cmd, port=port,
                        ready_timeout_s=ready_timeout, gpus_per_node=_gpus_per_node(row, root),
                        runner_name=runner_name, duration_override_s=duration_override)
    out_abs = out if dry_run else out.resolve()
    plan = build_plan(row, point, settings, str(out_abs))
    text = render_dry_run(plan, backend, settings)
    if fmt == "github":
        from ci_tools.github.actions import append_outputs

        append_outputs(layout.github_outputs(plan.result_filename, str(out)))
    if dry_run:
        click.echo(text, nl=False)
        return
    if plan.run_eval:
        raise UsageError("eval rows are not run by `runner run`: the eval workflow starts its own harness "
                         "(use --dry-run to see the server command without synthetic acceptance)")
    out_abs.mkdir(parents=True, exist_ok=True)
    (out_abs / layout.JOB_JSON).write_text(json.dumps(plan.job_json(), indent=2) + "\n", encoding="utf-8")
    (out_abs / layout.COMMANDS_TXT).write_text(text, encoding="utf-8")
    limit = client_timeout if client_timeout is not None else (plan.duration_s or 0) + CLIENT_GRACE_S
    try:
        run_job(launches(plan, backend, settings), out_abs, ready_urls(plan, backend, settings), ready_timeout_s=ready_timeout,
                client_timeout_s=limit,
                client_outputs=(f"{layout.AIPERF_DIR}/{layout.PROFILE_JSONL}", f"{layout.AIPERF_DIR}/{layout.PROFILE_JSON}"))
    except JobFailed as exc:
        click.echo(f"error: {exc.phase}: {exc.message}", err=True)
        if exc.tail:
            click.echo("---- last lines of the log ----\n" + exc.tail.rstrip() + "\n----", err=True)
        click.echo(f"all processes of this job were stopped; see {out_abs / layout.STATUS_JSON}", err=True)
        sys.exit(exc.exit_code)
    click.echo(f"done: {plan.result_filename}; next: ci-tools results process {out}")


@cli.command("digest")
@click.option("--repo", envvar="GITHUB_REPOSITORY", required=True, help="owner/name (env GITHUB_REPOSITORY).")
@click.option("--runners", "runners_path", type=click.Path(path_type=Path), default=None,
              help="runners.yaml (default: inferencex-e2e/configs/runners.yaml under --root).")
@click.option("--root", type=click.Path(path_type=Path), default=Path("."), show_default=True, help="Repository root.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json", "github"]), default="text",
              show_default=True, help="github: Markdown to $GITHUB_STEP_SUMMARY, counts to $GITHUB_OUTPUT.")
@click.option("--date", "date", default=None, help="Date shown in the heading [default: today, UTC].")
def digest_cmd(repo: str, runners_path: Path | None, root: Path, fmt: str, date: str | None) -> None:
    """Report, per runners.yaml label, which self-hosted runners are offline, missing or busy.

    Lists the repository's runners (GitHub API, token RUNNERS_TOKEN, else GITHUB_TOKEN; listing
    runners needs admin scope) and compares them with the runner names under each label of
    runners.yaml. A listed runner GitHub does not know is `missing`. When SLACK_WEBHOOK_URL is set
    and a runner is offline or missing, the digest is also posted there. Exit 0 whatever the
    runners' state (the digest informs, it does not gate); 1 when GitHub or Slack fails.

    \b
    Example:
      ci-tools runner digest --repo "$GITHUB_REPOSITORY" --format github
      RUNNERS_TOKEN=... ci-tools runner digest --repo owner/name --format markdown
    """
    import datetime

    from ci_tools import paths
    from ci_tools.config.masters import read_runners
    from ci_tools.github.actions import write_outputs
    from ci_tools.github.client import GitHub, token_from_env
    from ci_tools.runner.digest import build_digest, expected_runners, render_markdown

    path = runners_path or (root / paths.RUNNERS)
    if not path.is_file():
        raise InputError(f"{path}: runners file not found (pass --runners or --root)", exit_code=2)
    expected = expected_runners(read_runners(path, None if runners_path else root).data)
    token = os.environ.get("RUNNERS_TOKEN") or token_from_env()
    gh = GitHub(repo, token, api_url=os.environ.get("GITHUB_API_URL") or "https://api.github.com")
    d = build_digest(repo, gh.runners(), expected)
    date = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    run_url = ""
    if os.environ.get("GITHUB_RUN_ID"):
        run_url = (f"{os.environ.get('GITHUB_SERVER_URL', 'https://github.com')}/{repo}/actions/runs/"
                   f"{os.environ['GITHUB_RUN_ID']}")
    markdown = render_markdown(d, date=date, run_url=run_url)
    messages = [f"GitHub API requests: {gh.log.count}"]
    webhook = os.environ.get("SLACK_WEBHOOK_URL")
    if webhook and (d.offline or d.missing):
        from ci_tools.runner.slack import post

        post(webhook, markdown)
        messages.append("posted to Slack")
    if fmt == "markdown":
        click.echo(markdown, nl=False)
    elif fmt == "text":
        click.echo(markdown, nl=False)
        click.echo("\n".join(messages))
    else:
        if fmt == "github":
            summary = os.environ.get("GITHUB_STEP_SUMMARY")
            if not summary:
                raise UsageError("--format github needs $GITHUB_STEP_SUMMARY (set by GitHub Actions)")
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(markdown)
        write_outputs(d.outputs(), fmt, [markdown.splitlines()[2], *messages])
