"""Issue 23 scenarios: main never loses a result. Each runs the flows against the fake GitHub over HTTP,
on events parsed from the real webhook payloads (../shared/corpus/github-webhooks), with a real git
repository for the rebase-safe inputs check (the demo repository: the seed PR's changelog entry selects
`dsv41flash-fp4-gb300-sglang-agentic-dspark`, served by `recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml`).

SCENARIOS is the table the issue's note asks for (scenario, before, after); each test asserts its row's
"after" and, where the old code can be run, its "before".
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ci_tools.github.events import parse_event
from ci_tools.prbot.flow import handle_comment
from ci_tools.prbot.reuse import ready as readiness
from ci_tools.prbot.reuse.flow import resolve_reuse
from ci_tools.prbot.reuse.ready_flow import ready, recover
from ci_tools.prbot.shell import Settings
from gh_scenarios import FULL, REPO_ROOT, authorise, lazy, pr_with_sweep
from test_gh_cli import ci, outputs

RECIPE = "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"
NOW = datetime(2026, 10, 2, tzinfo=timezone.utc)
EVAL_JOB = "sweep / stages / evals / gsm8k dsv41flash gb300"
BENCH_JOB = "sweep / stages / single-node-agentic / dsv41flash gb300 tp4"

SCENARIOS = [
    ("merge before /use", "nothing warned; main swept only if it happened to",
     "readiness red naming the run to pin; at merge main runs its own sweep; the card says so"),
    ("rebase after a green sweep, inputs unchanged", "pin refused (head not in the PR / force-pushed away)",
     "pin kept; reply/card: measured commit X, unchanged at the new head and at the merge commit"),
    ("rebase with a changed recipe", "pin refused only if the file rule saw the commit",
     "pin refused naming the recipe file; at merge main runs its own sweep"),
    ("eval-only job cancelled", "run concluded cancelled: refused unpinned",
     "reuse accepted; the card names the cancelled eval job"),
    ("artifacts expire", "no warning; at merge the run failed (410), nothing published",
     "readiness red 7 days before; at merge main runs its own sweep (fail only with on-refused-reuse: fail)"),
    ("recovery", "hand-written procedure",
     "`reuse recover` checks and sends one dispatch; refused, naming the file, when inputs differ"),
]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """base -> R1 (the PR); main moves on to M1; R2 = the PR rebased onto M1 (same inputs); R3 = R2 with the
    recipe changed; MC2 / MC3 = squash merges of R2 / R3 onto M1. The checkout stays on main."""
    spec = importlib.util.spec_from_file_location("demo", REPO_ROOT / "examples" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    repo = tmp_path_factory.mktemp("history")
    demo.build_scratch_repo(repo)
    c = {"base": _git(repo, "rev-parse", "base"), "R1": _git(repo, "rev-parse", "head")}
    _git(repo, "checkout", "-q", "-b", "main-next", "base")
    (repo / "NOTES.md").write_text("main moved on\n")
    _git(repo, "add", "NOTES.md")
    _git(repo, "commit", "-q", "-m", "unrelated change on main")
    c["M1"] = _git(repo, "rev-parse", "HEAD")
    _git(repo, "cherry-pick", c["R1"])
    c["R2"] = _git(repo, "rev-parse", "HEAD")
    path = repo / RECIPE
    path.write_text(path.read_text() + "# tuned after the sweep\n")
    _git(repo, "commit", "-q", "-am", "retune the recipe")
    c["R3"] = _git(repo, "rev-parse", "HEAD")
    for name, head in (("MC2", "R2"), ("MC3", "R3")):
        tree = _git(repo, "rev-parse", f"{c[head]}^{{tree}}")
        c[name] = _git(repo, "commit-tree", tree, "-p", c["M1"], "-m", f"squash merge of {head}")
    _git(repo, "checkout", "-q", "-B", "main", c["M1"])
    return repo, c


def settings_of(repo: Path, **reuse) -> Settings:
    s = Settings(repo_root=repo, card_settle=0)
    if reuse:
        s._policy = dataclasses.replace(s.policy, reuse=dataclasses.replace(s.policy.reuse, **reuse))
    return s


# ---- events from the real payloads -------------------------------------------------------------

def corpus(shared, kind: str, name: str) -> dict:
    return json.loads((shared / "corpus" / "github-webhooks" / kind / name).read_text())


def pr_target_event(shared, fake, number: int, action: str = "synchronize", *, name: str = "pull_request_target",
                    before: str = ""):
    data = corpus(shared, "pull_request", f"{action}.payload.json")
    if before:
        data.update(before=before, after=fake.pulls[number]["head"]["sha"])
    p = fake.pulls[number]
    data["number"] = number
    data["pull_request"].update(number=number, labels=p["labels"], state=p["state"], merged_at=p["merged_at"])
    data["pull_request"]["head"].update(sha=p["head"]["sha"], ref=p["head"]["ref"])
    data["pull_request"]["head"]["repo"]["full_name"] = fake.repo
    data["pull_request"]["base"]["repo"]["full_name"] = fake.repo
    data["repository"]["full_name"] = fake.repo
    return parse_event(data, name)


def comment_event(shared, fake, number: int, comment: dict):
    data = corpus(shared, "issue_comment", "created.payload.json")
    data["issue"].update(number=number, pull_request={"url": "https://x"})
    data["comment"].update(id=comment["id"], body=comment["body"], user=comment["user"],
                           created_at=comment["created_at"], html_url=comment["html_url"])
    data["repository"]["full_name"] = fake.repo
    return parse_event(data, "issue_comment")


def sweep_end_event(shared, fake, run_id: int, number: int):
    data = corpus(shared, "workflow_run", "completed.with-pull-requests.payload.json")
    run = fake.runs[run_id]
    data["workflow_run"].update(id=run_id, head_sha=run["head_sha"], conclusion=run["conclusion"],
                                path=run["path"], event=run["event"], head_branch=run["head_branch"])
    data["workflow_run"]["pull_requests"][0]["number"] = number
    data["repository"]["full_name"] = fake.repo
    return parse_event(data, "workflow_run")


def push_event(shared, fake, sha: str, before: str):
    data = corpus(shared, "push", "payload.json")
    data.update(ref="refs/heads/main", after=sha, before=before)
    data["repository"]["full_name"] = fake.repo
    return parse_event(data, "push")


def merged(fake, number: int, sha: str) -> None:
    fake.pulls[number].update(merged_at=fake.tick(), merged=True, state="closed")
    fake.commit_pulls[sha] = [number]


def card(fake, number: int) -> str:
    bodies = [c["body"] for c in fake.bot_comments(number) if c["body"].startswith("<!-- ci-tools:status-card")]
    return bodies[-1] if bodies else ""


def status(fake, sha: str) -> dict:
    """The readiness check run of `sha`, as its state and one-line description (its title)."""
    mine = [c for c in fake.check_runs if c["_sha"] == sha and c["name"] == readiness.CONTEXT]
    return {"state": mine[-1]["conclusion"], "description": mine[-1]["output"]["title"],
            "summary": mine[-1]["output"]["summary"]}


def pr_at(fake, head: str, *, commits=None, files=("inferencex-e2e/perf-changelog.yaml",), **kw) -> dict:
    pr = pr_with_sweep(fake, 7, commits=tuple(commits or (head,)), **kw)
    fake.pr_files[7] = list(files)
    return pr


def resolve_at_merge(fake, shared, s, sha, before):
    return resolve_reuse(push_event(shared, fake, sha, before), s, lazy(fake))


# ---- the scenarios -----------------------------------------------------------------------------

def test_merge_before_use_is_red_and_main_sweeps_itself(fake, shared, history):
    repo, c = history
    s = settings_of(repo)
    pr_at(fake, c["R2"])
    fake.add_run(9, head_sha=c["R2"])
    res = ready(pr_target_event(shared, fake, 7), s, lazy(fake), now=NOW)
    st = status(fake, c["R2"])
    assert st["state"] == "failure" and res.outputs["ready"] == "false"
    assert "no /use pin: comment /use 9" in st["description"]
    assert "**Ready to merge: no.** No `/use` pin" in card(fake, 7) and "`/use 9`" in card(fake, 7)
    merged(fake, 7, c["MC2"])
    out = resolve_at_merge(fake, shared, s, c["MC2"], c["M1"])
    # reuse is off and the job passes: the pipeline's plan step (`reuse-enabled != 'true'`) sweeps main
    assert out.exit_code == 0 and out.outputs["reuse-enabled"] == "false" and out.outputs["reuse-refused"] == "false"
    ready(push_event(shared, fake, c["MC2"], c["M1"]), s, lazy(fake), now=NOW)
    assert "no `/use` pin counted" in card(fake, 7) and "main runs its own sweep" in card(fake, 7)


def test_not_performance_relevant_is_green_without_a_pin(fake, shared, history):
    repo, c = history
    pr_at(fake, c["R2"], files=("docs/notes.md",))
    ready(pr_target_event(shared, fake, 7), settings_of(repo), lazy(fake), now=NOW)
    assert status(fake, c["R2"])["state"] == "success"
    assert "not performance-relevant" in status(fake, c["R2"])["description"]


def test_rebase_with_unchanged_inputs_keeps_the_pin(fake, shared, history):
    repo, c = history
    s = settings_of(repo)
    pr_at(fake, c["R2"])                       # force-pushed: the timeline lists only the rebased commit
    fake.add_run(9, head_sha=c["R1"])
    use = authorise(fake, 7, "/use 9")
    handle_comment(comment_event(shared, fake, 7, use), s, lazy(fake))      # the reply to `/use 9`
    reply = next(c["body"] for c in fake.bot_comments(7) if "is usable as things stand" in c["body"])
    assert f"Measured commit `{c['R1'][:12]}`; its selected master entries and recipes are unchanged at " \
           f"`{c['R2'][:12]}`" in reply
    ready(comment_event(shared, fake, 7, use), s, lazy(fake), now=NOW)
    st = status(fake, c["R2"])
    assert st["state"] == "success", st["description"]
    body = card(fake, 7).lower()
    assert f"measured commit `{c['R1'][:12]}`" in body and f"unchanged at `{c['R2'][:12]}`" in body
    merged(fake, 7, c["MC2"])
    out = resolve_at_merge(fake, shared, s, c["MC2"], c["M1"])
    assert (out.exit_code, out.outputs["reuse-enabled"], out.outputs["reuse-source-run-id"]) == (0, "true", "9")
    assert any(f"unchanged at `{c['MC2'][:12]}`" in m for m in out.messages), out.messages
    # before: without the inputs comparison (no checkout) the same pin is refused
    blind = resolve_at_merge(fake, shared, settings_of(REPO_ROOT), c["MC2"], c["M1"])
    assert blind.outputs["reuse-enabled"] == "false" and "not one of PR #7's commits" in blind.outputs["reuse-reason"]


def test_a_rebase_after_use_starts_no_sweep_unless_what_it_measures_changed(fake, shared, history):
    """The PR side of the same rule: after `/use`, a synchronize skips the sweep unless the push changes
    what the PR measures. A rebase brings main's changelog (the file rule named it and swept again)."""
    repo, c = history
    s = settings_of(repo)
    pr_at(fake, c["R2"], commits=(c["R2"],))
    authorise(fake, 7, "/use")
    fake.compares[(c["R1"], c["R2"])] = ("diverged", ["inferencex-e2e/perf-changelog.yaml", "NOTES.md"])
    out = resolve_reuse(pr_target_event(shared, fake, 7, name="pull_request", before=c["R1"]), s, lazy(fake))
    assert out.outputs["skip-pr-sweep"] == "true", out.outputs["reuse-reason"]
    blind = resolve_reuse(pr_target_event(shared, fake, 7, name="pull_request", before=c["R1"]),
                          settings_of(REPO_ROOT), lazy(fake))               # before: the file rule alone
    assert blind.outputs["skip-pr-sweep"] == "false" and "perf-changelog.yaml" in blind.outputs["reuse-reason"]
    fake.pulls[7]["head"]["sha"] = c["R3"]
    out = resolve_reuse(pr_target_event(shared, fake, 7, name="pull_request", before=c["R2"]), s, lazy(fake))
    assert out.outputs["skip-pr-sweep"] == "false" and f"{RECIPE} changed" in out.outputs["reuse-reason"]


