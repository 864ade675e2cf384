"""Plain scalars of new changelog entries that YAML 1.1 and YAML 1.2 read differently (pure).

This gate and the planner read the changelog with PyYAML (YAML 1.1); editors and the shipped JSON schema
read YAML 1.2 (`ci_tools/yaml/readings.py` says which scalars differ). An entry whose meaning depends on
the reader is refused where it is written, with the spelling both read alike. History is not judged here
(it is immutable and was read one way when it merged).
"""

from __future__ import annotations

from typing import Any

from ci_tools.errors import Finding
from ci_tools.yaml.readings import describe, divergences

BOOL_FIELDS = ("evals-only", "all-evals", "append-only")
INT_FIELDS = ("eval-min-prefill-ep",)


def _fix(path: tuple, text: str, old: Any) -> str:
    field = path[1] if len(path) == 2 else None
    if field in BOOL_FIELDS and isinstance(old, bool):
        return f"write `  {field}: {str(old).lower()}` (true and false are read alike by every YAML version)"
    if field in INT_FIELDS and type(old) is int:
        return f"write `  {field}: {old}` (a plain decimal number is read alike by every YAML version)"
    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'quote it: `"{quoted}"` if you mean the text'


def _what(path: tuple) -> str:
    if len(path) == 2:
        return f"{path[1]}"
    if len(path) == 3 and isinstance(path[2], int):
        return f"{path[1]} item {path[2] + 1}"
    return "a value"


def divergent_scalars(text: str, file: str, line_offset: int = 0, index_offset: int = 0) -> list[Finding]:
    """Every plain scalar of `text` (a run of whole entries, already parsed without error) that YAML 1.1
    and the 1.2 core schema read differently, and every explicit tag (1.2 resolves `!!bool yes` as an
    error, 1.1 as true)."""
    out: list[Finding] = []
    for d in divergences(text, line_offset):
        path = d.path
        if len(path) >= 1 and isinstance(path[0], int):
            path = (path[0] + index_offset,) + path[1:]
        entry = path[0] + 1 if path else "?"
        if d.tag is not None:
            out.append(Finding(file, d.line, d.col,
                               f"entry {entry}: the YAML tag {d.tag} on {d.value!r}: YAML 1.1 and 1.2 readers resolve "
                               "tagged values differently",
                               "remove the tag and write the plain value (`true`, `4`) or quoted text"))
            continue
        what = "a key" if d.is_key else _what(path)
        out.append(Finding(file, d.line, d.col,
                           f"entry {entry}: {what}: `{d.value}` is {describe(d.old)} to"
                           f" YAML 1.1 (PyYAML, this gate) but {describe(d.new)} to YAML 1.2 (editors, the"
                           " shipped JSON schema)",
                           _fix(path, d.value, d.old)))
    return out
