"""Plain scalars that YAML 1.1 and YAML 1.2 read differently (pure): the one definition, for the
changelog gate (`changelog/readings.py`) and the recipes (`config/recipetext.py`).

ci-tools reads its files with PyYAML (YAML 1.1: `yes`, `on`, `1_0`, `010`, `2024-01-01`, `1:30` are a
boolean, numbers and a date); editors, the shipped JSON schemas behind them and other YAML 1.2 tools use
the 1.2 core schema, where those are text and `0o17`, `1e3` are numbers. A value whose meaning depends on
the reader is refused where it is written, with the spelling both read alike.

The 1.2 reading is the core schema's tag resolution (YAML 1.2.2, section 10.3.2), written out below;
a test compares it with ruamel.yaml and with yaml-language-server.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

_NULL = re.compile(r"(?:~|null|Null|NULL|)$")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT10 = re.compile(r"[-+]?[0-9]+$")
_INT8 = re.compile(r"0o[0-7]+$")
_INT16 = re.compile(r"0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"\.(?:nan|NaN|NAN)$")


def core_value(text: str) -> Any:
    """What a YAML 1.2 core-schema reader makes of the plain scalar `text`."""
    if _NULL.match(text):
        return None
    if text in _BOOL:
        return _BOOL[text]
    if _INT10.match(text):
        return int(text)
    if _INT8.match(text):
        return int(text[2:], 8)
    if _INT16.match(text):
        return int(text[2:], 16)
    if _FLOAT.match(text):
        return float(text)
    if _INF.match(text):
        return -math.inf if text[0] == "-" else math.inf
    if _NAN.match(text):
        return math.nan
    return text


# Numbers as some YAML 1.2 readers extend the core schema (ruamel.yaml: `_` between digits, `0b`, octal
# without `o`): text to the core schema, a number there. Anything matching is refused as ambiguous too.
_LENIENT_NUMBER = re.compile(r"[-+]?(?:0b[0-1_]+|0o?[0-7_]+|[0-9][0-9_]*|0x[0-9a-fA-F_]+"
                             r"|[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+"
                             r"|\.[0-9_]+(?:[eE][-+]?[0-9]+)?)$")


def yaml12_value(text: str) -> Any:
    """The 1.2 reading of `text` when every 1.2 reader agrees on it, else `AMBIGUOUS`."""
    value = core_value(text)
    if isinstance(value, str) and _LENIENT_NUMBER.match(text):
        return AMBIGUOUS
    return value


class _Ambiguous:
    def __repr__(self) -> str:
        return "a number to some YAML 1.2 readers (ruamel.yaml) and text to others"


AMBIGUOUS = _Ambiguous()


def yaml11_value(text: str) -> Any:
    """What PyYAML's safe loader (YAML 1.1) makes of the plain scalar `text`; a marker object when it
    cannot construct one (the located loader reports that on its own)."""
    import yaml

    tag = yaml.resolver.Resolver().resolve(yaml.ScalarNode, text, (True, False))
    if tag == "tag:yaml.org,2002:str":
        return text
    try:
        return yaml.constructor.SafeConstructor.yaml_constructors[tag](
            yaml.constructor.SafeConstructor(), yaml.ScalarNode(tag, text))
    except Exception:  # noqa: BLE001 - any failure to construct is "not read as 1.2 reads it"
        return _UNREADABLE


_UNREADABLE = object()


def same_reading(a: Any, b: Any) -> bool:
    if type(a) is not type(b):  # True == 1 in Python; a boolean and an integer are different readings
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def describe(value: Any) -> str:
    if value is None:
        return "null (no value)"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the text {value!r}"
    if value is AMBIGUOUS:
        return repr(value)
    return f"a {type(value).__name__}" if value is not _UNREADABLE else "nothing it can construct"


@dataclass(frozen=True)
class Divergence:
    """One scalar whose reading depends on the YAML version (or carries an explicit tag)."""
    path: tuple               # keys and list indexes from the document's root; a key itself ends in "<key>"
    line: int                 # 1-based, plus the caller's line offset
    col: int
    value: str                # as written
    old: Any                  # YAML 1.1's reading (PyYAML)
    new: Any                  # the YAML 1.2 core schema's (or AMBIGUOUS)
    is_key: bool = False
    tag: str | None = None    # an explicit tag (`!!bool yes`): 1.1 and 1.2 resolve those differently


def divergences(text: str, line_offset: int = 0) -> list[Divergence]:
    """Every plain scalar of `text` (already parsed without error) that YAML 1.1 and the 1.2 core schema
    read differently, and every explicit tag. Walks the C parser's events: no second data build, keys
    included."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
    starts = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    # frames: [path, is_mapping, next index, expecting a key, pending key]
    stack: list[list] = []
    out: list[Divergence] = []

    for ev in yaml.parse(text, Loader=loader):
        kind = type(ev)
        if kind in ends:
            stack.pop()
            _advance(stack, None)
            continue
        if kind is not scalar and kind is not alias and kind not in starts:
            continue
        if not stack:
            path: tuple = ()
            is_key = False
        else:
            top = stack[-1]
            is_key = top[1] and top[3]
            path = top[0] + (("<key>",) if is_key else (top[4],) if top[1] else (top[2],))
        if kind is scalar:
            line, col = ev.start_mark.line + 1 + line_offset, ev.start_mark.column + 1
            explicit = ev.tag is not None and ev.tag != "!" and not ev.implicit[0]
            if explicit:
                out.append(Divergence(path, line, col, ev.value, None, None, is_key,
                                      ev.tag.replace("tag:yaml.org,2002:", "!!")))
            elif ev.style in (None, "") and ev.implicit[0]:
                old, new = yaml11_value(ev.value), yaml12_value(ev.value)
                if not same_reading(old, new):
                    out.append(Divergence(path, line, col, ev.value, old, new, is_key))
            _advance(stack, ev.value if is_key else None)
        elif kind is alias:
            _advance(stack, None)
        else:
            stack.append([path, kind is yaml.MappingStartEvent, 0, True, None])
    return out


def _advance(stack: list[list], key: Any) -> None:
    """A node of the top collection is complete: the next index, or the key/value turn of a mapping."""
    if not stack:
        return
    top = stack[-1]
    if top[1]:
        if top[3]:
            top[4] = key
        top[3] = not top[3]
    else:
        top[2] += 1
