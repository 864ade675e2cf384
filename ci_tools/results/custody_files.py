"""The evidence of the chain of custody for one result (adapter): the record and the export's files
hashed again (results/custody.py judges; custody/hashing.py hashes as the runner's seal did)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ci_tools import names
from ci_tools.custody.hashing import file_sha256, hash_folders
from ci_tools.custody.record import parse_record, under
from ci_tools.results import custody


def evidence(directory: Path, job: dict | None, read: Sequence[Path], expected: str | None,
             known: tuple[Path, dict | None] | None = None) -> custody.Evidence:
    """What custody.judge needs for the result of DIRECTORY (a job directory, or a multi-node job's
    conc<N>/ folder, whose job.json names its parent). KNOWN: a job directory whose job.json the caller
    has read (the parent of every concurrency folder `results process` reads), not read again."""
    root = directory
    if isinstance(job, dict) and isinstance(job.get("parent"), str):
        root = Path(os.path.normpath(directory / job["parent"]))
        if known is not None and os.path.abspath(known[0]) == os.path.abspath(root):
            parent = known[1]
        else:
            parent = _read_json(root / names.JOB_JSON)
    else:
        parent = job
    scope = _relative(directory, root) or ""
    scope = "" if scope == "." else scope
    folders = [str(f) for f in (parent or {}).get("client-exports") or [] if isinstance(f, str)]
    text = None
    path = root / names.EXPORT_RECORD
    if path.is_file() or path.is_symlink():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            text = f"unreadable: {exc}"
    recorded: dict[str, str] = {}
    if text is not None:
        try:
            recorded = parse_record(text)
        except ValueError:
            recorded = {}
    found = hash_folders(root, [f for f in folders if under(f, scope)])
    for rel in recorded:
        path = root / rel
        if under(rel, scope) and rel not in found and (path.exists() or path.is_symlink()):
            found[rel] = file_sha256(path) or "unreadable"
    rel_read = []
    for p in read:
        rel = _relative(p, root) or str(p)     # outside the job directory: named whole, never recorded
        rel_read.append(rel)
        if rel not in found and (p.exists() or p.is_symlink()):
            found[rel] = file_sha256(p) or "unreadable"
    return custody.Evidence(record=text, expected=expected, promised=bool(folders), found=found,
                            read=tuple(rel_read), scope=scope)


def _relative(path: Path, root: Path) -> str | None:
    """PATH relative to ROOT without following links (a linked file is judged as the link); None outside."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return None


def _read_json(path: Path) -> dict | None:
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None