def test_rebase_with_a_changed_recipe_refuses_the_pin_naming_the_file(fake, shared, history):
    repo, c = history
    s = settings_of(repo)
    pr_at(fake, c["R3"], commits=(c["R2"], c["R3"]))
    fake.add_run(9, head_sha=c["R1"])
    use = authorise(fake, 7, "/use 9")
    ready(comment_event(shared, fake, 7, use), s, lazy(fake), now=NOW)
    st = status(fake, c["R3"])
    assert st["state"] == "failure" and "pin would be refused" in st["description"]
    assert f"{RECIPE} changed" in card(fake, 7)
    merged(fake, 7, c["MC3"])
    out = resolve_at_merge(fake, shared, s, c["MC3"], c["M1"])
    assert out.exit_code == 0 and out.outputs["reuse-refused"] == "true" and out.outputs["reuse-enabled"] == "false"
    assert f"{RECIPE} changed" in out.outputs["reuse-reason"] and "Main runs its own sweep" in out.outputs["reuse-reason"]
    ready(push_event(shared, fake, c["MC3"], c["M1"]), s, lazy(fake), now=NOW)
    assert "reuse was refused" in card(fake, 7) and f"{RECIPE} changed" in card(fake, 7)


def test_a_cancelled_eval_job_leaves_the_run_reusable_and_is_named(fake, shared, history):
    repo, c = history
    s = settings_of(repo)
    pr_at(fake, c["R2"])
    fake.add_run(9, head_sha=c["R2"], conclusion="cancelled",
                 artifacts=("results_bmk", "evals_failed", "changelog-metadata"))
    fake.add_job(9, BENCH_JOB)
    fake.add_job(9, EVAL_JOB, conclusion="cancelled")
    authorise(fake, 7, "/use")                                     # unpinned: the newest eligible run
    ready(sweep_end_event(shared, fake, 9, 7), s, lazy(fake), now=NOW)
    assert status(fake, c["R2"])["state"] == "success", status(fake, c["R2"])["description"]
    assert f"{EVAL_JOB} (cancelled)" in card(fake, 7)
    merged(fake, 7, c["MC2"])
    out = resolve_at_merge(fake, shared, s, c["MC2"], c["M1"])
    assert (out.outputs["reuse-enabled"], out.outputs["reuse-source-run-id"]) == ("true", "9")
    assert any(EVAL_JOB in m for m in out.messages)


