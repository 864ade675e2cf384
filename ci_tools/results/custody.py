"""Chain of custody of the client's exports: the verdict `results process` adds (pure, over plain data).

The moment the client (AIPerf, or the eval harness) exits, the runner hashes every file it wrote and
keeps the hashes where no container of the job can write them: `client_exports.sha256` at the root of
the job directory (containers see only `engine_files/`, read-only, and what a multi-node engine writes
itself: Dynamo's store, a recipe's install), the step's log, and the step output `export-sha256` (the
sha256 of that file, frozen by GitHub when the step ends). `results process` hashes the export again and
judges the result INVALID (rule `export-custody`) when a file differs, is gone, or appeared since.

What it proves: the files judged are byte for byte what the client left when it exited, so neither the
engine (its container, or a process backend's engine stopping after the client) nor a later step of the
job edited them. What it does not prove: that the client measured honestly (the runner host, its
AIPerf and ci-tools are trusted), nor anything about what the client read (the model store, the HF cache
it shares with the engine).

The record's format and the hashing are custody/record.py's and custody/hashing.py's, shared with
the runner's seal (runner/seal.py).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ci_tools import names
from ci_tools.custody.record import parse_record, sha256_hex, under
from ci_tools.errors import Failure

RULE = "export-custody"
MAX_SHOWN = 20            # changed files named in a result; the rest are counted


def dropped_by_upload(path: str) -> bool:
    """A file the job artifact leaves out (names.UPLOAD_EXCLUDE): absent from a downloaded job directory
    by design, so its absence is no sign of an edit."""
    for pattern in names.UPLOAD_EXCLUDE:
        if pattern.endswith("/") and (under(path, pattern) or fnmatch.fnmatchcase(path, pattern + "*")):
            return True
        if fnmatch.fnmatchcase(path, pattern):
            return True
    return False


@dataclass(frozen=True)
class Change:
    path: str
    recorded: str | None      # None: not in the record (it appeared after the client exited)
    now: str | None           # None: gone

    def words(self) -> str:
        if self.recorded is None:
            return (f"{self.path} was not there when the client exited (sha256 {self.now} now): a file written "
                    "later is not the client's")
        if self.now is None:
            return f"{self.path} is gone (sha256 {self.recorded} when the client exited)"
        return (f"{self.path} changed after the client exited: sha256 {self.recorded} then, {self.now} now")


def changes(recorded: Mapping[str, str], found: Mapping[str, str], read: Sequence[str], scope: str = "",
            absent_ok: Callable[[str], bool] = dropped_by_upload) -> list[Change]:
    """What differs between the record and the files now, under `scope` (a result's folder in the job
    directory, "" for all): a recorded file changed or gone (unless `absent_ok`), a file found in an
    export folder or read by `results process` that the record does not name."""
    out = []
    for path in sorted(p for p in recorded if under(p, scope)):
        now = found.get(path)
        if now is None and absent_ok(path):
            continue
        if now != recorded[path]:
            out.append(Change(path, recorded[path], now))
    extra = sorted({p for p in found if under(p, scope) and p not in recorded} | {p for p in read if p not in recorded})
    out += [Change(p, None, found.get(p)) for p in extra]
    return out


@dataclass(frozen=True)
class Evidence:
    """What the shell found for one result (plain data)."""
    record: str | None                 # the record file's text; None: there is none
    expected: str | None               # --export-sha256 (the run step's output); None: not given
    promised: bool                     # job.json names client exports: its runner keeps a record
    found: Mapping[str, str]           # sha256 now of each file in the export folders and each recorded one
    read: tuple[str, ...] = ()         # the files `results process` read, relative to the job directory
    scope: str = ""                    # the result's folder in the job directory ("" or conc<N>)


def judge(ev: Evidence) -> tuple[list[Failure], dict]:
    """(the failures of rule `export-custody`, result.json's `custody` section)."""
    digest = sha256_hex(ev.record.encode("utf-8")) if ev.record is not None else None
    section: dict = {"record": names.EXPORT_RECORD, "sha256": digest, "checked": False}

    def fail(message: str) -> tuple[list[Failure], dict]:
        return [Failure(RULE, message)], {**section, "problem": message}

    if ev.record is None:
        if ev.expected is not None:
            return fail(f"no {names.EXPORT_RECORD} in the job directory, but the run step recorded "
                        f"{'sha256 ' + ev.expected if ev.expected else 'none'} for it: the record of the client's "
                        "exports was removed, so they cannot be told from an edit")
        if ev.promised:
            return fail(f"no {names.EXPORT_RECORD}: the runner that wrote job.json hashes the client's exports when "
                        "it exits, so a job directory without the record has lost it or was assembled by hand")
        return [], {**section, "note": "no record of the client's exports (a job directory of an older runner, "
                                       "or an export passed with --tp): not checked"}
    if ev.expected is not None and ev.expected != digest:
        return fail(f"{names.EXPORT_RECORD} is sha256 {digest}, but the run step recorded "
                    f"{ev.expected or 'nothing'} when the client exited: the record was edited")
    try:
        recorded = parse_record(ev.record)
    except ValueError as exc:
        return fail(f"{names.EXPORT_RECORD}: {exc}")
    found = changes(recorded, ev.found, ev.read, ev.scope)
    checked = sum(1 for p in recorded if under(p, ev.scope))
    section = {**section, "checked": True, "files": checked,
               "anchored": ev.expected is not None}   # the record's own hash checked against the step output
    if not found:
        return [], section
    shown = [c.words() for c in found[:MAX_SHOWN]]
    more = len(found) - MAX_SHOWN
    failures = [Failure(RULE, w) for w in shown]
    if more > 0:
        failures.append(Failure(RULE, f"and {more} more file(s) differ from {names.EXPORT_RECORD}"))
    return failures, {**section, "changed": len(found)}

