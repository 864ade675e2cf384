"""Which point a result measured, and the name a reader tells it by (pure).

A result is keyed by configuration, scenario and point (`identity`): a sweep of one config key
measures a point under its agentic and its fixed-seq-len scenario, and a smoke run without a config
key does the same; both are in one `results collect` file, and `results compare`, `report` and
`pareto` must keep them apart, never take one for the other's baseline or draw them on one frontier.
"""

from __future__ import annotations


def topology(point: dict) -> tuple:
    """What distinguishes two serving set-ups of one config at one concurrency."""
    topo = point.get("topology")
    if isinstance(topo, dict):  # multi-node: worker groups
        return tuple(sorted((k, repr(v)) for k, v in topo.items()))
    return (("tp", point.get("tp")), ("ep", point.get("ep") or 1), ("dp-attn", bool(point.get("dp-attn"))))


def group(point: dict) -> tuple:
    """(config key, scenario, sequence lengths): one workload. Points of two groups (an agentic and a
    fixed-seq-len run of one point, the 1k/1k and 8k/1k blocks of one entry) measure different things:
    they are never each other's baseline and never share a frontier. A value a side does not record
    (a CSV without `scenario`) is None, which `same_group` lets match any."""
    seq = (point.get("isl"), point.get("osl")) if point.get("isl") or point.get("osl") else None
    return (point.get("config-key"), point.get("scenario") or None, seq)


def same_group(a: tuple, b: tuple) -> bool:
    """One workload, where a value one side did not record matches any (a CSV names no scenario)."""
    return a[0] == b[0] and all(x is None or y is None or x == y for x, y in zip(a[1:], b[1:]))


def group_words(g: tuple) -> str:
    """A group as a reader names it: `agentic-coding`, `fixed-seq-len 1024/1024`, with the config key."""
    key, scenario, seq = g
    return " ".join(str(x) for x in (key, scenario, f"{seq[0]}/{seq[1]}" if seq else None) if x)


def identity(point: dict) -> tuple:
    """(group, topology, concurrency): configuration, scenario and point (compare, report, pareto
    key by it; two results of one point name in a collection are two points when they differ here)."""
    return (group(point), topology(point), point.get("conc"))


def display_names(points: list[dict]) -> list[str]:
    """Each point's name as a reader tells it apart in one list: its own name, or where points of two
    groups share it, the name with what tells them apart (`tp1-c16 (fixed-seq-len)`); a name that is
    still shared (one point measured twice) gets `#2`, `#3`."""
    names = [label(p) for p in points]
    by_name: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        by_name.setdefault(n, []).append(i)
    out = list(names)
    for n, idx in by_name.items():
        groups = [group(points[i]) for i in idx]
        if len(set(groups)) > 1:
            varying = [k for k in range(3) if len({g[k] for g in groups}) > 1]
            for i, g in zip(idx, groups):
                words = group_words(tuple(g[k] if k in varying else None for k in range(3)))
                out[i] = f"{n} ({words or 'no scenario'})"
    seen: dict[str, int] = {}
    for i, n in enumerate(out):
        seen[n] = seen.get(n, 0) + 1
        if seen[n] > 1:
            out[i] = f"{n} #{seen[n]}"
    return out


def label(point: dict) -> str:
    """The name a reviewer reads: the point's own name, e.g. `dep2-c128`."""
    return str(point.get("name") or f"tp{point.get('tp')}-c{point.get('conc')}")


def describe(point: dict) -> str:
    """The name with its topology spelled out, for a baseline whose topology differs: `tp4-c4 (TP4 EP4)`."""
    topo = point.get("topology")
    if isinstance(topo, dict):
        return f"{label(point)} ({', '.join(f'{k} {v}' for k, v in sorted(topo.items()))})"
    parts = [f"TP{point.get('tp')}"]
    if (point.get("ep") or 1) > 1:
        parts.append(f"EP{point.get('ep')}")
    if point.get("dp-attn"):
        parts.append("DP attention")
    return f"{label(point)} ({' '.join(parts)})"
