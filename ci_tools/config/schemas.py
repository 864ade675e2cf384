"""The JSON Schemas shipped with the package, and their errors turned into reviewer-style findings.

The schemas (`ci_tools/schemas/*.schema.json`, Draft 2020-12) are the structural contract; editors
use them through the `# yaml-language-server: $schema=...` line at the top of each config file.
jsonschema's own messages ("Additional properties are not allowed ('x' was unexpected)") are
rewritten here into what a reviewer would say, located at the offending key's line.

jsonschema is imported lazily: only `config validate` pays for it.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
from typing import Any, Iterable

from ci_tools import resources
from ci_tools.engines import VERSION_PATTERN
from ci_tools.engines.install import PINNED
from ci_tools.errors import Finding, more_findings
from ci_tools.yaml.located import YamlDoc

SCHEMA_FILES = {
    "master": "master.schema.json",
    "runners": "runners.schema.json",
    "recipe": "recipe.schema.json",
    "eval-thresholds": "eval-thresholds.schema.json",
    "ci-policy": "ci-policy.schema.json",
    "disagg-recipe": "disagg-recipe.schema.json",
    "acceptance-lengths": "acceptance-lengths.schema.json",
}

# Patterns used in the schemas, and what a reviewer says when a value does not match.
_PATTERN_MESSAGES = {
    "^(?!image:)": ("a component version must be a release, package version or source commit, not an image reference",
                    "write the version of the component itself (e.g. \"0.3.2\"); the image is the entry's `image`"),
    "^recipes/[^\\s]+\\.ya?ml$": ("`recipe` must be a path under recipes/ ending in .yaml",
                                  "e.g. recipe: recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"),
    "^[a-z0-9][a-z0-9._-]*$": ("a point name must use lowercase letters, digits, '.', '_' and '-'",
                               "e.g. tp4-c16 or dep2-c64"),
    "^[A-Za-z_][A-Za-z0-9_]*$": ("an environment variable name must be letters, digits and '_', not starting with a digit",
                                 "e.g. SGLANG_NUMA_BIND_V2"),
    "^[a-z0-9][a-z0-9_-]*$": ("an engine argument name must be written as the engine spells it, without the leading "
                              "'--', in lowercase", "e.g. chunked-prefill-size: 16384 (SGLang), max_batch_size: 64 "
                              "(TensorRT-LLM)"),
    VERSION_PATTERN: ("an engine version must be a published version (a release, with an rc, post or dev suffix "
                      "where it has one)", "e.g. engine-versions: [\"0.5.21\", \"0.5.22\"] or [\"1.3.0rc24\"]"),
    PINNED.pattern: ("an install requirement must be pinned by version and hash",
                     "write `name==version --hash=sha256:<64 hex>`, one --hash per platform wheel (`pip hash FILE` "
                     "or the index's sha256 gives it)"),
}

# Unknown fields that people write for a reason: say what to do instead.
_UNKNOWN_FIELD_HINTS = {
    "kv-p2p-transfer": "kv-p2p-transfer is only valid when multinode: true",
    "prefill": "prefill/decode worker pools are only valid in multinode: true entries; a single-node point sets tp (ep, dp-attn) directly",
    "decode": "prefill/decode worker pools are only valid in multinode: true entries; a single-node point sets tp (ep, dp-attn) directly",
    "tp": "in a multinode entry, tp/ep/dp-attn belong inside `prefill:` and `decode:`",
    "pp": "in a multinode entry, pp/dcp-size/pcp-size belong inside `prefill:` and `decode:`",
    "dcp-size": "in a multinode entry, pp/dcp-size/pcp-size belong inside `prefill:` and `decode:`",
    "pcp-size": "in a multinode entry, pp/dcp-size/pcp-size belong inside `prefill:` and `decode:`",
    "trace-source": "the agentic trace is chosen by the harness, not per config; remove the field",
    "duration": "the agentic duration is set by the sweep (3600 s, or 1200 s with agentx-fast); remove the field",
    "gpus-per-node": "hardware facts live in runners.yaml under hardware.<runner label>",
    "available-cpu-dram-mib": "hardware facts live in runners.yaml under hardware.<runner label>",
    "total-cpu-dram-gb": "the DRAM budget is computed from dram-utilization and runners.yaml; remove the field",
    "disagg": "disagg: true needs multinode: true (prefill and decode on separate workers)",
}


# Bounds a reviewer explains: what the value measures, and how to read it off the machine.
_RANGE_HINTS = {
    "available-cpu-dram-mib": "the node's CPU DRAM in MiB (the total of `free -m`); no node has 64 TiB: "
                              "check the unit",
}


@functools.cache
def schema(name: str) -> dict:
    return json.loads(resources.text("ci_tools.schemas", SCHEMA_FILES[name]))


@functools.cache
def validator(name: str, ref: str | None = None) -> Any:
    """A compiled Draft 2020-12 validator for a schema, or for one of its `$defs` when `ref` is given."""
    sch = schema(name)
    defs = sch.get("$defs", {})
    root = defs[ref] if ref is not None else sch
    # The schemas are not recursive, so every local $ref can be replaced by its target once, here:
    # jsonschema then skips the reference lookups, which were half of the validation time.
    return _strict_class()({"$schema": sch["$schema"], **_inline(root, defs)})


def _inline(node: Any, defs: dict) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            target = _inline(defs[node["$ref"].removeprefix("#/$defs/")], defs)
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return {"allOf": [target, _inline(rest, defs)]} if rest else target
        return {k: _inline(v, defs) for k, v in node.items() if k not in ("$defs", "$schema", "$id")}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


@functools.cache
def _strict_class() -> Any:
    """Draft 2020-12, except that 2.0 is not an integer (YAML `tp: 2.0` is a typo, not a TP size) and
    YAML's .nan and .inf are not numbers (JSON has neither, and a NaN passes every minimum and maximum:
    `dram-utilization: .nan` was accepted)."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine_many({
        "integer": lambda _checker, value: _is_type(value, "integer"),
        "number": lambda _checker, value: _is_type(value, "number")})
    return validators.extend(Draft202012Validator, type_checker=checker)


