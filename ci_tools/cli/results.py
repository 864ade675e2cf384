"""`ci-tools results`: process one job's AIPerf exports, collect a run, Pareto and claims."""

from __future__ import annotations

from pathlib import Path

import click

from ci_tools.cli.emit import emit
from ci_tools.cli.options import repo_option, root_option
from ci_tools.errors import InputError

# What `--format github` writes to $GITHUB_OUTPUT (read by the workflow contract test).
GITHUB_OUTPUTS = {"results dispatch": ("dispatched", "ingest-run-id"),
                  "results publish": ("publish", "published", "path", "url"),
                  "results collect": lambda params: ("eval-verdict", "eval-artifact") if params.get("fmt") == "github" else ()}


@click.group()
def cli() -> None:
    """Turn AIPerf exports into judged results, collections, Pareto tables and plots.

    \b
    Example:
      ci-tools results process out/tp4-c1
      ci-tools results collect artifacts/ --out results.json
      ci-tools results pareto results.json --format markdown --plot pareto.png
      ci-tools results dispatch --event-path "$GITHUB_EVENT_PATH" --source-run-id "$ID" --collect-result success
    """


@cli.command("process")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(path_type=Path), help="Where to write the result (default DIR/result.json).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="json: the result (a list of them for a job of several concurrencies); github: also every "
                   "failed rule as an annotation and in $GITHUB_STEP_SUMMARY.")
@click.option("--max-error-rate", type=click.FloatRange(0.0, 1.0), default=0.10, show_default=True,
              help="Highest valid error rate (inclusive).")
@click.option("--min-requests", type=int, help="Minimum successful requests (default: per scenario x concurrency).")
@click.option("--name", help="Point name, when DIR has no job.json.")
@click.option("--tp", type=int, help="Point TP, when DIR has no job.json.")
@click.option("--ep", type=int, default=1, show_default=True)
@click.option("--dp-attn/--no-dp-attn", default=False)
@click.option("--conc", type=int, help="Requested concurrency.")
@click.option("--gpus", type=int, help="GPU count (default: TP).")
@click.option("--scenario", type=click.Choice(["agentic-coding", "fixed-seq-len"]), default="agentic-coding", show_default=True)
@click.option("--duration", type=float, help="Requested benchmark duration in seconds (AgentX).")
@click.option("--model", help="Served model name the run must echo.")
@click.option("--workers", type=click.IntRange(min=1),
              help="Processes reading the export (default: one per usable CPU, at most 4, for files over 256 MB).")
@click.option("--thresholds", "thresholds_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Eval jobs: the thresholds file [default: inferencex-e2e/eval-thresholds.yaml here].")
@click.option("--policy", "policy_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Policy file whose `results:` section sets the export's checks [default: inferencex-e2e/ci-policy.yaml "
                   "here, else ci-tools' default policy].")
@click.option("--export-sha256", "export_sha256", default=None, metavar="SHA256",
              help="The sha256 `runner run` gave its client's exports' record (its step output export-sha256): "
                   "the record in DIRECTORY must have it, or the result is invalid (export-custody). "
                   "Without it the record is checked as found.")
def process_cmd(directory: Path, out: Path | None, fmt: str, max_error_rate: float, min_requests: int | None,
                name, tp, ep, dp_attn, conc, gpus, scenario, duration, model, workers, thresholds_path,
                policy_path, export_sha256: str | None) -> None:
    """Compute and judge one job's result from AIPerf's exports (streaming).

    DIRECTORY is the runner's --out directory (with job.json) or an AIPerf artifact directory
    plus --tp/--conc. Writes result.json; exits 1 when the result is invalid, listing every rule
    that failed. The export must be byte for byte what the client left when it exited: every file
    is checked against the hashes `runner run` recorded then (client_exports.sha256). An eval job (job.json with `evals`) is scored instead: every exact_match metric
    against eval-thresholds.yaml, the batch manifest, the files; writes eval_result.json.

    \b
    Example:
      ci-tools results process out/dep2-c64 --export-sha256 "$EXPORT_SHA256"
      ci-tools results process aiperf-out --tp 4 --conc 4 --scenario fixed-seq-len --out r.json
    """
    from ci_tools.results import flow, render
    from ci_tools.results.process import PointInfo

    point = None if tp is None else PointInfo(name=name or f"tp{tp}-c{conc}", tp=tp, ep=ep, dp_attn=dp_attn, conc=conc,
                                              gpus=gpus, scenario=scenario, duration_s=duration, model=model)
    written = flow.run_process(directory, out, point, max_error_rate=max_error_rate, min_requests=min_requests,
                               workers=workers, thresholds_path=thresholds_path, policy_path=policy_path,
                               export_sha256=export_sha256,
                               progress=lambda line: click.echo(f"results process: {line}", err=True))
    emit(render.process_output(written, str(directory)), fmt)


