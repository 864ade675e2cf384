"""`signoff verify` and `signoff record`: CODEOWNER sign-offs in comments and reviews, and their check run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from ci_tools import names
from ci_tools.errors import InputError, UsageError
from ci_tools.github.client import GitHubError, TeamUnreadable
from ci_tools.github.events import Comment, Event, PullRequest
from ci_tools.github.models import CheckRun, Commit, Comparison, EditHistory
from ci_tools.prbot import context, messages, sticky
from ci_tools.prbot.reuse import runs_flow
from ci_tools.prbot.reuse.verdict import reuse_rules
from ci_tools.prbot.shell import Comments, Lazy, Result, Settings, load_timeline, read_repo_file, upsert
from ci_tools.prbot.signoff import decide as signoff


class Client(runs_flow.Source, Comments, Protocol):
    def pull_request(self, number: int) -> PullRequest: ...
    def permission(self, login: str) -> str: ...
    def pull_files(self, number: int) -> list[str]: ...
    def commit(self, sha: str) -> Commit: ...
    def create_check_run(self, sha: str, *, name: str, conclusion: str, title: str, summary: str,
                         details_url: str | None = ...) -> CheckRun: ...
    def review_comment(self, number: int, review_id: int) -> Comment: ...
    def edit_history(self, node_id: str) -> EditHistory: ...
    def check_runs(self, sha: str, name: str | None = ..., *, every: bool = ...) -> list[CheckRun]: ...
    def compare(self, base: str, head: str) -> Comparison: ...


class Teams(Protocol):
    """Team membership, with a token that can read it (TEAM_MEMBERSHIP_TOKEN)."""

    def team_member(self, org: str, team: str, login: str) -> bool: ...

def _membership(teams: Lazy | None):
    """`is_member` for the owner check, reading teams with the team token (MembershipUnknown without one)."""
    def is_member(org: str, team: str, login: str) -> bool:
        if teams is None:
            raise signoff.MembershipUnknown(messages.NO_TEAM_TOKEN)
        try:
            return teams().team_member(org, team, login)
        except TeamUnreadable as exc:
            raise signoff.MembershipUnknown(exc.message) from None
        except GitHubError as exc:
            raise InputError(f"cannot check whether @{login} is in @{org}/{team} ({exc.message}). Give the "
                             "workflow a token that can read team membership (organization members: read).") from None
    return is_member


def write_check(client: Client, sha: str, state: str, title: str, summary: str, details_url: str) -> None:
    """The sign-off's check run on `sha`: its state as GitHub's conclusion (`signoff.CONCLUSIONS`), the
    one-line title and a Markdown summary a reviewer reads on the Checks tab."""
    client.create_check_run(sha, name=signoff.CHECK, conclusion=signoff.CONCLUSIONS[state], title=title,
                            summary=summary, details_url=details_url)


def verify_signoff(event: Event, settings: Settings, gh: Lazy, teams: Lazy | None = None) -> Result:
    """`teams`: a client whose token can read team membership (TEAM_MEMBERSHIP_TOKEN), or None when
    none is configured; a CODEOWNERS team entry then fails closed with that reason."""
    res = Result(outputs={"proceed": "false", "state": "", "signer": "", "head-sha": ""})
    if event.name == "merge_group":
        return _signoff_of_queue(event, settings, gh, res)
    if event.name == "pull_request":
        if event.action not in ("synchronize", "opened", "reopened"):
            res.messages.append(f"pull_request {event.action}: the sign-off check is unaffected")
            return res
        return _signoff_after_push(event, settings, gh, res)
    if event.name not in ("issue_comment", "pull_request_review"):
        raise UsageError(f"`signoff verify` takes issue_comment, pull_request_review, pull_request or merge_group "
                         f"events, not {event.name}")
    c = event.comment
    # a review requesting changes is read whatever its body: from an owner it revokes the sign-off
    changes = c is not None and c.kind == "review" and signoff.requests_changes(c.review_state)
    if event.action not in ("created", "edited", "submitted") or event.pr_number is None or c is None \
            or not (changes or signoff.has_phrase(c.body)):
        res.messages.append("no sign-off in this event: nothing to do")
        return res
    if c.author == settings.bot or c.author_type == "Bot":
        res.messages.append("a bot cannot sign off")
        return res
    if event.action == "edited" and event.sender != c.author and not changes:
        # GitHub lets maintainers edit anyone's comment: an edit by someone else is not the author's sign-off
        res.messages.append(f"the comment by @{c.author} was edited by @{event.sender or '(unknown)'}: a sign-off "
                            "counts only as its author wrote it, so this edit changes nothing")
        return res
    client: Client = gh()
    pr = event.pr_number
    prs = context.of(client.pull_request(pr), settings.main_branch)
    if prs.state != "open":
        res.messages.append(f"PR #{pr} is {prs.state}: sign-offs are verified on open PRs only")
        return res
    checklist = signoff.parse_checklist(read_repo_file(settings.repo_root, names.REVIEW_CHECKLIST),
                                        names.REVIEW_CHECKLIST)
    codeowners = read_repo_file(settings.repo_root, names.CODEOWNERS)
    tl = load_timeline(client, pr)
    previous = sticky.state_of(sticky.find_sticky(tl.comments, sticky.SIGNOFF_VERDICT, bot_login=settings.bot))
    if changes:
        return _changes_requested(c, prs, tl, previous, codeowners, client, teams, settings, res)
    tree = client.commit(prs.head_sha).tree_sha
    history = client.edit_history(c.node_id) if c.node_id else None
    written = (history.last_edited_at if history else None) or c.created_at
    unbound = _binding_problem(event, c, prs, tree, tl, client, codeowners, settings, history, previous)
    if unbound:
        body = messages.render("signoff-verdict", kind=sticky.SIGNOFF_REPLY, key=c.id, headline="not counted",
                               signer=c.author, signoff_url=c.html_url, sha=prs.head_sha[:12],
                               version=checklist.version, rows=messages.signoff_rows(
                                   [signoff.Check("bound to the head it is applied to", False, unbound)]),
                               footer=messages.signoff_unbound(c.author))
        upsert(client, pr, tl, sticky.SIGNOFF_REPLY, c.id, body, settings)
        res.messages.append(f"the sign-off by @{c.author} is not counted, and no check changed: {unbound}")
        return res
    files = client.pull_files(pr)
    sel = runs_flow.select_run(reuse_rules(False), pinned=None, pr=prs, timeline=tl, policy=settings.policy,
                               workflow=settings.workflow, source=client)
    verdict = signoff.verify(signer=c.author, body=c.body, files=files, codeowners_text=codeowners,
                             checklist=checklist, is_member=_membership(teams),
                             sweep_problem=None if sel.run else sel.error, permission=client.permission(c.author))
    res.outputs.update(proceed="true", signer=c.author, **{"head-sha": prs.head_sha})
    # the template's values (messages.render reads each by name)
    values: dict[str, Any] = dict(signer=c.author, signoff_url=c.html_url, sha=prs.head_sha[:12],
                                  version=checklist.version, rows=messages.signoff_rows(verdict.checks))
    if signoff.stands(verdict, previous, prs.head_sha, tree):
        body = messages.render("signoff-verdict", kind=sticky.SIGNOFF_REPLY, key=c.id, headline="not counted",
                               footer=messages.signoff_not_counted(c.author, str(previous.get("signer", ""))), **values)
        upsert(client, pr, tl, sticky.SIGNOFF_REPLY, c.id, body, settings)
        res.outputs["state"] = "success"
        res.verdict = "not counted: the earlier verified sign-off stands"
        res.messages.append("sign-off by a non-owner ignored; the earlier verified sign-off stands")
        return res
    # `at`: when the sign-off was written, so that an older review requesting changes does not revoke it
    state = {"sha": prs.head_sha, "tree": tree, "signer": c.author, "passed": verdict.passed,
             "url": c.html_url, "version": checklist.version, "at": written}
    headline, footer = messages.signoff_footer(verdict, c.author, signoff.CHECK)
    values.update(headline=headline, footer=footer)
    body = messages.render("signoff-verdict", kind=sticky.SIGNOFF_VERDICT, state=state, **values)
    _, cid = upsert(client, pr, tl, sticky.SIGNOFF_VERDICT, None, body, settings)
    # the check's summary is the verdict comment's text: what was checked, and what to fix
    write_check(client, prs.head_sha, verdict.state, verdict.description, messages.text("signoff-verdict", **values),
                f"{signoff.pr_url(client.repo, pr)}#issuecomment-{cid}")
    res.outputs["state"] = verdict.state
    res.verdict = verdict.description
    res.messages.append(f"{signoff.CHECK}: {signoff.CONCLUSIONS[verdict.state]}: {verdict.description}")
    return res


def _changes_requested(c: Comment, prs: context.PrContext, tl, previous: dict, codeowners: str, client: Client,
                       teams: Lazy | None, settings: Settings, res: Result) -> Result:
    """A review requesting changes: from an owner of the changed files it revokes the sign-off (check
    failure, the verdict comment says so and records when); from anyone else it changes nothing."""
    pr = prs.number
    _, owns_any, unverified = signoff.owner_check(c.author, client.pull_files(pr), codeowners, _membership(teams),
                                                  client.permission(c.author))
    outcome = signoff.revocation(reviewer=c.author, owns_any=owns_any, unverified=unverified,
                                 submitted_at=c.created_at, previous=previous)
    if isinstance(outcome, str):
        res.messages.append(f"the review by @{c.author} requesting changes changes no check: {outcome}")
        return res
    tree = client.commit(prs.head_sha).tree_sha
    state = {"sha": prs.head_sha, "tree": tree, "signer": c.author, "passed": False, "changes_requested": True,
             "url": c.html_url, "at": c.created_at}
    values = dict(reviewer=c.author, review_url=c.html_url, sha=prs.head_sha[:12],
                  earlier=messages.revoked_earlier(previous), context=signoff.CHECK)
    body = messages.render("signoff-revoked", kind=sticky.SIGNOFF_VERDICT, state=state, **values)
    _, cid = upsert(client, pr, tl, sticky.SIGNOFF_VERDICT, None, body, settings)
    write_check(client, prs.head_sha, outcome.state, outcome.description, messages.text("signoff-revoked", **values),
                f"{signoff.pr_url(client.repo, pr)}#issuecomment-{cid}")
    res.outputs.update(proceed="true", state=outcome.state, signer=c.author, **{"head-sha": prs.head_sha})
    res.verdict = outcome.description
    res.messages.append(f"{signoff.CHECK}: {signoff.CONCLUSIONS[outcome.state]}: {outcome.description}")
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
    (out_dir / names.REVIEW_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")
    return Result(outputs={"pr": str(record["pr"]), "review": str(record["review"])},
                  messages=[f"recorded review {record['review']} of PR #{record['pr']} for {names.REVIEW_VERIFY_WORKFLOW}"])


def read_review_record(path: Path) -> tuple[int, int]:
    """(PR, review id) from a record; it comes from an untrusted run, so only two positive integers
    are taken from it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a review record ({exc}); is the {names.REVIEW_ARTIFACT} artifact "
                         "downloaded there?") from None
    if not isinstance(data, dict) or sorted(data) != ["pr", "review"] or not all(
            isinstance(data[k], int) and not isinstance(data[k], bool) and data[k] > 0 for k in data):
        raise InputError(f"{path}: not a review record: expected {{\"pr\": N, \"review\": N}} and nothing else")
    return data["pr"], data["review"]


