"""Streaming reader of AIPerf's `profile_export.jsonl` (one JSON record per request).

A one-hour AgentX run writes hundreds of thousands of records of a few KB each, so the file is
never loaded whole: lines are read in batches (BATCH_LINES), each record is decoded into a
small typed struct holding only the fields the metrics need, and the batch is dropped. Per-request
values go into `array('d')` columns (8 bytes each, against ~32 for a list of Python floats); sums,
minima and maxima are kept as running scalars.

Each batch is added by `record_batches.py` (msgspec's decoder and numpy's columns for plain records,
json.loads and the general rules for the rest; tests check both paths agree on every record).
Files of PARALLEL_MIN_BYTES and more are read by several processes, each a range of lines.

Record filter (spec §2.2): phase = `metadata.benchmark_phase`; a record with a phase other than
"profiling" is warmup (dropped, counted); a truthy `error` is dropped and categorised. Every other
profiling record is range-checked (`record_fields.record_problem`); one that fails is excluded from every metric and
counted under its reason in `excluded` (with `warmup` and `error`, so every record left out is counted
once by reason). The rest are the successful profiling requests S. Reasons in BROKEN mean the
measurement itself is wrong (the result is invalid when any occurs); those in DEGRADED invalidate it
above a small share (validity.py). A one-token response has no inter-token latency: it stays in S
and is counted in `itl_undefined`. Every record of S is held against the physical invariants of an
AIPerf record as it is read (invariants.py, element-wise over the batch's records, whichever path read
them); the records breaking each are counted in `violations` with the first one's figures.

Reading the chunk gaps costs: they are the one list decoded (about 50 ns a gap, the rest of a
record's keys are skipped), so a record of 250 gaps is read in about 4x the time of one whose gaps are
skipped (docs/performance.md).
"""

from __future__ import annotations

import itertools
import os
from array import array
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from ci_tools.errors import Finding, InputError
from ci_tools.results import invariants
from ci_tools.results.invariants import Limits
from ci_tools.results.record_batches import add_batch, msgspec_decoder
from ci_tools.results.scan import COLUMNS, RecordScan

# Lines decoded per batch: enough that the per-batch work is noise (measured: 64 to 4096 lines per
# batch run at the same speed), few enough that the held lines of multi-KB records stay a few MB.
BATCH_LINES = 1024


def scan_batches(batches: Iterable[list[bytes]], *, fast: bool = True, spill: BinaryIO | None = None,
                 limits: Limits = Limits()) -> RecordScan:
    """Scan JSONL lines (bytes) given in consecutive batches. `fast=False` forces json.loads. With
    `spill`, the columns are written to it every SPILL_RECORDS records (`_spill_chunk`) and the
    scan returned holds none: a worker's memory stays that of a few batches. `limits`: the
    tolerances of the per-record invariants (the policy's)."""
    s = RecordScan()
    decoder = msgspec_decoder() if fast else None
    lineno = 1
    for lines in batches:
        add_batch(s, lines, lineno, decoder, limits)
        lineno += len(lines)
        if spill is not None and len(s.ttft_ms) >= SPILL_RECORDS:
            _spill_chunk(s, spill)
    if spill is not None:
        _spill_chunk(s, spill)
    s.lines_read = lineno - 1
    return s


def _batched(lines: Iterable[bytes]) -> Iterator[list[bytes]]:
    it = iter(lines)
    while batch := list(islice(it, BATCH_LINES)):
        yield batch


def scan_lines(lines: Iterable[bytes], *, fast: bool = True, limits: Limits = Limits()) -> RecordScan:
    """Scan an iterable of JSONL lines (bytes). `fast=False` forces json.loads on every line."""
    return scan_batches(_batched(lines), fast=fast, limits=limits)


# Files at least this big are scanned by one process per usable CPU (at most MAX_WORKERS), the
# calling process taking the first range: the decode is CPU-bound (0.5 to 0.8 GB/s per core on a
# 2.1 GHz Xeon vCPU) and a one-hour export is gigabytes. Smaller files (and every test export) take one process.
PARALLEL_MIN_BYTES = 256 * 1024 * 1024
MAX_WORKERS = 4