@cli.command("collect")
@click.argument("roots", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(path_type=Path), required=True, help="Run-level collection file.")
@click.option("--expect", "expect", type=click.IntRange(min=0), default=0, show_default=True,
              help="Points the sweep planned (eval rows included): with fewer valid results (a canary or a family "
                   "failed, a job uploaded nothing, an eval failed) the collection is written but incomplete, and "
                   "the command exits 1, so the run is never ingested. 0: no completeness check (a reused run).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="json: the counts, verdict and notes as one object; github: the eval verdict as step outputs, "
                   "the eval table to $GITHUB_STEP_SUMMARY.")
def collect_cmd(roots: tuple[Path, ...], out: Path, expect: int, fmt: str) -> None:
    """Collect every result.json and eval_result.json under ROOTS into one run-level file.

    Invalid results are kept and marked `valid: false`; Pareto and tables ignore them. Eval rows are
    judged against the sweep's plan (changelog-metadata/plan.json under ROOTS): the verdict is
    `passed` only when every planned eval row has a passing eval result, `failed` when one failed or
    did not run, `none` without eval rows. Beside --out it writes eval-verdict.json and evals.md (the
    status card's eval table). The verdict does not change the exit code: collecting succeeded.

    \b
    Example:
      ci-tools results collect downloaded-artifacts/ --out results/results.json --format github
    """
    from ci_tools.results import render
    from ci_tools.results.collect import incomplete
    from ci_tools.results.flow import collect

    c = collect(list(roots), out)
    emit(render.collect_output(c, out, incomplete(c.counted, expect), fmt), fmt)


@cli.command("pareto")
@click.argument("input_path", metavar="INPUT", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "github"]), default="text",
              show_default=True, help="github: the text table, the Markdown table in $GITHUB_STEP_SUMMARY, an "
                                      "annotation per false claim.")
@click.option("--plot", "plot", type=click.Path(path_type=Path), help="Write a PNG plot (needs the `plot` extra).")
@click.option("--claims", "claims", type=click.Path(path_type=Path), help="Claims to check, one `<a> dominates <b>` a line.")
@click.option("--title", default="", help="Plot title.")
def pareto_cmd(input_path: Path, fmt: str, plot: Path | None, claims: Path | None, title: str) -> None:
    """Pareto frontier of tok/s/GPU against P90 tok/s/user (strict dominance).

    INPUT is a `results collect` file, a directory of result.json files or a CSV with columns
    point,tok_s_gpu,intvty_p90 (optional intvty_p50 and ttft_p90_s are shown in the table; the other
    columns of `results compare`'s CSV are accepted). Exits 1 when a claim is false.

    \b
    Example:
      ci-tools results pareto docs/seed-points.csv --format markdown --plot docs/pareto.png
      ci-tools results pareto results.json --claims claims.txt --format json
    """
    from ci_tools.results import flow, render

    emit(render.pareto_output(flow.pareto(input_path, claims, plot, title), input_path, fmt), fmt)


def _run_id(value: str | None, option: str) -> int | None:
    """An Actions run id, or None for an empty value (a workflow output that was not set)."""
    value = (value or "").strip()
    if not value:
        return None
    if not value.isdigit() or int(value) == 0:
        raise click.BadParameter(f"{value!r} is not a workflow run id (a positive number)", param_hint=option)
    return int(value)