def verify_review(event: Event, settings: Settings, gh: Lazy, teams: Lazy | None, record: Path) -> Result:
    """The trusted phase: the workflow_run of a finished record run; the review is read from the API."""
    if event.name != "workflow_run" or event.workflow_run is None:
        raise UsageError(f"`signoff verify --review-file` takes the workflow_run event of "
                         f"{names.REVIEW_RECORD_WORKFLOW}, not {event.name}")
    wr = event.workflow_run
    expected = f"{names.WORKFLOWS_DIR}/{names.REVIEW_RECORD_WORKFLOW}"
    if wr.path.split("@")[0] != expected or wr.event != "pull_request_review" or wr.conclusion != "success":
        return Result(outputs={"proceed": "false", "state": "", "signer": "", "head-sha": ""},
                      messages=[f"run {wr.id} is not a successful {expected} run of a review: nothing to verify"])
    pr, review_id = read_review_record(record)
    comment = gh().review_comment(pr, review_id)
    # The record run's head is the PR's head when the review event happened: a re-run after a push
    # carries the old one (`signoff.stale_event_problem`). The action label means nothing here: the
    # body's edits are read from GitHub's edit history.
    review_event = replace(event, name="pull_request_review", action="submitted", workflow_run=None,
                           pull_request=PullRequest(number=pr, head_sha=wr.head_sha), comment=comment)
    return verify_signoff(review_event, settings, gh, teams)