def pathstr(path: Iterable) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def describe(value: Any) -> str:
    if value is None:
        return "null (empty)"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}" if math.isfinite(value) else f"{value} (not a finite number)"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_TYPE_WORDS = {"integer": "an integer", "string": "a string", "boolean": "true or false", "number": "a number",
               "array": "a list", "object": "a mapping", "null": "empty (null)"}


def _expected(types: Any) -> str:
    if isinstance(types, str):
        types = [types]
    words = [_TYPE_WORDS.get(t, t) for t in types if t != "null"]
    text = " or ".join(words) if words else "empty (null)"
    return text + (" (or left out)" if "null" in types and words else "")


def _ctx(path: tuple) -> str:
    """'<where the field sits>: ' so a message names its config key and position, or '' at top level."""
    parent = pathstr(path[:-1])
    return f"{parent}: " if parent else ""


def _field(path: tuple) -> str:
    for part in reversed(path):
        if isinstance(part, str):
            return part
    return "value"


def _type_hint(value: Any, types: Any) -> str:
    types = [types] if isinstance(types, str) else list(types)
    if isinstance(value, str):
        stripped = value.strip().lower()
        if "integer" in types and stripped.lstrip("-").isdigit():
            return f"write {value.strip()} without quotes"
        if "boolean" in types and stripped in ("true", "false", "yes", "no", "on", "off"):
            return f"write {'true' if stripped in ('true', 'yes', 'on') else 'false'} without quotes"
    if isinstance(value, float) and "integer" in types and value.is_integer():
        return f"write {int(value)} (an integer, no decimal point)"
    if isinstance(value, bool) and "integer" in types:
        return "write a number here, not true/false"
    if "string" in types and isinstance(value, bool):
        return "quote the value: YAML reads unquoted yes/no/on/off/true/false as a boolean"
    if "string" in types and isinstance(value, (int, float)):
        return f'quote the value ("{value}"): YAML reads it as a number, which also drops trailing zeros'
    if value is None:
        return "fill in a value, or remove the key"
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE_HINT
    return ""


_NON_FINITE_HINT = "write a finite number: YAML reads .nan and .inf as not-a-number and infinity"


