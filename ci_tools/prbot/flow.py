"""`comment handle`: the commands of one PR conversation comment, checked once and run in order.

The permission the comment's commands need is folded over all of them before any runs (bors-ng):
an author without it gets one denial reply and nothing runs. Each command's own work lives in its
feature's flow; the replies are joined into one sticky reply per command comment.
"""

from __future__ import annotations

from ci_tools.errors import UsageError
from ci_tools.github.events import Event
from ci_tools.prbot import commands as cmds
from ci_tools.prbot import messages, sticky
from ci_tools.prbot.approval.flow import approve_command
from ci_tools.prbot.card.flow import sweep_plan_text
from ci_tools.prbot.commands import StageResults, SweepApprove, SweepPlan, UsageProblem, Use
from ci_tools.prbot.reuse import decide as reuse
from ci_tools.prbot.reuse.flow import use_command, use_deleted
from ci_tools.prbot.shell import Lazy, Result, Settings, load_timeline, upsert
from ci_tools.prbot.staging.flow import stage_command

OUTPUTS = ("handled", "commands", "reuse-authorised", "stage-run-id", "stage-comment-id", "stage-payload", "approve-sha",
           "approve-pr", "approve-comment")


def handle_comment(event: Event, settings: Settings, gh: Lazy) -> Result:
    res = Result(outputs=dict.fromkeys(OUTPUTS, "") | {"handled": "false"})
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
    commands = cmds.parse(c.body)
    if event.action == "deleted":
        if any(isinstance(x, Use) for x in commands):
            use_deleted(pr, gh(), settings, res)
        return res
    if not commands:
        res.messages.append("no commands in the comment")
        return res
    res.outputs.update(handled="true", commands=" ".join(sorted({type(x).__name__ for x in commands})))
    runs = cmds.to_run(commands, created=event.action == "created")
    if event.action != "created":
        for x in commands:
            if isinstance(x, StageResults):
                res.messages.append(f"`{x.text}` in an edited comment: not staged again")
        approvals = [x for x in commands if isinstance(x, SweepApprove)]
        if approvals:
            res.messages.append(f"`{approvals[-1].text}` in an edited comment: no new sweep")
    client = gh()
    tl = load_timeline(client, pr)
    parts = [messages.usage(c.author, x, c.html_url) for x in commands if isinstance(x, UsageProblem)]
    needed = cmds.required(runs)
    level = client.permission(c.author) if needed else ""
    denied = bool(needed) and not cmds.allows(level, needed)
    # What the reply records, and a later decision reads (`reuse.answer_problem`): the permission the
    # author had now and the commands it was checked for. A `/use` counts at merge only with it, so a
    # command the bot never answered, or answered when its author lacked the permission, never does.
    checked = [x.text for x in runs if cmds.REQUIRED[type(x)]]
    state = reuse.handled_state(level, checked) if needed else None
    if denied:
        parts.append(messages.denial(c.author, [(cmds.word_of(x), x.text) for x in runs if cmds.REQUIRED[type(x)]], level))
        if any(isinstance(x, Use) for x in runs):
            res.outputs["reuse-authorised"] = "false"
        runs = []
    for x in runs:
        if isinstance(x, Use):
            parts.append(use_command(x, c, pr, tl, client, settings, res))
        elif isinstance(x, StageResults):
            parts.append(stage_command(x, c, pr, tl, client, settings, res))
        elif isinstance(x, SweepPlan):
            parts.append(messages.text("sweep-plan", author=c.author, plan=sweep_plan_text(tl, settings, pr)))
        else:
            parts.append(approve_command(x, c, pr, tl, client, settings, res))
    parts = [p for p in parts if p]
    if parts:
        body = sticky.head(sticky.REPLY, c.id, state) + "\n\n".join(p.rstrip() for p in parts) + "\n"
        action, _ = upsert(client, pr, tl, sticky.REPLY, c.id, body, settings)
        res.messages.append(f"reply: {action}")
    return res
