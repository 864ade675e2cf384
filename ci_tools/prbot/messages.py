"""Every word the PR bot writes: comment bodies, replies, check titles and summaries (one place, Conbench's formatter).

A body is a `string.Template` (`$name`) below, filled in by `text` (one part of a combined reply) or
`render` (a whole sticky comment: marker line, optional state line, then the text). The golden files
in `tests/golden/comments/` pin what each renders to. Pure: no I/O; the wording that depends on a
decision (who may run a command, what reuse will do) is a function of that decision here too.
"""

from __future__ import annotations

from string import Template
from typing import Iterable

from ci_tools import names
from ci_tools.github.models import PERMISSION_NOT_FOUND
from ci_tools.prbot import sticky

TEMPLATES: dict[str, str] = {
    "approve-accepted": """\
@$author approved commit `$sha` of this PR for a trusted sweep: `$workflow` checks out exactly this commit (never the merge commit), plans it from the labels the PR carries when it starts, and runs it with the same canaries and fail-fast as a same-repo PR.

Only this commit is trusted. After a new push the sweep refuses to start; review the new commit and comment `/sweep approve <sha>` again with its full SHA.""",
    "approve-duplicate": """\
@$author `$command` started nothing: $why ([run]($run_url)). Its result will show up there; to run it again once it has finished, re-run that workflow run.""",
    "approve-refused": """\
@$author `$command` was not run: $why.

Comment `/sweep approve <sha>` with the full 40-character SHA of the head commit you reviewed once this is fixed.""",
    "denied": """\
@$author `$command` was not run: $why.

$who""",
    "signoff-verdict": """\
### CODEOWNER sign-off: $headline

[Sign-off]($signoff_url) by @$signer on commit `$sha` (checklist version $version).

| | check | result |
|---|---|---|
$rows

$footer""",
    "signoff-revoked": """\
### CODEOWNER sign-off: revoked ❌

@$reviewer, a CODEOWNER of changed files, [requested changes]($review_url) on commit `$sha`.$earlier

GitHub blocks the merge until that review is dismissed or @$reviewer approves. The `$context` check stays failed until a CODEOWNER signs off again after it (a new sign-off comment, or an approving review holding the checklist); dismissing the review does not restore it.""",
    "stage-ack": """\
@$author staging [run $run_id]($run_url). Runs staged earlier stay staged; this comment will be updated when staging starts and when it finishes.""",
    "stage-failed": """\
@$author staging run $run_id failed. [Inspect the staging workflow]($app_run_url), then comment `/stage-results $run_id` to try again.""",
    "stage-refused": """\
@$author `$command` was not run: $why""",
    "stage-started": """\
@$author staging [run $run_id]($run_url): the [results app's staging workflow]($app_run_url) is running. Runs staged earlier stay staged; this comment will be updated when it finishes.""",
    "stage-succeeded": """\
@$author staged run $run_id: $view_url

It stays available across later `/stage-results` requests; staging the same run again refreshes it. ([staging workflow]($app_run_url))""",
    "sweep-plan": """\
@$author $plan""",
    "usage": """\
@$author `$given` is not a command I understand (line $line of [your comment]($comment_url)).

Write it on a line of its own, in one of these forms:
$forms""",
    "use-accepted": """\
@$author noted: $what. $effect

To change this, comment `/use <run_id>` to pin another run or `/use` to go back to the newest eligible run.""",
    "welcome": """\
Thanks for opening this pull request! Here is how it gets from here to merged.

**Review.** Ask a CODEOWNER of the files you changed to review it. They sign off by filling in the current [review checklist]($checklist_url) in a comment that starts with `$phrase`. A bot then checks the sign-off (that the signer owns every changed file, that every item is ticked, that a full sweep passed) and reports it as the `$signoff_context` check.

**Benchmarks.** Nothing runs until the PR appends an entry to the end of `$changelog` and carries exactly one primary sweep label. We recommend `$recommended` ($recommended_what). The others: $other_primaries. The modifiers $modifiers need a primary label; $blockers block reuse while applied. On a PR from a fork a maintainer applies the label.

**Reusing a sweep at merge.** Once a full sweep is green and its evals pass, a maintainer with write access comments `/use <run_id>` (or `/use` for the newest eligible run). From then on new pushes do not start sweeps unless they change benchmark inputs; remove and re-add the label to force one.

**After merge.** The merge run publishes the results. Please watch it and re-run failed jobs; most failures are transient.

Commands: `/use [run_id]`, `/stage-results [run_id]`, `/sweep plan`, each on a line of its own.

---

感谢提交 PR！下面说明从现在到合并的流程。

**审阅：** 请你所改文件的 CODEOWNER 审阅本 PR。签核方式：在评论中填写最新的[审阅清单]($checklist_url)，评论以 `$phrase` 开头。随后机器人会核验签核（签核人是否拥有每个改动文件、每一项是否都已勾选、是否有通过的完整扫描），结果显示为 `$signoff_context` 检查。

**基准测试：** 只有当 PR 在 `$changelog` 末尾追加了条目，并且恰好带有一个主扫描标签时，才会运行扫描。推荐使用 `$recommended`（$recommended_what_zh）。其他主标签：$other_primaries_zh。修饰标签 $modifiers_zh 必须与主标签一起使用；其中 $blockers_zh 在添加期间会阻止复用。fork 提交的 PR 由维护者添加标签。

**合并时复用扫描结果：** 完整扫描全部通过且评测达标后，由具有写权限的维护者评论 `/use <run_id>`（或用 `/use` 选择最新的合格运行）。此后新的推送不会再启动扫描，除非改动了基准输入；如需强制重新扫描，请移除并重新添加标签。

**合并之后：** 合并运行会发布结果。请关注该运行，并重新运行失败的任务；大多数失败是暂时性的。

命令（每条单独一行）：`/use [run_id]`、`/stage-results [run_id]`、`/sweep plan`。""",
}


