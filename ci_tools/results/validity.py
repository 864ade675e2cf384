"""Validity rules of one result. Every rule is checked and every failure reported (pure).

InferenceX checks the AgentX error rate on some paths only and never on GB300 multi-node runs
(spec §9.3/§9.4); here a result is valid only when all of these hold:

- `completed`: at least one successful profiling request;
- `error-rate`: errors / (successful + errors) ≤ max_error_rate (inclusive, default 0.10);
- `min-requests`: successful requests ≥ the scenario minimum;
- `min-duration`: measured duration ≥ the fraction of the requested duration (AgentX);
- `phases`: only `warmup` and `profiling` records in the export (anything else means mixed runs);
- `aiperf-count`: AIPerf's own request count equals the profiling records counted here;
- `aiperf-complete`: AIPerf did not cancel the run and marked it complete;
- `echo-*`: the run's configuration echoes the requested point (concurrency, model, duration,
  server token counts, streaming).
"""

from __future__ import annotations

from dataclasses import dataclass

KNOWN_PHASES = ("warmup", "profiling")

# Per scenario: the minimum fraction of the requested duration, and successful requests per lane.
SCENARIO_RULES = {
    "agentic-coding": {"min_duration_fraction": 0.9, "min_requests_per_conc": 2},
    "fixed-seq-len": {"min_duration_fraction": None, "min_requests_per_conc": 5},
}


@dataclass(frozen=True)
class Requirements:
    scenario: str = "agentic-coding"
    conc: int | None = None
    duration_s: float | None = None  # requested benchmark duration (AgentX)
    model: str | None = None
    max_error_rate: float = 0.10
    min_requests: int | None = None  # overrides the scenario rule when set
    min_duration_fraction: float | None = None  # overrides the scenario rule when set


@dataclass(frozen=True)
class Failure:
    rule: str
    message: str

    def as_dict(self) -> dict:
        return {"rule": self.rule, "message": self.message}


def _avg(agg: dict, key: str) -> float | None:
    value = agg.get(key)
    if isinstance(value, dict):
        value = value.get("avg")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def config_echo(agg: dict) -> dict:
    """What the AIPerf run says it was asked to do (from profile_export_aiperf.json input_config)."""
    cfg = agg.get("input_config") or {}
    endpoint = cfg.get("endpoint") or {}
    phases = [p for p in (cfg.get("phases") or []) if isinstance(p, dict)]
    prof = next((p for p in phases if p.get("kind", p.get("name")) == "profiling"), {})
    models = [m.get("name") for m in ((cfg.get("models") or {}).get("items") or []) if isinstance(m, dict)]
    return {
        "concurrency": prof.get("concurrency"),
        "duration": prof.get("duration"),
        "requests": prof.get("requests"),
        "models": models,
        "streaming": endpoint.get("streaming"),
        "use_server_token_count": endpoint.get("use_server_token_count"),
        "warmup_phases": [p.get("name") for p in phases if p.get("kind", p.get("name")) == "warmup"],
    }


def check(metrics: dict, agg: dict | None, req: Requirements) -> list[Failure]:
    fails: list[Failure] = []
    r = metrics["requests"]
    ok, errors = r["successful"], r["errors"]
    rules = SCENARIO_RULES.get(req.scenario, {"min_duration_fraction": None, "min_requests_per_conc": 1})

    if ok <= 0:
        fails.append(Failure("completed", "no successful profiling request"))
    rate = r["error_rate"]
    if rate is not None and rate > req.max_error_rate:
        cats = ", ".join(f"{k}: {v}" for k, v in r["accounting"]["error_categories"].items())
        fails.append(Failure("error-rate", f"error rate {rate:.1%} ({errors} of {ok + errors}) is above "
                                           f"{req.max_error_rate:.0%}" + (f" [{cats}]" if cats else "")))
    min_req = req.min_requests
    if min_req is None and req.conc:
        min_req = rules["min_requests_per_conc"] * req.conc
    if min_req and ok < min_req:
        fails.append(Failure("min-requests", f"{ok} successful requests, fewer than the {min_req} "
                                             f"required for {req.scenario} at concurrency {req.conc}"))
    frac = req.min_duration_fraction if req.min_duration_fraction is not None else rules["min_duration_fraction"]
    dur = metrics.get("duration_s")
    if frac and req.duration_s:
        need = frac * req.duration_s
        if dur is None or dur < need:
            got = "no measurable duration" if dur is None else f"{dur:.1f} s measured"
            fails.append(Failure("min-duration", f"{got}; at least {need:.1f} s ({frac:.0%} of the "
                                                 f"requested {req.duration_s:g} s) is required"))
    phases = r["accounting"].get("phases", {})
    others = {p: n for p, n in phases.items() if p not in KNOWN_PHASES and p != "<none>"}
    if others:
        listing = ", ".join(f"{p} ({n})" for p, n in sorted(others.items()))
        fails.append(Failure("phases", f"records from other phases in the export: {listing}; they were "
                                       "not counted, but the export mixes runs"))
    if r.get("bad_lines"):
        fails.append(Failure("records", f"lines that are not JSON records: {r['bad_lines']}"))

    if agg is None:
        fails.append(Failure("aiperf-summary", "profile_export_aiperf.json is missing; the run's "
                                               "configuration and completion cannot be checked"))
        return fails
    count = _avg(agg, "request_count")
    if count is None:
        fails.append(Failure("aiperf-count", "profile_export_aiperf.json has no numeric request_count.avg"))
    elif int(count) != ok:
        fails.append(Failure("aiperf-count", f"AIPerf counted {int(count)} successful profiling requests, "
                                             f"the export has {ok}"))
    if agg.get("was_cancelled"):
        fails.append(Failure("aiperf-complete", "AIPerf cancelled the run (was_cancelled: true)"))
    if agg.get("is_complete") is False:
        fails.append(Failure("aiperf-complete", "AIPerf did not mark the run complete (is_complete: false)"))

    echo = config_echo(agg)
    if req.conc is not None and echo["concurrency"] != req.conc:
        fails.append(Failure("echo-concurrency", f"the run used concurrency {echo['concurrency']}, "
                                                 f"the point asks for {req.conc}"))
    if req.model and req.model not in echo["models"]:
        fails.append(Failure("echo-model", f"the run benchmarked {echo['models']}, the point serves {req.model!r}"))
    if req.scenario == "agentic-coding" and req.duration_s is not None and echo["duration"] is not None \
            and float(echo["duration"]) != float(req.duration_s):
        fails.append(Failure("echo-duration", f"the run's benchmark duration is {echo['duration']} s, "
                                              f"the point asks for {req.duration_s:g} s"))
    if echo["use_server_token_count"] is not True:
        fails.append(Failure("echo-token-count", "the run did not use server token counts "
                                                 "(--use-server-token-count); OSL would be client-side"))
    if echo["streaming"] is not True:
        fails.append(Failure("echo-streaming", "the run did not stream; TTFT and ITL are meaningless"))
    return fails
