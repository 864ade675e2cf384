"""Cross-field rules of one master entry (spec §1.8, R1-R11), as pure functions.

Each rule takes an entry that already passed the schema (so types are right) and yields
`Issue(path, message, hint)`, the path being relative to the entry. The messages say what is wrong,
with the numbers involved, and how to fix it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

CLUSTER_PREFIX = "cluster:"


@dataclass(frozen=True)
class Issue:
    path: tuple
    message: str
    hint: str = ""
    severity: str = "error"
    related: tuple | None = None  # another place in the entry the message refers to (rendered as its line)


def search_spaces(entry: dict) -> Iterator[tuple[tuple, dict, str]]:
    """Every search-space entry of both scenario kinds: (path in entry, search-space dict, kind)."""
    scenarios = entry.get("scenarios") or {}
    for kind in ("fixed-seq-len", "agentic-coding"):
        for i, block in enumerate(scenarios.get(kind) or []):
            for j, ss in enumerate(block.get("search-space") or []):
                yield ("scenarios", kind, i, "search-space", j), ss, kind


def _workers(ss: dict, path: tuple) -> Iterator[tuple[tuple, dict]]:
    for role in ("prefill", "decode"):
        if isinstance(ss.get(role), dict):
            yield path + (role,), ss[role]


def r1_agentic_cluster_runner(entry: dict) -> Iterator[Issue]:
    if (entry.get("scenarios") or {}).get("agentic-coding") and not entry["runner"].startswith(CLUSTER_PREFIX):
        yield Issue(("runner",),
                    f"agentic configs must run on a '{CLUSTER_PREFIX}<name>' runner, got '{entry['runner']}'",
                    f"every point of an agentic curve must run on one exact hardware fleet; use a "
                    f"'{CLUSTER_PREFIX}...' label from runners.yaml (e.g. '{CLUSTER_PREFIX}{entry['runner']}')")


def r2_declared_once(entry: dict) -> Iterator[Issue]:
    for name in ("router", "kv-p2p-transfer"):
        if entry.get(name) is None:
            continue
        for path, ss, _ in search_spaces(entry):
            if ss.get(name) is not None:
                yield Issue(path + (name,),
                            f"{name} is declared both at the top level of the entry and in this search-space entry",
                            f"declare it once: at the top level when every point uses the same {name}, "
                            f"or in each search-space entry when they differ")


def r4_disagg_needs_transfer(entry: dict) -> Iterator[Issue]:
    if entry.get("disagg") is not True or entry.get("kv-p2p-transfer") is not None:
        return
    spaces = list(search_spaces(entry))
    if not spaces:
        yield Issue(("disagg",), "disagg: true requires kv-p2p-transfer, but the entry has no search-space entries",
                    "set kv-p2p-transfer (e.g. nixl) at the top level")
        return
    for path, ss, _ in spaces:
        if ss.get("kv-p2p-transfer") is None:
            yield Issue(path, "disagg: true requires kv-p2p-transfer, and this search-space entry has none",
                        "set kv-p2p-transfer (e.g. nixl) at the top level, or in every search-space entry")


def r5_dcp_divides_tp(entry: dict) -> Iterator[Issue]:
    for path, ss, _ in search_spaces(entry):
        holders = [(path, ss)] if "tp" in ss else []
        holders += list(_workers(ss, path))
        for where, block in holders:
            tp, dcp = block.get("tp"), block.get("dcp-size", 1)
            if isinstance(tp, int) and isinstance(dcp, int) and dcp > 0 and tp % dcp:
                yield Issue(where + ("dcp-size",), f"'tp' ({tp}) must be divisible by 'dcp-size' ({dcp})",
                            "decode context parallelism splits the TP group; pick a dcp-size that divides tp")


def r6_hardware_pair(entry: dict) -> Iterator[Issue]:
    for path, ss, _ in search_spaces(entry):
        pre, dec = ss.get("prefill"), ss.get("decode")
        if isinstance(pre, dict) and isinstance(dec, dict) and bool(pre.get("hardware")) != bool(dec.get("hardware")):
            missing = "decode" if pre.get("hardware") else "prefill"
            yield Issue(path + (missing,), f"'hardware' is set on only one of prefill/decode ({missing} has none)",
                        "set 'hardware' on both prefill and decode, or on neither")


def r7_concurrency(entry: dict) -> Iterator[Issue]:
    for path, ss, _ in search_spaces(entry):
        yield from concurrency_issues(path, ss)


def concurrency_issues(path: tuple, ss: dict) -> Iterator[Issue]:
    """R7 for one search-space entry (at `path`)."""
    start, end, lst = ss.get("conc-start"), ss.get("conc-end"), ss.get("conc-list")
    has_range = start is not None and end is not None
    if has_range and lst:
        yield Issue(path + ("conc-list",), "both a 'conc-list' and a 'conc-start'/'conc-end' range are given",
                    "keep one form: a list (conc-list: [4, 8, 16]) or a range (conc-start/conc-end, doubling)")
        return
    if lst:
        bad = [c for c in lst if c <= 0]
        if bad:
            yield Issue(path + ("conc-list",), f"'conc-list' values must be greater than 0, got {bad[0]}",
                        "concurrency is the number of requests in flight; remove zero and negative values")
        if start is not None or end is not None:
            lone = "conc-start" if start is not None else "conc-end"
            yield Issue(path + (lone,), f"'{lone}' is ignored: without both range ends, 'conc-list' is used",
                        f"remove '{lone}'", "warning")
        return
    if start is None or end is None:
        partial = "only 'conc-start'" if start is not None else "only 'conc-end'" if end is not None else "none"
        yield Issue(path, f"no concurrency given ({partial}): give 'conc-list' or both 'conc-start' and 'conc-end'",
                    "e.g. conc-list: [4, 16, 64], or conc-start: 4 with conc-end: 64")
        return
    if start <= 0 or end <= 0:
        yield Issue(path + ("conc-start" if start <= 0 else "conc-end",),
                    f"'conc-start' and 'conc-end' must be greater than 0, got {start}..{end}",
                    "concurrency is the number of requests in flight; start at 1 or more")
    elif start > end:
        yield Issue(path + ("conc-start",), f"'conc-start' ({start}) must be <= 'conc-end' ({end})",
                    f"swap them: conc-start: {end}, conc-end: {start}")


def r8_kv_offload_backend(entry: dict) -> Iterator[Issue]:
    for path, ss, kind in search_spaces(entry):
        if kind != "agentic-coding":
            continue
        mode, backend = ss.get("kv-offloading"), ss.get("kv-offload-backend")
        if backend is not None and mode is None:
            yield Issue(path + ("kv-offload-backend",), "kv-offload-backend is set but kv-offloading is not",
                        "add kv-offloading: dram (the backend only means something when KV is offloaded)")
        elif backend is not None and mode == "none":
            yield Issue(path + ("kv-offload-backend",), "kv-offload-backend is set while kv-offloading is 'none'",
                        "remove the backend, or set kv-offloading: dram")
        elif backend is None and mode == "dram":
            yield Issue(path + ("kv-offloading",), "kv-offloading: dram needs a kv-offload-backend",
                        "name the backend, e.g. kv-offload-backend: { name: hicache }")


def r9_dram_utilization(entry: dict) -> Iterator[Issue]:
    for i, block in enumerate((entry.get("scenarios") or {}).get("agentic-coding") or []):
        uses_dram = any(ss.get("kv-offloading") == "dram" for ss in block.get("search-space") or [])
        if uses_dram and block.get("dram-utilization") is None:
            yield Issue(("scenarios", "agentic-coding", i),
                        "kv-offloading: dram needs dram-utilization in this agentic-coding block",
                        "add dram-utilization: <fraction of the runner's CPU DRAM, 0 < x <= 1>, e.g. 0.80")


def r11_some_scenario(entry: dict) -> Iterator[Issue]:
    scenarios = entry.get("scenarios") or {}
    if not any(scenarios.get(k) for k in ("fixed-seq-len", "agentic-coding")):
        yield Issue(("scenarios",), "at least one scenario must be specified: 'fixed-seq-len' or 'agentic-coding'",
                    "an entry with no scenario never runs; add one or remove the entry")


def valid_concs(ss: dict) -> list[int]:
    """The concurrencies of a search-space entry, or [] when r7 rejects its concurrency fields."""
    from ci_tools.config.points import search_space_concs

    if next(concurrency_issues((), ss), None) is not None:
        if not ss.get("conc-list") or any(c <= 0 for c in ss["conc-list"]):
            return []
    return search_space_concs(ss)


def r12_duplicate_points(entry: dict) -> Iterator[Issue]:
    """The same point (topology and concurrency) listed twice in one scenario block runs twice. One pass,
    each point looked up by its hash: 200,000 repeated search-space entries cost about 1 s here."""
    import json

    seen: dict[tuple, tuple] = {}
    for path, ss, _ in search_spaces(entry):
        block = path[:3]  # ("scenarios", kind, i): points of different blocks (isl/osl) differ
        shape = json.dumps({k: v for k, v in ss.items() if k not in ("conc-list", "conc-start", "conc-end")},
                           sort_keys=True, default=str)
        for conc in valid_concs(ss):
            first = seen.get((block, shape, conc))
            if first is None:
                seen[(block, shape, conc)] = path
            else:
                same = "earlier in this list" if first == path else "in another search-space entry"
                yield Issue(path, f"concurrency {conc} with this exact topology is already listed {same}, "
                                  f"so the same point would be benchmarked twice",
                            "remove the repeated concurrency from one of the lists", "warning",
                            None if first == path else first)


RULES = (r1_agentic_cluster_runner, r2_declared_once, r4_disagg_needs_transfer, r5_dcp_divides_tp,
         r6_hardware_pair, r7_concurrency, r8_kv_offload_backend, r9_dram_utilization, r11_some_scenario,
         r12_duplicate_points)


def entry_issues(entry: dict) -> list[Issue]:
    """All cross-field issues of one schema-valid master entry."""
    out: list[Issue] = []
    for rule in RULES:
        out.extend(rule(entry))
    return out


def point_key(ss: dict, conc: int) -> tuple[int, int, bool, int]:
    """The identity of a single-node point used to match recipes: (tp, ep, dp-attn, conc)."""
    ep = ss.get("ep")
    return (ss["tp"], 1 if ep is None else ep, bool(ss.get("dp-attn")), conc)


def entry_points(entry: dict) -> dict[tuple, tuple]:
    """Single-node points of an entry -> path of the search-space entry that defines them (first wins)."""
    out: dict[tuple, tuple] = {}
    for path, ss, _ in search_spaces(entry):
        if not isinstance(ss.get("tp"), int):
            continue
        for conc in valid_concs(ss):
            out.setdefault(point_key(ss, conc), path)
    return out


def fmt_point(p: tuple) -> str:
    tp, ep, dp, conc = p
    return f"tp={tp} ep={ep} dp-attn={'true' if dp else 'false'} conc={conc}"
