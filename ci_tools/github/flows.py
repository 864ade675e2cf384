"""The imperative shell of the pull-request commands and bots.

Each flow reads an event, asks GitHub only what the decision needs (lazily, through the `GitHub`
adapter), calls the pure decisions in `ci_tools/policy/`, performs the writes and returns a `Result`
(step outputs, messages, exit code). The client is created on first use, so events that cannot need
GitHub cost zero calls and need no token.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from ci_tools import paths
from ci_tools.errors import InputError, UsageError
from ci_tools.github.client import GitHub, GitHubError, TeamUnreadable
from ci_tools.github.events import Comment, Event, PullRequest
from ci_tools.github.timeline import Timeline, timeline_from_api
from ci_tools.github import card as card_writer
from ci_tools.policy import card
from ci_tools.policy import comments as cm
from ci_tools.policy import approval, reuse, signoff, staging
from ci_tools.policy.commands import StageResults, SweepApprove, SweepPlan, UsageProblem, Use, parse
from ci_tools.policy.labels import Policy, load_policy
from ci_tools.policy.prbody import check_body

SWEEP_WORKFLOW = paths.SWEEP_WORKFLOW
RESULTS_SITE = "https://inferencex.semianalysis.com"
STAGING_SITE = "https://inferencemax-app-git-staging-semianalysisai.vercel.app"
RESULTS_REPO = "SemiAnalysisAI/InferenceX-app"


@dataclass
class Settings:
    repo_root: Path
    bot: str = cm.DEFAULT_BOT
    workflow: str = SWEEP_WORKFLOW
    main_ref: str = "refs/heads/main"
    results_site: str = RESULTS_SITE
    staging_site: str = STAGING_SITE
    results_repo: str = RESULTS_REPO
    card_settle: float = card_writer.SETTLE_S  # see github/card.py; tests against the fake use 0
    _policy: Policy | None = None

    @classmethod
    def from_env(cls, repo_root: Path, env: dict | None = None) -> "Settings":
        env = os.environ if env is None else env
        return cls(repo_root=repo_root, bot=env.get("CI_TOOLS_BOT_LOGIN") or cm.DEFAULT_BOT,
                   workflow=env.get("CI_TOOLS_SWEEP_WORKFLOW") or SWEEP_WORKFLOW,
                   main_ref=f"refs/heads/{env.get('CI_TOOLS_MAIN_BRANCH') or 'main'}",
                   results_site=env.get("CI_TOOLS_RESULTS_SITE") or RESULTS_SITE,
                   staging_site=env.get("CI_TOOLS_STAGING_SITE") or STAGING_SITE,
                   results_repo=env.get("CI_TOOLS_RESULTS_REPO") or RESULTS_REPO,
                   card_settle=float(env.get("CI_TOOLS_CARD_SETTLE") or card_writer.SETTLE_S))

    @property
    def policy(self) -> Policy:
        if self._policy is None:
            self._policy = load_policy(self.repo_root)
        return self._policy


@dataclass
class Result:
    outputs: dict[str, str] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    exit_code: int = 0


class Lazy:
    """Creates the GitHub client on first use; `calls` is 0 when it never was."""

    def __init__(self, factory: Callable[[], GitHub]):
        self._factory = factory
        self.client: GitHub | None = None

    def __call__(self) -> GitHub:
        if self.client is None:
            self.client = self._factory()
        return self.client

    @property
    def calls(self) -> int:
        return self.client.log.count if self.client else 0


# ---- shared pieces ----------------------------------------------------------------------------

def load_timeline(gh: GitHub, pr: int) -> Timeline:
    return timeline_from_api(gh.timeline(pr))


def permission_lookup(gh: GitHub, tl: Timeline, settings: Settings) -> Callable[[str], str]:
    """Permissions from the API, at the time of the decision (the client asks once per login per run).

    The status card's `writers` record says what a command's author had when the command was checked;
    it is not used to decide: a writer demoted since then must not still authorise reuse."""
    return gh.permission


def upsert(gh: GitHub, pr: int, tl: Timeline, kind: str, key, body: str, settings: Settings) -> tuple[str, int]:
    """Create or edit the bot's sticky comment `kind`/`key`; returns (action, comment id)."""
    existing = cm.find_sticky(tl.comments, kind, key, settings.bot)
    write = cm.plan_write(existing, body)
    if write.action == "create":
        return "create", int(gh.create_comment(pr, body)["id"])
    if write.action == "update":
        gh.update_comment(write.comment_id, body)
    return write.action, int(write.comment_id)


def is_fork(data: dict) -> bool:
    """From a PR object: the head repository differs from the base. A deleted fork has no head
    repository: the safe side is "fork"."""
    head_repo = (data.get("head") or {}).get("repo") or {}
    base_repo = (data.get("base") or {}).get("repo") or {}
    return not head_repo.get("full_name") or head_repo.get("full_name") != base_repo.get("full_name")


def pr_state(data: dict, main_ref: str = "refs/heads/main") -> reuse.PrState:
    branch = main_ref.removeprefix("refs/heads/")
    return reuse.PrState(number=int(data["number"]), head_sha=data["head"]["sha"], head_ref=data["head"]["ref"],
                         labels=tuple(sorted(l["name"] for l in data.get("labels") or [])),
                         merged_at=data.get("merged_at"), fork=is_fork(data), trusted_branch=branch,
                         repository=str(((data.get("base") or {}).get("repo") or {}).get("full_name") or ""))


