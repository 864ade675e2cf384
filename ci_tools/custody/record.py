"""The record of a job's client exports (pure): its text, its parser, and the paths it covers.

The runner seals the client's exports into `client_exports.sha256` (names.EXPORT_RECORD) at the job
directory's root the moment the client exits (runner/seal.py); `results process` hashes them again and
judges what differs (results/custody.py). What it proves, and what not, is results/custody.py's.

The record is sha256sum's format (`<64 hex>  <path>`, a path with a backslash or a newline escaped as
GNU coreutils does), paths relative to the job directory, so `sha256sum -c client_exports.sha256` run
there checks it too.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

_LINE = re.compile(r"^(\\?)([0-9a-f]{64}) [ *](.+)$")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _escape(path: str) -> tuple[str, str]:
    if "\\" not in path and "\n" not in path and "\r" not in path:
        return "", path
    return "\\", path.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _unescape(path: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r", "\\": "\\"}.get(m.group(1), m.group(0)), path)


def record_text(entries: Mapping[str, str]) -> str:
    """The record of `entries` (path relative to the job directory -> sha256), one line per file, sorted."""
    lines = []
    for path in sorted(entries):
        mark, shown = _escape(path)
        lines.append(f"{mark}{entries[path]}  {shown}\n")
    return "".join(lines)


def parse_record(text: str) -> dict[str, str]:
    """The entries of a record; ValueError naming the first line that is not `<sha256>  <path>`."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = _LINE.match(line)
        if not m:
            raise ValueError(f"line {n} is not `<sha256>  <path>`: {line[:120]!r}")
        path = _unescape(m.group(3)) if m.group(1) else m.group(3)
        if path in out:
            raise ValueError(f"line {n} names {path} a second time")
        out[path] = m.group(2)
    return out


def merged(previous: Mapping[str, str], dirs: Sequence[str], entries: Mapping[str, str]) -> dict[str, str]:
    """A record's entries after one more client exited: its directories' entries replace the previous
    ones under them (a multi-node job records each concurrency's client as it exits)."""
    keep = {p: h for p, h in previous.items() if not any(under(p, d) for d in dirs)}
    return {**keep, **entries}


def under(path: str, folder: str) -> bool:
    folder = folder.strip("/")
    return not folder or path == folder or path.startswith(folder + "/")
