"""GitHub's objects as plain data: a pull request, its comments, runs and timeline.

The adapter modules of this package (events, the client, the timeline) parse GitHub's JSON into these
once; the decisions in `ci_tools/prbot/` and `ci_tools/sweep/` take them as plain data. This module is
core (no I/O; it imports only `fork.py`): it lives with the adapter because GitHub's object models belong to the floor
that talks to GitHub, so the packages above import them and the adapter imports nothing above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ci_tools.github.fork import is_fork

# The permission of a user the collaborator-permission endpoint answers 404 for (GitHub does for some
# users who are not collaborators): `GitHub.permission` returns it; the bot says it as "no permission"
# (`prbot.messages.permission_of`).
PERMISSION_NOT_FOUND = "not-found"


@dataclass(frozen=True)
class PullRequest:
    number: int
    title: str = ""
    body: str = ""
    state: str = "open"
    draft: bool = False
    merged_at: str | None = None
    head_sha: str = ""
    head_ref: str = ""
    head_repo: str = ""
    base_ref: str = ""
    base_repo: str = ""
    base_sha: str = ""
    labels: tuple[str, ...] = ()
    author: str = ""
    html_url: str = ""

    @property
    def fork(self) -> bool:
        return is_fork(self.head_repo, self.base_repo)


@dataclass(frozen=True)
class Comment:
    """An issue comment or a review body: both can carry commands and sign-offs."""

    id: int
    body: str
    author: str
    author_type: str = "User"          # "User" | "Bot"
    association: str = "NONE"
    created_at: str = ""
    updated_at: str = ""
    html_url: str = ""
    kind: str = "comment"              # "comment" | "review"
    node_id: str = ""                  # the GraphQL id: its edit history is read through it
    commit_id: str = ""                # a review: the commit it reviewed (GitHub's `commit_id`)
    review_state: str = ""             # a review: APPROVED, COMMENTED, CHANGES_REQUESTED, DISMISSED or PENDING
    issue_url: str = ""                # an issue comment: the API URL of the issue or PR it is on


@dataclass(frozen=True)
class EditHistory:
    """The edit history GitHub keeps of a comment or review body (GraphQL `userContentEdits`)."""

    author: str = ""
    last_edited_at: str | None = None            # None: never edited
    editors: tuple[str | None, ...] = ()         # each listed edit's editor, newest first (None: a deleted account)


@dataclass(frozen=True)
class WorkflowRun:
    id: int
    name: str = ""
    path: str = ""
    event: str = ""
    status: str = ""
    conclusion: str | None = None
    head_sha: str = ""
    head_branch: str = ""
    run_attempt: int = 1
    html_url: str = ""
    created_at: str = ""
    pull_requests: tuple[int, ...] = ()
    repository: str = ""               # OWNER/NAME the run ran in
    head_repository: str = ""          # OWNER/NAME of its head commit (a fork, for a fork PR's own run)
    display_title: str = ""            # the run name (a trusted sweep's names its PR and commit)


@dataclass(frozen=True)
class Artifact:
    id: int
    name: str
    expired: bool = False
    expires_at: str = ""               # when GitHub deletes it (ISO 8601; "" when not said)


@dataclass(frozen=True)
class Comparison:
    """`GET /compare/{base}...{head}`: how head relates to base and the files changed (GitHub lists at
    most 300 and silently leaves out the rest)."""

    status: str = ""                   # "ahead" | "behind" | "identical" | "diverged"
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Job:
    """A job of a run's latest attempt (a called workflow's jobs are named `caller / job`)."""

    name: str
    status: str = ""                   # "queued" | "waiting" | "in_progress" | "completed" | ...
    conclusion: str | None = None
    html_url: str = ""
    labels: tuple[str, ...] = ()       # its `runs-on` labels (the runner digest's queue)
    created_at: str = ""
    started_at: str = ""


@dataclass(frozen=True)
class Commit:
    """A commit as the sign-off reads it: its tree (equal trees, equal files, whatever the history)."""

    sha: str
    tree_sha: str


@dataclass(frozen=True)
class CheckRun:
    id: int
    name: str
    head_sha: str = ""
    status: str = ""
    conclusion: str | None = None
    title: str = ""                    # its output's title and Markdown summary
    summary: str = ""
    details_url: str = ""
    app: str = ""                      # the slug of the GitHub App that made it ("github-actions" for a job's token)
    started_at: str = ""               # ISO 8601, GitHub's clock where the writer sent none
    completed_at: str = ""


@dataclass(frozen=True)
class Label:
    """A repository label as GitHub holds it (`color`: six hex digits, no `#`)."""

    name: str
    color: str = ""
    description: str = ""


@dataclass(frozen=True)
class LabelEvent:
    label: str
    added: bool
    created_at: str


# The timeline events that move a PR's head branch, with GitHub's own time of the change. A plain push
# has none: its `committed` items carry the commit's dates, which the pusher chooses.
HEAD_EVENTS = ("head_ref_force_pushed", "head_ref_deleted", "head_ref_restored")


@dataclass(frozen=True)
class HeadEvent:
    kind: str                          # one of HEAD_EVENTS
    created_at: str                    # when GitHub recorded it


@dataclass(frozen=True)
class Timeline:
    comments: tuple[Comment, ...] = ()
    label_events: tuple[LabelEvent, ...] = ()
    commits: tuple[str, ...] = ()      # the PR's commits, as GitHub lists them now (a force push drops the old ones)
    head_events: tuple[HeadEvent, ...] = ()

    @property
    def force_pushes(self) -> tuple[str, ...]:
        """When the head branch was force-pushed (`head_ref_force_pushed`)."""
        return tuple(e.created_at for e in self.head_events if e.kind == "head_ref_force_pushed")


def timestamp(value: str | None) -> datetime | None:
    """One of GitHub's ISO 8601 times (`2026-10-01T00:00:00Z`), or None when empty or unreadable."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def obj(value: object) -> dict:
    """A JSON value where GitHub sends an object: itself, or {} for anything else (null, absent)."""
    return value if isinstance(value, dict) else {}


