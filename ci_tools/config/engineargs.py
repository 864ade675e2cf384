"""Recipe arguments checked against what the tool's own parser knows (`ci_tools.engines.argkinds`, generated
from the pinned wheels and sources): every name must be an option of the engine (or router, or Dynamo
frontend) at each release the recipe declares, and a number must be of the kind the parser converts it to,
within the ranges a benchmark needs.

The schema takes any name and any scalar: `--chunked-prefil-size 16384` only failed when the server started
on a GPU runner after the job had queued, `chunked-prefill-size: .nan` likewise, and
`max-running-requests: 0` parsed and then served nothing. Pure: findings over a loaded recipe.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Iterator

from ci_tools.engines.argkinds import ABBREVIATIONS, COMMON, KINDS, OPTION_FILES, RELEASES, SOME
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
    kind = KINDS.get(engine, {}).get(name.replace("-", "_") if engine == "trtllm" else name)  # trtllm-serve's spelling
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


@dataclass(frozen=True)
class Parser:
    """Whose parser reads one `args` mapping: a table of ci_tools/engines/argkinds.py at the declared releases,
    and the launcher in front of it, whose own options it also takes (a Dynamo worker), at its release."""

    table: str
    versions: tuple[str, ...]
    launcher: str = ""                    # e.g. "dynamo.sglang": its options are taken besides the engine's
    launcher_versions: tuple[str, ...] = ()
    spelling: str = "as-written"          # "underscores": the plug-in writes `-` as `_` (trtllm-serve)
    prefixes: tuple[str, ...] = ()        # option prefixes the tool takes dynamically (Dynamo's `trtllm.`)

    @property
    def name(self) -> str:
        return self.table


# How a parser reads a name before looking it up: vLLM's FlexibleArgumentParser turns `_` into `-` and takes
# `--json-option.key value` for its JSON options (Dynamo's vLLM worker hands the rest to that parser).
_DASHED = ("vllm", "dynamo.vllm")


def _known(table: str, version: str) -> frozenset[str]:
    return COMMON.get(table, frozenset()) | {n for n, rels in SOME.get(table, {}).items() if version in rels}


def _checked(table: str, versions: tuple[str, ...]) -> tuple[tuple[str, ...], bool]:
    """(releases to check at, whether the recipe declared them): the declared releases ci-tools has a parser
    of, else every pinned one."""
    pinned = RELEASES.get(table, ())
    declared = tuple(v for v in versions if v in pinned)
    return (declared, True) if declared else (pinned, False)


def option_problem(parser: Parser, name: str) -> tuple[str, str, str] | None:
    """(severity, message, hint) when NAME is not an option the parser knows at the declared releases.

    The table is checked at the declared releases it was read from; where the recipe declares none of them
    (no engine-versions, or only releases ci-tools has no parser of), against every pinned one, so only a
    name no pinned release knows is refused. A launcher's own options (Dynamo's, at its declared release) are taken
    at every engine release. Like argparse, a unique prefix of an option is taken (a warning: a later release
    adding an option with that prefix makes it ambiguous) and an ambiguous one is refused."""
    option = name.replace("-", "_") if parser.spelling == "underscores" else name
    if any(option.startswith(p) for p in parser.prefixes):
        return None
    if parser.table in _DASHED:
        option = option.split(".", 1)[0].replace("_", "-")
    releases, declared = _checked(parser.table, parser.versions)
    if not releases:
        return None                      # no parser table for this tool: nothing to check against
    extra: frozenset[str] = frozenset()
    if parser.launcher:
        for version in _checked(parser.launcher, parser.launcher_versions)[0]:
            extra |= _known(parser.launcher, version)
    by_release = {v: _known(parser.table, v) | extra for v in releases}
    knowing = [v for v, names in by_release.items() if option in names]
    where = _releases(parser, releases, declared)
    if len(knowing) == len(by_release) or (knowing and not declared):
        return None         # undeclared releases: ci-tools cannot tell which one the image has, so any will do
    if knowing:
        missing = [v for v in by_release if v not in knowing]
        return ("error", f"{parser.name} {', '.join(missing)} has no option --{option} (only {', '.join(knowing)} "
                f"{'has' if len(knowing) == 1 else 'have'} it), and the recipe declares "
                f"{'both' if len(by_release) == 2 else 'all of them'}",
                f"drop --{option}, or declare only releases that have it in engine-versions")
    abbrev = all(ABBREVIATIONS.get(parser.table, {}).get(v, False) for v in releases)
    expansions = {v: sorted(n for n in names if n.startswith(option)) for v, names in by_release.items()}
    if abbrev and all(expansions.values()):
        full = sorted({n for e in expansions.values() for n in e})
        if all(len(e) == 1 for e in expansions.values()) and len(full) == 1:
            return ("warning", f"--{option} is an abbreviation of {parser.name}'s --{full[0]} ({where})",
                    f"write `{full[0]}`: a later release that adds another option starting --{option} makes "
                    "this one ambiguous and the server fails to start")
        return ("error", f"--{option} is ambiguous for {parser.name} ({where}): it could be "
                f"{', '.join('--' + n for n in full[:6])}", "write the option's full name")
    every = sorted(set().union(*by_release.values()))
    close = difflib.get_close_matches(option, every, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join('`' + c + '`' for c in close)}?" if close else \
        f"see `--help` of {parser.name} at that release for its options"
    return ("error", f"{parser.name} has no option --{option} ({where}); the server would exit at start, after "
            "the job had waited for its GPUs", hint)


def _releases(parser: Parser, releases: tuple[str, ...], declared: bool) -> str:
    if declared:
        return f"checked at {', '.join(releases)}"
    said = f": the recipe declares {', '.join(parser.versions)}, which ci-tools has no parser of" \
        if parser.versions else ""
    return f"checked at every pinned release, {', '.join(releases)}{said}"


def parsers(data: dict) -> Iterator[tuple[tuple, dict, Parser]]:
    """Every `args` mapping of a recipe with the parser that reads it: the engine's (under a Dynamo frontend,
    with Dynamo's worker options), a router's, the Dynamo frontend's."""
    from ci_tools.engines.compat import published

    engine = str(data.get("engine", "sglang"))
    versions = tuple(str(v) for v in data.get("engine-versions") or ())
    frontend = data.get("frontend") if isinstance(data.get("frontend"), dict) else None
    if frontend and frontend.get("kind") == "dynamo":
        dyn = (published(str(frontend.get("version"))),)
        # Dynamo's TensorRT-LLM worker takes Dynamo's options (and `--trtllm.<key> v`); the engine's go in a file
        worker = Parser("dynamo.trtllm", dyn, prefixes=("trtllm.",)) if engine == "trtllm" else \
            Parser(engine, versions, launcher=f"dynamo.{engine}", launcher_versions=dyn)
    else:
        worker = Parser(engine, versions, spelling="underscores" if engine == "trtllm" else "as-written")
    for path, args in arg_sections(data):
        yield path, args, worker
    if frontend and isinstance(frontend.get("args"), dict):
        table = "dynamo.frontend" if frontend.get("kind") == "dynamo" else str(frontend.get("name"))
        version = published(str(frontend.get("version"))) if frontend.get("kind") == "dynamo" else \
            str(frontend.get("version"))
        yield ("frontend", "args"), frontend["args"], Parser(table, (version,))
    for path, router in _routers(data):
        if isinstance(router.get("args"), dict):
            yield path + ("args",), router["args"], Parser(str(router.get("name")), (str(router.get("version")),))


