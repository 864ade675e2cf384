"""The units AIPerf writes beside its numbers, and the factor that brings each into the unit ci-tools
computes in (pure; issue 25).

Every metric of an AIPerf export carries a `unit` (`{"value": 2.23, "unit": "ms"}` per record, `"unit"`
beside the statistics in the summary). ci-tools computes latencies in milliseconds, durations in
seconds, counts in tokens and rates in tokens per second, so a value is multiplied by the factor of its
unit. A unit this table does not hold is refused (the result is invalid, naming metric and unit), never
read as if it were the usual one: an ITL written in seconds and read as milliseconds made the P90
interactivity 1000x. A value without a unit (hand-written records, a bare number) is read in the usual
unit of its metric: AIPerf itself always writes one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scale:
    """The units one kind of figure may be written in: unit -> factor into `usual`."""

    usual: str
    factors: tuple[tuple[str, float], ...]

    def factor(self, unit: object) -> float | None:
        """The factor of `unit` (1.0 without a unit), None when it is not one of this scale's units."""
        if unit is None:
            return 1.0
        if not isinstance(unit, str):
            return None
        return dict(self.factors).get(unit)


MILLISECONDS = Scale("ms", (("ms", 1.0), ("s", 1e3), ("sec", 1e3), ("us", 1e-3), ("ns", 1e-6)))
SECONDS = Scale("sec", (("sec", 1.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)))
TOKENS = Scale("tokens", (("tokens", 1.0),))
TOKENS_PER_USER = Scale("tokens/sec/user", (("tokens/sec/user", 1.0),))
TOKENS_PER_SECOND = Scale("tokens/sec", (("tokens/sec", 1.0),))
REQUESTS = Scale("requests", (("requests", 1.0),))
REQUESTS_PER_SECOND = Scale("requests/sec", (("requests/sec", 1.0),))

# per-record metrics ci-tools reads, and the scale each is written in
RECORD_UNITS = {
    "time_to_first_token": MILLISECONDS,
    "inter_token_latency": MILLISECONDS,
    "request_latency": MILLISECONDS,
    "input_sequence_length": TOKENS,
    "output_sequence_length": TOKENS,
    "usage_completion_tokens": TOKENS,
    "output_token_throughput_per_user": TOKENS_PER_USER,
    # read only to check the record against itself (invariants.py)
    "usage_prompt_tokens": TOKENS,
    "prefill_throughput_per_user": TOKENS_PER_USER,
    "e2e_output_token_throughput": TOKENS_PER_USER,
    "decode_duration": MILLISECONDS,
    "inter_chunk_latency": MILLISECONDS,
}


def shown(unit: object) -> str:
    """A unit as a message quotes it (whatever a corrupt file holds, in at most 40 characters)."""
    text = repr(unit)
    return text if len(text) <= 40 else text[:37] + "..."
