"""Structural security rules of the workflow files, each with a planted counter-example."""

from __future__ import annotations

import re

import pytest
import yaml

import wf_contract as wc
from ci_tools import names
from ci_tools.sweep.load import load_policy
from wf_env import REPO, WORKFLOWS

# Triggers whose jobs hold a write token or secrets while the event comes from anyone: their jobs
# must never check out (and so never run) pull-request code.
PRIVILEGED_TRIGGERS = {"pull_request_target", "workflow_run", "issue_comment", "pull_request_review",
                       "repository_dispatch"}
SAFE_CHECKOUT_REFS = {None, "${{ github.event.repository.default_branch }}"}
CHECKOUT = "actions/checkout@"


def problems_of(workflows: list[wc.Workflow]) -> list[str]:
    found = []
    for wf in workflows:
        if wf.data.get("permissions") != {}:
            found.append(f"{wf.name}: top-level permissions must be {{}} (each job asks for what it needs)")
        privileged = PRIVILEGED_TRIGGERS & set(wf.on)
        for job_id, job in wf.jobs.items():
            if "permissions" not in job:
                found.append(f"{wf.name}: job {job_id} declares no permissions")
            if job.get("secrets") == "inherit":
                found.append(f"{wf.name}: job {job_id} passes secrets: inherit; name each secret")
            if "runs-on" in job and "timeout-minutes" not in job:
                found.append(f"{wf.name}: job {job_id} has no timeout-minutes (GitHub's default is 6 hours)")
            runs_on = job.get("runs-on")
            labels = runs_on if isinstance(runs_on, list) else [runs_on]
            # the fork-guarded template, or a workflow only a writer can start (workflow_dispatch runs a
            # branch of this repository, which a writer could change anyway): profile.yml
            if "self-hosted" in labels and wf.name != "benchmark.yml" and set(wf.on) != {"workflow_dispatch"}:
                found.append(f"{wf.name}: job {job_id} runs on a self-hosted runner outside the fork-guarded template")
            for step in job.get("steps") or []:
                uses = step.get("uses", "")
                if uses.startswith(CHECKOUT):
                    with_ = step.get("with") or {}
                    if with_.get("persist-credentials") is not False:
                        found.append(f"{wf.name}: job {job_id} checks out without persist-credentials: false")
                    if privileged and with_.get("ref") not in SAFE_CHECKOUT_REFS:
                        found.append(f"{wf.name}: job {job_id} runs on {sorted(privileged)} and checks out "
                                     f"{with_.get('ref')!r}; only the default branch is allowed")
                    if privileged & {"pull_request_target", "workflow_run", "pull_request_review"} \
                            and with_.get("ref") is None:
                        found.append(f"{wf.name}: job {job_id} must name the default branch explicitly: "
                                     "on this trigger the default checkout can be pull-request code")
    return found


def test_real_workflows_follow_the_rules():
    assert problems_of(wc.load_workflows(WORKFLOWS)) == []


def test_self_hosted_template_is_fork_guarded():
    job = next(wf for wf in wc.load_workflows(WORKFLOWS) if wf.name == "benchmark.yml").jobs["run"]
    assert job["runs-on"][0] == "self-hosted"
    assert "github.event.pull_request.head.repo.full_name == github.repository" in job["if"]


PLANTED = """\
name: planted
on:
  pull_request_target:
    types: [opened]
permissions: {}
jobs:
  j:
    runs-on: ubuntu-latest
    timeout-minutes: 5
    permissions:
      contents: read
    steps:
      - uses: actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8 # v5.0.0
        with:
          ref: ${{ github.event.repository.default_branch }}
          persist-credentials: false
"""


def test_a_self_hosted_job_only_a_writer_can_dispatch_is_allowed(tmp_path):
    text = PLANTED.replace("    runs-on: ubuntu-latest", "    runs-on: [self-hosted, gb300]", 1)
    dispatch = text.replace("  pull_request_target:\n    types: [opened]\n", "  workflow_dispatch:\n", 1)
    assert problems_of([wc.Workflow(tmp_path / "d.yml", yaml.safe_load(dispatch), dispatch)]) == []
    both = dispatch.replace("  workflow_dispatch:\n", "  workflow_dispatch:\n  push:\n", 1)
    assert any("self-hosted runner outside" in p
               for p in problems_of([wc.Workflow(tmp_path / "b.yml", yaml.safe_load(both), both)]))


