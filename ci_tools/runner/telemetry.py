"""GPU telemetry of a job: the nvidia-smi sampler's command line, and its CSV turned into a summary (pure).

The sampler (`sampler_argv`) runs beside the engine for the whole job, one row per GPU per second,
into the job directory (names.GPU_TELEMETRY_CSV). `summarize` reads those rows over the benchmark's
own window (first request start .. last request end) and gives per GPU: power (mean, max, limit),
energy (trapezoid over the samples), SM clock (mean, min, max), memory, utilisation, temperature, and
the share of samples with each clock-event reason; for the job: total energy, energy per token where
power is known, and `power_capped` when the software power cap or the hardware power brake held the
clocks down for at least POWER_CAPPED_SHARE of the window (an H200 under load sits at its 700 W cap
with the SM clock down from 1980 to ~1450 MHz and reason 0x4: such a point is power-bound, and its
numbers say more about the power limit than about the recipe).
"""

from __future__ import annotations

import datetime as dt
import math
import statistics
from collections.abc import Sequence

from ci_tools.errors import InputError

# the query recorded on a real H200 (tests/data/nvidia-smi-h200/README.md), in this order
FIELDS = ("timestamp", "index", "uuid", "name", "pci.bus_id", "driver_version", "pstate", "power.draw",
          "power.draw.instant", "power.limit", "enforced.power.limit", "clocks.sm", "clocks.mem", "clocks.max.sm",
          "temperature.gpu", "temperature.memory", "utilization.gpu", "utilization.memory", "memory.used",
          "memory.total", "clocks_event_reasons.active", "ecc.errors.uncorrected.volatile.total")
INTERVAL_MS = 1000
POWER_CAPPED_SHARE = 0.10
# InferenceX's power validity (utils/aggregate_power.py): every GPU's samples must bracket the
# benchmark window, no two consecutive samples over it more than MAX_GAP_S apart
MAX_GAP_S = 3.0
MIN_SAMPLES = 2
ENERGY_SCHEMA = 2   # InferenceX's power_metric_schema_version
# why an energy figure is missing (InferenceX's reason codes where it has one)
TELEMETRY_MISSING = "telemetry_file_missing"
WINDOW_MISSING = "benchmark_window_missing"
NOT_BRACKETED = "benchmark_window_not_bracketed"
GAP = "sampling_gap_exceeded"
TOO_FEW = "too_few_samples"
NO_POWER = "power_not_reported"
GPU_COUNT = "expected_gpu_count_mismatch"
# NVML clocks event reasons (nvml.h nvmlClocksEventReason*)
REASONS = {"gpu_idle": 0x1, "applications_clocks": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
           "sync_boost": 0x10, "sw_thermal": 0x20, "hw_thermal": 0x40, "hw_power_brake": 0x80}
POWER_CAP_BITS = REASONS["sw_power_cap"] | REASONS["hw_power_brake"]
TIMESTAMP_FORMAT = "%Y/%m/%d %H:%M:%S.%f"


def sampler_argv(devices: list[str] | None = None, interval_ms: int = INTERVAL_MS) -> list[str]:
    """nvidia-smi looping over the job's GPUs (all visible ones when devices is None)."""
    argv = ["nvidia-smi", f"--query-gpu={','.join(FIELDS)}", "--format=csv,nounits", f"--loop-ms={interval_ms}"]
    if devices:
        argv.append(f"--id={','.join(devices)}")
    return argv


def _number(text: str) -> float | None:
    """'80.33', '80.33 W', '345 MHz', '0 %', '[N/A]', '[Not Supported]' -> float or None."""
    word = text.strip().split(" ")[0]
    try:
        return float(word)
    except ValueError:
        return None


def _reasons(text: str) -> int | None:
    try:
        return int(text.strip(), 16)
    except ValueError:
        return None


MAX_UTC_OFFSET_S = 18 * 3600   # what a host's clock can be from UTC (ISO 8601 allows +-18 h)


def utc_offset(meta: object, where: str) -> float:
    """The sampler host's UTC offset in seconds, from gpu_telemetry.meta.json as the runner writes it
    (`time.localtime().tm_gmtoff`); 0 when not recorded."""
    if not isinstance(meta, dict):
        raise InputError(f"{where}: expected a JSON object (utc_offset_s, argv)")
    v = meta.get("utc_offset_s")
    if v is None:
        return 0.0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or abs(v) > MAX_UTC_OFFSET_S:
        raise InputError(f"{where}: utc_offset_s {v!r} is not a UTC offset in seconds (a number within "
                         "+-18 h, the sampler host's time.localtime().tm_gmtoff)")
    return float(v)


