"""Physical invariants of one AIPerf record (pure; issue 35).

AIPerf measures a streamed request once, in integer nanoseconds of one clock, and derives every other
figure of its record from those readings, so a record edited after the run contradicts itself unless
every derived figure is rewritten with it. Each rule below is checked on every successful profiling
record by the reader (`record_batches.py`, element-wise with numpy, a batch of records at a time) and counted
with its first example; `failures` turns the counts into results'
failures naming both values. Measured on every real export at hand (in tests/data: a stub server's AIPerf
0.13 export and the four H100 job directories of vLLM, 3,545 records;
docs/reference.md, "Result checks", gives the figures):

- `record-decode`: `decode_duration` = E2EL - TTFT = sum(`inter_chunk_latency`) (AIPerf: decode
  duration is request latency minus TTFT; the chunk gaps run from the first content chunk to the
  last), within `record-tolerance`, relative (measured: 3e-15);
- `record-chunks`: len(`inter_chunk_latency`) <= OSL - 1: a content chunk carries at least one token
  (measured: equal on one token per chunk, up to 44 fewer chunks where vLLM joined tokens);
- `record-span`: `request_end_ns - request_start_ns` - E2EL, the time from the last content chunk to
  the end of the stream, lies in [0, `span-tail-ms` + `span-tail-itl` x ITL] (TTFT for a one-token
  response; measured: 0 to 7.97 ms, at most 2.41 x ITL);
- `record-ack`: the server acknowledged the request no earlier than it started and no later than its
  first token, and AIPerf issued its credit no later than it started (measured margins >= 0.5 ms);
- `record-isl`: ISL = `usage_prompt_tokens` (AIPerf takes it from the server with
  --use-server-token-count, which the echo rules require);
- `record-tokens`: OSL = `usage_completion_tokens`;
- `record-itl`: ITL = (E2EL - TTFT) / (OSL - 1) within `record-tolerance`;
- `record-rate`: `output_token_throughput_per_user` = 1000 / ITL, `prefill_throughput_per_user` =
  1000 ISL / TTFT, `e2e_output_token_throughput` = 1000 OSL / E2EL, within `record-tolerance`;
- `record-missing`: a figure AIPerf 0.13 writes on every streamed record is absent (a check a
  deletion would switch off), the record's credit number (`session_num`) included.

An absent optional reading (`request_ack_ns`, `credit_issued_ns`) leaves its part of `record-ack`
unchecked: AIPerf writes them only where the transport has them.

Every expression is written once, over numpy arrays of a batch's figures: comparisons with NaN are
false, and each record's verdict is its own (tests/results/test_invariants.py checks a batch against
its records one by one, under Hypothesis).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import reduce
from operator import or_
from typing import Iterator, Sequence

import numpy as np

from ci_tools.errors import Failure

# A latency AIPerf writes is an integer of nanoseconds divided by 1e6: one nanosecond is its resolution,
# and the floor under a relative tolerance (a zero decode duration has nothing to be relative to).
NS_MS = 1e-6
# The request's own timestamps are integers of nanoseconds taken on the same clock as its latencies
# (AIPerf converts each from perf_counter_ns): a microsecond absorbs every rounding of the ms floats.
CLOCK_MS = 1e-3

# (rule, what it says) in the order failures are listed
RULES = (
    ("record-decode", "whose decode duration disagrees with E2EL - TTFT or its chunk gaps"),
    ("record-chunks", "with more chunk gaps than tokens after the first"),
    ("record-span", "whose own timestamps disagree with its request latency"),
    ("record-ack", "acknowledged before they started or after their first token, or started before their credit"),
    ("record-isl", "whose ISL disagrees with the server's usage_prompt_tokens"),
    ("record-tokens", "whose output length disagrees with the server"),
    ("record-itl", "whose ITL disagrees with its other values"),
    ("record-rate", "whose per-user rates disagree with their latencies"),
    ("record-missing", "lacking a figure AIPerf writes on every streamed record"),
)
RULE_NAMES = tuple(name for name, _ in RULES)


@dataclass
class Values:
    """The per-record figures the rules read, a batch's as equal-length float64 arrays, as the reader
    hands them over (ms, tokens, tokens/s; NaN where the record has none): the request's timestamps
    enter only as differences in ms."""

    span_ms: np.ndarray
    ack_ms: np.ndarray
    lead_ms: np.ndarray
    ttft: np.ndarray
    itl: np.ndarray
    e2el: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    usage_isl: np.ndarray
    usage_osl: np.ndarray
    otpu: np.ndarray
    prefill: np.ndarray
    e2e_rate: np.ndarray
    decode: np.ndarray
    icl_sum: np.ndarray
    icl_len: np.ndarray
    session: np.ndarray


FIELDS = tuple(f.name for f in fields(Values))


@dataclass(frozen=True)
class Limits:
    """The policy's tolerances the rules apply (ResultsPolicy.limits())."""

    relative: float = 1e-6        # record-tolerance
    tail_ms: float = 5.0          # span-tail-ms
    tail_itl: float = 4.0         # span-tail-itl


