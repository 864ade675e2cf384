"""Reuse resolution: the spec's acceptance cases (§8, 46-72) as tables against the fake GitHub, request budgets asserted, and one test per weakness fixed (W1-W5, W13, W25)."""

from __future__ import annotations

import pytest

from ci_tools.prbot.reuse.flow import resolve_reuse
from ci_tools.prbot.reuse import decide as reuse
from gh_scenarios import FULL, MERGE, SHA1, SHA2, SHA3, authorise, lazy, merge, pr_with_sweep, pr_event, push_event, refused, \
    settings

# ---- PR side (50-52, W1) ------------------------------------------------------------------------

def run_resolve(fake, event, **kw):
    gh = lazy(fake, **kw)
    res = resolve_reuse(event, settings(), gh)
    return res, gh


def test_50_synchronize_after_authorisation_skips_the_pr_sweep(fake):
    pr_with_sweep(fake, 1321)
    authorise(fake, 1321, "/use")
    res, gh = run_resolve(fake, pr_event(fake, 1321, "synchronize"))
    assert res.outputs["skip-pr-sweep"] == "true" and res.outputs["reuse-enabled"] == "false"
    assert res.outputs["reuse-source-pr-number"] == "1321"


def test_51_command_without_write_permission_does_not_skip(fake):
    pr_with_sweep(fake, 1321)
    authorise(fake, 1321, "/use", association="MEMBER", permission="triage")
    res, _ = run_resolve(fake, pr_event(fake, 1321, "synchronize"))
    assert res.outputs["skip-pr-sweep"] == "false"


def test_private_member_with_write_permission_skips(fake):
    """#16.3: a maintainer whose org membership is private comments as CONTRIBUTOR."""
    pr_with_sweep(fake, 1321)
    authorise(fake, 1321, "/use", association="CONTRIBUTOR", permission="write")
    res, _ = run_resolve(fake, pr_event(fake, 1321, "synchronize"))
    assert res.outputs["skip-pr-sweep"] == "true"


@pytest.mark.parametrize("action", ["labeled", "opened", "unlabeled", "ready_for_review"])
def test_52_other_pr_actions_cost_zero_calls(fake, action):
    pr_with_sweep(fake, 1321)
    authorise(fake, 1321, "/use")
    res, gh = run_resolve(fake, pr_event(fake, 1321, action))
    assert res.outputs["skip-pr-sweep"] == "false" and gh.calls == 0 and fake.requests == []


def test_w1_a_push_changing_benchmark_inputs_after_authorisation_sweeps_again(fake):
    pr_with_sweep(fake, 5, commits=(SHA1, SHA2))
    authorise(fake, 5, "/use")
    fake.compares[(SHA1, SHA2)] = ("ahead", ["recipes/gb300/agentic.yaml", "README.md"])
    res, _ = run_resolve(fake, pr_event(fake, 5, "synchronize", before=SHA1, after=SHA2))
    assert res.outputs["skip-pr-sweep"] == "false"
    assert "recipes/gb300/agentic.yaml" in res.outputs["reuse-reason"]


# ---- main side (58-72) --------------------------------------------------------------------------

def merged_case(fake, *, labels=(FULL,), commits=(SHA1,), command="/use", runs=(), filler=0, number=1321,
                record_writer=False, compares=None):
    pr_with_sweep(fake, number, labels=labels, commits=commits, filler=filler)
    fake.compares.update(compares or {})
    for r in runs:
        r = dict(r)
        fake.add_run(r.pop("id"), **r)
    if command is not None:
        authorise(fake, number, command)
    if record_writer:  # what `comment handle` leaves on the status card after checking the author
        fake.add_comment(number, '<!-- ci-tools:status-card -->\n<!-- ci-tools:state {"writers":{"maint":"write"}} -->',
                         author=fake.bot, association="NONE", type_="Bot")
    merge(fake, number)
    return push_event(fake)


