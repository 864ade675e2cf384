"""Did the run's evals pass? (pure) The planned eval rows against the collected eval results, and the
`/use` rule that reads the answer back from the run's artifact names.

`results collect` finds the sweep's plan (the `changelog-metadata` artifact's plan.json) beside the
per-job results, so an eval row that never ran (its family's canary failed, the job was cancelled or
never uploaded) counts as not passed, exactly like one whose scores were too low. The verdict is
uploaded as an artifact whose *name* says it (`evals_passed`, `evals_failed`, `evals_none`), so
`/use` decides from the artifact list it already reads, without downloading anything.
"""

from __future__ import annotations

from ci_tools.sweep.buckets import EVAL_BUCKETS
from ci_tools import names

PASSED, FAILED, NONE = "passed", "failed", "none"


def point_key(point: dict) -> tuple:
    conc = point.get("conc")
    conc = tuple(conc) if isinstance(conc, list) else conc
    return (point.get("config-key"), point.get("tp"), point.get("ep", 1), bool(point.get("dp-attn")), conc)


def describe(point: dict) -> str:
    dpa = " dp-attn" if point.get("dp-attn") else ""
    return f"{point.get('config-key')} tp{point.get('tp')} ep{point.get('ep', 1)}{dpa} conc {point.get('conc')}"


def planned_eval_rows(plan: dict) -> list[dict]:
    """Eval rows of a plan (`ci-tools plan --format json`): its eval buckets and any eval canary."""
    rows = [r for b in EVAL_BUCKETS for r in (plan.get("buckets") or {}).get(b) or []]
    rows += [r for r in plan.get("canaries") or [] if r.get("run-eval") or r.get("eval-only")]
    seen, out = set(), []
    for r in rows:
        if point_key(r) not in seen:
            seen.add(point_key(r))
            out.append(r)
    return out


def verdict(planned: list[dict] | None, evals: list[dict]) -> dict:
    """`planned` None: the plan was not found, so only the collected eval results can be judged."""
    by_key = {point_key(e.get("point") or {}): e for e in evals}
    failed = [f"{describe(e['point'])}: {(e.get('failures') or [{}])[0].get('message', 'invalid')}"
              + (f" (and {len(e['failures']) - 1} more)" if len(e.get("failures") or []) > 1 else "")
              for e in evals if not e.get("valid")]
    missing: list[str] = []
    notes: list[str] = []
    if planned is None:
        notes.append("the sweep's plan (changelog-metadata/plan.json) was not found: only the eval results "
                     "present were judged, an eval row that did not run cannot be told apart")
        expected = len(evals)
    else:
        expected = len(planned)
        missing = [f"{describe(r)}: did not run (no eval result)" for r in planned if point_key(r) not in by_key]
        planned_keys = {point_key(r) for r in planned}
        notes += [f"{describe(e['point'])}: an eval result the plan did not ask for (kept, not counted)"
                  for e in evals if point_key(e.get("point") or {}) not in planned_keys]
    if expected == 0:
        state = NONE
    else:
        state = FAILED if failed or missing else PASSED
    return {"verdict": state, "artifact": names.EVAL_VERDICT_ARTIFACTS[state], "expected": expected,
            "passed": sum(1 for e in evals if e.get("valid")), "failed": failed, "missing": missing, "notes": notes}


def reuse_problem(artifact_names: set[str]) -> str | None:
    """Why a run may not be reused for its evals, from its artifact names; None when it may.

    A ci-tools run (it has the run-level collection) must carry a passing or empty eval verdict.
    Runs made by InferenceX's own workflows before the switch have no verdict: their eval jobs
    failed the run themselves (validate_scores), so they are judged by the run's other rules."""
    a = names.EVAL_VERDICT_ARTIFACTS
    if a[FAILED] in artifact_names:
        return ("its eval rows failed or did not run (artifact " + a[FAILED] + "); see the eval table on the "
                "PR status card, fix them and run a new full sweep")
    if names.COLLECTION_ARTIFACT in artifact_names and not {a[PASSED], a[NONE]} & artifact_names:
        return (f"it has no eval verdict ({a[PASSED]} or {a[NONE]}): its collect job did not finish, so "
                "whether its eval rows passed is unknown; run a new full sweep")
    return None
