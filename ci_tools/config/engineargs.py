"""Recipe engine arguments checked by the kind of value the engine's own parser converts them to
(`ci_tools.engines.argkinds`, generated from the pinned wheels) and by the ranges a benchmark needs.

The schema takes any scalar as an argument's value: `chunked-prefill-size: .nan` rendered as
`--chunked-prefill-size nan` only failed when the server started on a GPU runner, and
`max-running-requests: 0` parsed and then served nothing. Pure: findings over a loaded recipe.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

from ci_tools.engines.argkinds import KINDS
from ci_tools.errors import Finding
from ci_tools.yaml.located import YamlDoc

# Counts the engine parses as any integer but cannot serve a benchmark with at 0 or below (it starts,
# then admits no request or fails at its first batch). Names as the engine spells them; a test checks
# each is an integer argument of the engine's parser.
POSITIVE: dict[str, frozenset[str]] = {
    "sglang": frozenset({"max-running-requests", "page-size", "speculative-eagle-topk",
                         "speculative-num-draft-tokens", "speculative-num-steps", "cuda-graph-max-bs-decode"}),
    "vllm": frozenset({"max-num-seqs", "block-size"}),
}
# Shares of the GPU's memory: 0 < x <= 1 (1.5 or 90 is a typo for 0.9 the engine fails on at start).
FRACTIONS: dict[str, frozenset[str]] = {
    "sglang": frozenset({"mem-fraction-static"}),
    "vllm": frozenset({"gpu-memory-utilization"}),
}
_SKIP = ("router", "frontend")  # their `args` are the router's, not the engine's
_WORDS = {"int": "an integer", "float": "a number"}


def arg_sections(data: Any, path: tuple = ()) -> Iterator[tuple[tuple, dict]]:
    """Every engine `args` mapping of a recipe (single-node or disaggregated), with its path."""
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        if key in _SKIP:
            continue
        if key == "args" and isinstance(value, dict):
            yield path + (key,), value
        elif isinstance(value, dict):
            yield from arg_sections(value, path + (key,))


def problem(engine: str, name: str, value: Any) -> tuple[str, str] | None:
    """(message, hint) for one argument's value, or None."""
    if value is None or value is False:
        return None  # drops a base argument
    if isinstance(value, float) and not math.isfinite(value):
        return (f"engine argument '{name}' must be a finite number, got {value}",
                "write a number, or leave the argument out for the engine's default")
    kind = KINDS.get(engine, {}).get(name)
    if kind is not None:
        number = _as(kind, value)
        if number is None:
            hint = (f"write {int(value)} (an integer, no decimal point)" if kind == "int" and isinstance(value, float)
                    and value.is_integer() else f"{engine}'s parser reads --{name} as {_WORDS[kind]}")
            return f"engine argument '{name}' must be {_WORDS[kind]}, got {_describe(value)}", hint
        if name in POSITIVE.get(engine, ()) and number < 1:
            return (f"engine argument '{name}' must be at least 1, got {value}",
                    f"{engine} accepts it but serves no benchmark with it; leave it out for the default")
        if name in FRACTIONS.get(engine, ()) and not 0 < number <= 1:
            return (f"engine argument '{name}' is a share of the GPU's memory: it must be greater than 0 and at "
                    f"most 1, got {value}", "e.g. 0.85")
    return None


def _as(kind: str, value: Any) -> float | int | None:
    """The value as the parser converts what `render_args` writes (`str(value)`), or None if it fails."""
    if isinstance(value, (bool, list, dict)):
        return None  # true is a bare flag and a list several values: the option wants one number
    try:
        number = int(str(value)) if kind == "int" else float(str(value))
    except ValueError:
        return None
    return number if kind == "int" or math.isfinite(number) else None


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()} (a bare flag)"
    if isinstance(value, list):
        return "a list"
    return repr(value) if isinstance(value, str) else str(value)


def findings(doc: YamlDoc) -> list[Finding]:
    """Located findings for the engine arguments of a schema-valid recipe."""
    engine = str(doc.data.get("engine", "sglang"))
    out = []
    for path, args in arg_sections(doc.data):
        for name, value in args.items():
            found = problem(engine, str(name), value)
            if found is not None:
                out.append(doc.finding(path + (name,), *found))
    return out
