"""Changelog config-key patterns and the master keys they resolve against.

One pattern language for the changelog and the planner: `*` matches any run of characters
(including none), `?` exactly one character; everything else is literal (`.`, `[` included).
A pattern without `*`/`?` must name an existing key exactly. The master keys come from the one
line scanner, `ci_tools.yaml.scan`.
"""

from __future__ import annotations

import functools
import re

from ci_tools.yaml.scan import top_level_keys


def is_pattern(key: str) -> bool:
    return "*" in key or "?" in key


@functools.lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern:
    """The pattern as a regex that cannot backtrack across a `*`.

    `*` followed by literal text matches up to the *first* place that text occurs, inside an atomic
    group, so a later failure never retries an earlier `*` (earliest is always a safe choice for a
    middle segment: it leaves the most key for the rest). Only the last `*` before the end may scan,
    so matching costs at most about len(pattern) x len(key) steps. A `.*` per `*` backtracks
    exponentially instead: `*******Z` against a long key took 21 s.
    """
    head, *segments = [re.escape(part).replace(r"\?", ".") for part in pattern.split("*")]
    if not segments:
        return re.compile(head, re.S)
    *middle, last = segments
    return re.compile(head + "".join(f"(?>.*?{seg})" for seg in middle if seg) + ".*" + last, re.S)


def matches(pattern: str, key: str) -> bool:
    """Whether the whole `key` matches `pattern`."""
    return _compile(pattern).fullmatch(key) is not None


def resolve_keys(patterns: list[str], master_keys: list[str]) -> tuple[list[str], list[str]]:
    """(resolved keys de-duplicated first-seen, patterns that matched nothing).

    Exact keys resolve to themselves when present; wildcard patterns expand to every matching key
    in master order (the order the master files were read, then file order).
    """
    known = set(master_keys)
    resolved: list[str] = []
    seen: set[str] = set()
    unmatched: list[str] = []
    for pattern in patterns:
        if is_pattern(pattern):
            rx = _compile(pattern).fullmatch
            hits = [k for k in master_keys if rx(k)]
        else:
            hits = [pattern] if pattern in known else []
        if not hits:
            unmatched.append(pattern)
        for key in hits:
            if key not in seen:
                seen.add(key)
                resolved.append(key)
    return resolved, unmatched


def master_keys_from_bytes(content: bytes, file: str) -> list[str]:
    """Top-level keys of one master config file (the line scan, a full parse when it declines)."""
    keys = top_level_keys(content)
    if keys is not None:
        return keys
    from ci_tools.errors import Finding, InputError
    from ci_tools.yaml.located import load_yaml_text

    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{file}: not valid UTF-8", findings=[Finding(file, None, None, "not valid UTF-8 text")]) from None
    doc = load_yaml_text(text, file)
    if doc.data is None:
        return []
    if not isinstance(doc.data, dict):
        raise InputError(f"{file}: a master config must be a mapping of config key -> entry",
                         findings=[doc.finding((), "a master config must be a mapping of config key -> entry")])
    return [str(k) for k in doc.data]
