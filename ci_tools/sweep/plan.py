"""A sweep plan from the gate decision, the appended changelog entries and the master configs.

Pure: the CLI reads git, files and the event; this module only computes. The changelog algorithm
follows InferenceX's `process_changelog.py` (spec §3.4): entries with `all-evals` first; per entry,
each config's scenarios not yet generated for throughput (resp. evals) are expanded, grouped by that
scenario tuple; eval rows use the eval generator's `--evals-only` selection (agentic evals included);
append-only entries run only the base->head delta and no evals. Unlike InferenceX it runs the
generator in-process, once per group, instead of two subprocesses per group.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ci_tools.errors import Finding, InputError
from ci_tools.sweep import buckets as bk
from ci_tools.sweep.appendonly import append_only_delta, validate_scope
from ci_tools.sweep.gate import GateDecision, SweepMode
from ci_tools.sweep.labels import Policy
from ci_tools.sweep.matrix import SCENARIOS, Filters, KeyedRow, expand, select_evals
from ci_tools.sweep.priority import Context, annotate
from ci_tools.sweep.row import MatrixRow, MultiNodeRow, SingleNodeRow


@dataclass
class PlanEntry:
    """One appended changelog entry with its config keys already resolved against the masters."""

    index: int
    line: int | None
    data: dict
    keys: list[str]

    def meta(self) -> dict:
        """The entry as the plan's JSON lists it."""
        meta = {"number": self.index + 1, "line": self.line, "config-keys": list(self.data.get("config-keys") or []),
                "resolved": list(self.keys), "pr-link": self.data.get("pr-link")}
        for flag in ("evals-only", "all-evals", "append-only", "eval-min-prefill-ep", "scenario-type"):
            if flag in self.data:
                meta[flag] = self.data[flag]
        return meta


@dataclass
class Masters:
    entries: Mapping[str, Mapping[str, Any]]
    hardware: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)     # config key -> the master file it is in


def _flag(entry: PlanEntry, name: str) -> bool:
    return bool(entry.data.get(name, False))


def _where(entry: PlanEntry) -> str:
    return f"changelog entry {entry.index + 1}" + (f" (line {entry.line})" if entry.line else "")


def _group_unseen(keys: list[str], scenarios: tuple[str, ...], seen: dict[str, set[str]]) -> list[tuple[tuple[str, ...], list[str]]]:
    groups: dict[tuple[str, ...], list[str]] = {}
    for key in keys:
        unseen = tuple(s for s in SCENARIOS if s in scenarios and s not in seen.get(key, set()))
        if unseen:
            groups.setdefault(unseen, []).append(key)
    return list(groups.items())


def _filter_prefill_ep(rows: list[KeyedRow], min_ep: Any) -> list[KeyedRow]:
    if min_ep is None:
        return rows
    out = []
    for r in rows:
        if not isinstance(r.row, MultiNodeRow):
            out.append(r)
            continue
        ep = r.row["prefill"].get("ep", 1)      # as the master wrote it: an entry may hold anything here
        if isinstance(ep, int) and not isinstance(ep, bool) and ep >= min_ep:
            out.append(r)
    return out


