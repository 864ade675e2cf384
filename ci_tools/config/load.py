"""Config inputs from files and git (shell): master configs and runners.yaml for `ci_tools.config.masters`,
and the change against a base revision for `config validate --base` (`ci_tools.config.touched`)."""

from __future__ import annotations

import glob
from pathlib import Path

from ci_tools import names
from ci_tools.config.crossfile import Change
from ci_tools.config.masters import MasterSet, merge_master_docs
from ci_tools.config.touched import change_from
from ci_tools.errors import Finding, InputError, UsageError
from ci_tools.yaml.load import load_yaml_file
from ci_tools.yaml.located import YamlDoc


def default_master_paths(root: Path) -> list[Path]:
    return sorted(Path(p) for p in glob.glob(str(root / names.MASTER_GLOB)))


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
                         findings=[Finding(names.MASTER_GLOB, None, None, "no master config files found",
                                           "run from the repository root, or pass --root / --master")])
    return merge_master_docs([load_yaml_file(path, _display(path, root)) for path in files])


def read_runners(path: Path, root: Path | None = None) -> YamlDoc:
    return load_yaml_file(path, _display(path, root))


def change_since(root: Path, base: str, masters: list[YamlDoc], keys: frozenset[str] = frozenset()) -> Change:
    """The Change between `base` and the working tree of the repository at `root`.

    `masters` are the loaded master documents with `file` names relative to `root`."""
    from ci_tools.gitio import Git, GitMissing

    git = Git(root)
    try:
        sha = git.rev_parse(base)
    except GitMissing as exc:
        raise UsageError(f"--base needs git: {exc.message}") from None
    except InputError:
        raise UsageError(f"--base {base}: not a commit in the git repository at {root}") from None
    try:
        files = set(git.worktree_changes(sha))
        shown = git.show_relative_many(sha, [doc.file for doc in masters if doc.file in files])
    except InputError as exc:
        raise UsageError(f"--base {base}: {exc.message}") from None
    texts = {name: (None if data is None else data.decode("utf-8", "replace")) for name, data in shown.items()}
    return change_from(base, files, masters, texts, keys)
