"""Search-space rows written twice in one master file, found before the file is parsed with marks (pure).

A row repeated verbatim (flow or block style, keys in any order, or through an alias) lists the same
points again: it is an error, and one that costs. The adversarial pass's master of one row 150,000 times
took 43 s and 0.9 GB to be accepted, almost all of it in the located parse (`yaml/located.py`) and the
per-row checks after it. This walk reads the C parser's events only, keeps one small canonical form per
row, and stops once a screen of repeats is found: the file is refused with them located, the rest of it
unread and unchecked until they are gone. Rows that only
share some points (concurrency 32 in two rows, as one InferenceX entry has) are `rules.py`'s warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ci_tools.errors import MAX_FINDINGS_PER_FILE, Finding

KEY = "search-space"


@dataclass(frozen=True)
class Repeat:
    entry: str          # the master entry (top-level key)
    line: int           # where the repeated row starts (1-based)
    col: int
    first: int          # the line of the row it repeats


def _canonical(kind: str, children: list) -> Any:
    if kind == "map":
        pairs = [(children[i], children[i + 1]) for i in range(0, len(children) - 1, 2)]
        return ("map", tuple(sorted(pairs, key=repr)))
    return ("seq", tuple(children))


def repeated_rows(text: str, limit: int | None = None) -> list[Repeat]:
    """The search-space rows of `text` identical to an earlier row of the same search space, the first
    LIMIT + 1 of them (the walk stops there: the rest of the file is never read); [] when the C parser
    cannot read the text (the located parse reports why). Only rows, and nodes with an anchor (a row may
    be an alias of one), are kept in canonical form: never a copy of the whole file."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: list[Repeat] = []
    anchors: dict[str, Any] = {}
    # frames: [kind, children, expecting a key (maps), last key, anchor, start mark, rows (a search space), keep]
    stack: list[list] = []
    entry = ""
    try:
        for ev in yaml.parse(text, Loader=loader):
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                kind = "map" if isinstance(ev, yaml.MappingStartEvent) else "seq"
                parent = stack[-1] if stack else None
                space = kind == "seq" and parent is not None and parent[0] == "map" and not parent[2] \
                    and parent[3] == KEY
                keep = bool(ev.anchor) or (parent is not None and (parent[7] or parent[6] is not None))
                if parent is not None and len(stack) == 1 and parent[0] == "map":
                    entry = str(parent[3])
                stack.append([kind, [], True, None, ev.anchor, ev.start_mark, {} if space else None, keep])
                continue
            if isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                kind, children, _, _, anchor, mark, _, keep = stack.pop()
                value = _canonical(kind, children) if keep else None
                if anchor:
                    anchors[anchor] = value
                _add(stack, value, mark, out, entry)
                continue
            if isinstance(ev, yaml.ScalarEvent):
                value = ("scalar", ev.value, bool(ev.implicit[0]), ev.tag)
                if ev.anchor:
                    anchors[ev.anchor] = value
                _add(stack, value, ev.start_mark, out, entry, ev.value)
            elif isinstance(ev, yaml.AliasEvent):
                _add(stack, anchors.get(ev.anchor, ("alias", ev.anchor)), ev.start_mark, out, entry)
            if limit is not None and len(out) > limit:
                break
    except yaml.YAMLError:
        return []
    return out


def _add(stack: list[list], value: Any, mark: Any, out: list[Repeat], entry: str, text: str | None = None) -> None:
    """A node is complete: it becomes its parent's child (a key, a value, or a row of a search space)."""
    if not stack:
        return
    top = stack[-1]
    if top[0] == "map" and top[2]:
        top[3] = text               # the key, for the value that follows (a search-space sequence)
    if top[0] == "map":
        top[2] = not top[2]
    rows = top[6]
    if rows is not None:
        here = (mark.line + 1, mark.column + 1)
        first = rows.setdefault(value, here)
        if first != here:
            out.append(Repeat(entry, here[0], here[1], first[0]))
    elif top[7]:
        top[1].append(value)


def findings(file: str, text: str) -> list[Finding]:
    """One located error per repeated row of `text`; past a file's screen of findings (MAX_FINDINGS_PER_FILE),
    its last one says more rows repeat (the walk stopped there)."""
    room = MAX_FINDINGS_PER_FILE - 1
    repeats = repeated_rows(text, room)
    shown = [Finding(file, r.line, r.col,
                     f"{r.entry}: this search-space row repeats the row at line {r.first} exactly: its points would "
                     "be benchmarked twice",
                     "delete it (the rest of this file is checked once no row repeats)") for r in repeats[:room]]
    if len(repeats) > room:
        r = repeats[room]
        shown.append(Finding(file, r.line, r.col, f"more search-space rows repeat from here on: only the first {room} "
                             "are shown, and the file was read no further",
                             "delete every row that repeats another, then run again"))
    return shown
