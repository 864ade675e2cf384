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
    from ci_tools import names

    return list(names.github_outputs("", ""))


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
    from ci_tools.config.load import default_master_paths, read_masters

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


def _hardware(row: dict, root: Path) -> dict:
    """runners.yaml `hardware:` facts of the row's runner label ({} when none)."""
    from ci_tools import names
    from ci_tools.config.load import read_runners

    path = root / names.RUNNERS
    if not path.is_file() or not row.get("runner"):
        return {}
    hw = (read_runners(path, root).data or {}).get("hardware") or {}
    return hw.get(row["runner"]) or {}


def _free_ports(backend: str, port: int, worker_port: int) -> tuple[int, int]:
    """Port 0: one the kernel says is free now (another job on a shared host holds its own)."""
    import socket

    if backend == "slurm":
        raise UsageError("--port 0 / --worker-port 0 pick free ports on this host, but with slurm the engine runs "
                         "on a compute node; give the ports explicitly (or hold the node with exclusive: true)")
    socks = []
    try:
        picked = []
        for value in (port, worker_port):
            if value:
                picked.append(value)
                continue
            s = socket.socket()
            s.bind(("0.0.0.0", 0))
            socks.append(s)
            picked.append(s.getsockname()[1])
        return picked[0], picked[1]
    finally:
        for s in socks:
            s.close()


def _gpu_list(gpus: str | None) -> list[str] | None:
    """The GPUs this runner was given: --gpus / CI_TOOLS_GPUS, else CUDA_VISIBLE_DEVICES, else all."""
    text = gpus if gpus is not None else os.environ.get("CUDA_VISIBLE_DEVICES")
    if text is None:
        return None
    devices = [d.strip() for d in text.split(",") if d.strip()]
    if not devices:
        raise UsageError("the runner was given no GPU (--gpus / CUDA_VISIBLE_DEVICES is empty)")
    return devices


def _eval_policy(row: dict, root: Path):
    """The policy's `evals:` section, for eval rows only (other rows run without a policy file)."""
    from ci_tools import names
    from ci_tools.evals.policy import is_eval_row, policy_from_doc
    from ci_tools.yamlio import load_yaml_file

    if not is_eval_row(row):
        return None
    path = root / names.POLICY
    if not path.is_file():
        raise InputError(f"{path}: policy file not found; eval rows take their harness and tasks from its "
                         "`evals:` section (pass --root REPO)")
    return policy_from_doc(load_yaml_file(path, names.POLICY))


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
@click.option("--lm-eval-bin", envvar="CI_TOOLS_LMEVAL", default="lm_eval", show_default=True,
              help="lm-eval executable for eval rows (env CI_TOOLS_LMEVAL; its own virtualenv, like AIPerf).")
@click.option("--model-store", envvar="CI_TOOLS_MODEL_STORE", default="/mnt/models", show_default=True,
              help="Runner folder holding models as <store>/<org>/<name> (env CI_TOOLS_MODEL_STORE).")
@click.option("--hf-cache", envvar="CI_TOOLS_HF_CACHE", default="/mnt/hf_hub_cache", show_default=True)
@click.option("--tokenizer", help="Tokenizer for AIPerf (default: the row's model).")
@click.option("--dataset", default=None, help="AIPerf public dataset, or synthetic:ISL:OSL (offline tests).")
@click.option("--server-cmd", help="Replace the engine command ({port}, {model} filled in); for tests and smoke runs.")
@click.option("--router-cmd", help="Replace the router command ({port}, {worker_port}; multi-node frontend: {port}, "
              "{prefill}, {decode} URLs); for tests.")
@click.option("--port", type=int, default=8000, show_default=True, envvar="CI_TOOLS_PORT",
              help="Port the client connects to; 0: a free one on this host, per job (docker/process; env CI_TOOLS_PORT).")
@click.option("--worker-port", type=int, default=30000, show_default=True, envvar="CI_TOOLS_WORKER_PORT",
              help="Port of the engine behind the router (DEP points); multi-node: the first worker's port "
              "(worker i uses this + 10 i).")