def _close(a: np.ndarray, b: np.ndarray, rel: float) -> np.ndarray:
    """|a - b| within rel of |b| plus a nanosecond: false for NaN and infinity."""
    return abs(a - b) <= rel * abs(b) + NS_MS


def checks(v: Values, lim: Limits) -> Iterator[tuple[str, np.ndarray]]:
    """(rule, ok per record) per rule. An absent witness (NaN) passes here; `missing` is what counts it.
    The reader only hands over records `record_fields.record_problem` accepted: TTFT, E2EL > 0 and finite,
    OSL >= 1, ITL > 0 or NaN."""
    rel = lim.relative
    dd = v.e2el - v.ttft
    no_chunks = v.icl_len == 0
    yield "record-decode", ((np.isnan(v.decode) | _close(v.decode, dd, rel))
                            & (no_chunks | _close(v.icl_sum, dd, rel)))
    yield "record-chunks", no_chunks | (v.icl_len <= v.osl - 1)
    tail = v.span_ms - v.e2el
    one_token = np.isnan(v.itl)
    yield "record-span", (tail >= -CLOCK_MS) & (tail <= lim.tail_ms + lim.tail_itl * np.where(one_token, v.ttft, v.itl))
    yield "record-ack", ((np.isnan(v.ack_ms) | ((v.ack_ms >= -CLOCK_MS) & (v.ack_ms <= v.ttft + CLOCK_MS)))
                         & (np.isnan(v.lead_ms) | (v.lead_ms >= -CLOCK_MS)))
    yield "record-isl", np.isnan(v.usage_isl) | (v.usage_isl == v.isl)
    yield "record-tokens", np.isnan(v.usage_osl) | (v.usage_osl == v.osl)
    several = v.osl > 1
    per_token = dd / np.where(several, v.osl - 1, 1.0)
    yield "record-itl", one_token | _close(v.itl, per_token, rel)
    yield "record-rate", ((one_token | np.isnan(v.otpu) | _close(v.otpu, 1000.0 / np.where(one_token, 1.0, v.itl), rel))
                          & (np.isnan(v.prefill) | _close(v.prefill, 1000.0 * v.isl / v.ttft, rel))
                          & (np.isnan(v.e2e_rate) | _close(v.e2e_rate, 1000.0 * v.osl / v.e2el, rel)))


def missing(v: Values) -> list[tuple[str, np.ndarray]]:
    """(figure, lacking per record) for the figures AIPerf 0.13 writes on every streamed record that has
    what it is derived from."""
    isnan = np.isnan
    return [("decode_duration", isnan(v.decode)),
            # a response after the first token: at least two content chunks
            ("inter_chunk_latency", (v.icl_len == 0) & (v.e2el > v.ttft)),
            ("usage_prompt_tokens", isnan(v.usage_isl)),
            ("usage_completion_tokens", isnan(v.usage_osl)),
            ("output_token_throughput_per_user", isnan(v.otpu) & ~isnan(v.itl)),
            ("prefill_throughput_per_user", isnan(v.prefill)),
            ("e2e_output_token_throughput", isnan(v.e2e_rate)),
            ("session_num", isnan(v.session))]


def verdicts(v: Values, lim: Limits) -> tuple[list[tuple[str, np.ndarray]], list[tuple[str, np.ndarray]]]:
    """((rule, ok per record) for every rule, `record-missing` last; (figure, lacking per record))."""
    with np.errstate(all="ignore"):
        gone = missing(v)
        return [*checks(v, lim), ("record-missing", ~reduce(or_, (mask for _, mask in gone)))], gone


def tally(into: dict, v: Values, lines: Sequence[int], lim: Limits) -> None:
    """Note in `into` the records of a batch (`lines`: each one's line) that break each rule, the first
    one's figures as the example."""
    rules, gone = verdicts(v, lim)
    for rule, ok in rules:
        bad = ~ok
        count = int(bad.sum())
        if count:
            i = int(bad.argmax())
            example: dict = {name: float(getattr(v, name)[i]) for name in FIELDS}
            example["missing"] = ", ".join(name for name, lacking in gone if lacking[i])
            note(into, rule, count, lines[i], example)


def record_verdicts(values: dict, lim: Limits) -> tuple[list[str], list[str]]:
    """(rules one record breaks, figures it lacks): `values` holds FIELDS as floats."""
    rules, gone = verdicts(Values(**{k: np.array([values[k]], dtype=np.float64) for k in FIELDS}), lim)
    return [rule for rule, ok in rules if not ok[0]], [name for name, lacking in gone if lacking[0]]


