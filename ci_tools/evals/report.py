"""The eval table of the PR status card and the collect step summary (rendering): per task, each
point's score, threshold and pass/fail, then every eval row that failed or did not run."""

from __future__ import annotations

from ci_tools.evals.gate import FAILED, NONE, PASSED, describe

HEADLINE = {PASSED: "passed", FAILED: "FAILED", NONE: "no eval rows in this sweep"}


def markdown(verdict: dict, evals: list[dict]) -> str:
    state = verdict["verdict"]
    lines = [f"**Evals: {HEADLINE[state]}**" + (f" ({verdict['passed']} of {verdict['expected']} eval rows passed)"
                                                 if state != NONE else "")]
    by_task: dict[str, list[tuple[dict, dict]]] = {}
    for e in evals:
        for s in e.get("scores") or []:
            by_task.setdefault(s["task"], []).append((e, s))
    for task in sorted(by_task):
        lines += ["", f"`{task}`", "", "| point | conc | metric | score | threshold | |", "|---|---:|---|---:|---:|---|"]
        for e, s in sorted(by_task[task], key=lambda es: (describe(es[0]["point"]), es[1]["conc"], es[1]["metric"])):
            lines.append(f"| {describe(e['point'])} | {s['conc']} | {s['metric'].split(',', 1)[-1]} | {s['score']:.4f} "
                         f"| {s['threshold']:.2f} ({s['threshold-source']}) | {'pass' if s['passed'] else '**FAIL**'} |")
    problems = verdict["failed"] + verdict["missing"]
    if problems:
        lines += [""] + [f"- {p}" for p in problems]
    return "\n".join(lines) + "\n"


def text_summary(result: dict) -> str:
    """The text `results process` prints for an eval job."""
    p = result["point"]
    lines = [f"{p.get('name')}: eval {'PASSED' if result['valid'] else 'FAILED'} "
             f"({result['harness'].get('name')}, tasks {', '.join(result['tasks'])}, "
             f"concurrencies {', '.join(map(str, result['concurrencies']['expected']))})"]
    for s in result["scores"]:
        lines.append(f"  {'PASS' if s['passed'] else 'FAIL'}: [conc={s['conc']}] {s['task']} {s['metric']} "
                     f"{s['score']:.4f} (minimum {s['threshold']:.4f}, {s['threshold-source']})")
    for f in result["failures"]:
        lines.append(f"  invalid [{f['rule']}]: {f['message']}")
    acc = result.get("acceptance") or {}
    if "measured" in acc:
        syn = "none" if acc.get("synthetic") is None else f"{acc['synthetic']:g}"
        got = f"{acc['measured']:g} ({acc.get('measured-source')})" if acc.get("measured") is not None else \
            f"not measured: {acc.get('not-measured')}"
        verdict = "" if acc.get("agrees") is None else (" within" if acc["agrees"] else " OUTSIDE") + \
            f" the tolerance {acc['tolerance']:.0%} ({acc['difference']:+.1%})"
        lines.append(f"  acceptance: measured {got}, synthetic {syn}{verdict}")
    return "\n".join(lines)
