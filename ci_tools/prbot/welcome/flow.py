"""`bot welcome`: one welcome and review-process comment per PR."""

from __future__ import annotations

from typing import Protocol

from ci_tools.github.events import Event
from ci_tools.prbot import messages, sticky
from ci_tools.prbot.shell import Lazy, Result, Settings, load_timeline, upsert
from ci_tools.prbot.welcome.decide import welcome_values


class Client(Protocol):
    repo: str

    def timeline(self, number: int) -> list[dict]: ...
    def create_comment(self, number: int, body: str) -> dict: ...
    def update_comment(self, comment_id: int, body: str) -> dict: ...


def welcome(event: Event, settings: Settings, gh: Lazy) -> Result:
    if event.name != "pull_request" or event.action not in ("opened", "reopened", "ready_for_review"):
        return Result(outputs={"comment": "none"}, messages=[f"{event.name} {event.action}: no welcome needed"])
    client: Client = gh()
    pr = event.pull_request.number
    tl = load_timeline(client, pr)
    body = messages.render("welcome", kind=sticky.WELCOME, **welcome_values(settings.policy, client.repo))
    action, cid = upsert(client, pr, tl, sticky.WELCOME, None, body, settings)
    return Result(outputs={"comment": action, "comment-id": str(cid)}, messages=[f"welcome comment: {action}"])
