"""Master configs into plain data (no schema validation here; pure: the files are read by
`ci_tools.config.load`, or from git by the callers).

`MasterIndex` is the one reader of master configs from bytes (plan: selected entries with line marks;
matrix: every entry without), `merge_master_docs` merges parsed files in order. Structural validation
lives in the config validator; here only what would make the merged data ambiguous is rejected.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ci_tools.errors import Finding, InputError
from ci_tools.yaml.located import YamlDoc, load_yaml_text
from ci_tools.yaml.scan import split_entries


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


class MasterIndex:
    """Every key of some master files at once; entries parsed only when asked for (`select`). The one
    reader of master configs from bytes: `plan` (selected entries, with line marks) and `matrix` (every
    entry, `marks=False`) both read through it.

    The fast path splits each plain file into per-entry blocks with the one line scanner
    (`ci_tools.yaml.scan.split_entries`) and parses only the selected blocks; a file the scan declines,
    or whose selected block does not parse on its own, is parsed whole instead, and so is a file whose
    every entry is selected. Both give the same entries, line marks included; `fast=False` forces the
    whole-file reader (the tests compare the two). With `marks=False` the entries are parsed by
    `ci_tools.yaml.fast` (no line marks; a problem is still reported by the located loader).
    A YAML error in an entry nobody selected is not seen by the fast reader: unrelated problems are
    `config validate`'s to report and do not block a plan.
    """

    def __init__(self, blobs: list[tuple[str, bytes]], *, fast: bool = True, marks: bool = True):
        self._blobs = blobs
        self._marks = marks
        self._split = {name: (split_entries(data) if fast else None) for name, data in blobs}
        self._whole: dict[str, YamlDoc] = {}
        self.keys: list[str] = []
        for name, data in blobs:
            parts = self._split[name]
            self.keys += [k for k, _, _ in parts] if parts is not None else self._doc_keys(name)
        if len(set(self.keys)) != len(self.keys):
            # the merge reports the duplicate with both places (which takes the line marks)
            (self if marks else MasterIndex(blobs, fast=False)).full()

    @property
    def split_files(self) -> list[str]:
        """The files read by the per-entry fast path (the others were parsed whole)."""
        return [name for name, parts in self._split.items() if parts is not None]

    def _parse(self, text: str, name: str) -> YamlDoc:
        if self._marks:
            return load_yaml_text(text, name)
        from ci_tools.yaml.fast import load_data_fast

        return YamlDoc(name, load_data_fast(text, name))

    def _doc(self, name: str) -> YamlDoc:
        if name not in self._whole:
            data = dict(self._blobs)[name]
            self._whole[name] = self._parse(data.decode("utf-8", "replace"), name)
        return self._whole[name]

    def _doc_keys(self, name: str) -> list[str]:
        data = self._doc(name).data
        return [str(k) for k in data] if isinstance(data, dict) else []

    def full(self) -> MasterSet:
        """Every entry of every file, each file parsed whole."""
        return self._located(lambda index: merge_master_docs([index._doc(name) for name, _ in index._blobs]))

    def _located(self, read: Callable[[MasterIndex], MasterSet]) -> MasterSet:
        try:
            return read(self)
        except InputError:
            if self._marks:
                raise
            # a problem the merge finds (a key that is not a string, a file that is not a mapping) is
            # reported at its line, which takes the marks: read again with them
            return read(MasterIndex(self._blobs, fast=False))

    def select(self, keys: list[str] | set[str]) -> MasterSet:
        """The entries named by `keys` (unknown keys are ignored), with `all_keys` set to every key."""
        return self._located(lambda index: index._select(set(keys)))

    def _select(self, keep: set[str]) -> MasterSet:
        docs: list[YamlDoc] = []
        for name, _ in self._blobs:
            parts = self._split[name]
            if parts is not None and not keep.issuperset(k for k, _, _ in parts):
                try:
                    # pad with newlines so every reported line number is the file's
                    docs += [self._parse("\n" * (line - 1) + chunk.decode("utf-8", "replace"), name)
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
