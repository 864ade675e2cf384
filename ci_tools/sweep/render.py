"""Rendering a sweep plan: a table for people (<= 100 columns), JSON, and GitHub step outputs.

GitHub outputs (`--format github`, written to $GITHUB_OUTPUT; see the README, "Sweep planning"):
every value is one line; JSON values are compact. Names are built from the bucket names in
`ci_tools.sweep.buckets.BUCKETS`, so the workflows and this module cannot drift apart silently
(the workflows' contract test reads `output_names()`).
"""

from __future__ import annotations

import json
from typing import Any

from ci_tools.errors import InputError


def _buckets() -> tuple[str, ...]:
    # imported here so the gate-only path does not load the matrix modules
    from ci_tools.sweep.buckets import BUCKETS
    return BUCKETS

WIDTH = 100
# GitHub keeps at most 1 MB of outputs per job, "approximated based on UTF-16 encoding": two bytes per
# character of the BMP (four for others), so the size is counted in UTF-16, not UTF-8.
MAX_OUTPUTS_BYTES = 1_000_000


def output_size(text: str) -> int:
    """The size GitHub counts a job's outputs at: their UTF-16 encoding."""
    return len(text.encode("utf-16-le"))


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
                                  "points", "reusable", "buckets"]
    for b in _buckets():
        names += [f"matrix-{b}", f"run-{b}", f"canary-{b}", f"fail-fast-{b}"]
    return names


def gate_outputs(gate: dict) -> dict[str, str]:
    mode = gate.get("mode") or {}
    return {"check": _bool(gate["check"]), "sweep": _bool(gate["sweep"]), "reason": _line(gate["reason"]),
            "error": _line(gate.get("error")), "primary": mode.get("primary") or "",
            "mode": _compact(gate.get("mode")), "concurrency-group": gate["concurrency-group"],
            "restarts": _bool(gate.get("restarts", True)), "fork-approval": _bool(gate.get("fork-approval", False))}


def plan_outputs(plan: dict) -> dict[str, str]:
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


def check_size(outputs: dict[str, str]) -> dict[str, str]:
    """The outputs, unless GitHub would truncate them (then an InputError saying how to split the sweep)."""
    size = output_size("".join(f"{name}={value}\n" for name, value in outputs.items()))
    if size > MAX_OUTPUTS_BYTES:
        raise InputError(f"the plan's GitHub outputs are {size:,} bytes as GitHub counts them (UTF-16); GitHub keeps "
                         f"at most {MAX_OUTPUTS_BYTES:,} per job. Split the change into several PRs, or use the "
                         "sweep-enabled label")
    return outputs


def github_outputs(decision, plan: dict | None) -> dict[str, str]:
    """What `plan --format github` writes to $GITHUB_OUTPUT: the gate's outputs, or the plan's."""
    return check_size(gate_outputs(decision.as_dict()) if plan is None else plan_outputs(plan))


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


def render_table(plan: dict) -> str:
    out: list[str] = []
    verdict = "SWEEP" if plan["sweep"] else ("ERROR" if plan.get("error") else "NO SWEEP")
    out += _wrap(f"{verdict}: ", plan["reason"])
    mode = plan.get("mode")
    if mode:
        bits = [f"scope {mode['scope']}", "canary" if mode["canary"] else "no canary",
                "fail-fast" if mode["fail-fast"] else "no fail-fast", f"evals {mode['evals']}"]
        if mode["agentx-fast"]:
            bits.append("AgentX fast profile")
        label = (mode["primary"] or "push (no labels)") + (" + " + ", ".join(mode["modifiers"]) if mode["modifiers"] else "")
        out += _wrap("mode: ", f"{label} ({'; '.join(bits)})")
    out.append(f"concurrency group: {plan['concurrency-group']}")
    for e in plan.get("entries", []):
        keys = ", ".join(e["resolved"]) or ", ".join(e["config-keys"])
        flags = [f for f in ("evals-only", "all-evals", "append-only") if e.get(f)]
        where = f"changelog line {e['line']}" if e.get("line") else f"changelog entry {e['index'] + 1}"
        out += _wrap(f"{where}: ", keys + (f" [{', '.join(flags)}]" if flags else ""))
    if not plan["points"]:
        return "\n".join(out + _refused_lines(plan)) + "\n"
    out.append("")
    header = f"  {'scenario':<9} {'parallelism':<34} {'conc':<16} {'GPUs':>4} {'hours':>6} {'GPU-h':>7}  note"
    by_key: dict[str, list[dict]] = {}
    for p in plan["points"]:
        by_key.setdefault(p["config-key"], []).append(p)
    for key, points in by_key.items():
        runners = sorted({p["runner"] for p in points})
        out.append(_fit(f"{key}  on {', '.join(runners)}", WIDTH))
        out.append(header)
        for p in points:
            note = _note(p, short=True)
            out.append(f"  {_fit(p['scenario'], 9):<9} {_fit(p['parallelism'], 34):<34} {_fit(_conc(p['conc']), 16):<16} "
                       f"{p['gpus']:>4} {p['seconds'] / 3600:>6.2f} {_hours(p['gpu-hours']):>7}  {note}".rstrip())
        out.append("")
    t = plan["totals"]
    out.append(f"total: {t['points']} points ({t['canaries']} canary), {_hours(t['gpu-hours'])} GPU-h "
               f"(canaries {_hours(t['canary-gpu-hours'])} GPU-h)")
    jobs = ", ".join(f"{b} {n}" for b, n in t["by-bucket"].items())
    if jobs:
        out += _wrap("matrix jobs after canaries: ", jobs)
    if plan["canaries"]:
        out += _wrap("canaries: ", "; ".join(
            f"{c['family']}: {c['config-key']} conc {_conc(c['conc'])}"
            + (" (AgentX-fast smoke run; the point still runs in full)" if c.get("canary") == "smoke"
               else " (measures the point itself)" if c.get("canary") else "") for c in plan["canaries"]))
        out += _wrap("", "If a family's canary fails, nothing else in that family starts.")
    ff = [b for b, v in plan["fail-fast"].items() if v and plan["buckets"].get(b)]
    if ff:
        out += _wrap("fail-fast: ", "the first failure cancels the rest of its matrix (" + ", ".join(ff) + ")")
    out += _wrap("reuse: ", plan["reuse"]["reason"])
    out += _refused_lines(plan)
    return "\n".join(out) + "\n"


