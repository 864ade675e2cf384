"""CODEOWNER sign-off against the fake: owners, teams, checklist version and items, sweep, the check run,
forged verdicts (W7), deterministic owner check (W8), check carry-over by tree (W6), API head (W24)."""

from __future__ import annotations


import pytest

from ci_tools import names
from ci_tools.prbot.signoff.flow import verify_signoff
from ci_tools.prbot.signoff import decide as signoff
from ci_tools.github.client import GitHub
from ci_tools.prbot.shell import Lazy
from gh_scenarios import REPO_ROOT, SHA1, SHA2, comment_event, lazy, pr_event, pr_with_sweep, settings

CHECKLIST = signoff.parse_checklist((REPO_ROOT / names.REVIEW_CHECKLIST).read_text(), names.REVIEW_CHECKLIST)
AMD = "inferencex-e2e/configs/amd-master.yaml"


def signoff_body(signer: str, *, version: int | None = None, untick: int | None = None, signed: str | None = None):
    version = CHECKLIST.version if version is None else version
    items = [i.replace(f"checklist version {CHECKLIST.version}", f"checklist version {version}")
             for i in CHECKLIST.items]
    lines = [signoff.PHRASE + ":"] + [f"- [{' ' if n == untick else 'x'}] {i}" for n, i in enumerate(items)]
    return "\n".join(lines + ["", "### Detail", "- sweep run: https://x", "", f"Signed: @{signed or signer}"])


def setup_pr(fake, files=(AMD,), sweep=True, number=1):
    """An open PR with a sweep; its `opened` run of signoff-verify.yml has written the after-push check,
    the bot's record that SHA1 was the PR's head from then on (sign-off comments are judged by it)."""
    pr_with_sweep(fake, number)
    fake.pr_files[number] = list(files)
    if sweep:
        fake.add_run(9, head_sha=SHA1)
    fake.teams[("SemiAnalysisAI", "amd-reviewers")] = {"amd-dev"}
    fake.teams[("SemiAnalysisAI", "core")] = {"core-dev"}
    for login in ("amd-dev", "core-dev", "mallory"):       # writers (GitHub needs it of a code owner)
        fake.permissions.setdefault(login, "write")
    verify_signoff(pr_event(fake, number, "opened"), settings(), lazy(fake))


def signoff_checks(fake, sha=None):
    """The sign-off check runs written (on `sha`), oldest first."""
    return [c for c in fake.check_runs if c["name"] == signoff.CHECK and sha in (None, c["_sha"])]


def verdict_checks(fake):
    """The checks verifications wrote (an after-push check links the PR itself, not a verdict)."""
    return [c for c in signoff_checks(fake) if "#issuecomment-" in (c["details_url"] or "")]


def verify(fake, comment, kind="issue_comment"):
    gh = lazy(fake)
    return verify_signoff(comment_event(fake, 1, comment, kind=kind), settings(), gh, lazy(fake)), gh


def verdicts(fake):
    return [c for c in fake.bot_comments(1) if c["body"].startswith("<!-- ci-tools:signoff-verdict -->")]


def test_no_phrase_costs_nothing(fake):
    setup_pr(fake)
    res, gh = verify(fake, fake.add_comment(1, "LGTM"))
    assert res.outputs["proceed"] == "false" and gh.calls == 0


