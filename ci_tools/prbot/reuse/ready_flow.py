"""`ci-tools reuse ready`: the `ci-tools / ready to merge` check run and the card's readiness line.

Run on every event that can change the answer: a push to the PR or a label change
(`pull_request_target`), a `/use` comment (`issue_comment`), a sweep's end (`workflow_run`), and on a
push to main, where it writes what happened at merge on the merged PR's card (reused, or refused
and main swept itself, with the reason). The decision is reuse/ready.py; the pin is judged by
exactly the rules `reuse resolve` applies at merge (reuse/verdict.py), plus the artifact margin.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import Protocol

from ci_tools import names
from ci_tools.changelog.coverage import relevant
from ci_tools.github.events import Event
from ci_tools.github.models import PullRequest, Timeline, WorkflowRun
from ci_tools.prbot import context, messages
from ci_tools.prbot.card.flow import authorisation, update_card
from ci_tools.prbot.reuse import decide as reuse
from ci_tools.prbot.reuse import ready as readiness
from ci_tools.prbot.reuse import runs_flow
from ci_tools.prbot.reuse.verdict import Refusal, Usable, reuse_rules, sweep_run, workflow_path
from ci_tools.prbot.reuse.flow import Client, _resolve_push, measured_inputs, pr_inputs
from ci_tools.prbot.shell import Lazy, Result, Settings, load_timeline

OUTPUTS = ("pr", "ready", "state", "summary")


class ReadyClient(Client, Protocol):
    """What the readiness flow asks of GitHub besides what `/use` does."""

    def pulls_for_commit(self, sha: str) -> list[PullRequest]: ...
    def pull_files(self, number: int) -> list[str]: ...
    def open_pull_numbers(self, base: str | None) -> list[int]: ...


def _pr_of(event: Event | None, client: ReadyClient) -> int | None:
    if event is None:
        return None
    if event.pr_number is not None:
        return event.pr_number
    if event.name == "workflow_run" and event.workflow_run is not None:
        wr = event.workflow_run
        if wr.event == "workflow_dispatch":
            run = sweep_run(client.workflow_run(wr.id))   # a trusted sweep names its PR in the run name
            return run.trusted_pr
        if wr.pull_requests:
            return wr.pull_requests[0]
        # a fork PR's workflow_run carries no pull_requests: the commit's open PR
        open_prs = [p for p in client.pulls_for_commit(wr.head_sha) if p.state == "open"]
        return open_prs[0].number if len(open_prs) == 1 else None
    return None


GROUP_OUTPUTS = ("pr", "group")


def which_pr(event: Event | None, settings: Settings, gh: Lazy, *, pr: int | None = None,
             open_prs: bool = False) -> Result:
    """`reuse ready-pr`: the PR an event's readiness run is about and its concurrency group, resolved as
    `ready` resolves it (a fork PR's sweep end lists no pull_requests; a push to main is its merged
    PR's). Grouping by the raw event (the PR number for PR events, the head SHA for a sweep's end) put
    two evaluations of one PR in different groups, so an older one could finish last."""
    if open_prs or (event is not None and event.name in ("schedule", "workflow_dispatch") and pr is None):
        return Result(outputs={"pr": "", "group": names.READY_OPEN_PRS_GROUP},
                      messages=["every open PR: the daily pass has its own group"])
    number = pr
    if number is None and event is not None and event.name == "push":
        merged_ = sorted(p.number for p in gh().merged_pull_requests(event.after))
        if len(merged_) != 1:
            why = f"{len(merged_)} merged pull requests" if merged_ else "no merged pull request"
            return Result(outputs={"pr": "", "group": f"merge-ready-push-{event.after}"},
                          messages=[f"commit {event.after[:12]} has {why}: grouped by the commit"])
        number = merged_[0]
    if number is None:
        number = _pr_of(event, gh())
    if number is None:
        return Result(outputs=dict.fromkeys(GROUP_OUTPUTS, ""),
                      messages=["no pull request for this event: no readiness to report"])
    return Result(outputs={"pr": str(number), "group": names.READY_GROUP.format(pr=number)},
                  messages=[f"PR #{number}"])


def facts_of(number: int, client: ReadyClient, settings: Settings, tl: Timeline | None = None,
             now: datetime | None = None) -> tuple[readiness.Facts, context.PrContext, reuse.Authorisation]:
    """Everything the decision needs for PR `number`, read now; (facts, the PR's context, who pinned
    which run: the card's reuse line shows the same)."""
    policy = settings.policy
    prs = context.of(client.pull_request(number), settings.main_branch)
    files = client.pull_files(number)
    relevant_files = tuple(f for f in files if f == names.CHANGELOG or relevant(f, list(policy.performance_relevant)))
    tl = tl or load_timeline(client, number)
    auth = authorisation(client, tl, number, settings)
    label_problem = reuse.label_problems(prs.labels, policy)
    facts = readiness.Facts(pr=number, relevant_files=relevant_files, reusable_label=label_problem is None,
                            label_problem=label_problem, authorised=auth.authorised,
                            main_sweeps_on_refusal=policy.reuse.main_sweeps_on_refusal,
                            margin_days=policy.reuse.artifact_margin_days)
    if not relevant_files:
        return facts, prs, auth
    rules = reuse_rules(auth.pinned_run is not None, policy.reuse.optional_jobs, now)
    inputs = pr_inputs(settings, prs.head_sha)
    if not auth.authorised:
        if label_problem:
            return facts, prs, auth
        sel = runs_flow.select_run(rules, pinned=None, pr=prs, timeline=tl, policy=policy,
                                   workflow=settings.workflow, source=client, inputs=inputs)
        return replace(facts, candidate=sel.run.id if sel.run else None), prs, auth
    facts = replace(facts, pin_text=auth.pin_text)
    if label_problem:
        return facts, prs, auth
    sel = runs_flow.select_run(rules, pinned=auth.pinned_run, pr=prs, timeline=tl, policy=policy,
                               workflow=settings.workflow, source=client, inputs=inputs)
    if sel.run is None:
        return replace(facts, refused=sel.error), prs, auth
    expiry = readiness.earliest_expiry(client.artifacts(sel.run.id), lambda name: True)
    return replace(facts, run_id=sel.run.id, run_sha=sel.run.head_sha, expires_at=expiry, notes=sel.notes), prs, auth


def ready(event: Event | None, settings: Settings, gh: Lazy, *, pr: int | None = None,
          now: datetime | None = None, open_prs: bool = False) -> Result:
    now = now or datetime.now(timezone.utc)
    if event is not None and event.name == "push":
        return merged(event, settings, gh)
    if open_prs:
        return every_open_pr(settings, gh, now)
    client: ReadyClient = gh()
    number = pr or _pr_of(event, client)
    empty = dict.fromkeys(OUTPUTS, "")
    if number is None:
        return Result(outputs=empty, messages=["no pull request for this event: no readiness to report"])
    p = client.pull_request(number)          # cached: facts_of reads the same object
    if p.merged_at or p.state != "open":
        return Result(outputs={**empty, "pr": str(number)},
                      messages=[f"PR #{number} is {'merged' if p.merged_at else p.state}: no readiness to report"])
    tl = load_timeline(client, number)
    facts, prs, auth = facts_of(number, client, settings, tl, now)
    verdict = readiness.decide(facts, now)
    # a check run with the why and what to do (a status holds 140 characters); a merge queue's group
    # gets the PR's answer on its own commit too, or the queue waits for the required check
    shas = [prs.head_sha] + ([event.merge_group.head_sha] if event is not None and event.merge_group else [])
    for sha in shas:
        client.create_check_run(sha, name=readiness.CONTEXT, conclusion=verdict.state, title=verdict.summary,
                                summary=verdict.check_summary(number), details_url=f"https://github.com/{client.repo}/pull/{number}")
    update_card(client, number, tl, settings,
                lambda s: s.update(ready=verdict.card_line(), reuse=messages.reuse_text(auth)))
    return Result(outputs={"pr": str(number), "ready": str(verdict.ready).lower(), "state": verdict.state,
                           "summary": verdict.summary},
                  messages=[f"PR #{number} {readiness.CONTEXT}: {verdict.state}: {verdict.detail}"])


def every_open_pr(settings: Settings, gh: Lazy, now: datetime) -> Result:
    """The daily pass: artifacts approach their expiry without any event, so every open PR is checked
    again (a PR that cannot be checked is reported and the others still are)."""
    from ci_tools.github.client import GitHubError

    client: ReadyClient = gh()
    messages_, red, failed = [], [], []
    for number in client.open_pull_numbers(settings.main_branch):
        try:
            res = ready(None, settings, gh, pr=number, now=now)
        except GitHubError as exc:
            failed.append(number)
            messages_.append(f"PR #{number}: not checked: {exc.message}")
            continue
        messages_ += res.messages
        if res.outputs.get("ready") == "false":
            red.append(number)
    head = (f"checked the open PRs: {len(red)} not ready to merge"
            + (f" (#{', #'.join(map(str, red))})" if red else "")
            + (f"; {len(failed)} could not be checked" if failed else ""))
    return Result(outputs={**dict.fromkeys(OUTPUTS, ""), "ready": "false" if red else "true"},
                  messages=[head, *messages_], exit_code=1 if failed else 0)


def merged(event: Event, settings: Settings, gh: Lazy) -> Result:
    """On main: the merged PR's card says what the merge run does with its results, and why."""
    decision = _resolve_push(event, settings, gh)
    empty = dict.fromkeys(OUTPUTS, "")
    if decision.pr_number is None:
        return Result(outputs=empty, messages=[decision.summary()])
    line = merge_line(decision, event.after)
    client: ReadyClient = gh()
    update_card(client, decision.pr_number, load_timeline(client, decision.pr_number), settings,
                lambda s: s.update(ready=line))
    return Result(outputs={**empty, "pr": str(decision.pr_number)},
                  messages=[f"PR #{decision.pr_number}: {line}"])


def merge_line(decision: reuse.ReuseDecision, merge_sha: str) -> str:
    at = f"**At merge (`{merge_sha[:12]}`):**"
    if decision.reuse_enabled and decision.run is not None:
        notes = "".join(f" {n[0].upper()}{n[1:]}." for n in decision.notes)
        return f"{at} main publishes run {decision.run.id} (commit `{decision.run.head_sha[:12]}`).{notes}"
    if decision.error and decision.fallback:
        return f"{at} reuse was refused: {decision.error} Main runs its own sweep of the selected configs instead."
    if decision.error:
        return (f"{at} reuse was refused and nothing is published (policy `on-refused-reuse: fail`): {decision.error} "
                f"Recover with `ci-tools reuse recover --merge-commit {merge_sha} --run <run_id>` (docs/maintainer.md).")
    return f"{at} no `/use` pin counted ({decision.reason}); main runs its own sweep."


# ---- recovery ---------------------------------------------------------------------------------

RECOVER_OUTPUTS = ("dispatched", "pr", "source-run-id", "merge-run-id")
MAINTAINERS = ("admin", "maintain")        # who may re-ingest a merged PR's results


def _merge_run(client: ReadyClient, settings: Settings, merge_commit: str, limit: int = 100) -> WorkflowRun | None:
    """Main's sweep run of `merge_commit` (the run whose changelog metadata describes the merge)."""
    for n, run in enumerate(client.runs(settings.workflow, branch=settings.main_branch, event="push")):
        if n >= limit:
            break
        if run.head_sha == merge_commit:
            return run
    return None


def recover(event: Event | None, settings: Settings, gh: Lazy, dispatcher: Lazy | None = None, *,
            merge_commit: str, run_id: int, merge_run_id: int | None = None, dry_run: bool = False,
            requested_by: str | None = None, request_id: int | None = None) -> Result:
    """Check a merged PR's sweep run as `reuse resolve` would have at merge (inputs compared strictly with
    the merge commit), then ask the results app to ingest it (`--dry-run`: print the dispatch only).

    `request_id` names this recovery (recover-ingest.yml: its run id) in the dispatch key; the send
    goes through `send_once`, like every dispatch, so a re-run of the job sends nothing twice."""
    import json

    from ci_tools.errors import InputError
    from ci_tools.github.client import GitHubError
    from ci_tools.prbot.reuse import recover as rc
    from ci_tools.prbot.staging import decide as staging
    from ci_tools.prbot.staging.flow import send_once

    if not dry_run and request_id is None:
        raise InputError("a recovery's dispatch needs a request id: pass --request-id N (recover-ingest.yml passes "
                         "its run id, GITHUB_RUN_ID); a re-send with the same id is not sent twice", exit_code=2)
    client: ReadyClient = gh()
    out = dict.fromkeys(RECOVER_OUTPUTS, "")
    out.update({"dispatched": "false", "source-run-id": str(run_id)})
    checks: list[rc.Check] = []

    def refused() -> Result:
        return Result(outputs=out, messages=["recovery refused: " + next(c.detail for c in checks if not c.ok),
                                             *[c.line() for c in checks]], exit_code=1)

    if requested_by:
        level = client.permission(requested_by)
        ok = level in MAINTAINERS
        checks.append(rc.Check("requested by", ok, messages.permission_of(requested_by, level)
                               + ("" if ok else f"; recovery needs {' or '.join(MAINTAINERS)}")))
        if not ok:
            return refused()
    pulls = client.merged_pull_requests(merge_commit)
    if len(pulls) != 1:
        checks.append(rc.Check("merged PR", False, f"commit {merge_commit[:12]} is the merge of "
                               f"{len(pulls) or 'no'} merged pull request(s); name the merge commit of one PR"))
        return refused()
    prs = context.of(pulls[0], settings.main_branch)
    out["pr"] = str(prs.number)
    checks.append(rc.Check("merged PR", True, f"#{prs.number}, merged at {prs.merged_at}"))
    try:
        run = sweep_run(client.workflow_run(run_id))
    except GitHubError as exc:
        if exc.status != 404:
            raise
        checks.append(rc.Check("run", False, f"run {run_id} does not exist in {client.repo}"))
        return refused()
    tl = load_timeline(client, prs.number)
    inputs = measured_inputs(settings, base=f"{merge_commit}^", target=merge_commit)
    policy = settings.policy
    now = datetime.now(timezone.utc)
    answer = runs_flow.check_run(run, reuse_rules(True, policy.reuse.optional_jobs, now), pr=prs,
                                 timeline=tl, policy=policy, workflow_path=workflow_path(settings.workflow),
                                 source=client, inputs=inputs)
    notes = answer.notes if isinstance(answer, Usable) else ()
    checks.append(rc.run_check(answer.why if isinstance(answer, Refusal) else None, run_id, prs.number))
    checks.append(rc.inputs_check(inputs(run.head_sha)))
    merge_run = client.workflow_run(merge_run_id) if merge_run_id else _merge_run(client, settings, merge_commit)
    if merge_run is None:
        checks.append(rc.Check("merge run", False, f"no {settings.workflow} push run of {merge_commit[:12]} on "
                               f"{settings.main_branch}; pass --merge-run RUN_ID"))
    elif merge_run.head_sha != merge_commit:
        checks.append(rc.Check("merge run", False, f"run {merge_run.id} ran on {merge_run.head_sha[:12]}, "
                               f"not on the merge commit {merge_commit[:12]}"))
    else:
        checks.append(rc.Check("merge run", True, f"run {merge_run.id} of {merge_commit[:12]}"))
    out["merge-run-id"] = str(merge_run.id) if merge_run else ""
    if merge_run is None or not all(c.ok for c in checks):    # no merge run: a failed check above
        return refused()
    payload = staging.ingest_payload(source_repo=client.repo, run_id=run.id, run_attempt=run.run_attempt,
                                     head_sha=run.head_sha, pr_number=prs.number, merge_run_id=merge_run.id,
                                     merge_run_attempt=merge_run.run_attempt,
                                     recovery=request_id if request_id is not None else 0)
    lines = [c.line() for c in checks] + [n for n in notes]
    dispatch = f"{staging.INGEST_EVENT} to {settings.results_repo}: {json.dumps(payload, sort_keys=True)}"
    if dry_run:
        return Result(outputs=out, messages=["dry run: every check passed; would dispatch " + dispatch, *lines])
    if dispatcher is None:
        raise InputError("recovery dispatches to the results app: set RESULTS_DISPATCH_TOKEN (or use --dry-run)")
    sent = send_once(dispatcher(), settings.results_repo, staging.INGEST_EVENT, payload)
    out["dispatched"] = "true"
    return Result(outputs=out, messages=[("dispatched " + dispatch) if sent else
                                         f"not sent again: the results app already has {payload['dispatch-key']}",
                                         *lines])
