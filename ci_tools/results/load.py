"""Reading result files (shell): the one CSV-or-JSON rule, Pareto points from a file.

The parsers they hand the text or data to are pure (`pareto.points_from_csv`,
`pareto.points_from_collection`, `sources.results_from_csv`, ...); this module is where the files
are opened, so those stay testable on strings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ci_tools.errors import InputError
from ci_tools.results import pareto

T = TypeVar("T")


def csv_or_json(path: Path, *, from_csv: Callable[[str, str], T], from_json: Callable[[object, str], T],
                neither: str) -> T:
    """A file named *.csv is a CSV (text to `from_csv`); any other is JSON (data to `from_json`).
    `neither` says what the file should have been, for the error when it is not JSON."""
    from ci_tools.yaml.load import read_text

    text = read_text(path)
    if path.suffix.lower() == ".csv":
        return from_csv(text, str(path))
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{path}: {neither}: {exc}") from None
    return from_json(data, str(path))


def load_points(path: Path) -> list[pareto.Point]:
    """`results pareto`'s INPUT: a CSV of points or a `results collect` file."""
    return csv_or_json(path, from_csv=pareto.points_from_csv, from_json=pareto.points_from_collection,
                       neither=f"neither a CSV ({','.join(pareto.CSV_COLUMNS)}) nor JSON")