def reuse_text(auth: reuse.Authorisation) -> str:
    if not auth.authorised:
        return "not authorised. A maintainer with write access comments `/use <run_id>` (or `/use`) to reuse a run."
    link = f" ([comment]({auth.comment.html_url}))" if auth.comment and auth.comment.html_url else ""
    if auth.pinned_run is not None:
        return f"pinned to run {auth.pinned_run} by @{auth.comment.author}{link}."
    return f"the newest eligible full-sweep run, authorised by @{auth.comment.author}{link}."


def run_line(run: dict, settings: Settings, families: list[dict] | None = None) -> str:
    """The sweep section: the run, its state and commit, progress per family, the results site."""
    site = settings.results_site.rstrip("/")
    head = card.sweep_markdown(run, families or [])
    return (f"{head}\n\n- Performance: {site}/inference?unofficialRun={run['id']}\n"
            f"- Accuracy: {site}/evaluation?unofficialRun={run['id']}")


def results_section(gh: GitHub, run: dict, settings: Settings) -> str | None:
    """The run's collected results against main's (None when the run collected nothing)."""
    from ci_tools.github.baselines import collection_from_zip, main_results
    from ci_tools.results import compare, compare_render
    from ci_tools.runner import layout

    art = next((a for a in gh.artifacts(int(run["id"])) if a.get("name") == layout.COLLECTION_ARTIFACT
                and not a.get("expired")), None)
    if art is None:
        return None
    try:
        head = collection_from_zip(gh.artifact_zip(int(art["id"])), f"run {run['id']} {layout.COLLECTION_ARTIFACT}")
    except GitHubError as exc:
        # the card is information: say what is missing instead of failing the card job
        return f"The run's `{layout.COLLECTION_ARTIFACT}` artifact could not be downloaded ({exc})."
    except ValueError as exc:
        return f"The run's results could not be read: {exc}."
    policy = compare.Policy.from_mapping(settings.policy.compare)
    valid = [r for r in head if r.get("valid")]
    links = f"\n\nPareto plot and per-point results: [run {run['id']} artifacts]({run.get('url', '')}#artifacts)."
    if not valid:
        return f"No valid result in this run ({len(head)} collected, all invalid: see the run's jobs).{links}"
    wanted = {compare.identity(r["point"]) for r in valid}
    main = main_results(gh, wanted=wanted, history=policy.history, branch=settings.main_ref.removeprefix("refs/heads/"),
                        workflow=settings.workflow)
    comparisons = compare.compare_points(valid, main.results, policy)
    shift = compare.frontier_shift(compare.points_of(valid), compare.points_of(compare.latest_per_point(main.results)))
    source = (f"main: {len(main.runs)} sweep run(s) ({', '.join(map(str, main.runs))})" if main.runs
              else "main: no collected sweep run yet")
    invalid = len(head) - len(valid)
    told = f" {invalid} invalid result(s) are not compared." if invalid else ""
    return compare_render.markdown(comparisons, shift).rstrip("\n") + f"\n\n{source}.{told}{links}"


def card_sections(state: dict, keys: set[str], settings: Settings) -> dict[str, str]:
    """The card sections that the state `keys` a writer changed render to."""
    out: dict[str, str] = {}
    if "run" in keys and state.get("run"):
        out["sweep"] = run_line(state["run"], settings)
    if "plan" in keys and state.get("plan"):
        out["plan"] = state["plan"]
    if "reuse" in keys:
        out["reuse"] = state.get("reuse") or "not authorised."
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


def update_card(gh: GitHub, pr: int, tl: Timeline, settings: Settings, change: Callable[[dict], None], *,
                sections: dict[str, str] | None = None, ranks: dict[str, int] | None = None) -> str:
    """Apply `change` to the card's state and rewrite only the sections it touched (plus `sections`),
    re-reading the card so that concurrent writers of other sections lose nothing (github/card.py)."""
    probe = _Recording(cm.state_of(cm.find_sticky(tl.comments, card.KIND, bot_login=settings.bot)))
    change(probe)
    todo = card_sections(probe, probe.written, settings) | (sections or {})
    return card_writer.write_sections(gh, pr, todo, bot=settings.bot, ranks=ranks, state_change=change,
                                      settle=settings.card_settle).action


def _who_may_use() -> str:
    return "`/use` needs a comment by someone with write, maintain or admin permission on this repository."


# ---- comment handle ---------------------------------------------------------------------------

