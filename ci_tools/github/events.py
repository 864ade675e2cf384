"""Reading `$GITHUB_EVENT_PATH` payloads into plain dataclasses.

Supported events: pull_request, issue_comment, pull_request_review, workflow_run, push,
repository_dispatch and merge_group (a merge queue's checks_requested: its head commit, and the PR it
tests, from the queue branch's name). A malformed file is an `InputError` naming the file and the missing field, never
a KeyError traceback. Only the fields the decisions use are kept.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ci_tools.errors import InputError
from ci_tools.github.models import Comment, PullRequest, WorkflowRun, comment_from_json, obj, run_from_json

SUPPORTED = ("pull_request", "pull_request_target", "issue_comment", "pull_request_review", "workflow_run", "push",
             "repository_dispatch", "merge_group")
# a merge queue's branch: gh-readonly-queue/<base branch>/pr-<number>-<head sha of the PR>
_QUEUE_REF = re.compile(r"^(?:refs/heads/)?gh-readonly-queue/(?P<base>.+)/pr-(?P<pr>\d+)-(?P<sha>[0-9a-f]{7,40})$")


@dataclass(frozen=True)
class MergeGroup:
    """A merge queue's group: the commit the required checks must report on, and the PR it tests."""

    head_sha: str
    head_ref: str
    base_sha: str = ""          # GitHub sends it; its own example payload lacks it
    base_ref: str = ""

    @property
    def pr(self) -> int | None:
        m = _QUEUE_REF.match(self.head_ref)
        return int(m["pr"]) if m else None

    @property
    def pr_head_sha(self) -> str:
        """The PR's head commit the queue merged (abbreviated as GitHub names the branch)."""
        m = _QUEUE_REF.match(self.head_ref)
        return m["sha"] if m else ""

    @property
    def base(self) -> str:
        """What the group is compared with: its base commit, else its base branch on origin."""
        if self.base_sha:
            return self.base_sha
        branch = self.base_ref.removeprefix("refs/heads/")
        return f"origin/{branch}" if branch else ""


@dataclass(frozen=True)
class Event:
    name: str
    action: str = ""
    repo: str = ""
    sender: str = ""
    pull_request: PullRequest | None = None
    issue_number: int | None = None      # issue_comment: the issue or PR number
    is_pull_request: bool = False        # issue_comment on a PR (not a plain issue)
    comment: Comment | None = None
    workflow_run: WorkflowRun | None = None
    ref: str = ""                        # push
    after: str = ""                      # push / pull_request synchronize: the new head sha
    before: str = ""                     # push / pull_request synchronize: the previous head sha
    head_message: str = ""               # push: head commit message
    dispatch_type: str = ""              # repository_dispatch action / event_type
    client_payload: dict = field(default_factory=dict)
    merge_group: MergeGroup | None = None

    # The payload parts a flow that handles one kind of event reads. `parse_event` requires each for its
    # events, so these fail only when a flow is handed an event it does not handle.
    def expect_pull_request(self) -> PullRequest:
        if self.pull_request is None:
            raise InputError(f"a {self.name} event carries no pull request; this command handles pull_request events")
        return self.pull_request

    def expect_workflow_run(self) -> WorkflowRun:
        if self.workflow_run is None:
            raise InputError(f"a {self.name} event carries no workflow run; this command handles workflow_run events")
        return self.workflow_run

    def expect_merge_group(self) -> MergeGroup:
        if self.merge_group is None:
            raise InputError(f"a {self.name} event carries no merge group; this command handles merge_group events")
        return self.merge_group

    @property
    def pr_number(self) -> int | None:
        if self.pull_request is not None:
            return self.pull_request.number
        if self.merge_group is not None:
            return self.merge_group.pr
        return self.issue_number if self.is_pull_request else None


class _Reader:
    def __init__(self, file: str):
        self.file = file

    def fail(self, where: str, what: str) -> InputError:
        return InputError(f"{self.file}: {where}: {what}. Is this the event payload GitHub wrote to "
                          "$GITHUB_EVENT_PATH for this workflow's trigger?")

    def obj(self, data: Any, key: str, where: str) -> dict:
        value = data.get(key) if isinstance(data, dict) else None
        if not isinstance(value, dict):
            raise self.fail(f"{where}.{key}", "missing or not an object")
        return value

    def req(self, data: dict, key: str, where: str, kind: type | tuple = (str,)):
        value = data.get(key)
        if value is None or not isinstance(value, kind) or isinstance(value, bool) and kind is int:
            raise self.fail(f"{where}.{key}", f"missing or not a {getattr(kind, '__name__', kind)}")
        return value

    def login(self, data: dict, key: str, where: str) -> tuple[str, str]:
        user = data.get(key)
        if not isinstance(user, dict) or not isinstance(user.get("login"), str):
            raise self.fail(f"{where}.{key}.login", "missing")
        return user["login"], str(user.get("type") or "User")