def test_a_cancelled_benchmark_job_still_refuses(fake, shared, history):
    repo, c = history
    pr_at(fake, c["R2"])
    fake.add_run(9, head_sha=c["R2"], conclusion="cancelled")
    fake.add_job(9, BENCH_JOB, conclusion="cancelled")
    authorise(fake, 7, "/use 9")
    merged(fake, 7, c["MC2"])
    out = resolve_at_merge(fake, shared, settings_of(repo), c["MC2"], c["M1"])
    assert out.outputs["reuse-refused"] == "true" and f"{BENCH_JOB} (cancelled)" in out.outputs["reuse-reason"]


def test_expiring_artifacts_are_red_seven_days_before_and_main_sweeps_at_merge(fake, shared, history):
    repo, c = history
    s = settings_of(repo)
    pr_at(fake, c["R2"])
    fake.add_run(9, head_sha=c["R2"], expires_at="2026-10-07T00:00:00Z")       # NOW + 5 days
    authorise(fake, 7, "/use 9")
    ready(pr_target_event(shared, fake, 7, "labeled"), s, lazy(fake), now=NOW)
    st = status(fake, c["R2"])
    assert st["state"] == "failure" and "artifacts expire 2026-10-07" in st["description"]
    assert "Re-run the sweep" in card(fake, 7)
    # eight days before it is green
    ready(pr_target_event(shared, fake, 7, "labeled"), s, lazy(fake), now=datetime(2026, 9, 28, tzinfo=timezone.utc))
    assert status(fake, c["R2"])["state"] == "success"
    merged(fake, 7, c["MC2"])
    # merged after they expired, before GitHub's listing says so: past `expires_at` counts as expired
    # (the download would answer 410 and the import job would publish nothing)
    lag = resolve_at_merge(fake, shared, s, c["MC2"], c["M1"])
    assert lag.outputs["reuse-refused"] == "true" and "no unexpired benchmark" in lag.outputs["reuse-reason"]
    for a in fake.artifacts[9]:
        a["expired"] = True
    out = resolve_at_merge(fake, shared, s, c["MC2"], c["M1"])
    assert out.exit_code == 0 and out.outputs["reuse-refused"] == "true"
    assert "no unexpired benchmark" in out.outputs["reuse-reason"]
    # only a policy that says so leaves main without results
    strict = resolve_at_merge(fake, shared, settings_of(repo, on_refused="fail"), c["MC2"], c["M1"])
    assert strict.exit_code == 1 and strict.outputs["reuse-error"] == "true"


