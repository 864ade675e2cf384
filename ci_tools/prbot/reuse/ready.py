"""Merge readiness: could merging this PR now leave main without results? (pure)

`ci-tools reuse ready` posts the answer as the check run `CONTEXT` on the PR head (and on a merge
queue group's commit), which a branch protection rule can require, with why and what to do in its
summary; the status card shows the same line. Green only when merging now
cannot leave main without results:

- the PR changes no performance-relevant file (the policy's `performance-relevant:` list and the
  changelog): there is nothing new to publish;
- the PR's labels make its sweep non-reusable (a trimmed primary, a reuse-blocking modifier, no primary)
  and no `/use` asks otherwise: the policy says main runs its own sweep after merge;
- an authorised `/use` resolves to a run that reuse accepts now, whose result artifacts are kept longer
  than the policy's margin (`reuse.artifact-margin-days`), so they are still downloadable at merge.

Red says why and what to do: pin a run, re-run the sweep before the artifacts expire, remove a blocking
modifier. A red readiness never blocks main's publication by itself: at merge a refused pin makes main
sweep on its own unless the policy says `on-refused-reuse: fail` (the red line says which).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

from ci_tools.github.models import Artifact
from ci_tools.github.models import timestamp as ts

CONTEXT = "ci-tools / ready to merge"
DESCRIPTION_LIMIT = 140          # GitHub truncates a commit status description beyond this


@dataclass(frozen=True)
class Facts:
    """What the decision needs, read by the flow."""

    pr: int
    relevant_files: tuple[str, ...]          # the PR's performance-relevant files (changelog included)
    reusable_label: bool                     # one reusable primary label and no reuse-blocking modifier
    label_problem: str | None                # reuse.label_problems: why the labels do not allow reuse
    authorised: bool
    pin_text: str = ""                       # "`/use 123` by @maint" when authorised
    run_id: int | None = None                # the run reuse would use now (None: refused or not asked)
    run_sha: str = ""
    refused: str | None = None               # why reuse would be refused now (authorised only)
    expires_at: datetime | None = None       # the earliest expiry of the run's result artifacts
    candidate: int | None = None             # not authorised: the newest run `/use` could pin now
    notes: tuple[str, ...] = ()              # the pin's inputs check, optional jobs that failed
    main_sweeps_on_refusal: bool = True      # policy `on-refused-reuse: sweep`
    margin_days: int = 7


@dataclass(frozen=True)
class Readiness:
    ready: bool
    summary: str                             # the commit status description (one line, <= 140 chars)
    detail: str                              # the card line: why, and what to do

    @property
    def state(self) -> str:
        return "success" if self.ready else "failure"

    def card_line(self) -> str:
        head = "**Ready to merge: yes.**" if self.ready else "**Ready to merge: no.**"
        return f"{head} {self.detail}"

    def check_summary(self, pr: int) -> str:
        """The check run's summary: the answer, why and what to do, where to read more."""
        return (f"{'✅' if self.ready else '❌'} {self.card_line()}\n\nPR #{pr}'s status card carries the same line; "
                "docs/maintainer.md, \"Merge readiness and recovery\", says what each answer means.")


def _short(text: str) -> str:
    return text if len(text) <= DESCRIPTION_LIMIT else text[:DESCRIPTION_LIMIT - 1] + "…"


def _fallback(f: Facts) -> str:
    return ("At merge main would run its own sweep instead." if f.main_sweeps_on_refusal else
            "At merge nothing would be published (the policy says `on-refused-reuse: fail`).")


def decide(f: Facts, now: datetime) -> Readiness:
    notes = "".join(f" {n[0].upper()}{n[1:]}." for n in f.notes)
    if not f.relevant_files:
        return Readiness(True, "not performance-relevant: nothing new for main to publish",
                         "This PR changes no performance-relevant file, so main has nothing new to publish.")
    if not f.authorised:
        if not f.reusable_label:
            why = f.label_problem or "its labels make its sweep non-reusable"
            return Readiness(True, _short(f"main sweeps itself after merge ({why})"),
                             f"Main runs its own sweep after merge: {why}.")
        pin = f"comment `/use {f.candidate}` to reuse run {f.candidate}" if f.candidate else \
            "wait for a green full sweep, then comment `/use <run_id>`"
        return Readiness(False, _short(f"no /use pin: {pin.replace('`', '')}"),
                         f"No `/use` pin: merging now makes main re-run the whole sweep on its GPUs. A maintainer should "
                         f"{pin}.")
    if f.label_problem:
        return Readiness(False, _short(f"/use is set but {f.label_problem}"),
                         f"{f.pin_text} is set, but {f.label_problem}. {_fallback(f)}")
    if f.refused or f.run_id is None:
        why = f.refused or "no run is usable"
        return Readiness(False, _short(f"pin would be refused: {why}"),
                         f"{f.pin_text} would be refused at merge: {why} {_fallback(f)}{notes}")
    if f.expires_at is None:
        return Readiness(False, _short(f"run {f.run_id}: artifact expiry unknown"),
                         f"Run {f.run_id}'s artifacts carry no expiry date, so whether main can download them at merge "
                         f"is unknown; re-run the sweep and pin the new run.{notes}")
    left = f.expires_at - now
    if left <= timedelta(days=f.margin_days):
        days = max(0, left.days)
        when = f.expires_at.strftime("%Y-%m-%d %H:%M UTC")
        return Readiness(False, _short(f"run {f.run_id}'s artifacts expire {when} (under {f.margin_days} days): re-run the sweep"),
                         f"Run {f.run_id}'s artifacts expire on {when} (in {days} day{'s' if days != 1 else ''}; the "
                         f"policy wants more than {f.margin_days}). Re-run the sweep (remove and re-add the sweep label) "
                         f"and pin the new run with `/use <run_id>`. {_fallback(f)}{notes}")
    until = f.expires_at.strftime("%Y-%m-%d")
    return Readiness(True, _short(f"run {f.run_id} pinned (commit {f.run_sha[:12]}), artifacts kept until {until}"),
                     f"Main will reuse run {f.run_id} ({f.pin_text}); its artifacts are kept until {until}.{notes}")


def earliest_expiry(artifacts: list[Artifact], wanted: Callable[[str], bool]) -> datetime | None:
    """The earliest `expires_at` among the unexpired artifacts whose name `wanted` accepts."""
    times = [t for a in artifacts if not a.expired and wanted(a.name) and (t := ts(a.expires_at)) is not None]
    return min(times) if times else None
