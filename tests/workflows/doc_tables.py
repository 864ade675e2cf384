"""The generated tables of docs/workflows.md: jobs (trigger, runner, command, permissions, secrets),
labels and the deployment prerequisites, rendered from the workflow files and the policy so the page
cannot drift from them.

    python3 tests/workflows/doc_tables.py          # print the tables
    python3 tests/workflows/doc_tables.py --write  # rewrite them in docs/workflows.md
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
REPO = HERE.parents[1]

import wf_contract as wc  # noqa: E402

DOC = REPO / "docs" / "workflows.md"
SECRET = re.compile(r"secrets\.([A-Z_][A-Z0-9_]*)")
VARIABLE = re.compile(r"vars\.([A-Z_][A-Z0-9_]*)")


def _perms(job: dict) -> str:
    perms = job.get("permissions")
    if not perms:
        return "none"
    return ", ".join(f"{k}: {v}" for k, v in sorted(perms.items()))


def _runner(job: dict) -> str:
    if "uses" in job:
        return f"calls `{job['uses'].rsplit('/', 1)[-1]}`"
    runs_on = job.get("runs-on")
    if isinstance(runs_on, list):
        return " + ".join("the row's runner label" if "${{" in str(x) else str(x) for x in runs_on)
    return str(runs_on)


def _commands(job: dict) -> str:
    found = []
    for step in job.get("steps") or []:
        if isinstance(step.get("run"), str):
            for argv in wc.ci_tools_commands(step["run"]):
                words = [w for w in argv if not w.startswith("-")][:2]
                sub = " ".join(w for w in words if re.fullmatch(r"[a-z][a-z-]*", w))
                mode = " --gate-only" if "--gate-only" in argv else ""
                found.append(f"`ci-tools {sub}{mode}`")
    return "<br>".join(dict.fromkeys(found)) or "–"


def jobs_table(workflows: list[wc.Workflow]) -> str:
    rows = ["| workflow | trigger | job | runs on | command | permissions | secrets |",
            "|---|---|---|---|---|---|---|"]
    for wf in workflows:
        triggers = ", ".join(sorted(str(t) for t in wf.on))
        for job_id, job in wf.jobs.items():
            secrets = sorted(set(SECRET.findall(str(job))))
            rows.append(f"| {wf.name} | {triggers} | {job_id} | {_runner(job)} | {_commands(job)} | "
                        f"{_perms(job)} | {', '.join(secrets) or '–'} |")
    return "\n".join(rows)


# `$/` self-repository references: on github.com since GitHub's changelog of 2026-07-30, resolved by the
# runner from version 2.336.0; GitHub Enterprise Server has no such reference.
SELF_REFERENCE_RUNNER = "2.336.0"
# What each secret must be able to do. A secret a workflow names and this table does not fails the
# docs test, so a new one cannot go undocumented.
SECRETS = {
    "HF_TOKEN": "a Hugging Face read token (gated model downloads on the GPU runners)",
    "RESULTS_DISPATCH_TOKEN": ("a token that may send `repository_dispatch` to the results app's repository "
                               "and list its runs (fine-grained: Contents read and write and Actions read, on that "
                               "repository only): before sending, the job looks for the app's run named for the "
                               "dispatch (see reference.md, \"Idempotent dispatches\")"),
    "RUNNERS_TOKEN": ("a token that can list this repository's self-hosted runners (fine-grained: "
                      "Administration read); a GITHUB_TOKEN cannot"),
    "SLACK_WEBHOOK_URL": "optional: a Slack incoming-webhook URL for the digest",
    "TEAM_APP_PRIVATE_KEY": ("optional: the private key of a GitHub App with the organization permission "
                             "Members: read only; with the repository variable `TEAM_APP_CLIENT_ID` (the App's "
                             "client id) the sign-off jobs mint a team-membership token per run "
                             "(`actions/create-github-app-token`) instead of reading `TEAM_MEMBERSHIP_TOKEN`"),
    "TEAM_MEMBERSHIP_TOKEN": ("a token with the organization permission Members: read, to check CODEOWNERS "
                              "teams (a GITHUB_TOKEN cannot: GitHub answers 404): a machine account's "
                              "fine-grained PAT, not an App token (those expire within the hour; configure "
                              "the App as `TEAM_APP_PRIVATE_KEY` instead); used when no App is configured. "
                              "Without either, a team-owned file makes every sign-off \"not verified\", never "
                              "\"not owned\""),
}


# What each repository variable (Settings → Secrets and variables → Actions → Variables) does, and its
# value when unset. A variable a workflow reads and this table does not fails the docs test.
VARIABLES = {
    "CI_TOOLS_REPORT_PAGES": ("`true`: publish each sweep's report on the `gh-pages` branch, each page a deployment "
                              "of the `sweep-report` environment, linked from the status card (set Pages up first: "
                              "below)", "off: the card links the report artifact, which opens in the browser"),
    "CI_TOOLS_REPORT_SITE": ("the Pages site's address, only for a custom domain",
                             "`https://OWNER.github.io/NAME/`"),
    "CI_TOOLS_RESULTS_REPO": ("the results app's repository (OWNER/NAME): it ingests main's sweeps "
                              "(`repository_dispatch`) and stages a PR's run on `/stage-results`",
                              "`SemiAnalysisAI/InferenceX-app`"),
    "CI_TOOLS_RESULTS_SITE": ("the results app's public site, linked from the card's sweep section",
                              "`https://inferencex.semianalysis.com`"),
    "CI_TOOLS_STAGING_SITE": ("the results app's staging site, where `/stage-results` shows a run",
                              "InferenceX's staging deployment"),
    "TEAM_APP_CLIENT_ID": ("the client id of the GitHub App that reads team membership for the sign-off "
                           "(with the secret `TEAM_APP_PRIVATE_KEY`)", "`TEAM_MEMBERSHIP_TOKEN` is used"),
}


def variables_table(workflows: list[wc.Workflow]) -> str:
    users: dict[str, list[str]] = {}
    for wf in workflows:
        for job_id, job in wf.jobs.items():
            for name in sorted(set(VARIABLE.findall(str(job)))):
                users.setdefault(name, []).append(f"{wf.name} `{job_id}`")
    rows = ["| variable | read by | what it does | unset |", "|---|---|---|---|"]
    for name in sorted(users):
        if name not in VARIABLES:
            raise SystemExit(f"variable {name} is read by {', '.join(users[name])} but not described in "
                             "tests/workflows/doc_tables.py VARIABLES")
        what, unset = VARIABLES[name]
        rows.append(f"| `{name}` | {'<br>'.join(users[name])} | {what} | {unset} |")
    return "\n".join(rows)


def checks_table() -> str:
    """The checks to require in branch protection (names.REQUIRED_CHECKS), where each comes from."""
    from ci_tools import names

    rows = ["| check to require | from | what it says |", "|---|---|---|"]
    what = {"changelog lint": "the changelog is append-only and every recipe or master change has its entry",
            "tests": "ci-tools' own test suite (this repository's CI)",
            "ci-tools / ready to merge": "merging now cannot leave main without results (a check run, with why)",
            "codeowner-signoff-verify": "a CODEOWNER of every changed file signed off the head (a check run, with the verdict)"}
    for check, (wf, job) in names.REQUIRED_CHECKS.items():
        rows.append(f"| `{check}` | {wf} `{job}` | {what[check]} |")
    return "\n".join(rows)


def _self_references(wf: wc.Workflow) -> bool:
    return "uses: $/" in wf.text


def prerequisites_table(workflows: list[wc.Workflow]) -> str:
    referencing = [wf.name for wf in workflows if _self_references(wf)]
    self_hosted = [f"{wf.name} `{job_id}`" for wf in workflows for job_id, job in wf.jobs.items()
                   if "self-hosted" in str(job.get("runs-on"))
                   and any(str(st.get("uses", "")).startswith("$/") for st in job.get("steps") or [])]
    lines = [f"- **Actions runner {SELF_REFERENCE_RUNNER} or later.** These workflows use `$/` self-repository "
             f"references (`uses: $/...`): {', '.join(referencing)}. GitHub-hosted runners have it; the "
             f"self-hosted GPU runners ({', '.join(self_hosted)}) must be upgraded to {SELF_REFERENCE_RUNNER}+ "
             "(`./config.sh --version` on the host), or their jobs fail before the first step. GitHub "
             "Enterprise Server does not support `$/`: these workflows run on github.com only.",
             "- **Secrets** (Settings → Secrets and variables → Actions), by the jobs that read them:", "",
             "| secret | read by | what it must be |", "|---|---|---|"]
    users: dict[str, list[str]] = {}
    for wf in workflows:
        for job_id, job in wf.jobs.items():
            for name in sorted(set(SECRET.findall(str(job)))):
                users.setdefault(name, []).append(f"{wf.name} `{job_id}`")
    for name in sorted(users):
        if name not in SECRETS:
            raise SystemExit(f"secret {name} is used by {', '.join(users[name])} but not described in "
                             "tests/workflows/doc_tables.py SECRETS")
        lines.append(f"| `{name}` | {'<br>'.join(users[name])} | {SECRETS[name]} |")
    return "\n".join(lines)


def labels_table(policy) -> str:
    rows = ["| label | kind | effect |", "|---|---|---|"]
    for name, p in policy.primary.items():
        effect = (f"{p.scope} sweep; canary {'yes' if p.canary else 'no'}; fail-fast {'yes' if p.fail_fast else 'no'}; "
                  f"reusable with /use {'yes' if p.reusable else 'no'}" + ("; recommended" if p.recommended else ""))
        rows.append(f"| `{name}` | primary | {effect} |")
    for name, m in policy.modifiers.items():
        bits = []
        if m.evals:
            bits.append(f"evals: {m.evals}")
        if m.agentx_profile:
            bits.append(f"AgentX profile: {m.agentx_profile}")
        bits.append("blocks /use reuse" if m.blocks_reuse else "reuse unaffected")
        rows.append(f"| `{name}` | modifier | {'; '.join(bits)} |")
    return "\n".join(rows)


def render_all() -> dict[str, str]:
    from ci_tools.sweep.load import load_policy
    workflows = wc.load_workflows(REPO / ".github" / "workflows")
    return {"jobs": jobs_table(workflows), "labels": labels_table(load_policy(REPO)),
            "prerequisites": prerequisites_table(workflows), "variables": variables_table(workflows),
            "checks": checks_table()}


def splice(text: str, name: str, table: str) -> str:
    begin, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{DOC}: markers {begin} ... {end} are missing")
    return pattern.sub(lambda m: f"{begin}\n{table}\n{end}", text)


def main(argv: list[str]) -> int:
    tables = render_all()
    if "--write" in argv:
        text = DOC.read_text()
        for name, table in tables.items():
            text = splice(text, name, table)
        DOC.write_text(text)
    else:
        for name, table in tables.items():
            print(f"## {name}\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