CASES = [
    # id, kwargs, expected (enabled, run id, error substring)
    ("58 pinned success", dict(command="/use 25763404168", runs=[dict(id=25763404168, head_sha=SHA1)]),
     (True, 25763404168, None)),
    ("59 pinned failure", dict(command="/use 9", runs=[dict(id=9, head_sha=SHA1, conclusion="failure")]),
     (True, 9, None)),
    ("63 non-canary + all-evals", dict(labels=("non-canary-full-sweep-enabled", "all-evals"), command="/use 9",
                                       runs=[dict(id=9, head_sha=SHA1)]), (True, 9, None)),
    ("64 evals-only blocks", dict(labels=(FULL, "evals-only"), runs=[dict(id=9, head_sha=SHA1)]),
     (False, None, "evals-only")),
    ("64 agentx-fast blocks", dict(labels=(FULL, "agentx-fast"), runs=[dict(id=9, head_sha=SHA1)]),
     (False, None, "agentx-fast")),
    ("65 trimmed label only", dict(labels=("sweep-enabled",), runs=[dict(id=9, head_sha=SHA1)]),
     (False, None, "full-sweep-enabled")),
    ("46 newer failure skipped", dict(runs=[dict(id=111, head_sha=SHA1), dict(id=222, head_sha=SHA1, conclusion="failure")]),
     (True, 111, None)),
    ("47 no artifacts skipped", dict(commits=(SHA2, SHA1), compares={(SHA2, SHA1): ("ahead", [])}, runs=[dict(id=222, head_sha=SHA2),
                                                                  dict(id=333, head_sha=SHA1, artifacts=())]),
     (True, 222, None)),
    ("48 agentic artifact only", dict(runs=[dict(id=5, head_sha=SHA1, artifacts=("bmk_agentic_dsv4_tp8_conc16",
                                                                                          "changelog-metadata"))]),
     (True, 5, None)),
    ("48 agentic artifact, no recorded plan", dict(runs=[dict(id=5, head_sha=SHA1,
                                                             artifacts=("bmk_agentic_dsv4_tp8_conc16",))]),
     (False, None, "has no recorded plan")),
    ("49 expired results", dict(runs=[dict(id=5, head_sha=SHA1, artifacts=("run-stats",), expired=("results_bmk",))]),
     (False, None, "no unexpired benchmark")),
    # a pin of a run that is no sweep authorises nothing (issue 24): main sweeps, the merge does not fail
    ("70 pinned push run", dict(command="/use 9", runs=[dict(id=9, head_sha=SHA1, event="push")]),
     (False, None, None)),
    ("70 pinned other workflow", dict(command="/use 9", runs=[dict(id=9, head_sha=SHA1,
                                                                   path=".github/workflows/e2e-tests.yml")]),
     (False, None, None)),
    ("70 pinned skipped", dict(command="/use 9", runs=[dict(id=9, head_sha=SHA1, conclusion="skipped")]),
     (False, None, "concluded 'skipped'")),
    ("70 pinned in progress", dict(command="/use 9", runs=[dict(id=9, head_sha=SHA1, status="in_progress",
                                                                conclusion=None)]),
     (False, None, "not completed")),
    ("71 pinned cancelled, metadata only", dict(command="/use 9", runs=[dict(
        id=9, head_sha=SHA1, conclusion="cancelled", artifacts=("changelog-metadata", "run-stats"))]),
     (False, None, "no unexpired benchmark")),
    ("71 pinned cancelled with evals", dict(command="/use 9", runs=[dict(
        id=9, head_sha=SHA1, conclusion="cancelled", artifacts=("eval_results_all", "changelog-metadata"))]),
     (True, 9, None)),
    ("72 only a failed run", dict(runs=[dict(id=9, head_sha=SHA1, conclusion="failure")]),
     (False, None, "pin a run")),
    ("57 head not in PR", dict(command="/use 9", runs=[dict(id=9, head_sha=SHA3)]),
     (False, None, "not one of PR #1321's commits")),
    # evals: a run whose eval rows failed or did not run is never reused; one without eval rows is
    ("evals failed, pinned", dict(command="/use 9", runs=[dict(id=9, head_sha=SHA1,
                                                               artifacts=("results_bmk", "evals_failed"))]),
     (False, None, "its eval rows failed or did not run (artifact evals_failed)")),
    ("evals failed, newest skipped", dict(runs=[dict(id=111, head_sha=SHA1),
                                                dict(id=222, head_sha=SHA1, artifacts=("results_bmk", "evals_failed"))]),
     (True, 111, None)),
    ("no eval verdict", dict(command="/use 9", runs=[dict(id=9, head_sha=SHA1, artifacts=("results_bmk",))]),
     (False, None, "it has no eval verdict")),
    ("no eval rows", dict(command="/use 9", runs=[dict(id=9, head_sha=SHA1,
                                                      artifacts=("results_bmk", "evals_none", "changelog-metadata"))]),
     (True, 9, None)),
]


