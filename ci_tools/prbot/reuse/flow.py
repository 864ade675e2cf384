"""`/use` in a comment, and `reuse resolve`: skip a PR's sweep, or reuse which run at merge."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone
from typing import Protocol

from ci_tools.github.events import Comment, Event
from ci_tools.prbot import context, messages
from ci_tools.prbot.card.flow import Client as CardClient
from ci_tools.prbot.card.flow import authorisation, pin_checker, update_card
from ci_tools.prbot.commands import Use
from ci_tools.github.models import CheckRun, PullRequest, Timeline
from ci_tools.prbot.reuse import decide as reuse
from ci_tools.prbot.reuse import runs_flow, verdict
from ci_tools.prbot.reuse.runs_flow import InputsOf
from ci_tools.prbot.shell import Lazy, Result, Settings, load_timeline


class Client(CardClient, runs_flow.Source, Protocol):
    def pull_request(self, number: int) -> PullRequest: ...
    def merged_pull_requests(self, sha: str) -> list[PullRequest]: ...
    def create_check_run(self, sha: str, *, name: str, conclusion: str, title: str, summary: str,
                         details_url: str | None = ...) -> CheckRun: ...


def use_command(use: Use, c: Comment, pr: int, tl: Timeline, gh: Client, settings: Settings, res: Result) -> str:
    """The reply to an authorised author's `/use` (the permission was checked for the whole comment)."""
    level = gh.permission(c.author)
    prs = context.of(gh.pull_request(pr), settings.main_branch)
    if prs.merged_at:
        return messages.denied_text(c.author, use.text, f"PR #{pr} has already merged", messages.AFTER_MERGE)
    why = pin_checker(gh, gh.repo, settings)(use.run_id) if use.run_id is not None else None
    if why:   # pins nothing: the card keeps what reuse was before, and no later decision counts it
        res.outputs["reuse-authorised"] = "false"
        return messages.denied_text(c.author, use.text, why, messages.PIN_A_SWEEP)
    auth = authorisation(gh, tl, pr, settings, answering={c.id: reuse.Handled(level, (use.text,))})
    res.outputs["reuse-authorised"] = str(auth.authorised).lower()

    def change(state: dict) -> None:
        state.setdefault("writers", {})[c.author.lower()] = level
        state["reuse"] = messages.reuse_text(auth)

    update_card(gh, pr, tl, settings, change)
    policy = settings.policy
    sel = runs_flow.select_run(verdict.reuse_rules(use.run_id is not None, policy.reuse.optional_jobs),
                               pinned=use.run_id, pr=prs, timeline=tl, policy=policy, workflow=settings.workflow,
                               source=gh, inputs=pr_inputs(settings, prs.head_sha))
    return messages.use_accepted(c.author, use.run_id, sel.run, sel.error, reuse.label_problems(prs.labels, policy),
                                 notes=sel.notes)


def use_deleted(pr: int, gh: Client, settings: Settings, res: Result) -> None:
    """A deleted `/use` comment: the card says what reuse is now."""
    tl = load_timeline(gh, pr)
    auth = authorisation(gh, tl, pr, settings)
    update_card(gh, pr, tl, settings, lambda s: s.update(reuse=messages.reuse_text(auth)))
    res.messages.append(f"a /use comment was deleted; reuse is now: {messages.reuse_text(auth)}")


def outputs(decision: reuse.ReuseDecision) -> dict[str, str]:
    """The step outputs of `reuse resolve` (every decision writes the same keys)."""
    run = decision.run
    return {
        "reuse-enabled": str(decision.reuse_enabled).lower(),
        "skip-pr-sweep": str(decision.skip_pr_sweep).lower(),
        "reuse-authorised": str(decision.authorised).lower(),
        "reuse-source-run-id": str(run.id) if run else "",
        "reuse-source-run-attempt": str(run.run_attempt) if run else "",
        "reuse-source-run-url": run.html_url if run else "",
        "reuse-source-head-sha": run.head_sha if run else "",
        "reuse-source-pr-number": str(decision.pr_number or ""),
        "reuse-reason": decision.summary(),
        "reuse-error": "true" if decision.failed else "false",
        # refused at merge, and main sweeps instead (policy `on-refused-reuse: sweep`)
        "reuse-refused": "true" if decision.error and decision.fallback else "false",
    }


