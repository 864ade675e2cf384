"""Shaping a sweep's rows: trimming, recipe fingerprints, buckets (one per workflow matrix family),
the canary per hardware family, and releasing the rest once canaries pass. Pure functions.

Canary (improving on InferenceX, spec inferencex-pr-policy.md §2.1-2.2, W9, W10): every hardware
family (runner label) in the sweep gets its own canary, fixed-seq or agentic, single- or multi-node:
the non-eval point with the lowest concurrency (ties: the first in bucket order, so fixed-seq before
agentic). A family whose only rows are evals
(`evals-only`) gets its lowest-concurrency eval row as canary, so no family fans out unguarded. When
its canary fails, nothing else in that family starts (`release`); when selection itself fails, the
plan fails (fail closed).

Canary honesty (issue 11): a canary either *is* the full point (same profile: fixed-seq, multi-node
at its lowest concurrency, or an agentic row that already runs AgentX-fast), and then leaves its
bucket, or it is a *smoke* run (the short AgentX profile of a full-length agentic point), and then
the full point still runs in its bucket after the canary passes. Every row and plan point says
which profile measures it (`profile_of`), so a published curve never mixes profiles unknowingly.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from ci_tools.sweep.matrix import AGENTIC, Row, is_agentic, is_multinode, row_key, seq_len_name

# Matrix families the workflows run, in the order canary ties are broken. Output names derive from these.
BENCH_BUCKETS = ("single-node-1k1k", "single-node-8k1k", "single-node-agentic",
                 "multi-node-1k1k", "multi-node-8k1k", "multi-node-agentic")
EVAL_BUCKETS = ("evals", "agentic-evals", "multi-node-evals", "multi-node-agentic-evals")
BUCKETS = BENCH_BUCKETS + EVAL_BUCKETS
# GitHub limits (spec W21): jobs per matrix, and the size of one job's outputs.
MAX_MATRIX_JOBS = 256


class CanarySelectionError(Exception):
    """Canary selection failed: the sweep must not fan out unguarded."""


def bench_bucket(row: Mapping[str, Any]) -> str:
    node = "multi-node" if is_multinode(row) else "single-node"
    if is_agentic(row):
        return f"{node}-agentic"
    return f"{node}-{seq_len_name(row.get('isl'), row.get('osl'))}"


def eval_bucket(row: Mapping[str, Any]) -> str:
    mn, ag = is_multinode(row), is_agentic(row)
    return {(False, False): "evals", (False, True): "agentic-evals",
            (True, False): "multi-node-evals", (True, True): "multi-node-agentic-evals"}[(mn, ag)]


PROFILES = ("fixed-seq", "agentx", "agentx-fast", "eval")
CANARY_SMOKE = "smoke"            # a short run that guards the family; the point is measured in its bucket
CANARY_FULL = "full-point"        # the canary run is the point's measurement


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def profile_of(row: Mapping[str, Any]) -> str:
    """Which benchmark profile measures this row: one of PROFILES."""
    if _truthy(row.get("eval-only")):
        return "eval"
    if is_agentic(row):
        return "agentx-fast" if _truthy(row.get("agentx-fast")) else "agentx"
    return "fixed-seq"


def recipe_fingerprint(row: Mapping[str, Any]) -> str:
    """InferenceX's recipe fingerprint: what defines the serving recipe, not the load point."""
    recipe = {k: v for k, v in row.items() if k not in ("conc", "exp-name", "recipe-fingerprint")}
    text = json.dumps(recipe, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def trim(rows: list[Row]) -> list[Row]:
    """`sweep-enabled`: each config at its lowest concurrency (spec §1.2). Throughput rows only.

    Multi-node rows keep `[min(conc)]`; single-node rows are grouped by every field except conc and
    exp-name and the first row with the lowest conc of each group is kept, order preserved.
    """
    best: dict[tuple, int] = {}
    for i, r in enumerate(rows):
        if is_multinode(r.data):
            continue
        key = row_key(r.data, ("conc", "exp-name"))
        if key not in best or r.data["conc"] < rows[best[key]].data["conc"]:
            best[key] = i
    keep = set(best.values())
    out: list[Row] = []
    for i, r in enumerate(rows):
        if is_multinode(r.data):
            conc = r.data["conc"]
            data = dict(r.data)
            if isinstance(conc, list) and len(conc) > 1:
                data["conc"] = [min(conc)]
            out.append(Row(r.key, data))
        elif i in keep:
            out.append(r)
    return out


def min_conc(row: Mapping[str, Any]) -> int:
    conc = row.get("conc")
    if isinstance(conc, list):
        if not conc:
            raise CanarySelectionError(f"row {row.get('exp-name')!r} has an empty concurrency list")
        return min(conc)
    if not isinstance(conc, int) or isinstance(conc, bool):
        raise CanarySelectionError(f"row {row.get('exp-name')!r} has no integer concurrency ({conc!r})")
    return conc


@dataclass
class Canary:
    family: str
    bucket: str
    key: str
    row: dict


def select_canaries(buckets: dict[str, list[Row]], *, fast_seconds: int) -> tuple[list[Canary], dict[str, list[Row]]]:
    """One canary per hardware family; returns (canaries, buckets after the canaries).

    A canary that is the full point leaves its bucket (a multi-node row runs its whole concurrency
    list in one job, so its canary is a copy at the lowest concurrency and the row keeps the rest);
    a smoke canary (short AgentX run of a full-length point) leaves the bucket as it was. Each canary
    row says which in `canary` (CANARY_FULL / CANARY_SMOKE).
    """
    chosen: dict[str, tuple[int, str, int]] = {}   # family -> (conc, bucket, index)
    for names in (BENCH_BUCKETS, EVAL_BUCKETS):       # eval rows only for families with no benchmark row
        this_pass: dict[str, tuple[int, str, int]] = {}
        for bucket in names:
            for i, r in enumerate(buckets.get(bucket, [])):
                family = r.data.get("runner")
                if not isinstance(family, str) or not family:
                    raise CanarySelectionError(f"row {r.data.get('exp-name')!r} in {bucket} has no runner label")
                if family in chosen:
                    continue
                c = min_conc(r.data)
                if family not in this_pass or c < this_pass[family][0]:
                    this_pass[family] = (c, bucket, i)
        chosen.update(this_pass)
    rest = {b: list(rows) for b, rows in buckets.items()}
    canaries: list[Canary] = []
    drop: dict[str, set[int]] = {}
    for family, (c, bucket, i) in chosen.items():
        src = buckets[bucket][i]
        row = copy.deepcopy(src.data)
        smoke = is_agentic(row) and profile_of(row) == "agentx" and not row.get("eval-only")
        if isinstance(row.get("conc"), list):
            row["conc"] = [c]
        if smoke:
            # the short AgentX profile only guards the family: the point itself still runs in full
            row["duration"] = fast_seconds
            row["agentx-fast"] = True
            row["canary"] = CANARY_SMOKE
        else:
            row["canary"] = CANARY_FULL
            if isinstance(src.data.get("conc"), list):
                remaining = list(src.data["conc"])
                remaining.remove(c)            # one occurrence: a list may repeat a point on purpose
                if remaining:
                    rest[bucket][i] = Row(src.key, {**src.data, "conc": remaining})
                else:
                    drop.setdefault(bucket, set()).add(i)
            else:
                drop.setdefault(bucket, set()).add(i)
        canaries.append(Canary(family, bucket, src.key, row))
    for bucket, idx in drop.items():
        rest[bucket] = [r for i, r in enumerate(rest[bucket]) if i not in idx]
    canaries.sort(key=lambda c: (BUCKETS.index(c.bucket), c.family))
    return canaries, rest


def release(matrices: Mapping[str, list[dict]], passed_families: set[str] | frozenset[str]) -> dict[str, list[dict]]:
    """After the canaries: keep only rows of families whose canary passed (fail closed: unknown = failed)."""
    return {b: [r for r in rows if r.get("runner") in passed_families] for b, rows in matrices.items()}


__all__ = ["AGENTIC", "CANARY_FULL", "CANARY_SMOKE", "PROFILES", "profile_of", "BENCH_BUCKETS", "EVAL_BUCKETS", "BUCKETS", "MAX_MATRIX_JOBS", "CanarySelectionError",
           "Canary", "bench_bucket", "eval_bucket", "recipe_fingerprint", "trim", "select_canaries", "release"]
