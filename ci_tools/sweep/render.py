"""Rendering a sweep plan: a table for people (<= 100 columns), JSON, and GitHub step outputs.

GitHub outputs (`--format github`, written to $GITHUB_OUTPUT; see docs/reference.md, "`plan` output"):
every value is one line; JSON values are compact. Names are built from the bucket names in
`ci_tools.sweep.buckets.BUCKETS`, so the workflows and this module cannot drift apart silently
(the workflows' contract test reads `output_names()`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ci_tools.sweep.row import MatrixRow


def _buckets() -> tuple[str, ...]:
    # imported here so the gate-only path does not load the matrix modules
    from ci_tools.sweep.buckets import BUCKETS
    return BUCKETS

WIDTH = 100
# How `plan --format github` words the refusal when GitHub would cut the plan's outputs (the limit and
# its UTF-16 count are github.actions.outputs_text's)
OUTPUTS_WHAT = "the plan's GitHub outputs"
OUTPUTS_HINT = "Split the change into several PRs, or use the sweep-enabled label."


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _line(text: str | None) -> str:
    return " ".join((text or "").split())


GATE_OUTPUTS = ("check", "sweep", "reason", "error", "primary", "mode", "concurrency-group", "restarts",
                "fork-approval")


def output_names(gate_only: bool = False) -> list[str]:
    """Every output `plan --format github` writes (with `--gate-only`: the gate's subset)."""
    if gate_only:
        return list(GATE_OUTPUTS)
    names = list(GATE_OUTPUTS) + ["plan", "canary", "has-canary", "canary-families", "families", "gpu-hours",
                                  "jobs", "points", "reusable", "buckets"]
    for b in _buckets():
        names += [f"matrix-{b}", f"run-{b}", f"canary-{b}", f"fail-fast-{b}"]
    return names


def gate_outputs(gate: dict) -> dict[str, str]:
    mode = gate.get("mode") or {}
    return {"check": _bool(gate["check"]), "sweep": _bool(gate["sweep"]), "reason": _line(gate["reason"]),
            "error": _line(gate.get("error")), "primary": mode.get("primary") or "",
            "mode": _compact(gate.get("mode")), "concurrency-group": gate["concurrency-group"],
            "restarts": _bool(gate.get("restarts", True)), "fork-approval": _bool(gate.get("fork-approval", False))}


def plan_outputs(typed) -> dict[str, str]:
    plan = typed.as_dict()
    out = gate_outputs(plan["gate"])
    out["sweep"] = _bool(plan["sweep"])
    out["reason"] = _line(plan["reason"])
    out["error"] = _line(plan.get("error"))
    out["plan"] = _compact({k: v for k, v in plan.items() if k != "buckets"})
    out["canary"] = _compact(plan["canaries"])
    out["has-canary"] = _bool(bool(plan["canaries"]))
    out["canary-families"] = _compact(sorted({c["family"] for c in plan["canaries"]}))
    out["families"] = _compact(plan["totals"]["families"])
    out["gpu-hours"] = str(plan["totals"]["gpu-hours"])
    out["jobs"] = str(plan["totals"]["jobs"])
    out["points"] = str(plan["totals"]["points"])
    out["reusable"] = _bool(plan["reuse"]["eligible"])
    out["buckets"] = _compact([b for b in _buckets() if plan["buckets"].get(b)])
    for b in _buckets():
        rows = plan["buckets"].get(b, [])
        out[f"matrix-{b}"] = _compact(rows)
        out[f"run-{b}"] = _bool(bool(rows))
        out[f"canary-{b}"] = _compact([c for c in plan["canaries"] if c["bucket"] == b])
        out[f"fail-fast-{b}"] = _bool(plan["fail-fast"].get(b, False))
    return out


def github_outputs(decision, plan) -> dict[str, str]:
    """What `plan --format github` writes to $GITHUB_OUTPUT: the gate's outputs, or the plan's."""
    return gate_outputs(decision.as_dict()) if plan is None else plan_outputs(plan)


# ---- people ---------------------------------------------------------------------------------------

def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _conc(value: Any) -> str:
    return ",".join(str(c) for c in value) if isinstance(value, list) else str(value)


def _hours(h: float) -> str:
    return f"{h:.2f}"


def _wrap(prefix: str, text: str, width: int = WIDTH) -> list[str]:
    words, lines, cur = text.split(), [], prefix
    indent = " " * len(prefix)
    for w in words:
        if len(cur) + len(w) + (0 if cur.endswith(" ") or cur == prefix else 1) > width and cur.strip():
            lines.append(cur.rstrip())
            cur = indent
        cur += ("" if cur.endswith(" ") or cur == indent or cur == prefix else " ") + w
    lines.append(cur.rstrip())
    return lines


def _mode_words(mode) -> list[str]:
    bits = [f"scope {mode.scope}", "canary" if mode.canary else "no canary",
            "fail-fast" if mode.fail_fast else "no fail-fast", f"evals {mode.evals}"]
    return bits + (["AgentX fast profile"] if mode.agentx_fast else [])


def _count(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


def _kind(job) -> str:
    """"point", "smoke" or "eval": what a plan Job (or its JSON) is; a canary that measures its point is
    that point, an eval canary an eval row."""
    if isinstance(job, dict):
        ev, smoke = bool(job.get("eval")), job.get("canary-kind") == "smoke"
    else:
        ev, smoke = job.eval, not job.measures_point and not job.eval
    return "eval" if ev else "smoke" if smoke else "point"


def _canary(job) -> bool:
    return bool(job.get("canary") if isinstance(job, dict) else job.canary)


def job_counts(jobs) -> str:
    """What the jobs are, counted apart so the parts add up: benchmark points, smoke canaries, eval rows,
    each saying which of them are canaries."""
    parts = []
    for kind, word, plural in (("point", "point", "points"), ("smoke", "smoke canary", "smoke canaries"),
                               ("eval", "eval row", "eval rows")):
        mine = [j for j in jobs if _kind(j) == kind]
        if not mine and (kind != "point" or jobs):
            continue
        canaries = sum(_canary(j) for j in mine) if kind != "smoke" else 0
        which = ("" if not canaries else ", the canary" if len(mine) == 1 else
                 f" ({canaries} of them {'a canary' if canaries == 1 else 'canaries'})")
        parts.append(_count(len(mine), word, plural) + which)
    return ", ".join(parts)


def render_table(plan) -> str:
    out: list[str] = [f.as_text() for f in plan.findings]
    verdict = "SWEEP" if plan.sweep else ("ERROR" if plan.error else "NO SWEEP")
    out += _wrap(f"{verdict}: ", plan.reason)
    mode = plan.mode
    if mode:
        label = (mode.primary or "push (no labels)") + (" + " + ", ".join(mode.modifiers) if mode.modifiers else "")
        out += _wrap("mode: ", f"{label} ({'; '.join(_mode_words(mode))})")
    out.append(f"concurrency group: {plan.concurrency_group}")
    for e in plan.entries:
        keys = ", ".join(e.keys) or ", ".join(e.data.get("config-keys") or [])
        flags = [f for f in ("evals-only", "all-evals", "append-only") if e.data.get(f)]
        where = f"changelog line {e.line}" if e.line else f"changelog entry {e.index + 1}"
        out += _wrap(f"{where}: ", keys + (f" [{', '.join(flags)}]" if flags else ""))
    if not plan.jobs:
        return "\n".join(out + _refused_lines(plan)) + "\n"
    out.append("")
    header = f"  {'scenario':<9} {'parallelism':<32} {'conc':<16} {'GPUs':>4} {'hours':>5} {'GPU-h':>6} {'prio':>6}  note"
    by_key: dict[str, list] = {}
    for j in plan.jobs:
        by_key.setdefault(j.config_key, []).append(j)
    for key, jobs in by_key.items():
        runners = sorted({j.runner for j in jobs})
        out.append(_fit(f"{key}  on {', '.join(runners)}", WIDTH))
        out.append(header)
        for j in jobs:
            out.append(f"  {_fit(j.scenario, 9):<9} {_fit(j.parallelism, 32):<32} {_fit(_conc(j.conc), 16):<16} "
                       f"{j.gpus:>4} {j.seconds / 3600:>5.2f} {_hours(j.gpu_hours):>6} {j.priority or '-':>6}  "
                       f"{_note(j, short=True)}".rstrip())
        out.append("")
    t = plan.totals
    out += _wrap("total: ", f"{_count(t.jobs, 'job')} ({job_counts(plan.jobs)}), {_hours(t.gpu_hours)} GPU-h "
                 f"(canaries {_hours(t.canary_gpu_hours)} GPU-h)")
    per_bucket = ", ".join(f"{b} {n}" for b, n in t.by_bucket.items())
    if per_bucket:
        out += _wrap("matrix jobs after canaries: ", per_bucket)
    if plan.canaries:
        out += _wrap("canaries: ", "; ".join(
            f"{c['family']}: {c['config-key']} conc {_conc(c['conc'])}"
            + (" (AgentX-fast smoke run; the point still runs in full)" if c.get("canary") == "smoke"
               else " (measures the point itself)" if c.get("canary") else "") for c in plan.canaries))
        out += _wrap("", "If a family's canary fails, nothing else in that family starts.")
    ff = [b for b, v in plan.fail_fast.items() if v and plan.buckets.get(b)]
    if ff:
        out += _wrap("fail-fast: ", "the first failure cancels the rest of its matrix (" + ", ".join(ff) + ")")
    out += _wrap("reuse: ", plan.reuse.reason)
    out += _refused_lines(plan)
    return "\n".join(out) + "\n"


PROFILE_WORDS = {"agentx": "AgentX", "agentx-fast": "AgentX-fast", "fixed-seq": "fixed-seq", "eval": "eval"}


def _note(j, short: bool = False) -> str:
    """Which profile measures the job, and what a canary is: the point itself or a smoke run."""
    profile = PROFILE_WORDS.get(j.profile or "", j.profile or "")
    if j.canary:
        if j.canary_kind == "smoke":
            return "smoke canary" if short else f"canary: {profile} smoke run (the point is measured below)"
        return f"canary {profile}" if short else f"canary: measures the point ({profile})"
    if j.eval:
        return "eval"
    return profile


def _refused_lines(plan) -> list[str]:
    out = []
    for r in plan.refused:
        kind = "not runnable yet" if r.get("pending") else "cannot run"
        out += _wrap(f"refused ({kind}): ", f"{r['config-key']} {r['parallelism']} conc {_conc(r['conc'])} "
                     f"[{r['bucket']}]: {r['message']}. Fix: {r['fix']}")
    return out


def render_json(decision, plan, use_candidates=None) -> str:
    if plan is None:
        return json.dumps(decision.as_dict(), indent=2) + "\n"
    doc = plan.as_dict()
    if use_candidates is not None:
        doc["use-candidates"] = [c.as_dict() for c in use_candidates]
    # no indent: json's C encoder only runs without it, and large plans are read by tools (use `jq .`)
    return json.dumps(doc, ensure_ascii=False) + "\n"


def use_candidate_lines(candidates, pr: int | None) -> list[str]:
    """`plan --pr N`: the PR's sweep runs, newest first, and whether `/use <run_id>` could pin each."""
    out = ["", f"runs /use could pin (PR #{pr}'s newest completed sweep runs):" if pr else "runs /use could pin:"]
    if not candidates:
        return out + ["  none yet: a full sweep of this PR has to run first"]
    for c in candidates:
        head = f"run {c.run_id} ({c.conclusion or 'no conclusion'}, {c.head_sha[:12]}, {c.created_at})"
        out += _wrap(f"  {head}: ", f"/use {c.run_id} pins it" if c.problem is None else f"not usable: {c.problem}")
    return out


def render_text(decision, plan, use_candidates=None, pr: int | None = None) -> str:
    """The plan's table, or for `--gate-only` the verdict and the concurrency group."""
    if plan is not None:
        table = render_table(plan)
        if use_candidates is None:
            return table
        return table + "\n".join(use_candidate_lines(use_candidates, pr)) + "\n"
    verdict = "SWEEP" if decision.sweep else ("ERROR" if decision.error else "NO SWEEP")
    return (f"{verdict}: {decision.reason}\n"
            f"check: {'run' if decision.check else 'skip'}; concurrency group: {decision.concurrency_group}"
            f"{'' if decision.restarts else ' (cancels nothing)'}\n")


def card_summary(plan: dict) -> str:
    """One line for the PR's status card and `/sweep plan`, from `plan --format json`."""
    if not plan.get("sweep"):
        return _line(plan.get("reason")) or "no sweep"
    t = plan["totals"]
    families = t.get("families") or []
    canaries = f", canaries {_hours(t['canary-gpu-hours'])} GPU-h first" if plan.get("canaries") else ""
    jobs = plan.get("points")
    what = job_counts(jobs) if isinstance(jobs, list) else _count(t["points"], "point")
    return (f"{what} on {len(families)} runner label{'s' if len(families) != 1 else ''} "
            f"({', '.join(f'`{f}`' for f in families)}), {_hours(t['gpu-hours'])} GPU-h{canaries}.")


def render_summary(plan) -> str:
    """Markdown for $GITHUB_STEP_SUMMARY."""
    icon = "✅" if plan.sweep else ("❌" if plan.error else "⏸️")
    from ci_tools.render.findings import findings_table

    from ci_tools.render import markdown as md

    lines = [f"### {icon} Sweep plan", "", md.text(_line(plan.reason)), "", *findings_table(list(plan.findings))]
    mode = plan.mode
    if mode:
        lines += [f"Mode: `{mode.primary or 'push'}`" + "".join(f" + `{m}`" for m in mode.modifiers)
                  + f" (scope {mode.scope}, {'canary' if mode.canary else 'no canary'}, "
                    f"{'fail-fast' if mode.fail_fast else 'no fail-fast'}, evals {mode.evals})", ""]
    if plan.jobs:
        lines += ["| config | runner | parallelism | conc | GPUs | GPU-h | priority | |",
                  "|---|---|---|---|--:|--:|--:|---|"]
        for j in plan.jobs:
            lines.append(f"| `{j.config_key}` | `{j.runner}` | {j.parallelism} | {_conc(j.conc)} | "
                         f"{j.gpus} | {_hours(j.gpu_hours)} | {j.priority or '–'} | {_note(j)} |")
        t = plan.totals
        lines += ["", f"**{_count(t.jobs, 'job')} ({job_counts(plan.jobs)}), {_hours(t.gpu_hours)} GPU-h** "
                      f"(canaries {_hours(t.canary_gpu_hours)} GPU-h).", "", f"Reuse: {md.text(_line(plan.reuse.reason))}"]
    if plan.refused:
        lines += ["", "Rows not sent to a GPU runner:", ""]
        for r in plan.refused:
            kind = "not runnable yet" if r.get("pending") else "cannot run"
            lines.append(f"- `{r['config-key']}` {r['parallelism']} conc {_conc(r['conc'])} ({r['bucket']}, {kind}): "
                         f"{md.text(_line(r['message']))}. Fix: {md.text(_line(r['fix']))}")
    return "\n".join(lines) + "\n"


def _row_line(row: MatrixRow) -> str:
    """One row for people: what runs where, at which sizes."""
    from ci_tools.sweep.row import MultiNodeRow, SingleNodeRow

    def size(tp: int, ep: int, dp_attn: bool) -> str:
        return f"tp{tp} ep{ep}" + (" dp-attn" if dp_attn else "")

    if isinstance(row, MultiNodeRow):
        p, d = row.prefill, row.decode
        shape = f"prefill {p.num_worker}x({size(p.tp, p.ep, p.dp_attn)}) decode {d.num_worker}x({size(d.tp, d.ep, d.dp_attn)})"
    else:
        assert isinstance(row, SingleNodeRow)
        shape = size(row.tp, row.ep, row.dp_attn)
    seq = row.get("scenario-type") or f"{row.isl}/{row.osl}"
    conc = ",".join(map(str, row.concs)) if isinstance(row, MultiNodeRow) else str(row.concs[0])
    return (f"{row.exp_name} {row.precision} {row.framework} on {row.runner}: "
            f"{seq} {shape} conc {conc}" + (" +eval" if row.run_eval else ""))


def matrix_text(rows: Sequence[MatrixRow]) -> str:
    """`matrix --format text`: one line per row, then the count."""
    return "".join(_row_line(r) + "\n" for r in rows) + f"{len(rows)} row(s)\n"


def matrix_summary(rows: Sequence[MatrixRow]) -> str:
    """Markdown for `matrix --format github`'s step summary: rows per runner label and matrix family,
    and how many are marked for evals (the JSON itself goes to stdout, as without --format)."""
    from ci_tools.sweep.buckets import BENCH_BUCKETS, bench_bucket

    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        per = counts.setdefault(str(row.runner), {})
        bucket = bench_bucket(row)
        per[bucket] = per.get(bucket, 0) + 1
        per["evals"] = per.get("evals", 0) + row.run_eval
    columns = [b for b in BENCH_BUCKETS if any(b in per for per in counts.values())]
    columns += sorted({b for per in counts.values() for b in per} - set(BENCH_BUCKETS) - {"evals"})
    lines = [f"### matrix: {len(rows)} row(s)", ""]
    if not rows:
        return "\n".join(lines + ["The filters select no row."]) + "\n"
    lines += ["| runner | " + " | ".join(columns) + " | marked for evals | total |",
              "|---|" + "--:|" * (len(columns) + 2)]
    for runner in sorted(counts):
        per = counts[runner]
        total = sum(per.get(c, 0) for c in columns)
        lines.append(f"| `{runner}` | " + " | ".join(str(per.get(c, 0)) for c in columns)
                     + f" | {per.get('evals', 0)} | {total} |")
    if len(counts) > 1:
        lines.append("| **total** | " + " | ".join(str(sum(p.get(c, 0) for p in counts.values())) for c in columns)
                     + f" | {sum(p.get('evals', 0) for p in counts.values())} | {len(rows)} |")
    return "\n".join(lines) + "\n"
