"""The files of the chain of custody (adapter): hash the client's export folders, write and read the
record (runner/custody.py decides; this reads and writes)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from ci_tools import names
from ci_tools.runner import custody

CHUNK = 1 << 20


def file_sha256(path: Path) -> str | None:
    """The file's sha256; a symbolic link's is that of its target's name (the link is what the client
    left, whatever it points at later); None when it cannot be read."""
    try:
        if path.is_symlink():
            return custody.sha256_hex(b"symlink:" + os.fsencode(os.readlink(path)))
        h = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(CHUNK):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None


def hash_folders(root: Path, folders: Sequence[str]) -> dict[str, str]:
    """Path relative to ROOT -> sha256 of every file (and symbolic link, not followed) under FOLDERS."""
    out: dict[str, str] = {}
    for folder in folders:
        base = root / folder
        if base.is_symlink() or base.is_file():
            digest = file_sha256(base)
            out[folder] = digest or "unreadable"
            continue
        for top, dirs, files in os.walk(base):
            here = Path(top)
            links = [d for d in dirs if (here / d).is_symlink()]
            for name in sorted(files + links):
                path = here / name
                rel = path.relative_to(root).as_posix()
                out[rel] = file_sha256(path) or "unreadable"
    return out


def seal(out: Path, folders: Sequence[str], say: Callable[[str], None]) -> str:
    """Hash the client's export FOLDERS (relative to the job directory OUT) into OUT/client_exports.sha256,
    keeping the entries of other folders (an earlier concurrency's client); say each hash; return the
    record's own sha256 (the step output)."""
    record = out / names.EXPORT_RECORD
    previous: dict[str, str] = {}
    if record.is_file():
        try:
            previous = custody.parse_record(record.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            previous = {}
    entries = hash_folders(out, folders)
    text = custody.record_text(custody.merged(previous, folders, entries))
    tmp = record.with_name(record.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(record)
    digest = custody.sha256_hex(text.encode("utf-8"))
    for line in custody.log_lines(entries, digest):
        say(line)
    return digest


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
            recorded = custody.parse_record(text)
        except ValueError:
            recorded = {}
    found = hash_folders(root, [f for f in folders if custody.under(f, scope)])
    for rel in recorded:
        path = root / rel
        if custody.under(rel, scope) and rel not in found and (path.exists() or path.is_symlink()):
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
