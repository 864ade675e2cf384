"""Result metrics from one record scan (pure; spec §2.2, with the per-GPU rule of §2.1/§9.8).

Definitions, all over S = successful profiling records:
- percentile: linear interpolation between closest ranks, k = (n-1)·p/100 (numpy's default);
- stats: mean, p50, p75, p90, p95 and population std;
- interactivity `intvty_k = 1 / itl_k` with ITL in seconds: the P90 uses the 90th percentile of
  per-request ITL, the slow tail (about the 10th percentile of per-user decode speed), not the
  90th percentile of per-request rates; `intvty.std` is the pstdev of per-request rates 1/ITL_i;
- end-to-end-normalised interactivity `1 / stat_k(E2EL_i / OSL_i)`, both taken from one record;
- throughput over T = max(request_end) − min(request_start): input ΣISL/T, output ΣOSL/T, total
  their sum; per GPU divided by the point's GPU count.
"""

from __future__ import annotations

import math
from array import array
from typing import Sequence

import numpy as np

from ci_tools.results.scan import RecordScan

STAT_KEYS = ("mean", "p50", "p75", "p90", "p95", "std")
PERCENTILES = (("p50", 50.0), ("p75", 75.0), ("p90", 90.0), ("p95", 95.0))


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile of an already sorted, non-empty sequence."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("percentile of an empty sequence")
    k = (n - 1) * p / 100.0
    f = math.floor(k)
    c = min(f + 1, n - 1)
    return sorted_values[f] + (k - f) * (sorted_values[c] - sorted_values[f])


def column(values: Sequence[float]) -> np.ndarray:
    """A column of float64 values as numpy reads it: an `array('d')` without a copy."""
    if isinstance(values, array) and values.typecode == "d":
        return np.frombuffer(values, dtype=np.float64)
    return np.asarray(values, dtype=np.float64)


def percentiles(x: np.ndarray, ps: Sequence[float]) -> list[float]:
    """`percentile` of a non-empty column at each of `ps`, in the same IEEE operations, without sorting
    it: a partial sort puts the two order statistics around each rank in place (numpy's default
    method is this interpolation; its own arithmetic can differ in the last bit)."""
    n = len(x)
    if n == 0:
        raise ValueError("percentile of an empty sequence")
    spots = []
    for p in ps:
        k = (n - 1) * p / 100.0
        f = math.floor(k)
        spots.append((k - f, f, min(f + 1, n - 1)))
    part = np.partition(x, sorted({i for _, f, c in spots for i in (f, c)}))
    return [float(part[f]) + w * (float(part[c]) - float(part[f])) for w, f, c in spots]


def _mean_pstdev(x: np.ndarray) -> tuple[float, float]:
    """Mean and population std: the exact sum of the values, then of the squared deviations (fsum
    over numpy's element-wise differences and squares)."""
    n = len(x)
    mean = math.fsum(x.data) / n     # read one float at a time: no list of a million floats
    dev = x - mean
    dev *= dev
    return mean, math.sqrt(math.fsum(dev.data) / n)


def _location(x: np.ndarray) -> dict | None:
    """mean, p50..p95 and pstdev of the raw values (None when empty)."""
    if len(x) == 0:
        return None
    mean, std = _mean_pstdev(x)
    return {"mean": mean, **dict(zip((key for key, _ in PERCENTILES), percentiles(x, [p for _, p in PERCENTILES]))),
            "std": std}


def stats(values: Sequence[float], scale: float = 1.0) -> dict:
    """{mean, p50, p75, p90, p95, std} of values × scale; {} when there are none."""
    base = _location(column(values))
    if base is None:
        return {}
    return {k: (v * abs(scale) if k == "std" else v * scale) for k, v in base.items()}


def inverse_stats(values: Sequence[float], scale: float = 1.0, base: dict | None = None) -> dict:
    """1/stat_k of values × scale for every location statistic, and the pstdev of the per-item rates.

    With ITL in ms and scale 1e-3 this is interactivity in tok/s/user. `base` (= stats(values,
    scale)) may be passed when already computed."""
    if base is None:
        base = stats(values, scale)
    if not base:
        return {}
    out = {k: (1.0 / base[k] if base[k] > 0 else None) for k in ("mean", "p50", "p75", "p90", "p95")}
    out["std"] = _mean_pstdev(1.0 / scale / column(values))[1]
    return out


def gpu_count(tp: int, pp: int = 1, pcp: int = 1, *, prefill: tuple[int, int] | None = None,
              decode: tuple[int, int] | None = None) -> int:
    """GPUs a point occupies. Single node: TP × PP × PCP (DEP shares the TP ranks between DP
    ranks, so DEP2 is 2). Multi-node: Σ workers × TP over prefill and decode, (num_workers, tp)."""
    if prefill is not None or decode is not None:
        total = 0
        for side in (prefill, decode):
            if side is not None:
                total += max(0, side[0]) * max(0, side[1])
        return total
    return tp * pp * pcp


def compute_metrics(scan: RecordScan, gpus: int) -> dict:
    """The measured part of a result: counts, throughput, latency and interactivity."""
    successful = scan.records_profiled
    errors = scan.records_error_dropped
    attempted = successful + errors
    duration = None
    if scan.start_ns_min is not None and scan.end_ns_max is not None and scan.end_ns_max > scan.start_ns_min:
        duration = (scan.end_ns_max - scan.start_ns_min) / 1e9
    throughput: dict = {}
    if duration:
        inp = scan.isl_sum / duration
        out = scan.osl_sum / duration
        throughput = {"input_tok_s": inp, "output_tok_s": out, "total_tok_s": inp + out}
        if gpus > 0:
            throughput["per_gpu"] = {"input_tok_s_gpu": inp / gpus, "output_tok_s_gpu": out / gpus,
                                     "total_tok_s_gpu": (inp + out) / gpus}
    itl = stats(scan.itl_ms, 1e-3)
    intvty = inverse_stats(scan.itl_ms, 1e-3, itl)
    e2e_norm = inverse_stats(scan.e2e_per_token_ms, 1e-3)
    ttft = stats(scan.ttft_ms, 1e-3)
    return {
        "requests": {
            "successful": successful,
            "errors": errors,
            "error_rate": (errors / attempted) if attempted else None,
            "accounting": scan.accounting(),
            "bad_lines": scan.bad_lines[:20],
        },
        "duration_s": duration,
        "gpus": gpus,
        "throughput": throughput,
        "tokens": {"input_total": scan.isl_sum, "output_total": scan.osl_sum},
        "latency_s": {
            "ttft": ttft,
            "itl": itl,
            "e2el": stats(scan.e2el_ms, 1e-3),
        },
        "intvty": intvty,
        "e2e_norm_intvty": e2e_norm,
        # the seed PR's table columns, flat for tables and the Pareto input
        "headline": {
            "tok_s_gpu": throughput.get("per_gpu", {}).get("total_tok_s_gpu"),
            "intvty_p90": intvty.get("p90"),
            "intvty_p50": intvty.get("p50"),
            "ttft_p90_s": ttft.get("p90"),
            "ttft_p50_s": ttft.get("p50"),
        },
    }
