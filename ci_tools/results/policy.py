"""The `results:` section of ci-policy.yaml: how `results process` checks an export against itself
(pure; schema in ci_tools/schemas/ci-policy.schema.json, defaults below equal to the shipped policy).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ci_tools.errors import Finding


@dataclass(frozen=True)
class ResultsPolicy:
    # our statistic vs AIPerf's own summary of the same records: relative (both print the same
    # floating-point sums of the same values, so a real export agrees to 1e-15)
    summary_tolerance: float = 0.001
    # per record (crosscheck.py): ITL vs (E2EL - TTFT) / (OSL - 1), per-user rate vs 1 / ITL, relative
    record_tolerance: float = 0.001
    itl_outlier_factor: float = 100.0      # an ITL above this x the median ITL
    ttft_outlier_factor: float = 1000.0    # a TTFT above this x the median TTFT
    window_slack_s: float = 0.001          # records outside AIPerf's window by more: a timestamp was edited
    window_fill: float = 0.98              # fixed-count windows: the records span at least this share of it
    concurrency_slack: int = 0             # requests in flight above the configured concurrency

    @classmethod
    def from_mapping(cls, data: dict | None) -> "ResultsPolicy":
        data = data or {}
        return cls(**{f.name: data[f.name.replace("_", "-")] for f in fields(cls) if f.name.replace("_", "-") in data})


def section_findings(doc) -> list[Finding]:
    """The policy's `results:` section (a `YamlDoc`) against its schema."""
    from ci_tools.config.schemas import policy_section_findings

    return policy_section_findings(doc, "results")


def config_findings(checked, findings: list[Finding]) -> list[Finding]:
    """`config validate`'s check of the policy's `results:` section (a `config.validate.UpperCheck`)."""
    return section_findings(checked.src.policy) if checked.src.policy is not None else []
