"""A PR's issue timeline (`GET /issues/{n}/timeline`) as plain data.

One paginated list gives the four things the reuse, staging, approval and sticky-comment decisions
need: comments (with author association), label history, the PR's commits and the events that moved
its head branch (force pushes, the branch deleted or restored, each at GitHub's time). Reading it
once replaces three separate lists (comments, issue events, PR commits) and keeps the call budget small.
"""

from __future__ import annotations

from ci_tools.github.models import HEAD_EVENTS, Comment, HeadEvent, LabelEvent, Timeline, comment_from_json


def timeline_from_api(items: list[dict]) -> Timeline:
    comments: list[Comment] = []
    labels: list[LabelEvent] = []
    commits: list[str] = []
    heads: list[HeadEvent] = []
    for item in items:
        kind = item.get("event")
        if kind == "commented":
            comments.append(comment_from_json(item))
        elif kind in ("labeled", "unlabeled"):
            name = (item.get("label") or {}).get("name")
            if name:
                labels.append(LabelEvent(label=str(name), added=kind == "labeled",
                                         created_at=str(item.get("created_at") or "")))
        elif kind == "committed" and item.get("sha"):
            commits.append(str(item["sha"]))
        elif kind in HEAD_EVENTS:
            heads.append(HeadEvent(kind=str(kind), created_at=str(item.get("created_at") or "")))
    return Timeline(tuple(comments), tuple(labels), tuple(commits), tuple(heads))