def resolve_reuse(event: Event, settings: Settings, gh: Lazy) -> Result:
    if event.name == "pull_request":
        pr = event.expect_pull_request()

        def authorised() -> reuse.Authorisation:
            client = gh()
            return authorisation(client, load_timeline(client, pr.number), pr.number, settings)

        def pushed_inputs() -> list[str]:
            if not event.before or not event.after or set(event.before) == {"0"}:
                return []
            # what the old head measured against the new one: a rebase that brings main's changelog and
            # config changes but leaves the PR's selected entries and recipes alone changes nothing
            check = pr_inputs(settings, event.after)(event.before)
            if check.unknown is None:
                return list(check.changed)
            return runs_flow.pushed_inputs(gh(), event.before, event.after)

        decision = reuse.decide_pr_event(event.action, label_problem=reuse.label_problems(pr.labels, settings.policy),
                                         authorisation=authorised, pushed_inputs=pushed_inputs)
        decision = replace(decision, pr_number=pr.number)
    elif event.name == "push" and event.ref == settings.main_ref:
        decision = _resolve_push(event, settings, gh)
    else:
        decision = reuse.ReuseDecision(reason=f"{event.name} {event.ref or event.action} is not a push to "
                                              f"{settings.main_ref.rsplit('/', 1)[-1]}")
    res = Result(outputs=outputs(decision), messages=[decision.summary(), *decision.notes, *decision.ignored])
    res.exit_code = 1 if decision.failed else 0
    return res


def _resolve_push(event: Event, settings: Settings, gh: Lazy) -> reuse.ReuseDecision:
    client: Client = gh()
    pulls = client.merged_pull_requests(event.after)
    if not pulls:
        return reuse.ReuseDecision(reason=f"commit {event.after[:12]} has no associated merged pull request")
    if len(pulls) > 1:
        numbers = sorted(p.number for p in pulls)
        authorised = []
        for p in pulls:
            tl = load_timeline(client, p.number)
            if reuse.authorise(tl.comments, client.permission, pr_number=p.number, merged_at=p.merged_at,
                               pin_problem=pin_checker(client, client.repo, settings), bot=settings.bot).authorised:
                authorised.append(p.number)
        if authorised:
            return reuse.ReuseDecision(fallback=settings.policy.reuse.main_sweeps_on_refusal, error=f"commit {event.after[:12]} maps to several PRs "
                                             f"({', '.join(map(str, numbers))}) and reuse is authorised on "
                                             f"#{', #'.join(map(str, authorised))}; refusing to guess which "
                                             "PR's run to reuse.")
        return reuse.ReuseDecision(reason="several associated pull requests, none authorised reuse")
    prs = context.of(pulls[0], settings.main_branch)
    tl = load_timeline(client, prs.number)
    auth = reuse.authorise(tl.comments, client.permission, pr_number=prs.number, merged_at=prs.merged_at,
                           pin_problem=pin_checker(client, client.repo, settings), bot=settings.bot)
    inputs = measured_inputs(settings, base=f"{event.after}^", target=event.after)
    return runs_flow.decide_merge(prs, auth, timeline=tl, policy=settings.policy, workflow=settings.workflow,
                                  source=client, inputs=inputs, now=datetime.now(timezone.utc))


def measured_inputs(settings: Settings, *, base: str, target: str) -> InputsOf:
    """The rebase-safe comparison against `target` (reuse/shell.py), from the job's checkout."""
    from ci_tools.prbot.reuse.shell import inputs_against

    return inputs_against(settings.repo_root, base, target, fetch=settings.fetch_commits)


def pr_inputs(settings: Settings, head: str) -> InputsOf:
    """The comparison against a PR head, from the default branch's checkout (its branch ref when the
    checkout has one, else HEAD: the workflows check out the default branch)."""
    from ci_tools.gitio import Git

    git = Git(settings.repo_root)
    # a default-branch checkout has the branch; a pull_request checkout (the merge ref, fetch-depth 0)
    # has origin/<branch>; HEAD only as the last resort (it is the default branch in the workflows
    # that check it out by name)
    base = next((ref for ref in (settings.main_branch, f"origin/{settings.main_branch}") if git.has_commit(ref)),
                "HEAD")
    return measured_inputs(settings, base=base, target=head)