@pytest.mark.parametrize("old, new, expected", [
    ("ref: ${{ github.event.repository.default_branch }}", "ref: ${{ github.event.pull_request.head.sha }}",
     "only the default branch is allowed"),
    ("          ref: ${{ github.event.repository.default_branch }}\n", "", "must name the default branch"),
    ("permissions: {}\njobs", "permissions: write-all\njobs", "top-level permissions must be {}"),
    ("    permissions:\n      contents: read\n", "", "declares no permissions"),
    ("    runs-on: ubuntu-latest", "    runs-on: [self-hosted, gb300]", "self-hosted runner outside"),
    ("          persist-credentials: false\n", "", "without persist-credentials: false"),
    ("    timeout-minutes: 5\n", "", "has no timeout-minutes"),
])
def test_planted_violation_is_reported(tmp_path, old, new, expected):
    assert problems_of([wc.Workflow(tmp_path / "ok.yml", yaml.safe_load(PLANTED), PLANTED)]) == []
    text = PLANTED.replace(old, new, 1)
    assert old in PLANTED
    found = problems_of([wc.Workflow(tmp_path / "bad.yml", yaml.safe_load(text), text)])
    assert any(expected in f for f in found), found


# --- one source of truth: labels and paths ----------------------------------------------------

# Label names GitHub syntax forces into a workflow file (none today: the gate reads labels from the
# event). A name listed here must exist in the policy, which the test below keeps in step.
FORCED_LABELS: dict[str, set[str]] = {}


def label_mentions(text: str, labels: set[str]) -> set[str]:
    return {name for name in labels if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)}


def test_no_workflow_spells_a_policy_label():
    labels = load_policy(REPO).relevant()
    assert labels, "the policy names no labels"
    for wf in wc.load_workflows(WORKFLOWS):
        allowed = FORCED_LABELS.get(wf.name, set())
        assert allowed <= labels, f"{wf.name}: forced labels {allowed - labels} are not in the policy any more"
        assert label_mentions(wf.text, labels) - allowed == set(), f"{wf.name} spells a policy label"


def test_label_check_catches_a_planted_label():
    labels = load_policy(REPO).relevant()
    some = sorted(labels)[0]
    planted = f"if: contains(github.event.pull_request.labels.*.name, '{some}')"
    assert label_mentions(planted, labels) == {some}
    # a longer label containing a shorter one is not a mention of the shorter one
    assert label_mentions("x-" + some + "-y", {some}) == set()


def test_changelog_path_filters_match_paths_module():
    """`paths:` filters spell the changelog path and the policy's `performance-relevant:` patterns (the
    missing-entry rule's files) in GitHub syntax, where `*` stops at `/` and `**` does not; the policy's
    fnmatch `*` crosses `/`, so a trailing `/*` becomes `/**`. This keeps them in step."""
    import re

    import yaml

    policy = yaml.safe_load((WORKFLOWS.parents[1] / names.POLICY).read_text())
    allowed = {names.CHANGELOG} | {re.sub(r"/\*$", "/**", p) for p in policy["performance-relevant"]}
    seen = set()
    for wf in wc.load_workflows(WORKFLOWS):
        for trigger, spec in wf.on.items():
            for pattern in (spec or {}).get("paths", []) if isinstance(spec, dict) else []:
                assert pattern in allowed, f"{wf.name} {trigger}: paths filter {pattern!r}"
                seen.add(pattern)
            if wf.name == "changelog.yml":   # a required gate reports on every PR: no filter
                assert not (spec or {}).get("paths") and not (spec or {}).get("paths-ignore"), \
                    f"{wf.name} {trigger}: a path filter keeps a required check from reporting"
    assert seen <= allowed


def test_docs_tables_match_the_files():
    """docs/workflows.md's job and label tables are generated; regenerate with doc_tables.py --write."""
    import doc_tables

    text = doc_tables.DOC.read_text()
    for name, table in doc_tables.render_all().items():
        assert f"<!-- generated:{name} -->\n{table}\n<!-- /generated:{name} -->" in text, (
            f"docs/workflows.md: the {name} table is stale; run python3 tests/workflows/doc_tables.py --write")