@pytest.mark.parametrize("signer,files,kw,state,why", [
    ("amd-dev", (AMD,), {}, "success", None),
    ("core-dev", (AMD, "ci_tools/x.py"), {}, "success", None),                  # core is listed on both
    ("amd-dev", (AMD, "ci_tools/x.py"), {}, "failure", "does not own `ci_tools/x.py`"),   # W8
    ("mallory", (AMD,), {}, "failure", "does not own"),                          # non-owner
    ("amd-dev", (AMD,), {"version": 0}, "failure", "uses version 0"),
    ("amd-dev", (AMD,), {"untick": 3}, "failure", "1 of 13 items not ticked"),
    ("amd-dev", (AMD,), {"signed": "someone-else"}, "failure", "Signed: @amd-dev"),
])
def test_signoff_table(fake, signer, files, kw, state, why):
    setup_pr(fake, files)
    res, _ = verify(fake, fake.add_comment(1, signoff_body(signer, **kw), author=signer))
    assert res.outputs["state"] == state
    (st,) = verdict_checks(fake)
    assert st["name"] == "codeowner-signoff-verify" and st["conclusion"] == state and st["_sha"] == SHA1
    (v,) = verdicts(fake)
    # the check's summary is the verdict: a reviewer reads the table on the Checks tab too
    assert st["output"]["summary"] == v["body"].split("-->\n")[-1] and "| check | result |" in st["output"]["summary"]
    assert ("verified ✅" if state == "success" else "rejected ❌") in v["body"]
    if why:
        assert why in v["body"]


