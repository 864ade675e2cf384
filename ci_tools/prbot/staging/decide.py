"""`/stage-results [run_id]`: who may stage, which run, what the results app is sent, and the callback.

Run selection shares `reuse/runs_flow.select_run` with staging's rules (any completed conclusion, needs the
`changelog-metadata` artifact, pinned runs may be associated historically via `run.pull_requests`).
The callback from the results app updates the acknowledgement comment in place; the phase only moves
forward (requested < started < completed), so callbacks arriving out of order cannot undo a
completion (W23).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from urllib.parse import quote

from ci_tools.sweep.labels import Policy
from ci_tools import names
from ci_tools.prbot import messages, sticky
from ci_tools.prbot.commands import REQUIRED, StageResults, allows
from ci_tools.github.models import Comment, WorkflowRun

DISPATCH_EVENT = "stage-results"
CALLBACK_EVENTS = ("stage-results-started", "stage-results-completed")
PHASES = {"requested": 0, "started": 1, "completed": 2}


def label_problem(labels, policy: Policy) -> str | None:
    full = policy.reusable_primaries()
    if not set(labels) & set(full):
        return ("staging needs a completed sweep from a PR carrying a full-sweep label: "
                + ", ".join(f"`{label}`" for label in full) + ".")
    return None


def dispatch_payload(*, source_repo: str, pr_number: int, run_id: int, run_attempt: int, run_date: str,
                     requested_by: str, comment_id: int) -> dict[str, str]:
    """The `client_payload` of the `stage-results` repository_dispatch: all strings, as the app expects."""
    return {"source-repository": source_repo, "pr-number": str(pr_number), "run-id": str(run_id),
            "run-attempt": str(run_attempt), "run-date": run_date, "requested-by": requested_by,
            "comment-id": str(comment_id),
            "dispatch-key": dispatch_key(DISPATCH_EVENT, source_repo, run_id, run_attempt, comment_id)}


# ---- idempotent dispatches (issue 25) ---------------------------------------------------------
# A repository_dispatch POST whose answer is lost (a timeout, a 502 after the write, a garbled 200)
# may have been carried out. Every dispatch therefore carries `dispatch-key`: the same request always
# gets the same key, whichever job attempt sends it (a re-run increments GITHUB_RUN_ATTEMPT, so the
# dispatching run's attempt is not part of it). The results app's contract: it de-duplicates on the
# key, and its receiving workflow is named `<event type> <dispatch-key>` (`run-name:`), so the
# dispatching job can look for that run, GitHub's record that the dispatch arrived, before sending.

def dispatch_key(event_type: str, repo: str, run_id: int | str, attempt: int | str, request: int | str) -> str:
    """(run id, attempt, request id) of one request, spelled once: for staging the staged run, its
    attempt and the acknowledgement comment; for ingest the source run, its attempt and the run on main."""
    return f"{event_type}:{repo}:{run_id}:{attempt}:{request}"


def acknowledgement_name(event_type: str, key: str) -> str:
    """The run name of the results app's run for this dispatch (its contract)."""
    return f"{event_type} {key}"


def acknowledged(event_type: str, key: str, run_names) -> bool:
    """Whether the app's repository_dispatch runs include the one this dispatch started."""
    return acknowledgement_name(event_type, key) in {str(n).strip() for n in run_names}


PAYLOAD_KEYS = ("source-repository", "pr-number", "run-id", "run-attempt", "run-date", "requested-by", "comment-id",
                "dispatch-key")
_DIGITS = re.compile(r"[1-9][0-9]{0,19}")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")