def changelog_rows(entries: list[PlanEntry], head: Masters, mode: SweepMode,
                   base: Masters | None = None) -> tuple[list[KeyedRow], list[KeyedRow]]:
    """(benchmark rows, eval rows) for the appended entries, before trimming and canary selection."""
    if not entries:
        return [], []
    append_only = [e for e in entries if _flag(e, "append-only")]
    if append_only and len(append_only) != len(entries):
        raise InputError("append-only entries cannot share a sweep with regular changelog entries: "
                         f"{', '.join(_where(e) for e in append_only)} is append-only, the others are not")
    if append_only and (mode.all_evals or mode.evals_only):
        raise InputError("append-only sweeps cannot use the all-evals or evals-only labels; remove the modifier")
    for e in entries:
        missing = [k for k in e.keys if k not in head.entries]
        if missing:
            raise InputError(f"{_where(e)}: config key(s) not in the master configs: {', '.join(missing)}")
    if append_only:
        if base is None:
            raise InputError("append-only entries need the base revision's master configs")
        selected: dict[str, tuple] = {}
        for e in entries:
            scen = tuple(e.data.get("scenario-type") or SCENARIOS)
            for k in e.keys:
                selected[k] = tuple(sorted(set(selected.get(k, ())) | set(scen)))
        validate_scope(base.entries, head.entries, selected)

    ordered = sorted(entries, key=lambda e: not _flag(e, "all-evals"))
    bench_seen: dict[str, set[str]] = {}
    eval_seen: dict[str, set[str]] = {}
    bench: list[KeyedRow] = []
    evals: list[KeyedRow] = []
    for e in ordered:
        scenarios = tuple(e.data.get("scenario-type") or SCENARIOS)
        expand_all = mode.all_evals or _flag(e, "all-evals")
        suppress = mode.evals_only or _flag(e, "evals-only") or _flag(e, "all-evals")
        if not suppress:
            for unseen, keys in _group_unseen(e.keys, scenarios, bench_seen):
                f = Filters(config_keys=tuple(keys), scenario_types=unseen)
                rows = expand(head.entries, head.hardware, f)
                if _flag(e, "append-only"):
                    assert base is not None             # checked above: append-only entries need it
                    rows = append_only_delta(expand(base.entries, base.hardware, f), rows)
                bench.extend(rows)
                for k in keys:
                    bench_seen.setdefault(k, set()).update(unseen)
        if _flag(e, "append-only"):
            continue
        for unseen, keys in _group_unseen(e.keys, scenarios, eval_seen):
            rows = expand(head.entries, head.hardware, Filters(config_keys=tuple(keys), scenario_types=unseen))
            rows = select_evals(rows, all_evals=expand_all, evals_only=True)
            evals.extend(_filter_prefill_ep(rows, e.data.get("eval-min-prefill-ep")))
            for k in keys:
                eval_seen.setdefault(k, set()).update(unseen)
    return bench, evals


# ---- estimates ------------------------------------------------------------------------------------

def seconds(row: MatrixRow, policy: Policy) -> int:
    if row.eval_only:
        return policy.eval_seconds
    if row.is_agentic:
        return int(row.duration or policy.agentx_profiles["default"])
    return policy.fixed_seq_seconds * len(row.concs)


def _parallelism(row: MatrixRow) -> str:
    def one(tp: Any, ep: Any, dpa: Any) -> str:
        if dpa and ep == tp:
            return f"DEP{tp}"
        return f"TP{tp} EP{1 if ep is None else ep}" + (" DPA" if dpa else "")
    if isinstance(row, MultiNodeRow):
        p, d = row.prefill, row.decode
        return f"{p.num_worker}P {one(p.tp, p.ep, p.dp_attn)} + {d.num_worker}D {one(d.tp, d.ep, d.dp_attn)}"
    assert isinstance(row, SingleNodeRow)
    return one(row.tp, row.ep, row.dp_attn)


@dataclass(frozen=True)
class Job:
    """One GPU job of a plan: a benchmark point, a canary (the point itself or a smoke run) or an eval
    row. `--format json` lists them under `points` (the name tools already read)."""

    config_key: str
    bucket: str
    scenario: str
    runner: str | None
    parallelism: str
    tp: Any
    ep: Any
    dp_attn: Any
    conc: Any
    gpus: int
    seconds: int
    gpu_hours: float
    canary: bool
    canary_kind: str | None
    profile: str
    eval: bool
    exp_name: str | None
    priority: str | None = None          # the row's score (sweep/priority.py); higher is created first

    @property
    def measures_point(self) -> bool:
        """A benchmark point is measured by this job (not an eval row, not a smoke canary)."""
        return not self.eval and self.canary_kind != bk.CANARY_SMOKE

    def as_dict(self) -> dict:
        return {"config-key": self.config_key, "bucket": self.bucket, "scenario": self.scenario,
                "runner": self.runner, "parallelism": self.parallelism, "tp": self.tp, "ep": self.ep,
                "dp-attn": self.dp_attn, "conc": self.conc, "gpus": self.gpus, "seconds": self.seconds,
                "gpu-hours": self.gpu_hours, "canary": self.canary, "canary-kind": self.canary_kind,
                "profile": self.profile, "eval": self.eval, "exp-name": self.exp_name, "priority": self.priority}


def _job(key: str, bucket: str, row: MatrixRow, policy: Policy, canary: bool) -> Job:
    n, s = row.gpus, seconds(row, policy)
    sn = row if isinstance(row, SingleNodeRow) else None
    return Job(config_key=key, bucket=bucket, scenario=bucket.split("-")[-1] if not row.eval_only else "eval",
               runner=row.runner, parallelism=_parallelism(row),
               tp=sn.tp if sn else None, ep=sn.ep if sn else None, dp_attn=sn.dp_attn if sn else None,
               conc=row.get("conc"), gpus=n, seconds=s, gpu_hours=round(n * s / 3600, 2), canary=canary,
               canary_kind=row.canary if canary else None, profile=bk.profile_of(row),
               eval=row.eval_only, exp_name=row.exp_name, priority=row.priority)


