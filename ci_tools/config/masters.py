"""Reading master configs and runners.yaml into plain data (no schema validation here).

`merge_master_docs` merges parsed files in the order given (`config.load.read_masters` reads them:
the fast path of every command that needs the entries, each file parsed once). Structural validation lives in the
config validator; here only what would make the merged data ambiguous is rejected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ci_tools import names
from ci_tools.errors import Finding, InputError
from ci_tools.yamlio import YamlDoc


@dataclass
class MasterSet:
    """All master entries, merged in file order, remembering which file (and YamlDoc) each came from."""

    entries: dict[str, dict] = field(default_factory=dict)
    origin: dict[str, YamlDoc] = field(default_factory=dict)
    docs: list[YamlDoc] = field(default_factory=list)
    all_keys: list[str] | None = None  # every key of the files when only some entries were parsed

    def keys(self) -> list[str]:
        return list(self.all_keys if self.all_keys is not None else self.entries)


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


_TOP_KEY_LINE = re.compile(rb"([A-Za-z0-9_][A-Za-z0-9_.+-]*):[ ]*(?:#[^\n]*)?")
_COLUMN_ONE = re.compile(rb"^[^ #\n][^\n]*", re.M)


_COMMENT_LINE = re.compile(rb"^[ ]*#[^\n]*", re.M)


def _has_alias_syntax(content: bytes) -> bool:
    """Whether anything outside comment-only lines looks like an anchor or alias.

    A line whose first non-blank character is `#` is never YAML structure (a comment, or text inside a
    block or quoted scalar), so its `*`/`&` cannot be an alias: real master files say things like
    `# rocm/sgl-dev:*-DSv4` and must stay on the fast path. Trailing comments are not stripped (a `#`
    may sit inside a quoted value): their `*` only costs the whole-file parse, never a wrong result.
    """
    content = _COMMENT_LINE.sub(b"", content)
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
    anchor/alias crosses entries (any `&`/`*` alias syntax outside comment lines sends the caller to the
    whole-file parse).
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


class MasterIndex:
    """Every key of some master files at once; entries parsed only when asked for (`select`).

    Two readers behind one result: the fast one splits each plain file into per-entry blocks by a line
    scan and parses only the selected blocks; a file the scan declines (see `split_entries`), or whose
    selected block does not parse on its own, is parsed whole instead. Both give the same entries,
    line marks included; `fast=False` forces the whole-file reader (the tests compare the two).
    A YAML error in an entry nobody selected is not seen by the fast reader: unrelated problems are
    `config validate`'s to report and do not block a plan.
    """

    def __init__(self, blobs: list[tuple[str, bytes]], *, fast: bool = True):
        self._blobs = blobs
        self._split = {name: (split_entries(data) if fast else None) for name, data in blobs}
        self._whole: dict[str, YamlDoc] = {}
        self.keys: list[str] = []
        for name, data in blobs:
            parts = self._split[name]
            self.keys += [k for k, _, _ in parts] if parts is not None else self._doc_keys(name)
        if len(set(self.keys)) != len(self.keys):
            self.full()  # the merge reports the duplicate with both places

    @property
    def split_files(self) -> list[str]:
        """The files read by the per-entry fast path (the others were parsed whole)."""
        return [name for name, parts in self._split.items() if parts is not None]

    def _doc(self, name: str) -> YamlDoc:
        from ci_tools.yamlio import load_yaml_text

        if name not in self._whole:
            data = dict(self._blobs)[name]
            self._whole[name] = load_yaml_text(data.decode("utf-8", "replace"), name)
        return self._whole[name]

    def _doc_keys(self, name: str) -> list[str]:
        data = self._doc(name).data
        return [str(k) for k in data] if isinstance(data, dict) else []

    def full(self) -> MasterSet:
        """Every entry of every file, each file parsed whole."""
        return merge_master_docs([self._doc(name) for name, _ in self._blobs])

    def select(self, keys: list[str] | set[str]) -> MasterSet:
        """The entries named by `keys` (unknown keys are ignored), with `all_keys` set to every key."""
        from ci_tools.yamlio import load_yaml_text

        keep = set(keys)
        docs: list[YamlDoc] = []
        for name, _ in self._blobs:
            parts = self._split[name]
            if parts is not None:
                try:
                    # pad with newlines so every reported line number is the file's
                    docs += [load_yaml_text("\n" * (line - 1) + chunk.decode("utf-8", "replace"), name)
                             for key, line, chunk in parts if key in keep]
                    continue
                except InputError:
                    self._split[name] = None  # e.g. a quoted value running over a column-1 line
            whole = self._doc(name)
            if isinstance(whole.data, dict):
                docs.append(YamlDoc(whole.file, {k: v for k, v in whole.data.items() if k in keep},
                                    whole.value_marks, whole.key_marks) if keep != set(whole.data) else whole)
            else:
                docs.append(whole)
        out = merge_master_docs(docs)
        out.all_keys = list(self.keys)
        return out


def read_selected_blobs(blobs: list[tuple[str, bytes]], wanted: Callable[[list[str]], list[str]]) -> MasterSet:
    """Master configs from file contents, parsing only the entries `wanted(all keys in order)` returns.

    `wanted` is called exactly once, whichever reader serves the files.
    """
    index = MasterIndex(blobs)
    return index.select(wanted(list(index.keys)))
