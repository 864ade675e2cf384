"""`/use` run pinning: who may authorise reuse, and what a PR event and a merge make of it (pure).

Which run is reused, and whether it still may be, is `verdict.py`'s (the rules over plain facts)
and `runs_flow.py`'s (the facts fetched, the run chosen); this module holds the decisions around
them. Runs arrive as `models.WorkflowRun` (the adapter parsed them).

Differences from InferenceX's `find_reusable_sweep_run.py`, each fixing a listed weakness:
- W3: the author needs write permission on the repository, read from the collaborator-permission
  endpoint. `author_association` is not used: GitHub reports CONTRIBUTOR for organization members
  whose membership is private, so it would refuse maintainers, and it grants nothing by itself.
- W4: comments created after the PR merged are ignored.
- W18: trusted sweeps are listed only for fork PRs, so a same-repo PR's merge costs no extra request.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterable

from ci_tools.sweep.labels import Policy
from ci_tools.prbot import messages, sticky
from ci_tools.prbot.commands import WRITE_PERMISSIONS, Use, effective_use, parse
from ci_tools.prbot.context import PrContext
from ci_tools.github.models import Comment, WorkflowRun
from ci_tools.github.models import timestamp as ts
from ci_tools.prbot.reuse.verdict import TRUSTED_PATH, Selection, order, workflow_path


# ---- authorisation ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Authorisation:
    authorised: bool
    reason: str
    command: Use | None = None
    comment: Comment | None = None
    ignored: tuple[str, ...] = ()     # commands that did not count, and why (newest first)

    @property
    def pinned_run(self) -> int | None:
        return self.command.run_id if self.command else None

    @property
    def pin_text(self) -> str:
        """"`/use 123` by @maint": the command that counted, and who said it."""
        return f"`{self.command.text}` by @{self.comment.author}" if self.command and self.comment else ""


def use_commands(comments: Iterable[Comment], merged_at: str | None = None) -> list[tuple[Comment, Use]]:
    """Reuse commands, newest first. Comments created after `merged_at` do not count (W4), nor do
    comments edited after it: what they said at the merge is unknown, and an edit to `/use 9` on a
    re-run of the merge would otherwise choose the run after the fact."""
    cutoff = ts(merged_at)
    found = []
    for c in comments:
        created, updated = ts(c.created_at), ts(c.updated_at)
        if cutoff is not None and (created is None or created > cutoff):
            continue
        if cutoff is not None and c.updated_at and (updated is None or updated > cutoff):
            continue
        use = effective_use(parse(c.body))
        if use is not None:
            found.append((c, use))
    found.sort(key=lambda cu: (order(cu[0].created_at), cu[0].id), reverse=True)
    return found


def may_use(comment: Comment, permission_of: Callable[[str], str]) -> str | None:
    """None if the author may authorise reuse, else why not: a person (not a bot) whose repository
    permission (`permission_of`, the collaborator-permission endpoint) is write, maintain or admin."""
    if comment.author_type == "Bot":
        return messages.is_a_bot(comment.author)
    permission = permission_of(comment.author)
    if permission not in WRITE_PERMISSIONS:
        return messages.lacks_write(comment.author, permission)
    return None


@dataclass(frozen=True)
class Handled:
    """What the bot recorded when it answered a command comment: its reply's state (`handled_state`)."""

    permission: str                  # the author's repository permission when the bot checked it
    commands: tuple[str, ...] = ()   # the commands that permission was checked for, as written


def handled_state(permission: str, commands: Iterable[str]) -> dict:
    """The state the bot's reply to a command comment keeps (`prbot/flow.py` writes it)."""
    return {"permission": permission, "checked": list(commands)}


def handled_replies(comments: Iterable[Comment], bot: str) -> dict[int, Handled]:
    """comment id -> what the bot recorded in its reply to it (only the bot's own replies are read).
    A reply of an older bot that recorded only a refusal (`denied`) reads as that permission."""
    out: dict[int, Handled] = {}
    for c in comments:
        if c.author != bot or not sticky.is_marked(c.body, sticky.REPLY):
            continue
        words = c.body.split("\n", 1)[0].split()
        key = words[2] if len(words) > 3 else ""
        state = sticky.state_of_text(c.body)
        level = state.get("permission", state.get("denied"))
        if isinstance(level, str) and key.isdigit():
            checked = state.get("checked")
            out[int(key)] = Handled(level, tuple(str(x) for x in checked) if isinstance(checked, list) else ())
    return out