PROFILE_WORDS = {"agentx": "AgentX", "agentx-fast": "AgentX-fast", "fixed-seq": "fixed-seq", "eval": "eval"}


def _note(p: dict, short: bool = False) -> str:
    """Which profile measures the point, and what a canary is: the point itself or a smoke run."""
    profile = PROFILE_WORDS.get(p.get("profile") or "", p.get("profile") or "")
    if p["canary"]:
        if p.get("canary-kind") == "smoke":
            return "smoke canary" if short else f"canary: {profile} smoke run (the point is measured below)"
        return f"canary {profile}" if short else f"canary: measures the point ({profile})"
    if p["eval"]:
        return "eval"
    return profile


def _refused_lines(plan: dict) -> list[str]:
    out = []
    for r in plan.get("refused") or []:
        kind = "not runnable yet" if r.get("pending") else "cannot run"
        out += _wrap(f"refused ({kind}): ", f"{r['config-key']} {r['parallelism']} conc {_conc(r['conc'])} "
                     f"[{r['bucket']}]: {r['message']}. Fix: {r['fix']}")
    return out


def render_json(decision, plan: dict | None) -> str:
    if plan is None:
        return json.dumps(decision.as_dict(), indent=2) + "\n"
    # no indent: json's C encoder only runs without it, and large plans are read by tools (use `jq .`)
    return json.dumps(plan, ensure_ascii=False) + "\n"


def render_text(decision, plan: dict | None) -> str:
    """The plan's table, or for `--gate-only` the verdict and the concurrency group."""
    if plan is not None:
        return render_table(plan)
    return (f"{'SWEEP' if decision.sweep else 'NO SWEEP'}: {decision.reason}\n"
            f"check: {'run' if decision.check else 'skip'}; concurrency group: {decision.concurrency_group}"
            f"{'' if decision.restarts else ' (cancels nothing)'}\n")


def card_summary(plan: dict) -> str:
    """One line for the PR's status card and `/sweep plan`, from `plan --format json`."""
    if not plan.get("sweep"):
        return _line(plan.get("reason")) or "no sweep"
    t = plan["totals"]
    families = t.get("families") or []
    canaries = f", canaries {_hours(t['canary-gpu-hours'])} GPU-h first" if plan.get("canaries") else ""
    return (f"{t['points']} points on {len(families)} runner label{'s' if len(families) != 1 else ''} "
            f"({', '.join(f'`{f}`' for f in families)}), {_hours(t['gpu-hours'])} GPU-h{canaries}.")


def render_summary(plan: dict) -> str:
    """Markdown for $GITHUB_STEP_SUMMARY."""
    icon = "✅" if plan["sweep"] else ("❌" if plan.get("error") else "⏸️")
    lines = [f"### {icon} Sweep plan", "", _line(plan["reason"]), ""]
    mode = plan.get("mode")
    if mode:
        lines += [f"Mode: `{mode['primary'] or 'push'}`" + "".join(f" + `{m}`" for m in mode["modifiers"])
                  + f" (scope {mode['scope']}, {'canary' if mode['canary'] else 'no canary'}, "
                    f"{'fail-fast' if mode['fail-fast'] else 'no fail-fast'}, evals {mode['evals']})", ""]
    if plan["points"]:
        lines += ["| config | runner | parallelism | conc | GPUs | GPU-h | |", "|---|---|---|---|--:|--:|---|"]
        for p in plan["points"]:
            note = _note(p)
            lines.append(f"| `{p['config-key']}` | `{p['runner']}` | {p['parallelism']} | {_conc(p['conc'])} | "
                         f"{p['gpus']} | {_hours(p['gpu-hours'])} | {note} |")
        t = plan["totals"]
        lines += ["", f"**{t['points']} points, {_hours(t['gpu-hours'])} GPU-h** "
                      f"(canaries {_hours(t['canary-gpu-hours'])} GPU-h).", "", f"Reuse: {_line(plan['reuse']['reason'])}"]
    if plan.get("refused"):
        lines += ["", "Rows not sent to a GPU runner:", ""]
        for r in plan["refused"]:
            kind = "not runnable yet" if r.get("pending") else "cannot run"
            lines.append(f"- `{r['config-key']}` {r['parallelism']} conc {_conc(r['conc'])} ({r['bucket']}, {kind}): "
                         f"{_line(r['message'])}. Fix: {_line(r['fix'])}")
    return "\n".join(lines) + "\n"