def parse_csv(text: str, utc_offset_s: float = 0.0) -> tuple[list[dict], list[str]]:
    """Rows of `nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]` -> (samples, problems).

    Each sample: t (Unix seconds; nvidia-smi prints the host's local time, utc_offset_s converts it),
    index, uuid, name and the numeric fields (None where nvidia-smi printed [N/A]). Lines that are not
    a sample (the header, nvidia-smi's own error lines, a line cut by SIGKILL) are skipped and counted."""
    samples: list[dict] = []
    problems: list[str] = []
    skipped = 0
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("timestamp"):
            continue
        cells = [c.strip() for c in line.split(", ")]
        if len(cells) != len(FIELDS):
            skipped += 1
            if len(problems) < 3:
                problems.append(f"line {n}: {len(cells)} fields, expected {len(FIELDS)}: {line[:120]!r}")
            continue
        row = dict(zip(FIELDS, cells))
        try:
            t = dt.datetime.strptime(row["timestamp"], TIMESTAMP_FORMAT).replace(tzinfo=dt.timezone.utc)
        except ValueError:
            skipped += 1
            continue
        samples.append({
            "t": t.timestamp() - utc_offset_s, "index": row["index"], "uuid": row["uuid"], "name": row["name"],
            "power_w": _number(row["power.draw"]), "power_limit_w": _number(row["enforced.power.limit"]),
            "sm_mhz": _number(row["clocks.sm"]), "max_sm_mhz": _number(row["clocks.max.sm"]),
            "mem_mhz": _number(row["clocks.mem"]), "temp_c": _number(row["temperature.gpu"]),
            "util_pct": _number(row["utilization.gpu"]), "mem_used_mib": _number(row["memory.used"]),
            "mem_total_mib": _number(row["memory.total"]), "reasons": _reasons(row["clocks_event_reasons.active"]),
            "ecc_uncorrected": _number(row["ecc.errors.uncorrected.volatile.total"]),
        })
    if skipped:
        problems.append(f"{skipped} line(s) were not samples")
    return samples, problems


def _at(pts: list[tuple[float, float]], t: float) -> float:
    """Power at time t: linear between samples, held flat before the first and after the last."""
    if t <= pts[0][0]:
        return pts[0][1]
    if t >= pts[-1][0]:
        return pts[-1][1]
    for (t0, p0), (t1, p1) in zip(pts, pts[1:]):
        if t0 <= t <= t1:
            return p0 if t1 == t0 else p0 + (p1 - p0) * (t - t0) / (t1 - t0)
    return pts[-1][1]


def _energy_j(points: Sequence[tuple[float, float | None]], start: float, end: float) -> tuple[float | None, float]:
    """(trapezoid integral of power over [start, end], share of the window the samples cover)."""
    pts = sorted((t, p) for t, p in points if p is not None)
    if not pts or end <= start:
        return None, 0.0
    ts = [start] + [t for t, _ in pts if start < t < end] + [end]
    vals = [_at(pts, t) for t in ts]
    energy = math.fsum((t1 - t0) * (v0 + v1) / 2 for t0, t1, v0, v1 in zip(ts, ts[1:], vals, vals[1:]))
    covered = max(0.0, min(pts[-1][0], end) - max(pts[0][0], start)) / (end - start)
    return energy, covered


def _window_problems(pts: list[tuple[float, float]], start: float, end: float) -> list[str]:
    """Why one GPU's power samples cannot give the energy over [start, end] (empty: they can)."""
    if len(pts) < MIN_SAMPLES:
        return [TOO_FEW]
    out = []
    if pts[0][0] > start or pts[-1][0] < end:
        out.append(NOT_BRACKETED)
    # the samples that matter: those inside plus the one either side of the window
    ts = [t for t, _ in pts]
    first = max([i for i, t in enumerate(ts) if t <= start], default=0)
    last = min([i for i, t in enumerate(ts) if t >= end], default=len(ts) - 1)
    if any(b - a > MAX_GAP_S for a, b in zip(ts[first:last], ts[first + 1:last + 1])):
        out.append(GAP)
    if sum(1 for t in ts if start <= t <= end) < MIN_SAMPLES and NOT_BRACKETED not in out and GAP not in out:
        out.append(TOO_FEW)
    return out


