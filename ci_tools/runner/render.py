"""What `runner run/profile/acceptance`, `runner evals` and `runner cleanup` say (pure): an `Output`
per command and outcome, written by cli/emit.py."""

from __future__ import annotations

from pathlib import Path

from ci_tools.render.output import Output


def dry_run(commands: str, outputs: dict[str, str]) -> Output:
    """--dry-run: the commands for people, or one object for tools (`--format json`). The step
    outputs are written before the job is planned further (cli/runner.py), not here."""
    return Output(text=commands.removesuffix("\n"), json={"dry-run": True, "outputs": outputs, "commands": commands})


def outcome(result_filename: str, out: Path, status: Path, failed=None, done: str = "", stopped: str = "") -> Output:
    """How the job ended: the next step for people (`done`, else `results process`), or the error, its
    log tail and what was stopped; with `--format json` one object (the error too)."""
    body = {"ok": failed is None, "result-filename": result_filename, "out-dir": str(out), "status": str(status)}
    if failed is None:
        return Output(text=done or f"done: {result_filename}; next: ci-tools results process {out}", json=body)
    body.update({"phase": failed.phase, "message": failed.message, "exit-code": failed.exit_code})
    stderr = [f"error: {failed.phase}: {failed.message}"]
    if failed.tail:
        stderr.append("---- last lines of the log ----\n" + failed.tail.rstrip() + "\n----")
    stderr.append(f"{stopped}; see {status}")
    return Output(json=body, stderr=stderr, exit_code=failed.exit_code)


def evals(code: int, manifest: dict | None) -> Output:
    """`runner evals`: the batch manifest (json), each failed concurrency (github); the harness
    runs' own output went to the terminal as they ran."""
    if manifest is None:
        return Output(exit_code=code)
    failures = manifest.get("failures") or {}
    return Output(json=manifest, exit_code=code,
                  annotations=[("error", why, f"runner evals: conc {conc} failed") for conc, why in failures.items()],
                  summary=(f"### runner evals: {len(manifest.get('completed_eval_concs') or [])} of "
                           f"{len(manifest.get('eval_concs') or [])} concurrencies completed\n\n"
                           + "".join(f"- conc {c}: {why}\n" for c, why in failures.items())))


def cleanup(report) -> Output:
    """`runner cleanup`: what was stopped, and each thing that could not be (exit 1)."""
    return Output(text="\n".join(report.lines),
                  json={"ok": not report.problems, "stopped": report.stopped, "problems": report.problems,
                        "wrote-status": report.wrote_status, "messages": report.lines},
                  stderr=[f"error: {p}" for p in report.problems],
                  annotations=[("error", p, "runner cleanup") for p in report.problems],
                  summary=(f"### runner cleanup: {'could not stop everything' if report.problems else 'done'}\n\n"
                           + "".join(f"- {m}\n" for m in report.lines + [f"**error**: {p}" for p in report.problems])),
                  exit_code=1 if report.problems else 0)
