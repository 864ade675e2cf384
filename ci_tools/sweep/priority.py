"""Job priority: a deterministic score for every plan row, from the `priority:` section of the policy.

Pure. The criteria follow InferenceX's `ci-priority.yaml` (spec inferencex-pr-policy.md §7): a base
score, an adjustment per event (a push to main first), per feature of the row (multi-node, agentic,
eval-only, precision, spec-decoding, framework prefix, model prefix) and per PR label (checklist
complete). Arithmetic is decimal, rounded half-up to the policy's quantum, so a score never depends
on float order. Every row also gets a queue token (stable for one run attempt, different for the
next) and, with the skip-queue label on a PR, `skip-queue-pr`: data for an outside queue service,
which nothing in ci-tools acts on.

Unlike InferenceX: model prefixes score by the same rule they are matched by (InferenceX masks by
prefix but scores only an exact key), an unknown criterion in the policy or in a criteria mask is a
located error with a "did you mean", and no LLM classifier can zero every job's priority when it fails.

What GitHub does with the scores (docs/maintainer.md, "Job priority"): rows of one matrix are
created in score order, and nothing else: GitHub documents no ordering among queued jobs.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, TypeVar

from ci_tools.errors import Finding, InputError

if TYPE_CHECKING:        # the gate (`plan --gate-only`) imports this module and needs no row
    from ci_tools.sweep.row import MatrixRow

R = TypeVar("R", bound="MatrixRow")

FLAG_CRITERIA = ("multi-node", "agentic", "eval-only", "checklist-complete")
VALUE_CRITERIA = ("precision", "spec-decoding", "framework-prefix", "model-prefix")
CRITERIA = FLAG_CRITERIA + VALUE_CRITERIA
EVENTS = ("push", "pull_request", "local", "workflow_dispatch", "schedule")
AGENTIC = "agentic-coding"


def _did_you_mean(name: str, known: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _dec(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"{where}: expected a number, got {value!r}")
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise InputError(f"{where}: expected a number, got {value!r}") from None


@dataclass(frozen=True)
class PriorityPolicy:
    """The `priority:` section. Defaults: every row scores `base` (no section: every row equal)."""

    version: int = 1
    quantum: Decimal = Decimal("0.001")
    base: Decimal = Decimal("1")
    events: Mapping[str, Decimal] = field(default_factory=dict)
    flags: Mapping[str, Decimal] = field(default_factory=dict)                  # FLAG_CRITERIA -> adjustment
    values: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)   # VALUE_CRITERIA -> value -> adj.
    checklist_labels: tuple[str, ...] = ()
    skip_queue_label: str | None = None

    def labels(self) -> set[str]:
        """The PR labels this section reads (not sweep labels: they start, stop and cancel nothing)."""
        return set(self.checklist_labels) | ({self.skip_queue_label} if self.skip_queue_label else set())

    def supported_criteria(self) -> set[str]:
        """What a criteria mask may name: the flags and every value the policy adjusts for."""
        return set(FLAG_CRITERIA) | {v for table in self.values.values() for v in table}


def priority_policy(section: Mapping[str, Any] | None, file: str = "ci-policy.yaml") -> PriorityPolicy:
    """The section as data. Unknown criteria or events are InputErrors with a did-you-mean."""
    if not section:
        return PriorityPolicy()
    where = f"{file}: priority"
    version = section.get("version", 1)
    if version != 1:
        raise InputError(f"{where}.version: {version!r} is not a priority policy version this ci-tools reads (1)")
    quantum = _dec(section.get("quantum", "0.001"), f"{where}.quantum")
    if quantum <= 0:
        raise InputError(f"{where}.quantum: must be positive, got {quantum}")
    events = {}
    for name, adj in (section.get("events") or {}).items():
        if name not in EVENTS:
            raise InputError(f"{where}.events: unknown event {name!r}{_did_you_mean(name, EVENTS)}; "
                             f"known: {', '.join(EVENTS)}")
        events[name] = _dec(adj, f"{where}.events.{name}")
    flags: dict[str, Decimal] = {}
    values: dict[str, dict[str, Decimal]] = {}
    for name, adj in (section.get("criteria") or {}).items():
        if name in FLAG_CRITERIA:
            flags[name] = _dec(adj, f"{where}.criteria.{name}")
        elif name in VALUE_CRITERIA:
            if not isinstance(adj, Mapping):
                raise InputError(f"{where}.criteria.{name}: expected a mapping of value -> adjustment")
            values[name] = {str(k): _dec(v, f"{where}.criteria.{name}.{k}") for k, v in adj.items()}
        else:
            raise InputError(f"{where}.criteria: unknown criterion {name!r}{_did_you_mean(name, CRITERIA)}; "
                             f"known: {', '.join(CRITERIA)}")
    labels = section.get("labels") or {}
    checklist = labels.get("checklist-complete") or []
    return PriorityPolicy(version=1, quantum=quantum, base=_dec(section.get("base", 1), f"{where}.base"),
                          events=events, flags=flags, values=values,
                          checklist_labels=tuple(str(x) for x in checklist),
                          skip_queue_label=labels.get("skip-queue"))


@dataclass(frozen=True)
class Context:
    """What the score reads besides the row: the event, the PR's labels, and the run attempt."""

    event: str = "local"
    labels: tuple[str, ...] = ()
    pr: int | None = None
    namespace: str = "local"                 # "<run_id>:<run_attempt>" in CI: tokens differ per attempt
    criteria: tuple[str, ...] | None = None  # a mask: only these features count (None: all of the row's)