def _range_batches(path: str, start: int, end: int) -> Iterator[list[bytes]]:
    """Batches of the lines of path whose first byte lies in [start, end) (start is a line start).

    Buffered line iteration (readline finds b"\\n" with memchr) measured faster than splitting big
    blocks with bytes.split, which compares byte by byte."""
    with open(path, "rb", buffering=1 << 20) as fh:
        fh.seek(start)
        pos = start
        while pos < end:
            batch = list(islice(fh, BATCH_LINES))
            if not batch:
                return
            size = sum(map(len, batch))
            if pos + size > end:  # the range ends inside this batch (only with several workers)
                keep = []
                for line in batch:
                    if pos >= end:
                        break
                    keep.append(line)
                    pos += len(line)
                yield keep
                return
            pos += size
            yield batch


def _line_starts(path: str, size: int, parts: int) -> list[int]:
    """parts+1 offsets, each at the start of a line, splitting the file into near-equal ranges."""
    offsets = [0]
    with open(path, "rb") as fh:
        for i in range(1, parts):
            fh.seek(max(offsets[-1], size * i // parts))
            fh.readline()  # to the start of the next line
            offsets.append(min(fh.tell(), size))
    offsets.append(size)
    return offsets


def _scan_range(args: tuple[str, int, int, bool, Limits]) -> RecordScan:
    path, start, end, fast, limits = args
    return scan_batches(_range_batches(path, start, end), fast=fast, limits=limits)


SPILL_RECORDS = 1 << 16   # a worker writes its columns out this many records at a time (4 MB)


@dataclass
class Spilled:
    """A worker's scan whose columns went to the file at `path` as they grew: pickled, a part's
    columns were held three times at once (the worker's bytes, the parent's received bytes and the
    rebuilt arrays) and the worker held all of its part until the end."""

    scan: RecordScan
    path: str


def _spill_chunk(s: RecordScan, fh: BinaryIO) -> None:
    """Append the scan's columns to fh as one chunk (their lengths, then each column's raw values)
    and empty them."""
    columns = [getattr(s, col) for col in COLUMNS]
    array("q", map(len, columns)).tofile(fh)
    for col, values in zip(COLUMNS, columns):
        values.tofile(fh)
        setattr(s, col, array(values.typecode))


class SpillFailed(Exception):
    """A worker could not write its columns (the temp dir is full) or read its range: the scan is
    redone in one process, which reports an unreadable export with its own message."""


def _spill_path(spill_dir: str, part: int) -> str:
    return os.path.join(spill_dir, f"part-{part}")


def _scan_range_spilled(args: tuple[str, int, int, bool, Limits, str]) -> Spilled:
    path, start, end, fast, limits, spill = args
    try:
        with open(spill, "wb") as fh:
            return Spilled(scan_batches(_range_batches(path, start, end), fast=fast, spill=fh, limits=limits), spill)
    except OSError as exc:
        # the spill file (a full disk fails at a write or at the close's flush), or the export: the
        # one-process scan that follows reports an unreadable export as such
        raise SpillFailed(str(exc)) from None


def _extend_from(out: RecordScan, part: RecordScan | Spilled) -> None:
    """Append a part's columns to out's; a spilled part's are read from its file a chunk at a time."""
    if isinstance(part, RecordScan):
        for col in COLUMNS:
            getattr(out, col).extend(getattr(part, col))
            setattr(part, col, None)  # freed as soon as copied: the merge holds one part's column at a time
        return
    try:
        with open(part.path, "rb") as fh:
            while header := fh.read(8 * len(COLUMNS)):
                for col, n in zip(COLUMNS, array("q", header)):
                    if n:
                        getattr(out, col).fromfile(fh, n)
        os.unlink(part.path)
    except (OSError, EOFError, ValueError) as exc:   # unreadable or cut short: never half a column
        raise SpillFailed(f"{part.path}: {exc}") from None


def merge_scans(parts: Iterable[RecordScan | Spilled]) -> RecordScan:
    """Scans of consecutive ranges, in order -> one scan (line numbers made absolute). Consumed one
    at a time so each part's columns are freed once copied."""
    it = iter(parts)
    first = next(it, None)
    if first is None:
        return RecordScan()
    # the first part becomes the result: its columns are extended in place, not copied
    if isinstance(first, Spilled):   # only later parts are spilled; this one reads into a fresh scan
        _extend_from(first.scan, first)
        first = first.scan
    out = first
    for part in it:
        _extend_from(out, part)
        s = part if isinstance(part, RecordScan) else part.scan
        offset = out.lines_read
        out.records_total += s.records_total
        out.records_profiled += s.records_profiled
        out.records_warmup_dropped += s.records_warmup_dropped
        out.records_error_dropped += s.records_error_dropped
        out.bad_lines.extend(n + offset for n in s.bad_lines)
        out.itl_undefined += s.itl_undefined
        for src, dst in ((s.phases, out.phases), (s.error_categories, out.error_categories),
                         (s.excluded, out.excluded)):
            for k, v in src.items():
                dst[k] = dst.get(k, 0) + v
        out.ids_missing += s.ids_missing
        for k, v in s.unit_problems.items():
            out.unit_problems[k] = out.unit_problems.get(k, 0) + v
        invariants.merge(out.violations, s.violations, offset)
        out.icl_count += s.icl_count
        out.icl_ns += s.icl_ns
        out.isl_sum += s.isl_sum
        out.osl_sum += s.osl_sum
        out.isl_count += s.isl_count
        out.osl_count += s.osl_count
        out.fast_lines += s.fast_lines
        out.column_records += s.column_records
        if s.start_ns_min is not None and (out.start_ns_min is None or s.start_ns_min < out.start_ns_min):
            out.start_ns_min = s.start_ns_min
        if s.end_ns_max is not None and (out.end_ns_max is None or s.end_ns_max > out.end_ns_max):
            out.end_ns_max = s.end_ns_max
        out.lines_read += s.lines_read
    return out


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def scan_file(path: Path | str, *, fast: bool = True, workers: int | None = None,
              limits: Limits = Limits()) -> RecordScan:
    """Scan a profile_export.jsonl. Big files are split at line starts into `workers` ranges: the
    calling process scans the first, forked processes the others (no idle parent holding memory)."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if workers is None:
            workers = min(_usable_cpus(), MAX_WORKERS) if size >= PARALLEL_MIN_BYTES else 1
        if workers <= 1:
            return _scan_range((str(p), 0, size, fast, limits))
        import multiprocessing
        import tempfile

        bounds = _line_starts(str(p), size, workers)
        jobs = [(str(p), a, b, fast, limits) for a, b in zip(bounds, bounds[1:]) if b > a]
        if len(jobs) <= 1:
            return _scan_range((str(p), 0, size, fast, limits))
        try:
            spill_dir = tempfile.TemporaryDirectory(prefix="ci-tools-scan-")
        except OSError:   # no temp dir for the workers' columns: one process needs none
            return _scan_range((str(p), 0, size, fast, limits))
        try:
            with spill_dir:
                spills = [(*job, _spill_path(spill_dir.name, i)) for i, job in enumerate(jobs[1:], 1)]
                # fork: the children share the already-imported code; nothing else is inherited that matters
                with multiprocessing.get_context("fork").Pool(len(jobs) - 1) as pool:
                    pending = pool.map_async(_scan_range_spilled, spills)
                    first = _scan_range(jobs[0])
                    rest = pending.get()
                # the workers have exited: only this process holds columns while they are joined
                return merge_scans(itertools.chain([first], rest))
        except SpillFailed:   # no room for the workers' columns (a full temp dir)
            return _scan_range((str(p), 0, size, fast, limits))
    except FileNotFoundError:
        raise InputError(f"{p}: file not found", findings=[Finding(
            str(p), None, None, "AIPerf's per-request export is missing",
            "the client did not finish, or the directory is not an AIPerf artifact directory")]) from None
    except OSError as exc:
        raise InputError(f"{p}: cannot read: {exc.strerror}") from None
