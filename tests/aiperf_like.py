"""AIPerf's summary statistics rewritten from edited records, the way AIPerf computes them (numpy's
mean and linear percentiles over the successful profiling records): for tests that edit records and
need the `profile_export_aiperf.json` AIPerf would have written for them."""

from __future__ import annotations

import numpy as np

PER_RECORD = ("time_to_first_token", "inter_token_latency", "request_latency", "output_token_throughput_per_user",
              "output_sequence_length", "input_sequence_length", "usage_completion_tokens")


def resummarise(recs: list[dict], summary: dict) -> dict:
    """`summary` with the per-record statistics, totals, count and throughputs of `recs` (a copy)."""
    out = dict(summary)
    ok = [r for r in recs if r["metadata"].get("benchmark_phase") == "profiling" and not r.get("error")]
    for name in PER_RECORD:
        xs = np.array([r["metrics"][name]["value"] for r in ok if name in r["metrics"]], dtype=float)
        if not len(xs):
            out.pop(name, None)
            continue
        entry = dict(summary.get(name) or {"unit": ok[0]["metrics"][name]["unit"]})
        entry.update(avg=float(xs.mean()), min=float(xs.min()), max=float(xs.max()), std=float(xs.std()),
                     count=len(xs), sum=float(xs.sum()))
        for p in (1, 5, 10, 25, 50, 75, 90, 95, 99):
            entry[f"p{p}"] = float(np.percentile(xs, p))
        out[name] = entry
    osl = sum(r["metrics"]["output_sequence_length"]["value"] for r in ok)
    isl = sum(r["metrics"]["input_sequence_length"]["value"] for r in ok)
    window = _window(summary)
    out["request_count"] = {**summary["request_count"], "avg": float(len(ok))}
    out["total_osl"] = {**summary["total_osl"], "avg": float(osl)}
    out["total_isl"] = {**summary["total_isl"], "avg": float(isl)}
    out["output_token_throughput"] = {**summary["output_token_throughput"], "avg": osl / window}
    out["request_throughput"] = {**summary["request_throughput"], "avg": len(ok) / window}
    return out


def _window(summary: dict) -> float:
    from datetime import datetime

    return (datetime.fromisoformat(summary["end_time"]) - datetime.fromisoformat(summary["start_time"])).total_seconds()