def _full_name(repo: object) -> str:
    return str(repo.get("full_name") or "") if isinstance(repo, dict) else ""


def run_from_json(data: dict) -> WorkflowRun:
    """A workflow run object of GitHub's REST API or webhook payload (its `id` already checked)."""
    prs = tuple(p["number"] for p in data.get("pull_requests") or [] if isinstance(p, dict)
                and isinstance(p.get("number"), int))
    return WorkflowRun(
        id=int(data["id"]), name=str(data.get("name") or ""), path=str(data.get("path") or ""),
        event=str(data.get("event") or ""), status=str(data.get("status") or ""), conclusion=data.get("conclusion"),
        head_sha=str(data.get("head_sha") or ""), head_branch=str(data.get("head_branch") or ""),
        run_attempt=data["run_attempt"] if isinstance(data.get("run_attempt"), int) else 1,
        html_url=str(data.get("html_url") or ""), created_at=str(data.get("created_at") or ""), pull_requests=prs,
        repository=_full_name(data.get("repository")), head_repository=_full_name(data.get("head_repository")),
        display_title=str(data.get("display_title") or ""))


def comment_from_json(data: dict, kind: str = "comment") -> Comment:
    """An issue comment, a timeline `commented` item or a review (`kind="review"`: its `submitted_at` is
    when it was made, and `commit_id` the commit it reviewed), its `id` already checked."""
    user = obj(data.get("user"))
    return Comment(id=int(data["id"]), body=str(data.get("body") or ""), author=str(user.get("login") or ""),
                   author_type=str(user.get("type") or "User"), association=str(data.get("author_association") or "NONE"),
                   created_at=str(data.get("created_at") or data.get("submitted_at") or ""),
                   updated_at=str(data.get("updated_at") or data.get("submitted_at") or ""),
                   html_url=str(data.get("html_url") or ""), kind=kind, node_id=str(data.get("node_id") or ""),
                   commit_id=str(data.get("commit_id") or "") if kind == "review" else "",
                   # the REST API spells the state upper-case, webhook payloads lower-case
                   review_state=str(data.get("state") or "").upper() if kind == "review" else "",
                   issue_url=str(data.get("issue_url") or ""))