def text(name: str, **values) -> str:
    """A template filled in, without marker: one part of a combined reply."""
    return Template(TEMPLATES[name]).substitute(**{k: str(v) for k, v in values.items()}).rstrip() + "\n"


def render(name: str, *, kind: str, key: str | int | None = None, state: dict | None = None, **values) -> str:
    """The full body: marker line, optional state line, then the template filled in."""
    return sticky.head(kind, key, state) + text(name, **values)


def bullet_list(items: Iterable[str], empty: str = "- (none)") -> str:
    lines = [f"- {i}" for i in items]
    return "\n".join(lines) if lines else empty


# ---- who may run a command (the permission prose, once) ------------------------------------------

WRITE_ACCESS = "write, maintain or admin permission on this repository"
# What each command's denial says is needed (`commands.REQUIRED` says which permission that is).
NEEDS = {
    "/use": f"`/use` needs a comment by someone with {WRITE_ACCESS}.",
    "/reuse-sweep-run": f"`/use` needs a comment by someone with {WRITE_ACCESS}.",
    "/stage-results": f"`/stage-results` needs {WRITE_ACCESS}.",
    "/sweep approve": f"Approving a fork's commit for the GPU runners needs a comment by someone with {WRITE_ACCESS}.",
}


def permission_of(login: str, permission: str) -> str:
    """"@login has P permission", or, for a 404 from GitHub's permission lookup, that it counts as none."""
    if permission == PERMISSION_NOT_FOUND:
        return (f"@{login} has no permission GitHub reports (its collaborator-permission lookup answered 404, as "
                "it does for some users who are not collaborators), so it counts as none")
    return f"@{login} has {permission} permission"


def lacks_write(login: str, permission: str) -> str:
    return f"{permission_of(login, permission)} on the repository; write or higher is needed"


def is_a_bot(login: str) -> str:
    return f"@{login} is a bot; a person with write access must authorise reuse"


# ---- what the bot recorded when it answered a command (a `/use` counts by it, issue 35) ---------------