def energy(samples: list[dict] | None, window: tuple[float, float] | None, *, expected_gpus: int | None = None,
           tokens: dict | None = None, successful: int | None = None) -> dict:
    """GPU energy over the benchmark window, as InferenceX's aggregate_power computes it: per GPU the
    trapezoid of board power with linear interpolation at the window's edges, summed over GPUs, then
    J per output, input and total token and per successful request. `valid` is False, with the
    reasons, when a GPU's samples do not bracket the window, leave a gap over MAX_GAP_S in it, are too
    few, report no power, or the GPU count is not the point's; then no figure is given (a partial
    integral would pass for a low-energy point)."""
    out: dict = {"schema": ENERGY_SCHEMA, "valid": False, "reasons": []}
    if samples is None:
        out["reasons"] = [TELEMETRY_MISSING]
        return out
    if window is None or window[1] <= window[0]:
        out["reasons"] = [WINDOW_MISSING]
        return out
    start, end = window
    per_gpu: dict[str, list[tuple[float, float]]] = {}
    for s in samples:
        per_gpu.setdefault(s["index"], [])
        if s.get("power_w") is not None:
            per_gpu[s["index"]].append((s["t"], s["power_w"]))
    reasons: list[str] = []
    if not per_gpu or not any(per_gpu.values()):
        reasons.append(NO_POWER)
    if expected_gpus is not None and len(per_gpu) != expected_gpus:
        reasons.append(GPU_COUNT)
    gpus = []
    energies: list[float] = []
    for index in sorted(per_gpu, key=lambda i: (len(i), i)):
        pts = sorted(per_gpu[index])
        problems = _window_problems(pts, start, end) if pts else [NO_POWER]
        reasons += [r for r in problems if r not in reasons]
        # without problems the GPU has power samples and the window a length: _energy_j gives a number
        e = None if problems else _energy_j(pts, start, end)[0]
        if e is not None:
            energies.append(e)
        gpus.append({"index": index, "energy_j": e, "reasons": problems})
    out.update(reasons=reasons, window_s=end - start, gpus=gpus, observed_gpus=len(per_gpu),
               expected_gpus=expected_gpus)
    if reasons:
        return out
    total = math.fsum(energies)     # no reasons: every GPU's energy is in it
    tokens = tokens or {}
    inp, outp = tokens.get("input_total") or 0, tokens.get("output_total") or 0

    def per(n):
        return total / n if n else None

    out.update(valid=True, total_gpu_energy_j=total, avg_power_w=total / (end - start) / len(gpus),
               avg_total_gpu_power_w=total / (end - start), j_per_output_token=per(outp),
               j_per_input_token=per(inp), j_per_total_token=per(inp + outp), j_per_request=per(successful))
    return out


def _stats(values: list[float | None]) -> dict | None:
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    return {"mean": statistics.fmean(vals), "min": min(vals), "max": max(vals)}


def summarize(samples: list[dict], window: tuple[float, float] | None = None,
              tokens: dict | None = None) -> dict:
    """Per-GPU and job summary over the window (Unix seconds; None: every sample)."""
    if window is None and samples:
        window = (min(s["t"] for s in samples), max(s["t"] for s in samples))
    inside = [s for s in samples if window and window[0] <= s["t"] <= window[1]]
    gpus = []
    for index in sorted({s["index"] for s in samples}, key=lambda i: (len(i), i)):
        all_rows = [s for s in samples if s["index"] == index]
        rows = [s for s in inside if s["index"] == index]
        known = [s for s in rows if s["reasons"] is not None]
        share = {name: (sum(1 for s in known if s["reasons"] & bit) / len(known) if known else None)
                 for name, bit in REASONS.items()}
        capped = sum(1 for s in known if s["reasons"] & POWER_CAP_BITS) / len(known) if known else None
        power = _stats([s["power_w"] for s in rows])
        energy, coverage = (_energy_j([(s["t"], s["power_w"]) for s in all_rows], *window)
                            if window and any(s["power_w"] is not None for s in all_rows) else (None, 0.0))
        gpus.append({
            "index": index, "uuid": all_rows[0]["uuid"], "name": all_rows[0]["name"], "samples": len(rows),
            "power_w": power, "power_limit_w": next((s["power_limit_w"] for s in rows if s["power_limit_w"]), None),
            "energy_j": energy, "coverage": round(coverage, 4), "sm_clock_mhz": _stats([s["sm_mhz"] for s in rows]),
            "max_sm_clock_mhz": next((s["max_sm_mhz"] for s in rows if s["max_sm_mhz"]), None),
            "memory_used_mib_max": (_stats([s["mem_used_mib"] for s in rows]) or {}).get("max"),
            "memory_total_mib": next((s["mem_total_mib"] for s in rows if s["mem_total_mib"]), None),
            "utilization_pct": _stats([s["util_pct"] for s in rows]),
            "temperature_c_max": (_stats([s["temp_c"] for s in rows]) or {}).get("max"),
            "ecc_uncorrected": max((s["ecc_uncorrected"] or 0 for s in rows), default=None),
            "clock_event_share": share, "power_capped_share": capped,
        })
    energies = [g["energy_j"] for g in gpus]
    energy = math.fsum(energies) if gpus and all(e is not None for e in energies) else None
    per_token = None
    if energy is not None and tokens:
        out_t = tokens.get("output_total") or 0
        all_t = out_t + (tokens.get("input_total") or 0)
        per_token = {"j_per_output_token": energy / out_t if out_t else None,
                     "j_per_token": energy / all_t if all_t else None}
    shares = [g["power_capped_share"] for g in gpus if g["power_capped_share"] is not None]
    return {
        "source": "nvidia-smi",
        "window_s": (window[1] - window[0]) if window else None,
        "samples": len(inside),
        "gpus": gpus,
        "energy_j": energy,
        "power_w_total_mean": (energy / (window[1] - window[0]) if energy is not None and window
                               and window[1] > window[0] else None),
        "energy_per_token": per_token,
        "power_capped": bool(shares) and max(shares) >= POWER_CAPPED_SHARE,
    }
