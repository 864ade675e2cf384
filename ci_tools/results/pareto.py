"""Pareto frontier of throughput (tok/s/GPU) against interactivity (P90 tok/s/user), and claims.

Both axes are higher-is-better. Point a dominates point b strictly when a is at least as good on
both axes and better on at least one; equal points do not dominate each other. The frontier is
the set of points no other point dominates. A frontier is drawn within one workload (`Point.group`:
configuration, scenario, sequence lengths, as `compare.group` says): an agentic and a fixed-seq-len
run of one point are two points on two frontiers. Pure functions over plain data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ci_tools.errors import Finding, InputError
from ci_tools.results.identity import display_names, group, identity, same_group

CSV_COLUMNS = ("point", "tok_s_gpu", "intvty_p90")
CLAIM_WORD = " dominates "


@dataclass
class Point:
    name: str
    tok_s_gpu: float
    intvty_p90: float
    extra: dict = field(default_factory=dict)  # other columns shown in the table (median, TTFT)
    group: tuple = ()                          # the workload (compare.group); () where none is known


def comparable(a: Point, b: Point) -> bool:
    """One workload: points of two groups never dominate each other (a value unknown on a side matches)."""
    return not a.group or not b.group or same_group(a.group, b.group)


def dominates(a: Point, b: Point) -> bool:
    return (a.tok_s_gpu >= b.tok_s_gpu and a.intvty_p90 >= b.intvty_p90
            and (a.tok_s_gpu > b.tok_s_gpu or a.intvty_p90 > b.intvty_p90))


def analyse(points: list[Point]) -> list[dict]:
    """Each point with `frontier` and `dominated_by` (names, in input order), within its workload."""
    out = []
    for p in points:
        by = [q.name for q in points if q is not p and comparable(q, p) and dominates(q, p)]
        out.append({"point": p.name, "tok_s_gpu": p.tok_s_gpu, "intvty_p90": p.intvty_p90,
                    "frontier": not by, "dominated_by": by})
    return out


@dataclass(frozen=True)
class Claim:
    text: str
    winner: str
    loser: str
    line: int


def parse_claims(text: str, file: str = "<claims>") -> list[Claim]:
    """One claim a line: `<point> dominates <point>`; blank lines and `#` comments are skipped."""
    claims: list[Claim] = []
    problems: list[Finding] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(CLAIM_WORD)
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            problems.append(Finding(file, n, None, f"cannot read the claim {line!r}",
                                    "write one claim a line as `<point> dominates <point>`"))
            continue
        claims.append(Claim(line, parts[0].strip(), parts[1].strip(), n))
    if problems:
        raise InputError(problems[0].message, findings=problems)
    return claims


def check_claims(points: list[Point], claims: list[Claim], file: str = "<claims>") -> list[dict]:
    by_name = {p.name: p for p in points}
    unknown = [Finding(file, c.line, None, f"unknown point {name!r} in the claim {c.text!r}",
                       "known points: " + ", ".join(by_name))
               for c in claims for name in (c.winner, c.loser) if name not in by_name]
    if unknown:
        raise InputError(unknown[0].message, findings=unknown)
    out = []
    for c in claims:
        a, b = by_name[c.winner], by_name[c.loser]
        holds = comparable(a, b) and dominates(a, b)
        if not comparable(a, b):
            why = f"{a.name} and {b.name} measure different workloads: neither can dominate the other"
        elif holds:
            why = (f"{a.tok_s_gpu:,.0f} >= {b.tok_s_gpu:,.0f} tok/s/GPU and "
                   f"{a.intvty_p90:,.1f} >= {b.intvty_p90:,.1f} tok/s/user, not both equal")
        else:
            worse = []
            if a.tok_s_gpu < b.tok_s_gpu:
                worse.append(f"lower throughput ({a.tok_s_gpu:,.0f} < {b.tok_s_gpu:,.0f} tok/s/GPU)")
            if a.intvty_p90 < b.intvty_p90:
                worse.append(f"lower P90 interactivity ({a.intvty_p90:,.1f} < {b.intvty_p90:,.1f} tok/s/user)")
            if not worse:
                worse.append("equal on both axes")
            why = f"{a.name} has " + " and ".join(worse)
        out.append({"claim": c.text, "holds": holds, "why": why})
    return out


def points_from_results(results: list[dict], file: str = "<results>") -> list[Point]:
    """The valid results with both throughput and P90 interactivity (an invalid one never reaches a
    frontier), keyed by configuration, scenario and point (`compare.identity`) and named as
    `compare.display_names` tells them apart; one point twice is refused, a frontier of it would be
    ambiguous."""
    kept: list[dict] = []
    seen: dict[tuple, str] = {}
    for r in results:
        h = r.get("headline") or {}
        if not r.get("valid") or h.get("tok_s_gpu") is None or h.get("intvty_p90") is None:
            continue
        where = str(r.get("source") or file)
        point = r.get("point")
        if not isinstance(point, dict) or not point.get("name"):
            raise InputError(f"{where}: a valid result without a point name")
        key = (identity(point), str(point["name"]))   # a CSV of names alone: the name is the point
        if key in seen:
            raise InputError(f"{where}: point {str(point['name'])!r} appears twice (first at {seen[key]})",
                             findings=[Finding(where, None, None, f"point {str(point['name'])!r} appears twice",
                                               "keep one result of each point (configuration, scenario, "
                                               "topology and concurrency): a frontier of both is ambiguous")])
        seen[key] = where
        kept.append(r)
    if not kept:
        raise InputError(f"{file}: no valid results with throughput and interactivity")
    points = []
    for r, name in zip(kept, display_names([r["point"] for r in kept])):
        h = r["headline"]
        extra = {"intvty_p50": h.get("intvty_p50"), "ttft_p90_s": h.get("ttft_p90_s")}
        points.append(Point(name, float(h["tok_s_gpu"]), float(h["intvty_p90"]), extra, group(r["point"])))
    return points
