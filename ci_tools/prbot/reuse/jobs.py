"""Which jobs of a finished sweep run matter for reuse (pure).

InferenceX refused a run that concluded `cancelled` because one eval-only job was cancelled, although
every benchmark artifact was present. Here a run is judged by its jobs: every job of a family the
policy does not list under `reuse.optional-jobs` must have succeeded (or been skipped); a failed or
cancelled job of an optional family (evals, by default) is named, on the card and in the reply, and
does not make the run unusable. Jobs outside any family (plan, release, collect) are required: a
broken collection is no complete sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ci_tools.github.models import Job
from ci_tools.prbot.card.decide import family_of, job_state
from ci_tools.sweep.buckets import BUCKETS

BAD = ("failed", "cancelled")


@dataclass(frozen=True)
class JobVerdict:
    required: tuple[str, ...] = ()     # "name (state)" of required jobs that did not succeed
    optional: tuple[str, ...] = ()     # the same for optional families
    listed: int = 0

    @property
    def usable(self) -> bool:
        return not self.required

    def note(self) -> str | None:
        if not self.optional:
            return None
        return ("optional job(s) did not succeed and were left out of the reuse decision: "
                + ", ".join(self.optional))


def verdict(jobs: Iterable[Job], optional: Iterable[str]) -> JobVerdict:
    optional = set(optional)
    required_bad: list[str] = []
    optional_bad: list[str] = []
    listed = 0
    for job in jobs:
        listed += 1
        state = job_state(job)
        if state not in BAD and state not in ("queued", "running"):
            continue
        name = job.name
        family = family_of(name, BUCKETS)
        where = optional_bad if family in optional else required_bad
        where.append(f"{name} ({state})")
    return JobVerdict(tuple(required_bad), tuple(optional_bad), listed)
