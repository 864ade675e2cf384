"""Where the results of a comparison come from (the shell around results/compare.py).

A side of a comparison is a list of result documents (`result.json`), newest first. Accepted:
- a `results collect` file (`ci-tools/results/v1`);
- a directory: every `result.json` under it, as `results collect` would gather them;
- a CSV a person writes from numbers measured elsewhere (a PR's "local results" table, a
  published sweep): one point a row, columns
  `point,config-key,tp,ep,dp-attn,conc,tok_s_gpu,intvty_p90,intvty_p50,ttft_p90_s` (and the energy
  columns j_per_output_token, j_per_input_token, j_per_total_token, j_per_request); only `point`,
  `tp` and `conc` are required, an empty metric cell means "not measured".
Several files on one side are a history: the first given is the newest.

This is the one reader of results files: `results pareto` reads its INPUT here too (`load_points`),
with its own required columns (`point,tok_s_gpu,intvty_p90`: a frontier needs no topology).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from ci_tools.errors import Finding, InputError

CSV_REQUIRED = ("point", "tp", "conc")
CSV_METRICS = ("tok_s_gpu", "intvty_p90", "intvty_p50", "ttft_p90_s",
               "j_per_output_token", "j_per_input_token", "j_per_total_token", "j_per_request")
CSV_POINT = ("config-key", "ep", "dp-attn", "gpus", "scenario")
_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0", ""}


def _number(raw: str, file: str, line: int, column: str, kind=float):
    text = raw.replace(",", "").replace("_", "").strip()
    try:
        value = kind(text)
    except ValueError:
        raise InputError(f"{file}:{line}: {column} {raw!r} is not a number", findings=[Finding(
            file, line, None, f"{column} {raw!r} is not a number",
            "write a plain number (7314, 625.7) or leave the cell empty when it was not measured")]) from None
    if kind is float and (value != value or value in (float("inf"), float("-inf"))):
        raise InputError(f"{file}:{line}: {column} must be a finite number")
    return value


def results_from_csv(text: str, file: str, required: tuple[str, ...] = CSV_REQUIRED) -> list[dict]:
    """One result document a row. `required` columns must be in the header and filled in every row
    (a comparison's side needs point,tp,conc; `results pareto` point,tok_s_gpu,intvty_p90)."""
    try:
        return _results_from_csv(text, file, required)
    except csv.Error as exc:     # a field over the csv module's size limit, in its own words
        raise InputError(f"{file}: not a readable CSV: {exc}") from None


def _results_from_csv(text: str, file: str, required: tuple[str, ...]) -> list[dict]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = [h.strip() for h in (reader.fieldnames or [])]
    missing = [c for c in required if c not in header]
    if missing:
        need = ",".join(required) + ("" if set(required) & set(CSV_METRICS) else " and one of " + ",".join(CSV_METRICS))
        raise InputError(f"{file}:1: missing column(s) {', '.join(missing)}", findings=[Finding(
            file, 1, None, f"missing column(s) {', '.join(missing)}", f"the header needs at least {need}")])
    unknown = [h for h in header if h not in CSV_REQUIRED + CSV_METRICS + CSV_POINT]
    if unknown:
        raise InputError(f"{file}:1: unknown column(s) {', '.join(unknown)}", findings=[Finding(
            file, 1, None, f"unknown column(s) {', '.join(unknown)}",
            "known columns: " + ",".join(CSV_REQUIRED + CSV_POINT + CSV_METRICS))])
    out = [_row_result({(k or "").strip(): (v or "").strip() for k, v in raw_row.items()}, file, n, required)
           for n, raw_row in enumerate(reader, 2)]
    if not out:
        raise InputError(f"{file}: no points")
    return out


def _row_result(row: dict[str, str], file: str, n: int, required: tuple[str, ...]) -> dict:
    """The result document of the CSV's line `n`."""
    if not row.get("point"):
        raise InputError(f"{file}:{n}: empty point name")
    dp = row.get("dp-attn", "").lower()
    if dp not in _TRUE | _FALSE:
        raise InputError(f"{file}:{n}: dp-attn {row['dp-attn']!r} is not true or false")

    def cell(column: str, kind=float, default: str = ""):
        """The cell's number; None where it is empty and may be (a required one may not)."""
        raw = row.get(column) or default
        return _number(raw, file, n, column, kind) if raw or column in required else None

    point = {"name": row["point"], "config-key": row.get("config-key") or None, "tp": cell("tp", int),
             "ep": cell("ep", int, "1"), "dp-attn": dp in _TRUE, "conc": cell("conc", int)}
    if row.get("gpus"):
        point["gpus"] = cell("gpus", int)
    if row.get("scenario"):     # with the config key, what a point is (identity.py)
        point["scenario"] = row["scenario"]
    headline = {m: cell(m) for m in CSV_METRICS}
    return {"valid": True, "point": point, "headline": headline, "source": f"{file}:{n}"}


def _from_collection(data, file: str) -> list[dict]:
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list):
        raise InputError(f"{file}: not a result collection (expected the output of `ci-tools results collect`)")
    return [r for r in results if isinstance(r, dict)]


def load_side(path: Path, required: tuple[str, ...] = CSV_REQUIRED) -> list[dict]:
    """The result documents of one file or directory (`required`: the columns a CSV must fill)."""
    from ci_tools.results.collect import collect, find_results
    from ci_tools.yaml.load import read_text

    if path.is_dir():
        files = find_results([path])
        if not files:
            raise InputError(f"{path}: no result.json under this directory",
                             findings=[Finding(str(path), None, None, "no result.json under this directory",
                                               "pass a `results collect` file, a CSV or a directory of job results")])
        return collect(files)["results"]
    if not path.exists():
        raise InputError(f"{path}: no such file or directory", exit_code=2)
    text = read_text(path)
    if path.suffix.lower() == ".csv":   # by name: a CSV's first line can read as JSON and the other way round
        return results_from_csv(text, str(path), required)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{path}: neither a CSV nor a JSON result collection: {exc}") from None
    return _from_collection(data, str(path))


def load_points(path: Path) -> list:
    """`results pareto`'s INPUT as Pareto points: read as a comparison's side is, a CSV needing
    only point,tok_s_gpu,intvty_p90."""
    from ci_tools.results import pareto

    return pareto.points_from_results(load_side(path, pareto.CSV_COLUMNS), str(path))


def load_history(paths: list[Path]) -> list[dict]:
    """Several sides, newest first, as one list (newest results first)."""
    out: list[dict] = []
    for p in paths:
        out.extend(load_side(p))
    return out