# ---- servability (ci_tools/runner/servable.py decides; the CLI passes it in) ---------------------

Screen = Callable[[str, MatrixRow], list]   # (config key, row) -> [servable.Refusal]


def _screen(rows: list[KeyedRow], bucket_of: Callable[[MatrixRow], str], screen: Screen,
            policy: Policy) -> tuple[list[KeyedRow], list[dict]]:
    kept, refused = [], []
    for r in rows:
        found = screen(r.key, r.row.replace(config_key=r.key))
        if not found:
            kept.append(r)
            continue
        job = _job(r.key, bucket_of(r.row), r.row, policy, False).as_dict()
        for f in found:
            refused.append({**{k: job[k] for k in ("config-key", "bucket", "runner", "parallelism", "conc",
                                                    "exp-name", "profile")}, **f.as_dict()})
    return kept, refused


def _refusal_line(r: dict) -> str:
    conc = r["conc"] if not isinstance(r["conc"], list) else ",".join(str(c) for c in r["conc"])
    return f"{r['config-key']} ({r['bucket']}, {r['parallelism']}, conc {conc}): {r['message']}. Fix: {r['fix']}"


# ---- the plan ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Totals:
    """What a plan books, counted apart: every job is exactly one of a benchmark point, a smoke canary or
    an eval row (a canary that measures its point is that point), so the three add up to `jobs`."""

    jobs: int = 0
    canaries: int = 0
    points: int = 0
    smoke_canaries: int = 0
    eval_rows: int = 0
    gpus: int = 0
    gpu_hours: float = 0.0
    canary_gpu_hours: float = 0.0
    by_bucket: dict[str, int] = field(default_factory=dict)
    families: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, jobs: list[Job], buckets: Mapping[str, list]) -> "Totals":
        return cls(jobs=len(jobs), canaries=sum(1 for j in jobs if j.canary),
                   points=sum(1 for j in jobs if j.measures_point), eval_rows=sum(1 for j in jobs if j.eval),
                   smoke_canaries=sum(1 for j in jobs if not j.eval and not j.measures_point),
                   gpus=sum(j.gpus for j in jobs),
                   gpu_hours=round(sum(j.gpu_hours for j in jobs), 2),
                   canary_gpu_hours=round(sum(j.gpu_hours for j in jobs if j.canary), 2),
                   by_bucket={b: len(rows) for b, rows in buckets.items() if rows},
                   families=sorted({j.runner for j in jobs if j.runner is not None}))

    def as_dict(self) -> dict:
        return {"jobs": self.jobs, "points": self.points, "smoke-canaries": self.smoke_canaries,
                "eval-rows": self.eval_rows, "canaries": self.canaries, "gpus": self.gpus, "gpu-hours": self.gpu_hours,
                "canary-gpu-hours": self.canary_gpu_hours, "by-bucket": dict(self.by_bucket),
                "families": list(self.families)}


@dataclass(frozen=True)
class Reuse:
    """Whether a maintainer's `/use <run_id>` of this sweep would be honoured at merge, and why."""

    eligible: bool
    reason: str

    def as_dict(self) -> dict:
        return {"eligible": self.eligible, "reason": self.reason}


@dataclass(frozen=True)
class Plan:
    """A sweep plan. `as_dict()` is `plan --format json` (docs/reference.md, "`plan` output"); `policy` is where
    the label policy came from (set by the flow, which read it)."""

    sweep: bool
    reason: str
    gate: GateDecision
    error: str | None = None
    entries: tuple[PlanEntry, ...] = ()
    canaries: tuple[dict, ...] = ()                   # canary rows, each with config-key, family, bucket
    buckets: dict[str, list[dict]] = field(default_factory=lambda: {b: [] for b in bk.BUCKETS})
    fail_fast: dict[str, bool] = field(default_factory=lambda: {b: False for b in bk.BUCKETS})
    jobs: tuple[Job, ...] = ()
    refused: tuple[dict, ...] = ()
    totals: Totals = field(default_factory=Totals)
    reuse: Reuse = Reuse(False, "no sweep")
    policy: Any = None                                 # sweep.inputs.PolicySource, or None
    findings: tuple[Finding, ...] = ()                 # why a change was refused before planning (located)

    @property
    def mode(self) -> SweepMode | None:
        return self.gate.mode

    @property
    def concurrency_group(self) -> str:
        return self.gate.concurrency_group

    def as_dict(self) -> dict:
        out = {"sweep": self.sweep, "reason": self.reason, "error": self.error,
               "mode": self.mode.as_dict() if self.mode else None, "gate": self.gate.as_dict(),
               "entries": [e.meta() for e in self.entries], "canaries": [dict(c) for c in self.canaries],
               "buckets": {b: list(rows) for b, rows in self.buckets.items()}, "fail-fast": dict(self.fail_fast),
               "points": [j.as_dict() for j in self.jobs], "refused": [dict(r) for r in self.refused],
               "totals": self.totals.as_dict(), "reuse": self.reuse.as_dict(),
               "concurrency-group": self.concurrency_group,
               "findings": [{**f.as_dict(), "severity": f.severity} for f in self.findings]}
        if self.policy is not None:
            out["policy"] = self.policy.as_dict()
        return out


