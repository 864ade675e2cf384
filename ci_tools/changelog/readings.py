"""Plain scalars of new entries that YAML 1.1 and YAML 1.2 read differently (pure).

This gate and the planner read the changelog with PyYAML (YAML 1.1: `yes`, `on`, `1_0`, `010`,
`2024-01-01`, `1:30` are a boolean, numbers and a date); editors, the shipped JSON schema behind them
and other YAML 1.2 tools use the 1.2 core schema, where those are text and `0o17`, `1e3` are numbers.
An entry whose meaning depends on the reader is refused where it is written, with the spelling both
read alike. History is not judged here (it is immutable and was read one way when it merged).

The 1.2 reading is the core schema's tag resolution (YAML 1.2.2, section 10.3.2), written out below;
a test compares it with ruamel.yaml and with yaml-language-server.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ci_tools.errors import Finding

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
    error, 1.1 as true). Walks the C parser's events: no second data build, keys included."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    scalar, alias = yaml.ScalarEvent, yaml.AliasEvent
    starts = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
    ends = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
    # frames: [path, is_mapping, next index, expecting a key, pending key]
    stack: list[list] = []
    out: list[Finding] = []

    def where(ev: Any) -> tuple[int, int]:
        return ev.start_mark.line + 1 + line_offset, ev.start_mark.column + 1

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
        if len(path) >= 1 and isinstance(path[0], int):
            path = (path[0] + index_offset,) + path[1:]
        if kind is scalar:
            explicit = ev.tag is not None and ev.tag != "!" and not ev.implicit[0]
            if explicit:
                line, col = where(ev)
                out.append(Finding(file, line, col,
                                   f"entry {path[0] + 1 if path else '?'}: the YAML tag {ev.tag.replace('tag:yaml.org,2002:', '!!')}"
                                   f" on {ev.value!r}: YAML 1.1 and 1.2 readers resolve tagged values differently",
                                   "remove the tag and write the plain value (`true`, `4`) or quoted text"))
            elif ev.style in (None, "") and ev.implicit[0]:
                old, new = yaml11_value(ev.value), yaml12_value(ev.value)
                if not same_reading(old, new):
                    line, col = where(ev)
                    what = "a key" if is_key else _what(path)
                    out.append(Finding(file, line, col,
                                       f"entry {path[0] + 1 if path else '?'}: {what}: `{ev.value}` is {describe(old)} to"
                                       f" YAML 1.1 (PyYAML, this gate) but {describe(new)} to YAML 1.2 (editors, the"
                                       " shipped JSON schema)",
                                       _fix(path, ev.value, old)))
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
