"""The few webhook payload fields the gate needs, extracted from a parsed payload. Pure.

The GitHub layer (ci_tools.github) reads much more of the event; the planner only needs this, and
keeping the extractor here keeps `ci-tools plan --gate-only` free of GitHub imports.
"""

from __future__ import annotations

from typing import Any

from ci_tools.errors import InputError
from ci_tools.github.fork import is_fork
from ci_tools.sweep.gate import GateEvent


def _get(payload: Any, path: str, file: str, kind: type | tuple[type, ...], required: bool = True) -> Any:
    value = payload
    for part in path.split("."):
        if not isinstance(value, dict):
            value = None
            break
        value = value.get(part)
    if value is None:
        if required:
            raise InputError(f"{file}: malformed event payload: `{path}` is missing; is this the webhook payload of "
                             "the event named by --event-name?")
        return None
    if not isinstance(value, kind):
        raise InputError(f"{file}: malformed event payload: `{path}` should be "
                         f"{kind.__name__ if isinstance(kind, type) else ' or '.join(k.__name__ for k in kind)}, "
                         f"not {type(value).__name__}")
    return value


def infer_event_name(payload: dict) -> str | None:
    if "pull_request" in payload:
        return "pull_request"
    if "before" in payload and "after" in payload and "ref" in payload:
        return "push"
    return None


def event_from_payload(payload: Any, event_name: str | None = None, *, file: str = "<event>",
                       run_id: str | None = None, head_message: str | None = None) -> tuple[GateEvent, str | None]:
    """(GateEvent, base commit) from a webhook payload. Raises InputError naming `file` when malformed."""
    if not isinstance(payload, dict):
        raise InputError(f"{file}: malformed event payload: expected a JSON object, got {type(payload).__name__}")
    name = event_name or infer_event_name(payload)
    if name is None:
        raise InputError(f"{file}: cannot tell which event this payload belongs to; pass --event-name "
                         "(GitHub sets $GITHUB_EVENT_NAME)")
    if name in ("pull_request", "pull_request_target"):
        _get(payload, "pull_request", file, dict)
        labels = _get(payload, "pull_request.labels", file, list, required=False) or []
        names = []
        for i, item in enumerate(labels):
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise InputError(f"{file}: malformed event payload: `pull_request.labels[{i}].name` is not a string")
            names.append(item["name"])
        head_repo = _get(payload, "pull_request.head.repo.full_name", file, str, required=False)
        base_repo = _get(payload, "pull_request.base.repo.full_name", file, str, required=False) \
            or _get(payload, "repository.full_name", file, str, required=False)
        number = _get(payload, "pull_request.number", file, int, required=False)
        if number is None:
            number = _get(payload, "number", file, int, required=False)
        event = GateEvent(
            name=name,
            action=_get(payload, "action", file, str),
            label=_get(payload, "label.name", file, str, required=False),
            labels=tuple(names),
            draft=bool(_get(payload, "pull_request.draft", file, bool, required=False)),
            fork=is_fork(head_repo, base_repo),
            head_message=head_message,
            pr_number=number,
            sha=_get(payload, "pull_request.head.sha", file, str),
            run_id=run_id,
        )
        return event, _get(payload, "pull_request.base.sha", file, str, required=False)
    if name == "push":
        message = head_message
        if message is None:
            message = _get(payload, "head_commit.message", file, str, required=False)
        event = GateEvent(name="push", sha=_get(payload, "after", file, str), head_message=message, run_id=run_id)
        return event, _get(payload, "before", file, str, required=False)
    return GateEvent(name=name, run_id=run_id, head_message=head_message), None