def refused_change(decision: GateDecision, findings: list[Finding], message: str) -> Plan:
    """The plan of a change refused before planning (a changelog the gate rejects, an invalid selected
    config): no sweep, the check fails, every finding kept for each format to show."""
    if not findings:
        located = re.match(r"([^\s:]+):(\d+): (.+)", message, re.S)   # a message that names its place
        if located:
            findings = [Finding(located[1], int(located[2]), None, located[3])]
    summary = findings[-1].message if findings else message
    return Plan(sweep=False, reason=summary, error=summary, gate=decision, findings=tuple(findings))


def _no_sweep(decision: GateDecision, *, reason: str, error: str | None = None,
              entries: list[PlanEntry] | None = None, refused: list[dict] | None = None) -> Plan:
    return Plan(sweep=False, reason=reason, error=error, gate=decision, entries=tuple(entries or ()),
                refused=tuple(refused or ()))


def plan_sweep(decision: GateDecision, entries: list[PlanEntry], head: Masters | None, policy: Policy, *,
               base: Masters | None = None, screen: Screen | None = None, priority: Context | None = None) -> Plan:
    """The plan of a gate decision and the appended entries. Raises InputError for changelog/config problems.

    `screen` (the runner's servability, `ci_tools.runner.servable`) refuses rows no runner can serve
    before any bucket or canary is chosen: a refusal the author must fix fails the plan, naming every
    row; a row of a kind not runnable yet (`pending`) is withheld from the matrices and listed in
    `refused`, and the rest of the sweep goes on.

    `priority` (the event, the PR's labels, the run attempt) scores every row; each bucket's rows and
    the canaries are listed highest priority first.
    """
    if decision.error:
        return _no_sweep(decision, reason=decision.reason, error=decision.error, entries=entries)
    if not decision.sweep or decision.mode is None:
        return _no_sweep(decision, reason=decision.reason, entries=entries)
    if not entries:
        return _no_sweep(decision, entries=entries,
                         reason="the changelog diff appends no entry, so there is nothing to sweep")
    mode = decision.mode
    assert head is not None, "a sweep of appended entries needs the head's master configs"
    bench, evals = changelog_rows(entries, head, mode, base)
    if mode.trim:
        bench = bk.trim(bench)
    refused: list[dict] = []
    if screen is not None:
        bench, refused_bench = _screen(bench, bk.bench_bucket, screen, policy)
        evals, refused_evals = _screen(evals, bk.eval_bucket, screen, policy)
        refused = refused_bench + refused_evals
        blocking = [r for r in refused if not r["pending"]]
        if blocking:
            msg = (f"{len(blocking)} planned row(s) cannot run, so nothing is booked: "
                   + "; ".join(_refusal_line(r) for r in blocking))
            return _no_sweep(decision, reason=msg, error=msg, entries=entries, refused=refused)
        if refused and not bench and not evals:
            msg = ("every planned row is of a kind ci-tools does not run yet: "
                   + "; ".join(_refusal_line(r) for r in refused))
            return _no_sweep(decision, reason=msg, error=msg, entries=entries, refused=refused)
    fast = policy.agentx_profiles["fast"]
    buckets: dict[str, list[KeyedRow]] = {b: [] for b in bk.BUCKETS}
    for r in bench:
        row = r.row.replace(duration=fast, agentx_fast=True) if mode.agentx_fast and r.row.is_agentic else r.row
        row = row.replace(recipe_fingerprint=bk.recipe_fingerprint(r.row))
        buckets.setdefault(bk.bench_bucket(row), []).append(KeyedRow(r.key, row))
    for r in evals:
        buckets[bk.eval_bucket(r.row)].append(r)
    stray = sorted(b for b in buckets if b not in bk.BUCKETS and buckets[b])
    if stray:
        msg = (f"no workflow family runs sequence lengths {', '.join(stray)}; only 1k1k and 8k1k fixed-seq "
               "buckets exist. Change the config's isl/osl or add a family")
        return _no_sweep(decision, reason=msg, error=msg, entries=entries)
    canaries: list[bk.Canary] = []
    if mode.canary:
        try:
            canaries, buckets = bk.select_canaries(buckets, fast_seconds=fast)
        except bk.CanarySelectionError as exc:
            msg = f"canary selection failed, so the sweep fails closed: {exc}"
            return _no_sweep(decision, reason=msg, error=msg, entries=entries)
    too_big = [f"{b} ({len(rows)} jobs)" for b, rows in buckets.items() if len(rows) > bk.MAX_MATRIX_JOBS]
    if too_big:
        msg = (f"GitHub runs at most {bk.MAX_MATRIX_JOBS} jobs per matrix; too many in {', '.join(too_big)}. "
               "Split the change into several PRs or use sweep-enabled")
        return _no_sweep(decision, reason=msg, error=msg, entries=entries)

    ctx = priority or Context()
    canary_rows = annotate([c.row.replace(config_key=c.key, family=c.family, bucket=c.bucket) for c in canaries],
                           "canary", policy.priority, ctx)
    rows_out = {b: annotate([r.row.replace(config_key=r.key) for r in buckets[b]], b, policy.priority, ctx)
                for b in bk.BUCKETS}
    jobs = [_job(c.config_key or "", c.bucket or "", c, policy, True) for c in canary_rows]
    for b in bk.BUCKETS:
        jobs.extend(_job(r.config_key or "", b, r, policy, False) for r in rows_out[b])
    if not jobs:
        return _no_sweep(decision, entries=entries,
                         reason="the appended entries select no benchmark points (check scenario-type and the "
                                "configs' search spaces)")
    totals = Totals.of(jobs, rows_out)
    return Plan(sweep=True, reason=decision.reason, gate=decision, entries=tuple(entries),
                canaries=tuple(r.as_dict() for r in canary_rows),
                buckets={b: [r.as_dict() for r in rows] for b, rows in rows_out.items()},
                fail_fast={b: mode.fail_fast for b in bk.BUCKETS}, jobs=tuple(jobs),
                refused=tuple(refused), totals=totals, reuse=_reuse(mode, totals))