def test_the_daily_pass_turns_a_pin_red_as_its_artifacts_approach_expiry(fake, shared, history):
    """No event fires as artifacts age: `reuse ready --open-prs` (merge-ready.yml's schedule) checks every
    open PR; one that cannot be checked is reported and the others still are."""
    repo, c = history
    s = settings_of(repo)
    pr_at(fake, c["R2"])
    fake.add_run(9, head_sha=c["R2"], expires_at="2026-10-20T00:00:00Z")
    authorise(fake, 7, "/use 9")
    fake.add_pr(8, head_sha=c["R3"], head_ref="docs")
    fake.pr_files[8] = ["docs/notes.md"]
    res = ready(None, s, lazy(fake), open_prs=True, now=NOW)
    assert res.exit_code == 0 and status(fake, c["R2"])["state"] == "success" and res.messages[0].startswith(
        "checked the open PRs: 0 not ready")
    later = datetime(2026, 10, 14, tzinfo=timezone.utc)              # 6 days before the artifacts expire
    res = ready(None, s, lazy(fake), open_prs=True, now=later)
    assert status(fake, c["R2"])["state"] == "failure" and status(fake, c["R3"])["state"] == "success"
    assert res.messages[0] == "checked the open PRs: 1 not ready to merge (#7)"
    fake.fail("GET", r"/pulls/8/files", 404, times=10)
    res = ready(None, s, lazy(fake), open_prs=True, now=later)
    assert res.exit_code == 1 and "1 could not be checked" in res.messages[0]


