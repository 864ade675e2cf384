"""The sweep labels a repository needs on GitHub, from the policy, and what to change (pure).

`ci-tools bot labels` creates the labels `inferencex-e2e/ci-policy.yaml` names, with a colour per kind
and a description of what each does (GitHub shows it in the label picker), and updates those whose
colour or description differ. Labels the policy does not name are left alone: a repository has its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_tools.github.models import Label as RepoLabel
from ci_tools.prbot import messages

PRIMARY_COLOUR = "0e8a16"      # the labels that start a sweep
MODIFIER_COLOUR = "1d76db"     # the labels that adjust one
MAX_DESCRIPTION = 100          # GitHub refuses a longer label description


@dataclass(frozen=True)
class Label:
    name: str
    colour: str
    description: str


def _fit(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION - 1] + "…"


def wanted(policy) -> list[Label]:
    """Every label of the policy: primary first (the recommended one says so), then the modifiers."""
    out = []
    for name, rule in policy.primary.items():
        what, _ = messages.label_what(rule)
        out.append(Label(name, PRIMARY_COLOUR, _fit(f"Sweep: {what}" + (" (recommended)" if rule.recommended else ""))))
    for name, rule in policy.modifiers.items():
        out.append(Label(name, MODIFIER_COLOUR, _fit("Modifier: " + messages.modifier_what(rule))))
    return out


@dataclass(frozen=True)
class Change:
    action: str        # "create" | "update" | "keep"
    label: Label


def changes(want: list[Label], have: list[RepoLabel]) -> list[Change]:
    """What to do for each wanted label against the repository's. GitHub matches label names without
    regard to case."""
    by_name = {h.name.lower(): h for h in have}
    out = []
    for w in want:
        h = by_name.get(w.name.lower())
        if h is None:
            out.append(Change("create", w))
        elif h.color.lower() != w.colour or h.description != w.description or h.name != w.name:
            out.append(Change("update", w))
        else:
            out.append(Change("keep", w))
    return out
