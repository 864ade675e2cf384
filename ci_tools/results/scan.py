"""What one pass over AIPerf's `profile_export.jsonl` yields (pure data; `records.py` fills it).

`RecordScan` holds the per-record columns and counters the metrics and validity rules read, and
the two lists of reasons a profiling record is left out of the successful set S. It lives apart
from the reader so that `metrics.py` and `validity.py` (core) depend on the data, not on the file
reader.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field, fields
from operator import truediv

# Why a profiling record without an error is left out of S. BROKEN: a value no real request can have
# (a clock or counter is wrong, so no number from the export can be trusted). DEGRADED: a value is
# missing, which a few requests may legitimately lack.
BROKEN = ("no-phase", "bad-unit", "bad-timestamps", "bad-token-counts", "bad-latency", "bad-ttft", "nonpositive-itl",
          "bad-value")
DEGRADED = ("missing-timestamps", "missing-latency", "missing-ttft", "missing-itl", "zero-output")


@dataclass
class RecordScan:
    """What one pass over profile_export.jsonl yields (columns are per successful record)."""

    records_total: int = 0
    records_profiled: int = 0
    records_warmup_dropped: int = 0
    records_error_dropped: int = 0
    bad_lines: list[int] = field(default_factory=list)  # 1-based line numbers that are not JSON objects
    phases: dict[str, int] = field(default_factory=dict)  # every phase seen, with its count
    error_categories: dict[str, int] = field(default_factory=dict)
    excluded: dict[str, int] = field(default_factory=dict)  # reason -> records left out of S
    itl_undefined: int = 0  # one-token responses in S: no ITL sample
    ttft_ms: array = field(default_factory=lambda: array("d"))
    itl_ms: array = field(default_factory=lambda: array("d"))
    e2el_ms: array = field(default_factory=lambda: array("d"))
    isl_sum: float = 0.0
    osl_sum: float = 0.0
    isl_count: int = 0
    osl_count: int = 0
    # what the cross-checks read (crosscheck.py, summary.py), one per successful record in file order:
    osl: array = field(default_factory=lambda: array("f"))
    isl: array = field(default_factory=lambda: array("f"))
    otpu: array = field(default_factory=lambda: array("f"))        # AIPerf's output_token_throughput_per_user, NaN: none
    start_ns: array = field(default_factory=lambda: array("q"))
    end_ns: array = field(default_factory=lambda: array("q"))
    request_ids: array = field(default_factory=lambda: array("q"))  # hash of x_request_id, where there is one
    sessions: array = field(default_factory=lambda: array("q"))     # AIPerf's credit number (session_num), where there is one
    ids_missing: int = 0
    # the per-record invariants (invariants.py), checked as the records are read: rule -> [records
    # breaking it, the first one's line, its figures]
    violations: dict[str, list] = field(default_factory=dict)
    icl_count: int = 0        # inter_chunk_latency values of the successful records
    icl_ns: int = 0           # their sum, each record's rounded to whole ns (AIPerf's unit): exact in any order
    unit_problems: dict[str, int] = field(default_factory=dict)    # "metric in 'unit'" -> records refused
    start_ns_min: int | None = None
    end_ns_max: int | None = None
    fast_lines: int = 0  # how many lines the fast path handled (for the benchmark and tests)
    column_records: int = 0  # of those, how many were added by columns rather than record by record
    lines_read: int = 0  # blank lines included: the line-number offset of the next range

    @property
    def e2e_per_token_ms(self) -> array:
        """E2EL_i / OSL_i of each record, computed when asked rather than held (8 bytes a record less)."""
        return array("d", map(truediv, self.e2el_ms, self.osl))

    @property
    def profiling_total(self) -> int:
        """Every profiling record, successful, failed or left out for a reason (what AIPerf sent)."""
        return self.records_profiled + self.records_error_dropped + sum(
            n for reason, n in self.excluded.items() if reason not in ("warmup", "error"))

    @property
    def records_dropped_total(self) -> int:
        return self.records_warmup_dropped + self.records_error_dropped

    def accounting(self) -> dict:
        return {
            "records_total": self.records_total,
            "records_profiled": self.records_profiled,
            "records_dropped_total": self.records_dropped_total,
            "records_warmup_dropped": self.records_warmup_dropped,
            "records_error_dropped": self.records_error_dropped,
            "error_categories": dict(sorted(self.error_categories.items())),
            "phases": dict(sorted(self.phases.items())),
            "excluded": dict(sorted(self.excluded.items())),
            "itl_undefined": self.itl_undefined,
        }


# The per-record columns (the `array` fields), derived so that a column added to RecordScan is merged
# and spilled by the parallel reader like the others rather than silently left behind.
COLUMNS = tuple(f.name for f in fields(RecordScan) if f.type == "array")
