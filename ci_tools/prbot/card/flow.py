"""`bot status-card`: the PR's one status card, and the section writes other flows make to it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, Protocol

from ci_tools.github.client import GitHubError
from ci_tools.github.events import Event
from ci_tools import names
from ci_tools.errors import InputError, UsageError
from ci_tools.prbot import messages, sticky
from ci_tools.prbot.card import decide as card
from ci_tools.prbot.card import shell as card_writer
from ci_tools.github.models import Artifact, Job, Timeline, WorkflowRun, named_artifact
from ci_tools.prbot.reuse import decide as reuse
from ci_tools.prbot.reuse import runs_flow, verdict
from ci_tools.prbot.shell import Comments, Lazy, Result, Settings, load_timeline


class Client(card_writer.CardClient, Comments, runs_flow.Source, Protocol):
    """What the card flow asks of GitHub (and `results/baselines.main_results`, for main's results, and
    `pin_checker`, for the runs a `/use` names)."""

    def permission(self, login: str) -> str: ...
    def workflow_run(self, run_id: int) -> WorkflowRun: ...
    def artifacts(self, run_id: int) -> list[Artifact]: ...
    def run_jobs(self, run_id: int) -> list[Job]: ...
    def artifact_zip(self, artifact_id: int, *, max_bytes: int = ...) -> bytes: ...
    def runs(self, workflow: str, *, branch: str, event: str = ..., status: str = ...) -> Iterator[WorkflowRun]: ...


def run_line(run: dict, settings: Settings, families: list[dict] | None = None) -> str:
    """The sweep section: the run, its state and commit, progress per family, the results site."""
    return messages.sweep_section(card.sweep_markdown(run, families or []), run["id"], settings.results_site)


def report_url(settings: Settings, pr: int | None, run: dict, artifacts: list[Artifact] | None = None) -> str:
    """Where the run's sweep report opens: its Pages page when the repository publishes them, else the
    report artifact itself (one HTML file uploaded unzipped: GitHub shows it in the browser), else
    the run's artifacts list."""
    from ci_tools.results import pages

    if settings.report_site and pr:
        return pages.url(settings.report_site, pr, int(run["id"]))
    art = named_artifact(artifacts or [], names.REPORT_ARTIFACT)
    if art is not None and run.get("url"):
        return f"{run['url']}/artifacts/{art.id}"
    return f"{run.get('url', '')}#artifacts"


def results_section(gh: Client, run: dict, settings: Settings, pr: int | None = None) -> str | None:
    """The run's collected results against main's (None when the run collected nothing)."""
    from ci_tools.results.baselines import collection_from_zip, main_results
    from ci_tools.results import compare, compare_render, report

    artifacts = gh.artifacts(int(run["id"]))
    art = named_artifact(artifacts, names.COLLECTION_ARTIFACT)
    if art is None:
        if any(a.name == names.COLLECTION_ARTIFACT and a.expired for a in artifacts):
            return messages.results_expired(names.COLLECTION_ARTIFACT, run)
        return None
    try:
        head = collection_from_zip(gh.artifact_zip(art.id), f"run {run['id']} {names.COLLECTION_ARTIFACT}")
    except GitHubError as exc:
        # the card is information: say what is missing instead of failing the card job
        return messages.results_not_downloaded(names.COLLECTION_ARTIFACT, exc, run)
    except ValueError as exc:
        return messages.results_unreadable(exc, run)
    policy = compare.Policy.from_mapping(settings.policy.compare)
    valid = [r for r in head if r.get("valid")]
    if not valid:
        return messages.no_valid_results(len(head), run)
    wanted = {compare.identity(r["point"]) for r in valid}
    main = main_results(gh, wanted=wanted, history=policy.history, branch=settings.main_branch,
                        workflow=settings.workflow)
    comparisons = compare.compare_points(valid, main.results, policy)
    shift = compare.frontier_shift(compare.points_of(valid), compare.points_of(compare.latest_per_point(main.results)))
    body = compare_render.card_markdown(comparisons, shift, report_url=report_url(settings, pr, run, artifacts),
                                        method=report.method_line(comparisons, policy))
    return messages.results_against_main(body, main.runs, len(head) - len(valid), run)


