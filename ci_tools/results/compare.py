"""A PR's benchmark points against main's: baselines, noise-aware verdicts, the frontier shift (pure).

Inputs are plain result documents (`result.json`, as `results collect` gathers them): the PR run's
results, and main's results newest first (several runs give a history per point). Nothing here
reads a file or calls GitHub; `results compare` and the status card feed it.

For every PR point and headline metric the verdict is one of

- `improved` / `regressed`: the change is significant after the false-discovery control across
  every compared cell of the sweep (Benjamini–Hochberg at the policy's `fdr`);
- `equivalent`: the change is, with confidence, inside the policy's equivalence margin (TOST);
- `inconclusive`: neither: the noise is too large to tell;
- `new`: main has no result for the point (nor, for a changed topology, one at its concurrency).

See `stats.py` for how noise is estimated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

from ci_tools.results import stats
from ci_tools.results.identity import (describe, display_names, group, group_words, identity, label,  # noqa: F401
                                       same_group, topology)
from ci_tools.results.pareto import Point, dominates

IMPROVED, REGRESSED, EQUIVALENT, INCONCLUSIVE, NEW = "improved", "regressed", "equivalent", "inconclusive", "new"
VERDICTS = (IMPROVED, REGRESSED, EQUIVALENT, INCONCLUSIVE, NEW)


@dataclass(frozen=True)
class Metric:
    key: str            # in a result's `headline`
    label: str
    unit: str
    higher_is_better: bool


METRICS = (
    Metric("tok_s_gpu", "throughput", "tok/s/GPU", True),
    Metric("intvty_p90", "P90 interactivity", "tok/s/user", True),
    Metric("intvty_p50", "median interactivity", "tok/s/user", True),
    Metric("ttft_p90_s", "P90 TTFT", "s", False),
    # GPU energy over the benchmark window (`results process`, valid power measurements only)
    Metric("j_per_output_token", "energy per output token", "J/token", False),
    Metric("j_per_input_token", "energy per input token", "J/token", False),
    Metric("j_per_total_token", "energy per token", "J/token", False),
    Metric("j_per_request", "energy per request", "J", False),
)
ENERGY_KEYS = ("j_per_output_token", "j_per_input_token", "j_per_total_token", "j_per_request")
METRIC_KEYS = tuple(m.key for m in METRICS)


@dataclass(frozen=True)
class Policy:
    """The `compare:` section of ci-policy.yaml (defaults documented in the schema)."""

    assumed_run_noise: float = 0.015   # relative sd of one run when main's history is too short
    min_run_noise: float = 0.005       # never trust a history spread below this
    min_history: int = 3               # results of a point needed to estimate its run-to-run noise
    history: int = 5                   # main results of a point taken into account (newest first)
    equivalence_margin: float = 0.05   # |relative change| below this is "no change" (TOST)
    fdr: float = 0.05                  # false-discovery rate over the sweep's cells
    alpha: float = 0.05                # each one-sided test of the TOST pair

    @classmethod
    def from_mapping(cls, data: dict | None) -> "Policy":
        data = data or {}
        names = {f: f.replace("_", "-") for f in cls.__dataclass_fields__}
        return cls(**{f: data[k] for f, k in names.items() if k in data})


# ---- baselines --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Baseline:
    kind: str                     # "same" (same point), "replaced" (same conc, other topology), "none"
    results: tuple[dict, ...]     # main's valid results of that point, newest first
    name: str | None = None

    @property
    def latest(self) -> dict | None:
        return self.results[0] if self.results else None


def _valid(results: Iterable[dict]) -> list[dict]:
    return [r for r in results if isinstance(r, dict) and r.get("valid") and isinstance(r.get("point"), dict)]


def index_main(main_results: Iterable[dict]) -> dict[tuple, list[dict]]:
    """main's valid results by point identity, in the order given (newest first)."""
    out: dict[tuple, list[dict]] = {}
    for r in _valid(main_results):
        out.setdefault(identity(r["point"]), []).append(r)
    return out


