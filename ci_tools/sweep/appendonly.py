"""Append-only changelog entries: run only the points a PR adds to existing curves (spec §3.4.2-3.4.3).

Pure functions over rows and master entries; messages follow InferenceX's so people who know one
recognise the other, with the config named where InferenceX leaves it out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ci_tools.errors import InputError
from ci_tools.sweep.matrix import KeyedRow, row_key
from ci_tools.sweep.row import MatrixRow, MultiNodeRow

_CURVE_EXCLUDED = frozenset({"conc", "exp-name", "recipe-fingerprint"})


def curve_key(row: Mapping[str, Any]) -> tuple:
    return row_key(row, _CURVE_EXCLUDED)


def _concs(row: MatrixRow) -> tuple[int, ...]:
    c = row.get("conc")          # as the master wrote it: checked here
    if isinstance(c, int) and not isinstance(c, bool):
        return (c,)
    if isinstance(c, list) and c and all(isinstance(x, int) and not isinstance(x, bool) for x in c):
        return tuple(c)
    raise InputError(f"append-only matrix entry has invalid concurrency value: {c!r}")


def _series(row: MatrixRow) -> tuple:
    agentic = row.is_agentic
    kv = row.kv_offloading
    workers = (row.prefill.hardware, row.decode.hardware) if isinstance(row, MultiNodeRow) else (None, None)
    return (row.model, row.model_prefix, row.precision, row.framework, row.runner, row.disagg,
            "agentic_traces" if agentic else "single_turn", row.isl, row.osl,
            "on" if kv not in (None, "none") else "off", "" if agentic else row.spec_decoding, *workers)


def append_only_delta(base_rows: list[KeyedRow], head_rows: list[KeyedRow]) -> list[KeyedRow]:
    """The head rows' points that the base revision did not have; refuses removals and edits."""
    if not base_rows:
        raise InputError("append-only requires an existing curve in the base revision")
    base: dict[tuple, set[int]] = {}
    for r in base_rows:
        base.setdefault(curve_key(r.row), set()).update(_concs(r.row))
    head: dict[tuple, set[int]] = {}
    for r in head_rows:
        head.setdefault(curve_key(r.row), set()).update(_concs(r.row))
    for key, concs in base.items():
        if key not in head:
            raise InputError("append-only may not remove or modify existing generated recipes")
        missing = sorted(concs - head[key])
        if missing:
            raise InputError(f"append-only may not remove existing concurrency points: {missing}")
    emitted: dict[tuple, set[int]] = {}
    delta: list[KeyedRow] = []
    for r in head_rows:
        key = curve_key(r.row)
        seen = emitted.setdefault(key, set())
        old = base.get(key, set())
        new: list[int] = []
        for c in _concs(r.row):
            if c not in old and c not in seen:
                seen.add(c)
                new.append(c)
        if not new:
            continue
        if isinstance(r.row, MultiNodeRow):
            delta.append(KeyedRow(r.key, r.row.replace(conc=new)))
        else:
            delta.append(r)
    if not delta:
        raise InputError("append-only did not add any generated points")
    images: dict[tuple, set] = {}
    for r in base_rows:
        images.setdefault(_series(r.row), set()).add(r.row.get("image"))
    for r in delta:
        found = images.get(_series(r.row), set())
        if len(found) != 1 or None in found or r.row.get("image") not in found:
            raise InputError(f"{r.key}: append-only additions must belong to an existing visual curve with one "
                             "unchanged non-null image")
    return delta


def validate_scope(base_master: Mapping[str, Any], head_master: Mapping[str, Any], selected: Mapping[str, tuple]) -> None:
    """`selected`: config key -> the scenario types its append-only entry covers."""
    missing = sorted(k for k in selected if k not in base_master)
    if missing:
        raise InputError(f"append-only requires every selected config to exist in the base revision; missing: {missing}")
    changed = sorted(k for k in set(base_master) | set(head_master)
                     if k not in selected and base_master.get(k) != head_master.get(k))
    if changed:
        raise InputError(f"append-only PR changed configs not selected by its changelog entry: {changed}")
    for key, scenarios in selected.items():
        b, h = base_master[key], head_master[key]
        bs, hs = b.get("scenarios") or {}, h.get("scenarios") or {}
        if set(bs) != set(hs):
            raise InputError(f"append-only added or removed a scenario in config '{key}'")
        outside = [s for s in hs if s not in scenarios]
        if outside and {k: v for k, v in b.items() if k != "scenarios"} != {k: v for k, v in h.items() if k != "scenarios"}:
            raise InputError(f"append-only changed config-wide fields that can affect scenarios outside its "
                             f"changelog scope: '{key}'")
        for s in outside:
            if bs.get(s) != hs.get(s):
                raise InputError(f"append-only changed a scenario outside its changelog scope: '{key}' / '{s}'")
