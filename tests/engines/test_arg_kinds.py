"""ci_tools/engines/argkinds.py is what the engines' own parsers say (issue 25, finding 8), and config
validate's verdict on a number argument is the parser's."""

from __future__ import annotations

import math

import pytest

from ci_tools.config import engineargs
from ci_tools.engines import render_args

from tests.engines.arg_kinds import TARGET, source
from tests.engines.harness import parse_many


def test_the_committed_kinds_are_the_parsers():
    assert TARGET.read_text() == source(), ("ci_tools/engines/argkinds.py differs from the pinned wheels' "
                                            "parsers: run `.venv/bin/python -m tests.engines.arg_kinds`")


# (engine, version, argument, values): config validate refuses a value when the parser does and, beyond
# it, a non-finite number (a float option's parser takes "inf")
CASES = [
    ("sglang", "0.5.22", "chunked-prefill-size", [float("nan"), 16384.0, "16k", True, 16384, -1, "16384"]),
    ("sglang", "0.5.21", "mem-fraction-static", [float("inf"), "x", 0.85, 1, "0.5"]),
    ("vllm", "0.33.0", "max-num-seqs", [float("nan"), 8.0, 256]),
]


@pytest.mark.parametrize("engine,version,name,values", CASES)
def test_a_kind_refusal_is_the_parsers_refusal(engine, version, name, values):
    base = ["--model-path", "/models/m"] if engine == "sglang" else ["/models/m"]
    parsed = parse_many(engine, version, [base + render_args({name: v}) for v in values])
    ours = [engineargs.problem(engine, name, v) is None for v in values]
    finite = [not (isinstance(v, float) and not math.isfinite(v)) for v in values]
    assert ours == [p.ok and f for p, f in zip(parsed, finite)], [(v, p.error) for v, p in zip(values, parsed)]
