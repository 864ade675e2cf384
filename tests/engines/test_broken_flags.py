"""The parser checks can fail: for every tool ci-tools renders a command for, the command it renders parses
with that tool's own pinned parser, and the same command with one of its flags misspelled is refused by it,
naming the misspelled flag. One case per tool: the engines (SGLang, vLLM, TensorRT-LLM, ATOM, from the
example rows `plan` expands), the routers (sglang-router, smg, vllm-router, as routers.command renders them),
Dynamo's frontend and its SGLang, vLLM and TensorRT-LLM workers (as the multi-node plan and the plug-ins
render them).

The misspelling is a transposition of two letters of the last option the command names (`--tp-size` ->
`--tp-isze`), checked to be no option of the parser nor a prefix of one, so that it is an unknown flag
and not an abbreviation the parser would take.
"""

from __future__ import annotations

import shlex

import pytest

from ci_tools.engines import routers, trtllm, vllm
from tests.engines.harness import abbreviations, dynamo_parse, options, parse
from tests.engines.test_disagg_parsers import DYNAMO, commands as disagg_commands, plans
from tests.engines.test_dynamo_workers import _workers
from tests.engines.test_example_rows import ROWS, commands as row_commands


def misspelled(args: list[str]) -> tuple[int, str]:
    """(index, misspelling) of the last option of ARGS (the first is often a required one, whose error would
    hide the unknown flag's): two letters near its middle swapped."""
    i = max(i for i, a in enumerate(args) if a.startswith("--") and "=" not in a and len(a) > 5)
    name = args[i][2:]
    j = next(j for j in range(len(name) // 2, len(name) - 1) if name[j].isalpha() and name[j + 1].isalpha()
             and name[j] != name[j + 1])
    return i, "--" + name[:j] + name[j + 1] + name[j] + name[j + 2:]


def broken(args: list[str]) -> tuple[list[str], str]:
    i, typo = misspelled(args)
    return [*args[:i], typo, *args[i + 1:]], typo


def _first_row_command(engine: str) -> tuple[str, str, list[str], dict]:
    for _, row in ROWS:
        found, _, cmds = row_commands(row)
        if found == engine:
            return cmds[0]
    raise AssertionError(f"no example row runs {engine}")


def _router(name: str, version: str) -> tuple[str, str, list[str], dict]:
    args = {"policy": "consistent_hash"} if name == "vllm-router" else {"policy": "cache_aware"}
    cmd = routers.command(routers.release(name, version), "0.0.0.0", 8000, ["http://127.0.0.1:30000"], args,
                          dp_ranks=8)
    return name, version, list(cmd.args), {}


SINGLE = {
    "sglang": lambda: _first_row_command("sglang"),
    "vllm": lambda: _first_row_command("vllm"),
    "trtllm": lambda: _first_row_command("trtllm"),
    "atom": lambda: _first_row_command("atom"),
    "sglang-router": lambda: _router("sglang-router", "0.3.2"),
    "smg": lambda: _router("smg", "1.13.0"),
    "vllm-router": lambda: _router("vllm-router", "0.1.14"),
}


@pytest.mark.parametrize("tool", list(SINGLE))
def test_a_misspelled_flag_in_a_rendered_command_is_refused_by_the_tools_parser(tool):
    parser, version, args, files = SINGLE[tool]()
    assert parser == tool
    assert parse(parser, version, args, files).ok, f"the rendered command itself: {shlex.join(args)}"
    bad, typo = broken(args)
    known = options(parser, version)
    assert typo not in known
    assert not (abbreviations(parser, version) and any(o.startswith(typo) for o in known)), typo
    result = parse(parser, version, bad, files)
    assert not result.ok and typo in result.error, (shlex.join(bad), result)


def _dynamo_sglang() -> tuple[tuple[str, str] | None, list[str]]:
    _, _, plan = next(plans())
    return ("sglang", "0.5.22"), next(iter(disagg_commands(plan)[0].values()))


def _dynamo_frontend() -> tuple[tuple[str, str] | None, list[str]]:
    _, _, plan = next(plans())
    return None, disagg_commands(plan)[1]


DYNAMO_TOOLS = {
    "dynamo.frontend": _dynamo_frontend,
    "dynamo.sglang": _dynamo_sglang,
    "dynamo.vllm": lambda: (("vllm", "0.33.0"), next(iter(_workers(vllm, "nixl", {}).values()))),
    "dynamo.trtllm": lambda: (None, next(iter(_workers(trtllm, "nixl", {}).values()))),
}


@pytest.mark.parametrize("tool", list(DYNAMO_TOOLS))
def test_a_misspelled_flag_in_a_rendered_dynamo_command_is_refused_by_dynamo(tool):
    engine, args = DYNAMO_TOOLS[tool]()
    bad, typo = broken(args)
    good, wrong = dynamo_parse(DYNAMO, tool, engine, [args, bad])
    assert good["ok"], f"the rendered command itself: {shlex.join(args)}: {good['error']}"
    assert not wrong["ok"] and typo in wrong["error"], (shlex.join(bad), wrong)