def card_sections(state: dict, keys: set[str], settings: Settings) -> dict[str, str]:
    """The card sections that the state `keys` a writer changed render to."""
    out: dict[str, str] = {}
    if "run" in keys and state.get("run"):
        out["sweep"] = run_line(state["run"], settings)
    if "plan" in keys and state.get("plan"):
        out["plan"] = state["plan"]
    if "reuse" in keys or "ready" in keys:
        # the merge-readiness line (`reuse ready`) leads the section; `/use` writes the pin line under it
        out["reuse"] = "\n\n".join(x for x in (state.get("ready"), state.get("reuse") or messages.NOT_AUTHORISED) if x)
    return out


class _Recording(dict):
    """A state dict that remembers which keys a change wrote."""

    def __init__(self, *a):
        super().__init__(*a)
        self.written: set[str] = set()

    def __setitem__(self, key, value):
        self.written.add(key)
        super().__setitem__(key, value)

    def setdefault(self, key, default=None):
        self.written.add(key)
        return super().setdefault(key, default)

    def update(self, *a, **kw):
        self.written.update(dict(*a, **kw))
        super().update(*a, **kw)


def update_card(gh: card_writer.CardClient, pr: int, tl: Timeline, settings: Settings, change: Callable[[dict], None], *,
                sections: dict[str, str] | None = None, ranks: dict[str, int] | None = None) -> str:
    """Apply `change` to the card's state and rewrite only the sections it touched (plus `sections`),
    re-reading the card so that concurrent writers of other sections lose nothing (card/shell.py)."""
    probe = _Recording(sticky.state_of(sticky.find_sticky(tl.comments, card.KIND, bot_login=settings.bot)))
    change(probe)
    todo = card_sections(probe, probe.written, settings) | (sections or {})
    return card_writer.write_sections(gh, pr, todo, bot=settings.bot, ranks=ranks, state_change=change,
                                      settle=settings.card_settle).action


def pin_checker(gh: runs_flow.Source, repo: str, settings: Settings) -> Callable[[int], str | None]:
    """Why a run id cannot be pinned at all (no such run, another repository's, not a sweep), from GitHub
    now; the client fetches each run once per process."""
    return lambda run_id: reuse.pin_problem_of(runs_flow.fetch_run(gh, run_id), run_id, repository=repo,
                                               workflow=settings.workflow)


def authorisation(gh: Client, tl: Timeline, pr: int, settings: Settings,
                  answering: dict[int, reuse.Handled] | None = None) -> reuse.Authorisation:
    """Who authorised reuse: the permission the bot recorded when it answered each command, and the
    author's permission read from the API now (the client asks once per login per run), both needed
    (`reuse.authorise`). The card's `writers` record is not used to decide. `answering`: the command
    comment being answered now, whose reply (and its record) is written after this."""
    return reuse.authorise(tl.comments, gh.permission, pr_number=pr, pin_problem=pin_checker(gh, gh.repo, settings),
                           bot=settings.bot, answering=answering)


def sweep_plan_text(tl: Timeline, settings: Settings, pr: int) -> str:
    """The plan summary the sweep workflow last put on the status card (`bot status-card --plan-file`).

    Computing a plan here would need the PR's files checked out; the sweep workflow already runs
    `ci-tools plan` on them, so the reply shows its latest result rather than a second opinion."""
    state = sticky.state_of(sticky.find_sticky(tl.comments, card.KIND, bot_login=settings.bot))
    return messages.sweep_plan(pr, state.get("plan"), state.get("run") or {})


