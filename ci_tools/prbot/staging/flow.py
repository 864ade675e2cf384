"""`/stage-results` in a comment, its `stage dispatch`, `stage callback` from the results app, and
`results dispatch` (ingest on main)."""

from __future__ import annotations

import json

from ci_tools import names
from ci_tools.errors import InputError, UsageError
from typing import Protocol

from ci_tools.github.client import GitHubError
from ci_tools.github.events import Comment, Event
from ci_tools.prbot import context, messages, sticky
from ci_tools.prbot.commands import StageResults
from ci_tools.github.models import PullRequest, Timeline
from ci_tools.prbot.reuse import runs_flow, verdict
from ci_tools.prbot.shell import Comments, Lazy, Result, Settings, load_timeline, upsert
from ci_tools.prbot.staging import decide as staging


class Client(runs_flow.Source, Comments, Protocol):
    def pull_request(self, number: int) -> PullRequest: ...
    def merged_pull_requests(self, sha: str) -> list[PullRequest]: ...


class Dispatcher(Protocol):
    """The results app's repository_dispatch (RESULTS_DISPATCH_TOKEN), the only write that token makes;
    it also reads the names of the app's repository_dispatch runs (its acknowledgements)."""

    def dispatch(self, repo: str, event_type: str, client_payload: dict) -> None: ...
    def dispatch_run_names(self, repo: str) -> list[str]: ...


def send_once(dispatcher: Dispatcher, app_repo: str, event_type: str, payload: dict) -> bool:
    """Send a dispatch unless the app already acknowledged its key (a re-run after a POST whose
    answer was lost); True when it was sent now, False when the app had it already."""
    key = payload["dispatch-key"]
    if staging.acknowledged(event_type, key, dispatcher.dispatch_run_names(app_repo)):
        return False
    try:
        dispatcher.dispatch(app_repo, event_type, payload)
    except GitHubError as exc:
        raise GitHubError(f"{exc.message} It may have arrived all the same: the results app de-duplicates on "
                          f"dispatch-key {key}, and a re-run of this job first looks for the app's run named "
                          f"`{staging.acknowledgement_name(event_type, key)}` and sends nothing if it is there.",
                          status=exc.status) from None
    return True


def stage_command(cmd: StageResults, c: Comment, pr: int, tl: Timeline, gh: Client, settings: Settings,
                  res: Result) -> str:
    """An authorised author's `/stage-results` (the permission was checked for the whole comment)."""
    prs = context.of(gh.pull_request(pr), settings.main_branch)
    problem = staging.label_problem(prs.labels, settings.policy)
    run = None
    if problem is None:
        sel = runs_flow.select_run(verdict.staging_rules(cmd.run_id is not None), pinned=cmd.run_id, pr=prs,
                                   timeline=tl, policy=settings.policy, workflow=settings.workflow, source=gh)
        problem, run = sel.error, sel.run
    if run is None:   # a selection without a run says why
        return messages.text("stage-refused", author=c.author, command=cmd.text, why=problem)
    body = messages.render("stage-ack", kind=sticky.STAGE, key=c.id, author=c.author, run_id=run.id, run_url=run.html_url,
                           state={"run": run.id, "phase": "requested", "url": run.html_url})
    _, comment_id = upsert(gh, pr, tl, sticky.STAGE, c.id, body, settings)
    payload = staging.dispatch_payload(source_repo=gh.repo, pr_number=pr, run_id=run.id,
                                       run_attempt=run.run_attempt, run_date=run.created_at[:10],
                                       requested_by=c.author, comment_id=comment_id)
    # Sent by `stage dispatch`, the one job that holds the results app's token (issue #15).
    res.outputs.update({"stage-run-id": str(run.id), "stage-comment-id": str(comment_id),
                        "stage-payload": json.dumps(payload, sort_keys=True, separators=(",", ":"))})
    res.messages.append(f"staging run {run.id} requested (comment {comment_id})")
    return ""


def stage_dispatch(event: Event, settings: Settings, gh: Lazy, dispatcher: Lazy | None, payload_text: str) -> Result:
    """Send the `stage-results` dispatch `comment handle` decided, once it is re-checked against the
    triggering comment and GitHub's current state (`staging.dispatch_problem`)."""
    res = Result(outputs={"dispatched": "false"})
    client = gh()
    try:
        payload = staging.parse_dispatch_payload(payload_text, repo=client.repo)
    except ValueError as exc:
        raise InputError(f"--payload: {exc}") from None
    c = event.comment if event.name == "issue_comment" else None
    commenter = staging.Commenter(c.id, c.author, client.permission(c.author), event.action) if c else None
    ack = client.comment(int(payload["comment-id"])) if c else None
    run = client.workflow_run(int(payload["run-id"])) if c else None
    problem = staging.dispatch_problem(payload, repo=client.repo, pr_number=event.pr_number, commenter=commenter,
                                       ack=ack, bot=settings.bot, run=run)
    if problem:
        res.messages.append(f"not dispatched: {problem}")
        res.exit_code = 1
        return res
    if dispatcher is None:
        raise InputError("`/stage-results` needs a token that may dispatch to the results app: set "
                         "RESULTS_DISPATCH_TOKEN")
    sent = send_once(dispatcher(), settings.results_repo, staging.DISPATCH_EVENT, payload)
    res.outputs["dispatched"] = "true"
    res.messages.append(f"dispatched {staging.DISPATCH_EVENT} to {settings.results_repo} for run {payload['run-id']}"
                        if sent else f"not sent again: the results app already has {payload['dispatch-key']}")
    return res


