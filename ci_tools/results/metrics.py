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
import operator
from array import array
from itertools import repeat
from typing import Sequence

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


def _mean_pstdev(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population std: fsum of the values, then fsum of the squared deviations."""
    n = len(values)
    np = _numpy()
    if np is not None and n > 1000:
        # the same element-wise IEEE operations done by numpy, and the same exact sums: identical
        # results, without a million Python-level subtractions and multiplications
        x = np.frombuffer(values, dtype=np.float64) if isinstance(values, array) else np.asarray(values, dtype=float)
        mean = math.fsum(memoryview(x)) / n
        dev = x - mean
        dev *= dev
        return mean, math.sqrt(math.fsum(memoryview(dev)) / n)
    # two-pass with C-level iteration (map over operator functions)
    mean = math.fsum(values) / n
    dev = array("d", map(operator.sub, values, repeat(mean, n)))
    return mean, (math.sqrt(math.fsum(map(operator.mul, dev, dev)) / n) if n > 1 else 0.0)


def _location(values: Sequence[float]) -> dict | None:
    """mean, p50..p95 and pstdev of the raw values (None when empty)."""
    n = len(values)
    if n == 0:
        return None
    np = _numpy()
    if np is not None and n > 1000:
        # same definitions (numpy's default percentile is the linear one); only faster on big runs
        x = np.frombuffer(values, dtype=np.float64) if isinstance(values, array) else np.asarray(values, dtype=float)
        ps = np.percentile(x, [p for _, p in PERCENTILES])
        out = {"mean": float(x.mean())}
        out.update({key: float(v) for (key, _), v in zip(PERCENTILES, ps)})
        out["std"] = float(x.std())
        return out
    ordered = sorted(values)
    mean, std = _mean_pstdev(values)
    out = {"mean": mean}
    for key, p in PERCENTILES:
        out[key] = percentile(ordered, p)
    out["std"] = std
    return out


_NUMPY: list = []


def _numpy():
    """numpy (a dependency; None only where it was left out of an install), looked up once. Small
    inputs take the pure path anyway: both give the same results, and tests run both."""
    if not _NUMPY:
        try:
            import numpy
            _NUMPY.append(numpy)
        except ImportError:
            _NUMPY.append(None)
    return _NUMPY[0]


def stats(values: Sequence[float], scale: float = 1.0) -> dict:
    """{mean, p50, p75, p90, p95, std} of values × scale; {} when there are none."""
    if not isinstance(values, array):
        values = array("d", values)
    base = _location(values)
    if base is None:
        return {}
    return {k: (v * abs(scale) if k == "std" else v * scale) for k, v in base.items()}


def inverse_stats(values: Sequence[float], scale: float = 1.0, base: dict | None = None) -> dict:
    """1/stat_k of values × scale for every location statistic, and the pstdev of the per-item rates.

    With ITL in ms and scale 1e-3 this is interactivity in tok/s/user. `base` (= stats(values,
    scale)) may be passed when already computed."""
    if not isinstance(values, array):
        values = array("d", values)
    if base is None:
        base = stats(values, scale)
    if not base:
        return {}
    out = {k: (1.0 / base[k] if base[k] > 0 else None) for k in ("mean", "p50", "p75", "p90", "p95")}
    np = _numpy()
    if np is not None and len(values) > 1000:  # the same divisions, element-wise in numpy
        # kept as numpy's array (_mean_pstdev reads it as is): two copies of a million rates fewer at the peak
        rates = 1.0 / scale / np.frombuffer(values, dtype=np.float64)
    else:
        rates = array("d", map(operator.truediv, repeat(1.0 / scale, len(values)), values))
    out["std"] = _mean_pstdev(rates)[1]
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