def _binding_problem(event: Event, c: Comment, prs: context.PrContext, tree: str, tl, client: Client,
                     codeowners: str, settings: Settings, history: EditHistory | None, previous: dict) -> str | None:
    """Why this sign-off is not bound to the PR's head (None: it is): a review that does not approve or
    comment, an old event, a body someone else edited, a review of another tree, a comment written
    before the head arrived, a sign-off written before an owner requested changes."""
    if c.kind == "review" and (why := signoff.review_state_problem(c.review_state)):
        return why
    why = signoff.stale_event_problem(event.pull_request.head_sha if event.pull_request else "", prs.head_sha)
    if why:
        return why
    if history is None:
        return "GitHub gave it no node id, so its edit history cannot be read"
    why = signoff.edit_problem(c.author, history)
    if why:
        return why
    written = history.last_edited_at or c.created_at
    why = signoff.revoked_problem(written_at=written, previous=previous)
    if why:
        return why
    if c.kind == "review":
        reviewed_tree = client.commit(c.commit_id).tree_sha if c.commit_id else ""
        return signoff.reviewed_tree_problem(reviewed=c.commit_id, head=prs.head_sha, reviewed_tree=reviewed_tree,
                                             head_tree=tree, diff=lambda: client.compare(c.commit_id, prs.head_sha),
                                             codeowners_text=codeowners)
    seen = signoff.head_seen_before(written_at=written, checks=client.check_runs(prs.head_sha, signoff.CHECK, every=True),
                                    pr_url=signoff.pr_url(client.repo, prs.number), bot=settings.bot)
    return signoff.head_at_writing_problem(written_at=written, head=prs.head_sha, seen_before=seen,
                                           force_pushes=tl.force_pushes)