def answer_problem(use: Use, handled: Handled | None) -> str | None:
    """Why a `/use` does not count, judged by the permission its author had when the bot answered it
    (issue 35), or None. The rule: a command counts only when the bot's reply records that it checked
    this very command and found write permission. Unanswered (the job did not run, the reply was lost)
    or answered for other text (edited since): the permission then is unknown, so it does not count,
    and a reader promoted later cannot make an old command count; they say it again."""
    if handled is None:
        return messages.UNANSWERED
    if handled.permission not in WRITE_PERMISSIONS:
        return messages.denied_when_handled(handled.permission)
    if use.text not in handled.commands:
        return messages.not_what_was_answered(handled.commands)
    return None


def authorise(comments: Iterable[Comment], permission_of: Callable[[str], str], *, pr_number: int,
              merged_at: str | None = None, pin_problem: Callable[[int], str | None] | None = None,
              bot: str = sticky.DEFAULT_BOT, answering: dict[int, Handled] | None = None) -> Authorisation:
    """The newest command by an authorised person decides; a bare one un-pins an earlier pin. A pin of
    a run that is no sweep of this repository (`pin_problem`, see `pin_problem_of`) counts as not said.
    Authorised: the bot's answer recorded write permission for it then (`answer_problem`; `answering`:
    the comment being answered now, whose reply is not written yet) and the author has it still
    (`may_use`, from `permission_of` now: a writer demoted since no longer authorises reuse)."""
    ignored: list[str] = []
    comments = list(comments)
    handled = handled_replies(comments, bot) | (answering or {})
    for comment, use in use_commands(comments, merged_at):
        why_not = answer_problem(use, handled.get(comment.id)) or may_use(comment, permission_of)
        if not why_not and use.run_id is not None and pin_problem is not None:
            why_not = pin_problem(use.run_id)
        if why_not:
            ignored.append(f"`{use.text}` by @{comment.author} ({comment.html_url or comment.id}): {why_not}")
            continue
        what = f"pinned run {use.run_id}" if use.run_id is not None else "the newest eligible run"
        return Authorisation(True, f"PR #{pr_number} has `{use.text}` from @{comment.author} ({what})",
                             use, comment, tuple(ignored))
    return Authorisation(False, f"PR #{pr_number} has no authorised /use command", ignored=tuple(ignored))


def pin_problem_of(run: WorkflowRun | None, run_id: int, *, repository: str, workflow: str) -> str | None:
    """None if `run_id` names a sweep of this repository (a pull_request run of the sweep workflow or a
    trusted sweep), else why it cannot be pinned at all. Whether the sweep is usable (finished, green,
    this PR's, current) is the verdict's question (`verdict.judge`), asked again at merge."""
    if run is None:
        return f"no run {run_id} exists in this repository"
    if repository and run.repository and run.repository != repository:
        return f"run {run_id} ran in {run.repository}, not {repository}; only this repository's own runs can be pinned"
    if run.event not in ("pull_request", "workflow_dispatch"):
        return f"run {run_id} is a {run.event or 'unknown'} run, not a pull_request sweep or a trusted sweep"
    expected = TRUSTED_PATH if run.event == "workflow_dispatch" else workflow_path(workflow)
    if run.path and run.path.split("@")[0] != expected:
        return f"run {run_id} is a run of {run.path.split('@')[0]}, not a sweep ({expected})"
    return None


# ---- the two places reuse is decided ------------------------------------------------------------

@dataclass(frozen=True)
class ReuseDecision:
    reuse_enabled: bool = False
    skip_pr_sweep: bool = False
    authorised: bool = False
    reason: str = ""
    pr_number: int | None = None
    run: WorkflowRun | None = None
    error: str | None = None          # set: reuse refused (`fallback`: main sweeps itself, else the job fails)
    ignored: tuple[str, ...] = ()
    fallback: bool = False            # policy `on-refused-reuse: sweep`: a refusal makes main run its own sweep
    notes: tuple[str, ...] = ()       # about the reused run: its inputs check, optional jobs that failed

    @property
    def failed(self) -> bool:
        return bool(self.error) and not self.fallback

    def summary(self) -> str:
        if self.error and self.fallback:
            return f"{self.error} {FALLBACK_NOTE}"
        return self.error or self.reason


