"""`trtllm-serve serve` as a real click command, from trtllm-serve.json: a hand transcription of serve.py's
option declarations (no TensorRT-LLM wheel can be had, docs/engines.md), not the tool's own code.

    from tests.engines.trtllm_click import parse
    parse(["/models/m", "--tp_size", "4", "--trust_remote_code"])   # -> (ok, error)

click itself parses (unknown options, a value missing or of the wrong type, a choice outside its list
exit 2 as on the server); what is not checked is listed in trtllm-serve.json's `about`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import click

TABLE = Path(__file__).with_name("trtllm-serve.json")
TYPES = {"str": click.STRING, "int": click.INT, "float": click.FLOAT, "path": click.Path()}


class _ChoiceWithAlias(click.Choice):
    """click.Choice that maps an alias first (serve.py's `--backend trt` means `tensorrt`)."""

    def __init__(self, choices, aliases):
        super().__init__(choices)
        self.aliases = aliases

    def convert(self, value, param, ctx):
        return super().convert(self.aliases.get(value, value), param, ctx)


def _option(spec: dict) -> click.Option:
    names = list(spec["names"]) + ([spec["dest"]] if "dest" in spec else [])
    if spec.get("flag"):
        return click.Option(names, is_flag=True, default=False)
    if spec["type"] == "choice":
        kind = _ChoiceWithAlias(spec["choices"], spec.get("aliases", {}))
    else:
        kind = TYPES[spec["type"]]
    return click.Option(names, type=kind, default=None, multiple=spec.get("multiple", False))


def table() -> dict:
    return json.loads(TABLE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def command() -> click.Command:
    data = table()
    params = [click.Argument([data["argument"]["name"]], type=TYPES[data["argument"]["type"]])]
    params += [_option(o) for o in data["options"]]
    return click.Command(data["command"], params=params, callback=lambda **kw: kw)


def options() -> frozenset[str]:
    return frozenset(n for o in table()["options"] for n in o["names"])


def parse(argv: list[str]) -> tuple[bool, str]:
    try:
        command().main(list(argv), prog_name="trtllm-serve serve", standalone_mode=False)
    except click.UsageError as exc:
        return False, exc.format_message()
    return True, ""
