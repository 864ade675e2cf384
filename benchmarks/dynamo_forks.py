#!/usr/bin/env python3
"""Dynamo's parser processes of the test suite, each in a process of its own and forked from fork_host.py.

    .venv/bin/python benchmarks/dynamo_forks.py [--only 1.6.1] [--json]

For every worker-on-engine run the suite makes (each row of the compatibility table with the argv its test
parses, which is also the run tests/engines/arg_kinds.py reads each worker's options from, and refusals), runs dynamo_host.py both
ways (tests/engines/harness.py: dynamo_process, dynamo_forked) and prints whether the answers are the same
(exit status, every protocol line, the last line of stderr: what dynamo_run reads) and the wall and CPU
seconds of each. Exits 1 when any answer differs. Run with the tool environments dev.py builds
(CI_TOOLS_TORCH_ENGINES_VENV or .venv-engines-torch) on a quiet machine: it is seconds of CPU per run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ci_tools.engines.compat import DYNAMO_WORKERS  # noqa: E402
from tests.engines import harness  # noqa: E402


def runs() -> list[tuple[str, str, tuple[str, str], list[list[str]]]]:
    out = []
    for r in DYNAMO_WORKERS:
        for v in (*r.works, *r.fails):
            out.append((r.dynamo, f"dynamo.{r.engine}", (r.engine, v), [harness.WORKER_ARGV[r.engine]]))
    # refusals, as the misspelled-flag tests ask them
    out.append(("1.6.1", "dynamo.sglang", ("sglang", "0.5.22"), [["--model-path", "/m", "--swa-tail-tokens", "1"],
                                                                ["--model-path", "/m", "--disaggregation-mode",
                                                                 "prefil"]]))
    out.append(("1.6.1", "dynamo.vllm", ("vllm", "0.33.0"), [["--model", "/m", "--tensor-paralel-size", "4"]]))
    return out


def answer(result: tuple[int, str, str]) -> tuple[int, list[str], str]:
    code, stdout, stderr = result
    return code, [line for line in stdout.splitlines() if line.startswith("{")], \
        (stderr.strip().splitlines() or [""])[-1]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def host_cpu() -> float:
    """CPU of every fork host so far and of the children it has waited for."""
    total = 0.0
    for host in harness._FORK_HOSTS:
        fields = Path(f"/proc/{host.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="runs of this Dynamo release only")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rows, differ = [], 0
    for dynamo, parser, engine, argvs in runs():
        if a.only and dynamo != a.only:
            continue
        paths, pins = harness.dynamo_paths(dynamo, engine)
        c0, t0 = children_cpu(), time.perf_counter()
        own = answer(harness.dynamo_process(parser, paths, pins, argvs))
        own_wall, own_cpu = time.perf_counter() - t0, children_cpu() - c0
        harness.fork_host()          # started before the clock: once per session, not per run
        h0, t0 = host_cpu(), time.perf_counter()
        forked = answer(harness.dynamo_forked(parser, paths, pins, argvs))
        fork_wall, fork_cpu = time.perf_counter() - t0, host_cpu() - h0
        same = own == forked
        differ += not same
        rows.append({"run": f"{parser} {dynamo} on {engine[0]} {engine[1]} {json.dumps(argvs)}", "same": same,
                     "exit": own[0], "own_wall": round(own_wall, 2), "own_cpu": round(own_cpu, 2),
                     "fork_wall": round(fork_wall, 2), "fork_cpu": round(fork_cpu, 2),
                     "load": round(os.getloadavg()[0], 1)})
        if not a.json:
            r = rows[-1]
            print(f"{'same' if same else 'DIFFERS'}  exit {r['exit']}  own {r['own_wall']:6.1f} s "
                  f"({r['own_cpu']:5.1f} CPU)  forked {r['fork_wall']:6.1f} s ({r['fork_cpu']:5.1f} CPU)  "
                  f"load {r['load']}  {r['run']}", flush=True)
            if not same:
                print(f"  own:    {own}\n  forked: {forked}")
    total = {k: round(sum(r[k] for r in rows), 1) for k in ("own_wall", "own_cpu", "fork_wall", "fork_cpu")}
    if a.json:
        print(json.dumps({"rows": rows, "total": total, "differ": differ}, indent=1))
    else:
        print(f"{len(rows)} runs, {differ} differ; own {total['own_wall']} s wall, {total['own_cpu']} s CPU; "
              f"forked {total['fork_wall']} s wall, {total['fork_cpu']} s CPU")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