def _gpus(point: dict) -> int | None:
    g = point.get("gpus")
    if isinstance(g, int) and g > 0:
        return g
    tp = point.get("tp")
    return tp if isinstance(tp, int) else None


def _distance(a: dict, b: dict) -> tuple:
    """How far apart two topologies of one config, concurrency and GPU count are: TP, then EP, then
    DP attention. The nearest main point is the one a PR point replaces."""
    return (a.get("tp") != b.get("tp"), (a.get("ep") or 1) != (b.get("ep") or 1),
            bool(a.get("dp-attn")) != bool(b.get("dp-attn")))


def _main_identity(ident: tuple, main: dict[tuple, list[dict]]) -> tuple | None:
    """main's identity of the same point: the same one, else the one point of a group `same_group`
    matches (a side that did not record the scenario); None when there is none or it is ambiguous."""
    if ident in main:
        return ident
    loose = [k for k in main if k[1:] == ident[1:] and same_group(k[0], ident[0])]
    return loose[0] if len(loose) == 1 else None


def assign_baselines(points: list[dict], main: dict[tuple, list[dict]], policy: Policy) -> list[Baseline]:
    """For each PR point: main's results of the same point; else, when the PR changed a point's
    topology, main's point of the same config, concurrency and GPU count that no PR point kept
    (each such main point is the baseline of at most one PR point, the nearest in topology; a
    point on other GPUs is a different trade-off, not a replacement); else none."""
    out: list[Baseline | None] = [None] * len(points)
    kept = set()
    for i, p in enumerate(points):
        ident = _main_identity(identity(p), main)
        if ident is not None:
            same = main[ident]
            out[i] = Baseline("same", tuple(same[: policy.history]), label(same[0]["point"]))
            kept.add(ident)
    pairs = []
    for i, p in enumerate(points):
        if out[i] is not None:
            continue
        grp, _, conc = identity(p)
        for ident, rs in main.items():
            if (ident not in kept and same_group(ident[0], grp) and ident[2] == conc
                    and _gpus(rs[0]["point"]) == _gpus(p)):
                pairs.append((_distance(p, rs[0]["point"]), i, ident))
    taken = set()
    for _, i, ident in sorted(pairs, key=lambda t: (t[0], t[1], repr(t[2]))):
        if out[i] is None and ident not in taken:
            rs = main[ident]
            out[i] = Baseline("replaced", tuple(rs[: policy.history]), describe(rs[0]["point"]))
            taken.add(ident)
    return [b if b is not None else Baseline("none", ()) for b in out]


# ---- verdicts ---------------------------------------------------------------------------------

@dataclass
class Cell:
    metric: str
    head: float | None
    base: float | None
    verdict: str | None = None            # None: nothing to compare (a side lacks the metric)
    change: float | None = None           # relative, signed as the metric moves (not as "better")
    better: float | None = None           # relative, positive when the PR is better
    se: float | None = None               # relative standard error of `better`
    p: float | None = None
    noise: str = ""                       # where the noise estimate came from
    history: int = 0


@dataclass
class PointComparison:
    name: str
    point: dict
    baseline: Baseline
    cells: dict[str, Cell] = field(default_factory=dict)


def _headline(result: dict | None, key: str) -> float | None:
    if not result:
        return None
    v = (result.get("headline") or {}).get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def _boot_se(result: dict | None, key: str) -> float | None:
    """Relative SE implied by the bootstrap interval `results process` stored for the metric."""
    if not result:
        return None
    ci = (result.get("headline_ci") or {}).get(key)
    value = _headline(result, key)
    if not (isinstance(ci, (list, tuple)) and len(ci) == 2 and value):
        return None
    try:
        return stats.interval_rel_se((float(ci[0]), float(ci[1])), value)
    except (TypeError, ValueError):
        return None


