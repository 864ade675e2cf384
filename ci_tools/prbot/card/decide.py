"""The PR status card as sections, each owned by one writer (pure).

One sticky comment per PR carries the sweep as it runs, its results against main, the eval table,
the plan and the reuse state. Different jobs write different parts at different times (the sweep
workflow's card job, `/use` comments, `/sweep plan`), and GitHub has no conditional write for
comments: a writer that rendered the whole card from its own view would overwrite what another
wrote in the meantime. So each writer patches only its own section, delimited by hidden markers,
and leaves every other byte as it found it; `card/shell.py` re-reads and retries around that.

A card is: the sticky marker line, an optional state line (JSON the bot keeps for itself), the
heading, then the sections in SECTIONS order. Sections never written are omitted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ci_tools import names
from ci_tools.prbot import sticky
from ci_tools.prbot.approval.decide import parse_run_name
from ci_tools.github.models import Job, WorkflowRun

KIND = sticky.STATUS_CARD


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    title_zh: str


# the verdict first: a reviewer reads the results against main before the run's progress
SECTIONS = (
    Section("results", "Results against main", "与 main 对比"),
    Section("sweep", "Sweep", "扫描"),
    Section("evals", "Evals", "评测"),
    Section("plan", "Plan", "计划"),
    Section("reuse", "Reuse at merge", "合并时复用"),
)
NAMES = tuple(s.name for s in SECTIONS)
HEADING = "### Sweep status / 扫描状态"   # a card before its first sweep run (messages.card_heading)
FOOTER = ("<sub>Maintained by ci-tools: each part is updated by the job that owns it "
          "(sweep runs, `/use`, `/sweep plan`); this comment is edited in place.</sub>")

_OPEN = "<!-- ci-tools:section {} -->"
_CLOSE = "<!-- /ci-tools:section {} -->"
_SECTION = re.compile(r"<!-- ci-tools:section ([a-z-]+) -->\n(.*?)\n<!-- /ci-tools:section \1 -->", re.S)


def run_state(run: dict | None) -> str:
    """The state of the card's run, in the words of `messages.RUN_STATES` (`none` before any run).
    The card keeps `conclusion` as GitHub's conclusion, or its status while the run is not done."""
    if not isinstance(run, dict) or not run.get("id"):
        return "none"
    value = str(run.get("conclusion") or run.get("status") or "in_progress")
    return {"success": "passed", "neutral": "passed", "failure": "failed", "timed_out": "failed",
            "startup_failure": "failed", "cancelled": "cancelled", "skipped": "skipped", "stale": "cancelled",
            "action_required": "waiting", "queued": "queued", "waiting": "queued", "pending": "queued",
            "requested": "queued", "in_progress": "running", "in progress": "running"}.get(value, "failed")


def heading(run: dict | None) -> str:
    """The card's first line: the sweep run's state (emoji and word), the run and its commit."""
    from ci_tools.prbot import messages

    return messages.card_heading(run_state(run), run)


def sections_of(body: str | None) -> dict[str, str]:
    """The sections a card body holds (name -> content, markers and title stripped)."""
    out: dict[str, str] = {}
    for m in _SECTION.finditer((body or "").replace("\r\n", "\n")):
        if m.group(1) in NAMES:
            content = m.group(2)
            title = _title_line(m.group(1))
            out[m.group(1)] = content[len(title) + 2:] if content.startswith(title + "\n\n") else content
    return out


def _title_line(name: str) -> str:
    s = next(s for s in SECTIONS if s.name == name)
    return f"**{s.title} / {s.title_zh}**"


def render(sections: dict[str, str], state: dict | None = None) -> str:
    """A whole card from its sections (unknown names are refused: a typo would hide a section)."""
    unknown = set(sections) - set(NAMES)
    if unknown:
        raise ValueError(f"unknown card section(s): {', '.join(sorted(unknown))}")
    parts = [sticky.head(KIND, None, state) + heading((state or {}).get("run"))]
    for s in SECTIONS:
        if s.name in sections and sections[s.name].strip():
            body = sections[s.name].strip("\n")
            parts.append(f"{_OPEN.format(s.name)}\n{_title_line(s.name)}\n\n{body}\n{_CLOSE.format(s.name)}")
    parts.append(FOOTER)
    return "\n\n".join(parts) + "\n"


def patch(body: str | None, name: str, content: str, state: dict | None = None) -> str:
    """`body` with section `name` replaced by `content` and every other section kept as it was.

    `state`, when given, replaces the bot's state line; otherwise the one in `body` is kept."""
    if name not in NAMES:
        raise ValueError(f"unknown card section {name!r}")
    current = sections_of(body)
    current[name] = content
    if state is None:
        state = sticky.state_of_text(body or "")
    return render(current, state or None)


