"""Record nvidia-smi on one GPU the way ci-tools samples it, idle and under a bf16 matrix load.

How tests/data/h100/telemetry-*.csv were made (README.md beside this file), on the machine that ran
`ci-tools runner selftest` for tests/data/h100/selftest/. Needs ci_tools on PYTHONPATH (for the
sampler's query) and torch with a GPU:

    python3 record_telemetry.py OUT_DIR

- telemetry-idle-noheader.csv: the sampler's fields, `--format=csv,noheader,nounits -lms 500`, 12 s idle;
- telemetry-load.csv: `--format=csv -lms 250` (units in every cell), 8 s idle, 24 s of back-to-back
  8192x8192x8192 bf16 matrix products, 8 s idle;
- nvidia-smi-L.txt: `nvidia-smi -L`.
"""

import subprocess
import sys
import time
from pathlib import Path

import torch

from ci_tools.runner import telemetry

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
query = f"--query-gpu={','.join(telemetry.FIELDS)}"
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
