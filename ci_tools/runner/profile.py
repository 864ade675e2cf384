"""`runner profile`: one point served with the engine's torch profiler on (pure: no process, no file).

The job is `runner run`'s (same row, same lifecycle, same cancel handling); this module only changes
its plan: the engine's profiler switch on the server, a short client window, and the profile calls
the job makes around that window. It also merges the per-rank Chrome traces the engine wrote into
one file (one process block per rank) and writes the README the artifact carries.

Engines, as their pinned wheels define the switches:
  sglang  env SGLANG_TORCH_PROFILER_DIR; POST /start_profile (ProfileReq: output_dir, activities...),
          POST /stop_profile (returns once every rank wrote `<id>-TP-<r>[-DP-..][-EP-..].trace.json.gz`)
  vllm    0.33 reads no VLLM_TORCH_PROFILER_DIR any more: `--profiler-config` JSON (profiler torch,
          torch_profiler_dir), which also mounts POST /start_profile and /stop_profile; the variable is
          set as well for older images
  trtllm  refused: its torch profiler is set at start for a range of iterations (TLLM_PROFILE_START_STOP,
          TLLM_TORCH_PROFILE_TRACE), with no endpoint to put it around a client window
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from ci_tools import names
from ci_tools.errors import InputError
from ci_tools.github.models import PERMISSION_NOT_FOUND
from ci_tools.runner.plan import JobPlan, Proc

MERGED_TRACE = "merged.trace.json"    # beside the per-rank files
README = "README.md"
DEFAULT_REQUESTS_PER_LANE = 2         # the client window: a few requests per concurrency lane
PID_BLOCK = 1000                      # rank r's processes get pids r*1000 + i in the merged trace
ACTIVITIES = ["CPU", "GPU"]
TRACE_SUFFIXES = (".trace.json", ".trace.json.gz", ".pt.trace.json", ".pt.trace.json.gz")


@dataclass(frozen=True)
class ProfileCalls:
    """The HTTP calls around the client window: (url, JSON body) each, POSTed in order."""
    start: tuple[tuple[str, dict], ...]
    stop: tuple[tuple[str, dict], ...]


def profiler_switch(engine: str, trace_dir: str) -> tuple[dict[str, str], tuple[str, ...]]:
    """(server env, extra engine args) turning the engine's torch profiler on, writing to trace_dir."""
    if engine == "sglang":
        return {"SGLANG_TORCH_PROFILER_DIR": trace_dir}, ()
    if engine == "vllm":
        config = {"profiler": "torch", "torch_profiler_dir": trace_dir}
        return {"VLLM_TORCH_PROFILER_DIR": trace_dir}, ("--profiler-config", json.dumps(config))
    if engine == "trtllm":
        raise InputError("engine 'trtllm': trtllm-serve has no profiler switch ci-tools can put around a client "
                         "window. Its torch profiler (PyTorch backend only) is set at start by "
                         "TLLM_PROFILE_START_STOP=A-B, a range of engine iterations, with TLLM_TORCH_PROFILE_TRACE="
                         "<file>, and it has no start/stop profile endpoint: which iterations a window covers "
                         "depends on warmup and readiness probes, so no trace would be of the point. Profile an "
                         "SGLang or vLLM point, or set those variables by hand (TensorRT-LLM's perf-analysis guide)")
    raise InputError(f"engine {engine!r} has no profiler switch ci-tools knows (SGLang and vLLM only)")


def requester_refusal(login: str, permission: str) -> str | None:
    """None when `login`, whose collaborator permission is `permission`, may request profiling (a
    maintainer: names.MAINTAINER_PERMISSIONS); else why not. A profile holds a GPU runner for the
    row's whole readiness, so nobody else asks for one."""
    if permission in names.MAINTAINER_PERMISSIONS:
        return None
    has = "is no collaborator of this repository" if permission in ("none", PERMISSION_NOT_FOUND) else \
        f"has {permission} permission"
    return (f"{login} may not request profiling: {login} {has}; only maintainers "
            f"({', '.join(sorted(names.MAINTAINER_PERMISSIONS))} permission) hold a GPU runner for a profile")


def profile_calls(engine: str, engine_url: str, trace_dir: str) -> ProfileCalls:
    """Straight to the engine (not the router: it has no profiler), which profiles all its ranks."""
    start_body: dict = {}
    if engine == "sglang":
        start_body = {"output_dir": trace_dir, "activities": ACTIVITIES, "profile_id": "ci-tools"}
    return ProfileCalls(start=((f"{engine_url}/start_profile", start_body),),
                        stop=((f"{engine_url}/stop_profile", {}),))


def _replace_value(argv: list[str], flag: str, value: str) -> list[str]:
    out = list(argv)
    if flag in out:
        out[out.index(flag) + 1] = value
    return out


def window_argv(argv: list[str], conc: int, requests: int | None) -> list[str]:
    """The AIPerf command bounded to a short window: `requests` requests (default 2 per lane), one
    warmup request per lane, no benchmark duration (a request count ends it)."""
    n = requests if requests is not None else DEFAULT_REQUESTS_PER_LANE * conc
    out: list[str] = []
    skip = 0
    for i, a in enumerate(argv):
        if skip:
            skip -= 1
            continue
        if a == "--benchmark-duration":
            skip = 1
            continue
        out.append(a)
    if "--request-count" in out:
        out = _replace_value(out, "--request-count", str(n))
    else:
        at = out.index("--artifact-dir") if "--artifact-dir" in out else len(out)
        out[at:at] = ["--request-count", str(n)]
    return _replace_value(out, "--warmup-request-count", str(conc))


