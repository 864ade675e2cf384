"""The one reader of ci-tools' own package data: the JSON Schemas, comment templates, the default policy.

Core modules may import this module although it reads files: what it reads is part of the installed
toolkit (the same bytes for every run, shipped in the wheel), never a user's input. It refuses any
package outside `ci_tools`, so it cannot become a back door for reading the repository under test.

May import: the standard library only (importlib.resources, functools).
"""

from __future__ import annotations

import functools
from importlib import resources


@functools.cache
def text(package: str, name: str) -> str:
    """The text of package data file `name` inside `package` (a `ci_tools` package), UTF-8."""
    if package != "ci_tools" and not package.startswith("ci_tools."):
        raise ValueError(f"ci_tools.resources reads only ci-tools' own package data, not {package!r}")
    return resources.files(package).joinpath(name).read_text(encoding="utf-8")