def artifact_from_json(data: dict) -> Artifact:
    return Artifact(id=int(data["id"]), name=str(data.get("name") or ""), expired=bool(data.get("expired")),
                    expires_at=str(data.get("expires_at") or ""))


def comparison_from_json(data: object) -> Comparison:
    data = data if isinstance(data, dict) else {}
    files = tuple(str(f.get("filename") or "") for f in data.get("files") or [] if isinstance(f, dict))
    return Comparison(status=str(data.get("status") or ""), files=files)


def named_artifact(artifacts: list[Artifact], name: str) -> Artifact | None:
    """The run's artifact of that name that GitHub still lists as downloadable."""
    return next((a for a in artifacts if a.name == name and not a.expired), None)


def commit_from_json(data: dict) -> Commit:
    """`GET /commits/{ref}`: its tree is under `commit.tree.sha` (a KeyError-free read; "" when absent)."""
    return Commit(sha=str(data.get("sha") or ""), tree_sha=str(obj(obj(data.get("commit")).get("tree")).get("sha") or ""))


def check_run_from_json(data: dict) -> CheckRun:
    output = obj(data.get("output"))
    conclusion = data.get("conclusion")
    return CheckRun(id=int(data["id"]), name=str(data.get("name") or ""), head_sha=str(data.get("head_sha") or ""),
                    status=str(data.get("status") or ""), conclusion=str(conclusion) if conclusion else None,
                    title=str(output.get("title") or ""), summary=str(output.get("summary") or ""),
                    details_url=str(data.get("details_url") or ""), app=str(obj(data.get("app")).get("slug") or ""),
                    started_at=str(data.get("started_at") or ""), completed_at=str(data.get("completed_at") or ""))


def label_from_json(data: dict) -> Label:
    return Label(name=str(data.get("name") or ""), color=str(data.get("color") or ""),
                 description=str(data.get("description") or ""))


def timeline_from_json(items: list[dict]) -> Timeline:
    """A PR's issue timeline (`GET /issues/{n}/timeline`, every page): one list gives the comments (with
    author association), the label history, the PR's commits and the events that moved its head branch
    (force pushes, the branch deleted or restored, each at GitHub's time), so reading it once replaces
    three lists (comments, issue events, PR commits) and keeps the call budget small."""
    comments: list[Comment] = []
    labels: list[LabelEvent] = []
    commits: list[str] = []
    heads: list[HeadEvent] = []
    for item in items:
        kind = item.get("event")
        if kind == "commented":
            comments.append(comment_from_json(item))
        elif kind in ("labeled", "unlabeled"):
            name = obj(item.get("label")).get("name")
            if name:
                labels.append(LabelEvent(label=str(name), added=kind == "labeled",
                                         created_at=str(item.get("created_at") or "")))
        elif kind == "committed" and item.get("sha"):
            commits.append(str(item["sha"]))
        elif kind in HEAD_EVENTS:
            heads.append(HeadEvent(kind=str(kind), created_at=str(item.get("created_at") or "")))
    return Timeline(tuple(comments), tuple(labels), tuple(commits), tuple(heads))


def job_from_json(data: dict) -> Job:
    conclusion = data.get("conclusion")
    return Job(name=str(data.get("name") or "?"), status=str(data.get("status") or ""),
               conclusion=str(conclusion) if conclusion else None, html_url=str(data.get("html_url") or ""),
               labels=tuple(str(x) for x in data.get("labels") or [] if isinstance(x, str)),
               created_at=str(data.get("created_at") or ""), started_at=str(data.get("started_at") or ""))