def handle_comment(event: Event, settings: Settings, gh: Lazy) -> Result:
    res = Result(outputs={"handled": "false", "commands": "", "reuse-authorised": "", "stage-run-id": "",
                          "stage-comment-id": "", "stage-payload": "", "approve-sha": "", "approve-pr": ""})
    if event.name == "pull_request_review":
        # Reuse is decided from conversation comments only; acting on a review body here would
        # acknowledge a command that the merge-time resolution never sees.
        res.messages.append("commands are read from conversation comments, not reviews: nothing to do")
        return res
    if event.name != "issue_comment":
        raise UsageError(f"`comment handle` takes issue_comment events, not {event.name}")
    if event.pr_number is None or event.comment is None:
        res.messages.append("not a pull-request comment: nothing to do")
        return res
    c, pr = event.comment, event.pr_number
    if c.author == settings.bot or c.author_type == "Bot":
        res.messages.append("comment by a bot: commands are only taken from people")
        return res
    commands = parse(c.body)
    if event.action == "deleted":
        if any(isinstance(x, Use) for x in commands):
            client = gh()
            tl = load_timeline(client, pr)
            auth = reuse.authorise(tl.comments, permission_lookup(client, tl, settings), pr_number=pr)
            update_card(client, pr, tl, settings, lambda s: s.update(reuse=reuse_text(auth)))
            res.messages.append(f"a /use comment was deleted; reuse is now: {reuse_text(auth)}")
        return res
    if not commands:
        res.messages.append("no commands in the comment")
        return res
    res.outputs.update(handled="true", commands=" ".join(sorted({type(x).__name__ for x in commands})))
    client = gh()
    tl = load_timeline(client, pr)
    parts: list[str] = []
    uses = [x for x in commands if isinstance(x, Use)]
    for x in commands:
        if isinstance(x, UsageProblem):
            parts.append(cm.template_text("usage", author=c.author, given=x.given, line=x.line,
                                          comment_url=c.html_url, forms=cm.bullet_list(f"`{f}`" for f in x.forms)))
    if uses:
        parts.append(_use(uses[-1], c, pr, tl, client, settings, res))
    for x in commands:
        if isinstance(x, StageResults) and event.action != "created":
            # Staging is a one-off request: editing the comment (say, a typo elsewhere) must not stage again.
            res.messages.append(f"`{x.text}` in an edited comment: not staged again")
        elif isinstance(x, StageResults):
            parts.append(_stage(x, c, pr, tl, client, settings, res))
        elif isinstance(x, SweepPlan):
            parts.append(cm.template_text("sweep-plan", author=c.author, plan=sweep_plan_text(tl, settings, pr)))
    approvals = [x for x in commands if isinstance(x, SweepApprove)]
    if approvals and event.action != "created":
        # An approval starts a sweep once; editing the comment must not start another.
        res.messages.append(f"`{approvals[-1].text}` in an edited comment: no new sweep")
    elif approvals:
        parts.append(_approve(approvals[-1], c, pr, client, settings, res))
    parts = [p for p in parts if p]
    if parts:
        body = cm.marker("reply", c.id) + "\n" + "\n\n".join(p.rstrip() for p in parts) + "\n"
        action, _ = upsert(client, pr, tl, "reply", c.id, body, settings)
        res.messages.append(f"reply: {action}")
    return res


def _use(use: Use, c: Comment, pr: int, tl: Timeline, gh: GitHub, settings: Settings, res: Result) -> str:
    why_not = reuse.may_use(c, gh.permission)
    if why_not:
        res.outputs["reuse-authorised"] = "false"
        return cm.template_text("denied", author=c.author, command=use.text, why=why_not, who=_who_may_use())
    level = gh.permission(c.author)
    prs = pr_state(gh.pull(pr), settings.main_ref)
    if prs.merged_at:
        return cm.template_text("denied", author=c.author, command=use.text, why=f"PR #{pr} has already merged",
                                who="Commands made after the merge do not change which run was reused.")
    lookup = permission_lookup(gh, tl, settings)
    auth = reuse.authorise(tl.comments, lookup, pr_number=pr)
    res.outputs["reuse-authorised"] = str(auth.authorised).lower()

    def change(state: dict) -> None:
        state.setdefault("writers", {})[c.author.lower()] = level
        state["reuse"] = reuse_text(auth)

    update_card(gh, pr, tl, settings, change)
    sel = reuse.select_run(reuse.reuse_rules(use.run_id is not None), pinned=use.run_id, pr=prs, timeline=tl,
                           policy=settings.policy, workflow=settings.workflow, source=gh)
    what = f"run {use.run_id} is pinned for reuse at merge" if use.run_id is not None else \
        "the newest eligible full-sweep run will be reused at merge"
    if sel.run is not None:
        now = (f"[Run {sel.run.id}]({sel.run.html_url}) (commit `{sel.run.head_sha[:12]}`) is usable as things stand."
               if use.run_id is not None else
               f"As of now that is [run {sel.run.id}]({sel.run.html_url}) (commit `{sel.run.head_sha[:12]}`).")
        effect = now + " New pushes will not start sweeps unless they change benchmark inputs."
    else:
        effect = f"**As things stand reuse would be refused at merge:** {sel.error}"
    label = reuse.label_problems(prs.labels, settings.policy)
    if label:
        effect += f" Also, {label}."
    return cm.template_text("use-accepted", author=c.author, what=what, effect=effect)


def pr_facts(data: dict) -> approval.PrFacts:
    return approval.PrFacts(number=int(data["number"]), head_sha=data["head"]["sha"], state=data.get("state", ""),
                            draft=bool(data.get("draft")), fork=is_fork(data),
                            labels=tuple(sorted(l["name"] for l in data.get("labels") or [])))


def _approve(cmd: SweepApprove, c: Comment, pr: int, gh: GitHub, settings: Settings, res: Result) -> str:
    why_not = reuse.may_use(c, gh.permission)
    if why_not:
        return cm.template_text("denied", author=c.author, command=cmd.text, why=why_not,
                                who="Approving a fork's commit for the GPU runners needs a comment by someone with "
                                    "write, maintain or admin permission on this repository.")
    facts = pr_facts(gh.pull(pr))
    running: list[dict] = []
    if facts.fork and facts.state == "open" and approval.sha_matches(cmd.sha, facts.head_sha):
        running = gh.recent_runs(approval.TRUSTED_WORKFLOW, branch=settings.main_ref.removeprefix("refs/heads/"),
                                 event="workflow_dispatch")
        running = [r for r in running if r.get("status") != "completed"]
    decision = approval.decide(cmd.sha, facts, settings.policy, running)
    res.outputs.update(decision.outputs(pr))
    res.messages.append(decision.reason)
    if decision.running_url:
        return cm.template_text("approve-duplicate", author=c.author, command=cmd.text, why=decision.reason,
                                run_url=decision.running_url)
    if not decision.approved:
        return cm.template_text("approve-refused", author=c.author, command=cmd.text, why=decision.reason)
    return cm.template_text("approve-accepted", author=c.author, sha=decision.sha, pr=pr,
                            workflow=approval.TRUSTED_WORKFLOW)