def recover_env(fake, env, repo):
    return {**env, "RESULTS_DISPATCH_TOKEN": "dispatch-token"}


def test_recovery_in_one_command(fake, shared, history, env):
    repo, c = history
    pr_at(fake, c["R2"])
    fake.add_run(9, head_sha=c["R1"])                         # the sweep ran before the rebase
    merged(fake, 7, c["MC2"])
    fake.add_run(50, head_sha=c["MC2"], branch="main", event="push", conclusion="failure")   # main's merge run
    args = ["reuse", "recover", "--merge-commit", c["MC2"], "--run", "9", "--repo-root", str(repo)]
    dry = ci([*args, "--dry-run"], recover_env(fake, env, repo))
    assert dry.returncode == 0, dry.stderr
    assert "[pass] inputs" in dry.stdout + dry.stderr and '"source-run-id": "9"' in dry.stdout + dry.stderr
    assert fake.dispatches == []
    real = ci([*args, "--format", "github"], {**recover_env(fake, env, repo), "GITHUB_RUN_ID": "700"})
    assert real.returncode == 0, real.stderr
    assert [(d["event_type"], d["client_payload"]["source-run-id"], d["client_payload"]["merge-run-id"])
            for d in fake.dispatches] == [("ingest-results", "9", "50")]
    assert outputs(env)["dispatched"] == "true"


def test_a_recovery_is_its_own_request_and_a_rerun_of_it_sends_nothing_twice(fake, shared, history):
    """The results app de-duplicates on dispatch-key. A recovery under the merge's own key (source run,
    attempt, merge run) would be dropped by an app that received the merge's ingest and failed there;
    so the recovery's request id (its workflow run) is in its key, and its send goes through send_once,
    like `stage dispatch` and `results dispatch`: a re-run of the recovery job looks for the app's run
    named for the key first."""
    from ci_tools.prbot.shell import Lazy
    from ci_tools.prbot.staging import decide as staging
    from test_gh_attacks import app_client

    repo, c = history
    pr_at(fake, c["R2"])
    fake.add_run(9, head_sha=c["R1"])
    merged(fake, 7, c["MC2"])
    fake.add_run(50, head_sha=c["MC2"], branch="main", event="push", conclusion="failure")
    merge_key = staging.dispatch_key(staging.INGEST_EVENT, fake.repo, 9, 1, 50)
    fake.add_app_run(settings_of(repo).results_repo, staging.acknowledgement_name(staging.INGEST_EVENT, merge_key))

    def job(request_id):
        return recover(None, settings_of(repo), lazy(fake), Lazy(app_client(fake)), merge_commit=c["MC2"], run_id=9,
                       request_id=request_id)

    first = job(700)
    assert first.outputs["dispatched"] == "true" and len(fake.dispatches) == 1, first.messages
    key = fake.dispatches[0]["client_payload"]["dispatch-key"]
    assert key != merge_key and key.endswith(":50-recovery-700")
    rerun = job(700)                                      # the recovery job re-run: same run id
    assert len(fake.dispatches) == 1 and rerun.messages[0] == f"not sent again: the results app already has {key}"
    again = job(701)                                      # a second, deliberate recovery
    assert len(fake.dispatches) == 2 and again.messages[0].startswith("dispatched ingest-results")