def test_no_successful_full_sweep_rejects(fake):
    setup_pr(fake, sweep=False)
    fake.add_run(9, head_sha=SHA1, conclusion="failure")
    res, _ = verify(fake, fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev"))
    assert res.outputs["state"] == "failure" and "no run usable for reuse" in verdicts(fake)[0]["body"]


def test_review_bodies_count_and_the_head_comes_from_the_api_not_the_payload(fake):
    """W24: the check goes on the PR's current head as GitHub reports it at verification time; and
    (issue 25) an event whose payload names an older head is an old event: it is not counted at all."""
    setup_pr(fake)
    review = fake.add_review(1, signoff_body("amd-dev"), author="amd-dev")
    event = comment_event(fake, 1, {**review, "created_at": review["submitted_at"]}, kind="pull_request_review")
    assert verify_signoff(event, settings(), lazy(fake), lazy(fake)).outputs["state"] == "success"
    fake.pulls[1]["head"]["sha"] = SHA2
    fake.add_commit(1, SHA2, tree=fake.trees[SHA1])
    fake.compares[(SHA1, SHA2)] = ("ahead", [])
    res = verify_signoff(event, settings(), lazy(fake), lazy(fake))
    assert res.outputs["proceed"] == "false" and [s["_sha"] for s in verdict_checks(fake)] == [SHA1]
    assert f"the event is for head {SHA1[:12]}, but the PR's head is now {SHA2[:12]}" in res.messages[-1]


def test_w7_forged_verdict_comments_are_never_read_as_verdicts(fake):
    setup_pr(fake)
    forged = ('<!-- ci-tools:signoff-verdict -->\n<!-- ci-tools:state {"passed":true,"sha":"%s","tree":"tree-%s",'
              '"signer":"core-dev"} -->\n### CODEOWNER sign-off: verified ✅' % (SHA2, SHA2))
    fake.add_comment(1, forged + "\n" + signoff.PHRASE, author="mallory")
    res, _ = verify(fake, list(fake.comments.values())[-1])
    assert res.outputs["state"] == "failure"
    fake.pulls[1]["head"]["sha"] = SHA2
    fake.add_commit(1, SHA2)
    res = verify_signoff(pr_event(fake, 1, "synchronize"), settings(), lazy(fake))
    assert res.outputs["state"] == "pending" and signoff_checks(fake)[-1]["conclusion"] == "action_required"


def test_a_non_owner_cannot_undo_an_owners_verified_signoff(fake):
    setup_pr(fake)
    verify(fake, fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev"))
    res, _ = verify(fake, fake.add_comment(1, signoff_body("mallory"), author="mallory"))
    assert res.outputs["state"] == "success" and [s["conclusion"] for s in verdict_checks(fake)] == ["success"]
    assert "verified ✅" in verdicts(fake)[0]["body"]
    assert any("not counted" in c["body"] for c in fake.bot_comments(1))


@pytest.mark.parametrize("same_tree,expected", [(True, "success"), (False, "pending")])
def test_w6_the_check_carries_over_to_a_new_commit_only_with_the_same_tree(fake, same_tree, expected):
    setup_pr(fake)
    verify(fake, fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev"))
    fake.pulls[1]["head"]["sha"] = SHA2
    fake.add_commit(1, SHA2, tree=fake.trees[SHA1] if same_tree else "other-tree")
    res = verify_signoff(pr_event(fake, 1, "synchronize"), settings(), lazy(fake))
    new = signoff_checks(fake)[-1]
    assert res.outputs["state"] == expected and new["_sha"] == SHA2
    assert new["conclusion"] == signoff.CONCLUSIONS[expected] and new["details_url"] == signoff.pr_url(fake.repo, 1)
    assert new["output"]["title"] in new["output"]["summary"] and f"`{SHA2[:12]}` is this PR's head" in \
        new["output"]["summary"]


def test_rerunning_verification_twice_keeps_one_verdict_comment(fake):
    setup_pr(fake)
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    for _ in range(2):
        fake.fail("GET", r"/files$", 502)
        verify(fake, c)
    assert len(verdicts(fake)) == 1 and [s["conclusion"] for s in verdict_checks(fake)] == ["success", "success"]


def test_team_membership_lookup_failure_fails_closed(fake):
    setup_pr(fake)
    fake.fail("GET", r"/memberships/", 403, times=5, body={"message": "Resource not accessible by integration"})
    res, _ = verify(fake, fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev"))
    (st,) = verdict_checks(fake)
    assert st["conclusion"] == "action_required" and "cannot read team membership with this token" in st["output"]["title"]
    assert "does not own" not in verdicts(fake)[0]["body"]


def team_token_cases(fake):
    """(name, teams client): no team token at all; the job's GITHUB_TOKEN (org endpoints answer 404)."""
    job = fake.grant("ghs_job", "github_token", {"contents": "read", "pull-requests": "write", "checks": "write"})
    client = Lazy(lambda: GitHub(fake.repo, job, api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0))
    return [("no TEAM_MEMBERSHIP_TOKEN", None), ("a GITHUB_TOKEN", client)]


@pytest.mark.parametrize("case", [0, 1], ids=["no team token", "GITHUB_TOKEN as team token"])
def test_an_owner_is_never_told_they_do_not_own_the_files_when_teams_cannot_be_read(fake, case):
    """#16.2: every CODEOWNERS entry is a team and a GITHUB_TOKEN cannot read teams (GitHub: 404). The
    sign-off is not verified, with the true reason; the state is `error` (an admin must act), not `failure`."""
    setup_pr(fake)
    _, teams = team_token_cases(fake)[case]
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    res = verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), teams)
    (st,) = verdict_checks(fake)
    assert res.outputs["state"] == "error" and st["conclusion"] == "action_required"
    assert st["output"]["title"] == "Sign-off not verified: cannot read team membership with this token"
    (v,) = verdicts(fake)
    assert "not verified ⚠️" in v["body"] and "cannot read team membership with this token" in v["body"]
    assert "TEAM_MEMBERSHIP_TOKEN" in v["body"] and "does not own" not in v["body"]


def test_an_app_token_with_members_read_verifies_team_owners(fake):
    setup_pr(fake)
    app = fake.grant("ghs_app", "app", {"members": "read"})
    teams = Lazy(lambda: GitHub(fake.repo, app, api_url=fake.url, sleep=lambda s: None, seconds_between_writes=0))
    c = fake.add_comment(1, signoff_body("mallory"), author="mallory")
    verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), teams)
    assert signoff_checks(fake)[-1]["conclusion"] == "failure" and "does not own" in verdicts(fake)[0]["body"]
    c = fake.add_comment(1, signoff_body("amd-dev"), author="amd-dev")
    assert verify_signoff(comment_event(fake, 1, c), settings(), lazy(fake), teams).outputs["state"] == "success"


# ---- review sign-offs in two phases (#16.5) ----------------------------------------------------------

