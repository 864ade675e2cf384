"""AIPerf's summary statistics rewritten from edited records, the way AIPerf computes them (numpy's
mean and linear percentiles over the successful profiling records): for tests that edit records and
need the `profile_export_aiperf.json` AIPerf would have written for them."""

from __future__ import annotations

import numpy as np

PER_RECORD = ("time_to_first_token", "inter_token_latency", "request_latency", "output_token_throughput_per_user",
              "output_sequence_length", "input_sequence_length", "usage_completion_tokens", "usage_prompt_tokens",
              "decode_duration", "prefill_throughput_per_user", "e2e_output_token_throughput")


def _stats(xs: np.ndarray, entry: dict) -> dict:
    entry.update(avg=float(xs.mean()), min=float(xs.min()), max=float(xs.max()), std=float(xs.std()),
                 count=len(xs), sum=float(xs.sum()))
    for p in (1, 5, 10, 25, 50, 75, 90, 95, 99):
        entry[f"p{p}"] = float(np.percentile(xs, p))
    return entry


def resummarise(recs: list[dict], summary: dict) -> dict:
    """`summary` with the per-record statistics, totals, count, chunk gaps, benchmark duration and
    throughputs of `recs` (a copy)."""
    out = dict(summary)
    ok = [r for r in recs if r["metadata"].get("benchmark_phase") == "profiling" and not r.get("error")]
    for name in PER_RECORD:
        xs = np.array([r["metrics"][name]["value"] for r in ok if name in r["metrics"]], dtype=float)
        if not len(xs):
            out.pop(name, None)
            continue
        out[name] = _stats(xs, dict(summary.get(name) or {"unit": ok[0]["metrics"][name]["unit"]}))
    gaps = np.array([g for r in ok for g in r["metrics"].get("inter_chunk_latency", {}).get("value", [])], dtype=float)
    if len(gaps):
        out["inter_chunk_latency"] = _stats(gaps, dict(summary.get("inter_chunk_latency") or {"unit": "ms"}))
    else:
        out.pop("inter_chunk_latency", None)
    osl = sum(r["metrics"]["output_sequence_length"]["value"] for r in ok)
    isl = sum(r["metrics"]["input_sequence_length"]["value"] for r in ok)
    window = _window(summary)
    out["request_count"] = {**summary["request_count"], "avg": float(len(ok))}
    for key, total in (("total_osl", osl), ("total_isl", isl), ("total_output_tokens", osl),
                       ("total_usage_completion_tokens", osl), ("total_usage_prompt_tokens", isl)):
        out[key] = {**summary.get(key, {"unit": "tokens"}), "avg": float(total)}
    out["output_token_throughput"] = {**summary["output_token_throughput"], "avg": osl / window}
    out["input_token_throughput"] = {**summary.get("input_token_throughput", {"unit": "tokens/sec"}), "avg": isl / window}
    out["total_token_throughput"] = {**summary.get("total_token_throughput", {"unit": "tokens/sec"}),
                                     "avg": (isl + osl) / window}
    out["request_throughput"] = {**summary["request_throughput"], "avg": len(ok) / window}
    in_flight = sum(r["metadata"]["request_end_ns"] - r["metadata"]["request_start_ns"] for r in ok) / 1e9
    out["effective_concurrency"] = {**summary.get("effective_concurrency", {"unit": "requests"}), "avg": in_flight / window}
    if ok:
        first = min(r["metadata"]["request_start_ns"] for r in ok)
        last = max(r["metadata"]["request_start_ns"] + round(r["metrics"]["request_latency"]["value"] * 1e6) for r in ok)
        out["benchmark_duration"] = {**summary["benchmark_duration"], "avg": (last - first) / 1e9}
    return out


def _window(summary: dict) -> float:
    from datetime import datetime

    return (datetime.fromisoformat(summary["end_time"]) - datetime.fromisoformat(summary["start_time"])).total_seconds()
