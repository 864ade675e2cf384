"""Dynamo's own argument parsers, built from the ai-dynamo 1.3.0.post1 wheels on top of parser_host.py.

Run like parser_host.py (`python dynamo_host.py dynamo.sglang|dynamo.frontend`, same stdin/stdout
protocol), with PYTHONPATH holding the ai-dynamo and ai-dynamo-runtime wheel folders and, for
dynamo.sglang, the SGLang wheel folder whose ServerArgs the worker parses its engine options with.

- dynamo.sglang parses as `dynamo.sglang.args.parse_args` does: Dynamo's runtime and SGLang-backend
  groups first (`parse_known_args`), then SGLang's `ServerArgs.add_cli_args` parser on what is left,
  which exits 2 on any unknown option.
- dynamo.frontend parses with `FrontendArgGroup` as `dynamo.frontend.main.parse_args` builds it (its
  `parse_known_args` forwards leftovers to vLLM/SGLang only for their tool/reasoning parsers, so here
  leftovers are an error: the frontend command this repository renders has none).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import parser_host  # noqa: E402

parser_host.OWNERS = parser_host.OWNERS + ("dynamo",)


class _TwoStage(argparse.ArgumentParser):
    def __init__(self, first: argparse.ArgumentParser, second: argparse.ArgumentParser):
        super().__init__(add_help=False)
        self.first, self.second = first, second
        self._actions = first._actions + second._actions

    def parse_args(self, args=None, namespace=None):
        _, unknown = self.first.parse_known_args(args)
        return self.second.parse_args(unknown)


def _dynamo_sglang():
    from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup
    from dynamo.sglang.backend_args import DynamoSGLangArgGroup
    from sglang.srt.server_args import ServerArgs

    first = argparse.ArgumentParser()
    DynamoRuntimeArgGroup().add_arguments(first)
    DynamoSGLangArgGroup().add_arguments(first)
    second = argparse.ArgumentParser()
    ServerArgs.add_cli_args(second)
    return _TwoStage(first, second), "ai-dynamo"


def _dynamo_frontend():
    from dynamo.frontend.frontend_args import FrontendArgGroup

    parser = argparse.ArgumentParser()
    FrontendArgGroup().add_arguments(parser)
    return parser, "ai-dynamo"


parser_host.PARSERS["dynamo.sglang"] = _dynamo_sglang
parser_host.PARSERS["dynamo.frontend"] = _dynamo_frontend

if __name__ == "__main__":
    sys.exit(parser_host.main())
