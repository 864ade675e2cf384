"""Pre-run node check: are the GPUs there, is the model in the store, is there disk? (pure)

`script` is a POSIX shell snippet run where the engine will run (on the runner for docker/process,
as a step of the allocation for Slurm) that prints `key=value` facts and `nvidia-smi -L`'s lines;
`problems` reads that output and says what is wrong, with the fix, before the engine starts (a
missing model otherwise shows up as a readiness timeout hours later).
"""

from __future__ import annotations

import re
import shlex

MIN_FREE_GIB = 20.0   # on the HF cache's file system: tokenizer, dataset, engine caches, compile artefacts
GPU_LINE = re.compile(r"^GPU (\d+): (.*?) \(UUID: (GPU-[0-9a-fA-F-]+)\)")
# `amd-smi list`: a "GPU: <index>" line, then indented "BDF: ..." and "UUID: ..." lines of that GPU
AMD_GPU_LINE = re.compile(r"^GPU: (\d+)\s*$")
AMD_UUID_LINE = re.compile(r"^\s+UUID: (\S+)")
# the tool that lists a node's GPUs, per runners.yaml gpu-vendor: its command and its fact's key
LISTER = {"nvidia": ("nvidia-smi", "nvidia-smi -L", "nvidia_smi"), "amd": ("amd-smi", "amd-smi list", "amd_smi")}


def script(model_path: str, hf_cache: str, vendor: str = "nvidia") -> str:
    m, h = shlex.quote(model_path), shlex.quote(hf_cache)
    tool, listing, key = LISTER[vendor]
    return "; ".join([
        f"if command -v {tool} >/dev/null 2>&1; then {listing} 2>&1; echo {key}=$?; "
        f"else echo {key}=missing; fi",
        f"if [ -f {m}/config.json ]; then echo model=ok; elif [ -e {m} ]; then echo model=no-config; "
        "else echo model=missing; fi",
        f"d={h}; while [ ! -e \"$d\" ] && [ \"$d\" != / ]; do d=$(dirname \"$d\"); done; "
        "echo disk_free_kb=$(df -Pk \"$d\" | awk 'NR==2 {print $4}'); echo disk_path=$d",
    ])


def parse(output: str) -> tuple[dict[str, str], list[dict]]:
    facts: dict[str, str] = {}
    gpus = []
    for line in output.splitlines():
        g = GPU_LINE.match(line.strip())
        a, u = AMD_GPU_LINE.match(line.strip()), AMD_UUID_LINE.match(line)
        if g:
            gpus.append({"index": g.group(1), "name": g.group(2), "uuid": g.group(3)})
        elif a:
            gpus.append({"index": a.group(1), "name": "", "uuid": ""})
        elif u and gpus and not gpus[-1]["uuid"]:
            gpus[-1]["uuid"] = u.group(1)
        elif "=" in line and re.fullmatch(r"[a-z_]+=.*", line.strip()):
            key, value = line.strip().split("=", 1)
            facts[key] = value
    return facts, gpus


def problems(output: str, *, need_gpus: int, devices: list[str] | None, model: str, model_path: str,
             hf_cache: str, min_free_gib: float = MIN_FREE_GIB, vendor: str = "nvidia") -> list[str]:
    facts, gpus = parse(output)
    found = []
    tool, listing, key = LISTER[vendor]
    smi = facts.get(key)
    if smi == "missing":
        found.append(f"GPUs: {tool} is not on the node's PATH, so no {vendor.upper()} GPU or driver is usable there"
                     + (" (runners.yaml says this runner's GPUs are AMD's: gpu-vendor)" if vendor == "amd" else ""))
    elif smi != "0":
        found.append(f"GPUs: `{listing}` failed (exit {smi}); is the driver loaded? Output: "
                     + " ".join(output.split())[:200])
    elif devices:
        known = {g["index"] for g in gpus} | {g["uuid"] for g in gpus}
        missing = [d for d in devices[:need_gpus] if d not in known]
        if missing:
            found.append(f"GPUs: device(s) {','.join(missing)} given to this runner are not on the node "
                         f"({tool} lists {', '.join(g['index'] for g in gpus) or 'none'}); fix CI_TOOLS_GPUS / "
                         "CUDA_VISIBLE_DEVICES in the runner's environment")
    elif len(gpus) < need_gpus:
        found.append(f"GPUs: the point needs {need_gpus}, the node shows {len(gpus)} (`{listing}`)")
    state = facts.get("model")
    if state == "missing":
        found.append(f"model: {model} is not in the model store ({model_path} does not exist); download it there "
                     f"(`huggingface-cli download {model} --local-dir {model_path}`) or point --model-store / "
                     "CI_TOOLS_MODEL_STORE at the store that has it")
    elif state == "no-config":
        found.append(f"model: {model_path} exists but has no config.json (an interrupted download?); "
                     "re-download the model there")
    elif state != "ok":
        found.append("model: the check printed no model line (the check script did not run to the end)")
    try:
        free_gib = int(facts["disk_free_kb"]) / 2**20
        if free_gib < min_free_gib:
            found.append(f"disk: {free_gib:.1f} GiB free on {facts.get('disk_path', hf_cache)} (the HF cache "
                         f"{hf_cache}), under the {min_free_gib:g} GiB a run needs; free space there")
    except (KeyError, ValueError):
        found.append(f"disk: could not read the free space of {hf_cache}")
    return found