def stage_callback(event: Event, settings: Settings, gh: Lazy) -> Result:
    if event.name != "repository_dispatch":
        raise UsageError(f"`stage callback` takes repository_dispatch events, not {event.name}")
    try:
        cb = staging.parse_callback(event.dispatch_type, event.client_payload, app_repo=settings.results_repo)
    except ValueError as exc:
        raise InputError(f"refusing the staging callback: {exc}") from None
    client = gh()
    tl = load_timeline(client, cb.pr_number)
    existing = None
    if cb.comment_id is not None:
        existing = next((c for c in tl.comments if c.id == cb.comment_id), None)
        if existing is None or existing.author != settings.bot or not sticky.is_marked(existing.body, sticky.STAGE):
            raise InputError(f"comment {cb.comment_id} is not the bot's staging comment on PR #{cb.pr_number}; "
                             "refusing to edit it")
    current = sticky.state_of(existing)
    if existing is not None and not staging.moves_forward(current, cb):
        return Result(outputs={"updated": "false"},
                      messages=[f"ignored: {cb.phase} arrived after {current.get('phase')} for run {cb.run_id}"])
    app_url = f"https://github.com/{settings.results_repo}/actions/runs/{cb.app_run_id}"
    run_url = current.get("url") or f"https://github.com/{client.repo}/actions/runs/{cb.run_id}"
    state = {"run": cb.run_id, "phase": cb.phase, "app-run": cb.app_run_id, "url": run_url}
    key = existing.body.split("\n", 1)[0].split()[2] if existing else f"run-{cb.run_id}"
    values = dict(author=cb.requested_by, run_id=cb.run_id, app_run_url=app_url, run_url=run_url)
    if cb.phase == "started":
        body = messages.render("stage-started", kind=sticky.STAGE, key=key, state=state, **values)
    elif cb.succeeded:
        body = messages.render("stage-succeeded", kind=sticky.STAGE, key=key, state=state,
                               view_url=staging.view_url(settings.staging_site, cb.run_date, cb.run_id), **values)
    else:
        body = messages.render("stage-failed", kind=sticky.STAGE, key=key, state=state, **values)
    action, cid = upsert(client, cb.pr_number, tl, sticky.STAGE, key, body, settings)
    return Result(outputs={"updated": str(action != "none").lower(), "comment-id": str(cid)},
                  messages=[f"staging comment {cid}: {action}"])


# ---- results dispatch (ingest on main) ---------------------------------------------------------

def results_dispatch(event: Event, settings: Settings, gh: Lazy, dispatcher: Lazy | None = None, *,
                     source_run_id: int | None, collect_result: str, run_id: int, run_attempt: int) -> Result:
    """Hand a finished sweep on main to the results app (`ingest-results`), or say why not."""
    decision = staging.ingest_decision(
        event_name=event.name, ref=event.ref, main_ref=settings.main_ref, collect_result=collect_result,
        source_run_id=source_run_id,
        metadata_present=lambda: names.CHANGELOG_METADATA in verdict.unexpired_names(gh().artifacts(run_id)))
    res = Result(outputs={"dispatched": "false", "ingest-run-id": ""}, messages=[decision.reason])
    if not decision.dispatch:
        return res
    client = gh()
    if decision.source_run_id is not None:
        source = client.workflow_run(decision.source_run_id)
        ingest_id, attempt, head_sha = decision.source_run_id, source.run_attempt, source.head_sha or event.after
    else:
        ingest_id, attempt, head_sha = run_id, run_attempt, event.after
    merged = sorted(p.number for p in client.merged_pull_requests(event.after))
    payload = staging.ingest_payload(source_repo=client.repo, run_id=ingest_id, run_attempt=attempt,
                                     head_sha=head_sha, pr_number=merged[0] if len(merged) == 1 else None,
                                     merge_run_id=run_id, merge_run_attempt=run_attempt)
    if dispatcher is None:
        raise InputError("ingesting needs a token that may dispatch to the results app: set RESULTS_DISPATCH_TOKEN "
                         "(in the workflow: `env: RESULTS_DISPATCH_TOKEN: ${{ secrets.RESULTS_DISPATCH_TOKEN }}`)")
    sent = send_once(dispatcher(), settings.results_repo, staging.INGEST_EVENT, payload)
    res.outputs.update({"dispatched": "true", "ingest-run-id": str(ingest_id)})
    res.messages.append((f"dispatched {staging.INGEST_EVENT} to {settings.results_repo} for run {ingest_id}"
                         if sent else f"not sent again: the results app already has {payload['dispatch-key']}")
                        + (f" (PR #{payload['pr-number']})" if payload["pr-number"] else ""))
    return res