# ---- the tally the reader keeps, and the failures it becomes --------------------------------------

def note(tally: dict, rule: str, count: int, line: int, example: dict) -> None:
    """Add `count` records breaking `rule`; the first one's line and figures are kept as its example."""
    entry = tally.get(rule)
    if entry is None:
        tally[rule] = [count, line, example]
    else:
        entry[0] += count


def merge(into: dict, other: dict, line_offset: int) -> None:
    """A later part's tally into an earlier one's (its line numbers made absolute)."""
    for rule, (count, line, example) in other.items():
        if rule in into:
            into[rule][0] += count
        else:
            into[rule] = [count, line + line_offset, example]


def _g(x: float) -> str:
    return f"{x:.9g}" if isinstance(x, float) else str(x)


def _example(rule: str, e: dict, lim: Limits) -> str:
    dd = e["e2el"] - e["ttft"]
    if rule == "record-decode":
        return (f"decode_duration {_g(e['decode'])} ms and the sum of its {int(e['icl_len'])} chunk gaps "
                f"{_g(e['icl_sum'])} ms where E2EL - TTFT = {_g(e['e2el'])} - "
                f"{_g(e['ttft'])} = {_g(dd)} ms")
    if rule == "record-chunks":
        return f"{int(e['icl_len'])} chunk gaps for an OSL of {_g(e['osl'])} (at most {_g(e['osl'] - 1)})"
    if rule == "record-span":
        one = math.isnan(e["itl"])
        bound = lim.tail_ms + lim.tail_itl * (e["ttft"] if one else e["itl"])
        return (f"request_end_ns - request_start_ns = {_g(e['span_ms'])} ms where its request_latency is "
                f"{_g(e['e2el'])} ms: the stream ends {_g(e['span_ms'] - e['e2el'])} ms after its last chunk, "
                f"outside [0, {_g(bound)}] ms (span-tail-ms {lim.tail_ms:g} + span-tail-itl {lim.tail_itl:g} x "
                f"{'TTFT' if one else 'ITL'})")
    if rule == "record-ack":
        return (f"request_ack_ns - request_start_ns = {_g(e['ack_ms'])} ms with a TTFT of {_g(e['ttft'])} ms, "
                f"request_start_ns - credit_issued_ns = {_g(e['lead_ms'])} ms")
    if rule == "record-isl":
        return f"ISL {_g(e['isl'])} where the server's usage says {_g(e['usage_isl'])} prompt tokens"
    if rule == "record-tokens":
        return f"OSL {_g(e['osl'])} where the server's usage says {_g(e['usage_osl'])} completion tokens"
    if rule == "record-itl":
        return (f"ITL {_g(e['itl'])} ms where (E2EL - TTFT) / (OSL - 1) = ({_g(e['e2el'])} - {_g(e['ttft'])}) / "
                f"{_g(e['osl'] - 1)} = {_g(dd / max(e['osl'] - 1, 1.0))} ms")
    if rule == "record-rate":
        itl = e["itl"]
        parts = [f"prefill_throughput_per_user {_g(e['prefill'])} where 1000 ISL / TTFT = "
                 f"{_g(1000.0 * e['isl'] / e['ttft'])}",
                 f"e2e_output_token_throughput {_g(e['e2e_rate'])} where 1000 OSL / E2EL = "
                 f"{_g(1000.0 * e['osl'] / e['e2el'])}"]
        if not math.isnan(itl):
            parts.insert(0, f"output_token_throughput_per_user {_g(e['otpu'])} where 1000 / ITL = {_g(1000.0 / itl)}")
        return "; ".join(parts)
    raise ValueError(rule)


def failures(tally: dict, lim: Limits) -> list[Failure]:
    """One failure per rule some record breaks: how many, and the first such record's figures."""
    out = []
    for rule, what in RULES:
        if rule not in tally:
            continue
        count, line, example = tally[rule]
        head = f"{count} record{'s' if count != 1 else ''} {what}: e.g. line {line}: "
        if rule == "record-missing":
            out.append(Failure(rule, head + f"no {example.get('missing', '?')}; AIPerf 0.13 writes it on every streamed "
                                            "record, so it was removed after the run or the export is not AIPerf's"))
            continue
        tol = f" (record-tolerance {lim.relative:g} relative)" if rule in ("record-decode", "record-itl",
                                                                          "record-rate") else ""
        why = ("the server counted the tokens, so a count was edited after the run" if rule in ("record-isl", "record-tokens")
               else "AIPerf derives these from the same clock readings, so a figure was edited after the run")
        out.append(Failure(rule, head + _example(rule, example, lim) + tol + "; " + why))
    return out
