"""`/use` in a comment, and `reuse resolve`: skip a PR's sweep, or reuse which run at merge."""

from __future__ import annotations

from ci_tools.github.client import GitHub
from ci_tools.github.events import Comment, Event
from ci_tools.prbot import messages
from ci_tools.prbot.card.flow import authorisation, update_card
from ci_tools.prbot.commands import Use
from ci_tools.prbot.models import Timeline
from ci_tools.prbot.reuse import decide as reuse
from ci_tools.prbot.shell import Lazy, Result, Settings, load_timeline


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


def use_command(use: Use, c: Comment, pr: int, tl: Timeline, gh: GitHub, settings: Settings, res: Result) -> str:
    """The reply to an authorised author's `/use` (the permission was checked for the whole comment)."""
    level = gh.permission(c.author)
    prs = pr_state(gh.pull(pr), settings.main_ref)
    if prs.merged_at:
        return messages.denied_text(c.author, use.text, f"PR #{pr} has already merged", messages.AFTER_MERGE)
    auth = authorisation(gh, tl, pr)
    res.outputs["reuse-authorised"] = str(auth.authorised).lower()

    def change(state: dict) -> None:
        state.setdefault("writers", {})[c.author.lower()] = level
        state["reuse"] = messages.reuse_text(auth)

    update_card(gh, pr, tl, settings, change)
    sel = reuse.select_run(reuse.reuse_rules(use.run_id is not None), pinned=use.run_id, pr=prs, timeline=tl,
                           policy=settings.policy, workflow=settings.workflow, source=gh)
    return messages.use_accepted(c.author, use.run_id, sel.run, sel.error, reuse.label_problems(prs.labels, settings.policy))


def use_deleted(pr: int, gh: GitHub, settings: Settings, res: Result) -> None:
    """A deleted `/use` comment: the card says what reuse is now."""
    tl = load_timeline(gh, pr)
    auth = authorisation(gh, tl, pr)
    update_card(gh, pr, tl, settings, lambda s: s.update(reuse=messages.reuse_text(auth)))
    res.messages.append(f"a /use comment was deleted; reuse is now: {messages.reuse_text(auth)}")


def resolve_reuse(event: Event, settings: Settings, gh: Lazy) -> Result:
    if event.name == "pull_request":
        pr = event.pull_request

        def authorised() -> reuse.Authorisation:
            client = gh()
            return authorisation(client, load_timeline(client, pr.number), pr.number)

        def pushed_inputs() -> list[str]:
            if not event.before or not event.after or set(event.before) == {"0"}:
                return []
            diff = gh().compare(event.before, event.after)
            return reuse.changed_inputs(diff, gh(), event.before, event.after)

        decision = reuse.decide_pr_event(event.action, label_problem=reuse.label_problems(pr.labels, settings.policy),
                                         authorisation=authorised, pushed_inputs=pushed_inputs)
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
            if reuse.authorise(tl.comments, client.permission, pr_number=int(p["number"]),
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
    auth = reuse.authorise(tl.comments, client.permission, pr_number=prs.number, merged_at=prs.merged_at)
    return reuse.decide_merge(prs, auth, timeline=tl, policy=settings.policy, workflow=settings.workflow,
                              source=client)