def check_approval(settings: Settings, gh: Lazy, *, pr: int, sha: str) -> Result:
    """The trusted sweep's first step: the PR must still point at the approved commit (else fail closed),
    and its sweep labels are read now, for `ci-tools plan`."""
    data = gh().pull(pr)
    facts = pr_facts(data)
    problem = approval.check_head(sha, facts.head_sha, pr=pr, state=facts.state)
    labels = approval.plan_labels(facts.labels, settings.policy)
    res = Result(outputs={"proceed": str(problem is None).lower(), "base-sha": data["base"]["sha"],
                          "labels": "\n".join(labels)})
    res.messages.append(problem or f"PR #{pr} is at the approved commit {sha[:12]}; labels: "
                                   f"{', '.join(labels) or 'none'}")
    res.exit_code = 1 if problem else 0
    return res


def _stage(cmd: StageResults, c: Comment, pr: int, tl: Timeline, gh: GitHub, settings: Settings, res: Result) -> str:
    level = gh.permission(c.author)
    if not staging.may_stage(level):
        return cm.template_text("denied", author=c.author, command=cmd.text,
                                why=f"@{c.author} has {level} permission", who=staging.who_may_stage())
    prs = pr_state(gh.pull(pr), settings.main_ref)
    problem = staging.label_problem(prs.labels, settings.policy)
    if problem is None:
        sel = reuse.select_run(reuse.staging_rules(cmd.run_id is not None), pinned=cmd.run_id, pr=prs, timeline=tl,
                               policy=settings.policy, workflow=settings.workflow, source=gh)
        problem = sel.error
    if problem:
        return cm.template_text("stage-refused", author=c.author, command=cmd.text, why=problem)
    run = sel.run
    body = cm.render("stage-ack", kind="stage", key=c.id, author=c.author, run_id=run.id, run_url=run.html_url,
                     state={"run": run.id, "phase": "requested", "url": run.html_url})
    _, comment_id = upsert(gh, pr, tl, "stage", c.id, body, settings)
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
    run = client.run(int(payload["run-id"])) if c else {}
    problem = staging.dispatch_problem(payload, repo=client.repo, pr_number=event.pr_number, commenter=commenter,
                                       ack=ack, bot=settings.bot, run=run)
    if problem:
        res.messages.append(f"not dispatched: {problem}")
        res.exit_code = 1
        return res
    if dispatcher is None:
        raise InputError("`/stage-results` needs a token that may dispatch to the results app: set "
                         "RESULTS_DISPATCH_TOKEN")
    dispatcher().dispatch(settings.results_repo, staging.DISPATCH_EVENT, payload)
    res.outputs["dispatched"] = "true"
    res.messages.append(f"dispatched {staging.DISPATCH_EVENT} to {settings.results_repo} for run {payload['run-id']}")
    return res


def sweep_plan_text(tl: Timeline, settings: Settings, pr: int) -> str:
    """The plan summary the sweep workflow last put on the status card (`bot status-card --plan-file`).

    Computing a plan here would need the PR's files checked out; the sweep workflow already runs
    `ci-tools plan` on them, so the reply shows its latest result rather than a second opinion."""
    state = cm.state_of(cm.find_sticky(tl.comments, "status-card", bot_login=settings.bot))
    run = state.get("run") or {}
    if state.get("plan"):
        source = f" (from [run {run['id']}]({run.get('url', '')}))" if run.get("id") else ""
        return f"the latest sweep plan for PR #{pr}{source}:\n\n{state['plan']}"
    return (f"no sweep plan has been computed for PR #{pr} yet. The sweep workflow runs `ci-tools plan` "
            "when the PR carries a sweep label; its summary then appears here and on the status card.")


# ---- reuse resolve ----------------------------------------------------------------------------

def resolve_reuse(event: Event, settings: Settings, gh: Lazy) -> Result:
    if event.name == "pull_request":
        pr = event.pull_request

        def authorisation() -> reuse.Authorisation:
            client = gh()
            tl = load_timeline(client, pr.number)
            return reuse.authorise(tl.comments, permission_lookup(client, tl, settings), pr_number=pr.number)

        def pushed_inputs() -> list[str]:
            if not event.before or not event.after or set(event.before) == {"0"}:
                return []
            diff = gh().compare(event.before, event.after)
            return reuse.changed_inputs(diff, gh(), event.before, event.after)

        decision = reuse.decide_pr_event(event.action, label_problem=reuse.label_problems(pr.labels, settings.policy),
                                         authorisation=authorisation, pushed_inputs=pushed_inputs)
        decision = reuse.ReuseDecision(**{**decision.__dict__, "pr_number": pr.number})
    elif event.name == "push" and event.ref == settings.main_ref:
        decision = _resolve_push(event, settings, gh)
    else:
        decision = reuse.ReuseDecision(reason=f"{event.name} {event.ref or event.action} is not a push to "
                                              f"{settings.main_ref.rsplit('/', 1)[-1]}")
    res = Result(outputs=decision.outputs(), messages=[decision.error or decision.reason, *decision.ignored])
    res.exit_code = 1 if decision.error else 0
    return res


