"""Seal the client's exports the moment the client exits (adapter): hash them into the job directory's
record and say each hash in the step's log.

The record (custody/record.py) lies at the root of the job directory, which no container mounts
(containers see only `engine_files/`, read-only, and what a multi-node engine writes itself: Dynamo's
store, a recipe's install); its own sha256 becomes the step output names.EXPORT_SHA256_OUTPUT, frozen
by GitHub when the step ends. `results process` hashes the export again and judges it
(results/custody.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ci_tools import names
from ci_tools.custody import record as rec
from ci_tools.custody.hashing import hash_folders


def seal(out: Path, folders: Sequence[str], say: Callable[[str], None]) -> str:
    """Hash the client's export FOLDERS (relative to the job directory OUT) into OUT/client_exports.sha256,
    keeping the entries of other folders (an earlier concurrency's client); say each hash; return the
    record's own sha256 (the step output)."""
    record = out / names.EXPORT_RECORD
    previous: dict[str, str] = {}
    if record.is_file():
        try:
            previous = rec.parse_record(record.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            previous = {}
    entries = hash_folders(out, folders)
    text = rec.record_text(rec.merged(previous, folders, entries))
    tmp = record.with_name(record.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(record)
    digest = rec.sha256_hex(text.encode("utf-8"))
    for line in log_lines(entries, digest):
        say(line)
    return digest


def log_lines(entries: Mapping[str, str], digest: str) -> list[str]:
    """What the run step's log shows when the client exited: each file as sha256sum prints it, then the record's hash."""
    return ([f"client exports when the client exited ({len(entries)} file(s)):"]
            + [f"  {line}" for line in rec.record_text(entries).splitlines()]
            + [f"recorded in {names.EXPORT_RECORD}: sha256 {digest} (step output {names.EXPORT_SHA256_OUTPUT})"])
