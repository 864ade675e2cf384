"""A PR's issue timeline (`GET /issues/{n}/timeline`) as plain data.

One paginated list gives the three things the reuse, staging and sticky-comment decisions need:
comments (with author association), label history and the PR's commits. Reading it once replaces
three separate lists (comments, issue events, PR commits) and keeps the call budget small.
"""

from __future__ import annotations

from ci_tools.github.models import Comment, LabelEvent, Timeline, comment_from_json


def timeline_from_api(items: list[dict]) -> Timeline:
    comments: list[Comment] = []
    labels: list[LabelEvent] = []
    commits: list[str] = []
    force_pushes: list[str] = []
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
        elif kind == "head_ref_force_pushed":
            force_pushes.append(str(item.get("created_at") or ""))
    return Timeline(tuple(comments), tuple(labels), tuple(commits), tuple(force_pushes))
