"""The hashes of a job's client exports (adapter): what the runner seals and results checks again, by
one rule (custody/record.py holds the record they go into)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

from ci_tools.custody.record import sha256_hex

CHUNK = 1 << 20


def file_sha256(path: Path) -> str | None:
    """The file's sha256; a symbolic link's is that of its target's name (the link is what the client
    left, whatever it points at later); None when it cannot be read."""
    try:
        if path.is_symlink():
            return sha256_hex(b"symlink:" + os.fsencode(os.readlink(path)))
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