@click.option("--gpus", envvar="CI_TOOLS_GPUS", default=None,
              help="GPUs this runner may use, e.g. 2,3 (env CI_TOOLS_GPUS; default CUDA_VISIBLE_DEVICES, else all).")
@click.option("--queue-timeout", type=float, default=3600.0, show_default=True,
              help="Seconds the Slurm allocation may wait in the queue.")
@click.option("--ready-timeout", type=float, default=4 * 3600.0, show_default=True, help="Seconds to wait for readiness.")
@click.option("--client-timeout", type=float, default=None,
              help="Seconds the client may run (default: duration + 600; 3600 for fixed-sequence rows).")
@click.option("--skip-node-check", is_flag=True,
              help="Do not check GPUs, model and disk before starting (smoke runs on a host without GPUs).")
@click.option("--no-telemetry", is_flag=True, help="Do not sample GPU telemetry with nvidia-smi.")
@click.option("--duration-override", type=float, default=None, hidden=True, help="Tests only: benchmark seconds.")
@click.option("--runner-name", envvar="RUNNER_NAME", default="", help="Concrete runner name (env RUNNER_NAME).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="json: the outcome (or, with --dry-run, the commands) as one object; github: write the job's "
                   "file and artifact names to $GITHUB_OUTPUT first (also with --dry-run).")
