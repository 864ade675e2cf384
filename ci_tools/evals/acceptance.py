"""Measured against synthetic acceptance on an eval row (pure).

Throughput rows of a speculative recipe replay a fixed acceptance length (the recipe's
`synthetic-acceptance`, from inferencex-e2e/acceptance-lengths.yaml); the eval row of the same point
runs real verification, and the runner reads the engine's own acceptance metrics around it
(runner/acceptance.py: SGLang /server_info `avg_spec_accept_length` or `sglang:spec_accept_length`,
vLLM's spec-decode counters) into the job's acceptance.json. `results process` sets the two side by
side on the eval result and warns when they are further apart than the policy's
`acceptance.tolerance` (relative to the synthetic length): the throughput numbers then replay a
speed the engine does not reach on this point's traffic, or the reference is stale.

SGLang's `avg_spec_accept_length` is averaged over the server's life, warmup and readiness requests
included; vLLM's is the counters' difference over the eval window only.
"""

from __future__ import annotations

import math
from typing import Any

from ci_tools.errors import Finding

DEFAULT_TOLERANCE = 0.10


def tolerance_of(section: Any) -> float:
    """The `acceptance:` section's `tolerance` (schema-checked by `section_findings`), else the default."""
    value = section.get("tolerance") if isinstance(section, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else DEFAULT_TOLERANCE


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def compare(synthetic: Any, measured: dict | None, tolerance: float) -> dict | None:
    """The eval result's acceptance record: the synthetic length the throughput rows replay, the one the
    engine measured on this row (`measured`: the job's acceptance.json, None when it wrote none), their
    relative difference and, past `tolerance`, a warning. None for a point with neither."""
    syn = _number(synthetic)
    if syn is None and measured is None:
        return None
    length = _number((measured or {}).get("acceptance-length"))
    source = (measured or {}).get("source")
    record: dict = {"synthetic": syn, "measured": length, "measured-source": source if length is not None else None,
                    "tolerance": tolerance, "difference": None, "agrees": None, "warning": None}
    if length is None:
        why = (measured or {}).get("problem") or ("the job wrote no acceptance.json" if measured is None
                                                   else "acceptance.json holds no length")
        record["not-measured"] = str(why)
        return record
    if syn is None:
        return record    # real speculation everywhere: nothing replayed to check
    diff = (length - syn) / syn
    record["difference"] = round(diff, 4)
    record["agrees"] = abs(diff) <= tolerance + 1e-12
    if not record["agrees"]:
        record["warning"] = (
            f"measured acceptance length {length:g} ({source}) is {abs(diff):.1%} "
            f"{'below' if diff < 0 else 'above'} the synthetic {syn:g} the throughput rows replay (tolerance "
            f"{tolerance:.0%}): their numbers assume a speed the engine does not reach on this point; re-measure "
            "the reference (`config acceptance-update`) or set the recipe's synthetic-acceptance to it")
    return record


def section_findings(doc) -> list[Finding]:
    """The policy's `acceptance:` section (a `YamlDoc`) against its schema."""
    from ci_tools.config.schemas import policy_section_findings

    return policy_section_findings(doc, "acceptance")


def config_findings(checked, findings: list[Finding]) -> list[Finding]:
    """`config validate`'s check of the policy's `acceptance:` section (a `config.validate.UpperCheck`)."""
    return section_findings(checked.src.policy) if checked.src.policy is not None else []