@pytest.mark.parametrize("args, code, said", [
    (["reuse", "recover", "--merge-commit", "abc", "--run", "9", "--dry-run"], 2, "full 40-character commit SHA"),
    (["reuse", "recover", "--merge-commit", "e" * 40, "--run", "-5", "--dry-run"], 2, "--run"),
    (["reuse", "recover", "--merge-commit", "e" * 40, "--run", "9", "--merge-run", "0", "--dry-run"], 2, "--merge-run"),
    (["reuse", "ready", "--pr", "0"], 2, "--pr"),
    (["reuse", "ready-pr", "--pr", "0"], 2, "--pr"),
])
def test_new_commands_refuse_bad_numbers_before_any_request(fake, env, args, code, said):
    res = ci(args, env)
    assert (res.returncode, "Traceback" in res.stderr) == (code, False) and said in res.stderr, res.stderr
    assert fake.requests == []


@pytest.mark.parametrize("login, level, said", [
    ("writer", "write", "@writer has write permission; recovery needs admin or maintain"),
    ("ghost", None, "@ghost has no permission GitHub reports (its collaborator-permission lookup answered 404"),
])
def test_a_recovery_asked_for_below_maintain_is_refused_first(fake, shared, history, login, level, said):
    repo, c = history
    if level:
        fake.permissions[login] = level
    else:
        fake.permission_not_found.add(login)
    res = recover(None, settings_of(repo), lazy(fake), None, merge_commit=c["MC2"], run_id=9, dry_run=True,
                  requested_by=login)
    assert res.exit_code == 1 and res.messages[0] == "recovery refused: " + res.messages[1][len("[FAIL] requested by: "):]
    assert said in res.messages[0] and len(fake.requests) == 1


def test_a_recovery_of_a_run_that_does_not_exist_names_it(fake, shared, history):
    repo, c = history
    pr_at(fake, c["R2"])
    merged(fake, 7, c["MC2"])
    res = recover(None, settings_of(repo), lazy(fake), None, merge_commit=c["MC2"], run_id=404404, dry_run=True)
    assert res.exit_code == 1 and res.messages[0] == f"recovery refused: run 404404 does not exist in {fake.repo}"


def test_a_recovery_without_a_request_id_is_a_usage_error(fake, shared, history, env):
    repo, c = history
    res = ci(["reuse", "recover", "--merge-commit", c["MC2"], "--run", "9", "--repo-root", str(repo)],
             recover_env(fake, env, repo))
    assert res.returncode == 2 and "--request-id" in res.stderr and "Traceback" not in res.stderr
    assert fake.dispatches == []


def test_recovery_is_refused_when_inputs_differ(fake, shared, history):
    repo, c = history
    pr_at(fake, c["R3"], commits=(c["R2"], c["R3"]))
    fake.add_run(9, head_sha=c["R2"])
    merged(fake, 7, c["MC3"])
    fake.add_run(50, head_sha=c["MC3"], branch="main", event="push")
    res = recover(None, settings_of(repo), lazy(fake), lambda: pytest.fail("must not dispatch"),
                  merge_commit=c["MC3"], run_id=9, request_id=700)
    assert res.exit_code == 1 and fake.dispatches == []
    assert any(l.startswith("[FAIL] inputs") and f"{RECIPE} changed" in l for l in res.messages), res.messages


def test_a_closed_pr_gets_no_status_and_costs_one_request(fake, shared, history):
    repo, c = history
    pr_at(fake, c["R2"])
    fake.pulls[7]["state"] = "closed"
    gh = lazy(fake)
    res = ready(pr_target_event(shared, fake, 7), settings_of(repo), gh, now=NOW)
    assert res.messages == ["PR #7 is closed: no readiness to report"] and fake.check_runs == [] and gh.calls == 1