def _date_and_login_problems(payload: dict) -> list[str]:
    """The two fields the dispatch payload and the app's callbacks share: the run's date and who asked."""
    problems = []
    date = payload.get("run-date")
    if not isinstance(date, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        problems.append(f"run-date must be YYYY-MM-DD, got {date!r}")
    who = payload.get("requested-by")
    if not isinstance(who, str) or not _LOGIN.fullmatch(who):
        problems.append(f"requested-by must be a GitHub login, got {who!r}")
    return problems


def parse_dispatch_payload(text: str, *, repo: str) -> dict[str, str]:
    """The payload `comment handle` decided (its `stage-payload` output), checked again before the
    job that holds the dispatch token sends it: exactly `dispatch_payload`'s keys, each of its form,
    naming this repository. Raises ValueError with every problem found."""
    try:
        payload = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"the payload is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise ValueError(f"the payload must be a JSON object, got {type(payload).__name__}")
    problems = []
    if sorted(payload) != sorted(PAYLOAD_KEYS):
        problems.append(f"keys are {', '.join(sorted(map(str, payload))) or 'none'}; expected {', '.join(PAYLOAD_KEYS)}")
    if payload.get("source-repository") != repo:
        problems.append(f"source-repository is {payload.get('source-repository')!r}, expected this repository {repo!r}")
    for key in ("pr-number", "run-id", "run-attempt", "comment-id"):
        value = payload.get(key)
        if not isinstance(value, str) or not _DIGITS.fullmatch(value):
            problems.append(f"{key} must be a decimal number, got {value!r}")
    problems += _date_and_login_problems(payload)
    if not problems:
        expected = dispatch_key(DISPATCH_EVENT, repo, payload["run-id"], payload["run-attempt"], payload["comment-id"])
        if payload.get("dispatch-key") != expected:
            problems.append(f"dispatch-key is {payload.get('dispatch-key')!r}, expected {expected!r}")
    if problems:
        raise ValueError("; ".join(problems))
    return payload


@dataclass(frozen=True)
class Commenter:
    """The comment that triggered the run: its id, its author, their permission now, the event's action."""

    comment_id: int
    login: str
    permission: str
    action: str = "created"


def dispatch_problem(payload: dict[str, str], *, repo: str, pr_number: int | None, commenter: Commenter | None,
                     ack: Comment | None, bot: str, run: WorkflowRun | None) -> str | None:
    """Why the decided payload must not be sent, or None. Every field is matched against what GitHub
    says now: the comment that triggered this run asked for it (same PR, same author, who still has
    write permission); `comment-id` is the bot's acknowledgement of that comment (`ack`, the API's
    issue comment), still `requested`, for this run; the run is this repository's own (never a
    fork's: issue #15), with the payload's attempt and date."""
    if commenter is None or pr_number is None:
        return "the event is not a pull-request comment; only `comment handle`'s job may ask for staging"
    if commenter.action != "created":
        return f"the comment was {commenter.action}: staging is asked for by a new comment only"
    if payload["pr-number"] != str(pr_number):
        return f"the payload names PR #{payload['pr-number']}, the comment is on PR #{pr_number}"
    if payload["requested-by"].lower() != commenter.login.lower():
        return f"the payload names @{payload['requested-by']}, the comment is by @{commenter.login}"
    if not allows(commenter.permission, REQUIRED[StageResults]):
        return (f"{messages.permission_of(commenter.login, commenter.permission)} now; `/stage-results` needs "
                "write, maintain or admin")
    body = ack.body.replace("\r\n", "\n") if ack else ""
    if (ack is None or ack.author != bot or str(ack.id) != payload["comment-id"]
            or not ack.issue_url.endswith(f"/repos/{repo}/issues/{pr_number}")
            or body.split("\n", 1)[0].strip() != sticky.marker(sticky.STAGE, commenter.comment_id)):
        return (f"comment {payload['comment-id']} is not the bot's staging acknowledgement of comment "
                f"{commenter.comment_id} on PR #{pr_number}")
    state = sticky.state_of_text(body)
    if str(state.get("run")) != payload["run-id"]:
        return f"the acknowledgement is for run {state.get('run')}, the payload names run {payload['run-id']}"
    if state.get("phase") != "requested":
        return f"run {payload['run-id']} is already {state.get('phase')} (a re-run does not stage it again)"
    if run is None:
        return f"run {payload['run-id']} could not be read"
    if run.repository != repo or run.head_repository != repo:
        return f"run {payload['run-id']} is not this repository's own (its head is in {run.head_repository or None})"
    created = run.created_at[:10]
    if str(run.run_attempt) != payload["run-attempt"] or created != payload["run-date"]:
        return (f"run {payload['run-id']} is attempt {run.run_attempt} of {created}, the payload says "
                f"attempt {payload['run-attempt']} of {payload['run-date']}")
    return None


@dataclass(frozen=True)
class Callback:
    phase: str                 # "started" | "completed"
    pr_number: int
    run_id: int
    app_run_id: int
    run_date: str
    requested_by: str
    comment_id: int | None
    succeeded: bool | None     # completed only


def parse_callback(event_type: str, payload: dict, *, app_repo: str) -> Callback:
    """Validate a callback; raises ValueError with every problem found, so nothing half-valid is acted on."""
    problems = []
    if event_type not in CALLBACK_EVENTS:
        problems.append(f"event type {event_type!r} is not one of {', '.join(CALLBACK_EVENTS)}")
    if payload.get("source-repository") != app_repo:
        problems.append(f"source-repository is {payload.get('source-repository')!r}, expected {app_repo!r}")

    def digits(key: str, optional: bool = False) -> int | None:
        value = payload.get(key)
        if value in (None, "") and optional:
            return None
        if not isinstance(value, str) or not _DIGITS.fullmatch(value):
            problems.append(f"{key} must be a decimal number, got {value!r}")
            return None
        return int(value)

    pr, run, app_run, comment = digits("pr-number"), digits("run-id"), digits("app-run-id"), \
        digits("comment-id", optional=True)
    problems += _date_and_login_problems(payload)
    succeeded = None
    if event_type == "stage-results-completed":
        flag = payload.get("stage-succeeded")
        if flag not in ("true", "false"):
            problems.append(f"stage-succeeded must be 'true' or 'false', got {flag!r}")
        succeeded = flag == "true"
    if problems or pr is None or run is None or app_run is None:   # a missing number is a problem listed
        raise ValueError("; ".join(problems))
    return Callback(phase=event_type.rsplit("-", 1)[-1], pr_number=pr, run_id=run, app_run_id=app_run,
                    run_date=payload["run-date"], requested_by=payload["requested-by"], comment_id=comment,
                    succeeded=succeeded)


def moves_forward(current: dict, cb: Callback) -> bool:
    """A callback may replace the comment unless it would move a later phase back (same app run)."""
    if current.get("run") != cb.run_id:
        return True
    if current.get("app-run") not in (None, cb.app_run_id):
        return True  # a newer staging attempt of the same run
    return PHASES[cb.phase] >= PHASES.get(current.get("phase", "requested"), 0)


def view_url(results_site: str, run_date: str, run_id: int) -> str:
    return f"{results_site.rstrip('/')}/inference?i_dates={quote(f'{run_date}~r{run_id}', safe='')}"


# ---- ingest on main (`results dispatch`) ------------------------------------------------------

INGEST_EVENT = "ingest-results"


@dataclass(frozen=True)
class IngestDecision:
    dispatch: bool
    reason: str
    source_run_id: int | None = None    # the run whose artifacts the app ingests (None: this run)


def ingest_decision(*, event_name: str, ref: str, main_ref: str, collect_result: str,
                    source_run_id: int | None, metadata_present) -> IngestDecision:
    """Whether a finished sweep on main is handed to the results app for ingest.

    InferenceX dispatched on `always()` once collection merely ran, so cancelled or failed sweeps
    sent the app partial data, and it did not wait for the changelog metadata the app cannot
    ingest without (W11). Here a run qualifies only when its own collection succeeded and its
    `changelog-metadata` artifact exists, or when reuse resolved a source run (whose artifacts and
    metadata reuse already checked). `metadata_present` is a callable so the artifact list is
    fetched only when the answer depends on it.
    """
    branch = main_ref.rsplit("/", 1)[-1]
    if event_name != "push" or ref != main_ref:
        return IngestDecision(False, f"{event_name} {ref or ''}".rstrip() + f" is not a push to {branch}: "
                                     "only merged results are ingested")
    if source_run_id is not None:
        return IngestDecision(True, f"reuse resolved source run {source_run_id}: the app ingests its artifacts",
                              source_run_id)
    if collect_result != "success":
        return IngestDecision(False, f"result collection did not succeed ({collect_result or 'not run'}): "
                                     "a cancelled or partial sweep is not ingested")
    if not metadata_present():
        return IngestDecision(False, f"this run has no `{names.CHANGELOG_METADATA}` artifact, which the results app "
                                     "needs to ingest; nothing was sent")
    return IngestDecision(True, "collection succeeded and the changelog metadata is present")


def ingest_payload(*, source_repo: str, run_id: int, run_attempt: int, head_sha: str, pr_number: int | None,
                   merge_run_id: int, merge_run_attempt: int, recovery: int | None = None) -> dict[str, str]:
    """The `client_payload` of the `ingest-results` dispatch: all strings, like `dispatch_payload`.

    `source-run-*` name the run whose artifacts hold the results (this run, or the reused one);
    `merge-run-*` name this run on main, whose changelog metadata describes the merge. `recovery`:
    the request id of a `reuse recover` (its workflow run): a recovery is a new request, so its key is
    not the merge's (an ingest that reached the app and failed there would make the app drop a
    recovery sent under the same key), while a re-run of the recovery job keeps it."""
    return {"source-repository": source_repo, "source-run-id": str(run_id), "source-run-attempt": str(run_attempt),
            "head-sha": head_sha, "pr-number": "" if pr_number is None else str(pr_number),
            "merge-run-id": str(merge_run_id), "merge-run-attempt": str(merge_run_attempt),
            "reused": "true" if run_id != merge_run_id else "false",
            # A re-run of the job is the same request, so no attempt of the run on main is in the key
            # (a run ingesting its own results: attempt 0); a reused source run's attempt is fixed.
            "dispatch-key": dispatch_key(INGEST_EVENT, source_repo, run_id,
                                         run_attempt if run_id != merge_run_id else 0,
                                         merge_run_id if recovery is None else f"{merge_run_id}-recovery-{recovery}")}
