"""`results collect`: per-job result.json files -> one run-level collection.

Unlike InferenceX's collector (spec §9.4), invalid results are kept but marked, so that nothing
downstream (Pareto, tables, ingest) can mistake them for valid ones; duplicates of one point (a
re-run job uploading again) keep the last by file order and are reported.
"""

from __future__ import annotations

import json
from pathlib import Path

from ci_tools.errors import InputError
from ci_tools.results.process import RESULT_SCHEMA
from ci_tools.runner import layout


def find_results(roots: list[Path]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if root.is_file():
            found.append(root)
        elif root.is_dir():
            found.extend(sorted(root.rglob(layout.RESULT_JSON)))
        else:
            raise InputError(f"{root}: no such file or directory")
    return found


def incomplete(collection: dict, expect: int) -> str | None:
    """Why a sweep that planned `expect` points is not complete, or None (always None for 0)."""
    if expect <= 0:
        return None
    if collection["invalid"]:
        return f"{collection['invalid']} of its results are invalid"
    if collection["valid"] < expect:
        return f"{collection['valid']} valid results for the {expect} points planned"
    return None


def collect(files: list[Path]) -> dict:
    results: dict[str, dict] = {}
    sources: dict[str, str] = {}
    notes: list[str] = []
    for f in files:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except ValueError as exc:
            notes.append(f"{f}: skipped, not valid JSON ({exc})")
            continue
        if not isinstance(data, dict) or data.get("schema") != RESULT_SCHEMA:
            notes.append(f"{f}: skipped, not a {RESULT_SCHEMA} document")
            continue
        p = data.get("point") or {}
        key = p.get("result-filename") or f"{p.get('config-key')}/{p.get('name')}"
        if key in results:
            notes.append(f"{f}: replaces {sources[key]} for the same point {key}")
        results[key] = data
        sources[key] = str(f)
    ordered = sorted(results.values(), key=lambda r: (str(r["point"].get("config-key")), r["point"].get("tp") or 0,
                                                      r["point"].get("conc") or 0, str(r["point"].get("name"))))
    return {"schema": "ci-tools/results/v1",
            "valid": sum(1 for r in ordered if r.get("valid")),
            "invalid": sum(1 for r in ordered if not r.get("valid")),
            "notes": notes,
            "results": ordered}
