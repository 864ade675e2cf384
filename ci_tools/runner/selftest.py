"""`runner selftest`: what it runs on a GPU host and the verdict per check (pure).

The self-test serves a small random-weight model with the host's engine (process backend) or the
recipe's image (docker), as three ordinary `runner run` jobs: a short agentic job on AIPerf's
synthetic dataset with exact output lengths (the offline agentic path), a fixed-sequence job, and a
third agentic job cancelled in GitHub's signal sequence while its client runs. Then `results
process`, `collect`, `pareto` and `report` over what it wrote. This module builds the recipe and rows
(`recipe`, `rows`) and judges what the flow measured (`verdict` over `Facts`); selftest_flow.py runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ci_tools import names
from ci_tools.runner import nodecheck

MODEL = "selftest/rand-llama"          # under the self-test's own model store
# the points: two concurrencies, so the collection holds two frontier points whatever else it holds
AGENTIC_CONC = 8
FIXED_CONC = 4
SYNTHETIC = "synthetic:1024:256"       # agentic prompts of 1024 tokens answered with exactly 256 (ignore_eos)
FIXED_ISL, FIXED_OSL = 1024, 512
JOBS = ("agentic", "fixed", "cancel")
# each engine's settings for a 0.5 B model on one GPU; the recipe's own `serve.env` (and image) is added
SERVE_ARGS = {
    "vllm": {"gpu-memory-utilization": 0.5, "max-model-len": 4096},
    "sglang": {"mem-fraction-static": 0.5, "context-length": 4096},
}
# GitHub's cancel: SIGINT to the step's process group, SIGTERM 7.5 s later, SIGKILL 2.5 s after that
CANCEL_SIGTERM_AFTER_S = 7.5
CANCEL_SIGKILL_AFTER_S = 2.5
MEMORY_SLACK_MIB = 1024                # GPU memory counts as freed within this much of the idle reading
MIN_COVERAGE = 0.95                    # telemetry: share of the benchmark window the samples cover


def memory_used(csv_text: str) -> list[float]:
    """memory.used per GPU in MiB, from one reading of the sampler's query (`nvidia-smi
    --query-gpu=<names.GPU_TELEMETRY_FIELDS> --format=csv,nounits`): the header and any line that is not
    a sample (an nvidia-smi error) are skipped; a value nvidia-smi does not report ([N/A]) reads 0."""
    column = names.GPU_TELEMETRY_FIELDS.index("memory.used")
    out = []
    for line in csv_text.splitlines():
        cells = [c.strip() for c in line.split(", ")]
        if line.startswith("timestamp") or len(cells) != len(names.GPU_TELEMETRY_FIELDS):
            continue
        try:
            out.append(float(cells[column].split(" ")[0]))
        except ValueError:
            out.append(0.0)
    return out


def recipe(engine: str, versions: list[str], image: str | None, env: dict[str, str]) -> dict:
    """The self-test's recipe: the engine (and image) under test, the random model, its two points."""
    doc: dict = {"recipe-version": 1, "config-key": f"selftest-{engine}", "engine": engine}
    if versions:
        doc["engine-versions"] = list(versions)
    if image:
        doc["image"] = image
    doc.update({"model": MODEL, "serve": {"env": dict(env), "args": dict(SERVE_ARGS[engine])},
                "points": {f"tp1-c{c}": {"tp": 1, "ep": 1, "conc": c, **({"args": {"max-num-seqs": c}}
                                                                        if engine == "vllm" else {})}
                           for c in sorted({AGENTIC_CONC, FIXED_CONC})}})
    return doc


def rows(engine: str, image: str | None, runner: str) -> dict[str, dict]:
    """One InferenceX-shaped matrix row per job (the recipe beside them: `recipe.yaml`)."""
    base = {"model": MODEL, "model-prefix": "selftest", "precision": "bf16", "framework": engine,
            "runner": runner or "selftest", "tp": 1, "pp": 1, "dcp-size": 1, "pcp-size": 1, "ep": 1,
            "dp-attn": False, "spec-decoding": "none", "kv-offloading": "none", "total-cpu-dram-gb": 0,
            "run-eval": False, "recipe": "recipe.yaml", **({"image": image} if image else {})}
    agentic = {**base, "conc": AGENTIC_CONC, "scenario-type": "agentic-coding",
               "exp-name": f"selftest_tp1_conc{AGENTIC_CONC}"}
    return {"agentic": agentic,
            "fixed": {**base, "conc": FIXED_CONC, "isl": FIXED_ISL, "osl": FIXED_OSL,
                      "scenario-type": "fixed-seq-len", "exp-name": f"selftest_tp1_conc{FIXED_CONC}_1k512"},
            "cancel": {**agentic, "exp-name": f"selftest_tp1_conc{AGENTIC_CONC}_cancel"}}


@dataclass(frozen=True)
class JobFacts:
    """What one job left: its files as read (None: missing) and what the flow saw after it ended."""
    exit_code: int | None
    status: dict | None = None
    job: dict | None = None
    result: dict | None = None
    node_check: str = ""
    left: tuple[str, ...] = ()            # what still carried the job's label after it ended
    process_error: str = ""               # `results process`'s message when it failed


@dataclass(frozen=True)
class CancelFacts:
    signals: tuple[str, ...]              # sent before the step ended (["SIGINT"]: it stopped on the first)
    exit_code: int | None
    stop_s: float                         # from the SIGINT to the step's exit
    memory_before_mib: tuple[float, ...]  # per GPU, just before the SIGINT
    memory_after_mib: tuple[float, ...]   # per GPU, at the last reading
    freed_s: float | None                 # from the SIGINT until every GPU was back near idle; None: not in time
    waited_s: float                       # how long the flow watched the memory


@dataclass(frozen=True)
class Facts:
    devices: tuple[str, ...] | None       # the GPUs the runner was given (None: the node's first)
    idle_memory_mib: tuple[float, ...]    # per GPU before anything started
    ready_limit_s: float
    jobs: dict[str, JobFacts]
    cancel: CancelFacts | None
    commands: dict[str, int | None] = field(default_factory=dict)   # results command -> exit code (None: not run)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    value: str                            # the measured figure(s), for people
    detail: str = ""                      # why it failed, or what the figure means

    def as_dict(self) -> dict:
        return {"check": self.name, "ok": self.ok, "value": self.value, "detail": self.detail}


def _completed(facts: Facts) -> list[tuple[str, JobFacts]]:
    return [(n, facts.jobs[n]) for n in ("agentic", "fixed") if n in facts.jobs]


def _fmt(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def engine_check(facts: Facts) -> Check:
    found = []
    for name, j in facts.jobs.items():
        e = (j.job or {}).get("engine") or (j.status or {}).get("engine")
        if e:
            found.append((name, e))
    failed = [(n, j) for n, j in facts.jobs.items() if (j.status or {}).get("phase") == "version"]
    if failed:
        return Check("engine", False, "refused", "; ".join(f"{n}: {(j.status or {}).get('reason', '')}" for n, j in failed))
    if not found:
        return Check("engine", False, "-", "no job got as far as the engine's version command (see the jobs' status.json)")
    versions = {f"{e['name']} {e.get('version') or '(none printed)'}" for _, e in found}
    declared = {", ".join(e.get("declared") or []) or "none" for _, e in found}
    return Check("engine", len(versions) == 1 and all(e.get("version") for _, e in found), " / ".join(sorted(versions)),
                 f"the recipe declares engine-versions: {' / '.join(sorted(declared))}")


def gpus_check(facts: Facts) -> Check:
    text = next((j.node_check for j in facts.jobs.values() if j.node_check), "")
    if not text:
        return Check("GPUs seen", False, "-", "no node check ran (see the jobs' status.json)")
    _, gpus = nodecheck.parse(text)
    names = sorted({g["name"] for g in gpus})
    value = f"{len(gpus)} x {', '.join(names)}" if gpus else "none"
    want = list(facts.devices) if facts.devices else ["0"]
    known = {g["index"] for g in gpus} | {g["uuid"] for g in gpus}
    missing = [d for d in want if d not in known]
    return Check("GPUs seen", bool(gpus) and not missing, value,
                 f"device(s) {', '.join(missing)} given to the runner are not listed by nvidia-smi -L" if missing
                 else f"the self-test ran on device {', '.join(want)}")


def readiness_check(facts: Facts) -> Check:
    times = {n: (j.status or {}).get("ready_s") for n, j in facts.jobs.items()}
    shown = ", ".join(f"{n} {_fmt(t)} s" for n, t in times.items())
    missing = [n for n, t in times.items() if t is None]
    slow = [n for n, t in times.items() if t is not None and t > facts.ready_limit_s]
    why = []
    if missing:
        why.append(f"the engine never answered its readiness probes in: {', '.join(missing)} (see server.log)")
    if slow:
        why.append(f"over the {facts.ready_limit_s:g} s limit: {', '.join(slow)}")
    return Check("readiness", not (missing or slow), shown,
                 "; ".join(why) or f"engine start to /health and /v1/models answering (limit {facts.ready_limit_s:g} s)")


def client_check(facts: Facts) -> Check:
    parts, bad = [], []
    for name, j in _completed(facts):
        st = j.status or {}
        parts.append(f"{name} {_fmt(st.get('client_s'))} s")
        if j.exit_code != 0 or not st.get("ok"):
            bad.append(f"{name}: exit {j.exit_code}, phase {st.get('phase', '?')}: {st.get('reason', 'no status.json')}")
    return Check("client run", not bad and len(parts) == 2, ", ".join(parts) or "-", "; ".join(bad) or
                 "AIPerf ran to the end and wrote its exports")


def validity_check(facts: Facts) -> Check:
    parts, bad = [], []
    for name, j in _completed(facts):
        r = j.result
        if r is None:
            bad.append(f"{name}: no result.json ({j.process_error or 'results process did not run'})")
            continue
        req = r.get("requests") or {}
        h = r.get("headline") or {}
        parts.append(f"{name} {req.get('successful', 0):,} ok / {req.get('errors', 0):,} err, "
                     f"{_fmt(h.get('tok_s_gpu'))} tok/s/GPU")
        if not r.get("valid"):
            bad.append(f"{name}: " + "; ".join(str(f.get("message", f)) for f in r.get("failures") or []))
    return Check("validity", not bad and len(parts) == 2, "; ".join(parts) or "-", "; ".join(bad) or
                 "every rule of `results process` held, AIPerf's own summary within tolerance")


def telemetry_check(facts: Facts) -> Check:
    parts, bad = [], []
    for name, j in _completed(facts):
        tel = (j.result or {}).get("gpu_telemetry")
        if not tel:
            bad.append(f"{name}: no GPU telemetry in result.json (gpu_telemetry.csv missing?)")
            continue
        cov = [g.get("coverage") or 0.0 for g in tel.get("gpus") or []]
        parts.append(f"{name} {min(cov, default=0.0):.0%} ({tel.get('samples', 0)} samples)")
        if not cov or min(cov) < MIN_COVERAGE:
            bad.append(f"{name}: the samples cover {min(cov, default=0.0):.0%} of the benchmark window "
                       f"(at least {MIN_COVERAGE:.0%} needed)")
        if tel.get("problems"):
            bad.append(f"{name}: " + "; ".join(tel["problems"]))
    return Check("telemetry coverage", not bad and len(parts) == 2, ", ".join(parts) or "-", "; ".join(bad) or
                 "nvidia-smi samples over each benchmark window")


def energy_check(facts: Facts) -> Check:
    parts, bad = [], []
    for name, j in _completed(facts):
        e = (j.result or {}).get("energy") or {}
        if not e.get("valid"):
            bad.append(f"{name}: no valid energy ({', '.join(e.get('reasons') or ['no result'])})")
            continue
        parts.append(f"{name} {e['j_per_output_token']:.4f} J/output token at {e['avg_power_w']:.0f} W")
        if not e.get("j_per_output_token") or e["j_per_output_token"] <= 0:
            bad.append(f"{name}: no energy per output token")
    return Check("energy", not bad and len(parts) == 2, "; ".join(parts) or "-", "; ".join(bad) or
                 "GPU energy over the benchmark window, per output token")


def cancel_check(facts: Facts) -> Check:
    c = facts.cancel
    if c is None:
        return Check("cancel time", False, "-", "the cancelled job's client never started, so no cancel was sent")
    st = facts.jobs.get("cancel", JobFacts(None)).status or {}
    value = f"exit {c.exit_code} after {c.stop_s:.2f} s ({', '.join(c.signals)})"
    bad = []
    if list(c.signals) != ["SIGINT"] or c.stop_s >= CANCEL_SIGTERM_AFTER_S:
        bad.append(f"still running {CANCEL_SIGTERM_AFTER_S:g} s after GitHub's SIGINT (GitHub then sends SIGTERM "
                   "and kills the tree)")
    if c.exit_code != 130:
        bad.append(f"exit {c.exit_code}, not 130 (SIGINT)")
    if st.get("reason") != "cancelled (SIGINT)":
        bad.append(f"status.json says {st.get('reason') or 'nothing'!r}, not 'cancelled (SIGINT)'")
    return Check("cancel time", not bad, value, "; ".join(bad) or
                 f"stopped on the SIGINT alone, inside GitHub's {CANCEL_SIGTERM_AFTER_S:g} s")


def memory_check(facts: Facts) -> Check:
    c = facts.cancel
    if c is None:
        return Check("GPU memory freed", False, "-", "no cancel was sent")
    before = sum(c.memory_before_mib)
    after = sum(c.memory_after_mib)
    idle = sum(facts.idle_memory_mib)
    value = f"{before:,.0f} -> {after:,.0f} MiB" + (f" in {c.freed_s:.2f} s" if c.freed_s is not None else "")
    if c.freed_s is None:
        return Check("GPU memory freed", False, value, f"still above the idle {idle:,.0f} MiB + {MEMORY_SLACK_MIB} MiB "
                     f"{c.waited_s:.0f} s after the cancel: something holds the GPU")
    return Check("GPU memory freed", True, value, f"back within {MEMORY_SLACK_MIB} MiB of the idle {idle:,.0f} MiB")


def leftovers_check(facts: Facts) -> Check:
    left = [f"{n}: {x}" for n, j in facts.jobs.items() for x in j.left]
    return Check("nothing left", not left, f"{len(left)} left", "; ".join(left) or
                 "no process or container carried a job's label after it ended")


def results_check(facts: Facts) -> Check:
    bad = [f"{cmd} exit {code}" if code is not None else f"{cmd} not run" for cmd, code in facts.commands.items()
           if code != 0]
    return Check("results", bool(facts.commands) and not bad, ", ".join(facts.commands) or "-", "; ".join(bad) or
                 "results process, collect, pareto and report over the jobs")


CHECKS = (engine_check, gpus_check, readiness_check, client_check, validity_check, telemetry_check, energy_check,
          cancel_check, memory_check, leftovers_check, results_check)


def verdict(facts: Facts) -> list[Check]:
    return [check(facts) for check in CHECKS]


def freed(memory_mib: list[float], idle_mib: list[float]) -> bool:
    """Every GPU back within MEMORY_SLACK_MIB of its idle reading."""
    return len(memory_mib) == len(idle_mib) and all(m <= i + MEMORY_SLACK_MIB for m, i in zip(memory_mib, idle_mib))


def render(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = []
    for c in checks:
        lines.append(f"{'PASS' if c.ok else 'FAIL'}  {c.name:<{width}}  {c.value}")
        if c.detail:
            lines.append(f"      {'':<{width}}  {c.detail}")
    failed = [c.name for c in checks if not c.ok]
    lines.append("")
    lines.append(f"selftest failed: {', '.join(failed)}" if failed else "selftest passed: every check held")
    return "\n".join(lines) + "\n"
