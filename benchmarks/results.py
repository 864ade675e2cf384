#!/usr/bin/env python3
"""Speed and memory of `ci-tools results process` on a synthetic one-hour-scale AIPerf export.

    python benchmarks/results.py [--records 1000000] [--runs 3] [--baseline-records 100000] [--dir DIR]
                                 [--against CHECKOUT]

Writes a synthetic `profile_export.jsonl` with the real record shape (every key and metric of a
record AIPerf 0.13 wrote, taken from tests/data/aiperf-0.13-export, with values varied per
record: 1,024 users in a closed loop, 1 % warmup records, 0.5 % errors) and the summary AIPerf
writes for those records (so the run is valid: the benchmark measures a real run's path, and stops
when the result is invalid), then times whole `ci-tools results process` runs
(median of --runs), both as it runs by default (one process per usable CPU for a file this big)
and with --workers 1, and reads each run's peak RSS from wait4() (the largest process) and by
sampling the whole process tree (all processes together). Goal: >= 200,000 records/s and peak RSS
<= 150 MB, taken as the whole tree. The results of both runs must be identical. The baseline is the whole-file-load pattern (every record parsed with
json.loads and kept, then the same headline metrics) in a child process of this same script; it is
run on a --baseline-records prefix because holding a million parsed records needs tens of GB.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONCURRENCY = 1024
CORPUS = REPO / "tests" / "data" / "aiperf-0.13-export"

BASELINE = r"""
import json, sys, math
path, gpus = sys.argv[1], int(sys.argv[2])
records = []
with open(path) as fh:
    for line in fh:
        records.append(json.loads(line))          # every record kept, as a dict
ok = [r for r in records if r["metadata"].get("benchmark_phase") == "profiling" and not r.get("error")]
v = lambda r, k: r["metrics"][k]["value"]
def pct(xs, p):
    xs = sorted(xs); k = (len(xs) - 1) * p / 100; f = math.floor(k); c = min(f + 1, len(xs) - 1)
    return xs[f] + (k - f) * (xs[c] - xs[f])
span = (max(r["metadata"]["request_end_ns"] for r in ok) - min(r["metadata"]["request_start_ns"] for r in ok)) / 1e9
tok = sum(v(r, "input_sequence_length") + v(r, "output_sequence_length") for r in ok)
print(json.dumps({"tok_s_gpu": tok / span / gpus, "intvty_p90": 1000 / pct([v(r, "inter_token_latency") for r in ok], 90),
                  "ttft_p90": pct([v(r, "time_to_first_token") for r in ok], 90) / 1000, "n": len(ok)}))