def check_criteria(policy: PriorityPolicy, criteria: tuple[str, ...] | None) -> None:
    if criteria is None:
        return
    known = sorted(policy.supported_criteria())
    bad = [c for c in criteria if c not in known]
    if bad:
        raise InputError("unknown priority criteria: " + ", ".join(f"{c!r}{_did_you_mean(c, known)}" for c in bad)
                         + f"; the policy's criteria are {', '.join(known)}")


def _framework_adj(table: Mapping[str, Decimal], framework: str | None) -> tuple[str, Decimal] | None:
    """The first listed prefix that the framework is or starts with (`dynamo-` names list their own)."""
    for prefix, adj in table.items():
        if framework == prefix or (framework or "").startswith(prefix + "-"):
            return prefix, adj
    return None


def features(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row's features the criteria read: flags as booleans, the rest as values."""
    return {"multi-node": row.get("prefill") is not None, "agentic": row.get("scenario-type") == AGENTIC,
            "eval-only": row.get("eval-only") is True, "precision": row.get("precision"),
            "spec-decoding": row.get("spec-decoding"), "framework": row.get("framework"),
            "model-prefix": row.get("model-prefix")}


def score(row: Mapping[str, Any], policy: PriorityPolicy, ctx: Context = Context()) -> Decimal:
    """The row's priority, quantized half-up to the policy's quantum."""
    check_criteria(policy, ctx.criteria)
    mask = None if ctx.criteria is None else set(ctx.criteria)

    def counts(name: str) -> bool:
        return mask is None or name in mask

    f = features(row)
    s = policy.base + policy.events.get(ctx.event, Decimal(0))
    for flag in ("multi-node", "agentic", "eval-only"):
        if f[flag] and counts(flag) and flag in policy.flags:
            s += policy.flags[flag]
    for crit, key in (("precision", "precision"), ("spec-decoding", "spec-decoding"), ("model-prefix", "model-prefix")):
        value = f[key]
        table = policy.values.get(crit, {})
        if value is not None and str(value) in table and counts(str(value)):
            s += table[str(value)]
    hit = _framework_adj(policy.values.get("framework-prefix", {}), f["framework"])
    if hit and counts(hit[0]):
        s += hit[1]
    checklist = bool(set(ctx.labels) & set(policy.checklist_labels)) or (mask is not None and "checklist-complete" in mask)
    if checklist and "checklist-complete" in policy.flags:
        s += policy.flags["checklist-complete"]
    return (s / policy.quantum).quantize(Decimal(1), rounding=ROUND_HALF_UP) * policy.quantum


def text(value: Decimal, policy: PriorityPolicy) -> str:
    """The score as the plan prints it: as many decimals as the quantum has."""
    exponent = policy.quantum.normalize().as_tuple().exponent    # an int: the quantum is a positive number
    places = max(0, -exponent) if isinstance(exponent, int) else 0
    return f"{value:.{places}f}"


def queue_token(namespace: str, path: str, row: Mapping[str, Any]) -> str:
    """32 hex characters naming one job of one run attempt (a runner-side queue keys on it)."""
    body = json.dumps(row, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{namespace}:{path}:{body}".encode()).hexdigest()[:32]


def annotate(rows: list[R], bucket: str, policy: PriorityPolicy, ctx: Context) -> list[R]:
    """The rows with `priority`, `queue-token` (and `skip-queue-pr`), highest priority first.

    Stable: rows of equal priority keep the planner's order. GitHub creates a matrix's jobs in the
    order of its rows, so this is the order a bucket's jobs queue in."""
    skip = ctx.pr is not None and policy.skip_queue_label is not None and policy.skip_queue_label in ctx.labels
    out = []
    for i, row in enumerate(rows):
        plain = {k: v for k, v in row.items() if k not in ("priority", "queue-token", "skip-queue-pr")}
        new = row.replace(priority=text(score(plain, policy, ctx), policy),
                          queue_token=queue_token(ctx.namespace, f"{bucket}/{i}", plain))
        out.append(new.replace(skip_queue_pr=ctx.pr) if skip else new)
    return sorted(out, key=lambda r: -Decimal(r.priority or 0))


def priority_findings(doc) -> list[Finding]:
    """The policy's `priority:` section (a `YamlDoc`): its schema (located, with a did-you-mean), then
    the scorer's reading."""
    from ci_tools.config.schemas import policy_section_findings

    problems = policy_section_findings(doc, "priority")
    if problems or not isinstance(doc.data, dict) or doc.data.get("priority") is None:
        return problems
    try:
        priority_policy(doc.data["priority"], doc.file)
    except InputError as exc:
        return [doc.finding(("priority",), exc.message)]
    return []


def config_findings(checked, findings: list[Finding]) -> list[Finding]:
    """`config validate`'s check of the policy's `priority:` section (a `config.validate.UpperCheck`)."""
    return priority_findings(checked.src.policy) if checked.src.policy is not None else []