FALLBACK_NOTE = ("Main runs its own sweep of the selected configs instead (policy `on-refused-reuse: sweep`), so "
                 "the merge still publishes results.")


def label_problems(labels: Iterable[str], policy: Policy) -> str | None:
    labels = set(labels)
    blockers = policy.reuse_blockers_in(labels)
    if blockers:
        return f"the PR carries {', '.join(blockers)}, which block reuse; remove it or run a new sweep"
    if not set(policy.primaries_in(labels)) & set(policy.reusable_primaries()):
        return f"the PR has no full-sweep label; reuse needs one of {', '.join(policy.reusable_primaries())}"
    return None


def decide_pr_event(action: str, *, label_problem: str | None, authorisation: Callable[[], Authorisation],
                    pushed_inputs: Callable[[], list[str]] | None = None) -> ReuseDecision:
    """PR side, the one home of the rule "an authorised /use stops synchronize sweeps": a
    `synchronize` skips the sweep when the PR's labels allow reuse (`label_problem` is None: one full
    sweep label, no reuse-blocking modifier) and an authorised /use exists, unless the push changed
    benchmark inputs (W1: then the authorised results are stale and the sweep must run).

    With labels that block reuse the pin would be refused at merge (`decide_merge`), so skipping
    would leave the PR with nothing usable: it sweeps, and no API call is spent on the question."""
    if action != "synchronize":
        return ReuseDecision(reason=f"pull_request action {action or 'unknown'} is not synchronize")
    if label_problem:
        return ReuseDecision(reason=f"an authorised /use cannot stop this sweep: {label_problem}")
    auth = authorisation()
    if not auth.authorised:
        return ReuseDecision(reason=auth.reason, ignored=auth.ignored)
    changed = pushed_inputs() if pushed_inputs else []
    if changed:
        return ReuseDecision(authorised=True, ignored=auth.ignored,
                             reason=f"{auth.reason}, but this push changes benchmark inputs "
                                    f"({', '.join(changed)}): sweeping again")
    return ReuseDecision(authorised=True, skip_pr_sweep=True, reason=auth.reason, ignored=auth.ignored)


def merge_refusal(pr: PrContext, auth: Authorisation, policy: Policy) -> ReuseDecision | None:
    """Main side, for the single PR a pushed commit belongs to, before any run is looked at: the
    decision when no run can be reused whatever the runs are (None: a run is chosen next,
    `runs_flow.decide_merge`). A refused pin is an error; with the policy's `on-refused-reuse: sweep`
    (the default) it is a fallback: main sweeps, the job passes."""
    fallback = policy.reuse.main_sweeps_on_refusal
    if not auth.authorised:
        return ReuseDecision(reason=auth.reason, pr_number=pr.number, authorised=auth.authorised,
                             ignored=auth.ignored, fallback=fallback)
    problem = label_problems(pr.labels, policy)
    if problem:
        return ReuseDecision(error=f"PR #{pr.number} authorised reuse, but {problem}.", pr_number=pr.number,
                             authorised=True, ignored=auth.ignored, fallback=fallback)
    if not pr.merged_at:
        return ReuseDecision(error=f"PR #{pr.number} is not merged; reuse is decided for merged PRs only.",
                             pr_number=pr.number, authorised=True, ignored=auth.ignored, fallback=False)
    return None


def merge_decision(pr: PrContext, auth: Authorisation, policy: Policy, sel: Selection) -> ReuseDecision:
    """What the merge does with the run `runs_flow.select_run` chose for the authorised pin (or its error)."""
    decision = ReuseDecision(pr_number=pr.number, authorised=auth.authorised, ignored=auth.ignored,
                             fallback=policy.reuse.main_sweeps_on_refusal)
    if sel.run is None:
        return replace(decision, error=sel.error)
    how = f"pinned run {sel.run.id}" if auth.pinned_run is not None else f"newest eligible run {sel.run.id}"
    return replace(decision, reuse_enabled=True, run=sel.run, notes=sel.notes,
                   reason=f"PR #{pr.number} reuses {how} (head {sel.run.head_sha[:12]}): {auth.reason}")
