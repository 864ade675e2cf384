"""`config bump-image`: point one config's image at a new digest-pinned reference everywhere it is named.

The places: the master entry's `image:`, the recipe its `recipe:` names and every `CONFIG_FILE=` recipe
of its search space. Each is located with ruamel.yaml's round-trip loader (line and column of the
value) and only the scalar between its quotes (if any) is replaced, so comments, key order, quoting
and every other byte stay as they were: the diff is exactly the image lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

PINNED = re.compile(r"[a-z0-9][a-z0-9._/-]*(?::[0-9]+)?/?[a-z0-9._/-]*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}@sha256:[0-9a-f]{64}")


def pinned(ref: str) -> bool:
    return PINNED.fullmatch(ref) is not None


@dataclass(frozen=True)
class Edit:
    file: str
    line: int      # 1-based
    old: str
    new: str


def replace_at(text: str, line: int, col: int, old: str, new: str) -> str:
    """`text` with the scalar `old` starting at (1-based line, 0-based col) replaced by `new`, quotes kept."""
    lines = text.split("\n")
    row = lines[line - 1]
    start = col + (1 if row[col:col + 1] in ("'", '"') else 0)
    if row[start:start + len(old)] != old:
        raise ValueError(f"line {line}: expected {old!r} at column {start + 1}")
    lines[line - 1] = row[:start] + new + row[start + len(old):]
    return "\n".join(lines)


def _located(text: str, file: str, path: tuple) -> tuple[int, int, object]:
    """(line, col, value) of the mapping value at `path`, from ruamel.yaml's round-trip loader."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from ci_tools.errors import Finding, InputError

    try:
        node = YAML(typ="rt").load(text)
    except YAMLError as exc:
        raise InputError(f"{file}: not valid YAML: {exc}", findings=[Finding(file, None, None, f"not valid YAML: {exc}")]) from None
    for key in path[:-1]:
        node = node.get(key) if hasattr(node, "get") else None
    if not hasattr(node, "lc") or path[-1] not in node:
        raise InputError(f"{file}: no `{'.'.join(map(str, path))}` to rewrite")
    line, col = node.lc.value(path[-1])
    return line + 1, col, node[path[-1]]


def plan_bump(master_texts: Mapping[str, str], recipe_texts: Mapping[str, str | None], key: str,
              image: str) -> tuple[list[Edit], dict[str, str]]:
    """The edits (and new file texts) that point `key`'s image at `image`. Pure over file texts."""
    from ci_tools.config.crossfile import recipe_refs
    from ci_tools.errors import InputError, UsageError

    if not pinned(image):
        raise UsageError(f"--image {image!r} is not pinned by digest: give repo:tag@sha256:<64 hex> (the tag says what"
                         " it is, the digest what runs; e.g. `docker buildx imagetools inspect repo:tag` prints it)")
    from ci_tools.yaml.fast import load_data_fast

    found = [(f, t) for f, t in master_texts.items() if isinstance(d := load_data_fast(t, f), dict) and key in d]
    if not found:
        raise UsageError(f"--config-key {key!r} is not an entry of {', '.join(master_texts) or 'any master config'}")
    file, text = found[0]
    entry = load_data_fast(text, file)[key]
    edits, out = [], {}
    line, col, old = _located(text, file, (key, "image"))
    out[file] = replace_at(text, line, col, str(old), image)
    edits.append(Edit(file, line, str(old), image))
    for rel in dict.fromkeys(ref for _, ref, _ in recipe_refs(entry)):
        rtext = recipe_texts.get(rel)
        if rtext is None:
            raise InputError(f"{rel}: the recipe {key} names does not exist; nothing was written")
        line, col, old = _located(rtext, rel, ("image",))
        out[rel] = replace_at(rtext, line, col, str(old), image)
        edits.append(Edit(rel, line, str(old), image))
    return [e for e in edits if e.old != e.new], {f: t for f, t in out.items()}