def denied_when_handled(permission: str) -> str:
    had = ("no permission GitHub reports (its collaborator-permission lookup answered 404), which counts as none"
           if permission == PERMISSION_NOT_FOUND else f"{permission} permission")
    return (f"when it was handled its author had {had}, and a command said without write permission does not "
            "count later; post it again")


UNANSWERED = ("the bot never answered it (its job did not run, or its reply was not written), so the permission its "
              "author had when saying it is unknown, and a command counts only with the permission the bot "
              "recorded when it answered; post it again")


def not_what_was_answered(answered: Iterable[str]) -> str:
    said = ", ".join(f"`{c}`" for c in answered) or "no command needing permission"
    return (f"the bot's answer to this comment checked {said}, not this command (the comment was edited after "
            "the answer, or the answer predates the record), so the permission its author had when saying it is "
            "unknown; post it again")


# ---- `/sweep approve`: a commit named in full, not moved since (issue 35) ----------------------------

def sha_not_full(given: str, head: str, pr: int) -> str:
    return (f"`{given}` is {len(given)} hex digits, not a full commit SHA: an approval names the commit you reviewed "
            f"by all 40 characters, since a prefix could also name a commit pushed after your review. The head of "
            f"PR #{pr} is now `{head}`; if that is the commit you reviewed, comment `/sweep approve {head}`")


def sha_not_head(given: str, head: str, pr: int) -> str:
    return (f"`{given}` is not the head of PR #{pr}, which is now `{head}`; review that commit and approve it by "
            "its full SHA")


HEAD_EVENT_WORDS = {"head_ref_force_pushed": "force-pushed", "head_ref_deleted": "deleted",
                    "head_ref_restored": "restored"}


def head_moved_after(pr: int, kind: str, when: str, said_at: str, head: str) -> str:
    return (f"the head branch of PR #{pr} was {HEAD_EVENT_WORDS.get(kind, kind)} at {when}, after this comment was "
            f"written ({said_at or 'time unknown'}), so the commit it approved may not be the one reviewed; review "
            f"the head `{head}` and approve it again")


def approval_gone(pr: int, comment_id: int) -> str:
    return (f"the approving comment {comment_id} is no longer on PR #{pr} (deleted?); the approved sweep does not "
            "run: review the head and comment `/sweep approve <sha>` again")


def approval_withdrawn(pr: int, comment_id: int, sha: str) -> str:
    return (f"comment {comment_id} on PR #{pr} no longer says `/sweep approve {sha}` (edited since); the approved "
            "sweep does not run")


def approval_no_longer_holds(pr: int, comment_id: int, problem: str) -> str:
    return f"the approval in comment {comment_id} on PR #{pr} no longer holds: {problem}"


# ---- reuse (`/use`, the card's reuse section) ------------------------------------------------------

NOT_AUTHORISED = "not authorised."


def reuse_text(auth) -> str:
    """The card's reuse section for a `reuse.Authorisation`."""
    if not auth.authorised:
        return "not authorised. A maintainer with write access comments `/use <run_id>` (or `/use`) to reuse a run."
    link = f" ([comment]({auth.comment.html_url}))" if auth.comment and auth.comment.html_url else ""
    if auth.pinned_run is not None:
        return f"pinned to run {auth.pinned_run} by @{auth.comment.author}{link}."
    return f"the newest eligible full-sweep run, authorised by @{auth.comment.author}{link}."


AFTER_MERGE = "Commands made after the merge do not change which run was reused."
PIN_A_SWEEP = ("Nothing is pinned. Pin a sweep run of this PR: its id is the number in the run's address "
               "(`.../actions/runs/<run_id>`); or comment `/use` to reuse the newest eligible one.")


