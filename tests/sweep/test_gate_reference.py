"""Our gate against InferenceX's reference decision function (spec inferencex-pr-policy.md §1.6, the
function its own tests cross-check against its `if:` strings over 17,666 scenarios), exhaustively over
a larger scenario space. Every disagreement must be one of the documented deviations."""

import itertools
from pathlib import Path

import pytest

from ci_tools.prbot.reuse import decide as reuse
from ci_tools.sweep.gate import GateEvent, decide
from ci_tools.sweep.load import load_policy

POLICY = load_policy(Path(__file__).resolve().parents[2])
PRIMARY = ["sweep-enabled", "full-sweep-enabled", "non-canary-full-sweep-enabled", "full-sweep-fail-fast",
           "full-sweep-fail-fast-no-canary"]
FULL = set(PRIMARY[1:])
MODIFIER = ["all-evals", "evals-only", "agentx-fast"]
INFX_POLICY_LABELS = ["skip_queue", "ci-patchwork"]   # InferenceX queue/priority labels: not ours
RELEVANT = set(PRIMARY) | set(MODIFIER) | set(INFX_POLICY_LABELS) | {"engine-patch", "ci-patchwork-waived",
                                                                       "ci-checklist-complete"}


def reference(is_pr, action, label, labels, draft, same_repo, msg, check_ok, auth):
    """InferenceX: (check, reuse gate, setup) -> we return (check ran, gate ran, setup RUN)."""
    labels = set(labels)
    if not (is_pr and not draft and (action not in ("labeled", "unlabeled") or label in RELEVANT)):
        check = "skipped"
    elif len(labels & set(PRIMARY)) > 1:
        check = "failure"
    else:
        check = "success" if check_ok else "failure"
    gate_runs = (check == "success" and is_pr and action == "synchronize" and not draft and labels & FULL
                 and not labels & {"evals-only", "agentx-fast"})
    reuse = "success" if gate_runs else "skipped"
    authorized = gate_runs and auth
    action_ok = action not in ("labeled", "unlabeled") or label in RELEVANT
    run = (check in ("success", "skipped") and (reuse == "skipped" or not authorized)
           and ((not is_pr) or (not draft and same_repo and labels & set(PRIMARY) and action_ok
                                 and "[skip-sweep]" not in msg)))
    return check != "skipped", bool(gate_runs), bool(run)


def label_sets():
    primaries = [()] + [(p,) for p in PRIMARY] + [("full-sweep-enabled", "full-sweep-fail-fast")]
    mods = [c for n in range(4) for c in itertools.combinations(MODIFIER, n)]
    for p, m, q in itertools.product(primaries, mods, [()]):
        yield p + m + q


SCENARIOS = list(itertools.product(
    ["synchronize", "labeled", "unlabeled", "ready_for_review"],
    PRIMARY + MODIFIER + INFX_POLICY_LABELS + ["documentation"],
    list(label_sets()), [False, True], [True, False], ["feat: x", "fix: y [skip-sweep]"], [True, False],
    [False, True]))


def deviation(action, label, labels, msg):
    if action in ("labeled", "unlabeled") and label in INFX_POLICY_LABELS:
        return "W14: labels outside the policy file restart nothing"
    if action == "labeled" and label in PRIMARY and "[skip-sweep]" in msg:
        return "W16: adding a primary label forces a sweep past [skip-sweep]"
    return None


def test_scenario_space_is_larger_than_inferencex_own():
    assert len(SCENARIOS) > 17_666


def test_gate_agrees_with_the_reference_except_documented_deviations():
    mismatches = {}
    for action, label, labels, draft, same_repo, msg, check_ok, auth in SCENARIOS:
        label_arg = label if action in ("labeled", "unlabeled") else None
        ref_check, ref_gate, ref_run = reference(True, action, label_arg, labels, draft, same_repo, msg, check_ok,
                                                 auth)
        ev = GateEvent("pull_request", action=action, label=label_arg, labels=labels, draft=draft, fork=not same_repo,
                   head_message=msg, pr_number=1, run_id="9")
        d = decide(ev, POLICY, appends_entry=check_ok)
        # The pipeline: the gate, then (when it sweeps) the reuse step, the /use rule's one copy.
        asked = []
        use = reuse.decide_pr_event(action, label_problem=reuse.label_problems(labels, POLICY),
                                    authorisation=lambda: asked.append(1) or reuse.Authorisation(auth, "x"),
                                    pushed_inputs=lambda: []) if d.sweep else None
        sweeps = d.sweep and not (use and use.skip_pr_sweep)
        why = deviation(action, label_arg, labels, msg)
        if why:
            mismatches[why] = mismatches.get(why, 0) + ((d.check, sweeps) != (ref_check, ref_run))
            continue
        assert (d.check, sweeps) == (ref_check, ref_run), (action, label_arg, labels, draft, same_repo, msg,
                                                             check_ok, auth, d.reason)
        # we ask GitHub for /use authorisation only where InferenceX's reuse gate runs, and only when it matters
        if asked:
            assert ref_gate
        if ref_gate and same_repo and "[skip-sweep]" not in msg:
            assert asked
    assert set(mismatches) == {"W14: labels outside the policy file restart nothing",
                               "W16: adding a primary label forces a sweep past [skip-sweep]"}
    assert all(mismatches.values())


@pytest.mark.parametrize("msg", ["feat: add model", "fix: x [skip-sweep]"])
def test_push_always_runs_like_the_reference(msg):
    assert reference(False, None, None, (), False, True, msg, True, False)[2]
    assert decide(GateEvent("push", sha="s", head_message=msg), POLICY, appends_entry=True).sweep