def has(body: str | None, name: str, content: str) -> bool:
    """Whether `body` shows `content` in section `name` (what a writer checks after writing)."""
    return sections_of(body).get(name, "").strip("\n") == content.strip("\n")


# ---- the sweep section: progress per family from the run's jobs --------------------------------

CANARY = "canary"
_STATES = ("queued", "running", "passed", "failed", "cancelled", "skipped")


def job_state(job: Job) -> str:
    status, conclusion = job.status, job.conclusion
    if status in ("queued", "waiting", "pending", "requested"):
        return "queued"
    if status != "completed":
        return "running"
    return {"success": "passed", "failure": "failed", "timed_out": "failed", "startup_failure": "failed",
            "cancelled": "cancelled", "skipped": "skipped", "neutral": "passed"}.get(conclusion or "", "failed")


def family_of(job_name: str, families: tuple[str, ...]) -> str | None:
    """The bucket (or `canary`) a job belongs to, from its name: jobs of a called workflow are named
    `<caller job> / <called job>`, and the sweep names each leg after its bucket."""
    for part in (p.strip() for p in job_name.split(" / ")):
        if part == CANARY or part in families:
            return part
    return None


def progress(jobs: list[Job], families: tuple[str, ...]) -> list[dict]:
    """Per family (canary first, then bucket order): counts per state and the first failed job."""
    rows: dict[str, dict] = {}
    for job in jobs:
        fam = family_of(job.name, families)
        if fam is None:
            continue
        row = rows.setdefault(fam, {"family": fam, **{s: 0 for s in _STATES}, "failed_job": None})
        state = job_state(job)
        row[state] += 1
        if state == "failed" and row["failed_job"] is None:
            row["failed_job"] = {"name": job.name, "url": job.html_url}
    order = (CANARY,) + families
    return [rows[f] for f in order if f in rows]


def sweep_markdown(run: dict | None, rows: list[dict]) -> str:
    """The sweep section: the run line, then one table row per family."""
    if not run:
        return "No sweep has run on this PR yet. / 此 PR 尚未运行扫描。"
    sha = str(run.get("head_sha") or "")[:12]
    state = run.get("conclusion") or run.get("status") or "in progress"
    lines = [f"[Run {run['id']}]({run.get('url', '')}) on `{sha}`: **{state}**"]
    if rows:
        # one language a cell: a bilingual header breaks mid-word in a narrow column (the title is bilingual)
        lines += ["", "| family | jobs | " + " | ".join(_STATES) + " |",
                  "|---|---:|" + "---:|" * len(_STATES)]
        for r in rows:
            total = sum(r[s] for s in _STATES)
            name = r["family"]
            if r["failed_job"] and r["failed_job"].get("url"):
                name += f" ([first failure]({r['failed_job']['url']}))"
            lines.append(f"| {name} | {total} | " + " | ".join(str(r[s]) for s in _STATES) + " |")
    return "\n".join(lines)


# ---- which PR a finished run's card belongs to ----------------------------------------------------

TRUSTED_PATH = f"{names.WORKFLOWS_DIR}/{names.TRUSTED_WORKFLOW}"


def card_pr(run: WorkflowRun) -> tuple[int | None, str]:
    """(PR whose card a finished sweep run updates, or None; why), from the workflow_run payload alone.

    The card job's concurrency group is per PR: a group per head branch would put every trusted sweep
    (dispatched on the default branch) and every push to it in one group, where GitHub keeps one
    pending job and cancels the rest, so one PR's card update could be dropped by another PR's run.
    A trusted sweep names its PR in its run name; a same-repo PR's run lists it in `pull_requests`.
    A fork PR's own run lists none (GitHub leaves it empty for forks) and plans no sweep: its card is
    written by its trusted sweep."""
    if run.event == "workflow_dispatch" and run.path.split("@")[0] == TRUSTED_PATH:
        named = parse_run_name(run.display_title)
        if named is None:
            return None, f"run {run.id} does not name a PR in its run name: no status card"
        return named[0], f"trusted sweep {run.id} of PR #{named[0]}"
    if run.event == "pull_request" and run.pull_requests:
        return run.pull_requests[0], f"run {run.id} of PR #{run.pull_requests[0]}"
    if run.event == "pull_request":
        return None, (f"run {run.id} lists no pull request (a fork PR's own run: it sweeps nothing; its "
                      "trusted sweep updates the card)")
    return None, f"run {run.id} is a {run.event} run, not a pull-request sweep run: no status card"


def card_group(pr: int) -> str:
    return names.CARD_GROUP.format(pr=pr)