def _resolve_push(event: Event, settings: Settings, gh: Lazy) -> reuse.ReuseDecision:
    client = gh()
    pulls = client.merged_pulls_for_commit(event.after)
    if not pulls:
        return reuse.ReuseDecision(reason=f"commit {event.after[:12]} has no associated merged pull request")
    if len(pulls) > 1:
        numbers = sorted(int(p["number"]) for p in pulls)
        authorised = []
        for p in pulls:
            tl = load_timeline(client, int(p["number"]))
            if reuse.authorise(tl.comments, permission_lookup(client, tl, settings), pr_number=int(p["number"]),
                               merged_at=p.get("merged_at")).authorised:
                authorised.append(int(p["number"]))
        if authorised:
            return reuse.ReuseDecision(error=f"commit {event.after[:12]} maps to several PRs "
                                             f"({', '.join(map(str, numbers))}) and reuse is authorised on "
                                             f"#{', #'.join(map(str, authorised))}; refusing to guess which "
                                             "PR's run to reuse.")
        return reuse.ReuseDecision(reason="several associated pull requests, none authorised reuse")
    prs = pr_state(pulls[0], settings.main_ref)
    tl = load_timeline(client, prs.number)
    auth = reuse.authorise(tl.comments, permission_lookup(client, tl, settings), pr_number=prs.number,
                           merged_at=prs.merged_at)
    return reuse.decide_merge(prs, auth, timeline=tl, policy=settings.policy, workflow=settings.workflow,
                              source=client)


# ---- stage callback ---------------------------------------------------------------------------

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
        if existing is None or existing.author != settings.bot or not existing.body.startswith("<!-- ci-tools:stage "):
            raise InputError(f"comment {cb.comment_id} is not the bot's staging comment on PR #{cb.pr_number}; "
                             "refusing to edit it")
    current = cm.state_of(existing)
    if existing is not None and not staging.moves_forward(current, cb):
        return Result(outputs={"updated": "false"},
                      messages=[f"ignored: {cb.phase} arrived after {current.get('phase')} for run {cb.run_id}"])
    app_url = f"https://github.com/{settings.results_repo}/actions/runs/{cb.app_run_id}"
    run_url = current.get("url") or f"https://github.com/{client.repo}/actions/runs/{cb.run_id}"
    state = {"run": cb.run_id, "phase": cb.phase, "app-run": cb.app_run_id, "url": run_url}
    key = existing.body.split("\n", 1)[0].split()[2] if existing else f"run-{cb.run_id}"
    values = dict(author=cb.requested_by, run_id=cb.run_id, app_run_url=app_url, run_url=run_url)
    if cb.phase == "started":
        body = cm.render("stage-started", kind="stage", key=key, state=state, **values)
    elif cb.succeeded:
        body = cm.render("stage-succeeded", kind="stage", key=key, state=state,
                         view_url=staging.view_url(settings.staging_site, cb.run_date, cb.run_id), **values)
    else:
        body = cm.render("stage-failed", kind="stage", key=key, state=state, **values)
    action, cid = upsert(client, cb.pr_number, tl, "stage", key, body, settings)
    return Result(outputs={"updated": str(action != "none").lower(), "comment-id": str(cid)},
                  messages=[f"staging comment {cid}: {action}"])


# ---- sign-off ---------------------------------------------------------------------------------

NO_TEAM_TOKEN = ("cannot read team membership with this token: the workflow's GITHUB_TOKEN cannot read "
                 "organization teams and no TEAM_MEMBERSHIP_TOKEN is set (a token with the organization "
                 "permission Members: read; see docs/workflows.md, \"Deployment prerequisites\")")