@pytest.mark.parametrize("name,kw,expected", CASES, ids=[c[0] for c in CASES])
def test_merge_resolution(fake, name, kw, expected):
    event = merged_case(fake, **kw)
    res, gh = run_resolve(fake, event)
    enabled, run_id, error = expected
    assert res.outputs["reuse-enabled"] == str(enabled).lower()
    if run_id:
        assert res.outputs["reuse-source-run-id"] == str(run_id)
        assert res.outputs["reuse-source-run-url"].endswith(f"/actions/runs/{run_id}")
        assert res.outputs["reuse-source-head-sha"] and res.outputs["reuse-source-pr-number"] == "1321"
        assert res.outputs["reuse-source-run-attempt"] == "1"
    if error:
        assert refused(res) and error in res.outputs["reuse-reason"], res.outputs["reuse-reason"]
    else:
        assert res.exit_code == 0
    assert not any(c for c in fake.requests if c.startswith(("POST", "PATCH")))


def test_60_runs_are_queried_on_the_pr_head_branch(fake):
    pr_with_sweep(fake, 1321, head_ref="feature-branch")
    fake.add_run(8, head_sha=SHA1, branch="feature-branch")
    authorise(fake, 1321)
    merge(fake, 1321)
    res, _ = run_resolve(fake, push_event(fake))
    assert res.outputs["reuse-source-run-id"] == "8"
    assert any("branch=feature-branch" in r for r in fake.requests)


def test_61_older_pr_commit_selected_when_later_commits_leave_inputs_alone(fake):
    f6, f8 = "f6" + "1" * 38, "f8" + "2" * 38
    pr_with_sweep(fake, 1347, commits=(f6, f8))
    fake.add_run(3, head_sha=f6)
    fake.compares[(f6, f8)] = ("ahead", ["docs/notes.md"])
    authorise(fake, 1347)
    merge(fake, 1347)
    res, _ = run_resolve(fake, push_event(fake))
    assert (res.outputs["reuse-enabled"], res.outputs["reuse-source-head-sha"]) == ("true", f6)


def test_62_no_comments_means_no_reuse(fake):
    event = merged_case(fake, command=None, runs=[dict(id=9, head_sha=SHA1)])
    res, _ = run_resolve(fake, event)
    assert res.outputs["reuse-enabled"] == "false" and res.exit_code == 0
    assert res.outputs["reuse-reason"] == "PR #1321 has no authorised /use command"


def test_66_67_commit_in_several_prs(fake):
    pr_with_sweep(fake, 1)
    pr_with_sweep(fake, 2)
    authorise(fake, 2)
    merge(fake, 1)
    merge(fake, 2)
    fake.commit_pulls[MERGE] = [1, 2]
    res, _ = run_resolve(fake, push_event(fake))
    assert refused(res) and "several PRs (1, 2)" in res.outputs["reuse-reason"] and "#2" in res.outputs["reuse-reason"]
    fake.comments.clear()
    res, _ = run_resolve(fake, push_event(fake))
    assert res.exit_code == 0 and res.outputs["reuse-enabled"] == "false"


def test_68_no_associated_pr_costs_three_bounded_calls_and_other_refs_none(fake):
    """One call once GitHub links the commit; a push with no PR at all is asked about three times
    (GitHub's association lag, #16.10: see test_the_commit_to_pr_association_is_asked_again...)."""
    res, gh = run_resolve(fake, push_event(fake))
    assert res.outputs["reuse-enabled"] == "false" and gh.calls == 3
    res, gh = run_resolve(fake, push_event(fake, ref="refs/heads/dev"))
    assert "not a push to main" in res.outputs["reuse-reason"] and gh.calls == 0


def test_69_unmerged_pr_is_not_reused(fake):
    pr_with_sweep(fake, 1)
    authorise(fake, 1)
    fake.commit_pulls[MERGE] = [1]
    res, _ = run_resolve(fake, push_event(fake))
    assert res.outputs["reuse-enabled"] == "false" and res.exit_code == 0


# ---- weaknesses ---------------------------------------------------------------------------------