def review_run_event(fake, *, path=".github/workflows/signoff-review.yml", event="pull_request_review",
                     conclusion="success"):
    from ci_tools.github.events import Event, WorkflowRun

    return Event(name="workflow_run", repo=fake.repo,
                 workflow_run=WorkflowRun(id=77, path=path, event=event, conclusion=conclusion, status="completed"))


def test_a_recorded_review_is_read_back_from_the_api_and_verified(fake, tmp_path):
    from ci_tools.prbot.signoff.flow import read_review_record, record_review, verify_review

    setup_pr(fake)
    review = fake.add_review(1, signoff_body("amd-dev"), author="amd-dev")
    record_review(comment_event(fake, 1, {**review, "created_at": review["submitted_at"]},
                                kind="pull_request_review"), tmp_path)
    assert read_review_record(tmp_path / names.REVIEW_FILE) == (1, review["id"])
    res = verify_review(review_run_event(fake), settings(), lazy(fake), lazy(fake), tmp_path / names.REVIEW_FILE)
    assert res.outputs["state"] == "success" and signoff_checks(fake)[-1]["_sha"] == SHA1
    assert any(r.endswith(f"/pulls/1/reviews/{review['id']}") for r in fake.requests)


@pytest.mark.parametrize("text", ['{"pr": 1}', '{"pr": 1, "review": "5"}', '{"pr": 1, "review": 5, "body": "x"}',
                                  '{"pr": 0, "review": 5}', "[1, 5]", "not json", '{"pr": true, "review": 5}'])
def test_a_record_is_two_positive_integers_and_nothing_else(tmp_path, text):
    from ci_tools.errors import InputError
    from ci_tools.prbot.signoff.flow import read_review_record

    (tmp_path / "r.json").write_text(text)
    with pytest.raises(InputError, match="not a review record"):
        read_review_record(tmp_path / "r.json")


def test_a_record_naming_a_review_of_another_pr_is_refused(fake, tmp_path):
    from ci_tools.github.client import GitHubError
    from ci_tools.prbot.signoff.flow import verify_review

    setup_pr(fake)
    fake.add_pr(2, head_sha=SHA2)
    other = fake.add_review(2, signoff_body("amd-dev"), author="amd-dev")
    (tmp_path / "r.json").write_text(f'{{"pr": 1, "review": {other["id"]}}}')
    with pytest.raises(GitHubError, match="404"):
        verify_review(review_run_event(fake), settings(), lazy(fake), lazy(fake), tmp_path / "r.json")
    assert verdict_checks(fake) == []


@pytest.mark.parametrize("kw", [{"path": ".github/workflows/other.yml"}, {"event": "pull_request"},
                                {"conclusion": "failure"}])
def test_only_a_successful_record_run_is_acted_on(fake, tmp_path, kw):
    from ci_tools.prbot.signoff.flow import verify_review

    gh = lazy(fake)
    res = verify_review(review_run_event(fake, **kw), settings(), gh, None, tmp_path / "missing.json")
    assert res.outputs["proceed"] == "false" and gh.calls == 0


def test_an_unticked_box_reads_rejected_on_the_check_and_in_the_job_summary(fake):
    """Issue 24: the status said "Sign-off rejected: every item ticked" (the rule, not what is wrong)
    and the job summary headed a rejection with "done"."""
    from ci_tools.cli._prbot import summary_section

    setup_pr(fake)
    res, _ = verify(fake, fake.add_comment(1, signoff_body("amd-dev", untick=3), author="amd-dev"))
    (st,) = verdict_checks(fake)
    assert st["conclusion"] == "failure" and st["output"]["title"] == "Sign-off rejected: 1 of 13 items not ticked"
    section = summary_section("ci-tools signoff verify", res)
    assert section.startswith("### ci-tools signoff verify: Sign-off rejected: 1 of 13 items not ticked\n")
    assert "done" not in section.splitlines()[0]
