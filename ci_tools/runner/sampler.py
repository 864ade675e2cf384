"""The GPU telemetry sampler's command line (pure): nvidia-smi beside the engine for the whole job.

It writes one CSV row per GPU per INTERVAL_MS into the job directory (names.GPU_TELEMETRY_CSV); its
query is names.GPU_TELEMETRY_FIELDS, the columns `results process` reads (results/telemetry.py).
"""

from __future__ import annotations

from ci_tools import names

INTERVAL_MS = 1000


def sampler_argv(devices: list[str] | None = None, interval_ms: int = INTERVAL_MS) -> list[str]:
    """nvidia-smi looping over the job's GPUs (all visible ones when devices is None)."""
    argv = ["nvidia-smi", f"--query-gpu={','.join(names.GPU_TELEMETRY_FIELDS)}", "--format=csv,nounits",
            f"--loop-ms={interval_ms}"]
    if devices:
        argv.append(f"--id={','.join(devices)}")
    return argv
