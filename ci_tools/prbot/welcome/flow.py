"""`bot welcome`: one welcome and review-process comment per PR."""

from __future__ import annotations

from typing import Protocol

from ci_tools.github.events import Event
from ci_tools.github.models import Comment, Label, Timeline
from ci_tools.prbot import messages, sticky
from ci_tools.prbot.shell import Lazy, Result, Settings, load_timeline, upsert
from ci_tools.prbot.welcome.decide import welcome_values


class Client(Protocol):
    repo: str

    def timeline(self, number: int) -> Timeline: ...
    def create_comment(self, number: int, body: str) -> Comment: ...
    def update_comment(self, comment_id: int, body: str) -> Comment: ...


def welcome(event: Event, settings: Settings, gh: Lazy) -> Result:
    if event.name != "pull_request" or event.action not in ("opened", "reopened", "ready_for_review"):
        return Result(outputs={"comment": "none"}, messages=[f"{event.name} {event.action}: no welcome needed"])
    client: Client = gh()
    pr = event.expect_pull_request().number
    tl = load_timeline(client, pr)
    body = messages.render("welcome", kind=sticky.WELCOME, **welcome_values(settings.policy, client.repo))
    action, cid = upsert(client, pr, tl, sticky.WELCOME, None, body, settings)
    return Result(outputs={"comment": action, "comment-id": str(cid)}, messages=[f"welcome comment: {action}"])


class LabelClient(Protocol):
    repo: str

    def labels(self) -> list[Label]: ...
    def create_label(self, name: str, *, color: str, description: str) -> Label: ...
    def update_label(self, name: str, *, color: str, description: str) -> Label: ...


def sync_labels(event, settings: Settings, gh: Lazy, *, dry_run: bool = False) -> Result:
    """`bot labels`: create or update the policy's sweep labels on the repository (others untouched)."""
    from ci_tools.prbot.welcome import labels

    client: LabelClient = gh()
    todo = labels.changes(labels.wanted(settings.policy), client.labels())
    done = []
    for c in todo:
        if c.action == "create" and not dry_run:
            client.create_label(c.label.name, color=c.label.colour, description=c.label.description)
        elif c.action == "update" and not dry_run:
            client.update_label(c.label.name, color=c.label.colour, description=c.label.description)
        verb = {"create": "created", "update": "updated", "keep": "already right"}[c.action]
        done.append(f"{c.label.name}: {'would be ' + verb if dry_run and c.action != 'keep' else verb}")
    counts = {a: sum(1 for c in todo if c.action == a) for a in ("create", "update", "keep")}
    outputs = {"created": str(counts["create"]), "updated": str(counts["update"]), "unchanged": str(counts["keep"])}
    return Result(outputs=outputs, messages=[f"{client.repo}: {len(todo)} sweep label(s): {counts['create']} to create, "
                                             f"{counts['update']} to update, {counts['keep']} already right"
                                             + (" (dry run: nothing written)" if dry_run else ""), *done])
