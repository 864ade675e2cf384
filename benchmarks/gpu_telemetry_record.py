"""Record nvidia-smi on one GPU the way ci-tools samples it, idle and under a bf16 matrix load.

The kind of recording tests/data/nvidia-smi-h200/ holds, made with the sampler's own query
(ci_tools.names.GPU_TELEMETRY_FIELDS) on a GPU machine. Needs ci_tools on PYTHONPATH and torch with a GPU:

    python3 benchmarks/gpu_telemetry_record.py OUT_DIR

- telemetry-idle-noheader.csv: `--format=csv,noheader,nounits --loop-ms=500`, 12 s idle;
- telemetry-load.csv: `--format=csv --loop-ms=250` (units in every cell), 8 s idle, 24 s of back-to-back
  8192x8192x8192 bf16 matrix products, 8 s idle (the recorded H200 sat at its 700 W cap);
- nvidia-smi-L.txt: `nvidia-smi -L`.
"""

import subprocess
import sys
import time
from pathlib import Path

import torch

from ci_tools import names

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
query = f"--query-gpu={','.join(names.GPU_TELEMETRY_FIELDS)}"
(out / "nvidia-smi-L.txt").write_text(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout)


def sample(name: str, fmt: str, ms: int) -> subprocess.Popen:
    return subprocess.Popen(["nvidia-smi", query, f"--format={fmt}", f"--loop-ms={ms}", "--id=0"],
                            stdout=(out / name).open("w"), stderr=subprocess.DEVNULL)


idle = sample("telemetry-idle-noheader.csv", "csv,noheader,nounits", 500)
time.sleep(12)
idle.terminate()
idle.wait()
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
load = sample("telemetry-load.csv", "csv", 250)
time.sleep(8)
end, n, t0 = time.monotonic() + 24, 0, time.monotonic()
while time.monotonic() < end:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
    n += 20
took = time.monotonic() - t0
del c
time.sleep(8)
load.terminate()
load.wait()
print(f"{n} products in {took:.1f} s: {n * 2 * 8192 ** 3 / took / 1e12:.0f} TFLOP/s")