"""


def template() -> tuple[str, dict]:
    """A real profiling record turned into a format string with the varying values as fields."""
    line = (CORPUS / "profile_export.jsonl").read_text().splitlines()[0]
    rec = json.loads(line)
    md, mt = rec["metadata"], rec["metrics"]
    marks = {}

    def mark(d, key, name, sub=None):
        token = f"@@{name}@@"
        if sub:
            d[key][sub] = token
        else:
            d[key] = token
        marks[name] = token

    for key in ("x_request_id", "x_correlation_id", "conversation_id", "root_correlation_id"):
        mark(md, key, key)
    for key in ("credit_issued_ns", "request_start_ns", "request_ack_ns", "request_end_ns", "session_num"):
        mark(md, key, key)
    for key in ("benchmark_phase", "phase_name", "phase_kind"):
        mark(md, key, "phase")
    for key in ("request_latency", "time_to_first_token", "inter_token_latency", "input_sequence_length",
                "output_sequence_length", "time_to_first_output_token", "usage_prompt_tokens",
                "usage_completion_tokens", "output_token_count", "output_token_throughput_per_user",
                "decode_duration", "prefill_throughput_per_user", "e2e_output_token_throughput",
                "inter_chunk_latency", "time_to_second_token", "usage_total_tokens"):
        mark(mt, key, key, "value")
    text = json.dumps(rec, separators=(",", ":"))
    for name, token in marks.items():
        quoted = f'"{token}"'
        text = text.replace(quoted, "{" + name + "}") if name not in ("x_request_id", "x_correlation_id",
                                                                      "conversation_id", "root_correlation_id",
                                                                      "phase") else text.replace(token, "{" + name + "}")
    return text.replace("{{", "{{").replace("}}", "}}"), rec


def write_export(path: Path, n: int, seed: int = 1, chunks: int = 15) -> dict:
    """n records (1 % warmup, 0.5 % errors), each with `chunks` chunk gaps (the corpus record has 15; a
    real H100 record of 256 tokens has about 250), every figure AIPerf derives consistent with the others."""
    tmpl, _ = template()
    # escape literal braces of the JSON, then restore our fields
    fields = ["x_request_id", "x_correlation_id", "conversation_id", "root_correlation_id", "credit_issued_ns",
              "request_start_ns", "request_ack_ns", "request_end_ns", "session_num", "phase", "request_latency",
              "time_to_first_token", "inter_token_latency", "input_sequence_length", "output_sequence_length",
              "time_to_first_output_token", "usage_prompt_tokens", "usage_completion_tokens", "output_token_count",
              "output_token_throughput_per_user", "decode_duration", "prefill_throughput_per_user",
              "e2e_output_token_throughput", "inter_chunk_latency", "time_to_second_token", "usage_total_tokens"]
    safe = tmpl.replace("{", "{{").replace("}", "}}")
    for f in fields:
        safe = safe.replace("{{" + f + "}}", "{" + f + "}")
    rng = random.Random(seed)
    t0 = 1_796_000_000_000_000_000
    warm = n // 100
    err_line = json.dumps({"metadata": {"benchmark_phase": "profiling", "request_start_ns": t0, "request_end_ns": t0 + 1},
                           "metrics": {}, "error": {"code": 500, "type": "InternalServerError", "message": "x"}},
                          separators=(",", ":"))
    # a closed loop of CONCURRENCY users, each sending its next request 1 us after the last one ended:
    # at most CONCURRENCY in flight, about an hour for a million records
    free = [t0] * CONCURRENCY
    cols: dict[str, list] = {k: [] for k in ("ttft", "itl", "e2el", "otpu", "osl", "isl", "start", "end", "decode",
                                             "prefill", "e2e")}
    gaps_total = [0, 0.0]   # every chunk gap of the profiling records: how many, their sum
    errors = 0
    with path.open("w", buffering=1 << 22) as fh:
        for i in range(n):
            if i >= warm and rng.random() < 0.005:
                fh.write(err_line + "\n")
                errors += 1
                continue
            user = i % CONCURRENCY
            start = free[user]
            ttft = rng.uniform(200, 3000)
            osl = rng.randint(max(20, chunks + 1), max(900, chunks + 1))
            itl = rng.uniform(1.2, 12.0)
            e2el = ttft + itl * (osl - 1)
            decode = e2el - ttft
            gaps = [decode / chunks] * chunks    # a chunk carries several tokens: fewer gaps than OSL - 1
            end = start + int(e2el * 1e6)
            free[user] = end + 1000
            isl = rng.randint(2_000, 120_000)
            itl = decode / (osl - 1)             # as AIPerf derives it
            u = f"{i:08x}-0000-4000-8000-{i:012x}"
            fh.write(safe.format(x_request_id=u, x_correlation_id=u, conversation_id=u, root_correlation_id=u,
                                 credit_issued_ns=start - 1000, request_start_ns=start, request_ack_ns=start + 5000,
                                 request_end_ns=end, session_num=i if i < warm else i - warm,
                                 phase="warmup" if i < warm else "profiling", request_latency=e2el,
                                 time_to_first_token=ttft, inter_token_latency=itl, input_sequence_length=isl,
                                 output_sequence_length=osl, time_to_first_output_token=ttft,
                                 usage_prompt_tokens=isl, usage_completion_tokens=osl, output_token_count=osl,
                                 output_token_throughput_per_user=1000.0 / itl, decode_duration=decode,
                                 prefill_throughput_per_user=1000.0 * isl / ttft,
                                 e2e_output_token_throughput=1000.0 * osl / e2el,
                                 inter_chunk_latency=json.dumps(gaps, separators=(",", ":")),
                                 time_to_second_token=gaps[0], usage_total_tokens=isl + osl) + "\n")
            if i >= warm:
                for k, v in (("ttft", ttft), ("itl", itl), ("e2el", e2el), ("otpu", 1000.0 / itl), ("osl", osl),
                             ("isl", isl), ("start", start), ("end", end), ("decode", decode),
                             ("prefill", 1000.0 * isl / ttft), ("e2e", 1000.0 * osl / e2el)):
                    cols[k].append(v)
                gaps_total[0] += chunks
                gaps_total[1] += sum(gaps)
    return {"profiled": len(cols["osl"]), "errors": errors, "summary": summarise(cols, errors, gaps_total)}


def summarise(cols: dict[str, list], errors: int, gaps: list) -> dict:
    """The profile_export_aiperf.json AIPerf writes for these records: the corpus's own summary with the
    statistics (numpy's mean and linear percentiles), totals, window and throughputs of the records, so
    that the export is valid and the benchmark measures the path a real run takes."""
    import numpy as np
    from datetime import datetime, timezone

    out = json.loads((CORPUS / "profile_export_aiperf.json").read_text())
    for key, col in (("time_to_first_token", "ttft"), ("inter_token_latency", "itl"), ("request_latency", "e2el"),
                     ("output_token_throughput_per_user", "otpu"), ("output_sequence_length", "osl"),
                     ("input_sequence_length", "isl"), ("usage_completion_tokens", "osl"), ("usage_prompt_tokens", "isl"),
                     ("decode_duration", "decode"), ("prefill_throughput_per_user", "prefill"),
                     ("e2e_output_token_throughput", "e2e")):
        x = np.array(cols[col], dtype=np.float64)
        entry = {"unit": out[key]["unit"], "avg": float(x.mean()), "min": float(x.min()), "max": float(x.max()),
                 "std": float(x.std()), "count": len(x), "sum": float(x.sum())}
        entry.update({f"p{p}": float(np.percentile(x, p)) for p in (1, 5, 10, 25, 50, 75, 90, 95, 99)})
        out[key] = entry
    first, last = min(cols["start"]), max(cols["end"])
    window = (last - first) / 1e9
    n, osl, isl = len(cols["osl"]), sum(cols["osl"]), sum(cols["isl"])
    stamp = lambda ns: datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).replace(tzinfo=None).isoformat()
    out.update(start_time=stamp(first), end_time=stamp(last))
    out["request_count"] = {"unit": "requests", "avg": float(n)}
    for key, total in (("total_osl", osl), ("total_isl", isl), ("total_output_tokens", osl),
                       ("total_usage_completion_tokens", osl), ("total_usage_prompt_tokens", isl)):
        out[key] = {"unit": "tokens", "avg": float(total)}
    out["inter_chunk_latency"] = {"unit": "ms", "count": gaps[0], "sum": gaps[1], "avg": gaps[1] / gaps[0]}
    # AIPerf's benchmark_duration: first start to the latest start plus request latency
    last_response = max(s + round(e * 1e6) for s, e in zip(cols["start"], cols["e2el"]))
    out["benchmark_duration"] = {"unit": "sec", "avg": (last_response - first) / 1e9}
    out["output_token_throughput"] = {"unit": "tokens/sec", "avg": osl / window}
    out["input_token_throughput"] = {"unit": "tokens/sec", "avg": isl / window}
    out["total_token_throughput"] = {"unit": "tokens/sec", "avg": (isl + osl) / window}
    out["request_throughput"] = {"unit": "requests/sec", "avg": n / window}
    out["effective_concurrency"] = {"unit": "requests", "avg": (sum(cols["end"]) - sum(cols["start"])) / 1e9 / window}
    for phase in out["input_config"]["phases"]:
        if phase.get("kind") == "profiling":
            phase.update(requests=n + errors, concurrency=CONCURRENCY)
    out["run_info"]["cli_command"] = (f"aiperf profile --model 'stub' --streaming --concurrency {CONCURRENCY} "
                                      f"--request-count {n + errors} --use-server-token-count")
    return out


def _tree_rss_mb(pid: int) -> float:
    """Resident memory of pid and all its descendants now (Linux /proc), in MB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as fh:
                total += int(fh.read().split()[1])
            with open(f"/proc/{p}/task/{p}/children") as fh:
                todo.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue  # exited meanwhile
    return total * os.sysconf("SC_PAGE_SIZE") / 2**20


def timed(argv: list[str], env: dict | None = None, cwd: Path | None = None) -> tuple[float, float, str, float, float]:
    """Wall seconds, peak RSS in MB, stdout, CPU seconds and peak total RSS of the process tree.

    Peak RSS and CPU come from wait4 of this child (Linux folds in the child's own waited-for
    children, i.e. the scan workers: max RSS of any one process, CPU of all). The tree total
    (the processes' RSS added up) is sampled every 10 ms, so it can miss a peak shorter than that."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd)
        tree = 0.0
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            tree = max(tree, _tree_rss_mb(p.pid))
            time.sleep(0.01)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, errs = out.read().decode(), err.read().decode()
    if p.returncode not in (0, 1):
        sys.exit(f"{argv[:4]} failed ({p.returncode}): {errs[-2000:]}")
    return wall, usage.ru_maxrss / 1024, text, usage.ru_utime + usage.ru_stime, tree


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline-records", type=int, default=100_000)
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--reuse", action="store_true", help="with --dir: keep an export written by an earlier run")
    ap.add_argument("--chunks", type=int, default=15, help="chunk gaps per record (the corpus record's 15; about 250 "
                                                           "in a real H100 record of 256 tokens)")
    ap.add_argument("--against", type=Path, help="another checkout (e.g. a git worktree of main) timed in the same "
                                                 "runs, interleaved: ratios of this tree to it")
    args = ap.parse_args()
    if not (CORPUS / "profile_export.jsonl").is_file():
        sys.exit(f"the recorded export is missing: {CORPUS}")
    work = args.dir or Path(tempfile.mkdtemp(prefix="ci-tools-bench-"))
    try:
        job = work / "job"
        adir = job / "aiperf_artifacts"
        adir.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        marker = adir / f".records-{args.records}-chunks-{args.chunks}"
        if args.reuse and marker.exists() and "summary" in json.loads(marker.read_text()):
            info = json.loads(marker.read_text())
        else:
            # in a child process: the generator's columns would stay in this process's heap, and every
            # timed child forked from it would start with that resident memory (wait4 counts it)
            with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
                info = pool.submit(write_export, adir / "profile_export.jsonl", args.records, 1, args.chunks).result()
            marker.write_text(json.dumps(info))
        size = (adir / "profile_export.jsonl").stat().st_size
        print(f"wrote {args.records:,} records ({size / 1e9:.2f} GB, {size / args.records:,.0f} B/record) "
              f"in {time.perf_counter() - t:.1f} s")
        (adir / "profile_export_aiperf.json").write_text(json.dumps(info["summary"]))
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs "
              f"({len(os.sched_getaffinity(0))} usable)")
        cli = [sys.executable, "-m", "ci_tools", "results", "process", str(job), "--tp", "4", "--conc", str(CONCURRENCY),
               "--scenario", "fixed-seq-len", "--model", "stub"]
        # the default (one process per usable CPU for a file this big) and a single process, and
        # the same two of the --against checkout (`python -m ci_tools` imports the tree it runs in),
        # interleaved so all see the same machine load
        configs = {"default": (REPO, []), "one process": (REPO, ["--workers", "1"])}
        if args.against and not (args.against / "ci_tools" / "__init__.py").is_file():
            # `python -m ci_tools` elsewhere imports whatever is installed: the ratios would compare a tree with itself
            sys.exit(f"--against {args.against}: not a ci-tools checkout (no ci_tools/__init__.py there)")
        if args.against:
            configs |= {"against, default": (args.against, []), "against, one process": (args.against, ["--workers", "1"])}
        runs: dict[str, list] = {name: [] for name in configs}
        for _ in range(args.runs):
            for i, (name, (cwd, extra)) in enumerate(configs.items()):
                # the tree first on the import path, whatever the virtual environment has installed
                env = {**os.environ, "PYTHONPATH": str(Path(cwd).resolve())}
                runs[name].append(timed(cli + extra + ["--out", str(work / f"result-{i}.json")], env=env, cwd=cwd))
        figures = {}
        for name, rs in runs.items():
            wall = statistics.median(r[0] for r in rs)
            cpu = statistics.median(r[3] for r in rs)
            rss, tree = max(r[1] for r in rs), max(r[4] for r in rs)
            rate = args.records / wall
            figures[name] = (rate, rss, tree, cpu)
            print(f"results process ({name}): median {wall:.2f} s wall ({cpu:.2f} s CPU) over {args.runs} runs -> "
                  f"{rate:,.0f} records/s, {args.records / cpu:,.0f} records per CPU-second; peak RSS "
                  f"{rss:.0f} MB (largest process), {tree:.0f} MB (all its processes together)")
        result = json.loads((work / "result-0.json").read_text())
        if result != json.loads((work / "result-1.json").read_text()):
            sys.exit("the default and the one-process runs computed different results")
        for mine in ("default", "one process") if args.against else ():
            r, _, t, c = figures[mine]
            ar, _, at, ac = figures[f"against, {mine}"]
            print(f"against {args.against} ({mine}): {r / ar:.2f}x its records/s, {c / ac:.2f}x its CPU, "
                  f"{t / at:.2f}x its memory (all processes)")
        rate, rss, tree, _ = figures["default"]

        prefix = work / "prefix.jsonl"
        with (adir / "profile_export.jsonl").open("rb") as src, prefix.open("wb") as dst:
            for i, line in enumerate(src):
                if i >= args.baseline_records:
                    break
                dst.write(line)
        bwall, brss, bout, bcpu, _ = timed([sys.executable, "-c", BASELINE, str(prefix), "4"])
        brate = min(args.baseline_records, args.records) / bwall
        print(f"baseline (whole-file load, {args.baseline_records:,} records): {bwall:.2f} s wall ({bcpu:.2f} s CPU) "
              f"-> {brate:,.0f} records/s, {args.baseline_records / bcpu:,.0f} per CPU-second; "
              f"peak RSS {brss:.0f} MB (~{brss * args.records / args.baseline_records / 1024:.1f} GB at "
              f"{args.records:,} records if it scales linearly)")
        print(f"speed ratio {rate / brate:.1f}x; memory at {args.baseline_records:,} records: baseline {brss:.0f} MB")
        print("headline: tok/s/GPU {:.1f}, P90 intvty {:.2f}, P90 TTFT {:.3f} s, {} valid={}".format(
            result["headline"]["tok_s_gpu"], result["headline"]["intvty_p90"], result["headline"]["ttft_p90_s"],
            result["requests"]["successful"], result["valid"]))
        if not result["valid"]:   # then the figures are those of an error path, not of a real run's
            for f in result["failures"]:
                print(f"  invalid: {f['rule']}: {f['message'][:200]}")
            sys.exit("the synthetic export should be a valid run; fix write_export()")
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
        ok = rate >= 200_000 and tree <= 150
        print(f"goal (>= 200,000 records/s, <= 150 MB for all processes together): "
              f"{'met' if ok else 'NOT met'} by the default; one process: "
              f"{'met' if figures['one process'][0] >= 200_000 and figures['one process'][2] <= 150 else 'not met'}")
        return 0 if ok else 1
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