def _reuse(mode: SweepMode, totals: Totals) -> Reuse:
    if mode.primary is None:
        return Reuse(False, "push to the default branch: a /use pin on the merged PR, if any, replaces this "
                     "sweep with the pinned run's results")
    if mode.reusable:
        return Reuse(True, f"once this sweep is green, a maintainer's /use <run_id> lets main reuse its results "
                     f"instead of re-running its {totals.jobs} job{'' if totals.jobs == 1 else 's'} ({totals.gpu_hours} GPU-h)")
    if mode.reuse_blockers:
        return Reuse(False, f"a /use pin is refused while {', '.join(mode.reuse_blockers)} is applied; main "
                     "re-runs the sweep after merge")
    return Reuse(False, f"{mode.primary} sweeps are not reusable; main re-runs the sweep after merge (use a "
                 "full-sweep label to make it reusable)")


def after_canary(plan: Plan, passed_families: set[str] | frozenset[str]) -> Plan:
    """The plan once the canaries have run: only families whose canary passed keep their rows.

    Fail closed: a family missing from `passed_families` (canary failed, cancelled or never reported)
    runs nothing. Canary outputs are emptied, since those jobs already ran.
    """
    if not plan.sweep:
        return plan
    blocked = sorted({c["family"] for c in plan.canaries} - set(passed_families))
    buckets = bk.release(plan.buckets, set(passed_families))
    jobs = tuple(j for j in plan.jobs if not j.canary and j.runner in passed_families)
    reason = plan.reason
    if blocked:
        reason = (f"{plan.reason}; canary failed or missing for {', '.join(blocked)}: nothing else in "
                  f"{'that family' if len(blocked) == 1 else 'those families'} starts")
    return dataclasses.replace(plan, sweep=bool(jobs), reason=reason, buckets=buckets, canaries=(), jobs=jobs,
                               totals=dataclasses.replace(Totals.of(list(jobs), buckets), gpus=plan.totals.gpus,
                                                         canary_gpu_hours=0.0))
