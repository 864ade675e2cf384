"""`runner cleanup`'s flow (shell): stop what carries a job's (or runner's) label, and write the
status.json a killed run step left unwritten. The stopping itself is `runner/cleanup.py`'s."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools import names


@dataclass
class CleanupReport:
    lines: list[str] = field(default_factory=list)      # for people, in order
    problems: list[str] = field(default_factory=list)   # what could not be stopped (exit 1)
    stopped: list[str] = field(default_factory=list)
    wrote_status: bool = False                          # the run step left no status.json: one was written


def cleanup(out: Path, labels: tuple[str, ...], runner_name: str) -> CleanupReport:
    """Stop what carries the job's label (OUT/job.json, --label) and, with a runner name, the runner's;
    write a status.json when the run step left none."""
    from ci_tools.runner.cleanup import stop_labelled
    from ci_tools.runner.supervise import write_status

    report = CleanupReport()
    found = job_labels(out, labels)
    if not found and not runner_name:
        report.lines.append(f"nothing to clean up: {out / names.JOB_JSON} does not exist (the job started nothing) "
                            "and no --label or RUNNER_NAME was given")
    stopped = report.stopped
    for i, label in enumerate(found or [""]):
        sweep = stop_labelled(label, runner_name if i == 0 else "", budget_s=8.0, grace_s=1.0)
        stopped += sweep.stopped()
        report.problems += sweep.problems
    report.wrote_status = out.is_dir() and not (out / names.STATUS_JSON).exists()
    if report.wrote_status:
        write_status(out, {"ok": False, "phase": "start", "exit_code": 1,
                           "reason": "the run step ended without a status (killed, or cancelled before it started)"})
        report.lines.append(f"wrote {out / names.STATUS_JSON}: the run step left none")
    report.lines += [f"stopped {line}" for line in stopped]
    if not stopped:
        who = found + ([f"runner {runner_name}"] if runner_name else [])
        report.lines.append(f"nothing left running for {', '.join(who) or '-'}")
    return report


def job_labels(out: Path, labels: tuple[str, ...]) -> list[str]:
    """LABELS and the one OUT/job.json carries (an unreadable job.json carries none)."""
    found = list(labels)
    job_file = out / names.JOB_JSON
    if job_file.is_file():
        try:
            label = json.loads(job_file.read_text(encoding="utf-8")).get("label")
        except ValueError:
            label = None
        if label and label not in found:
            found.append(label)
    return found