def use_accepted(author: str, pinned: int | None, run, refused: str | None, label_problem: str | None,
                 notes: tuple[str, ...] = ()) -> str:
    """The reply to an accepted `/use`: what is pinned, and what would happen at merge as things stand
    (`notes`: which commit the run measured and that it still matches, optional jobs that failed)."""
    what = f"run {pinned} is pinned for reuse at merge" if pinned is not None else \
        "the newest eligible full-sweep run will be reused at merge"
    if run is not None:
        now = (f"[Run {run.id}]({run.html_url}) (commit `{run.head_sha[:12]}`) is usable as things stand."
               if pinned is not None else
               f"As of now that is [run {run.id}]({run.html_url}) (commit `{run.head_sha[:12]}`).")
        effect = now + "".join(f" {n[0].upper()}{n[1:]}." for n in notes) + \
            " New pushes will not start sweeps unless they change benchmark inputs."
    else:
        effect = f"**As things stand reuse would be refused at merge:** {refused}"
    if label_problem:
        effect += f" Also, {label_problem}."
    return text("use-accepted", author=author, what=what, effect=effect)


# ---- the status card and `/sweep plan` -------------------------------------------------------------

# The sweep run's state on the card's first line: (emoji, English, Chinese). The emoji carries the
# colour a skimmer reads first, as the sign-off comment's ✅/❌ do.
RUN_STATES = {
    "passed": ("✅", "passed", "通过"),
    "failed": ("❌", "failed", "失败"),
    "cancelled": ("⏹️", "cancelled", "已取消"),
    "skipped": ("⏭️", "skipped", "已跳过"),
    "waiting": ("✋", "waiting for approval", "等待批准"),
    "queued": ("🕒", "queued", "排队中"),
    "running": ("⏳", "running", "运行中"),
    "none": ("⚪", "not run yet", "尚未运行"),
}


def card_heading(state: str, run: dict | None) -> str:
    """`### ❌ Sweep failed / 扫描失败 · [run 50](…) on `aaaaaaaaaaaa``: state first, then which run."""
    emoji, en, zh = RUN_STATES[state]
    head = f"### {emoji} Sweep {en} / 扫描{zh}"
    if state == "none" or not run:
        return head
    sha = str(run.get("head_sha") or "")[:12]
    return head + f" · [run {run['id']}]({run.get('url', '')})" + (f" on `{sha}`" if sha else "")


NO_EVALS_COLLECTED = ("**Evals:** no eval results were collected for this run (its collect job did not finish), so "
                      "`/use` refuses it.")


def sweep_section(head: str, run_id, results_site: str) -> str:
    """The card's sweep section: the run line and progress table, then the results site's links."""
    site = results_site.rstrip("/")
    return (f"{head}\n\n- Performance: {site}/inference?unofficialRun={run_id}\n"
            f"- Accuracy: {site}/evaluation?unofficialRun={run_id}")


def _artifact_links(run: dict) -> str:
    return (f"\n\nThe sweep report, the Pareto plot and per-point results: "
            f"[run {run['id']} artifacts]({run.get('url', '')}#artifacts).")


def results_expired(artifact: str, run: dict) -> str:
    return (f"The results of [run {run['id']}]({run.get('url', '')}) cannot be shown: its `{artifact}` artifact has "
            "expired (GitHub deletes a run's artifacts after the repository's retention, 90 days by default). "
            "To see results here again, run the sweep again: re-run that workflow run, or remove and re-add "
            "the PR's sweep label.")


def results_not_downloaded(artifact: str, error, run: dict) -> str:
    if getattr(error, "status", None) == 410:
        return results_expired(artifact, run)
    return (f"The run's `{artifact}` artifact could not be downloaded ({error}). Re-run this card's job "
            "(\"Re-run jobs\" on its status-card run) to try again; the results themselves are in "
            f"[run {run['id']}'s artifacts]({run.get('url', '')}#artifacts).")


def results_unreadable(error, run: dict) -> str:
    return (f"The run's results could not be read: {error}. Re-run the `collect results` job of "
            f"[run {run['id']}]({run.get('url', '')}) to write them again; if it fails the same way, the "
            "collection was written by another ci-tools version than the card's: update the pinned version.")


