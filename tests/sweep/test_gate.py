"""The gate decision as a table (spec inferencex-pr-policy.md §8 cases 1-32 and 40, plus ours).

InferenceX's reference answers are (check-changelog, reuse-sweep-gate, setup). Ours are
(check, sweep) plus `restarts` (whether the event takes the PR's active concurrency group). Rows marked DEVIATION
differ on purpose; docs/reference.md lists why.
"""

import pytest

from ci_tools.sweep.gate import GateEvent, decide, mode_for
from ci_tools.sweep.load import load_policy

FSE = "full-sweep-enabled"
FFF = "full-sweep-fail-fast"


@pytest.fixture(scope="module")
def policy(repo_root):
    return load_policy(repo_root)


@pytest.fixture(scope="module")
def repo_root():
    from pathlib import Path
    return Path(__file__).resolve().parents[2]


def pr(action="synchronize", labels=(), label=None, **kw):
    return GateEvent(name="pull_request", action=action, labels=tuple(labels), label=label, pr_number=7,
                 sha="abc", run_id="99", **kw)


# (case id, event, appends_entry, check, sweep, restarts)
CASES = [
    ("G1 sync full, no auth", pr(labels=[FSE]), True, True, True, True),
    ("G3 two primaries", pr(labels=[FSE, FFF]), True, True, False, True),
    ("G4 changelog appends nothing", pr(labels=[FSE]), False, True, False, True),
    ("G5 sweep-enabled runs trimmed", pr(labels=["sweep-enabled"]), True, True, True, True),
    ("G6 all-evals alone", pr(labels=["all-evals"]), True, True, False, True),
    ("G7 evals-only alone", pr(labels=["evals-only"]), True, True, False, True),
    ("G8 agentx-fast alone", pr(labels=["agentx-fast"]), True, True, False, True),
    ("G9 full + all-evals", pr(labels=[FSE, "all-evals"]), True, True, True, True),
    ("G10 full + evals-only", pr(labels=[FSE, "evals-only"]), True, True, True, True),
    ("G11 full + agentx-fast", pr(labels=[FSE, "agentx-fast"]), True, True, True, True),
    ("G12 full + both eval modifiers", pr(labels=[FSE, "all-evals", "evals-only"]), True, True, True, True),
    ("G13 no labels", pr(), True, True, False, True),
    ("G14 fork PR", pr(labels=[FSE], fork=True), True, True, False, True),
    ("G15 labeled primary", pr("labeled", [FSE], FSE), True, True, True, True),
    # modifier on a PR without primary: validated (check) but nothing restarts
    ("G16 labeled all-evals alone", pr("labeled", ["all-evals"], "all-evals"), True, True, False, False),
    ("G17 labeled evals-only alone", pr("labeled", ["evals-only"], "evals-only"), True, True, False, False),
    ("G18 labeled agentx-fast alone", pr("labeled", ["agentx-fast"], "agentx-fast"), True, True, False, False),
    ("G19 labeled all-evals with primary", pr("labeled", [FSE, "all-evals"], "all-evals"), True, True, True, True),
    ("G20 labeled evals-only with primary", pr("labeled", [FSE, "evals-only"], "evals-only"), True, True, True, True),
    ("G21 labeled agentx-fast with primary", pr("labeled", [FSE, "agentx-fast"], "agentx-fast"), True, True, True, True),
    # DEVIATION (W14): queue/priority labels are not ours; they neither restart nor cancel a sweep
    ("G22 labeled skip_queue", pr("labeled", [FSE, "skip_queue"], "skip_queue"), True, False, False, False),
    ("G23 unlabeled skip_queue", pr("unlabeled", [FSE], "skip_queue"), True, False, False, False),
    ("G24 labeled ci-patchwork", pr("labeled", [FSE, "ci-patchwork"], "ci-patchwork"), True, False, False, False),
    ("G25 unlabeled ci-patchwork", pr("unlabeled", [FSE], "ci-patchwork"), True, False, False, False),
    ("G26 labeled documentation", pr("labeled", [FSE], "documentation"), True, False, False, False),
    ("G27 unlabeled last primary stops", pr("unlabeled", [], FSE), True, True, False, True),
    ("G28 draft", pr(labels=[FSE], draft=True), True, False, False, True),
    ("G29 ready_for_review", pr("ready_for_review", [FSE]), True, True, True, True),
    ("G30 [skip-sweep] in head commit", pr(labels=[FSE], head_message="fix: docs [skip-sweep]"), True, True, False, True),
    ("G31 push", GateEvent("push", sha="s1", head_message="feat: add model"), True, False, True, True),
    ("G32 push ignores [skip-sweep]", GateEvent("push", sha="s1", head_message="fix: x [skip-sweep]"), True, False, True, True),
    # ours
    ("ready_for_review sweeps", pr("ready_for_review", [FSE]), True, True, True, True),
    ("labeled primary forces", pr("labeled", [FSE], FSE), True, True, True, True),
    ("labeled primary forces despite [skip-sweep]", pr("labeled", [FFF], FFF, head_message="x [skip-sweep]"), True, True, True, True),
    ("labeled modifier does not override [skip-sweep]",
     pr("labeled", [FFF, "all-evals"], "all-evals", head_message="x [skip-sweep]"), True, True, False, True),
    ("unlabeled modifier with primary restarts", pr("unlabeled", [FSE], "all-evals"), True, True, True, True),
    ("unlabeled modifier without primary", pr("unlabeled", [], "evals-only"), True, True, False, False),
    ("closed cancels", pr("closed", [FSE]), True, False, False, True),
    ("converted_to_draft cancels", pr("converted_to_draft", [FSE], draft=True), True, False, False, True),
    ("edited does nothing", pr("edited", [FSE]), True, False, False, False),
    ("opened behaves like synchronize", pr("opened", [FFF]), True, True, True, True),
    ("reopened behaves like synchronize", pr("reopened", [FFF]), True, True, True, True),
    ("fork labeled primary -> approval path", pr("labeled", [FSE], FSE, fork=True), True, True, False, False),
    ("draft labeled primary", pr("labeled", [FSE], FSE, draft=True), True, False, False, False),
    ("sweep-enabled on sync sweeps", pr(labels=["sweep-enabled"]), True, True, True, True),
    ("pending changelog (gate-only)", pr(labels=[FFF]), None, True, True, True),
    ("push appending nothing", GateEvent("push", sha="s2"), False, False, False, True),
    ("pull_request_target never sweeps here", GateEvent("pull_request_target", action="labeled", label=FSE,
                                                   labels=(FSE,), pr_number=7), True, False, False, False),
    ("local preview with a primary", GateEvent("local", labels=(FFF,)), True, True, True, True),
    ("labeled second primary -> conflict", pr("labeled", [FSE, "sweep-enabled"], "sweep-enabled"), True, True, False, True),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_gate_table(policy, case):
    _, event, appends, check, sweep, restarts = case
    d = decide(event, policy, appends_entry=appends)
    assert (d.check, d.sweep, d.restarts) == (check, sweep, restarts), d.reason
    assert d.reason and "\n" not in d.reason


def test_conflicting_primaries_name_both(policy):
    d = decide(pr(labels=[FSE, FFF]), policy, appends_entry=True)
    assert d.error and FSE in d.error and FFF in d.error and "exactly one" in d.error
    assert not d.sweep


def test_modifier_without_primary_names_the_primaries(policy):
    d = decide(pr(labels=["all-evals"]), policy, appends_entry=True)
    assert "all-evals" in d.reason and FFF in d.reason and d.error is None


@pytest.mark.parametrize("event, group", [
    (pr("labeled", [FSE], "ci-checklist-complete"), "sweep-7-99"),   # G40 DEVIATION: not a policy label here
    (pr("labeled", [FSE], "documentation"), "sweep-7-99"),
    (pr("labeled", [FSE, "all-evals"], "all-evals"), "sweep-7-active"),
    (pr("synchronize", [FSE]), "sweep-7-active"),
    (pr("closed", [FSE]), "sweep-7-active"),
    (GateEvent("push", sha="deadbeef"), "sweep-deadbeef-active"),
    (GateEvent("pull_request", action="labeled", label="bug", pr_number=3), "sweep-3-noop"),
])
def test_concurrency_group(policy, event, group):
    assert decide(event, policy, appends_entry=True).concurrency_group == group


def test_fork_primary_label_requests_trusted_approval(policy):
    d = decide(pr("labeled", [FFF], FFF, fork=True), policy, appends_entry=True)
    assert d.fork_approval and not d.sweep and "fork" in d.reason


# What an authorised /use does to a synchronize has one home, reuse.decide_pr_event (#16.9); the rows
# that carried `use_authorized` in the gate's table are this table now. G10: on a PR labelled
# full-sweep-enabled + evals-only the pin would be refused at merge, so the push sweeps.
# (case id, labels, authorised, /use looked up, sweep skipped)
USE_CASES = [
    ("G1 full, not authorised", [FSE], False, True, False),
    ("G2 full, authorised -> no sweep", [FSE], True, True, True),
    ("G9 full + all-evals, authorised -> no sweep", [FSE, "all-evals"], True, True, True),
    ("G10 full + evals-only, authorised: sweeps", [FSE, "evals-only"], True, False, False),
    ("G11 full + agentx-fast, authorised: sweeps", [FSE, "agentx-fast"], True, False, False),
    ("G12 full + both eval modifiers, authorised: sweeps", [FSE, "all-evals", "evals-only"], True, False, False),
    ("sweep-enabled, authorised: not reusable, sweeps", ["sweep-enabled"], True, False, False),
]


@pytest.mark.parametrize("case", USE_CASES, ids=[c[0] for c in USE_CASES])
def test_authorised_use_on_synchronize(policy, case):
    from ci_tools.prbot.reuse import decide as reuse

    _, labels, authorised, lookup, skip = case
    asked = []

    def authorisation():
        asked.append(True)
        return reuse.Authorisation(authorised, "x")

    d = reuse.decide_pr_event("synchronize", label_problem=reuse.label_problems(labels, policy),
                              authorisation=authorisation, pushed_inputs=lambda: [])
    assert (bool(asked), d.skip_pr_sweep) == (lookup, skip), d.reason
    assert decide(pr(labels=labels), policy, appends_entry=True).sweep      # the gate alone always sweeps these


def test_the_rule_has_one_copy():
    """#16.9: the gate takes no /use input: the pipeline's reuse step is the rule's only copy."""
    import inspect

    assert "use_authorized" not in inspect.signature(decide).parameters
    assert "needs-use-lookup" not in decide(pr(labels=[FSE]), load_policy(__import__("pathlib").Path(__file__).resolve().parents[2]), appends_entry=True).as_dict()


@pytest.mark.parametrize("labels, scope, canary, fail_fast, evals, agentx, reusable", [
    (["sweep-enabled"], "trimmed", False, False, "default", False, False),
    ([FSE], "full", True, False, "default", False, True),
    ([FFF], "full", True, True, "default", False, True),
    (["full-sweep-fail-fast-no-canary"], "full", False, True, "default", False, True),
    (["non-canary-full-sweep-enabled"], "full", False, False, "default", False, True),
    ([FFF, "all-evals"], "full", True, True, "all", False, True),
    ([FFF, "evals-only"], "full", True, True, "only", False, False),
    ([FFF, "all-evals", "evals-only"], "full", True, True, "all-only", False, False),
    ([FFF, "agentx-fast"], "full", True, True, "default", True, False),
    (["sweep-enabled", "all-evals", "bug"], "trimmed", False, False, "all", False, False),
])
def test_mode_for_labels(policy, labels, scope, canary, fail_fast, evals, agentx, reusable):
    m = mode_for(labels, policy)
    assert (m.scope, m.canary, m.fail_fast, m.evals, m.agentx_fast, m.reusable) == (
        scope, canary, fail_fast, evals, agentx, reusable)


@pytest.mark.parametrize("labels", [[], ["all-evals"], [FSE, FFF]])
def test_mode_needs_exactly_one_primary(policy, labels):
    assert mode_for(labels, policy) is None


def test_push_mode_has_no_canary_or_fail_fast(policy):
    d = decide(GateEvent("push", sha="x"), policy, appends_entry=True)
    assert d.mode and not d.mode.canary and not d.mode.fail_fast and d.mode.scope == "full"


# ---- re-runs (issue 23.4): a re-run replays the old payload into the PR's active group ---------------

from ci_tools.sweep.gate import PrNow, refuse_rerun, superseded  # noqa: E402

RERUNS = [
    # name, the run's event, the PR now, refused because (substring) or None
    ("newest run retried", pr(labels=(FFF,)), PrNow("abc", (FFF,)), None),
    ("irrelevant label added since", pr(labels=(FFF,)), PrNow("abc", (FFF, "skip_queue")), None),
    ("pushed since", pr(labels=(FFF,)), PrNow("def", (FFF,)), "the PR's head is now def"),
    ("modifier added since", pr(labels=(FFF,)), PrNow("abc", (FFF, "evals-only")), "the PR now has evals-only"),
    ("primary removed since", pr(labels=(FFF,)), PrNow("abc", ()), "the PR now has none"),
    ("closed, then reopened", pr("closed", labels=(FFF,)), PrNow("abc", (FFF,), state="open"), "open and ready"),
    ("closed, still closed", pr("closed", labels=(FFF,)), PrNow("abc", (FFF,), state="closed"), None),
]


@pytest.mark.parametrize("name,event,now,why", RERUNS, ids=[r[0] for r in RERUNS])
def test_a_rerun_is_refused_once_the_pr_moved_on(policy, name, event, now, why):
    found = superseded(event, now, policy)
    if why is None:
        assert found is None
        return
    assert why in found and "superseded" in found and "sweep-7-active" in found
    refused = refuse_rerun(decide(event, policy), event, found)
    assert (refused.sweep, refused.restarts, refused.error) == (False, False, found)
    assert refused.concurrency_group == "sweep-7-99"
