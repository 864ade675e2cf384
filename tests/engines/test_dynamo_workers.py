"""Dynamo's vLLM and TensorRT-LLM workers, as the engine plug-ins render them for a disaggregated point
(`worker(WorkerSpec)` with Dynamo's runtime options first, as runner/disagg.py starts them), parse with
Dynamo 1.6.1's own parse functions (tests/engines/dynamo_host.py): `dynamo.vllm` on vLLM 0.33.0, and
`dynamo.trtllm` (Dynamo's options only: TensorRT-LLM's go into its --extra-engine-args file, and
tensorrt_llm itself has no wheel here, so the engine's reading of that file is not checked).
Aggregated vLLM workers behind a router (`vllm serve`) parse with vLLM's own parser."""

from __future__ import annotations

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


def test_dynamo_vllm_workers_parse_with_dynamo_and_vllm():
    named = _workers(vllm, "nixl", {"gpu-memory-utilization": 0.85, "max-num-seqs": 64})
    results = dynamo_parse(DYNAMO, "dynamo.vllm", ("vllm", "0.33.0"), list(named.values()))
    assert not _bad(results, named), "\n".join(_bad(results, named))


def test_dynamo_trtllm_workers_parse_with_dynamo():
    named = _workers(trtllm, "nixl", {})
    results = dynamo_parse(DYNAMO, "dynamo.trtllm", None, list(named.values()))
    assert not _bad(results, named), "\n".join(_bad(results, named))


def test_aggregated_vllm_workers_parse_with_vllm():
    named = {}
    for tp, ep, dpa in TOPOLOGIES:
        cmd = vllm.worker(WorkerSpec(_spec(tp, ep, dpa), "aggregated"))
        named[f"tp{tp} ep{ep}"] = list(cmd.args)
    results = parse_many("vllm", "0.33.0", list(named.values()))
    bad = [f"{n}: {r.error}" for n, r in zip(named, results) if not r.ok]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("parser,engine,argv,error", [
    ("dynamo.vllm", ("vllm", "0.33.0"), ["--model", MODEL, "--disaggregation-mode", "prefil"], "invalid choice"),
    ("dynamo.vllm", ("vllm", "0.33.0"), ["--model", MODEL, "--tensor-paralel-size", "4"], "unrecognized"),
    ("dynamo.trtllm", None, ["--model", MODEL, "--tensor-parallel-sise", "4"], "Unrecognized argument"),
    ("dynamo.trtllm", None, ["--model", MODEL, "--disaggregation-mode", "prefil"], "invalid choice"),
])
def test_a_broken_worker_flag_is_rejected(parser, engine, argv, error):
    (r,) = dynamo_parse(DYNAMO, parser, engine, [argv])
    assert not r["ok"] and error in r["error"], r
