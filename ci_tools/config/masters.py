"""Reading master configs and runners.yaml into plain data (no schema validation here).

`read_masters` is the fast path used by every command that needs the entries (plan, matrix, lint):
it parses each file once and merges them in the order given. Structural validation lives in the
config validator; here only what would make the merged data ambiguous is rejected.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ci_tools import paths
from ci_tools.errors import Finding, InputError
from ci_tools.yamlio import YamlDoc, load_yaml_file


@dataclass
class MasterSet:
    """All master entries, merged in file order, remembering which file (and YamlDoc) each came from."""

    entries: dict[str, dict] = field(default_factory=dict)
    origin: dict[str, YamlDoc] = field(default_factory=dict)
    docs: list[YamlDoc] = field(default_factory=list)
    all_keys: list[str] | None = None  # every key of the files when only some entries were parsed

    def keys(self) -> list[str]:
        return list(self.all_keys if self.all_keys is not None else self.entries)


def default_master_paths(root: Path) -> list[Path]:
    return sorted(Path(p) for p in glob.glob(str(root / paths.MASTER_GLOB)))


def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            pass
    return str(path)


def read_masters(files: list[Path], root: Path | None = None) -> MasterSet:
    if not files:
        raise InputError("no master config files found",
                         findings=[Finding(paths.MASTER_GLOB, None, None, "no master config files found",
                                           "run from the repository root, or pass --root / --master")])
    return merge_master_docs([load_yaml_file(path, _display(path, root)) for path in files])


def merge_master_docs(docs: list[YamlDoc]) -> MasterSet:
    """Merge already-parsed master files (e.g. read from a git ref) in the order given."""
    out = MasterSet()
    problems: list[Finding] = []
    for doc in docs:
        out.docs.append(doc)
        if doc.data is None:
            continue
        if not isinstance(doc.data, dict):
            problems.append(doc.finding((), "a master config must be a mapping of config key -> entry",
                                        "write each config as `<config-key>:` at column 1"))
            continue
        for key, entry in doc.data.items():
            if not isinstance(key, str):
                problems.append(doc.finding((key,), f"config key {key!r} is not a string", "quote the key"))
                continue
            if key in out.entries:
                first = out.origin[key]
                line, _ = first.mark((key,))
                problems.append(doc.finding((key,), f"config key {key!r} is defined twice (first in {first.file}:{line})",
                                            "config keys must be unique across all master files; rename one"))
                continue
            out.entries[key] = entry
            out.origin[key] = doc
    if problems:
        raise InputError(problems[0].message, findings=problems)
    return out


def read_runners(path: Path, root: Path | None = None) -> YamlDoc:
    return load_yaml_file(path, _display(path, root))


_TOP_KEY_LINE = re.compile(rb"([A-Za-z0-9_][A-Za-z0-9_.+-]*):[ ]*(?:#[^\n]*)?")
_COLUMN_ONE = re.compile(rb"^[^ #\n][^\n]*", re.M)


def _has_alias_syntax(content: bytes) -> bool:
    for ch in (b"&", b"*"):
        pos = content.find(ch)
        while pos >= 0:
            before = content[pos - 1:pos] if pos else b"\n"
            after = content[pos + 1:pos + 2]
            if before in (b" ", b"\n", b"[", b"{", b",", b":", b"-") and after and (after.isalnum() or after in b"_-"):
                return True
            pos = content.find(ch, pos + 1)
    return False


def split_entries(content: bytes) -> list[tuple[str, int, bytes]] | None:
    """(key, first line, bytes of its block) per top-level entry, by a line scan; None when the file is
    not in the plain block shape every master config has (then parse it whole).

    Lets a planner parse only the few entries a change selects: the blocks are independent YAML
    documents as long as no line at column 1 is anything but a comment, a blank or `<key>:`, and no
    anchor/alias crosses entries (any `&`/`*` alias syntax sends the caller to the whole-file parse).
    """
    out: list[tuple[str, int, bytes]] = []
    prev_pos, line = 0, 1
    starts: list[tuple[str, int, int]] = []
    for m in _COLUMN_ONE.finditer(content):
        key = _TOP_KEY_LINE.fullmatch(m.group(0))
        if key is None:
            return None
        line += content.count(b"\n", prev_pos, m.start())
        prev_pos = m.start()
        starts.append((key.group(1).decode("ascii"), line, m.start()))
    for i, (key, line, pos) in enumerate(starts):
        end = starts[i + 1][2] if i + 1 < len(starts) else len(content)
        out.append((key, line, content[pos:end]))
    if len({k for k, _, _ in out}) != len(out) or _has_alias_syntax(content):
        return None
    return out


def read_selected_blobs(blobs: list[tuple[str, bytes]], wanted: Callable[[list[str]], list[str]]) -> MasterSet:
    """Master configs from file contents, parsing only the entries `wanted(all keys in order)` returns.

    Falls back to parsing every file whole when one is not in the plain block shape.
    """
    from ci_tools.yamlio import load_yaml_text

    split = [(name, split_entries(data)) for name, data in blobs]
    if any(parts is None for _, parts in split):
        return merge_master_docs([load_yaml_text(data.decode("utf-8", "replace"), name) for name, data in blobs])
    all_keys = [k for _, parts in split for k, _, _ in parts]
    if len(set(all_keys)) != len(all_keys):
        return merge_master_docs([load_yaml_text(data.decode("utf-8", "replace"), name) for name, data in blobs])
    keep = set(wanted(all_keys))
    docs = []
    for name, parts in split:
        for key, line, chunk in parts:
            if key in keep:
                # pad with newlines so every reported line number is the file's
                docs.append(load_yaml_text("\n" * (line - 1) + chunk.decode("utf-8", "replace"), name))
    out = merge_master_docs(docs)
    out.all_keys = all_keys
    return out
