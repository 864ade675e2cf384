"""The `results:` section of ci-policy.yaml: how `results process` checks an export against itself
(pure; schema in ci_tools/schemas/ci-policy.schema.json, defaults below equal to the shipped policy).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ci_tools.errors import Finding
from ci_tools.results.invariants import Limits


@dataclass(frozen=True)
class ResultsPolicy:
    # our statistic vs AIPerf's own summary of the same records: relative (both print the same
    # floating-point sums of the same values, so a real export agrees to 1e-15)
    summary_tolerance: float = 0.001
    # per record (invariants.py): what AIPerf derives from one record's clock readings (ITL, decode
    # duration, the sum of the chunk gaps, the per-user rates) against the readings, relative (a real
    # export agrees to 3e-15)
    record_tolerance: float = 1e-6
    # the stream's end after its last content chunk (request_end_ns - request_start_ns - E2EL): at most
    # this many ms plus span-tail-itl x the record's ITL (measured: 0 to 7.97 ms, at most 2.41 x ITL)
    span_tail_ms: float = 5.0
    span_tail_itl: float = 4.0
    # AIPerf's benchmark_duration against the records' first start to last response (it is that
    # difference: measured within 9e-8 s)
    duration_slack_s: float = 0.001
    itl_outlier_factor: float = 100.0      # an ITL above this x the median ITL
    ttft_outlier_factor: float = 1000.0    # a TTFT above this x the median TTFT
    window_slack_s: float = 0.001          # records outside AIPerf's window by more: a timestamp was edited
    window_fill: float = 0.98              # fixed-count windows: the records span at least this share of it
    concurrency_slack: int = 0             # requests in flight above the configured concurrency

    def limits(self) -> Limits:
        """The tolerances the reader applies to every record (invariants.py)."""
        return Limits(relative=self.record_tolerance, tail_ms=self.span_tail_ms, tail_itl=self.span_tail_itl)

    @classmethod
    def from_mapping(cls, data: object) -> "ResultsPolicy":
        """The policy file's `results:` section (schema-checked by `section_findings`); None: the defaults."""
        data = data if isinstance(data, dict) else {}
        return cls(**{f.name: data[f.name.replace("_", "-")] for f in fields(cls) if f.name.replace("_", "-") in data})


def section_findings(doc) -> list[Finding]:
    """The policy's `results:` section (a `YamlDoc`) against its schema."""
    from ci_tools.config.schemas import policy_section_findings

    return policy_section_findings(doc, "results")


def config_findings(checked, findings: list[Finding]) -> list[Finding]:
    """`config validate`'s check of the policy's `results:` section (a `config.validate.UpperCheck`)."""
    return section_findings(checked.src.policy) if checked.src.policy is not None else []