def no_valid_results(collected: int, run: dict) -> str:
    return (f"No valid result in this run ({collected} collected, all invalid). Each job's `results process` step "
            f"says which rules its result broke: open the failed jobs of [run {run['id']}]({run.get('url', '')}), "
            f"fix the cause and push again.{_artifact_links(run)}")


def results_against_main(table: str, main_runs, invalid: int, run: dict) -> str:
    """The card's results section: the comparison table, which main runs it is against, the artifacts."""
    source = (f"main: {len(main_runs)} sweep run(s) ({', '.join(map(str, main_runs))})" if main_runs
              else "main: no collected sweep run yet")
    told = f" {invalid} invalid result(s) are not compared." if invalid else ""
    return table.rstrip("\n") + f"\n\n{source}.{told}{_artifact_links(run)}"


def sweep_plan(pr: int, plan: str | None, run: dict) -> str:
    if plan:
        source = f" (from [run {run['id']}]({run.get('url', '')}))" if run.get("id") else ""
        return f"the latest sweep plan for PR #{pr}{source}:\n\n{plan}"
    return (f"no sweep plan has been computed for PR #{pr} yet. The sweep workflow runs `ci-tools plan` "
            "when the PR carries a sweep label; its summary then appears here and on the status card.")


# ---- sign-off ----------------------------------------------------------------------------------

NO_TEAM_TOKEN = ("cannot read team membership with this token: the workflow's GITHUB_TOKEN cannot read "
                 "organization teams and no TEAM_MEMBERSHIP_TOKEN is set (a token with the organization "
                 "permission Members: read; see docs/workflows.md, \"Deployment prerequisites\")")


def owner_without_write(signer: str, permission: str) -> str:
    return (f"{permission_of(signer, permission)} on the repository; GitHub counts a code owner only with write "
            f"access or higher, so @{signer} owns none of the changed files")


def review_not_a_signoff(state: str) -> str:
    shown = (state or "unknown").lower().replace("_", " ")
    return (f"it is a review in state \"{shown}\"; only a review that approves or comments signs off (one that "
            "requests changes says the opposite)")


def revoked_description(reviewer: str) -> str:
    return f"Sign-off revoked: @{reviewer} requested changes"


def revoked_earlier(previous: dict) -> str:
    """What the revocation undoes, for its comment: the verified sign-off it replaces, if any."""
    return (f" The verified sign-off by @{previous.get('signer')} no longer counts." if previous.get("passed") else "")


def changes_request_not_an_owner(reviewer: str) -> str:
    return f"@{reviewer} owns none of the changed files (or lacks write access)"


def changes_request_older(signer: object, signed_at: object) -> str:
    return (f"the verified sign-off by @{signer} was written after it ({signed_at}): a sign-off after a request "
            "for changes counts again")


def signoff_before_changes_request(reviewer: object, asked_at: object) -> str:
    return (f"@{reviewer} requested changes at {asked_at}, after it was written, which revoked every earlier "
            "sign-off: sign off again")


def signoff_rows(checks) -> str:
    return "\n".join(f"| {'✅' if x.ok else '❌'} | {x.name} | {x.detail} |" for x in checks)


def signoff_not_counted(signer: str, standing: str) -> str:
    return (f"@{signer}, you own none of the changed files, so this sign-off is not counted. "
            f"The verified sign-off by @{standing} stands.")


def signoff_unbound(signer: str) -> str:
    return (f"@{signer}, this sign-off is not counted and no check changed: a sign-off counts only for the tree "
            "its author reviewed, as its author wrote it. Post it again (a new comment, or a review of the head).")


