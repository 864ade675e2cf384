"""`reuse recover`: the checks a maintainer makes by hand before re-ingesting a merged PR's sweep (pure).

InferenceX keeps a hand-written procedure (several "recover PR N ingest via sweep reuse" pull
requests): confirm the run belongs to the merged PR, is green where it must be, still has its
artifacts, and measured exactly what was merged; then ask the results app to ingest it with the
merge run's id. Each check here is one line of the report, passed or failed with the reason; the
dispatch happens only when all pass.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"[{'pass' if self.ok else 'FAIL'}] {self.name}: {self.detail}"


@dataclass(frozen=True)
class Recovery:
    checks: tuple[Check, ...]
    payload: dict[str, str] | None        # the ingest dispatch's client_payload when every check passed

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks) and self.payload is not None

    def lines(self) -> list[str]:
        return [c.line() for c in self.checks]


def run_check(problem: str | None, run_id: int, pr: int) -> Check:
    """The reuse rules (`runs_flow.check_run`, as at merge) judged the run: this PR's, green where it must be,
    artifacts alive, inputs equal."""
    if problem:
        return Check("run", False, f"run {run_id} cannot be ingested for PR #{pr}: {problem}")
    return Check("run", True, f"run {run_id} is a usable sweep of PR #{pr} (required jobs green, artifacts present)")


def inputs_check(check) -> Check:
    """`check` is a measured.InputsCheck between the run's head and the merge commit; unknown fails:
    recovery never dispatches on an unverified claim."""
    if check is None or check.unknown:
        return Check("inputs", False, (check.unknown if check else "not compared") +
                     "; run from a full clone (fetch-depth: 0) that can fetch the run's head")
    if check.changed:
        return Check("inputs", False, "; ".join(check.changed))
    return Check("inputs", True, check.note())


def plan(checks: list[Check], payload: dict[str, str]) -> Recovery:
    return Recovery(tuple(checks), payload if all(c.ok for c in checks) else None)