def test_runner_version_for_self_references_is_documented():
    """#16.8: `$/` references need Actions runner >= 2.336.0 and do not exist on GHES; the GPU runners
    are self-hosted, so the requirement must be written where deployers look (docs/workflows.md and the runner operator's page)."""
    import doc_tables

    prerequisites = doc_tables.render_all()["prerequisites"]
    for wf in wc.load_workflows(WORKFLOWS):
        if "uses: $/" in wf.text:
            assert wf.name in prerequisites
    assert f"runner {doc_tables.SELF_REFERENCE_RUNNER} or later" in prerequisites and "Enterprise Server" in prerequisites
    assert "benchmark.yml `run`" in prerequisites                     # the self-hosted job that uses one
    operator = (REPO / "docs/runner-operator.md").read_text()     # the runner operator's page
    assert doc_tables.SELF_REFERENCE_RUNNER in operator and "TEAM_MEMBERSHIP_TOKEN" in operator


def test_every_secret_is_described():
    import doc_tables

    used = {n for wf in wc.load_workflows(WORKFLOWS) for n in doc_tables.SECRET.findall(wf.text)}
    assert used == set(doc_tables.SECRETS)


def test_docs_table_check_catches_drift(tmp_path):
    import doc_tables

    text = doc_tables.DOC.read_text()
    jobs = doc_tables.render_all()["jobs"]
    drifted = jobs.replace("contents: read", "contents: write", 1)
    assert drifted != jobs
    assert f"<!-- generated:jobs -->\n{drifted}\n" not in text


def test_artifact_names_match_the_code_that_defines_them():
    """Artifact names are defined once in ci_tools.names; the workflows spell them (GitHub syntax) only here."""
    uploaded, patterns = set(), set()
    for wf in wc.load_workflows(WORKFLOWS):
        for job in wf.jobs.values():
            for step in job.get("steps") or []:
                if step.get("uses", "").startswith("actions/upload-artifact@"):
                    uploaded.add(step["with"]["name"])
                if step.get("uses", "").startswith("actions/download-artifact@") and "pattern" in step.get("with", {}):
                    patterns.add(step["with"]["pattern"])
    assert {names.COLLECTION_ARTIFACT, names.CHANGELOG_METADATA} <= uploaded
    spelled = {n for n in uploaded if "${{" not in n}
    assert spelled == {names.COLLECTION_ARTIFACT, names.CHANGELOG_METADATA, names.REVIEW_ARTIFACT,
                       names.REUSED_RUN_ARTIFACT, names.REPORT_ARTIFACT}
    canary = {n for n in uploaded if n.startswith("canary")}
    assert canary and all(n.startswith(names.CANARY_PASSED_PREFIX) for n in canary), canary
    assert {p for p in patterns if p.startswith("canary")} == {names.CANARY_PASSED_PATTERN}


def test_the_report_is_uploaded_unzipped_so_the_card_opens_it_in_the_browser():
    """GitHub shows a single-file artifact uploaded with `archive: false` (upload-artifact v7) in the
    browser, named after the file; zipped, a reviewer downloads and unpacks 40 KB to read the page."""
    steps = [s for wf in wc.load_workflows(WORKFLOWS) for job in wf.jobs.values() for s in job.get("steps") or []
             if s.get("uses", "").startswith("actions/upload-artifact@") and s["with"]["name"] == names.REPORT_ARTIFACT]
    assert steps, "no workflow uploads the report page"
    for step in steps:
        assert step["with"].get("archive") is False, step
        [path] = [line.strip() for line in step["with"]["path"].splitlines() if line.strip()]
        assert path.rsplit("/", 1)[-1] == names.REPORT_ARTIFACT, path      # the artifact is the file
    # `archive` is an input from v7 on; an older pin would zip the page again
    pins = {m.group(1) for wf in WORKFLOWS.glob("*.y*ml")
            for m in re.finditer(r"actions/upload-artifact@[0-9a-f]{40} # v(\d+)\.", wf.read_text())}
    assert pins and all(int(v) >= 7 for v in pins), pins


def test_job_upload_excludes_what_the_runner_layout_excludes():
    job = next(wf for wf in wc.load_workflows(WORKFLOWS) if wf.name == "benchmark.yml").jobs["run"]
    [upload] = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")
                and "job_" in s["with"]["name"]]
    lines = [line.strip() for line in upload["with"]["path"].splitlines() if line.strip()]
    excluded = {line[1:].split("/out/", 1)[1] for line in lines if line.startswith("!")}
    assert excluded == set(names.UPLOAD_EXCLUDE)