def _labels(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(sorted({str(label.get("name")) for label in raw if isinstance(label, dict) and label.get("name")}))


def pull_request_from(data: dict, where: str, r: _Reader) -> PullRequest:
    head = r.obj(data, "head", where)
    base = r.obj(data, "base", where)
    head_repo, base_repo = obj(head.get("repo")), obj(base.get("repo"))
    author = obj(data.get("user")).get("login", "")
    return PullRequest(
        number=r.req(data, "number", where, int), title=str(data.get("title") or ""),
        body=str(data.get("body") or ""), state=str(data.get("state") or "open"), draft=bool(data.get("draft")),
        merged_at=data.get("merged_at"), head_sha=r.req(head, "sha", f"{where}.head"),
        head_ref=str(head.get("ref") or ""), head_repo=str(head_repo.get("full_name") or ""),
        base_ref=str(base.get("ref") or ""), base_repo=str(base_repo.get("full_name") or ""),
        base_sha=str(base.get("sha") or ""),
        labels=_labels(data.get("labels")), author=author, html_url=str(data.get("html_url") or ""))


def comment_from(data: dict, where: str, r: _Reader, kind: str = "comment") -> Comment:
    r.login(data, "user", where)
    r.req(data, "id", where, int)
    return comment_from_json(data, kind)


def workflow_run_from(data: dict, where: str, r: _Reader) -> WorkflowRun:
    r.req(data, "id", where, int)
    return run_from_json(data)


def guess_event_name(data: dict) -> str:
    if "merge_group" in data:
        return "merge_group"
    if "workflow_run" in data:
        return "workflow_run"
    if "review" in data and "pull_request" in data:
        return "pull_request_review"
    if "comment" in data and "issue" in data:
        return "issue_comment"
    if "pull_request" in data:
        return "pull_request"
    if "ref" in data and "commits" in data:
        return "push"
    if "client_payload" in data or "branch" in data and "action" in data:
        return "repository_dispatch"
    return ""


def parse_event(data: Any, name: str | None = None, file: str = "<event>") -> Event:
    r = _Reader(file)
    if not isinstance(data, dict):
        raise r.fail("top level", "not a JSON object")
    name = name or guess_event_name(data)
    if name not in SUPPORTED:
        raise InputError(f"{file}: event {name or '(unknown)'!r} is not one ci-tools handles "
                         f"(supported: {', '.join(SUPPORTED)}); set GITHUB_EVENT_NAME or --event-name")
    common = Event(name=name, action=str(data.get("action") or ""), repo=obj(data.get("repository")).get("full_name", ""),
                   sender=obj(data.get("sender")).get("login", ""))
    if name in ("pull_request", "pull_request_target"):   # the same payload; the name says which token ran
        return replace(common, pull_request=pull_request_from(r.obj(data, "pull_request", "$"), "$.pull_request", r),
                     before=str(data.get("before") or ""), after=str(data.get("after") or ""))
    if name == "pull_request_review":
        pr = pull_request_from(r.obj(data, "pull_request", "$"), "$.pull_request", r)
        return replace(common, pull_request=pr,
                     comment=comment_from(r.obj(data, "review", "$"), "$.review", r, kind="review"))
    if name == "issue_comment":
        issue = r.obj(data, "issue", "$")
        return replace(common, issue_number=r.req(issue, "number", "$.issue", int),
                     is_pull_request=isinstance(issue.get("pull_request"), dict),
                     comment=comment_from(r.obj(data, "comment", "$"), "$.comment", r))
    if name == "workflow_run":
        return replace(common, workflow_run=workflow_run_from(r.obj(data, "workflow_run", "$"), "$.workflow_run", r))
    if name == "merge_group":
        mg = r.obj(data, "merge_group", "$")
        return replace(common, merge_group=MergeGroup(head_sha=r.req(mg, "head_sha", "$.merge_group"),
                                                      head_ref=r.req(mg, "head_ref", "$.merge_group"),
                                                      base_sha=str(mg.get("base_sha") or ""),
                                                      base_ref=str(mg.get("base_ref") or "")),
                     after=str(mg.get("head_sha")))
    if name == "push":
        head = obj(data.get("head_commit"))
        return replace(common, ref=r.req(data, "ref", "$"), after=r.req(data, "after", "$"),
                     before=str(data.get("before") or ""),
                     head_message=str(head.get("message") or ""))
    payload = data.get("client_payload")
    if payload is not None and not isinstance(payload, dict):
        raise r.fail("$.client_payload", "not an object")
    return replace(common, dispatch_type=str(data.get("action") or data.get("event_type") or ""),
                 client_payload=payload or {})


def load_event(path: str | os.PathLike | None = None, name: str | None = None) -> Event:
    """Read the event file (default `$GITHUB_EVENT_PATH`, name from `$GITHUB_EVENT_NAME`)."""
    path = path or os.environ.get("GITHUB_EVENT_PATH")
    if not path:
        raise InputError("no event file: pass --event-path or set GITHUB_EVENT_PATH", exit_code=2)
    name = name or os.environ.get("GITHUB_EVENT_NAME") or None
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{file}: event file not found", exit_code=2) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{file}: cannot read the event file: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{file}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
    return parse_event(data, name, file)