def _option_sections(data: dict) -> Iterator[tuple[tuple, dict, dict]]:
    """(path, the options the engine gets there, the options written there): a point's are merged into the
    base's (config.recipe.merge_options), and only what the point itself writes is judged at the point."""
    from ci_tools.config.recipe import merge_options

    serve: dict = data["serve"] if isinstance(data.get("serve"), dict) else {}
    base = serve.get("options") if isinstance(serve.get("options"), dict) else {}
    if base:
        yield ("serve", "options"), base, base
    for name, point in (data.get("points") or {}).items():
        if isinstance(point, dict) and isinstance(point.get("options"), dict):
            yield ("points", name, "options"), merge_options(base, point["options"]), point["options"]


def _written(own: dict, path: tuple) -> bool:
    """Whether PATH (a key of the merged options) is written in OWN, the section's own options."""
    node: Any = own
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _routers(data: dict) -> Iterator[tuple[tuple, dict]]:
    serve: dict = data["serve"] if isinstance(data.get("serve"), dict) else {}
    if isinstance(serve.get("router"), dict):
        yield ("serve", "router"), serve["router"]
    for name, point in (data.get("points") or {}).items():
        if isinstance(point, dict) and isinstance(point.get("router"), dict):
            yield ("points", name, "router"), point["router"]