def _signoff_after_push(event: Event, settings: Settings, gh: Lazy, res: Result) -> Result:
    client = gh()
    pr = event.expect_pull_request()
    tl = load_timeline(client, pr.number)
    previous = sticky.state_of(sticky.find_sticky(tl.comments, sticky.SIGNOFF_VERDICT, bot_login=settings.bot))
    tree = client.commit(pr.head_sha).tree_sha if previous.get("passed") else ""
    update = signoff.after_push(previous, tree)
    # Naming the PR, this check is also the bot's record that the commit was this PR's head by now
    # (`signoff.head_seen_before`): GitHub's API keeps no push time.
    write_check(client, pr.head_sha, update.state, update.description,
                messages.signoff_after_push(update.description, pr.head_sha, previous.get("url")),
                signoff.pr_url(client.repo, pr.number))
    res.outputs.update(proceed="true", state=update.state, **{"head-sha": pr.head_sha})
    res.messages.append(f"{signoff.CHECK}: {signoff.CONCLUSIONS[update.state]}: {update.description}")
    return res


def _signoff_of_queue(event: Event, settings: Settings, gh: Lazy, res: Result) -> Result:
    """A merge queue's group must carry the required sign-off check on its own commit, or the queue
    waits until it times out: the PR's, as it stands on the PR's head now. The group merged that head;
    an awaiting (not yet signed off) or missing check is a failure there, which removes the PR from
    the queue instead of stalling it."""
    client = gh()
    mg = event.expect_merge_group()
    number = mg.pr
    if number is None:
        raise InputError(f"merge group {mg.head_ref!r}: its branch names no pull request "
                         "(GitHub names it gh-readonly-queue/<base>/pr-<number>-<sha>)")
    pr = client.pull_request(number)
    mine = [c for c in client.check_runs(pr.head_sha, signoff.CHECK) if signoff.by_bot(c, settings.bot)]
    state, why = signoff.queue_state(mine, pr_head=pr.head_sha, queued_head=mg.pr_head_sha)
    write_check(client, mg.head_sha, state, signoff.title(f"PR #{number}: {why}"),
                messages.signoff_of_queue(number, pr.head_sha, why), signoff.pr_url(client.repo, number))
    res.outputs.update(proceed="true", state=state, **{"head-sha": mg.head_sha})
    res.messages.append(f"{signoff.CHECK} of merge group {mg.head_sha[:12]} (PR #{number}): {state}: {why}")
    return res