def verify_signoff(event: Event, settings: Settings, gh: Lazy, teams: Lazy | None = None) -> Result:
    """`teams`: a client whose token can read team membership (TEAM_MEMBERSHIP_TOKEN), or None when
    none is configured; a CODEOWNERS team entry then fails closed with that reason."""
    res = Result(outputs={"proceed": "false", "state": "", "signer": "", "head-sha": ""})
    if event.name == "pull_request":
        if event.action not in ("synchronize", "opened", "reopened"):
            res.messages.append(f"pull_request {event.action}: the sign-off status is unaffected")
            return res
        return _signoff_after_push(event, settings, gh, res)
    if event.name not in ("issue_comment", "pull_request_review"):
        raise UsageError(f"`signoff verify` takes issue_comment, pull_request_review or pull_request events, "
                         f"not {event.name}")
    c = event.comment
    if event.action not in ("created", "edited", "submitted") or event.pr_number is None or c is None \
            or not signoff.has_phrase(c.body):
        res.messages.append("no sign-off in this event: nothing to do")
        return res
    if c.author == settings.bot or c.author_type == "Bot":
        res.messages.append("a bot cannot sign off")
        return res
    if event.action == "edited" and event.sender != c.author:
        # GitHub lets maintainers edit anyone's comment: an edit by someone else is not the author's sign-off
        res.messages.append(f"the comment by @{c.author} was edited by @{event.sender or '(unknown)'}: a sign-off "
                            "counts only as its author wrote it, so this edit changes nothing")
        return res
    client = gh()
    pr = event.pr_number
    data = client.pull(pr)
    prs = pr_state(data, settings.main_ref)
    if data.get("state") != "open":
        res.messages.append(f"PR #{pr} is {data.get('state')}: sign-offs are verified on open PRs only")
        return res
    checklist = signoff.parse_checklist(_read(settings.repo_root, paths.REVIEW_CHECKLIST), paths.REVIEW_CHECKLIST)
    codeowners = _read(settings.repo_root, paths.CODEOWNERS)
    files = client.pull_files(pr)
    tl = load_timeline(client, pr)
    sel = reuse.select_run(reuse.reuse_rules(False), pinned=None, pr=prs, timeline=tl, policy=settings.policy,
                           workflow=settings.workflow, source=client)

    def is_member(org: str, team: str, login: str) -> bool:
        if teams is None:
            raise signoff.MembershipUnknown(NO_TEAM_TOKEN)
        try:
            return teams().team_member(org, team, login)
        except TeamUnreadable as exc:
            raise signoff.MembershipUnknown(exc.message) from None
        except GitHubError as exc:
            raise InputError(f"cannot check whether @{login} is in @{org}/{team} ({exc.message}). Give the "
                             "workflow a token that can read team membership (organization members: read).")

    verdict = signoff.verify(signer=c.author, body=c.body, files=files, codeowners_text=codeowners,
                             checklist=checklist, is_member=is_member,
                             sweep_problem=None if sel.run else sel.error)
    tree = client.commit(prs.head_sha)["commit"]["tree"]["sha"]
    previous = cm.state_of(cm.find_sticky(tl.comments, "signoff-verdict", bot_login=settings.bot))
    res.outputs.update(proceed="true", signer=c.author, **{"head-sha": prs.head_sha})
    rows = "\n".join(f"| {'✅' if x.ok else '❌'} | {x.name} | {x.detail} |" for x in verdict.checks)
    values = dict(signer=c.author, signoff_url=c.html_url, sha=prs.head_sha[:12], version=checklist.version,
                  rows=rows)
    if not verdict.passed and not verdict.owns_any and not verdict.unverified and previous.get("passed") \
            and (previous.get("sha") == prs.head_sha or previous.get("tree") == tree):
        # (the same tree: the verified status was carried over to this commit by a same-tree push)
        # Someone who owns none of the changed files cannot undo an owner's verified sign-off.
        body = cm.render("signoff-verdict", kind="signoff-reply", key=c.id, headline="not counted",
                         footer=f"@{c.author}, you own none of the changed files, so this sign-off is not counted. "
                                f"The verified sign-off by @{previous.get('signer')} stands.", **values)
        upsert(client, pr, tl, "signoff-reply", c.id, body, settings)
        res.outputs["state"] = "success"
        res.messages.append("sign-off by a non-owner ignored; the earlier verified sign-off stands")
        return res
    state = {"sha": prs.head_sha, "tree": tree, "signer": c.author, "passed": verdict.passed,
             "url": c.html_url, "version": checklist.version}
    if verdict.passed:
        footer = ("The `" + signoff.STATUS_CONTEXT + "` status is set on this commit. It carries over to later "
                  "commits only while their tree is identical.")
    elif verdict.unverified:
        footer = (f"@{c.author}, this sign-off could not be checked, through no fault of yours: ci-tools "
                  f"{verdict.unverified}. A repository admin can fix that; then edit the sign-off or post it again.")
    else:
        footer = f"@{c.author}, please fix the items marked ❌ and post the sign-off again (edit it or add a new comment)."
    headline = "verified ✅" if verdict.passed else "not verified ⚠️" if verdict.unverified else "rejected ❌"
    body = cm.render("signoff-verdict", kind="signoff-verdict", state=state, headline=headline, footer=footer,
                     **values)
    _, cid = upsert(client, pr, tl, "signoff-verdict", None, body, settings)
    state_name = verdict.state
    client.create_status(prs.head_sha, state=state_name, context=signoff.STATUS_CONTEXT,
                         description=verdict.description,
                         target_url=f"https://github.com/{client.repo}/pull/{pr}#issuecomment-{cid}")
    res.outputs["state"] = state_name
    res.messages.append(f"{signoff.STATUS_CONTEXT}: {state_name}: {verdict.description}")
    return res


# ---- sign-offs posted as reviews: two phases ----------------------------------------------------
# A pull_request_review run of a fork PR gets a read-only token and no secrets, so it cannot post a
# verdict. `signoff record` (in that run) writes which review to check; `signoff verify --review-file`
# (a workflow_run run of the default branch, with a write token) reads the review back from the API,
# never from the record, and verifies it like a comment.

