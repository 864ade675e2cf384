"""Master configs and runners.yaml from files (shell): the reads behind `ci_tools.config.masters`."""

from __future__ import annotations

import glob
from pathlib import Path

from ci_tools import names
from ci_tools.config.masters import MasterSet, merge_master_docs
from ci_tools.errors import Finding, InputError
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