def card_inputs(*, plan_file: Path | None, plan_json: Path | None, evals_file: Path | None) -> tuple[str | None, str | None]:
    """(plan, evals) to show, from the files `bot status-card` was given (None: not given)."""
    if plan_file and plan_json:
        raise UsageError("give --plan-file or --plan-json, not both")
    try:
        plan = plan_file.read_text(encoding="utf-8") if plan_file else None
    except OSError as exc:
        raise InputError(f"{plan_file}: cannot read the plan summary ({exc.strerror})") from None
    if plan_json:
        from ci_tools.sweep.render import card_summary

        try:
            plan = card_summary(json.loads(plan_json.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{plan_json}: not a plan from `ci-tools plan --format json` ({exc})") from None
    evals = None
    if evals_file is not None:
        evals = evals_file.read_text(encoding="utf-8") if evals_file.is_file() else messages.NO_EVALS_COLLECTED
    return plan, evals


def which_pr(event: Event, settings: Settings, gh: Lazy) -> Result:
    """`bot card-pr`: the PR (and concurrency group) of a workflow_run event's card; no API call."""
    from ci_tools.prbot.card.decide import card_group, card_pr

    if event.name != "workflow_run" or event.workflow_run is None:
        return Result(outputs={"pr": "", "group": ""}, messages=[f"a {event.name} event has no status card run"])
    pr, why = card_pr(event.workflow_run)
    return Result(outputs={"pr": str(pr or ""), "group": card_group(pr) if pr else ""}, messages=[why])


def status_card(event: Event | None, settings: Settings, gh: Lazy, *, pr: int | None, run: dict | None,
                plan: str | None, evals: str | None = None) -> Result:
    observed = False  # a workflow_run event of a sweep that planned: its jobs and artifacts can be read
    finished = False  # ... and it has completed: its results can be read too
    idle = None
    if event is not None and event.name == "workflow_run":
        wr = event.expect_workflow_run()
        if wr.event == "workflow_dispatch" and wr.path.split("@")[0] == verdict.TRUSTED_PATH:
            # A fork PR's trusted sweep: the run name says which PR and commit (one call to read it).
            wr = verdict.sweep_run(gh().workflow_run(wr.id))
            if wr.trusted_pr is None:
                return Result(outputs={"comment": "none"},
                              messages=[f"run {wr.id} does not name a PR in its run name: no status card"])
            wr = replace(wr, pull_requests=(wr.trusted_pr,))
        if wr.event not in ("pull_request", "workflow_dispatch") or not wr.pull_requests:
            return Result(outputs={"comment": "none"}, messages=["not a pull-request sweep run: no status card"])
        pr = pr or wr.pull_requests[0]
        if run is None and names.CHANGELOG_METADATA in verdict.unexpired_names(gh().artifacts(wr.id)):
            run = {"id": wr.id, "url": wr.html_url, "conclusion": wr.conclusion or wr.status, "head_sha": wr.head_sha}
            observed, finished = True, wr.status == "completed"
        elif run is None:
            # The gate or the reuse step stopped it before planning (a label change that restarts
            # nothing, a push after /use): it did no GPU work, so the card keeps the last sweep.
            idle = f"run {wr.id} planned no sweep (no {names.CHANGELOG_METADATA} artifact): the latest run is kept"
    if pr is None:
        raise UsageError("give --pr (or a workflow_run event of a pull-request run)")
    client: Client = gh()
    tl = load_timeline(client, pr)
    auth = authorisation(client, tl, pr, settings)
    sections: dict[str, str] = {}
    ranks: dict[str, int] = {}
    notes: list[str] = []
    if run and run.get("id"):
        from ci_tools.sweep.buckets import BUCKETS

        families = card.progress(client.run_jobs(int(run["id"])), BUCKETS) if observed else []
        sections["sweep"] = run_line(run, settings, families)
        ranks["sweep"] = int(run["id"])
        if finished:
            results = results_section(client, run, settings, pr)
            if results is not None:
                sections["results"] = results
                ranks["results"] = int(run["id"])
                notes.append(f"results of run {run['id']} compared with main")
    if evals is not None and run and run.get("id"):  # the run's eval table (ci_tools.evals.report), or why none
        sections["evals"] = evals.strip()
        ranks["evals"] = int(run["id"])

    def change(state: dict) -> None:
        shown = state.get("run")
        shown = shown if isinstance(shown, dict) else {}
        # the newest run heads the card: a late writer of an older run does not take its line back
        if run and int(run.get("id") or 0) >= int(shown.get("id") or 0):
            state["run"] = run
        if plan:
            state["plan"] = plan.strip()
        state["reuse"] = messages.reuse_text(auth)

    action = update_card(client, pr, tl, settings, change, sections=sections, ranks=ranks)
    return Result(outputs={"comment": action},
                  messages=[f"status card: {action}", *notes] + ([idle] if idle else []))
