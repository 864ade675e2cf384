"""Reading the eval files (shell): the thresholds file, located and schema-checked by `thresholds.from_doc`;
an eval job's JSON files, leniently (`json_object_or_none`)."""

from __future__ import annotations

import json
from pathlib import Path

from ci_tools import names
from ci_tools.errors import Finding, InputError
from ci_tools.evals.thresholds import Thresholds, from_doc
from ci_tools.yaml.load import load_yaml_file


def load_thresholds(path: Path, display: str | None = None) -> Thresholds:
    """The thresholds file; a missing or invalid one is an InputError saying where and how to fix it."""
    if not path.is_file():
        raise InputError(f"{display or path}: eval thresholds file not found", findings=[Finding(
            display or str(path), None, None, "eval thresholds file not found",
            f"pass --thresholds FILE, or run from the repository root (it holds {names.EVAL_THRESHOLDS})")])
    return from_doc(load_yaml_file(path, display or str(path)))


def json_object_or_none(path: Path) -> dict | None:
    """A JSON object from PATH, or None when it is absent, unreadable, not JSON or not an object
    (the eval files: a missing or broken one is judged by the rules, not raised here)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def load_acceptance_tolerance(policy_path: Path | None) -> float:
    """The policy's `acceptance.tolerance` (--policy; else inferencex-e2e/ci-policy.yaml here; else
    ci-tools' default policy), schema-checked: a bad key or value is a located error, never ignored."""
    from ci_tools.evals.acceptance import section_findings, tolerance_of
    from ci_tools.sweep.load import policy_section

    return tolerance_of(policy_section(policy_path, "acceptance", section_findings))
