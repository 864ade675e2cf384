"""Validity rules of one result. Every rule is checked and every failure reported (pure).

InferenceX checks the AgentX error rate on some paths only and never on GB300 multi-node runs
(spec §9.3/§9.4); here a result is valid only when all of these hold:

- `completed`: at least one successful profiling request;
- `error-rate`: errors / (successful + errors) ≤ max_error_rate (inclusive, default 0.10);
- `min-requests`: successful requests ≥ the scenario minimum;
- `min-duration`: measured duration ≥ the fraction of the requested duration (AgentX);
- `phases`: only `warmup` and `profiling` records in the export (anything else means mixed runs);
- `records-broken`: no profiling record has a value no real request can have (scan.BROKEN:
  ITL <= 0, a negative token count, a timestamp before the epoch or after the end, ...);
- `records-missing`: at most MAX_MISSING_SHARE of the profiling records lack a value (scan.DEGRADED);
- `aiperf-count`: AIPerf's own request count equals the profiling records counted here;
- `aiperf-tokens`: AIPerf's own totals (`total_isl`, `total_osl`) agree with the records: a record
  edited after the run disagrees; `aiperf-duration` here only when `benchmark_duration` is missing or
  in a unit ci-tools does not read (crosscheck.py holds its value against the records);
- `aiperf-complete`: AIPerf marked the run complete (`is_complete: true`) and not cancelled
  (`was_cancelled: false`), as JSON booleans;
- `echo-*`: the run's configuration echoes the requested point (concurrency, model, duration,
  server token counts, streaming).
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_tools.errors import Failure
from ci_tools.render import numbers as num
from ci_tools.results import units
from ci_tools.results.scan import BROKEN, DEGRADED
from ci_tools.results.summary import finite

KNOWN_PHASES = ("warmup", "profiling")
# Share of profiling records that may lack a value (a timestamp, TTFT, ITL) before the result is invalid.
MAX_MISSING_SHARE = 0.01
# Per scenario: the minimum fraction of the requested duration, and successful requests per lane.
@dataclass(frozen=True)
class ScenarioRules:
    min_duration_fraction: float | None     # None: no duration to reach (the run is a request count)
    min_requests_per_conc: int


SCENARIO_RULES = {
    "agentic-coding": ScenarioRules(min_duration_fraction=0.9, min_requests_per_conc=2),
    "fixed-seq-len": ScenarioRules(min_duration_fraction=None, min_requests_per_conc=5),
}
# a scenario of neither kind
OTHER_RULES = ScenarioRules(min_duration_fraction=None, min_requests_per_conc=1)


@dataclass(frozen=True)
class Requirements:
    scenario: str = "agentic-coding"
    conc: int | None = None
    duration_s: float | None = None  # requested benchmark duration (AgentX)
    model: str | None = None
    max_error_rate: float = 0.10
    min_requests: int | None = None  # overrides the scenario rule when set
    min_duration_fraction: float | None = None  # overrides the scenario rule when set


def _avg(agg: dict, key: str) -> float | None:
    value = agg.get(key)
    if isinstance(value, dict):
        value = value.get("avg")
    return finite(value)


_num = finite


def config_echo(agg: dict) -> dict:
    """What the AIPerf run says it was asked to do (from profile_export_aiperf.json input_config)."""
    def obj(value) -> dict:  # a corrupt summary may hold anything where an object belongs
        return value if isinstance(value, dict) else {}

    def items(value) -> list:
        return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []

    cfg = obj(agg.get("input_config"))
    endpoint = obj(cfg.get("endpoint"))
    phases = items(cfg.get("phases"))
    prof: dict = next((p for p in phases if p.get("kind", p.get("name")) == "profiling"), {})
    models = [m.get("name") for m in items(obj(cfg.get("models")).get("items"))]
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
    rules = SCENARIO_RULES.get(req.scenario, OTHER_RULES)

    if ok <= 0:
        fails.append(Failure("completed", "no successful profiling request"))
    rate = r["error_rate"]
    if rate is not None and rate > req.max_error_rate:
        cats = ", ".join(f"{k}: {v}" for k, v in r["accounting"]["error_categories"].items())
        fails.append(Failure("error-rate", f"error rate {rate:.1%} ({errors} of {ok + errors}) is above "
                                           f"{req.max_error_rate:.0%}" + (f" [{cats}]" if cats else "")))
    min_req = req.min_requests
    if min_req is None and req.conc:
        min_req = rules.min_requests_per_conc * req.conc
    if min_req and ok < min_req:
        fails.append(Failure("min-requests", f"{ok} successful requests, fewer than the {min_req} "
                                             f"required for {req.scenario} at concurrency {req.conc}"))
    frac = req.min_duration_fraction if req.min_duration_fraction is not None else rules.min_duration_fraction
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
    excluded = r["accounting"].get("excluded", {})
    broken = {k: n for k, n in excluded.items() if k in BROKEN}
    if broken:
        listing = ", ".join(f"{k}: {n}" for k, n in sorted(broken.items()))
        fails.append(Failure("records-broken", f"profiling records with impossible values ({listing}); the "
                                               "export's clocks or counters are wrong, so no metric from it holds"))
    missing = {k: n for k, n in excluded.items() if k in DEGRADED}
    measured_or_not = ok + sum(broken.values()) + sum(missing.values())
    if missing and sum(missing.values()) > MAX_MISSING_SHARE * measured_or_not:
        listing = ", ".join(f"{k}: {n}" for k, n in sorted(missing.items()))
        fails.append(Failure("records-missing", f"{sum(missing.values())} of {measured_or_not} profiling records "
                                                f"lack a value ({listing}), more than {MAX_MISSING_SHARE:.0%}"))

    if agg is None:
        fails.append(Failure("aiperf-summary", "profile_export_aiperf.json is missing; the run's "
                                               "configuration and completion cannot be checked"))
        return fails
    count = _avg(agg, "request_count")
    if count is None:
        fails.append(Failure("aiperf-count", "profile_export_aiperf.json has no numeric request_count.avg"))
    elif count != ok:
        fails.append(Failure("aiperf-count", f"AIPerf counted {num.count(count)} successful profiling requests, "
                                             f"the export has {num.count(ok)}"))
    tokens = metrics.get("tokens") or {}
    for key, ours, what in (("total_isl", tokens.get("input_total"), "input"),
                            ("total_osl", tokens.get("output_total"), "output")):
        theirs = _avg(agg, key)
        if theirs is None:
            fails.append(Failure("aiperf-tokens", f"profile_export_aiperf.json has no numeric {key}.avg"))
        elif ours is None or abs(ours - theirs) > 1e-6 * max(abs(theirs), 1.0):
            fails.append(Failure("aiperf-tokens", f"AIPerf counted {num.count(theirs)} {what} tokens ({key}), the records "
                                                  f"add up to {ours if ours is None else num.count(ours)}"))
    theirs = _avg(agg, "benchmark_duration")
    unit = agg["benchmark_duration"].get("unit") if isinstance(agg.get("benchmark_duration"), dict) else None
    factor = units.SECONDS.factor(unit)
    if theirs is None:
        fails.append(Failure("aiperf-duration", "profile_export_aiperf.json has no numeric benchmark_duration.avg"))
    elif factor is None:
        fails.append(Failure("units", f"profile_export_aiperf.json gives benchmark_duration in {units.shown(unit)}, "
                                      "not a unit of time ci-tools reads; refused rather than read as seconds"))
    if agg.get("was_cancelled") is not False:
        fails.append(Failure("aiperf-complete", "AIPerf cancelled the run or did not say (was_cancelled: "
                                                f"{agg.get('was_cancelled')!r}, expected false)"))
    if agg.get("is_complete") is not True:
        fails.append(Failure("aiperf-complete", "AIPerf did not mark the run complete (is_complete: "
                                                f"{agg.get('is_complete')!r}, expected true)"))

    echo = config_echo(agg)
    if req.conc is not None and echo["concurrency"] != req.conc:
        fails.append(Failure("echo-concurrency", f"the run used concurrency {echo['concurrency']}, "
                                                 f"the point asks for {req.conc}"))
    if req.model and req.model not in echo["models"]:
        fails.append(Failure("echo-model", f"the run benchmarked {echo['models']}, the point serves {req.model!r}"))
    if req.scenario == "agentic-coding" and req.duration_s is not None and echo["duration"] is not None \
            and _num(echo["duration"]) != float(req.duration_s):
        fails.append(Failure("echo-duration", f"the run's benchmark duration is {echo['duration']} s, "
                                              f"the point asks for {req.duration_s:g} s"))
    if echo["use_server_token_count"] is not True:
        fails.append(Failure("echo-token-count", "the run did not use server token counts "
                                                 "(--use-server-token-count); OSL would be client-side"))
    if echo["streaming"] is not True:
        fails.append(Failure("echo-streaming", "the run did not stream; TTFT and ITL are meaningless"))
    return fails


def unit_failures(refused: dict[str, int]) -> list[Failure]:
    """Records refused for a unit ci-tools does not read (records.py, units.py), one failure naming each
    metric and unit, so a unit is never silently read as the usual one."""
    if not refused:
        return []
    listing = ", ".join(f"{what} ({n} record{'s' if n != 1 else ''})" for what, n in sorted(refused.items()))
    return [Failure("units", f"metrics in a unit ci-tools does not read: {listing}; those records were refused, "
                             "not read as milliseconds or tokens")]
