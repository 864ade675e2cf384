"""A line-based reader for the plain block-YAML shape config files are written in, without PyYAML.

`matrix full-sweep` reads ~376 KB of master configs per run; PyYAML spends most of its time building
event, mark and node objects (even with the C parser), so the read dominated the command. Master
configs use a small, regular part of YAML: block mappings and sequences (including `- key: value`
items and sequences at their key's indent), one-line flow sequences/mappings of plain or quoted
scalars, plain and simple quoted scalars, comments. `load_plain` reads exactly that and raises
`Unsupported` for anything else (anchors, tags, block scalars, multi-line scalars or flows, escapes,
duplicate keys, unusual characters, any malformed input), so callers fall back to PyYAML and get
its result or its located error. Within the subset the result equals PyYAML's safe loader (YAML 1.1
tag resolution: `yes`/`on` are booleans, and so on); the corpus and a property test check this.

Imports nothing heavy: `yaml` is imported only when a plain scalar needs its resolver (a number
form other than a plain decimal integer or float).
"""

from __future__ import annotations

import re
from typing import Any

from ci_tools.yaml import located
from ci_tools.yaml.located import MAX_DEPTH, load_yaml_text


class Unsupported(Exception):
    """The text is outside the subset (or malformed): parse it with PyYAML instead."""