def signoff_footer(verdict, signer: str, check: str) -> tuple[str, str]:
    """(headline, footer) of the verdict comment."""
    if verdict.passed:
        footer = ("The `" + check + "` check passes on this commit. It carries over to later "
                  "commits only while their tree is identical.")
    elif verdict.unverified:
        footer = (f"@{signer}, this sign-off could not be checked, through no fault of yours: ci-tools "
                  f"{verdict.unverified}. A repository admin can fix that; then edit the sign-off or post it again.")
    else:
        footer = f"@{signer}, please fix the items marked ❌ and post the sign-off again (edit it or add a new comment)."
    headline = "verified ✅" if verdict.passed else "not verified ⚠️" if verdict.unverified else "rejected ❌"
    return headline, footer


def signoff_after_push(title: str, head: str, signoff_url: object) -> str:
    """The summary of the check a push puts on the new head (`signoff_url`: the last sign-off judged, if any)."""
    said = f" ([the last sign-off]({signoff_url}) was judged on an earlier commit)" if signoff_url else ""
    return (f"**{title}.**\n\nCommit `{head[:12]}` is this PR's head{said}. A CODEOWNER of every changed file signs "
            f"off with the review checklist ({names.REVIEW_CHECKLIST}) in a comment or a review written after this "
            "check: one written before it signed off an earlier commit.")


def signoff_of_queue(number: int, head: str, why: str) -> str:
    """The summary of the check on a merge queue group's commit."""
    return (f"{why}.\n\nThe group merges PR #{number} at `{head[:12]}`; its sign-off there is what counts here. A "
            "group without a verified sign-off leaves the queue instead of waiting for one.")


# ---- welcome -----------------------------------------------------------------------------------

def label_what(r) -> tuple[str, str]:
    """What a primary label does, in English and Chinese: scope, canary and fail-fast, so the three
    full-sweep variants read differently (the seed PR's welcome tells them apart too)."""
    en = ("full sweep" if r.scope == "full" else "each config at its lowest concurrency")
    zh = ("完整扫描" if r.scope == "full" else "每个配置只跑最低并发")
    en += ", canary first" if r.canary else ", no canary"
    zh += "，先跑 canary" if r.canary else "，不跑 canary"
    if r.fail_fast:
        en += ", stops a matrix at its first failure"
        zh += "，矩阵出现首个失败即停止"
    if r.scope == "full" and not r.reusable:
        en += ", not reusable at merge"
        zh += "，合并时不可复用"
    return en, zh


def modifier_what(r) -> str:
    """What a modifier label does, in a few words (the label's description on GitHub)."""
    parts = []
    if r.evals == "all":
        parts.append("the evals of every eligible point, not only the default ones")
    elif r.evals == "only":
        parts.append("only the eval rows")
    if r.agentx_profile:
        parts.append(f"the {r.agentx_profile} AgentX profile")
    text = "; ".join(parts) or "adjusts the primary label's sweep"
    return text + ("; blocks reuse at merge" if r.blocks_reuse else "")


def denial(author: str, denied: list[tuple[str, str]], permission: str) -> str:
    """The one reply when a comment's author lacks the permission its commands need (none of them ran).
    `denied`: (command word, command as written) of each command that needs it, in comment order."""
    if len(denied) == 1:
        word, given = denied[0]
        why = permission_of(author, permission) if word == "/stage-results" else lacks_write(author, permission)
        return denied_text(author, given, why, NEEDS[word])
    shown = ", ".join(f"`{given}`" for _, given in denied)
    needs = {NEEDS[word] for word, _ in denied}
    who = needs.pop() if len(needs) == 1 else f"These commands need a comment by someone with {WRITE_ACCESS}."
    return f"@{author} {shown} were not run: {lacks_write(author, permission)}.\n\n{who}\n"


def denied_text(author: str, command: str, why: str, who: str) -> str:
    return text("denied", author=author, command=command, why=why, who=who)


def usage(author: str, problem, comment_url: str) -> str:
    body = text("usage", author=author, given=problem.given, line=problem.line, comment_url=comment_url,
                forms=bullet_list(f"`{f}`" for f in problem.forms))
    if problem.suggestion:
        first, rest = body.split("\n", 1)
        body = f"{first} Did you mean `{problem.suggestion}`?\n{rest}"
    return body