def _refused_engine(path: tuple, value: str) -> tuple[str, str] | None:
    """(what, fix) for an engine or frontend InferenceX runs that ci-tools refuses, by name (its reason)."""
    from ci_tools.engines import UNSERVED_ENGINES, UNSERVED_FRONTENDS, engine

    if _field(path) == "kind" and "frontend" in path and value in UNSERVED_FRONTENDS:
        why, fix = UNSERVED_FRONTENDS[value]
        return f"is not served by ci-tools: {why}", fix
    if _field(path) == "engine" and value in UNSERVED_ENGINES:
        why, fix = UNSERVED_ENGINES[value]
        return f"is not served by ci-tools: {why}", fix
    plugin = engine(value) if _field(path) == "engine" else None
    no_workers = str(getattr(plugin, "NO_WORKERS", "") or "") if plugin is not None else ""
    if no_workers:
        return f"runs single-node only in ci-tools: {no_workers}", "write a single-node recipe for the entry"
    return None


def _unknown_names(err: Any) -> list:
    known = err.schema.get("properties") or {}
    return [name for name in err.instance if name not in known]


def _error_findings(doc: YamlDoc, base: tuple, err: Any, room: int | None = None) -> list[Finding]:
    """One jsonschema error -> located findings (usually one; one per unknown field, the first `room`)."""
    path = base + tuple(err.absolute_path)
    kind = err.validator
    value = err.instance
    where = pathstr(path)
    if kind == "additionalProperties" and isinstance(value, dict):
        allowed = sorted((err.schema.get("properties") or {}).keys())
        out = []
        for name in _unknown_names(err)[:room]:
            hint = _UNKNOWN_FIELD_HINTS.get(name, "") if allowed else ""
            close = difflib.get_close_matches(str(name), allowed, n=1, cutoff=0.75)
            if close and not hint:
                hint = f"did you mean '{close[0]}'?"
            if not hint and allowed:
                hint = "allowed fields here: " + ", ".join(allowed)
            out.append(doc.finding(path + (name,), f"{where or doc.file}: unknown field '{name}'", hint))
        return out
    if kind == "required" and isinstance(value, dict):
        return [doc.finding(path, f"{where or doc.file}: missing required field '{name}'",
                            f"add `{name}:` here (the schema named on the file's first line lists every field)")
                for name in err.validator_value if name not in value]
    if kind == "type" and not path:
        return [doc.finding(path, f"the file must contain {_expected(err.validator_value)}, got {describe(value)}",
                            "see the schema named on the file's first line for the expected layout")]
    if kind == "type":
        return [doc.finding(path, f"{_ctx(path)}'{_field(path)}' must be {_expected(err.validator_value)}, "
                            f"got {describe(value)}", _type_hint(value, err.validator_value))]
    if kind == "enum" and _field(path) in ("engine", "kind") and isinstance(value, str):
        refused = _refused_engine(path, value)
        if refused:
            return [doc.finding(path, f"{_ctx(path)}{_field(path)} {value!r} {refused[0]}", refused[1])]
    if kind in ("const", "enum"):
        options = [err.validator_value] if kind == "const" else err.validator_value
        shown = ", ".join("null" if o is None else json.dumps(o) for o in options)
        hint = ""
        if _field(path) == "multinode":
            hint = "an entry is multi-node (prefill/decode pools) or single-node (tp on one node)"
        elif _field(path) == "disagg":
            hint = _UNKNOWN_FIELD_HINTS["disagg"]
        close = difflib.get_close_matches(str(value), [str(o) for o in options if o is not None], n=1, cutoff=0.6)
        if close and not hint:
            hint = f"did you mean '{close[0]}'?"
        return [doc.finding(path, f"{_ctx(path)}'{_field(path)}' must be {'' if kind == 'const' else 'one of '}{shown}, "
                            f"got {describe(value)}", hint)]
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        words = {"minimum": "at least", "exclusiveMinimum": "greater than",
                 "maximum": "at most", "exclusiveMaximum": "less than"}[kind]
        return [doc.finding(path, f"{_ctx(path)}'{_field(path)}' must be {words} {err.validator_value}, got {value}",
                            _RANGE_HINTS.get(_field(path), ""))]
    if kind == "minLength":
        return [doc.finding(path, f"{_ctx(path)}'{_field(path)}' must not be empty", "fill in a value, or remove the key")]
    if kind in ("minItems", "minProperties"):
        return [doc.finding(path, f"{_ctx(path)}'{_field(path)}' must not be empty", "list at least one item, or remove the key")]
    if kind == "pattern":
        msg, hint = _PATTERN_MESSAGES.get(err.validator_value, (f"'{_field(path)}' has an invalid form", ""))
        return [doc.finding(path, f"{_ctx(path)}{msg} (got {describe(value)})", hint)]
    if kind == "propertyNames":
        # jsonschema reports the offending name as the instance of the nested error.
        inner = err.context[0] if err.context else None
        bad = inner.instance if inner is not None else value
        msg, hint = _PATTERN_MESSAGES.get(str(getattr(inner, "validator_value", "")), ("invalid name", ""))
        return [doc.finding(path + (bad,), f"{_ctx(path + (bad,))}{msg}: {bad!r}", hint)]
    if kind in ("anyOf", "oneOf") and err.context:
        # Prefer the branch that has the value's type: its errors say what is really wrong.
        branches: dict[int, list] = {}
        for sub in err.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        typed = [errs for errs in branches.values() if not any(e.validator == "type" and not e.relative_path for e in errs)]
        if typed:
            out = []
            for sub in typed[0]:
                out.extend(_error_findings(doc, path, _Rebased(sub, err)))
            return out
        return [doc.finding(path, f"{_ctx(path)}'{_field(path)}' has an unexpected form: got {describe(value)}",
                            _NON_FINITE_HINT if isinstance(value, float) and not math.isfinite(value) else "")]
    return [doc.finding(path, f"{where or 'the file'}: {err.message}")]


