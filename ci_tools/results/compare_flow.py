"""`results compare`: load both sides, compare, render (the flow behind the command)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools import names
from ci_tools.errors import InputError
from ci_tools.results import compare, compare_render, pareto, sources


@dataclass
class Report:
    text: str
    regressed: int
    false_claims: int
    notes: list[str] = field(default_factory=list)
    annotations: list[str] = field(default_factory=list)   # `::warning`s to print: one per regressed value


def load_policy(path: Path | None) -> compare.Policy:
    from ci_tools.sweep.load import load_policy as load_labels

    if path is None:
        default = Path(names.POLICY)
        if not default.is_file():
            return compare.Policy()
        path = default
    if not path.is_file():
        raise InputError(f"{path}: no such policy file")
    return compare.Policy.from_mapping(load_labels(Path("."), path).compare)


def check_claims(head: list[dict], main: list[dict], claims_path: Path) -> list[dict]:
    """Claims over both sides: a bare name is the PR's point when the PR has it, else main's;
    `main:<name>` is always main's."""
    from ci_tools.yaml.load import read_text

    head_pts = compare.points_of(head)
    main_pts = compare.points_of(compare.latest_per_point(main), prefix="main:")
    names = {p.name for p in head_pts}
    extra = [pareto.Point(p.name[len("main:"):], p.tok_s_gpu, p.intvty_p90) for p in main_pts
             if p.name[len("main:"):] not in names]
    points = head_pts + main_pts + extra
    parsed = pareto.parse_claims(read_text(claims_path), str(claims_path))
    return pareto.check_claims(points, parsed, str(claims_path))


def main_from_github(head: list[dict], policy: compare.Policy, gh=None) -> tuple[list[dict], list[str]]:
    from ci_tools.results.baselines import main_results
    from ci_tools.github.client import GitHub

    wanted = {compare.identity(r["point"]) for r in head if isinstance(r.get("point"), dict)}
    found = main_results(gh or GitHub.from_env(), wanted=wanted, history=policy.history)
    notes = found.notes + [f"main's results from run(s) {', '.join(map(str, found.runs)) or 'none'}"]
    return found.results, notes


def load_sides(head_path: Path, baseline_paths: list[Path], policy: compare.Policy, *, from_main: bool = False,
               gh=None, require_baseline: bool = True) -> tuple[list[dict], list[dict], list[str]]:
    """(the PR's results, main's results newest first, notes) from the command's HEAD and baselines;
    without `require_baseline` (the report of a first run) no baseline is main's results: none."""
    if baseline_paths and from_main:       # contradictory options: nothing else is worth reading first
        raise InputError("give either --baseline or --from-main, not both", exit_code=2)
    head = sources.load_side(head_path)     # a missing HEAD is said even when the baseline is missing too
    if not baseline_paths and not from_main and not require_baseline:
        return head, [], []
    if not baseline_paths and not from_main:
        raise InputError("nothing to compare with: give --baseline FILE (main's results; repeat for a history) "
                         "or --from-main", exit_code=2)
    if from_main:
        main, notes = main_from_github(head, policy, gh)
        return head, main, notes
    return head, sources.load_history(baseline_paths), []


def run_compare(head_path: Path, baseline_paths: list[Path], claims_path: Path | None,
                policy_path: Path | None, fmt: str, *, from_main: bool = False, gh=None,
                plot: Path | None = None, title: str = "") -> Report:
    policy = load_policy(policy_path)
    head, main, notes = load_sides(head_path, baseline_paths, policy, from_main=from_main, gh=gh)
    comparisons = compare.compare_points(head, main, policy)
    if not comparisons:
        message = f"{head_path}: no valid result to compare (invalid results are never compared)"
        if fmt != "github":
            raise InputError(message)
        # in a workflow the comparison only informs: the collect and ingest jobs judge the sweep
        from ci_tools.github.actions import append_summary

        append_summary(f"**Results against main**: no valid result in this run ({len(head)} collected).\n")
        return Report(message + "\n", 0, 0, notes)
    shift = compare.frontier_shift(compare.points_of(head), compare.points_of(compare.latest_per_point(main)))
    claims = check_claims(head, main, claims_path) if claims_path else []
    if plot is not None:
        try:
            from ci_tools.results import chart, render

            png = render.png_bytes(chart.from_sides(head, compare.latest_per_point(main), title))
        except ImportError:
            raise InputError("--plot needs matplotlib: pip install 'ci-tools[plot]'", exit_code=2) from None
        plot.parent.mkdir(parents=True, exist_ok=True)
        plot.write_bytes(png)
    annotations: list[str] = []
    if fmt == "github":
        from ci_tools.github.actions import append_summary

        append_summary(compare_render.markdown(comparisons, shift, claims))
        annotations = compare_render.regressions(comparisons)
        fmt = "text"
    if fmt == "json":
        text = json.dumps(compare_render.as_json(comparisons, shift, claims), indent=2) + "\n"
    elif fmt == "markdown":
        text = compare_render.markdown(comparisons, shift, claims)
    else:
        text = compare_render.text(comparisons, shift, claims)
    regressed = compare.summary(comparisons)[compare.REGRESSED]
    return Report(text, regressed, sum(1 for c in claims if not c["holds"]), notes, annotations)