def profile_plan(plan: JobPlan, trace_dir: str, requests: int | None) -> tuple[JobPlan, ProfileCalls]:
    """The job's plan with the profiler on and a short client window, and the calls around it."""
    if plan.run_eval:
        raise InputError("eval rows run a harness, not a short client window; profile a throughput row")
    engine = plan.point.engine
    env, extra = profiler_switch(engine, trace_dir)
    procs: list[Proc] = []
    for p in plan.procs:
        if p.role == "server":
            command = p.command
            argv = list(p.argv)
            if extra:
                if command is None:
                    argv += list(extra)
                else:
                    command = replace(command, args=(*command.args, *extra))
                    argv = command.argv
            p = replace(p, argv=argv, env={**p.env, **env}, command=command, mounts=(*p.mounts, trace_dir))
        elif p.role == "client":
            p = replace(p, argv=window_argv(p.argv, plan.point.key.conc, requests))
        procs.append(p)
    engine_url = plan.ready_urls[0].rsplit("/", 1)[0]   # the engine's own URL (its first ready path)
    calls = profile_calls(engine, engine_url, trace_dir)
    return replace(plan, procs=procs, duration_s=None), calls


def render_calls(calls: ProfileCalls) -> str:
    """The --dry-run lines of the profile calls."""
    lines = ["", "# profiler: after readiness, before the client"]
    lines += [f"#   POST {url} {json.dumps(body)}" for url, body in calls.start]
    lines.append("# profiler: after the client (returns once every rank wrote its trace)")
    lines += [f"#   POST {url} {json.dumps(body)}" for url, body in calls.stop]
    return "\n".join(lines) + "\n"


def is_trace_file(name: str) -> bool:
    return name.endswith(TRACE_SUFFIXES) and not name.startswith(MERGED_TRACE.split(".")[0])


def rank_label(name: str, index: int) -> str:
    """`ci-tools-TP-1-DP-1-EP-1.trace.json.gz` -> `TP-1-DP-1-EP-1`; otherwise the file's stem."""
    m = re.search(r"((?:TP|DP|PP|EP)-\d+(?:-(?:TP|DP|PP|EP)-\d+)*)", name)
    if m:
        return m.group(1)
    stem = name
    for suffix in sorted(TRACE_SUFFIXES, key=len, reverse=True):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return stem or f"rank {index}"


def merge_traces(traces: list[tuple[str, dict]]) -> dict:
    """Chrome traces (name, document) -> one trace, rank r's processes renumbered r*PID_BLOCK + i and
    named `<rank label>: <their own name>`, so a viewer shows each rank as its own group of rows."""
    events: list[dict] = []
    for r, (name, doc) in enumerate(traces):
        raw = doc.get("traceEvents") if isinstance(doc, dict) else doc
        if not isinstance(raw, list):
            raise InputError(f"{name}: not a Chrome trace (no traceEvents list)")
        label = rank_label(name, r)
        pids: dict = {}
        named: set = set()
        for ev in raw:
            if not isinstance(ev, dict):
                continue
            ev = dict(ev)
            if "pid" in ev:
                pid = pids.setdefault(ev["pid"], r * PID_BLOCK + len(pids))
                if ev.get("ph") == "M" and ev.get("name") == "process_name":
                    ev["args"] = {**(ev.get("args") or {}), "name": f"{label}: {(ev.get('args') or {}).get('name', '')}"}
                    named.add(pid)
                ev["pid"] = pid
            events.append(ev)
        for original, pid in pids.items():
            if pid not in named:
                events.append({"ph": "M", "name": "process_name", "pid": pid,
                               "args": {"name": f"{label}: {original}"}})
            events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}})
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"merged-by": "ci-tools runner profile", "ranks": [rank_label(n, i) for i, (n, _) in
                                                                           enumerate(traces)]}}


def readme(result_filename: str, engine: str, files: list[str], merged: str, calls: ProfileCalls,
           client: list[str]) -> str:
    """How to open the traces (the artifact's README.md)."""
    lines = [f"# Profile of {result_filename}", "",
             f"The {engine} torch profiler traced the window between these calls:", ""]
    lines += [f"- `POST {url}`" for url, _ in calls.start + calls.stop]
    lines += ["", "while this client ran:", "", "    " + " ".join(client), "",
              "## Files", "",
              f"- `{merged}`: every rank in one trace; rank r's processes are numbered r*{PID_BLOCK} + i and "
              "named after the rank (TP-r, DP-r, EP-r from the engine's file names)."]
    lines += [f"- `{f}`: one rank, as the engine wrote it" for f in files]
    lines += ["", "## Open them", "",
              "- Perfetto: open https://ui.perfetto.dev, then *Open trace file* and pick the file (it reads "
              ".json and .json.gz; the trace stays in the browser).",
              "- Chrome: chrome://tracing, *Load*.",
              "- Large traces (over ~1 GB unpacked) load faster one rank at a time.", ""]
    return "\n".join(lines)
