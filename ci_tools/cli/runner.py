"""`ci-tools runner run`: one matrix row on a self-hosted runner; `runner digest`: the runners' health."""

from __future__ import annotations

from pathlib import Path

import click

from ci_tools.cli.options import repo_option, root_option

from ci_tools.cli.emit import emit

# What `--format github` writes to $GITHUB_OUTPUT (read by the workflow contract test).
GITHUB_OUTPUTS = {
    "runner run": lambda params: tuple(_layout_output_names()) if params.get("fmt") == "github" else (),
    "runner profile": lambda params: (tuple(_layout_output_names()) + ("trace-dir", "artifact-profile")
                                      if params.get("fmt") == "github" else ()),
    "runner acceptance": lambda params: (tuple(_layout_output_names()) + ("acceptance-file", "artifact-acceptance")
                                         if params.get("fmt") == "github" else ()),
    "runner digest": ("offline", "missing", "busy", "total", "down-labels", "healthy", "queued"),
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
    """The job's names (written before anything starts) and its exports' record (when the client exits)."""
    from ci_tools import names

    return [*names.github_outputs("", ""), names.EXPORT_SHA256_OUTPUT]


@cli.command("run")
@click.option("--row", "row_path", type=click.Path(path_type=Path), required=True, help="Matrix row (JSON object).")
@click.option("--backend", type=click.Choice(["docker", "slurm", "process"]), default="docker", show_default=True,
              envvar="CI_TOOLS_BACKEND", show_envvar=True,
              help="How the host starts servers; a fact of the host, so its runner environment sets it.")
@click.option("--out", "out", type=click.Path(path_type=Path), default=Path("out"), show_default=True,
              help="Job directory (logs, AIPerf artifacts, job.json, status.json).")
@click.option("--dry-run", is_flag=True, help="Print the exact commands and environment; run nothing.")
@root_option(exists=False, help="The checkout (recipes, configs, the policy).")
@click.option("--aiperf-bin", envvar="CI_TOOLS_AIPERF", default="aiperf", show_default=True,
              help="AIPerf executable (env CI_TOOLS_AIPERF).")
@click.option("--lm-eval-bin", envvar="CI_TOOLS_LMEVAL", default="lm_eval", show_default=True,
              help="lm-eval executable for eval rows (env CI_TOOLS_LMEVAL; its own virtualenv, like AIPerf).")
@click.option("--model-store", envvar="CI_TOOLS_MODEL_STORE", default="/mnt/models", show_default=True,
              help="Runner folder holding models as <store>/<org>/<name> (env CI_TOOLS_MODEL_STORE).")
@click.option("--hf-cache", envvar="CI_TOOLS_HF_CACHE", default="/mnt/hf_hub_cache", show_default=True)
@click.option("--squash-dir", envvar="CI_TOOLS_SQUASH_DIR", default="/mnt/squash", show_default=True,
              help="Slurm: folder of enroot squashfs images, one per image, imported once and reused by later "
              "jobs; on a filesystem every node sees (env CI_TOOLS_SQUASH_DIR).")
@click.option("--tokenizer", help="Tokenizer for AIPerf (default: the row's model).")
@click.option("--dataset", default=None, metavar="NAME|synthetic:ISL:OSL",
              help="Agentic rows: AIPerf's public dataset (default: the AgentX traces, which AIPerf downloads), or "
              "synthetic:ISL:OSL, AIPerf's synthetic prompts of ISL tokens answered with exactly OSL tokens "
              "(ignore_eos): the offline path of a host without the dataset (docs/runner-operator.md).")
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
@click.option("--duration", "duration_override", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Agentic rows: benchmark seconds instead of the row's `duration` (a short offline run; "
              "`runner selftest` uses it).")
@click.option("--runner-name", envvar="RUNNER_NAME", default="", help="Concrete runner name (env RUNNER_NAME).")
@click.option("--image-policy", type=click.Path(dir_okay=False, path_type=Path), default=None,
              envvar="CI_TOOLS_IMAGE_POLICY",
              help="A trusted ci-policy.yaml whose `images: allowed:` the recipe's image must match (benchmark.yml "
                   "passes the workflow commit's copy, never the checked-out one); refused before anything starts.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="json: the outcome (or, with --dry-run, the commands) as one object; github: write the job's "
                   "file and artifact names to $GITHUB_OUTPUT first (also with --dry-run).")
def run_cmd(row_path: Path, backend: str, out: Path, dry_run: bool, root: Path, aiperf_bin: str, lm_eval_bin: str,
            model_store: str, hf_cache: str, squash_dir: str, tokenizer: str | None, dataset: str | None, server_cmd: str | None,
            router_cmd: str | None, port: int, worker_port: int, gpus: str | None, queue_timeout: float,
            ready_timeout: float, client_timeout: float | None, skip_node_check: bool, no_telemetry: bool,
            duration_override: float | None, runner_name: str, image_policy: Path | None, fmt: str) -> None:
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
    from ci_tools.runner.run_flow import prepare_run

    _run_job(prepare_run, fmt, row_path=row_path, backend=backend, out=out, dry_run=dry_run, root=root,
             aiperf_bin=aiperf_bin, lm_eval_bin=lm_eval_bin, model_store=model_store, hf_cache=hf_cache,
             squash_dir=squash_dir, tokenizer=tokenizer, dataset=dataset, server_cmd=server_cmd, router_cmd=router_cmd,
             port=port, worker_port=worker_port, gpus=gpus, queue_timeout=queue_timeout, ready_timeout=ready_timeout,
             client_timeout=client_timeout, skip_node_check=skip_node_check, no_telemetry=no_telemetry,
             duration_override=duration_override, runner_name=runner_name, image_policy=image_policy)


def _run_job(prepare, fmt: str, **request) -> None:
    """`runner run` / `runner profile` / `runner acceptance`: plan the job, write the step outputs
    before anything starts (a failed or cancelled job still uploads under its own names), dry-run or run it."""
    from ci_tools.runner import render
    from ci_tools.runner.run_plan import RunRequest

    job = prepare(RunRequest(**request))
    if fmt == "github":
        from ci_tools.github.actions import append_outputs

        append_outputs(job.outputs)
    if request["dry_run"]:
        return emit(render.dry_run(job.commands, job.outputs), fmt)
    emit(render.outcome(job.result_filename, request["out"], job.status_path, job.execute(_sealed(fmt)), job.done,
                        job.stopped), fmt)


def _sealed(fmt: str):
    """With --format github: the step output of the client's exports' record and a notice in the run's
    log, written the moment the client exits (runner/seal.py); GitHub keeps the step's last value when
    a multi-node job's clients each add theirs."""
    if fmt != "github":
        return None
    from ci_tools import names
    from ci_tools.github.actions import annotate, append_outputs

    def sealed(digest: str) -> None:
        append_outputs({names.EXPORT_SHA256_OUTPUT: digest})
        annotate("notice", f"the client's exports are recorded in {names.EXPORT_RECORD}, sha256 {digest}",
                 title="runner run: chain of custody")

    return sealed


def _optional_row(param: click.Parameter) -> click.Parameter:
    """`runner run`'s options for `runner profile`, whose --authorize-only needs no --row."""
    if param.name != "row_path":
        return param
    return click.Option(["--row", "row_path"], type=click.Path(path_type=Path), default=None,
                        help="Matrix row (JSON object); needed unless --authorize-only.")


def _profile_callback(requests: int | None, requested_by: str | None, authorize_only: bool, **params) -> None:
    """Serve the row's point with the engine's torch profiler on and trace a short client window.

    The job is `runner run`'s (same row, options, lifecycle; cancel-safe the same way): the server
    starts with the profiler switch (SGLang: SGLANG_TORCH_PROFILER_DIR; vLLM: --profiler-config),
    and once it is ready the runner POSTs the engine's /start_profile, runs AIPerf for --requests
    requests (default 2 per concurrency lane), POSTs /stop_profile, and merges the per-rank traces
    into OUT/profile_traces/merged.trace.json.gz with a README on opening them (Perfetto). TensorRT-LLM
    rows are refused (its profiler is set at start for a range of iterations, with no endpoint to put
    it around a window); multi-node rows too. With --format github
    the outputs of `runner run` plus trace-dir and artifact-profile are written first. With
    --requested-by LOGIN, LOGIN's permission is checked first: only a maintainer (admin, maintain or
    write) may hold a GPU runner for a profile; --authorize-only stops after that check. Exit 0 when
    the traces were merged (or the requester may); 1 on failure (no trace written included) or a
    refused requester; 130 / 143 when cancelled.

    \b
    Example:
      ci-tools runner profile --row row.json --dry-run
      ci-tools runner profile --row row.json --requests 32 --out "$RUNNER_TEMP/profile" --format github
      ci-tools runner profile --requested-by "$GITHUB_TRIGGERING_ACTOR" --authorize-only
    """
    from functools import partial

    from ci_tools.errors import UsageError
    from ci_tools.render.output import Output
    from ci_tools.runner.run_flow import authorize_profile, prepare_profile

    fmt = params.pop("fmt")
    if authorize_only and not requested_by:
        raise UsageError("--authorize-only checks --requested-by LOGIN: give it")
    if requested_by:
        allowed = authorize_profile(requested_by)
        if authorize_only:
            return emit(Output(text=allowed, json={"requested-by": requested_by, "allowed": True}), fmt)
        click.echo(allowed, err=True)
    if params.get("row_path") is None:
        raise UsageError("Missing option '--row' (only --authorize-only runs without one).")
    _run_job(partial(prepare_profile, requests=requests), fmt, **params)


cli.add_command(click.Command(
    "profile", callback=_profile_callback, help=_profile_callback.__doc__,
    short_help="Serve one point with the engine's profiler on; merge the per-rank traces.",
    params=[*(_optional_row(p) for p in run_cmd.params),
            click.Option(["--requests"], type=click.IntRange(min=1), default=None, envvar="CI_TOOLS_PROFILE_REQUESTS",
                         help="Requests in the profiled client window (env CI_TOOLS_PROFILE_REQUESTS; empty or "
                              "unset: 2 per concurrency lane)."),
            click.Option(["--requested-by"], default=None, metavar="LOGIN",
                         help="Who asked for the profile: refused (exit 1) unless a maintainer (admin, maintain or "
                              "write permission; GITHUB_TOKEN asks GitHub), before the row is read."),
            click.Option(["--authorize-only"], is_flag=True, default=False,
                         help="Only check --requested-by (the workflow's GitHub-hosted job, before a GPU runner "
                              "is held); no --row needed.")]))


def _acceptance_callback(speed_bench: str | None, run_url: str | None, **params) -> None:
    """Measure one SPEED-Bench collection cell: the acceptance length the engine reports for its point.

    ROW is one row of `ci-tools config acceptance-matrix --format json` (the speedbench-al workflow's
    matrix): the cell's `serve` row is run as `runner run` runs it (same options, lifecycle, cancel
    handling), but with real speculative decoding at the cell's step count (SGLang
    --speculative-num-steps, vLLM num_speculative_tokens; no simulated acceptance), AIPerf on
    SPEED-Bench's coding prompts (--speed-bench FILE; offline tests pass --dataset) with the cell's
    thinking mode, and the engine's own metric read before and after the window (SGLang
    /server_info avg_spec_accept_length, vLLM's spec_decode counters). The length goes to
    OUT/acceptance.json with the run that measured it (--run-url). With --format github the outputs
    of `runner run` plus acceptance-file and artifact-acceptance are written first. Exit 0 when a
    length was measured; 1 when the engine reported none (or any job failure); 130 / 143 when cancelled.

    \b
    Example:
      ci-tools runner acceptance --row cell.json --dry-run
      ci-tools runner acceptance --row cell.json --speed-bench /mnt/datasets/speed-bench/coding.jsonl --format github
    """
    from functools import partial

    from ci_tools.runner.run_flow import prepare_acceptance

    fmt = params.pop("fmt")
    _run_job(partial(prepare_acceptance, dataset_file=speed_bench, run_url=run_url), fmt, **params)


cli.add_command(click.Command(
    "acceptance", callback=_acceptance_callback, help=_acceptance_callback.__doc__,
    short_help="Measure one SPEED-Bench cell's acceptance length with real speculative decoding.",
    params=[*run_cmd.params,
            click.Option(["--speed-bench"], envvar="CI_TOOLS_SPEED_BENCH", default=None, metavar="FILE",
                         help="SPEED-Bench's coding prompts on this runner (env CI_TOOLS_SPEED_BENCH); without it "
                              "the point's own dataset is used (offline tests)."),
            click.Option(["--run-url"], envvar="CI_TOOLS_RUN_URL", default=None,
                         help="The run that measures (recorded with the length; the workflow passes its own).")]))


@cli.command("selftest")
@click.option("--out", "out", type=click.Path(path_type=Path), required=True,
              help="An empty folder: the jobs (one folder each), the collection, the Pareto table, the report and "
                   "selftest.json.")
@click.option("--backend", type=click.Choice(["process", "docker"]), default="process", show_default=True,
              envvar="CI_TOOLS_BACKEND", show_envvar=True,
              help="process: the host's engine; docker: the recipe's image (a GPU host with the NVIDIA runtime).")
@click.option("--engine", type=click.Choice(["vllm", "sglang"]), default="vllm", show_default=True,
              help="The engine under test, without --recipe.")
@click.option("--engine-version", "engine_versions", multiple=True, metavar="RELEASE",
              help="A release the host's engine must be (repeatable: a range), without --recipe; none: recorded only.")
@click.option("--recipe", type=click.Path(dir_okay=False, path_type=Path),
              help="A recipe of the engine under test: its engine, engine-versions, image (docker) and serve env are "
                   "used; its model and points are not (the self-test serves its own).")
@click.option("--aiperf-bin", envvar="CI_TOOLS_AIPERF", default="aiperf", show_default=True,
              help="AIPerf executable (env CI_TOOLS_AIPERF).")
@click.option("--engine-python", default=None,
              help="The Python with the engine's torch, transformers and tokenizers, which builds the model "
                   "[default: the engine launcher's interpreter, else python3].")
@click.option("--model-size", type=click.Choice(["0.5b", "tiny"]), default="0.5b", show_default=True,
              help="0.5b loads a GPU for real; tiny (a few MB) checks only the flow.")
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the model and the Hugging Face cache go (a temporary folder inside it, removed at the end; "
                   "needs 20 GiB free) [default: the system temp folder].")
@click.option("--keep-model", is_flag=True, help="Keep the model and the cache afterwards (the path is in selftest.json).")
@click.option("--gpus", envvar="CI_TOOLS_GPUS", default=None, help="The GPU to use, e.g. 3 (env CI_TOOLS_GPUS).")
@click.option("--port", type=int, default=8000, show_default=True, envvar="CI_TOOLS_PORT")
@click.option("--ready-timeout", type=click.FloatRange(min=1), default=900.0, show_default=True,
              help="Seconds each engine start may take; also the readiness check's limit.")
@click.option("--duration", type=click.FloatRange(min=1), default=60.0, show_default=True,
              help="Seconds of the agentic job's benchmark.")
@click.option("--cancel-after", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Seconds into the third job's client before the cancel.")
@click.option("--server-cmd", help="Replace the engine command ({port}, {model}); the version is still checked. "
                                   "For tests against a stub.")
@click.option("--runner-name", envvar="RUNNER_NAME", default="", help="Concrete runner name (env RUNNER_NAME).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="json: selftest.json's document; github: also the table to $GITHUB_STEP_SUMMARY.")
def selftest_cmd(fmt: str, **options) -> None:
    """Check a GPU host end to end with its engine before it joins the fleet, or an engine bump.

    Builds a small random-weight Llama where the engine runs (no hub access), then runs three
    ordinary `runner run` jobs into OUT: a short agentic job on AIPerf's synthetic dataset with
    exact output lengths, a fixed-sequence job, and a third job cancelled while its client runs, in
    GitHub's signal sequence; then `results process`, `collect`, `pareto` and `report`. Prints a
    verdict per check (engine version, GPUs seen, readiness, client run, validity, telemetry
    coverage, energy, cancel time, GPU memory freed, nothing left, results) and writes them to
    OUT/selftest.json. Exit 0 when every check passed; 1 when one failed; 2 on bad options.

    \b
    Example:
      ci-tools runner selftest --out "$RUNNER_TEMP/selftest" --engine-version 0.26.0
      ci-tools runner selftest --backend docker --recipe recipes/x/y.yaml --out selftest/
    """
    from ci_tools.render.output import Output
    from ci_tools.runner.selftest import render
    from ci_tools.runner.selftest_flow import SelftestRequest, selftest

    options["engine_versions"] = tuple(options["engine_versions"])
    report = selftest(SelftestRequest(**options), lambda m: click.echo(m, err=True))
    text = render(report.checks)
    emit(Output(text=text.rstrip("\n"), json=report.data, summary=f"### runner selftest\n\n```\n{text}```\n",
                exit_code=0 if report.ok else 1), fmt)


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
    from ci_tools.evals.driver import drive, drive_quietly, manifest_of
    from ci_tools.runner import render

    code = drive_quietly(job_dir, base_url) if fmt == "json" else drive(job_dir, base_url)
    emit(render.evals(code, manifest_of(job_dir) if code == 0 and fmt != "text" else None), fmt)


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
    from ci_tools.runner import render
    from ci_tools.runner.cleanup_flow import cleanup

    emit(render.cleanup(cleanup(out, labels, runner_name)), fmt)


@cli.command("digest")
@repo_option(required=True, help="The repository whose self-hosted runners to list.")
@click.option("--runners", "runners_path", type=click.Path(path_type=Path), default=None,
              help="runners.yaml (default: inferencex-e2e/configs/runners.yaml under --root).")
@root_option(exists=False, help="The checkout (recipes, configs, the policy).")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json", "github"]), default="text",
              show_default=True, help="github: Markdown to $GITHUB_STEP_SUMMARY, counts to $GITHUB_OUTPUT.")
@click.option("--date", "date", default=None, help="Date shown in the heading [default: today, UTC].")
@click.option("--now", "now", type=click.DateTime(["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"]), default=None,
              help="UTC time the queue's estimated starts count from [default: now].")
def digest_cmd(repo: str, runners_path: Path | None, root: Path, fmt: str, date: str | None, now) -> None:
    """Report, per runners.yaml label, which self-hosted runners are offline, missing or busy, and what is queued.

    Lists the repository's runners (GitHub API, token RUNNERS_TOKEN, else GITHUB_TOKEN; listing
    runners needs admin scope) and compares them with the runner names under each label of
    runners.yaml. A listed runner GitHub does not know is `missing`. The queue section lists, per
    label, the jobs of queued and in-progress runs waiting for its runners (GITHUB_TOKEN, actions:
    read), in priority order, with their PR, the GPU-hours ahead and an estimated start from the
    durations in each run's recorded plan. When SLACK_WEBHOOK_URL is set
    and a runner is offline or missing, the digest is also posted there. Exit 0 whatever the
    runners' state (the digest informs, it does not gate); 1 when GitHub or Slack fails.

    \b
    Example:
      ci-tools runner digest --repo "$GITHUB_REPOSITORY" --format github
      RUNNERS_TOKEN=... ci-tools runner digest --repo owner/name --format markdown
    """
    import datetime

    from ci_tools.github.actions import append_summary, write_outputs
    from ci_tools.runner.digest_flow import digest

    report = digest(repo, runners_path, root, date, now.replace(tzinfo=datetime.timezone.utc) if now else None)
    if fmt in ("markdown", "text"):
        click.echo(report.markdown, nl=False)
        if fmt == "text":
            click.echo("\n".join(report.messages))
        return
    if fmt == "github":
        append_summary(report.markdown)
    write_outputs(report.outputs, fmt, [report.markdown.splitlines()[2], *report.messages], report.data)