def record_review(event: Event, out_dir: Path) -> Result:
    if event.name != "pull_request_review":
        raise UsageError(f"`signoff record` takes pull_request_review events, not {event.name}")
    if event.pr_number is None or event.comment is None:
        raise InputError("the pull_request_review payload names no pull request or review")
    out_dir.mkdir(parents=True, exist_ok=True)
    record = {"pr": event.pr_number, "review": event.comment.id}
    (out_dir / paths.REVIEW_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")
    return Result(outputs={"pr": str(record["pr"]), "review": str(record["review"])},
                  messages=[f"recorded review {record['review']} of PR #{record['pr']} for {paths.REVIEW_VERIFY_WORKFLOW}"])


def read_review_record(path: Path) -> tuple[int, int]:
    """(PR, review id) from a record; it comes from an untrusted run, so only two positive integers
    are taken from it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a review record ({exc}); is the {paths.REVIEW_ARTIFACT} artifact "
                         "downloaded there?") from None
    if not isinstance(data, dict) or sorted(data) != ["pr", "review"] or not all(
            isinstance(data[k], int) and not isinstance(data[k], bool) and data[k] > 0 for k in data):
        raise InputError(f"{path}: not a review record: expected {{\"pr\": N, \"review\": N}} and nothing else")
    return data["pr"], data["review"]


def verify_review(event: Event, settings: Settings, gh: Lazy, teams: Lazy | None, record: Path) -> Result:
    """The trusted phase: the workflow_run of a finished record run; the review is read from the API."""
    if event.name != "workflow_run" or event.workflow_run is None:
        raise UsageError(f"`signoff verify --review-file` takes the workflow_run event of "
                         f"{paths.REVIEW_RECORD_WORKFLOW}, not {event.name}")
    wr = event.workflow_run
    expected = f"{paths.WORKFLOWS_DIR}/{paths.REVIEW_RECORD_WORKFLOW}"
    if wr.path.split("@")[0] != expected or wr.event != "pull_request_review" or wr.conclusion != "success":
        return Result(outputs={"proceed": "false", "state": "", "signer": "", "head-sha": ""},
                      messages=[f"run {wr.id} is not a successful {expected} run of a review: nothing to verify"])
    pr, review_id = read_review_record(record)
    data = gh().review(pr, review_id)
    user = data.get("user") or {}
    comment = Comment(id=int(data["id"]), body=data.get("body") or "", author=str(user.get("login") or ""),
                      author_type=str(user.get("type") or "User"), association=str(data.get("author_association") or "NONE"),
                      created_at=str(data.get("submitted_at") or ""), html_url=str(data.get("html_url") or ""),
                      kind="review")
    review_event = replace(event, name="pull_request_review", action="submitted", workflow_run=None,
                           pull_request=PullRequest(number=pr), comment=comment)
    return verify_signoff(review_event, settings, gh, teams)


def _signoff_after_push(event: Event, settings: Settings, gh: Lazy, res: Result) -> Result:
    client = gh()
    pr = event.pull_request
    tl = load_timeline(client, pr.number)
    previous = cm.state_of(cm.find_sticky(tl.comments, "signoff-verdict", bot_login=settings.bot))
    tree = client.commit(pr.head_sha)["commit"]["tree"]["sha"] if previous.get("passed") else ""
    update = signoff.after_push(previous, tree)
    client.create_status(pr.head_sha, state=update.state, context=signoff.STATUS_CONTEXT,
                         description=update.description)
    res.outputs.update(proceed="true", state=update.state, **{"head-sha": pr.head_sha})
    res.messages.append(f"{signoff.STATUS_CONTEXT}: {update.state}: {update.description}")
    return res


def _read(root: Path, rel: str) -> str:
    try:
        return (root / rel).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{rel}: cannot read ({exc.strerror}); run from a checkout of the default branch "
                         "or pass --repo-root") from None


# ---- bots -------------------------------------------------------------------------------------

def _label_what(r) -> tuple[str, str]:
    """What a primary label does, in English and Chinese: scope, canary and fail-fast, so the three
    full-sweep variants read differently (the seed PR's welcome tells them apart too)."""
    en = ("full sweep" if r.scope == "full" else "each config at its lowest concurrency")
    zh = ("完整扫描" if r.scope == "full" else "每个配置只跑最低并发")
    en += ", canary first" if r.canary else ", no canary"
    zh += "，先跑 canary" if r.canary else "，不跑 canary"
    if r.fail_fast:
        en += ", stops a matrix at its first failure"
        zh += "，矩阵出现首个失败即停止"
    if r.scope == "full" and not r.reusable:
        en += ", not reusable at merge"
        zh += "，合并时不可复用"
    return en, zh


def welcome_values(policy: Policy, repo: str) -> dict:
    primaries = sorted(policy.primary)
    recommended = next((p for p in primaries if policy.primary[p].recommended), primaries[0])
    what, what_zh = _label_what(policy.primary[recommended])
    others = [p for p in primaries if p != recommended]
    blockers = [m for m in sorted(policy.modifiers) if policy.modifiers[m].blocks_reuse]
    code = lambda names, sep: sep.join(f"`{n}`" for n in names)  # noqa: E731
    return dict(checklist_url=f"https://github.com/{repo}/blob/main/{paths.REVIEW_CHECKLIST}", phrase=signoff.PHRASE,
                signoff_context=signoff.STATUS_CONTEXT, changelog=paths.CHANGELOG, recommended=recommended,
                recommended_what=what, recommended_what_zh=what_zh,
                other_primaries="; ".join(f"`{p}` ({_label_what(policy.primary[p])[0]})" for p in others),
                other_primaries_zh="；".join(f"`{p}`（{_label_what(policy.primary[p])[1]}）" for p in others),
                modifiers=code(sorted(policy.modifiers), ", "), modifiers_zh=code(sorted(policy.modifiers), "、"),
                blockers=code(blockers, ", ") or "none", blockers_zh=code(blockers, "、") or "无")


def welcome(event: Event, settings: Settings, gh: Lazy) -> Result:
    if event.name != "pull_request" or event.action not in ("opened", "reopened", "ready_for_review"):
        return Result(outputs={"comment": "none"}, messages=[f"{event.name} {event.action}: no welcome needed"])
    client = gh()
    pr = event.pull_request.number
    tl = load_timeline(client, pr)
    body = cm.render("welcome", kind="welcome", **welcome_values(settings.policy, client.repo))
    action, cid = upsert(client, pr, tl, "welcome", None, body, settings)
    return Result(outputs={"comment": action, "comment-id": str(cid)}, messages=[f"welcome comment: {action}"])


def status_card(event: Event | None, settings: Settings, gh: Lazy, *, pr: int | None, run: dict | None,
                plan: str | None, evals: str | None = None) -> Result:
    observed = False  # a workflow_run event of a sweep that planned: its jobs and artifacts can be read
    idle = None
    if event is not None and event.name == "workflow_run":
        wr = event.workflow_run
        if wr.event == "workflow_dispatch" and wr.path.split("@")[0] == reuse.TRUSTED_PATH:
            # A fork PR's trusted sweep: the run name says which PR and commit (one call to read it).
            wr = reuse.run_from_api(gh().run(wr.id))
            if wr.trusted_pr is None:
                return Result(outputs={"comment": "none"},
                              messages=[f"run {wr.id} does not name a PR in its run name: no status card"])
            wr = replace(wr, pull_requests=(wr.trusted_pr,))
        if wr.event not in ("pull_request", "workflow_dispatch") or not wr.pull_requests:
            return Result(outputs={"comment": "none"}, messages=["not a pull-request sweep run: no status card"])
        pr = pr or wr.pull_requests[0]
        if run is None and reuse.CHANGELOG_METADATA in reuse.unexpired_names(gh().artifacts(wr.id)):
            run = {"id": wr.id, "url": wr.html_url, "conclusion": wr.conclusion or wr.status, "head_sha": wr.head_sha}
            observed = True
        elif run is None:
            # The gate or the reuse step stopped it before planning (a label change that restarts
            # nothing, a push after /use): it did no GPU work, so the card keeps the last sweep.
            idle = f"run {wr.id} planned no sweep (no {reuse.CHANGELOG_METADATA} artifact): the latest run is kept"
    if pr is None:
        raise UsageError("give --pr (or a workflow_run event of a pull-request run)")
    client = gh()
    tl = load_timeline(client, pr)
    auth = reuse.authorise(tl.comments, permission_lookup(client, tl, settings), pr_number=pr)
    sections: dict[str, str] = {}
    ranks: dict[str, int] = {}
    messages: list[str] = []
    if run and run.get("id"):
        from ci_tools.policy.buckets import BUCKETS

        families = card.progress(client.run_jobs(int(run["id"])), BUCKETS) if observed else []
        sections["sweep"] = run_line(run, settings, families)
        ranks["sweep"] = int(run["id"])
        if observed and event.workflow_run.status == "completed":
            results = results_section(client, run, settings)
            if results is not None:
                sections["results"] = results
                ranks["results"] = int(run["id"])
                messages.append(f"results of run {run['id']} compared with main")
    if evals is not None and run and run.get("id"):  # the run's eval table (ci_tools.evals.report), or why none
        sections["evals"] = evals.strip()
        ranks["evals"] = int(run["id"])

    def change(state: dict) -> None:
        if run:
            state["run"] = run
        if plan:
            state["plan"] = plan.strip()
        state["reuse"] = reuse_text(auth)

    action = update_card(client, pr, tl, settings, change, sections=sections, ranks=ranks)
    return Result(outputs={"comment": action},
                  messages=[f"status card: {action}", *messages] + ([idle] if idle else []))


def pr_body(event: Event) -> Result:
    if event.pull_request is None:
        raise UsageError(f"`bot pr-body` takes pull_request events, not {event.name}")
    check = check_body(event.pull_request.body)
    res = Result(outputs={"ok": str(check.ok).lower(), "missing": "\n".join(check.missing)},
                 messages=list(check.missing) or ["the PR description is complete"])
    res.exit_code = 0 if check.ok else 1
    return res


# ---- results dispatch (ingest on main) ---------------------------------------------------------

def results_dispatch(event: Event, settings: Settings, gh: Lazy, dispatcher: Lazy | None = None, *,
                     source_run_id: int | None, collect_result: str, run_id: int, run_attempt: int) -> Result:
    """Hand a finished sweep on main to the results app (`ingest-results`), or say why not."""
    decision = staging.ingest_decision(
        event_name=event.name, ref=event.ref, main_ref=settings.main_ref, collect_result=collect_result,
        source_run_id=source_run_id,
        metadata_present=lambda: reuse.CHANGELOG_METADATA in reuse.unexpired_names(gh().artifacts(run_id)))
    res = Result(outputs={"dispatched": "false", "ingest-run-id": ""}, messages=[decision.reason])
    if not decision.dispatch:
        return res
    client = gh()
    if decision.source_run_id is not None:
        source = client.run(decision.source_run_id)
        ingest_id, attempt = decision.source_run_id, int(source.get("run_attempt") or 1)
        head_sha = str(source.get("head_sha") or event.after)
    else:
        ingest_id, attempt, head_sha = run_id, run_attempt, event.after
    merged = sorted(int(p["number"]) for p in client.merged_pulls_for_commit(event.after))
    payload = staging.ingest_payload(source_repo=client.repo, run_id=ingest_id, run_attempt=attempt,
                                     head_sha=head_sha, pr_number=merged[0] if len(merged) == 1 else None,
                                     merge_run_id=run_id, merge_run_attempt=run_attempt)
    if dispatcher is None:
        raise InputError("ingesting needs a token that may dispatch to the results app: set RESULTS_DISPATCH_TOKEN "
                         "(in the workflow: `env: RESULTS_DISPATCH_TOKEN: ${{ secrets.RESULTS_DISPATCH_TOKEN }}`)")
    dispatcher().dispatch(settings.results_repo, staging.INGEST_EVENT, payload)
    res.outputs.update({"dispatched": "true", "ingest-run-id": str(ingest_id)})
    res.messages.append(f"dispatched {staging.INGEST_EVENT} to {settings.results_repo} for run {ingest_id}"
                        + (f" (PR #{payload['pr-number']})" if payload["pr-number"] else ""))
    return res