def test_w1_commits_after_the_run_touching_benchmark_inputs_refuse_reuse_naming_files(fake):
    event = merged_case(fake, commits=(SHA1, SHA2), command="/use 9", runs=[dict(id=9, head_sha=SHA1)])
    fake.compares[(SHA1, SHA2)] = ("ahead", ["inferencex-e2e/perf-changelog.yaml", "recipes/x/agentic.yaml",
                                             "docs/a.md"])
    res, _ = run_resolve(fake, event)
    assert refused(res)
    assert "inferencex-e2e/perf-changelog.yaml, recipes/x/agentic.yaml" in res.outputs["reuse-reason"]


def test_w1_force_pushed_away_head_is_refused(fake):
    event = merged_case(fake, commits=(SHA1, SHA2), command="/use 9", runs=[dict(id=9, head_sha=SHA1)])
    fake.compares[(SHA1, SHA2)] = ("diverged", [])
    res, _ = run_resolve(fake, event)
    assert refused(res) and "force-pushed" in res.outputs["reuse-reason"]


def test_w2_run_created_before_the_full_sweep_label_is_refused(fake):
    pr_with_sweep(fake, 3, labels=("sweep-enabled",))
    fake.add_run(9, head_sha=SHA1)                  # a trimmed sweep
    fake.label(3, "sweep-enabled", added=False)
    fake.label(3, FULL)
    authorise(fake, 3, "/use 9")
    merge(fake, 3)
    res, _ = run_resolve(fake, push_event(fake))
    assert refused(res) and "not created while a full-sweep label was applied" in res.outputs["reuse-reason"]


def test_w2_run_with_a_blocking_modifier_at_creation_is_refused(fake):
    pr_with_sweep(fake, 3, labels=(FULL, "evals-only"))
    fake.add_run(9, head_sha=SHA1)
    fake.label(3, "evals-only", added=False)
    authorise(fake, 3, "/use 9")
    merge(fake, 3)
    res, _ = run_resolve(fake, push_event(fake))
    assert refused(res) and "ran with evals-only applied" in res.outputs["reuse-reason"]


def test_w3_member_without_write_permission_cannot_authorise(fake):
    event = merged_case(fake, command=None, runs=[dict(id=9, head_sha=SHA1)])
    fake.pulls[1321]["merged_at"] = None
    authorise(fake, 1321, "/use 9", association="MEMBER", permission="read")
    merge(fake, 1321)
    res, _ = run_resolve(fake, event)
    assert res.outputs["reuse-enabled"] == "false" and res.outputs["reuse-authorised"] == "false"


def test_w4_comment_after_merge_is_ignored(fake):
    event = merged_case(fake, command="/use 9", runs=[dict(id=9, head_sha=SHA1), dict(id=10, head_sha=SHA1)])
    authorise(fake, 1321, "/use 10")             # after the merge
    res, _ = run_resolve(fake, event)
    assert res.outputs["reuse-source-run-id"] == "9"


def test_w13_transient_errors_are_retried_and_the_decision_is_the_same(fake):
    event = merged_case(fake, command="/use 9", runs=[dict(id=9, head_sha=SHA1)])
    fake.fail("GET", r"/commits/.*/pulls$", 502)
    fake.fail("GET", r"/timeline$", 429, headers={"Retry-After": "1"})
    fake.fail("GET", r"/artifacts$", 403, headers={"Retry-After": "2"},
              body={"message": "You have exceeded a secondary rate limit"})
    slept = []
    res, _ = run_resolve(fake, event, sleep=slept.append)
    assert res.outputs["reuse-source-run-id"] == "9" and res.exit_code == 0
    assert 1.0 in slept and 2.0 in slept


def test_w13_exhausted_retries_fail_closed_never_guess(fake):
    event = merged_case(fake, command="/use 9", runs=[dict(id=9, head_sha=SHA1)])
    fake.fail("GET", r"/actions/runs/9$", 503, times=50)
    with pytest.raises(Exception) as err:
        run_resolve(fake, event)
    assert "HTTP 503" in str(err.value)


def test_w25_budget_common_unpinned_case(fake):
    """151 comments, 1 commit, 3 runs [failure, success on another sha, success]: InferenceX needs 9."""
    event = merged_case(fake, filler=150, record_writer=True, runs=[
        dict(id=1, head_sha=SHA1), dict(id=2, head_sha=SHA3), dict(id=3, head_sha=SHA1, conclusion="failure")])
    res, gh = run_resolve(fake, event)
    assert res.outputs["reuse-source-run-id"] == "1"
    assert gh.calls <= 8, gh.client.log.calls
    # the recorded writer is re-checked (demotions count) and the timeline checked against the PR's
    # comment count (a page cut short is refused), both #15; the run's recorded plan is downloaded (#25)
    api = [r for r in fake.requests if not r.startswith("GET /_blob/")]   # the zip's storage is not the API
    assert len(api) == gh.calls == 8
    assert len(set(r for r in fake.requests)) == len(fake.requests)       # nothing fetched twice