# What PyYAML's Reader rejects as non-printable, every line break but \n, TAB (the located loader
# rejects it) and the BOM: any of these defers to PyYAML, which decides. (Written as the small set
# of excluded ranges: the complement with its large Unicode ranges costs milliseconds to compile.)
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
# a plain key: the first `:` followed by a space or the end of the line ends it (`cluster:h100:` is
# the key `cluster:h100`)
_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_./+:-]*?):(?: +(.*))?$")
_DQ = re.compile(r'"([^"\\]*)"(?: +#.*)?$')
_SQ = re.compile(r"'((?:[^']|'')*)'(?: +#.*)?$")
_FLOW_TOKEN = re.compile(r"[\[\]{},]|[^\[\]{},]+")
_MAX_KEY = 1000  # PyYAML rejects a key longer than 1024 characters (its simple-key limit)
_FLOW_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_./+-]*):(?: +(.*))?$")
# The number forms written in configs, and what PyYAML makes of them: decimal integers (`_` allowed
# after the first digit: `2_063_920`), decimal fractions, and dotted versions (`1.2.1`: neither its
# float, int nor timestamp pattern matches, so a string). Any other form asks PyYAML.
_INT = re.compile(r"-?(?:0|[1-9][0-9_]*)$")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]+$")
_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+){2,}$")
# YAML 1.1 (PyYAML) words for booleans and null; any other plain scalar starting with a letter,
# `_`, `/` or `(` is a string (no implicit resolver is registered for those first characters).
_WORDS: dict[str, Any] = {w: True for w in ("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")}
_WORDS.update({w: False for w in ("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")})
_WORDS.update({w: None for w in ("null", "Null", "NULL", "~")})
_STRING_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_/(")
_NUMBER_FIRST = frozenset("0123456789-+.~")


def _yaml_scalar(text: str) -> Any:
    """PyYAML's own resolution and construction of one plain scalar (rare forms only)."""
    import yaml

    node = yaml.ScalarNode(yaml.resolver.Resolver().resolve(yaml.ScalarNode, text, (True, False)), text)
    if node.tag == "tag:yaml.org,2002:str":
        return text
    try:
        return yaml.constructor.SafeConstructor.yaml_constructors[node.tag](yaml.constructor.SafeConstructor(), node)
    except (KeyError, yaml.YAMLError, ValueError, TypeError):
        raise Unsupported from None


def _plain(text: str, memo: dict[str, Any]) -> Any:
    """A plain scalar already cut to its extent (no comment, no surrounding spaces)."""
    try:
        return memo[text]
    except KeyError:
        pass
    first = text[0]
    if first in _STRING_FIRST:
        value = _WORDS.get(text, text)
    elif first in _NUMBER_FIRST and (first not in "-+" or len(text) > 1 and text[1] in "0123456789."):
        if _INT.match(text):
            value = int(text.replace("_", ""))
        elif _FLOAT.match(text):
            value = float(text)
        elif _VERSION.match(text):
            value = text
        elif text == "~":
            value = None
        else:
            value = _yaml_scalar(text)
    else:  # an indicator or a character PyYAML may treat specially
        raise Unsupported
    memo[text] = value
    return value


def _flow_item(text: str, memo: dict[str, Any]) -> Any:
    if not text:
        raise Unsupported  # `[a, , b]`, trailing comma
    first = text[0]
    if first == '"' or first == "'":
        if len(text) < 2 or text[-1] != first or first in text[1:-1] or "\\" in text:
            raise Unsupported
        return text[1:-1]
    if ":" in text or '"' in text or "'" in text:
        raise Unsupported  # flow-context `:` and quote rules differ between YAML versions
    return _plain(text, memo)


def _flow(text: str, memo: dict[str, Any]) -> Any:
    """A flow collection written on one line (nesting allowed), optionally followed by a comment."""
    # The same short lists and mappings recur; a copy of a flat one will do. They share `memo` with
    # plain scalars safely: a flow text starts with `[`/`{`, which no plain scalar passed to `_plain` does.
    flat = memo.get(text, _NOT_FLAT)
    if flat is not _NOT_FLAT:
        return flat.copy()
    value = _parse_flow(text, memo)
    if all(type(v) is not list and type(v) is not dict for v in (value.values() if type(value) is dict else value)):
        memo[text] = value.copy()
    return value


_NOT_FLAT = object()
_MAX_FLOW_OPEN = 16  # collections in one flow; configs write two or three
_CLOSE = {"[": "]", "{": "}"}


def _parse_flow(text: str, memo: dict[str, Any]) -> Any:
    cut = text.find("#")
    if cut >= 0:
        if text[cut - 1] != " ":
            raise Unsupported
        text = text[:cut].rstrip(" ")
    inner = text[1:-1]
    if text[-1] == _CLOSE[text[0]] and not ("[" in inner or "]" in inner or "{" in inner or "}" in inner):
        # flat (most flows in configs): split on commas, no tokenizer
        if not inner.strip(" "):
            return [] if text[0] == "[" else {}
        if text[0] == "[":
            return [_flow_item(part.strip(" "), memo) for part in inner.split(",")]
        flat: dict = {}
        for part in inner.split(","):
            m = _FLOW_KEY.match(part.strip(" "))
            if m is None or m.group(2) is None or m.end(1) > _MAX_KEY:
                raise Unsupported
            key = _plain(m.group(1), memo)
            if key in flat:
                raise Unsupported
            flat[key] = _flow_item(m.group(2), memo)
        return flat
    tokens = [t.strip(" ") for t in _FLOW_TOKEN.findall(text)]
    if tokens.count("[") + tokens.count("{") > _MAX_FLOW_OPEN:
        raise Unsupported  # deep nesting: PyYAML's loader checks the depth and words the refusal
    tokens.append("")  # sentinel: reading past the end fails the checks below
    n = len(tokens) - 1

    def skip(k: int) -> int:
        return k + 1 if tokens[k] == "" and k < n else k

    def node(k: int) -> tuple[Any, int]:
        t = tokens[k]
        if t == "[":
            out: list = []
            k = skip(k + 1)
            if tokens[k] == "]":
                return out, k + 1
            while True:
                value, k = node(skip(k))
                out.append(value)
                k = skip(k)
                if tokens[k] == "]":
                    return out, k + 1
                if tokens[k] != ",":
                    raise Unsupported
                k += 1
        if t == "{":
            pairs: dict = {}
            k = skip(k + 1)
            if tokens[k] == "}":
                return pairs, k + 1
            while True:
                m = _FLOW_KEY.match(tokens[skip(k)])
                if m is None or m.end(1) > _MAX_KEY:
                    raise Unsupported
                k = skip(k) + 1
                key = _plain(m.group(1), memo)
                if key in pairs:
                    raise Unsupported
                if m.group(2) is None:  # `key:` then a nested collection
                    k = skip(k)
                    if tokens[k] not in ("[", "{"):
                        raise Unsupported
                    pairs[key], k = node(k)
                else:
                    pairs[key] = _flow_item(m.group(2), memo)
                k = skip(k)
                if tokens[k] == "}":
                    return pairs, k + 1
                if tokens[k] != ",":
                    raise Unsupported
                k += 1
        if t in ("]", "}", ",") or k >= n:
            raise Unsupported
        return _flow_item(t, memo), k + 1

    value, end = node(0)
    if end != n:
        raise Unsupported
    return value


def _value(text: str, memo: dict[str, Any]) -> Any:
    """The value written after `key: ` or `- ` (non-empty, not a comment)."""
    first = text[0]
    if first == '"':
        m = _DQ.match(text)
        if m is None:
            raise Unsupported
        return m.group(1)
    if first == "'":
        m = _SQ.match(text)
        if m is None:
            raise Unsupported
        return m.group(1).replace("''", "'")
    if first == "[" or first == "{":
        return _flow(text, memo)
    cut = text.find(" #")
    if cut >= 0:
        text = text[:cut].rstrip(" ")
    if ": " in text or text[-1] == ":":
        raise Unsupported
    return _plain(text, memo)


def _is_item(s: str) -> bool:
    return s[0] == "-" and (len(s) == 1 or s[1] == " ")


_LINE = re.compile(r"^( *)([^ #\n](?:[^\n]*[^ \n])?)", re.M)  # (indent, content) of a non-comment line
_OPEN, _SCALAR, _FLOW_TEXT = 0, 1, 2


def _pair(s: str, memo: dict[str, Any]) -> tuple[Any, int, Any]:
    """`key: rest` -> (key, kind, value): `_OPEN` (nothing after the colon), `_SCALAR` (value), or
    `_FLOW_TEXT` (value is the flow text, parsed afresh each time since it builds a mutable object)."""
    m = _KEY.match(s)
    if m is None or m.end(1) > _MAX_KEY:
        raise Unsupported
    key = _plain(m.group(1), memo)
    rest = m.group(2)
    if rest is None or rest[0] == "#":
        return key, _OPEN, None
    if rest[0] == "[" or rest[0] == "{":
        return key, _FLOW_TEXT, rest
    return key, _SCALAR, _value(rest, memo)


def load_plain(text: str) -> Any:
    """The data of `text` if it is in the plain block subset; raises `Unsupported` otherwise."""
    if _UNSAFE.search(text):
        raise Unsupported
    # Indents stay strings of spaces: compared as strings they order like their lengths.
    lines: list[tuple[str, str]] = _LINE.findall(text)
    if not lines:
        return None
    n = len(lines)
    lines.append(("", "#"))  # sentinel: ends every block (content no real line has)
    memo: dict[str, Any] = {}
    pairs: dict[str, tuple[Any, int, Any]] = {}  # the same `key: value` lines recur many times

    def block(i: int, ind: str) -> tuple[Any, int]:
        s = lines[i][1]
        return seq(i, ind) if s[0] == "-" and (len(s) == 1 or s[1] == " ") else mapping(i, ind)

    def mapping(i: int, ind: str) -> tuple[dict, int]:
        out: dict = {}
        while True:
            s = lines[i][1]
            kv = pairs.get(s)
            if kv is None:
                kv = pairs[s] = _pair(s, memo)
            key, kind, value = kv
            if key in out:
                raise Unsupported
            i += 1
            nxt = lines[i][0]
            if kind == _OPEN:
                if nxt > ind:
                    s = lines[i][1]
                    if s[0] == "-" and (len(s) == 1 or s[1] == " "):
                        value, i = seq(i, nxt)
                    else:
                        value, i = mapping(i, nxt)
                elif nxt == ind and _is_item(lines[i][1]):
                    value, i = seq(i, ind)  # a sequence may sit at its key's indent
                nxt = lines[i][0]
            elif kind == _FLOW_TEXT:
                value = _flow(value, memo)
            out[key] = value
            if nxt < ind or i == n:
                return out, i
            if nxt > ind:
                raise Unsupported

    def seq(i: int, ind: str) -> tuple[list, int]:
        out: list = []
        while True:
            s = lines[i][1]
            if s[0] != "-" or (len(s) > 1 and s[1] != " "):
                return out, i  # a key at this indent: the caller's mapping continues (or rejects it)
            rest = s[1:].lstrip(" ")
            if not rest or rest[0] == "#":
                i += 1
                nxt = lines[i][0]
                value = None
                if nxt > ind:
                    value, i = block(i, nxt)
            elif _is_item(rest) or _KEY.match(rest):
                col = ind + " " * (len(s) - len(rest))
                lines[i] = (col, rest)  # `- key: v` opens a mapping at the key's column
                value, i = block(i, col)
            else:
                value = _value(rest, memo)
                i += 1
            out.append(value)
            nxt = lines[i][0]
            if nxt < ind:
                return out, i
            if nxt > ind:
                raise Unsupported

    try:
        data, end = block(0, lines[0][0])
    except RecursionError:
        raise Unsupported from None
    if end != n:
        raise Unsupported
    return data


# --- data without marks: the plain reader above, else PyYAML's C loader -----------------------

_STR_TAG = "tag:yaml.org,2002:str"
_DEEP_INDENT = re.compile(f"^ {{{MAX_DEPTH - 2},}}", re.M)


def load_data_fast(text: str, file: str = "<input>") -> Any:
    """The parsed data of `text` without line marks, about twice as fast as `load_yaml_text` on large
    files (for whole-file reads on hot paths, e.g. `matrix full-sweep` over every master config).

    Anything unusual (hygiene problems, malformed YAML, duplicate or unhashable keys) is handed to
    `load_yaml_text`, so the caller gets the same located error either way.
    """
    if "\t" in text or "\x00" in text or text.startswith("\ufeff") or len(text) > located.MAX_YAML_FILE_BYTES:
        return load_yaml_text(text, file).data   # which refuses the oversized text
    # Block nesting is at most about one level per column of indentation: text indented that deep goes
    # to the loaders below, which check MAX_DEPTH (the plain reader does not).
    if _DEEP_INDENT.search(text) is None:
        try:
            return load_plain(text)  # the plain block shape configs are written in, without PyYAML's objects
        except Unsupported:
            pass
    loader = located.memo_loader(text)
    yaml = located.yaml
    constructors = loader.yaml_constructors

    def build(node: Any, depth: int = 0) -> Any:
        kind = type(node)
        if kind is yaml.ScalarNode:
            if node.tag == _STR_TAG:
                return node.value
            return constructors[node.tag](loader, node)
        if node.tag != (located.MAP_TAG if kind is yaml.MappingNode else located.SEQ_TAG):
            raise _Defer  # a tag on a collection: the located loader refuses it
        if kind is yaml.MappingNode:
            loader.flatten_mapping(node)
            if depth >= MAX_DEPTH:
                raise _Defer
            out = {build(k, depth + 1): build(v, depth + 1) for k, v in node.value}
            if len(out) != len(node.value):
                raise _Defer
            return out
        if depth >= MAX_DEPTH:
            raise _Defer
        return [build(item, depth + 1) for item in node.value]

    try:
        node = loader.get_single_node()
        if node is not None and "&" in text and located.graph_problem(node, file) is not None:
            raise _Defer
        return None if node is None else build(node)
    except (yaml.YAMLError, TypeError, KeyError, ValueError, OverflowError, RecursionError, _Defer):
        return load_yaml_text(text, file).data
    finally:
        loader.dispose()


class _Defer(Exception):
    """Raised inside `load_data_fast` to hand an unusual document to the located loader."""