def run_cmd(row_path: Path, backend: str, out: Path, dry_run: bool, root: Path, aiperf_bin: str, lm_eval_bin: str,
            model_store: str, hf_cache: str, tokenizer: str | None, dataset: str | None, server_cmd: str | None,
            router_cmd: str | None, port: int, worker_port: int, gpus: str | None, queue_timeout: float,
            ready_timeout: float, client_timeout: float | None, skip_node_check: bool, no_telemetry: bool,
            duration_override: float | None, runner_name: str, fmt: str) -> None:
    """Resolve the row's recipe point, start the server, wait, run AIPerf (or, for an eval row, the
    eval harness: `runner evals`), clean up.

    The recipe is the row's `recipe`, or the `recipe:` of its master entry (`config-key`).
    A multi-node row (prefill/decode) runs its disaggregated recipe on Slurm only: one
    allocation, one srun step per worker, the frontend, one AIPerf run per concurrency.
    With --format github the step outputs result-filename, out-dir, artifact-result,
    artifact-job and artifact-server-logs (ci_tools.names) are written before anything
    starts, so a failed or cancelled job still uploads under its own names.
    Exit 0 when the client finished; 1 on failure (not scheduled, server never ready, died,
    client failed); 130 / 143 when cancelled by SIGINT / SIGTERM (GitHub's cancel sends both):
    everything the job started is stopped first and status.json says so. Every phase is bounded
    (--queue-timeout, --ready-timeout, --client-timeout); the Slurm allocation's --time is their
    sum, and the whole must fit benchmark.yml's timeout-minutes. Then run `ci-tools results process OUT`.

    \b
    Example:
      ci-tools runner run --row row.json --backend docker --dry-run
      CI_TOOLS_BACKEND=slurm ci-tools runner run --row row.json --out results/ --format github
    """
    from ci_tools.config.recipe import resolve_point
    from ci_tools.config.load import load_recipe
    from ci_tools import names
    from ci_tools.runner.backends import Host, job_id, launches, ready_urls, render_dry_run, slurm_minutes
    from ci_tools.runner.budget import job_budget
    from ci_tools.runner.job import JobFailed, run_job
    from ci_tools.runner.plan import AGENTX_DATASET, Settings, build_plan

    row = _load_row(row_path)
    recipe_file = _recipe_path(row, root, row_path)
    try:
        display = str(recipe_file.resolve().relative_to(root.resolve()))
    except ValueError:
        display = str(recipe_file)
    recipe = load_recipe(recipe_file, display)
    hardware = _hardware(row, root)
    if 0 in (port, worker_port):
        port, worker_port = _free_ports(backend, port, worker_port)
    if "prefill" in row or "decode" in row:
        from ci_tools.runner.multinode import run_cli

        return run_cli(row, recipe, backend=backend, out=out, dry_run=dry_run, root=root, fmt=fmt,
                       settings=dict(model_store=model_store, hf_cache=hf_cache, aiperf_bin=aiperf_bin,
                                     tokenizer=tokenizer, dataset=dataset, server_cmd=server_cmd, port=port,
                                     ready_timeout_s=ready_timeout, runner_name=runner_name,
                                     duration_override_s=duration_override),
                       hardware=hardware, router_cmd=router_cmd, worker_port=worker_port,
                       client_timeout=client_timeout, queue_timeout=queue_timeout)
    try:
        point = resolve_point(recipe, int(row["tp"]), int(row.get("ep", 1)), bool(row.get("dp-attn", False)),
                              int(row["conc"]))
    except KeyError as exc:
        raise InputError(f"{row_path}: the row has no `{exc.args[0]}`") from None
    settings = Settings(model_store=model_store, hf_cache=hf_cache, aiperf_bin=aiperf_bin, tokenizer=tokenizer,
                        dataset=dataset or AGENTX_DATASET, server_cmd=server_cmd, router_cmd=router_cmd, port=port,
                        worker_port=worker_port, ready_timeout_s=ready_timeout,
                        gpus_per_node=int(hardware["gpus-per-node"]) if hardware.get("gpus-per-node") else None,
                        runner_name=runner_name, duration_override_s=duration_override, lm_eval_bin=lm_eval_bin,
                        root=str(root.resolve()), evals=_eval_policy(row, root))
    out_abs = out if dry_run else out.resolve()
    plan = build_plan(row, point, settings, str(out_abs))
    if client_timeout is None and plan.evals is not None:
        client_timeout = plan.evals["timeout-s"]   # the policy's limit for the whole harness batch
    budget = job_budget(plan.duration_s, queue_s=queue_timeout, ready_s=ready_timeout, client_s=client_timeout)
    if budget.problems():
        raise InputError(f"{row_path}: " + "; ".join(budget.problems()))
    slurm = hardware.get("slurm") or {}
    if backend == "slurm" and slurm.get("max-time-minutes") and \
            slurm_minutes(budget.allocation_s) > int(slurm["max-time-minutes"]):
        raise InputError(f"the job's Slurm allocation needs --time={slurm_minutes(budget.allocation_s)} min, over "
                         f"the {slurm['max-time-minutes']} min runners.yaml allows runner {row.get('runner')!r}; "
                         "lower --ready-timeout or the row's duration, or raise max-time-minutes")
    devices = _gpu_list(gpus)
    if devices is not None and backend != "slurm" and len(devices) < plan.gpus:
        raise InputError(f"the point needs {plan.gpus} GPUs but this runner was given {len(devices)} "
                         f"({','.join(devices)}); give it more (CI_TOOLS_GPUS / CUDA_VISIBLE_DEVICES) or run the "
                         "row on a larger runner")
    host = Host(label=job_id(plan, str(out_abs)), runner=runner_name, gpu_devices=devices, partition=slurm.get("partition"),
                account=slurm.get("account"), exclusive=bool(slurm.get("exclusive", True)),
                time_limit_s=budget.allocation_s)
    text = render_dry_run(plan, backend, settings, host)
    if fmt == "github":
        from ci_tools.github.actions import append_outputs

        append_outputs(names.github_outputs(plan.result_filename, str(out)))
    if dry_run:
        dry_run_report(fmt, text, names.github_outputs(plan.result_filename, str(out)))
        return
    out_abs.mkdir(parents=True, exist_ok=True)
    (out_abs / names.JOB_JSON).write_text(json.dumps({**plan.job_json(), "label": host.label}, indent=2) + "\n",
                                           encoding="utf-8")
    (out_abs / names.COMMANDS_TXT).write_text(text, encoding="utf-8")
    if plan.evals is not None:
        outputs, client_name = (f"{names.EVAL_DIR}/{names.EVAL_MANIFEST}",), "the eval harness"
    else:
        outputs = (f"{names.AIPERF_DIR}/{names.PROFILE_JSONL}", f"{names.AIPERF_DIR}/{names.PROFILE_JSON}")
        client_name = "AIPerf"
    from functools import partial

    from ci_tools.runner import nodecheck
    from ci_tools.runner.backends import gpu_sampler, model_path, node_check

    judge = partial(nodecheck.problems, need_gpus=plan.gpus, devices=None if backend == "slurm" else devices,
                    model=plan.served_model, model_path=model_path(plan, settings), hf_cache=settings.hf_cache)
    check = None if skip_node_check else (node_check(plan, backend, settings), judge)
    try:
        run_job(launches(plan, backend, settings, host), out_abs, ready_urls(plan, backend, settings),
                check=check, sampler=None if no_telemetry else gpu_sampler(plan, backend, host),
                ready_timeout_s=ready_timeout, client_timeout_s=budget.client_s, queue_timeout_s=queue_timeout,
                client_outputs=outputs, client_name=client_name, label=host.label, runner=runner_name)
    except JobFailed as exc:
        click.echo(f"error: {exc.phase}: {exc.message}", err=True)
        if exc.tail:
            click.echo("---- last lines of the log ----\n" + exc.tail.rstrip() + "\n----", err=True)
        click.echo(f"all processes of this job were stopped; see {out_abs / names.STATUS_JSON}", err=True)
        outcome_report(fmt, plan.result_filename, out, out_abs / names.STATUS_JSON, exc)
        sys.exit(exc.exit_code)
    outcome_report(fmt, plan.result_filename, out, out_abs / names.STATUS_JSON)


