"""The sweep-label policy (`inferencex-e2e/ci-policy.yaml`) as plain data.

Label names are spelled only in that file. Code asks this module what a label does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ci_tools.errors import Finding, InputError
from ci_tools.sweep.priority import PriorityPolicy, priority_policy
from ci_tools.yaml.located import YamlDoc
from ci_tools.config.images import allowlist_of


@dataclass(frozen=True)
class PrimaryLabel:
    name: str
    scope: str          # "full" | "trimmed"
    canary: bool
    fail_fast: bool
    reusable: bool
    recommended: bool = False


@dataclass(frozen=True)
class ModifierLabel:
    name: str
    blocks_reuse: bool
    evals: str | None = None          # "all" | "only" | None
    agentx_profile: str | None = None  # "fast" | None


# Eval families only: a cancelled or failed eval leaves the benchmark results of a run intact.
DEFAULT_OPTIONAL_JOBS = ("evals", "agentic-evals", "multi-node-evals", "multi-node-agentic-evals")


@dataclass(frozen=True)
class ReusePolicy:
    """The `reuse:` section: what a pin must satisfy before merge and what main does when it cannot."""

    artifact_margin_days: int = 7
    on_refused: str = "sweep"          # "sweep" | "fail"
    optional_jobs: tuple[str, ...] = DEFAULT_OPTIONAL_JOBS

    @property
    def main_sweeps_on_refusal(self) -> bool:
        return self.on_refused == "sweep"


@dataclass(frozen=True)
class Policy:
    repository: str
    primary: dict[str, PrimaryLabel] = field(default_factory=dict)
    modifiers: dict[str, ModifierLabel] = field(default_factory=dict)
    # seconds per AgentX profile ("default", "fast") and per fixed-seq point / eval job (plan estimates)
    agentx_profiles: dict[str, int] = field(default_factory=lambda: {"default": 3600, "fast": 1200})
    fixed_seq_seconds: int = 900
    eval_seconds: int = 1800
    compare: dict = field(default_factory=dict)  # the `compare:` section, read by results/compare.Policy
    reuse: ReusePolicy = field(default_factory=ReusePolicy)
    performance_relevant: tuple[str, ...] = ()   # `performance-relevant:` globs (`*` also matches `/`)
    priority: PriorityPolicy = field(default_factory=PriorityPolicy)   # `priority:` (sweep/priority.py)
    images: tuple[str, ...] | None = None        # `images.allowed` (config/images.py); None: no allowlist

    def recommended(self) -> str | None:
        return next((n for n, p in self.primary.items() if p.recommended), None)

    def unknown_in(self, labels: Iterable[str]) -> list[str]:
        return sorted(label for label in set(labels) if label not in self.primary and label not in self.modifiers)

    def unknown_note(self, labels: Iterable[str]) -> str | None:
        """For labels a person pasted (`plan --label`): the ones the policy does not name, which CI ignores
        as well, with a "did you mean" for a near miss; None when every label is a sweep label."""
        # the priority labels (skip-queue, checklist complete) are read by the plan, not ignored
        unknown = [label for label in self.unknown_in(labels) if label not in self.priority.labels()]
        if not unknown:
            return None
        import difflib

        known = sorted(self.relevant())
        named = []
        for label in unknown:
            close = difflib.get_close_matches(label, known, n=1, cutoff=0.75)
            named.append(label + (f" (did you mean {close[0]}?)" if close else ""))
        return (f"label(s) {', '.join(named)} are not sweep labels, so the plan ignores them as CI does. "
                f"Primary labels (pick one): {', '.join(self.primary)}; modifiers: {', '.join(self.modifiers)}")

    def primaries_in(self, labels: Iterable[str]) -> list[str]:
        return sorted(label for label in set(labels) if label in self.primary)

    def modifiers_in(self, labels: Iterable[str]) -> list[str]:
        return sorted(label for label in set(labels) if label in self.modifiers)

    def reuse_blockers_in(self, labels: Iterable[str]) -> list[str]:
        return sorted(label for label in self.modifiers_in(labels) if self.modifiers[label].blocks_reuse)

    def reusable_primaries(self) -> list[str]:
        return sorted(name for name, p in self.primary.items() if p.reusable)

    def relevant(self) -> set[str]:
        return set(self.primary) | set(self.modifiers)


def policy_from_data(data: dict, file: str = "ci-policy.yaml") -> Policy:
    labels = data["labels"]
    primary = {name: PrimaryLabel(name=name, scope=v["scope"], canary=v["canary"], fail_fast=v["fail-fast"],
                                  reusable=v["reusable"], recommended=v.get("recommended", False))
               for name, v in labels["primary"].items()}
    modifiers = {name: ModifierLabel(name=name, blocks_reuse=v.get("blocks-reuse", False), evals=v.get("evals"),
                                     agentx_profile=v.get("agentx-profile"))
                 for name, v in labels.get("modifiers", {}).items()}
    profiles = {str(k): int(v) for k, v in (data.get("agentx-profiles") or {"default": 3600, "fast": 1200}).items()}
    estimates = data.get("estimates") or {}
    return Policy(repository=data.get("repository", ""), primary=primary, modifiers=modifiers,
                  agentx_profiles=profiles, fixed_seq_seconds=int(estimates.get("fixed-seq-len-seconds", 900)),
                  eval_seconds=int(estimates.get("eval-seconds", 1800)), compare=dict(data.get("compare") or {}),
                  reuse=reuse_policy(data.get("reuse") or {}),
                  performance_relevant=tuple(p for p in data.get("performance-relevant") or () if isinstance(p, str)),
                  priority=priority_policy(data.get("priority"), file),
                  images=allowlist_of(data))


def reuse_policy(section: dict) -> ReusePolicy:
    d = ReusePolicy()
    return ReusePolicy(artifact_margin_days=int(section.get("artifact-margin-days", d.artifact_margin_days)),
                       on_refused=str(section.get("on-refused-reuse", d.on_refused)),
                       optional_jobs=tuple(section.get("optional-jobs", d.optional_jobs)))


# The sections read here whose numbers the schema bounds: a huge value (an estimate of 10^12 s, a compare
# history of 10^9 results) is a located error on every read and in `config validate`, never a check
# switched off or a figure that overflows. priority: has its own check (priority.priority_findings).
CHECKED_SECTIONS = ("agentx-profiles", "estimates", "reuse", "compare")


def section_findings(doc: YamlDoc) -> list[Finding]:
    """CHECKED_SECTIONS of a policy document against their schema (located, with a did-you-mean)."""
    from ci_tools.config import schemas

    out: list[Finding] = []
    data = doc.data if isinstance(doc.data, dict) else {}
    for section in CHECKED_SECTIONS:
        if data.get(section) is not None and schemas.is_valid("ci-policy", section, data[section]) is not True:
            out += schemas.policy_section_findings(doc, section)
    return out


def config_findings(checked, findings: list[Finding]) -> list[Finding]:
    """`config validate`'s check of CHECKED_SECTIONS (a `config.validate.UpperCheck`)."""
    return section_findings(checked.src.policy) if checked.src.policy is not None else []


def policy_from_doc(doc: YamlDoc) -> Policy:
    """A parsed policy file; shape errors become InputErrors naming the file (schema: ci-policy.schema.json)."""
    problems = section_findings(doc)
    if problems:
        raise InputError(f"{doc.file}: the policy is not valid: {problems[0].message}", findings=problems)
    try:
        return policy_from_data(doc.data, doc.file)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise InputError(f"{doc.file}: malformed policy file ({type(exc).__name__}: {exc!s}); "
                         "see ci_tools/schemas/ci-policy.schema.json") from None


def policy_from_text(text: str, file: str) -> Policy:
    """A policy file's contents (e.g. read from a git object), named `file` in messages."""
    from ci_tools.yaml.located import load_yaml_text

    return policy_from_doc(load_yaml_text(text, file))