def _noise(metric: str, head: dict, baseline: Baseline, policy: Policy) -> tuple[float, str]:
    """Relative SE of (PR − main) / main and a few words on where it came from."""
    history = [v for v in (_headline(r, metric) for r in baseline.results) if v is not None]
    if len(history) >= policy.min_history:
        sp = stats.spread(history)
        run = max(sp.rel_sd or 0.0, policy.min_run_noise)
        source = f"spread of {len(history)} main results"
    else:
        run = policy.assumed_run_noise
        source = ("assumed run noise (one main result)" if len(history) == 1
                  else f"assumed run noise ({len(history)} main results)")
    head_se = max(run, _boot_se(head, metric) or 0.0)
    base_se = max(run, _boot_se(baseline.latest, metric) or 0.0)
    if _boot_se(head, metric) is not None or _boot_se(baseline.latest, metric) is not None:
        source += " and bootstrap intervals"
    return math.sqrt(head_se ** 2 + base_se ** 2), source


def _cell(metric: Metric, head: dict, baseline: Baseline, policy: Policy) -> Cell:
    x = _headline(head, metric.key)
    b = _headline(baseline.latest, metric.key)
    cell = Cell(metric.key, x, b, history=len(baseline.results))
    if baseline.kind == "none":
        cell.verdict = NEW if x is not None else None
        return cell
    if x is None or b is None:
        return cell
    if b == 0:
        cell.verdict = EQUIVALENT if x == 0 else INCONCLUSIVE
        cell.noise = "main's value is 0: no relative change"
        return cell
    cell.change = (x - b) / abs(b)
    cell.better = cell.change if metric.higher_is_better else -cell.change
    cell.se, cell.noise = _noise(metric.key, head, baseline, policy)
    if cell.se == 0:
        cell.p = 1.0 if cell.better == 0 else 0.0
    else:
        cell.p = stats.two_sided_p(cell.better / cell.se)
    return cell


def compare_points(head_results: Iterable[dict], main_results: Iterable[dict],
                   policy: Policy = Policy()) -> list[PointComparison]:
    """Every valid PR result against main, with verdicts (FDR-controlled over all cells)."""
    main = index_main(main_results)
    head = _valid(head_results)
    out: list[PointComparison] = []
    shown = display_names([r["point"] for r in head])
    for r, name, base in zip(head, shown, assign_baselines([r["point"] for r in head], main, policy)):
        pc = PointComparison(name, r["point"], base)
        for metric in METRICS:
            pc.cells[metric.key] = _cell(metric, r, base, policy)
        out.append(pc)
    tested = [(c, c.p) for pc in out for c in pc.cells.values() if c.p is not None]
    rejected = stats.benjamini_hochberg([p for _, p in tested], policy.fdr)
    for (c, _), significant in zip(tested, rejected):
        assert c.better is not None and c.se is not None
        if c.se == 0:
            c.verdict = EQUIVALENT if c.better == 0 else (IMPROVED if c.better > 0 else REGRESSED)
        elif stats.tost_equivalent(c.better, c.se, policy.equivalence_margin, policy.alpha):
            c.verdict = EQUIVALENT
        elif significant:
            c.verdict = IMPROVED if c.better > 0 else REGRESSED
        else:
            c.verdict = INCONCLUSIVE
    return out


def summary(comparisons: list[PointComparison]) -> dict[str, int]:
    """How many cells got each verdict."""
    counts = {v: 0 for v in VERDICTS}
    for pc in comparisons:
        for c in pc.cells.values():
            if c.verdict:
                counts[c.verdict] += 1
    return counts


# ---- the frontier shift ---------------------------------------------------------------------

def points_of(results: Iterable[dict], prefix: str = "") -> list[Point]:
    """The valid results with both frontier axes as Pareto points: named as `display_names` tells
    them apart, each in its group (configuration, scenario, sequence lengths)."""
    drawable = [r for r in _valid(results)
                if _headline(r, "tok_s_gpu") is not None and _headline(r, "intvty_p90") is not None]
    return [Point(prefix + name, float(r["headline"]["tok_s_gpu"]), float(r["headline"]["intvty_p90"]),
                  group=group(r["point"]))
            for r, name in zip(drawable, display_names([r["point"] for r in drawable]))]