def dry_run_report(fmt: str, commands: str, outputs: dict[str, str]) -> None:
    """--dry-run's output: the commands for people, or one object for tools (`--format json`)."""
    if fmt == "json":
        click.echo(json.dumps({"dry-run": True, "outputs": outputs, "commands": commands}, indent=2))
    else:
        click.echo(commands, nl=False)


def outcome_report(fmt: str, result_filename: str, out: Path, status: Path, failed=None) -> None:
    """How the job ended: the next step for people; with `--format json` one object (the error too)."""
    if fmt != "json":
        if failed is None:
            click.echo(f"done: {result_filename}; next: ci-tools results process {out}")
        return
    body = {"ok": failed is None, "result-filename": result_filename, "out-dir": str(out), "status": str(status)}
    if failed is not None:
        body.update({"phase": failed.phase, "message": failed.message, "exit-code": failed.exit_code})
    click.echo(json.dumps(body, indent=2))


@cli.command("evals")
@click.argument("job_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--base-url", default=None, help="Where the server answers (replaces the planned URL).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="json: the batch manifest on stdout; github: each failed concurrency as an annotation and in "
                   "$GITHUB_STEP_SUMMARY.")
def evals_cmd(job_dir: Path, base_url: str | None, fmt: str) -> None:
    """The eval client of an eval job: run job.json's harness commands, once per eval concurrency.

    `runner run` starts it once the server is ready. Writes JOB_DIR/evals/results_conc<N>.json and
    the batch manifest meta_env.json; a failed harness run fails its concurrency (listed in the
    manifest) and `results process` then fails the job. Exit 2 only when JOB_DIR is not an eval job.

    \b
    Example:
      ci-tools runner evals out/ --base-url http://127.0.0.1:8000
    """
    from ci_tools.evals.driver import drive
    from ci_tools import names

    code = drive(job_dir, base_url)
    manifest_path = job_dir / names.EVAL_DIR / names.EVAL_MANIFEST
    if code == 0 and fmt != "text" and manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if fmt == "json":
            click.echo(json.dumps(manifest, indent=2))
        else:
            from ci_tools.github.actions import annotate, append_step_summary

            failures = manifest.get("failures") or {}
            for conc, why in failures.items():
                annotate("error", why, title=f"runner evals: conc {conc} failed")
            append_step_summary(f"### runner evals: {len(manifest.get('completed_eval_concs') or [])} of "
                                f"{len(manifest.get('eval_concs') or [])} concurrencies completed\n\n"
                                + "".join(f"- conc {c}: {why}\n" for c, why in failures.items()))
    sys.exit(code)


