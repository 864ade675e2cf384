"""`results collect`: per-job result.json files -> one run-level collection.

Unlike InferenceX's collector (spec §9.4), invalid results are kept but marked, so that nothing
downstream (Pareto, tables, ingest) can mistake them for valid ones; duplicates of one point (a
re-run job uploading again) keep the last by file order and are reported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ci_tools.errors import InputError
from ci_tools.results.process import RESULT_SCHEMA
from ci_tools import names


def find_results(roots: list[Path], name: str = names.RESULT_JSON) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if root.is_file():
            if root.name == name or name == names.RESULT_JSON and root.name != names.EVAL_RESULT_JSON:
                found.append(root)
        elif root.is_dir():
            found.extend(sorted(root.rglob(name)))
        else:
            raise InputError(f"{root}: no such file or directory", exit_code=2)
    return found


def find_plan(roots: list[Path]) -> Path | None:
    """The sweep's plan: plan.json inside a downloaded changelog-metadata artifact (the first found)."""
    for root in roots:
        if root.is_dir():
            for path in sorted(root.rglob(names.PLAN_JSON)):
                if path.parent.name == names.CHANGELOG_METADATA:
                    return path
    return None


def _documents(files: list[Path], schema: str, notes: list[str]) -> Iterator[tuple[Path, dict]]:
    """The files that hold a `schema` document, each with its data; a note for every other one."""
    for f in files:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except ValueError as exc:
            notes.append(f"{f}: skipped, not valid JSON ({exc})")
            continue
        if not isinstance(data, dict) or data.get("schema") != schema:
            notes.append(f"{f}: skipped, not a {schema} document")
            continue
        yield f, data


def collect_evals(files: list[Path], plan: dict | None) -> tuple[list[dict], dict, list[str]]:
    """Eval results (ci-tools/eval-result/v1), the run's eval verdict, notes on skipped files."""
    from ci_tools.evals.gate import planned_eval_rows, point_key, verdict
    from ci_tools.evals.score import EVAL_RESULT_SCHEMA

    evals: dict[tuple, dict] = {}
    notes: list[str] = []
    for f, data in _documents(files, EVAL_RESULT_SCHEMA, notes):
        key = point_key(data.get("point") or {})
        if key in evals:
            notes.append(f"{f}: replaces an earlier eval result for the same point")
        evals[key] = data
    ordered = sorted(evals.values(), key=lambda e: str(point_key(e.get("point") or {})))
    return ordered, verdict(planned_eval_rows(plan) if plan is not None else None, ordered), notes


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
    for f, data in _documents(files, RESULT_SCHEMA, notes):
        p = data.get("point") or {}
        key = p.get("result-filename") or f"{p.get('config-key')}/{p.get('name')}"
        if key in results:
            notes.append(f"{f}: replaces {sources[key]} for the same point {key}")
        results[key] = data
        sources[key] = str(f)
    smoke = {k: r for k, r in results.items() if (r.get("point") or {}).get("canary") == "smoke"}
    for k in smoke:
        del results[k]
        notes.append(f"{sources[k]}: a canary smoke run (profile {(smoke[k].get('point') or {}).get('profile')}), "
                     "kept under `canaries`, not among the results: the point is measured by its own job")
    ordered = sorted(results.values(), key=lambda r: (str(r["point"].get("config-key")), r["point"].get("tp") or 0,
                                                      r["point"].get("conc") or 0, str(r["point"].get("name"))))
    return {"schema": "ci-tools/results/v1",
            "valid": sum(1 for r in ordered if r.get("valid")),
            "invalid": sum(1 for r in ordered if not r.get("valid")),
            "notes": notes,
            "results": ordered,
            "canaries": [smoke[k] for k in sorted(smoke)]}
