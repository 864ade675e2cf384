"""Reading result files (shell): the one CSV-or-JSON rule, lenient JSON.

The parsers they hand the text or data to take strings and data (`sources.results_from_csv`, ...);
this module is where the files are opened, so those stay testable on strings.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ci_tools.errors import InputError

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


def json_object_or_none(path: Path) -> dict | None:
    """A JSON object from PATH, or None when it is absent, unreadable, not JSON or not an object
    (the eval files: a missing or broken one is judged by the rules, not raised here)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
