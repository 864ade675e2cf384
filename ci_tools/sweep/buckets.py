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

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

from ci_tools.sweep.matrix import AGENTIC, KeyedRow, row_key, seq_len_name
from ci_tools.sweep.row import MatrixRow, MultiNodeRow, SingleNodeRow

# Matrix families the workflows run, in the order canary ties are broken. Output names derive from these.
BENCH_BUCKETS = ("single-node-1k1k", "single-node-8k1k", "single-node-agentic",
                 "multi-node-1k1k", "multi-node-8k1k", "multi-node-agentic")
EVAL_BUCKETS = ("evals", "agentic-evals", "multi-node-evals", "multi-node-agentic-evals")
BUCKETS = BENCH_BUCKETS + EVAL_BUCKETS
# GitHub limits (spec W21): jobs per matrix, and the size of one job's outputs.
MAX_MATRIX_JOBS = 256


class CanarySelectionError(Exception):
    """Canary selection failed: the sweep must not fan out unguarded."""


def bench_bucket(row: MatrixRow) -> str:
    node = "multi-node" if row.is_multinode else "single-node"
    if row.is_agentic:
        return f"{node}-agentic"
    return f"{node}-{seq_len_name(row.isl, row.osl)}"


def eval_bucket(row: MatrixRow) -> str:
    mn, ag = row.is_multinode, row.is_agentic
    return {(False, False): "evals", (False, True): "agentic-evals",
            (True, False): "multi-node-evals", (True, True): "multi-node-agentic-evals"}[(mn, ag)]


PROFILES = ("fixed-seq", "agentx", "agentx-fast", "eval")
CANARY_SMOKE = "smoke"            # a short run that guards the family; the point is measured in its bucket
CANARY_FULL = "full-point"        # the canary run is the point's measurement


def profile_of(row: MatrixRow) -> str:
    """Which benchmark profile measures this row: one of PROFILES."""
    if row.eval_only:
        return "eval"
    if row.is_agentic:
        return "agentx-fast" if row.agentx_fast else "agentx"
    return "fixed-seq"


def recipe_fingerprint(row: MatrixRow) -> str:
    """InferenceX's recipe fingerprint: what defines the serving recipe, not the load point."""
    recipe = {k: v for k, v in row.items() if k not in ("conc", "exp-name", "recipe-fingerprint")}
    text = json.dumps(recipe, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def trim(rows: list[KeyedRow]) -> list[KeyedRow]:
    """`sweep-enabled`: each config at its lowest concurrency (spec §1.2). Throughput rows only.

    Multi-node rows keep `[min(conc)]`; single-node rows are grouped by every field except conc and
    exp-name and the first row with the lowest conc of each group is kept, order preserved.
    """
    best: dict[tuple, int] = {}
    for i, r in enumerate(rows):
        if isinstance(r.row, SingleNodeRow):
            key = row_key(r.row, ("conc", "exp-name"))
            if key not in best or r.row.conc < rows[best[key]].row.concs[0]:
                best[key] = i
    keep = set(best.values())
    out: list[KeyedRow] = []
    for i, r in enumerate(rows):
        if isinstance(r.row, MultiNodeRow):
            concs = r.row.concs
            out.append(KeyedRow(r.key, r.row.replace(conc=[min(concs)]) if len(concs) > 1 else r.row))
        elif i in keep:
            out.append(r)
    return out


def min_conc(row: MatrixRow) -> int:
    conc = row.get("conc")        # checked here: a canary is chosen by it
    if isinstance(conc, list):
        if not conc:
            raise CanarySelectionError(f"row {row.get('exp-name')!r} has an empty concurrency list")
        return min(conc)
    if not isinstance(conc, int) or isinstance(conc, bool):
        raise CanarySelectionError(f"row {row.get('exp-name')!r} has no integer concurrency ({conc!r})")
    return conc


@dataclass(frozen=True)
class Canary:
    family: str
    bucket: str
    key: str
    row: SingleNodeRow | MultiNodeRow


def select_canaries(buckets: dict[str, list[KeyedRow]], *,
                    fast_seconds: int) -> tuple[list[Canary], dict[str, list[KeyedRow]]]:
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
                family = r.row.runner
                if not isinstance(family, str) or not family:
                    raise CanarySelectionError(f"row {r.row.exp_name!r} in {bucket} has no runner label")
                if family in chosen:
                    continue
                c = min_conc(r.row)
                if family not in this_pass or c < this_pass[family][0]:
                    this_pass[family] = (c, bucket, i)
        chosen.update(this_pass)
    rest = {b: list(rows) for b, rows in buckets.items()}
    canaries: list[Canary] = []
    drop: dict[str, set[int]] = {}
    for family, (c, bucket, i) in chosen.items():
        src = buckets[bucket][i]
        row = src.row
        smoke = row.is_agentic and profile_of(row) == "agentx" and not row.eval_only
        if isinstance(row, MultiNodeRow):
            row = row.replace(conc=[c])
        if smoke:
            # the short AgentX profile only guards the family: the point itself still runs in full
            row = row.replace(duration=fast_seconds, agentx_fast=True, canary=CANARY_SMOKE)
        else:
            row = row.replace(canary=CANARY_FULL)
            if isinstance(src.row, MultiNodeRow):
                remaining = list(src.row.concs)
                remaining.remove(c)            # one occurrence: a list may repeat a point on purpose
                if remaining:
                    rest[bucket][i] = KeyedRow(src.key, src.row.replace(conc=remaining))
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