@cli.command("dispatch")
@click.option("--event-path", type=click.Path(dir_okay=False), default=None,
              help="Event payload file [default: $GITHUB_EVENT_PATH].")
@click.option("--event-name", default=None, help="Event name [default: $GITHUB_EVENT_NAME].")
@click.option("--source-run-id", default="", help="The run reuse resolved (`reuse-source-run-id`); empty: none.")
@click.option("--collect-result", default="", envvar="COLLECT_RESULT", show_envvar=True,
              help="Result of this run's collection job (success, failure, cancelled, skipped).")
@click.option("--run-id", default=None, envvar="GITHUB_RUN_ID", show_envvar=True, help="This workflow run.")
@click.option("--run-attempt", type=click.IntRange(min=1), default=1, envvar="GITHUB_RUN_ATTEMPT", show_envvar=True)
@root_option("--repo-root", name="repo_root", exists=False, help="The checkout of the default branch (the policy).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="github: also write step outputs to $GITHUB_OUTPUT.")
def dispatch_cmd(event_path, event_name, source_run_id, collect_result, run_id, run_attempt, repo_root, fmt) -> None:
    """Ask the results app to ingest this sweep (push to main only; a no-op with a reason elsewhere).

    Sends `ingest-results` to $CI_TOOLS_RESULTS_REPO (default SemiAnalysisAI/InferenceX-app) with
    RESULTS_DISPATCH_TOKEN, naming the reused source run or this run (id, attempt, head sha, PR).
    This run qualifies only when its collection succeeded and it has a `changelog-metadata`
    artifact (listed with GITHUB_TOKEN, `actions: read`), so cancelled or partial sweeps are
    never ingested.

    \b
    Example:
      ci-tools results dispatch --event-path "$GITHUB_EVENT_PATH" --source-run-id "$SOURCE_RUN_ID" \\
        --collect-result success --format github
    """
    from ci_tools.cli._prbot import results_dispatcher, run_flow
    from ci_tools.prbot.staging.flow import results_dispatch

    source = _run_id(source_run_id, "--source-run-id")
    this_run = _run_id(run_id, "--run-id")

    def flow(event, settings, gh):
        if this_run is None and event.name == "push":
            raise InputError("no run id: pass --run-id or set GITHUB_RUN_ID (set by GitHub Actions)", exit_code=2)
        return results_dispatch(event, settings, gh, results_dispatcher(gh), source_run_id=source,
                                collect_result=collect_result, run_id=this_run or 0, run_attempt=run_attempt)

    run_flow(flow, event_path=event_path, event_name=event_name, repo_root=repo_root, fmt=fmt)


@cli.command("compare")
@click.argument("head", type=click.Path(path_type=Path))
@click.option("--baseline", "baselines", multiple=True, type=click.Path(path_type=Path),
              help="main's results: a collection, a directory of result.json or a CSV; repeat for a history, newest first.")
@click.option("--claims", "claims", type=click.Path(path_type=Path),
              help="Claims to check against both sides, one `<a> dominates <b>` a line (`main:<name>` for main's point).")
@click.option("--policy", "policy_path", type=click.Path(path_type=Path),
              help="Policy file with a `compare:` section [default: inferencex-e2e/ci-policy.yaml when present].")
@click.option("--from-main", is_flag=True,
              help="Read main's results from its latest successful sweep runs through the GitHub API "
                   "(GITHUB_TOKEN, GITHUB_REPOSITORY; needs actions: read).")
@click.option("--plot", "plot", type=click.Path(path_type=Path),
              help="Write a PNG of both sides' points and frontiers (needs the `plot` extra).")
@click.option("--title", default="", help="Plot title.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "github"]), default="text",
              show_default=True, help="github: the Markdown table into $GITHUB_STEP_SUMMARY, a warning per regression.")
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when any value regressed.")
def compare_cmd(head: Path, baselines: tuple[Path, ...], claims: Path | None, policy_path: Path | None,
                from_main: bool, plot: Path | None, title: str, fmt: str, fail_on_regression: bool) -> None:
    """Compare a run's points with main's: a verdict per point and metric, and the frontier shift.

    HEAD and each --baseline are a `results collect` file, a directory of result.json files, or a
    CSV (point,config-key,tp,ep,dp-attn,conc,tok_s_gpu,intvty_p90,intvty_p50,ttft_p90_s). Each
    point is matched with main's same point, or, where the PR changed its topology, with main's point
    of the same config and concurrency. Verdicts: improved, regressed, equivalent, inconclusive, new.

    \b
    Example:
      ci-tools results compare my-run/ --baseline main-results.json
      ci-tools results compare local.csv --baseline published.csv --claims claims.txt --format markdown
      ci-tools results compare results/results.json --from-main --format github --plot results/compare.png
    """
    from ci_tools.results.compare_flow import run_compare

    from ci_tools.results.render import compare_output

    report = run_compare(head, list(baselines), claims, policy_path, fmt, from_main=from_main, plot=plot, title=title)
    emit(compare_output(report, fail_on_regression), fmt)


@cli.command("report")
@click.argument("head", type=click.Path(path_type=Path))
@click.option("--baseline", "baselines", multiple=True, type=click.Path(path_type=Path),
              help="main's results, as for `results compare`; repeat for a history, newest first. None: the run "
                   "is drawn alone (a first or smoke run).")
@click.option("--from-main", is_flag=True, help="Read main's results from its latest sweeps (as `results compare`).")
@click.option("--evals", "evals_path", type=click.Path(path_type=Path),
              help="Eval results: a `results collect` file, an eval_result.json or a directory of them "
                   "[default: HEAD's evals when HEAD is a collection].")
@click.option("--telemetry", "telemetry_dir", type=click.Path(path_type=Path),
              help="Folder of the jobs' nvidia-smi CSVs (gpu_telemetry.csv per job) [default: HEAD when it is a folder].")
@click.option("--policy", "policy_path", type=click.Path(path_type=Path),
              help="Policy file with a `compare:` section [default: inferencex-e2e/ci-policy.yaml when present].")
@click.option("--title", default="", help="The page's title [default: the verdict and the PR and run].")
@click.option("--pr", type=click.IntRange(min=1), help="The PR the page links to [default: from --event-path].")
@click.option("--commit", default="", help="The commit it links to [default: the PR's head from --event-path].")
@repo_option(default="", help="The repository of the links.")
@click.option("--run-id", type=click.IntRange(min=1), envvar="GITHUB_RUN_ID", show_envvar=True,
              help="The sweep run it links to.")
@click.option("--event-path", type=click.Path(dir_okay=False, path_type=Path), envvar="GITHUB_EVENT_PATH",
              show_envvar=True, help="The workflow's event payload: the PR and its head commit.")
@click.option("--out", "out", type=click.Path(dir_okay=False, path_type=Path), required=True, help="The HTML file to write.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="github: the verdict, the chart and the page's name into $GITHUB_STEP_SUMMARY.")
def report_cmd(head: Path, baselines: tuple[Path, ...], from_main: bool, evals_path: Path | None,
               telemetry_dir: Path | None, policy_path: Path | None, title: str, pr: int | None, commit: str, repo: str,
               run_id: int | None, event_path: Path | None, out: Path, fmt: str) -> None:
    """Write the sweep's report: one self-contained HTML page, verdict first.

    The page opens with one overall verdict (regressed, improved, inconclusive, no change) and the
    PR, commit and run it belongs to; then the points counted once each, the metric values behind
    them, the frontier shift in a sentence, the chart of tok/s/GPU against P90 tok/s/user (both
    sides' points and frontiers, regressed points ringed), the verdict table, the eval scores and,
    where GPU telemetry was collected, power and SM clock per job. It reads completely without
    JavaScript (the charts are inline SVG); a small script adds a tooltip, toggles and sorting.
    Nothing is fetched. HEAD and --baseline are read as by `results compare`.

    \b
    Example:
      ci-tools results report docs/examples/seed-compare/pr-local-results.csv \\
        --baseline docs/examples/seed-compare/main-baseline.csv --out report.html
      ci-tools results report results/results.json --from-main --telemetry artifacts --out report/sweep-report.html
    """
    import os

    from ci_tools.results.report_flow import load_links, run_report

    from ci_tools.results.render import report_output

    links = load_links(event_path, repo=repo, server=os.environ.get("GITHUB_SERVER_URL") or "", run_id=run_id, pr=pr,
                       commit=commit)
    emit(report_output(run_report(head, list(baselines), out, from_main=from_main, evals_path=evals_path,
                                  telemetry_dir=telemetry_dir, policy_path=policy_path, title=title, links=links),
                       fmt), fmt)


@cli.command("publish")
@click.argument("report", type=click.Path(path_type=Path))
@click.option("--enabled", default="", envvar="CI_TOOLS_REPORT_PAGES", show_envvar=True,
              help="`true` publishes (the repository variable); anything else is a no-op with a reason.")
@click.option("--event-name", default="", envvar="GITHUB_EVENT_NAME", show_envvar=True)
@click.option("--event-path", type=click.Path(dir_okay=False, path_type=Path), envvar="GITHUB_EVENT_PATH",
              show_envvar=True, help="The event payload: a pull request's number, or a push to main.")
@click.option("--run-id", type=click.IntRange(min=1), envvar="GITHUB_RUN_ID", show_envvar=True,
              help="This workflow run [set by GitHub Actions].")
@repo_option("--repository", name="repository", default="", help="The repository whose Pages branch gets it.")
@click.option("--branch", default="gh-pages", show_default=True, help="The branch Pages serves.")
@click.option("--remote", default=None, help="Push there instead of the repository on github.com (tests, mirrors).")
@click.option("--site", default="", envvar="CI_TOOLS_REPORT_SITE", show_envvar=True,
              help="The Pages site's address, for a custom domain [default: https://OWNER.github.io/NAME/].")
@click.option("--keep", type=click.IntRange(min=1), default=3, show_default=True, help="Runs kept per PR.")
@click.option("--decide", is_flag=True, help="Only say whether this run's report would be published (`publish` output).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True,
              help="github: `publish`, `published`, `path` and `url` (the page's address) as step outputs, a line "
                   "in $GITHUB_STEP_SUMMARY.")
def publish_cmd(report: Path, enabled: str, event_name: str, event_path: Path | None, run_id: int | None, repository: str,
                branch: str, remote: str | None, site: str, keep: int, decide: bool, fmt: str) -> None:
    """Put the sweep report on the repository's GitHub Pages branch, when the repository enables it.

    A PR's run goes to pr-<N>/run-<id>/, a push to main to main/run-<id>/ (main's sweeps are the
    baseline history); each PR keeps its newest --keep runs; the index lists them all. Pushes with
    GITHUB_TOKEN (`contents: write`). Not enabled, or not a PR's or main's run: exit 0, nothing done.

    \b
    Example:
      ci-tools results publish report/report.html --enabled "$CI_TOOLS_REPORT_PAGES" --format github
    """
    import os

    from ci_tools.prbot.card.decide import card_pr
    from ci_tools.results.pages_flow import open_prs_of, run_publish
    from ci_tools.results.render import publish_output

    if run_id is None:
        raise InputError("no run id: pass --run-id or set GITHUB_RUN_ID (set by GitHub Actions)", exit_code=2)
    token = os.environ.get("GITHUB_TOKEN")
    p = run_publish(report, enabled=enabled, event_name=event_name, event_path=event_path, run_id=run_id,
                    repository=repository, branch=branch, remote=remote, token=token, keep=keep, pr_of_run=card_pr,
                    server=os.environ.get("GITHUB_SERVER_URL") or "https://github.com", decide=decide, site=site,
                    open_prs=open_prs_of(repository, token, os.environ.get("GITHUB_API_URL") or "https://api.github.com"))
    emit(publish_output(p, report, branch, decide, fmt), fmt)