class _Rebased:
    """A nested anyOf error whose path is relative to its parent's instance."""

    def __init__(self, sub: Any, parent: Any):
        self._sub = sub
        self.absolute_path = list(sub.relative_path)
        self.validator = sub.validator
        self.validator_value = sub.validator_value
        self.instance = sub.instance
        self.schema = sub.schema
        self.context = sub.context
        self.relative_schema_path = sub.relative_schema_path
        self.message = sub.message


def policy_section_findings(doc: YamlDoc, section: str) -> list[Finding]:
    """The `section:` of a ci-policy.yaml document against that part of the policy schema, located,
    with a did-you-mean; [] when the file has no such section (its defaults apply)."""
    data = doc.data.get(section) if isinstance(doc.data, dict) else None
    return [] if data is None else check(doc, data, "ci-policy", section, (section,))


def check(doc: YamlDoc, data: Any, name: str, ref: str | None = None, base: tuple = (),
          limit: int | None = None) -> list[Finding]:
    """Validate `data` (found at `base` inside `doc`) against a shipped schema; findings in file order.

    With `limit`, at most that many are built and the rest are counted into one `more_findings` (its
    `omitted`): a hint per unknown field (difflib) cost 46 of the 49 s of a 10 MB mapping of them."""
    findings: list[Finding] = []
    errors = sorted(validator(name, ref).iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    typed_paths = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    more, at = 0, None   # what was counted without being built, and the place of the first of them
    required: set[tuple] = set()
    for err in errors:
        # A value of the wrong type also fails its const/enum/pattern; the type error says it all.
        if err.validator != "type" and tuple(err.absolute_path) in typed_paths:
            continue
        if err.validator == "required":  # one error per missing field, each of which lists them all
            if tuple(err.absolute_path) in required:
                continue
            required.add(tuple(err.absolute_path))
        room = None if limit is None else limit - len(findings)
        if room is not None and room <= 0:
            at = at or _first_place(doc, base, err)
            more += _count(doc, base, err)
            continue
        found = _error_findings(doc, base, err, room)
        findings.extend(found[:room])
        if room is not None and _count(doc, base, err, len(found)) > room:
            at = at or _first_place(doc, base, err, room)
            more += _count(doc, base, err, len(found)) - room
    if more and at is not None and limit is not None:   # counting happens only under a limit, placing with it
        findings.append(more_findings(doc.file, *at, more, limit=limit))
    return findings


def _count(doc: YamlDoc, base: tuple, err: Any, built: int | None = None) -> int:
    """How many findings `_error_findings` makes of `err`, without building the unknown-field ones."""
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        return len(_unknown_names(err))
    return built if built is not None else len(_error_findings(doc, base, err))


def _first_place(doc: YamlDoc, base: tuple, err: Any, skip: int = 0) -> tuple[int | None, int | None]:
    path = base + tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        return doc.mark(path + (_unknown_names(err)[skip],))
    return doc.mark(path)


# ---- a yes/no answer without jsonschema ----------------------------------------------------------
# `ci-tools plan` validates the few entries it selects and must stay fast; importing jsonschema costs
# more than the rest of the plan. `is_valid` interprets the same schema file for the keywords the
# shipped schemas use, and answers only "valid" (True), "invalid" (False) or "cannot tell" (None, a
# keyword it does not know). Callers run `check` whenever the answer is not True, so every message
# still comes from jsonschema; a test holds the two to the same verdict.

_ANNOTATIONS = frozenset({"description", "title", "$comment", "default", "examples", "$schema", "$id",
                          "markdownDescription", "deprecated"})


class _CannotTell(Exception):
    pass


def _is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)  # 2.0 is not an integer (_strict_class)
    if kind == "number":  # finite (_strict_class)
        return isinstance(value, int) and not isinstance(value, bool) or isinstance(value, float) and math.isfinite(value)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    raise _CannotTell(kind)


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    return a == b