# Options-file keys the runner writes from the point itself (a recipe sets them through the point's shape).
RUNNER_OPTIONS = {"enable_attention_dp": "the point's dp-attn", "context_parallel_size": "the point's dcp-size / pcp-size",
                  "tensor_parallel_size": "the point's tp", "moe_expert_parallel_size": "the point's ep",
                  "pipeline_parallel_size": "the point's pp", "model": "the recipe's model"}


def option_file_problems(engine: str, versions: tuple[str, ...], options: dict,
                         path: tuple = ()) -> list[tuple[tuple, str, str]]:
    """(path, message, hint) for each key of a recipe's `options` the engine's options file does not take: checked
    against the engine's own argument model at the declared releases (else every pinned one), speculative_config
    against the model its decoding_type selects."""
    files = OPTION_FILES.get(engine)
    if files is None:
        known = ", ".join(OPTION_FILES)
        return [(path, f"{engine} reads no options file; `options` is for {known} (its LLM-API options file)",
                 f"give {engine} its settings as `args`")]
    declared = tuple(v for v in versions if v in files)
    out: list[tuple[tuple, str, str]] = []
    for version in declared or tuple(files):
        out += _option_tree(files[version], options, path, f"{engine} {version}", top=True)
    first: dict[tuple, tuple[tuple, str, str]] = {}
    for finding in out:                   # one finding per (path, message), as the first release gave it
        first.setdefault(finding[:2], finding)
    return list(first.values())


def _option_tree(tree: dict, options: Any, path: tuple, where: str, top: bool = False) -> list[tuple[tuple, str, str]]:
    if not isinstance(options, dict):
        return []
    out = []
    for key, value in options.items():
        at = path + (key,)
        if top and key in RUNNER_OPTIONS:
            out.append((at, f"options: `{key}` comes from {RUNNER_OPTIONS[key]}", "remove it: the runner writes it"))
            continue
        if key not in tree:
            close = difflib.get_close_matches(str(key), list(tree), n=3, cutoff=0.6)
            out.append((at, f"options: {where}'s options file has no key `{key}`"
                        + (f" in {'.'.join(map(str, path))}" if path else ""),
                        f"did you mean {' or '.join('`' + c + '`' for c in close)}?" if close
                        else f"keys here: {', '.join(sorted(tree)[:12])}{', ...' if len(tree) > 12 else ''}"))
            continue
        sub = tree[key]
        if isinstance(sub, dict) and set(sub) == {"decoding_type"} and isinstance(value, dict):
            types = sub["decoding_type"]
            chosen = value.get("decoding_type")
            if chosen not in types:
                close = difflib.get_close_matches(str(chosen), list(types), n=2, cutoff=0.5)
                out.append((at + ("decoding_type",), f"options: {key}.decoding_type {chosen!r} is none of {where}'s "
                            f"({', '.join(types)})", f"did you mean `{close[0]}`?" if close else
                            "write the decoding type, e.g. MTP or Eagle3"))
                continue
            rest = {k: v for k, v in value.items() if k != "decoding_type"}
            out += _option_tree(types[chosen], rest, at, f"{where} {chosen}")
        elif isinstance(sub, dict):
            out += _option_tree(sub, value, at, where)
    return out


def findings(doc: YamlDoc) -> list[Finding]:
    """Located findings for the arguments of a schema-valid recipe: names its parsers do not know, numbers, and
    options-file keys its engine does not take."""
    engine = str(doc.data.get("engine", "sglang"))
    versions = tuple(str(v) for v in doc.data.get("engine-versions") or ())
    out = []
    for path, options, own in _option_sections(doc.data):
        for at, message, hint in option_file_problems(engine, versions, options, ()):
            if _written(own, at):
                out.append(doc.finding(path + at, message, hint))
    for path, args, parser in parsers(doc.data):
        for name, value in args.items():
            if name == "<<":
                continue
            unknown = option_problem(parser, str(name))
            if unknown is not None:
                severity, message, hint = unknown
                out.append(doc.finding(path + (name,), message, hint, severity))
                if severity == "error":
                    continue
            found = problem(engine, str(name), value) if parser.name == engine else None
            if found is not None:
                out.append(doc.finding(path + (name,), *found))
    return out

