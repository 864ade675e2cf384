"""ci_tools/engines/argkinds.json is what the tools' own parsers say (issue 25, finding 8; issue 35: unknown
engine flags), and config validate's verdict on an argument's name and number is the parser's."""

from __future__ import annotations

import math

import pytest

from ci_tools.config import engineargs
from ci_tools.config.engineargs import Parser, option_problem
from ci_tools.engines import render_args

from tests.engines.arg_kinds import TARGET, source
from tests.engines.harness import parse_many


@pytest.mark.heavy     # builds every pinned parser, Dynamo's over torch included: minutes on 2 cores
def test_the_committed_tables_are_the_parsers():
    assert TARGET.read_text() == source(), ("ci_tools/engines/argkinds.json differs from the pinned parsers: run "
                                            "`.venv/bin/python -m tests.engines.arg_kinds`")


# (engine, version, argument, values): config validate refuses a value when the parser does and, beyond
# it, a non-finite number (a float option's parser takes "inf")
CASES = [
    ("sglang", "0.5.22", "chunked-prefill-size", [float("nan"), 16384.0, "16k", True, 16384, -1, "16384"]),
    ("sglang", "0.5.21", "mem-fraction-static", [float("inf"), "x", 0.85, 1, "0.5"]),
    ("vllm", "0.33.0", "max-num-seqs", [float("nan"), 8.0, 256]),
    ("atom", "0.1.6rc1.dev323", "max-num-seqs", [8.0, "x", 64]),
]


@pytest.mark.parametrize("engine,version,name,values", CASES)
def test_a_kind_refusal_is_the_parsers_refusal(engine, version, name, values):
    base = {"sglang": ["--model-path", "/models/m"], "atom": ["--model", "/models/m"]}.get(engine, ["/models/m"])
    parsed = parse_many(engine, version, [base + render_args({name: v}) for v in values])
    ours = [engineargs.problem(engine, name, v) is None for v in values]
    finite = [not (isinstance(v, float) and not math.isfinite(v)) for v in values]
    assert ours == [p.ok and f for p, f in zip(parsed, finite)], [(v, p.error) for v, p in zip(values, parsed)]


# (parser, release, the option as a recipe writes it, a value when it takes one): config validate's verdict
# (refused, or accepted with at most a warning) must be the parser's (exit 2, or parsed) at that release.
NAMES = [
    ("sglang", "0.5.22", "chunked-prefill-size", "8192"),
    ("sglang", "0.5.22", "chunked-prefil-size", "8192"),          # a typo: refused, with the right spelling
    ("sglang", "0.5.21", "attn-dp-size", "2"),                     # a later release's option
    ("sglang", "0.5.22", "attn-dp-size", "2"),
    ("sglang", "0.5.22", "cuda-graph-max-bs", "8"),                # ambiguous prefix: argparse refuses it
    ("sglang", "0.5.22", "mem-fraction", "0.8"),                   # a unique prefix: argparse takes it
    ("sglang", "0.5.22", "enable-metrics", None),
    ("vllm", "0.33.0", "no-enable-prefix-caching", None),          # registered, hidden from --help
    ("vllm", "0.33.0", "max_num_seqs", "8"),                       # vLLM reads `_` as `-`
    ("vllm", "0.33.0", "compilation-config.mode", "3"),            # one key of a JSON option
    ("vllm", "0.33.0", "tensor-paralel-size", "8"),
    ("atom", "0.1.3", "kv_cache_dtype", "fp8"),
    ("atom", "0.1.3", "kv-cache-dtype", "fp8"),                    # both spellings only from 0.1.6rc1.dev
    ("atom", "0.1.6rc1.dev323", "kv-cache-dtype", "fp8"),
    ("atom", "0.1.6rc1.dev323", "spec-decode-acceptance-length", "2.5"),
    ("atom", "0.1.5", "spec-decode-acceptance-length", "2.5"),
    ("vllm-router", "0.1.14", "policy", "consistent_hash"),
    ("vllm-router", "0.1.14", "sticky-sessions", None),
    ("smg", "1.13.0", "routing-key-override", None),
    ("sglang-router", "0.3.2", "routing-key-override", None),
]
BASE = {"sglang": ["--model-path", "/models/m"], "atom": ["--model", "/models/m"], "vllm": ["/models/m"]}


@pytest.mark.parametrize("table,version,name,value", NAMES, ids=[f"{t}{v}:{n}" for t, v, n, _ in NAMES])
def test_an_unknown_option_refusal_is_the_parsers_refusal(table, version, name, value):
    argv = BASE.get(table, []) + [f"--{name}"] + ([value] if value is not None else [])
    parsed = parse_many(table, version, [argv])[0]
    ours = option_problem(Parser(table, (version,)), name)
    assert (ours is None or ours[0] == "warning") == parsed.ok, (ours, parsed.error)


def test_a_refused_name_says_what_to_write():
    severity, message, hint = option_problem(Parser("sglang", ("0.5.21", "0.5.22")), "chunked-prefil-size")
    assert severity == "error" and "sglang has no option --chunked-prefil-size (checked at 0.5.21, 0.5.22)" in message
    assert "did you mean `chunked-prefill-size`" in hint
    severity, message, _ = option_problem(Parser("sglang", ("0.5.21", "0.5.22")), "attn-dp-size")
    assert "sglang 0.5.21 has no option --attn-dp-size (only 0.5.22 has it)" in message
    # a release ci-tools has no parser of: checked against every pinned one, and the message says so
    _, message, _ = option_problem(Parser("sglang", ("0.5.16",)), "chunked-prefil-size")
    assert "checked at every pinned release, 0.5.21, 0.5.22, 0.5.23: the recipe declares 0.5.16" in message


def test_a_dynamo_worker_takes_dynamos_options_and_its_engines():
    worker = Parser("sglang", ("0.5.22",), launcher="dynamo.sglang", launcher_versions=("1.6.1",))
    assert option_problem(worker, "chunked-prefill-size") is None
    assert option_problem(worker, "dyn-reasoning-parser") is None         # Dynamo's own
    assert option_problem(Parser("sglang", ("0.5.22",)), "dyn-reasoning-parser")[0] == "error"
    trt = Parser("dynamo.trtllm", ("1.6.1",), prefixes=("trtllm.",))
    assert option_problem(trt, "trtllm.kv_cache_config.free_gpu_memory_fraction") is None
    assert option_problem(trt, "extra-engine-arg")[0] in ("error", "warning")
