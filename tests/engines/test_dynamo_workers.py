"""Dynamo's vLLM and TensorRT-LLM workers, as the engine plug-ins render them for a disaggregated point
(`worker(WorkerSpec)` with Dynamo's runtime options first, as runner/disagg.py starts them), parse with
Dynamo 1.6.1's own parse functions (tests/engines/dynamo_host.py): `dynamo.vllm` on vLLM 0.33.0, and
`dynamo.trtllm` (Dynamo's options only: TensorRT-LLM's go into its --extra-engine-args file, and
tensorrt_llm itself has no wheel here, so the engine's reading of that file is not checked).
Aggregated vLLM workers behind a router (`vllm serve`) parse with vLLM's own parser."""

from __future__ import annotations

import functools
import shlex

import pytest

from ci_tools.engines import ServeSpec, WorkerSpec, trtllm, vllm
from ci_tools.runner.disagg import dynamo_runtime_args
from tests.engines.harness import dynamo_parse, parse_many

DYNAMO = "1.6.1"
MODEL = "/models/deepseek-ai/DeepSeek-V4.1-Flash"


def _spec(tp: int, ep: int, dp_attn: bool, args: dict | None = None) -> ServeSpec:
    return ServeSpec(MODEL, "deepseek-ai/DeepSeek-V4.1-Flash", "0.0.0.0", 30000, tp=tp, ep=ep, dp_attn=dp_attn,
                     args=args or {}, files_dir="/job")


TOPOLOGIES = [(4, 1, False), (4, 4, False), (4, 4, True), (8, 8, True)]


def _workers(plugin, transfer: str, args: dict) -> dict[str, list[str]]:
    out = {}
    for tp, ep, dpa in TOPOLOGIES:
        for role in ("prefill", "decode"):
            w = WorkerSpec(_spec(tp, ep, dpa, args), role, transfer, dynamo=True, name=f"{role}-0")
            assert not plugin.worker_problems(w)
            cmd = plugin.worker(w)
            out[f"{role} tp{tp} ep{ep}{' dpa' if dpa else ''}"] = [*dynamo_runtime_args("ns"), *cmd.args]
    return out


def _bad(results, named) -> list[str]:
    return [f"{n}: rejects `{shlex.join(named[n])}`: {r['error']}" for n, r in zip(named, results) if not r["ok"]]


VLLM_ARGS = {"gpu-memory-utilization": 0.85, "max-num-seqs": 64}
# (parser, engine, argv, what its error says): a misspelled option and an option value out of its choices
BROKEN = [
    ("dynamo.vllm", ("vllm", "0.33.0"), ["--model", MODEL, "--disaggregation-mode", "prefil"], "invalid choice"),
    ("dynamo.vllm", ("vllm", "0.33.0"), ["--model", MODEL, "--tensor-paralel-size", "4"], "unrecognized"),
    ("dynamo.trtllm", None, ["--model", MODEL, "--tensor-parallel-sise", "4"], "Unrecognized argument"),
    ("dynamo.trtllm", None, ["--model", MODEL, "--disaggregation-mode", "prefil"], "invalid choice"),
]
WORKERS = {"dynamo.vllm": lambda: _workers(vllm, "nixl", VLLM_ARGS), "dynamo.trtllm": lambda: _workers(trtllm, "nixl", {})}


@functools.cache
def _runs(parser: str, engine: tuple[str, str] | None) -> dict[tuple[str, ...], dict]:
    """argv -> Dynamo's verdict, for every command line of this module that PARSER parses on ENGINE, from one
    run: importing Dynamo's worker and its engine is nearly all of a run's seconds, and a run parses each
    argv on its own, as each test did in its own run (dynamo_host.py)."""
    argvs = [*WORKERS[parser]().values(), *(a for p, e, a, _ in BROKEN if (p, e) == (parser, engine))]
    return {tuple(a): r for a, r in zip(argvs, dynamo_parse(DYNAMO, parser, engine, argvs))}


def _parsed(parser: str, engine: tuple[str, str] | None, argvs: list[list[str]]) -> list[dict]:
    return [_runs(parser, engine)[tuple(a)] for a in argvs]


def test_dynamo_vllm_workers_parse_with_dynamo_and_vllm():
    named = WORKERS["dynamo.vllm"]()
    results = _parsed("dynamo.vllm", ("vllm", "0.33.0"), list(named.values()))
    assert not _bad(results, named), "\n".join(_bad(results, named))


def test_dynamo_trtllm_workers_parse_with_dynamo():
    named = WORKERS["dynamo.trtllm"]()
    results = _parsed("dynamo.trtllm", None, list(named.values()))
    assert not _bad(results, named), "\n".join(_bad(results, named))


def test_aggregated_vllm_workers_parse_with_vllm():
    named = {}
    for tp, ep, dpa in TOPOLOGIES:
        cmd = vllm.worker(WorkerSpec(_spec(tp, ep, dpa), "aggregated"))
        named[f"tp{tp} ep{ep}"] = list(cmd.args)
    results = parse_many("vllm", "0.33.0", list(named.values()))
    bad = [f"{n}: {r.error}" for n, r in zip(named, results) if not r.ok]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("parser,engine,argv,error", BROKEN)
def test_a_broken_worker_flag_is_rejected(parser, engine, argv, error):
    (r,) = _parsed(parser, engine, [argv])
    assert not r["ok"] and error in r["error"], r
