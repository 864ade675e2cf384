"""Which master entries a change touches, from a git base revision (`config validate --base REF`).

Pure: `touched_keys` compares entries at base and now, `change_from` builds the Change; the git reads
are `ci_tools.config.load.change_since`'s. An entry is touched when it is new, when any of its fields
differ from the base revision, or when a recipe file it references changed (`Change.files`).
"""

from __future__ import annotations

from ci_tools.config.crossfile import Change
from ci_tools.errors import InputError
from ci_tools.yaml.located import YamlDoc, load_yaml_text


def touched_keys(base: object, head: object) -> set[str]:
    """Keys of `head` (a parsed master file) that are new or differ from `base` (None: file is new)."""
    if not isinstance(head, dict):
        return set()
    if not isinstance(base, dict):
        return {k for k in head if isinstance(k, str)}
    return {k for k, v in head.items() if isinstance(k, str) and (k not in base or base[k] != v)}


def change_from(base: str, files: set[str], masters: list[YamlDoc], base_texts: dict[str, str | None],
                keys: frozenset[str] = frozenset()) -> Change:
    """The Change of a working tree against `base`: `files` it changed (untracked included), the master
    documents as they are now and their text at `base` (None: absent there) for those it changed."""
    touched = set(keys)
    for doc in masters:
        if doc.file not in files:
            continue
        text, old = base_texts.get(doc.file), None
        if text is not None:
            try:
                old = load_yaml_text(text, f"{base}:{doc.file}").data
            except InputError:
                old = None  # unreadable at base: everything in it counts as touched
        touched |= touched_keys(old, doc.data)
    return Change(frozenset(touched), frozenset(files))