@cli.command("cleanup")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("out"), show_default=True,
              help="The job directory of `runner run` (its job.json names the job's label).")
@click.option("--label", "labels", multiple=True, help="Also stop what carries this job label (repeatable).")
@click.option("--runner-name", envvar="RUNNER_NAME", default="",
              help="Also stop everything this runner started (env RUNNER_NAME): leftovers of a crashed job.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="json: what was stopped and what could not be, as one object; github: also each problem as an "
                   "annotation and all of it in $GITHUB_STEP_SUMMARY.")
def cleanup_cmd(out: Path, labels: tuple[str, ...], runner_name: str, fmt: str) -> None:
    """Stop every process, container and Slurm job of this job; the workflow's `if: always()` step.

    `runner run` stops what it started itself, also when cancelled; this covers what it cannot: a
    SIGKILL, a crash, or a cancel before it started. It stops what carries the job's label (from
    OUT/job.json, or --label) and, with a runner name, everything labelled with that runner (a
    runner runs one job at a time). When `runner run` left no status.json, one is written saying
    the run step ended without one. Exit 0 when nothing is left; 1 when something could not be
    stopped (each named).

    \b
    Example:
      ci-tools runner cleanup --out "$RUNNER_TEMP/out"
    """
    from ci_tools import names
    from ci_tools.runner.cleanup import stop_labelled
    from ci_tools.runner.job import write_status

    found = list(labels)
    job_file = out / names.JOB_JSON
    if job_file.is_file():
        try:
            label = json.loads(job_file.read_text(encoding="utf-8")).get("label")
        except ValueError:
            label = None
        if label and label not in found:
            found.append(label)
    said: list[str] = []
    if not found and not runner_name:
        said.append(f"nothing to clean up: {job_file} does not exist (the job started nothing) and no "
                    "--label or RUNNER_NAME was given")
    stopped: list[str] = []
    problems: list[str] = []
    for i, label in enumerate(found or [""]):
        sweep = stop_labelled(label, runner_name if i == 0 else "", budget_s=8.0, grace_s=1.0)
        stopped += sweep.stopped()
        problems += sweep.problems
    wrote_status = out.is_dir() and not (out / names.STATUS_JSON).exists()
    if wrote_status:
        write_status(out, {"ok": False, "phase": "start", "exit_code": 1,
                           "reason": "the run step ended without a status (killed, or cancelled before it started)"})
        said.append(f"wrote {out / names.STATUS_JSON}: the run step left none")
    said += [f"stopped {line}" for line in stopped]
    if not stopped:
        said.append(f"nothing left running for "
                    f"{', '.join(found + ([f'runner {runner_name}'] if runner_name else [])) or '-'}")
    if fmt == "json":
        click.echo(json.dumps({"ok": not problems, "stopped": stopped, "problems": problems,
                               "wrote-status": wrote_status, "messages": said}, indent=2))
    else:
        click.echo("\n".join(said))
        for p in problems:
            click.echo(f"error: {p}", err=True)
    if fmt == "github":
        from ci_tools.github.actions import annotate, append_step_summary

        for p in problems:
            annotate("error", p, title="runner cleanup")
        append_step_summary(f"### runner cleanup: {'could not stop everything' if problems else 'done'}\n\n"
                            + "".join(f"- {m}\n" for m in said + [f"**error**: {p}" for p in problems]))
    if problems:
        sys.exit(1)


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

    from ci_tools import names
    from ci_tools.config.load import read_runners
    from ci_tools.github.actions import write_outputs
    from ci_tools.github.client import GitHub, token_from_env
    from ci_tools.runner.digest import build_digest, expected_runners, render_markdown

    path = runners_path or (root / names.RUNNERS)
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
