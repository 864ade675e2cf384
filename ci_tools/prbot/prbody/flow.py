"""`bot pr-body`: the PR description check, from the event payload alone (no API call)."""

from __future__ import annotations

from ci_tools.errors import UsageError
from ci_tools.github.events import Event
from ci_tools.prbot.prbody.decide import check_body
from ci_tools.prbot.shell import Result


def pr_body(event: Event) -> Result:
    if event.pull_request is None:
        raise UsageError(f"`bot pr-body` takes pull_request events, not {event.name}")
    check = check_body(event.pull_request.body)
    res = Result(outputs={"ok": str(check.ok).lower(), "missing": "\n".join(check.missing)},
                 messages=list(check.missing) or ["the PR description is complete"])
    res.exit_code = 0 if check.ok else 1
    return res
