"""The one top-level key scanner: a master config's entries found by a line scan, without parsing.

Every master config is a mapping whose column-1 lines are `<config-key>:` (the entry's value on the
indented lines below), comments or blanks. In that shape the top-level keys, and the bytes of each
entry, are found by looking at column 1 alone: the changelog gate needs only the key names (parsing
the 320 KB NVIDIA master costs ~0.1 s with the C loader), the planner parses only the entries a change
selects. Anything else at column 1 (a flow mapping, a quoted key, a scalar on the key line, document
markers, anchors written there) and duplicate keys make the scan decline (None): the caller parses
the file with `ci_tools.yaml.located`, which gives the data or the located error.
"""

from __future__ import annotations

import re

_TOP_KEY_LINE = re.compile(rb"([A-Za-z0-9_][A-Za-z0-9_.+-]*):[ ]*(?:#[^\n]*)?")
_SKIP_FIRST = b" #"  # a line starting with these is indented (inside an entry) or a comment
_COMMENT_LINE = re.compile(rb"^[ ]*#[^\n]*", re.M)


def _starts(content: bytes) -> list[tuple[str, int, int]] | None:
    """(key, line number, byte offset of its line) per column-1 line, or None when one is not `<key>:`.
    (A split and a per-line check: about three times faster than a multi-line regex over the bytes.)"""
    starts: list[tuple[str, int, int]] = []
    pos = 0
    for number, line in enumerate(content.split(b"\n"), 1):
        if line and line[0] not in _SKIP_FIRST:
            key = _TOP_KEY_LINE.fullmatch(line)
            if key is None:
                return None
            starts.append((key.group(1).decode("ascii"), number, pos))
        pos += len(line) + 1
    if len({k for k, _, _ in starts}) != len(starts):
        return None  # duplicates: the real parser reports them with both places
    return starts


def top_level_keys(content: bytes) -> list[str] | None:
    """The top-level keys in file order, or None when the file is not in the plain shape."""
    starts = _starts(content)
    return None if starts is None else [k for k, _, _ in starts]


def has_alias_syntax(content: bytes) -> bool:
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
    """(key, first line, bytes of its block) per top-level entry; None when the file is not in the
    plain shape or uses anchor/alias syntax anywhere (an alias may cross entries, so the blocks would
    not be independent documents).
    """
    starts = _starts(content)
    if starts is None or has_alias_syntax(content):
        return None
    ends = [pos for _, _, pos in starts[1:]] + [len(content)]
    return [(key, line, content[pos:end]) for (key, line, pos), end in zip(starts, ends)]
