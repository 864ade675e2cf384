"""Measured speculative acceptance: what the engine itself reports, read around a client window (pure).

The engines publish it under their own names (no file, no request here; the job fetches the bodies):
  sglang  GET /server_info -> `internal_states[i].avg_spec_accept_length`, one per DP rank, averaged
          over the server's life (SGLang's own tests and bench_serving read it so); its Prometheus
          gauge `sglang:spec_accept_length` (/metrics, --enable-metrics) is the fallback
  vllm    /metrics counters `vllm:spec_decode_num_drafts_total` and
          `vllm:spec_decode_num_accepted_tokens_total`: AL = 1 + d(accepted) / d(drafts) between the
          snapshot before the client window and the one after it (vLLM's documented PromQL)
  trtllm  no acceptance metric ci-tools reads: refused

`runner acceptance` (the SPEED-Bench collection) serves one point with real speculative decoding at
a chosen step count and thinking mode and writes the measured length to `acceptance.json`; eval rows
of a speculative recipe record it too, so `results process` can set it beside the synthetic length.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from typing import Any

from ci_tools.errors import InputError

SNAPSHOTS = {"sglang": (("/server_info", "server_info.json"), ("/metrics", "metrics.txt")),
             "vllm": (("/metrics", "metrics.txt"),)}
SGLANG_GAUGE = "sglang:spec_accept_length"
VLLM_DRAFTS = "vllm:spec_decode_num_drafts_total"
VLLM_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
SPEED_BENCH_TYPE = "speed-bench-coding"      # AIPerf's --custom-dataset-type of SPEED-Bench's coding category
SPEED_BENCH_PROMPTS = 80                     # the category's prompts (spec inferencex-runner-results.md §6)
SPEED_BENCH_OSL = 4096
DOCUMENT_VERSION = 1


@dataclass(frozen=True)
class Measured:
    """What one window measured: the length (None when the engine reported none) and from which metric."""
    length: float | None
    source: str
    problem: str = ""

    def as_dict(self) -> dict:
        return {"acceptance-length": self.length, "source": self.source,
                **({"problem": self.problem} if self.problem else {})}


def snapshots(engine: str) -> tuple[tuple[str, str], ...]:
    """(path on the engine, file name) fetched before and after the client window; () for an engine
    without an acceptance metric."""
    return SNAPSHOTS.get(engine, ())


def prometheus(text: str) -> dict[str, float]:
    """Prometheus text exposition -> {metric name: sum over its label sets} (comments skipped)."""
    out: dict[str, float] = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        if math.isfinite(value):
            out[m.group(1)] = out.get(m.group(1), 0.0) + value
    return out


def _gauge_mean(text: str, name: str) -> float | None:
    values = []
    for line in (text or "").splitlines():
        m = re.match(rf"{re.escape(name)}(\{{[^}}]*\}})?\s+(\S+)", line.strip())
        if m:
            try:
                values.append(float(m.group(2)))
            except ValueError:
                pass
    values = [v for v in values if math.isfinite(v) and v > 0]
    return sum(values) / len(values) if values else None


def _sglang(after: dict[str, str | None]) -> Measured:
    info = after.get("server_info.json")
    if info:
        try:
            doc = json.loads(info)
        except ValueError:
            doc = None
        states = doc.get("internal_states") if isinstance(doc, dict) else None
        reported = [s.get("avg_spec_accept_length") for s in states or [] if isinstance(s, dict)]
        lengths = [float(v) for v in reported if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if lengths:
            return Measured(round(sum(lengths) / len(lengths), 4),
                            f"sglang /server_info internal_states[].avg_spec_accept_length ({len(lengths)} rank(s))")
    gauge = _gauge_mean(after.get("metrics.txt") or "", SGLANG_GAUGE)
    if gauge is not None:
        return Measured(round(gauge, 4), f"sglang /metrics {SGLANG_GAUGE}")
    return Measured(None, "sglang", "the engine reported no acceptance length: /server_info has no "
                                    "internal_states[].avg_spec_accept_length and /metrics no "
                                    f"{SGLANG_GAUGE} (is speculative decoding on, and --enable-metrics?)")


def _vllm(before: dict[str, str | None], after: dict[str, str | None]) -> Measured:
    a, b = prometheus(after.get("metrics.txt") or ""), prometheus(before.get("metrics.txt") or "")
    if VLLM_DRAFTS not in a or VLLM_ACCEPTED not in a:
        return Measured(None, "vllm", f"/metrics has no {VLLM_DRAFTS} / {VLLM_ACCEPTED} (is speculative "
                                      "decoding on?)")
    drafts = a[VLLM_DRAFTS] - b.get(VLLM_DRAFTS, 0.0)
    accepted = a[VLLM_ACCEPTED] - b.get(VLLM_ACCEPTED, 0.0)
    if drafts <= 0:
        return Measured(None, "vllm", f"{VLLM_DRAFTS} did not grow during the window: no speculative step ran")
    return Measured(round(1 + accepted / drafts, 4), f"vllm /metrics 1 + d({VLLM_ACCEPTED}) / d({VLLM_DRAFTS}) "
                                                     f"over the window ({drafts:g} drafts)")


def measure(engine: str, before: dict[str, str | None], after: dict[str, str | None]) -> Measured:
    """The acceptance length the engine reported for the window (file name -> body, None: no answer)."""
    if engine == "sglang":
        return _sglang(after)
    if engine == "vllm":
        return _vllm(before, after)
    return Measured(None, engine, f"engine {engine!r} publishes no acceptance metric ci-tools reads")


def check_range(m: Measured, mtp: int | None) -> Measured:
    """A length outside [1, mtp + 1] is no measurement (one verification emits at most mtp + 1 tokens)."""
    if m.length is None or mtp is None or 1 <= m.length <= mtp + 1:
        return m
    return replace(m, length=None, problem=f"the engine reported {m.length:g}, outside [1, mtp + 1 = {mtp + 1}]: "
                                           "not a measurement of this step count")


# ---- the collection point ----------------------------------------------------------------------

def spec_args(engine: str, args: dict[str, Any], mtp: int) -> dict[str, Any]:
    """The point's engine arguments with `mtp` speculative steps (SGLang: steps, and draft tokens
    steps + 1 at top-k 1; vLLM: num_speculative_tokens of --speculative-config)."""
    out = dict(args)
    if engine == "sglang":
        if "speculative-algorithm" not in out:
            raise InputError("the recipe serves no speculative decoding (no speculative-algorithm): there is no "
                             "acceptance length to measure")
        out["speculative-num-steps"] = mtp
        if int(out.get("speculative-eagle-topk") or 1) == 1:
            out["speculative-num-draft-tokens"] = mtp + 1
        return out
    if engine == "vllm":
        raw = out.get("speculative-config")
        try:
            cfg = json.loads(raw) if isinstance(raw, str) else dict(raw or {})
        except ValueError:
            raise InputError(f"the recipe's speculative-config is not JSON: {raw!r}") from None
        if not cfg:
            raise InputError("the recipe serves no speculative decoding (no speculative-config): there is no "
                             "acceptance length to measure")
        out["speculative-config"] = json.dumps({**cfg, "num_speculative_tokens": mtp}, separators=(",", ":"))
        return out
    raise InputError(f"engine {engine!r} publishes no acceptance metric ci-tools reads; measure an SGLang or vLLM "
                     "recipe")


def _drop(argv: list[str], flag: str, values: int = 1) -> list[str]:
    out, skip = [], 0
    for a in argv:
        if skip:
            skip -= 1
            continue
        if a == flag:
            skip = values
            continue
        out.append(a)
    return out


def _set(argv: list[str], flag: str, value: str) -> list[str]:
    if flag in argv:
        out = list(argv)
        out[out.index(flag) + 1] = value
        return out
    at = argv.index("--artifact-dir") if "--artifact-dir" in argv else len(argv)
    return argv[:at] + [flag, value] + argv[at:]


def speedbench_argv(argv: list[str], conc: int, thinking: bool, dataset_file: str | None,
                    requests: int = SPEED_BENCH_PROMPTS) -> list[str]:
    """The point's AIPerf command as the collection runs it: SPEED-Bench's coding prompts (its file on the
    runner; without one the command's own dataset, as offline tests run it), the thinking mode as the
    chat template's `enable_thinking`, a request count instead of a duration, no forced output length."""
    out = _drop(_drop(argv, "--benchmark-duration"), "--extra-inputs")
    if dataset_file:
        out = _drop(out, "--isl")
        out = _set(out, "--osl", str(SPEED_BENCH_OSL))
        out = _set(out, "--custom-dataset-type", SPEED_BENCH_TYPE)
        out = _set(out, "--input-file", dataset_file)
    out = _set(out, "--request-count", str(requests))
    out = _set(out, "--warmup-request-count", str(conc))
    return _set(out, "--extra-inputs", json.dumps({"chat_template_kwargs": {"enable_thinking": thinking}},
                                                  separators=(",", ":")))


def document(row: dict, m: Measured, run_url: str | None) -> dict:
    """`acceptance.json`: one collection cell, what `config acceptance-update` reads back."""
    return {"acceptance-version": DOCUMENT_VERSION, "id": row.get("id"), "model": row.get("model"),
            "engine": row.get("engine"), "engine-version": row.get("engine-version"), "dataset": row.get("dataset"),
            "thinking": row.get("thinking"), "mtp": row.get("mtp"), **m.as_dict(), "run": run_url}