@functools.cache
def _regex(pattern: str):
    import re

    return re.compile(pattern)


def _valid(node: Any, value: Any, defs: dict) -> bool:
    if node is True or node == {}:
        return True
    if node is False:
        return False
    for key, arg in node.items():
        if key in _ANNOTATIONS or key in ("then", "else", "$defs"):
            continue
        if key == "$ref":
            if not arg.startswith("#/$defs/"):
                raise _CannotTell(arg)
            ok = _valid(defs[arg.removeprefix("#/$defs/")], value, defs)
        elif key == "type":
            ok = any(_is_type(value, t) for t in ([arg] if isinstance(arg, str) else arg))
        elif key == "enum":
            ok = any(_json_equal(value, option) for option in arg)
        elif key == "const":
            ok = _json_equal(value, arg)
        elif key == "properties":
            ok = not isinstance(value, dict) or all(_valid(sub, value[name], defs)
                                                    for name, sub in arg.items() if name in value)
        elif key == "additionalProperties":
            known = node.get("properties") or {}
            if "patternProperties" in node:
                raise _CannotTell(key)
            ok = not isinstance(value, dict) or all(_valid(arg, v, defs) for k, v in value.items() if k not in known)
        elif key == "required":
            ok = not isinstance(value, dict) or all(name in value for name in arg)
        elif key == "items":
            ok = not isinstance(value, list) or all(_valid(arg, v, defs) for v in value)
        elif key == "propertyNames":
            ok = not isinstance(value, dict) or all(_valid(arg, k, defs) for k in value)
        elif key == "minLength":
            ok = not isinstance(value, str) or len(value) >= arg
        elif key == "minItems":
            ok = not isinstance(value, list) or len(value) >= arg
        elif key == "minProperties":
            ok = not isinstance(value, dict) or len(value) >= arg
        elif key == "uniqueItems":
            ok = not (arg and isinstance(value, list)) or \
                len({json.dumps(v, sort_keys=True) for v in value}) == len(value)
        elif key == "pattern":
            ok = not isinstance(value, str) or _regex(arg).search(value) is not None
        elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if not (isinstance(value, (int, float)) and not isinstance(value, bool)):
                ok = True
            elif key == "minimum":
                ok = value >= arg
            elif key == "maximum":
                ok = value <= arg
            elif key == "exclusiveMinimum":
                ok = value > arg
            else:
                ok = value < arg
        elif key == "anyOf":
            ok = any(_valid(sub, value, defs) for sub in arg)
        elif key == "allOf":
            ok = all(_valid(sub, value, defs) for sub in arg)
        elif key == "oneOf":
            ok = sum(1 for sub in arg if _valid(sub, value, defs)) == 1
        elif key == "if":
            branch = node.get("then") if _valid(arg, value, defs) else node.get("else")
            ok = branch is None or _valid(branch, value, defs)
        else:
            raise _CannotTell(key)
        if not ok:
            return False
    return True


def is_valid(name: str, ref: str | None, data: Any) -> bool | None:
    """Whether `data` passes a shipped schema (or one of its `$defs`), without jsonschema; None when
    the schema uses a keyword this interpreter does not know (then ask `check`)."""
    sch = schema(name)
    defs = sch.get("$defs", {})
    try:
        return _valid(defs[ref] if ref is not None else sch, data, defs)
    except _CannotTell:
        return None