def test_w25_budget_without_a_recorded_writer_is_one_permission_call_more(fake):
    event = merged_case(fake, filler=150, runs=[dict(id=1, head_sha=SHA1)])
    res, gh = run_resolve(fake, event)
    assert res.outputs["reuse-source-run-id"] == "1" and gh.calls == 8
    assert sum("/permission" in r for r in fake.requests) == 1


def test_forged_writer_record_is_not_trusted(fake):
    event = merged_case(fake, command=None, runs=[dict(id=1, head_sha=SHA1)])
    fake.pulls[1321]["merged_at"] = None
    fake.add_comment(1321, '<!-- ci-tools:status-card -->\n<!-- ci-tools:state {"writers":{"mallory":"write"}} -->',
                     author="mallory", association="MEMBER")
    authorise(fake, 1321, "/use", author="mallory", permission="read")
    merge(fake, 1321)
    res, _ = run_resolve(fake, event)
    assert res.outputs["reuse-enabled"] == "false"


def test_g10_an_authorised_use_does_not_stop_sweeps_of_a_pr_whose_labels_block_reuse(fake):
    """#16.9: full-sweep-enabled + evals-only with an authorised /use: the pin would be refused at
    merge, so the push sweeps (the gate's table said so; the pipeline used to skip). No API call."""
    pr_with_sweep(fake, 1321, labels=("full-sweep-enabled", "evals-only"))
    authorise(fake, 1321, "/use")
    res, gh = run_resolve(fake, pr_event(fake, 1321, "synchronize"))
    assert res.outputs["skip-pr-sweep"] == "false" and "evals-only" in res.messages[0]
    assert gh.calls == 0


@pytest.mark.parametrize("inputs_changed", [True, False])
def test_a_comparison_capped_at_300_files_falls_back_to_the_trees(fake, inputs_changed):
    """#16.10: GitHub lists at most 300 files in a comparison; a recipe change past the 300th must
    still make the pinned run stale, read from the two commits' top-level trees."""
    pr_with_sweep(fake, 1321, commits=(SHA1, SHA2))
    fake.add_run(9, head_sha=SHA1, pull_requests=(1321,))
    authorise(fake, 1321, "/use 9")
    merge(fake, 1321)
    fake.compares[(SHA1, SHA2)] = ("ahead", [f"docs/page-{i}.md" for i in range(300)])
    fake.tree_entries[f"tree-{SHA2}"] = {"inferencex-e2e": "t-e2e", "recipes": "t-recipes-v2" if inputs_changed
                                         else "t-recipes", "docs": "t-docs-v2"}
    res, _ = run_resolve(fake, push_event(fake))
    if inputs_changed:
        assert res.outputs["reuse-enabled"] == "false" and "recipes/" in res.messages[0]
        assert "first 300 files" in res.messages[0]
    else:
        assert res.outputs["reuse-enabled"] == "true"
    assert sum("/git/trees/" in r for r in fake.requests) == 2


@pytest.mark.parametrize("lag,reused,sleeps", [(0, True, []), (1, True, [3.0]), (2, True, [3.0, 6.0]),
                                               (3, False, [3.0, 6.0])])
def test_the_commit_to_pr_association_is_asked_again_while_github_lags(fake, lag, reused, sleeps):
    """#16.10: right after a merge GitHub may not yet link the merge commit to its PR; main would then
    run a full GPU sweep instead of reusing. Asked again twice (3 s, 6 s), then it gives up."""
    pr_with_sweep(fake, 1321)
    fake.add_run(9, head_sha=SHA1, pull_requests=(1321,))
    authorise(fake, 1321, "/use 9")
    merge(fake, 1321)
    fake.association_lag[MERGE] = lag
    slept = []
    res, gh = run_resolve(fake, push_event(fake), sleep=slept.append)
    assert (res.outputs["reuse-enabled"] == "true") is reused and slept == sleeps
    assert sum("/pulls?" in r and "/commits/" in r for r in fake.requests) == min(lag + 1, 3)
