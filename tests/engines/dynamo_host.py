"""Dynamo's own argument parsing, run from its released wheels on top of parser_host.py.

Run like parser_host.py (`python dynamo_host.py dynamo.sglang|dynamo.vllm|dynamo.frontend`, same
stdin/stdout protocol) in the torch venv (.venv-engines-torch), with PYTHONPATH holding the ai-dynamo and
ai-dynamo-runtime wheel folders of one release and, for a worker, the engine wheel folder it runs on.
Nothing of Dynamo's parsing is rebuilt here: each worker's real module is imported (so a pair that does
not import, as Dynamo 1.3 with SGLang >= 0.5.21, fails to build) and its own parse function is called:

- dynamo.sglang: `dynamo.sglang.args.parse_args` (async), Dynamo's groups then SGLang's ServerArgs
  parser on the rest, `DynamoConfig.validate()` included. It stops at the first step after parsing
  (`_reserve_disaggregation_bootstrap_port`, replaced by a stop signal), before it would bind a port,
  download the model and build ServerArgs (which needs the model's config).
- dynamo.vllm: `dynamo.vllm.args._parse_cli_args` (what `parse_args` runs before building the engine
  config from the model; before 1.6, `parse_args` stopped at `AsyncEngineArgs.from_cli_args`), with
  vLLM's platform set to CPU as Dynamo's frontend does on a GPU-less host.
- dynamo.trtllm: `dynamo.trtllm.args.parse_args` (Dynamo's own options only; tensorrt_llm stood in).
- dynamo.frontend: `dynamo.frontend.main.parse_args` on sys.argv, which exits on leftovers.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import parser_host  # noqa: E402

parser_host.OWNERS = parser_host.OWNERS + ("dynamo",)


class _Parsed(Exception):
    """Raised in place of the first step after Dynamo's SGLang worker parsed its arguments."""


class _Call:
    """A parser-like object whose parse_args calls one of Dynamo's own functions; argparse errors exit 2.

    Its `_actions` (what parser_host reports as the parser's options) are those of Dynamo's own parser: the
    first parser Dynamo's function hands the command line to (`parse_known_args`), seen once on PROBE;
    the engine's options it passes on are the engine parser's (ci_tools/engines/argkinds.json keeps both)."""

    def __init__(self, call, probe: list[str]):
        self.call = call
        import argparse

        seen: list[argparse.ArgumentParser] = []
        original = argparse.ArgumentParser.parse_known_args

        def record(parser, args=None, namespace=None):
            seen.append(parser)
            return original(parser, args, namespace)

        argparse.ArgumentParser.parse_known_args = record
        try:
            call(list(probe))
        except BaseException:       # noqa: BLE001 - the probe only needs Dynamo's parser to be built
            pass
        finally:
            argparse.ArgumentParser.parse_known_args = original
        self._actions = list(seen[0]._actions) if seen else []
        self._option_string_actions = dict(seen[0]._option_string_actions) if seen else {}

    def parse_args(self, argv):
        self.call(list(argv))


def _dynamo_sglang():
    import dynamo.sglang.args as args

    def stop():
        raise _Parsed

    args._reserve_disaggregation_bootstrap_port = stop

    def call(argv):
        try:
            asyncio.run(args.parse_args(argv))
        except _Parsed:
            return

    return _Call(call, ["--model-path", "/models/m"]), "ai-dynamo"


def _dynamo_vllm():
    import vllm.platforms
    from vllm.platforms.cpu import CpuPlatform

    vllm.platforms.current_platform = CpuPlatform()
    import dynamo.vllm.args as args

    if hasattr(args, "_parse_cli_args"):
        return _Call(args._parse_cli_args, ["--model", "/models/m"]), "ai-dynamo"

    # before 1.6, parse_args goes on from the parsed vLLM namespace to the engine config: stop there
    class _Stop(args.AsyncEngineArgs):
        @classmethod
        def from_cli_args(cls, namespace):
            raise _Parsed

    args.AsyncEngineArgs = _Stop

    def call(argv):
        try:
            args.parse_args(argv)
        except _Parsed:
            return

    return _Call(call, ["--model", "/models/m"]), "ai-dynamo"


def _dynamo_trtllm():
    # Dynamo's TensorRT-LLM worker takes only Dynamo's own options on its command line (the engine's go
    # into the --extra-engine-args file); tensorrt_llm itself has no wheel here and is stood in, so this
    # checks Dynamo's parsing, not that the engine accepts the file
    parser_host.OWNERS = tuple(o for o in parser_host.OWNERS if o != "tensorrt_llm")
    import dynamo.trtllm.args as args

    return _Call(args.parse_args, ["--model", "/models/m"]), "ai-dynamo"


def _dynamo_frontend():
    import dynamo.frontend.main as main

    class _ToStderr(logging.Handler):
        # the frontend logs what it refuses ("Unknown arguments specified: [...]") and exits 1; its handlers
        # write to the stream they were given at start, so the refusal is copied to the stderr parser_host reads
        def emit(self, record: logging.LogRecord) -> None:
            sys.stderr.write(self.format(record) + "\n")

    def call(argv):
        sys.argv = ["dynamo.frontend", *argv]
        handler = _ToStderr(logging.ERROR)
        main.logger.addHandler(handler)
        try:
            main.parse_args()
        finally:
            main.logger.removeHandler(handler)

    return _Call(call, []), "ai-dynamo"


parser_host.PARSERS["dynamo.sglang"] = _dynamo_sglang
parser_host.PARSERS["dynamo.vllm"] = _dynamo_vllm
parser_host.PARSERS["dynamo.trtllm"] = _dynamo_trtllm
parser_host.PARSERS["dynamo.frontend"] = _dynamo_frontend

if __name__ == "__main__":
    sys.exit(parser_host.main())
