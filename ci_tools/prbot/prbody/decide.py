"""The pull-request body check: is the AI model disclosure filled in and every checklist item ticked?

Reported as a failing check listing what is missing (no comment, no API call: the body is in the
event payload). Sections are found by heading text, so the check follows `.github/pull_request_template.md`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PLACEHOLDERS = {"", "fill_in", "fill in", "tbd", "todo", "n/a?", "..."}
_HEADING = re.compile(r"^\s*(?:#{1,6}\s*|\*\*)?(.+?)(?:\*\*)?\s*:?\s*$")
_ITEM = re.compile(r"^\s*[-*]\s+\[( |x|X)\]\s+(.*\S)\s*$")
_COMMENT = re.compile(r"<!--.*?-->", re.S)


def _sections(body: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in _COMMENT.sub("", body.replace("\r\n", "\n")).split("\n"):
        if line.lstrip().startswith("#"):
            heading = _HEADING.match(line)     # matches every line that is not blank
            current = (heading.group(1) if heading else line).strip().lower()
            sections.setdefault(current, [])
        elif current is not None:
            sections[current].append(line)
    return sections


def _field(lines: list[str], name: str) -> str | None:
    for line in lines:
        m = re.match(rf"^\s*[-*]?\s*{name}\s*:\s*(.*)$", line, re.I)
        if m:
            return m.group(1).strip().strip("`")
    return None


@dataclass(frozen=True)
class BodyCheck:
    missing: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.missing


def check_body(body: str | None) -> BodyCheck:
    sections = _sections(body or "")
    missing: list[str] = []
    disclosure = next((v for k, v in sections.items() if k.startswith("ai model disclosure")), None)
    if disclosure is None:
        missing.append("the `## AI model disclosure` section (copy it from the pull-request template)")
    else:
        model = _field(disclosure, "model(?:/version)?")
        role = _field(disclosure, "role")
        if model is None or model.lower() in PLACEHOLDERS:
            missing.append("AI model disclosure: fill in `Model/version:` (write `none` if no AI model was used)")
        elif model.lower() != "none" and (role is None or role.lower() in PLACEHOLDERS):
            missing.append("AI model disclosure: fill in `Role:` (what the model did in this PR)")
    checklist = sections.get("checklist")
    if checklist is None:
        missing.append("the `## Checklist` section (copy it from the pull-request template)")
    else:
        items = [(m.group(1), m.group(2)) for line in checklist if (m := _ITEM.match(line))]
        if not items:
            missing.append("the checklist has no `- [ ]` items")
        for mark, text in items:
            if mark == " ":
                missing.append(f"checklist item not ticked: {text[:100]}")
    return BodyCheck(tuple(missing))
