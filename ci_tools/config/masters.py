"""Reading master configs and runners.yaml into plain data (no schema validation here).

`read_masters` is the fast path used by every command that needs the entries (plan, matrix, lint):
it parses each file once and merges them in the order given. Structural validation lives in the
config validator; here only what would make the merged data ambiguous is rejected.
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path

from ci_tools import paths
from ci_tools.errors import Finding, InputError
from ci_tools.yamlio import YamlDoc, load_yaml_file


@dataclass
class MasterSet:
    """All master entries, merged in file order, remembering which file (and YamlDoc) each came from."""

    entries: dict[str, dict] = field(default_factory=dict)
    origin: dict[str, YamlDoc] = field(default_factory=dict)
    docs: list[YamlDoc] = field(default_factory=list)

    def keys(self) -> list[str]:
        return list(self.entries)


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
