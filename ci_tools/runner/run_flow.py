"""`runner run`, `runner profile` and `runner acceptance`'s flow (shell): read, plan, run.

The inputs are read once (`inputs.py`: row, recipe, hardware facts, eval and image policy) into a
`RunInputs`; `run_plan.plan_job` plans from that value alone (the `--dry-run` text, the step outputs, the
`JobSpec`); a `PreparedJob`'s `run()` hands the spec to the supervisor (`supervise.supervise`), then
merges a profile's traces or writes acceptance.json. The CLI writes the step outputs, prints, and turns
`JobFailed` into an exit code.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

from ci_tools import names
from ci_tools.errors import InputError
from ci_tools.runner.inputs import read_acceptance, read_run
from ci_tools.runner.run_plan import PlannedJob, RunRequest, plan_job

if TYPE_CHECKING:
    from ci_tools.runner.plan import JobPlan
    from ci_tools.runner.profile import ProfileCalls
    from ci_tools.runner.spec import JobFailed

# the supervisor, the profile merger and the acceptance reader load only when a job runs: a dry run
# of every row of a sweep stays at its measured cost (benchmarks/runner_dry_run.py)


@dataclass(frozen=True)
class PreparedJob:
    """A planned job: what `--dry-run` prints, the step outputs, and how to start it."""
    commands: str
    outputs: dict[str, str]
    result_filename: str
    status_path: Path
    stopped: str                  # what the failure message says was stopped
    # runs the job (raises runner.spec.JobFailed); calls its argument with the sha256 of the record of the
    # client's exports the moment the client exited (runner/seal.py: the step output)
    run: Callable[[Callable[[str], None] | None], None]
    done: str = ""                # what the text output says after a successful run (default: next step)

    def execute(self, on_sealed: Callable[[str], None] | None = None) -> JobFailed | None:
        """Run the job; the `JobFailed` that ended it, or None when the client finished."""
        from ci_tools.runner.spec import JobFailed

        try:
            self.run(on_sealed)
        except JobFailed as exc:
            return exc
        return None


def prepare_run(req: RunRequest) -> PreparedJob:
    """Everything `runner run` decides before it starts anything; every refusal is an InputError/UsageError."""
    return _prepared(plan_job(read_run(req)), req.runner_name)


def prepare_profile(req: RunRequest, requests: int | None) -> PreparedJob:
    """`runner profile`: `runner run`'s job for a single-node row, with the engine's profiler on, a short
    client window between the start and stop profile calls, and the traces merged afterwards."""
    return _prepared(plan_job(read_run(req, profile=(requests,))), req.runner_name)


def prepare_acceptance(req: RunRequest, dataset_file: str | None, run_url: str | None) -> PreparedJob:
    """`runner acceptance`: one SPEED-Bench collection cell (a row of `config acceptance-matrix`): its
    `serve` row's point with real speculative decoding at the cell's step count and thinking mode, the
    engine's acceptance metrics read around the client window, the length written to acceptance.json."""
    return _prepared(plan_job(read_acceptance(req, dataset_file, run_url)), req.runner_name)


def _prepared(job: PlannedJob, runner_name: str) -> PreparedJob:
    out = job.out

    def run(on_sealed: Callable[[str], None] | None = None) -> None:
        from ci_tools.runner.supervise import JobContext, supervise

        supervise(job.spec(), JobContext(out, runner=runner_name, on_sealed=on_sealed))
        if job.traces is not None:
            collect_traces(job.traces.trace_dir, out, job.traces.plan, job.traces.calls)
        if job.acceptance is not None:
            a = job.acceptance
            record_acceptance(out, a.engine, a.cell, a.run_url, a.mtp)

    return PreparedJob(commands=job.commands, outputs=job.outputs, result_filename=job.result_filename,
                       status_path=job.status_path, stopped=job.stopped, run=run, done=job.done)


def authorize_profile(login: str) -> str:
    """`runner profile --requested-by`: ask GitHub for `login`'s permission on this repository
    (GITHUB_TOKEN, metadata: read, which every job token has); a non-maintainer is refused (exit 1)
    before any row is read or runner held. Returns the line that says who may."""
    from ci_tools.github.client import GitHub
    from ci_tools.runner.profile import requester_refusal

    permission = GitHub.from_env().permission(login)
    refusal = requester_refusal(login, permission)
    if refusal:
        raise InputError(refusal)
    return f"{login} may request profiling ({permission} permission)"


def record_acceptance(out: Path, engine: str, cell: Mapping[str, Any] | None, run_url: str | None,
                      mtp: int | None) -> dict:
    """acceptance.json from the metric bodies the job saved. A collection cell without a length fails
    (phase `acceptance`); an eval row only records what was (not) measured."""
    from ci_tools.runner.acceptance import check_range, document, measure
    from ci_tools.runner.spec import JobFailed, Phase, Status
    from ci_tools.runner.supervise import write_status

    def bodies(side: str) -> dict[str, str | None]:
        where = out / names.ACCEPTANCE_DIR / side
        return {p.name: p.read_text(encoding="utf-8") for p in where.iterdir() if p.is_file()
                and not p.name.endswith(".error")} if where.is_dir() else {}

    m = check_range(measure(engine, bodies("before"), bodies("after")), int(cell["mtp"]) if cell else mtp)
    if m.length is None and cell is None:
        errors = sorted((out / names.ACCEPTANCE_DIR / "after").glob("*.error"))
        if errors:
            m = type(m)(None, m.source, m.problem + " (" + "; ".join(e.read_text(encoding="utf-8").strip()
                                                                      for e in errors) + ")")
    doc = document(dict(cell) if cell else {"engine": engine, "mtp": mtp}, m, run_url)
    (out / names.ACCEPTANCE_JSON).write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    if m.length is None and cell is not None:
        write_status(out, Status(Phase.ACCEPTANCE, reason=m.problem))
        raise JobFailed(Phase.ACCEPTANCE, m.problem)
    return doc


def collect_traces(trace_dir: Path, out: Path, plan: JobPlan, calls: ProfileCalls) -> None:
    """Merge the per-rank traces the engine wrote and put the README beside them; none is a failure."""
    from ci_tools.runner.profile import MERGED_TRACE, README, is_trace_file, merge_traces, readme
    from ci_tools.runner.spec import JobFailed, Phase, Status
    from ci_tools.runner.supervise import write_status

    files = sorted(p for p in trace_dir.iterdir() if p.is_file() and is_trace_file(p.name)) \
        if trace_dir.is_dir() else []
    problem = "" if files else (f"the engine wrote no trace file into {trace_dir} between the start and stop "
                                "profile calls; see server.log")
    traces = []
    for f in files:
        try:
            raw = gzip.decompress(f.read_bytes()) if f.name.endswith(".gz") else f.read_bytes()
            traces.append((f.name, json.loads(raw)))
        except (OSError, ValueError) as exc:
            problem = f"{f}: not a readable Chrome trace: {exc}"
            break
    if problem:
        write_status(out, Status(Phase.TRACES, reason=problem))
        raise JobFailed(Phase.TRACES, problem)
    merged = merge_traces(traces)
    (trace_dir / (MERGED_TRACE + ".gz")).write_bytes(gzip.compress(json.dumps(merged).encode("utf-8")))
    client = plan.proc("client")
    (trace_dir / README).write_text(readme(plan.result_filename, plan.point.engine, [f.name for f in files],
                                           MERGED_TRACE + ".gz", calls, client.argv if client else []),
                                    encoding="utf-8")