def latest_per_point(main_results: Iterable[dict]) -> list[dict]:
    return [rs[0] for rs in index_main(main_results).values()]


def _frontier(points: list[Point]) -> list[Point]:
    return sorted((p for p in points if not any(dominates(q, p) for q in points if q is not p)),
                  key=lambda p: p.intvty_p90)


def _best_throughput(frontier: list[Point], at_least: float) -> float | None:
    """The highest throughput a frontier offers at an interactivity of at least `at_least`."""
    vals = [p.tok_s_gpu for p in frontier if p.intvty_p90 >= at_least]
    return max(vals) if vals else None


@dataclass
class FrontierShift:
    head_frontier: list[str]
    main_frontier: list[str]
    combined: list[dict]                  # union frontier: {"point", "side"}
    dominance: list[dict]                 # per PR point: main points it dominates / is dominated by
    segments: list[dict]                  # {"lead", "above", "up_to"}: interactivity ranges (above, up_to]
    crossings: list[float]                # interactivity values where the lead changes hands
    group: str = ""                       # the workload, where the sides hold several (group_words)
    groups: list["FrontierShift"] = field(default_factory=list)   # one shift per workload, when several


def frontier_shift(head: list[Point], main: list[Point]) -> FrontierShift:
    """The frontier shift of one workload; where the points span several (`Point.group`), one shift
    per workload under `groups`, the top level holding only their frontiers and dominance together
    (a frontier across an agentic and a fixed-seq-len run compares two different benchmarks)."""
    keys: list[tuple] = []
    for p in head + main:
        if p.group and not any(same_group(p.group, k) for k in keys):
            keys.append(p.group)
    if len(keys) <= 1:
        return _shift(head, main)

    def of(points: list[Point], k: tuple) -> list[Point]:
        return [p for p in points if not p.group or same_group(p.group, k)]

    parts = []
    for k in keys:
        part = _shift(of(head, k), of(main, k))
        part.group = group_words(k)
        parts.append(part)
    return FrontierShift([n for s in parts for n in s.head_frontier], [n for s in parts for n in s.main_frontier],
                         [c for s in parts for c in s.combined], [d for s in parts for d in s.dominance], [], [],
                         groups=parts)


def _shift(head: list[Point], main: list[Point]) -> FrontierShift:
    hf, mf = _frontier(head), _frontier(main)
    tagged = [(p, "PR") for p in head] + [(p, "main") for p in main]
    everyone = [p for p, _ in tagged]
    combined = [{"point": p.name, "side": side} for p, side in sorted(tagged, key=lambda t: t[0].intvty_p90)
                if not any(dominates(q, p) for q in everyone if q is not p)]
    dominance = [{"point": p.name,
                  "dominates": [q.name for q in main if dominates(p, q)],
                  "dominated_by": [q.name for q in main if dominates(q, p)]} for p in head]
    # compare the two step curves "best throughput at interactivity >= u": between two consecutive
    # breakpoints the lead is the one at the upper breakpoint
    cuts = sorted({p.intvty_p90 for p in hf + mf})
    segments: list[dict] = []
    previous = None
    for u in cuts:
        a, b = _best_throughput(hf, u), _best_throughput(mf, u)
        lead = "PR" if b is None or (a is not None and a > b) else "main" if a is None or b > a else "tie"
        if segments and segments[-1]["lead"] == lead:
            segments[-1]["up_to"] = u
        else:
            segments.append({"lead": lead, "above": previous, "up_to": u})
        previous = u
    crossings = [s["above"] for prev, s in zip(segments, segments[1:])
                 if {prev["lead"], s["lead"]} == {"PR", "main"}]
    return FrontierShift([p.name for p in hf], [p.name for p in mf], combined, dominance, segments, crossings)
