"""The flows of `ci-tools plan` and `ci-tools matrix`: inputs in, decisions, a result for the CLI.

`plan`: the event and refs (from the options or the webhook payload), the policy, changelog and
masters from git (`inputs.py`), the gate decided once and settled once the changelog diff is known,
the runner screen (passed in: it is the runner's knowledge, a floor above), then `plan.plan_sweep`;
with `--pr`, the runs `/use` could pin (passed in too: the bot's rules). `--gate-only` (`gate`) reads no git at all and takes the
policy from the working tree. `matrix_rows`: master files on disk -> InferenceX rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tools import names
from ci_tools.errors import InputError, UsageError

if TYPE_CHECKING:
    from ci_tools.github.client import GitHub
    from ci_tools.gitio import Git
    from ci_tools.sweep.gate import GateDecision
    from ci_tools.sweep.labels import Policy
    from ci_tools.sweep.plan import Masters, Plan, Screen
    from ci_tools.sweep.row import MultiNodeRow, SingleNodeRow


@dataclass(frozen=True)
class PlanRequest:
    """What the command line asks for (see `ci-tools plan --help`)."""

    repo: Path
    base: str | None = None
    head: str | None = None
    labels: tuple[str, ...] = ()
    event_path: str | None = None
    event_name: str | None = None
    head_message: str | None = None
    changelog: str = names.CHANGELOG
    masters: tuple[str, ...] = ()
    runners: str | None = None
    run_id: str | None = None
    run_attempt: int = 1                     # GITHUB_RUN_ATTEMPT: > 1 for a re-run (`gate` checks it)
    after_canary: bool = False
    passed: frozenset[str] = frozenset()
    canary_dir: Path | None = None           # the downloaded canary-passed-* artifacts (sweep/canary.py)
    pr: int | None = None                    # read labels, head and base of this PR from GitHub
    github_repo: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)    # GITHUB_TOKEN, GITHUB_API_URL, ... for --pr
    runner_screen: bool = True               # False: rows served by the repository's own scripts (--no-runner-screen)
    image_policy: Path | None = None         # the trusted policy whose image allowlist applies (--image-policy)


UNSCREENED_NOTE = ("--no-runner-screen: no row was checked against what `ci-tools runner run` can serve "
                   "(the repository's own launch scripts serve them)")


@dataclass
class Outcome:
    """A gate decision (`--gate-only`) or a plan, and notes for the person reading it."""

    decision: GateDecision | None = None
    plan: Plan | None = None
    use_candidates: list | None = None   # with --pr: the runs `/use` could pin (UseCandidate)
    notes: list[str] = field(default_factory=list)

    @property
    def error(self) -> str | None:
        if self.plan is not None:
            return self.plan.error
        return self.decision.error if self.decision is not None else None


def _event(req: PlanRequest, *, need_head: bool, git=None, gh=None):
    """(event with the requested labels, base sha from the payload or None)."""
    from ci_tools.sweep.gate import GateEvent

    if req.event_path and req.pr is not None:
        raise UsageError("pass --event-path FILE or --pr N, not both")
    if req.event_path:
        from ci_tools.sweep import inputs

        event, base_sha = inputs.read_event(req.event_path, req.event_name, req.run_id, req.head_message)
    elif req.pr is not None:
        from ci_tools.sweep import inputs

        if gh is None:
            raise UsageError("--gate-only decides from an event file; pass --event-path, not --pr")
        event, base_sha = inputs.pull_request_event(gh, req.pr, run_id=req.run_id, head_message=req.head_message)
        inputs.require_commit(git, event.sha, f"PR #{req.pr}'s head commit", f"pull/{req.pr}/head")
        if base_sha and not req.base:
            inputs.require_commit(git, base_sha, f"PR #{req.pr}'s base commit", "<base branch>")
    else:
        if need_head and not req.head:
            raise UsageError("pass --head REF (and --base REF), --pr N, or --event-path FILE")
        return GateEvent(name="local", action="synchronize", labels=tuple(req.labels), head_message=req.head_message,
                         sha=req.head, run_id=req.run_id), None
    if req.labels:
        event = dataclasses.replace(event, labels=tuple(req.labels))
    return event, base_sha


def _notes(*notes: str | None) -> list[str]:
    return [n for n in notes if n]


def gate(req: PlanRequest) -> Outcome:
    """`--gate-only`: the decision from the event alone (no git, no configs)."""
    from ci_tools.sweep.gate import decide
    from ci_tools.sweep.load import load_policy_or_default

    policy, note = load_policy_or_default(req.repo)
    event, _ = _event(req, need_head=False)
    decision = decide(event, policy)
    if req.run_attempt > 1 and event.name == "pull_request" and event.pr_number is not None and decision.restarts:
        decision = _rerun_verdict(req, event, policy, decision)
    return Outcome(decision=decision, notes=_notes(note, policy.unknown_note(event.labels)))


def _rerun_verdict(req: PlanRequest, event, policy, decision):
    """A re-run joins the PR's active group with its old payload: refused once the PR has moved on
    (one API call, re-runs only; a first attempt decides from the event alone)."""
    from ci_tools.github.client import GitHub
    from ci_tools.sweep.gate import PrNow, refuse_rerun, superseded

    pr = GitHub.from_env(env=dict(req.env)).pull_request(event.pr_number)
    now = PrNow(head_sha=pr.head_sha, labels=pr.labels, state=pr.state, draft=pr.draft)
    why = superseded(event, now, policy)
    return refuse_rerun(decision, event, why) if why else decision


# The checks of the floors above sweep that `plan` runs, passed in by the command (`cli/plan.py`):
# which rows a runner can serve (`runner.screen_git.screen_at(git, head, masters)`, a `plan_sweep`
# screen) and, with --pr, which runs `/use` could pin (`prbot.reuse.candidates_flow.use_candidates(gh,
# pr, policy)`).
Screener = Callable[["Git", str, "Masters"], "Screen"]
Candidates = Callable[["GitHub", int, "Policy"], list]    # (the GitHub client, PR number, policy) -> runs


def plan(req: PlanRequest, *, screener: Screener, candidates: Candidates) -> Outcome:
    """The plan of a change: refs from the options or the event, everything else from git."""
    from ci_tools.gitio import Git
    from ci_tools.sweep.gate import decide, settle
    from ci_tools.sweep.inputs import changelog_inputs, policy_at
    from ci_tools.sweep.plan import after_canary, plan_sweep, refused_change

    if req.passed and not req.after_canary:
        raise UsageError("--passed-family only makes sense with --after-canary")
    if req.passed and req.canary_dir is not None:
        raise UsageError("--passed-family and --canary-dir both name the passed families: give one")
    git = Git(req.repo)
    gh = None
    if req.pr is not None:
        from ci_tools.github.client import GitHub
        from ci_tools.sweep.inputs import repository_of

        gh = GitHub.from_env(repository_of(git, req.github_repo, req.env), dict(req.env))
    event, base_sha = _event(req, need_head=True, git=git, gh=gh)
    head_ref = req.head or event.sha
    base_ref = req.base or base_sha
    if not head_ref or not base_ref:
        raise UsageError("cannot tell which commits to compare: pass --base and --head")
    git.rev_parse_many([head_ref, base_ref])
    policy, source, note = policy_at(git, head_ref)
    if event.name != "push" and event.head_message is None:
        event = dataclasses.replace(event, head_message=git.commit_message(head_ref))
    if event.name != "push":
        base_ref = git.merge_base(base_ref, head_ref)
    decision = decide(event, policy)
    entries, head_masters, base_masters, screen = [], None, None, None
    notes = _notes(note, policy.unknown_note(event.labels))
    trusted_images = None
    if req.image_policy is not None:
        from ci_tools.config.load import load_image_policy

        trusted_images = load_image_policy(req.image_policy)     # its own errors: the policy, not the change
    try:
        if decision.sweep and not decision.error:
            # the image allowlist of the trusted policy (--image-policy: a trusted sweep's workflow commit,
            # which benchmark.yml's runner also reads), else of the head's own policy file (the shipped
            # default names none of yours)
            images = trusted_images or ((policy.images, f"{names.POLICY} at {head_ref}")
                                        if policy.images is not None and not source.default else None)
            entries, head_masters, base_masters = changelog_inputs(git, base_ref, head_ref, req.changelog,
                                                                   list(req.masters), req.runners, images)
            decision = settle(decision, bool(entries))
        if head_masters is not None and req.runner_screen:
            screen = screener(git, head_ref, head_masters)       # rows no runner serves are refused here
        elif head_masters is not None:
            notes.append(UNSCREENED_NOTE)
        from ci_tools.sweep.priority import Context

        ctx = Context(event=event.name, labels=tuple(event.labels), pr=event.pr_number,
                      namespace=f"{req.run_id}:{req.run_attempt}" if req.run_id else "local")
        result = plan_sweep(decision, entries, head_masters, policy, base=base_masters, screen=screen, priority=ctx)
    except InputError as exc:
        if exc.exit_code != 1:
            raise
        # the change itself is refused: a verdict like any other, which every format shows in full
        return Outcome(plan=refused_change(decision, exc.findings, exc.message), notes=notes)
    released: tuple[str, ...] = ()
    if req.canary_dir is not None:
        from ci_tools.sweep.canary import released_families
        from ci_tools.sweep.load import canary_markers

        release = released_families(canary_markers(req.canary_dir), result.canaries)
        result, released = after_canary(result, release.passed), release.notes
    elif req.after_canary:
        result = after_canary(result, set(req.passed))
    notes += list(released)
    pinnable = None
    if gh is not None and req.pr is not None:
        from ci_tools.github.client import GitHubError

        try:
            pinnable = candidates(gh, req.pr, policy)
        except GitHubError as exc:            # the plan stands; only the list of runs is missing
            notes.append(f"cannot list the runs /use could pin: {exc.message}")
    return Outcome(plan=dataclasses.replace(result, policy=source), notes=notes, use_candidates=pinnable)


# ---- matrix -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MatrixRequest:
    """The options of `ci-tools matrix full-sweep|test-config` (see `--help`)."""

    config_files: tuple[str, ...] = ()
    runners_file: str | None = None
    config_keys: tuple[str, ...] | None = None        # test-config's patterns; None = every entry
    concs: tuple[int, ...] = ()
    model_prefix: tuple[str, ...] = ()
    precision: tuple[str, ...] = ()
    framework: tuple[str, ...] = ()
    runner_type: tuple[str, ...] = ()
    seq_lens: tuple[str, ...] = ()
    scenario_type: tuple[str, ...] = ()
    min_conc: int | None = None
    max_conc: int | None = None
    step_size: int = 2
    max_tp: int | None = None
    max_ep: int | None = None
    single_node: bool = False
    multi_node: bool = False
    no_evals: bool = False
    evals_only: bool = False
    all_evals: bool = False
    with_config_key: bool = False                     # add `config-key` (not InferenceX's) for runner run/profile


def _read_masters_fast(files: list[Path]):
    """Every master entry without line marks (the hot path), through the same reader as `plan`
    (`MasterIndex`); a problem is reported with its line all the same."""
    from ci_tools.config.masters import MasterIndex
    from ci_tools.yaml.load import read_text

    # every entry is wanted: each file parsed whole, once (no per-entry split)
    index = MasterIndex([(str(f), read_text(f).encode("utf-8")) for f in files], fast=False, marks=False)
    return index.full()


def _resolve_keys(patterns: tuple[str, ...], keys: list[str], files: list[Path]) -> list[str]:
    from ci_tools.changelog.keys import resolve_keys

    resolved, unmatched = resolve_keys(list(patterns), keys)
    if unmatched:
        import difflib

        parts = []
        for u in unmatched:
            close = difflib.get_close_matches(u, keys, n=3, cutoff=0.6)
            parts.append(f"{u!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
        raise UsageError(f"unknown config key(s): {', '.join(parts)}; {len(keys)} keys are defined in "
                         f"{', '.join(str(f) for f in files)}")
    return resolved


def matrix_rows(req: MatrixRequest) -> list[SingleNodeRow | MultiNodeRow]:
    """The InferenceX rows of the master files on disk, filtered as the request says."""
    from ci_tools.config.load import default_master_paths, read_masters
    from ci_tools.sweep.matrix import Filters, expand, select_evals
    from ci_tools.yaml.fast import load_data_fast
    from ci_tools.yaml.load import read_text

    if req.no_evals and (req.evals_only or req.all_evals):
        raise UsageError("--no-evals cannot be combined with --evals-only or --all-evals")
    files = [Path(p) for p in req.config_files] or default_master_paths(Path("."))
    masters = _read_masters_fast(files) if files else read_masters(files)
    runners_path = Path(req.runners_file) if req.runners_file else files[0].parent / "runners.yaml"
    # mark-free like the masters; a problem is reported by the located loader all the same
    runners = (load_data_fast(read_text(runners_path), str(runners_path))
               if runners_path.exists() or req.runners_file else {})
    if runners is None or not isinstance(runners, dict):
        raise InputError(f"{runners_path}: expected a mapping with `labels` and `hardware`")
    labels = runners.get("labels") or {}
    bad = [r for r in req.runner_type if r not in labels]
    if bad:
        raise UsageError(f"invalid runner type(s): {', '.join(bad)}. Runner labels in {runners_path}: "
                         f"{', '.join(sorted(labels)) or '(none)'}")
    keys = None if req.config_keys is None else _resolve_keys(req.config_keys, masters.keys(), files)
    filters = Filters(config_keys=tuple(keys) if keys is not None else None, model_prefix=req.model_prefix,
                      precision=req.precision, framework=req.framework, runner_type=req.runner_type,
                      seq_lens=req.seq_lens, scenario_types=req.scenario_type, min_conc=req.min_conc,
                      max_conc=req.max_conc, concs=req.concs, max_tp=req.max_tp, max_ep=req.max_ep,
                      step=req.step_size, single_node=req.single_node, multi_node=req.multi_node)
    try:
        rows = expand(masters.entries, runners.get("hardware") or {}, filters)
    except InputError as exc:
        if exc.message.startswith("--"):
            raise UsageError(exc.message) from None
        raise
    rows = select_evals(rows, all_evals=req.all_evals, evals_only=req.evals_only, no_evals=req.no_evals)
    return [r.row.replace(config_key=r.key) if req.with_config_key else r.row for r in rows]
