"""Helpers for the config tests: small master and runners documents (the spec §5 fixtures), mutated
per case and validated in-process with line marks."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from ci_tools.config.crossfile import Change
from ci_tools.config.validate import Sources, check
from ci_tools.yaml.located import load_yaml_text

REPO = Path(__file__).resolve().parents[2]
PIN = "@sha256:" + "ab" * 32
DELETE = object()

RUNNERS = {
    "labels": {
        "mi300x": ["mi300x-amd_0", "mi300x-amd_1", "mi300x-cr_0"],
        "h200": ["h200-cw_0", "h200-cw_1", "h200-nb_0", "h200-nb_1"],
        "gb200": ["gb200-nv_0"],
        "cluster:b300-nv": ["b300-nv_0", "b300-nv_1"],
    },
    "hardware": {"cluster:b300-nv": {"available-cpu-dram-mib": 2964436, "gpus-per-node": 8}},
}

# Spec §5 fixture S: single node, fixed 1k1k and 8k1k.
SN = {
    "image": "lmsysorg/sglang:v0.5" + PIN, "model": "deepseek-ai/DeepSeek-R1", "model-prefix": "dsr1",
    "precision": "fp8", "framework": "sglang", "runner": "mi300x", "multinode": False,
    "scenarios": {"fixed-seq-len": [
        {"isl": 1024, "osl": 1024, "search-space": [{"tp": 8, "conc-start": 4, "conc-end": 64}]},
        {"isl": 8192, "osl": 1024, "search-space": [{"tp": 8, "conc-start": 4, "conc-end": 64}]}]},
}
# Spec §5 fixture M: multi-node disaggregated.
MN = {
    "image": "nvcr.io/nvidia/dynamo:1.0" + PIN, "model": "deepseek-ai/DeepSeek-R1", "model-prefix": "dsr1",
    "precision": "fp4", "framework": "dynamo-trt", "runner": "gb200", "multinode": True, "disagg": True,
    "kv-p2p-transfer": "nixl",
    "scenarios": {"fixed-seq-len": [{"isl": 1024, "osl": 1024, "search-space": [{
        "conc-list": [2150],
        "prefill": {"hardware": "gb200", "num-worker": 5, "tp": 4, "ep": 4, "dp-attn": True},
        "decode": {"hardware": "h100", "num-worker": 1, "tp": 8, "ep": 8, "dp-attn": True}}]}]},
}
# Single-node agentic.
AG = {
    "image": "lmsysorg/sglang:v0.5" + PIN, "model": "deepseek-ai/DeepSeek-V4-Pro", "model-prefix": "dsv4",
    "precision": "fp4", "framework": "sglang", "runner": "cluster:b300-nv", "multinode": False,
    "scenarios": {"agentic-coding": [{"dram-utilization": 0.8, "search-space": [
        {"tp": 8, "kv-offloading": "none", "conc-list": [1, 2]}]}]},
}
# Multi-node agentic.
AGM = {
    "image": "vllm/vllm-openai:nightly" + PIN, "model": "moonshotai/Kimi-K3", "model-prefix": "kimik3",
    "precision": "fp4", "framework": "dynamo-vllm", "runner": "cluster:b300-nv", "multinode": True,
    "disagg": True, "kv-p2p-transfer": "nixl",
    "scenarios": {"agentic-coding": [{"dram-utilization": 0.5, "search-space": [{
        "kv-offloading": "none", "conc-list": [64],
        "prefill": {"num-worker": 1, "tp": 8, "ep": 1, "dp-attn": False},
        "decode": {"num-worker": 1, "tp": 8, "ep": 1, "dp-attn": False}}]}]},
}
BASES = {"sn": ("dsr1-fp8-mi300x-sglang", SN), "mn": ("dsr1-fp4-gb200-dynamo-trt", MN),
         "ag": ("dsv4-fp4-b300-sglang-agentic", AG), "agm": ("kimik3-fp4-b300-dynamo-vllm-agentic", AGM)}


def mutate(data: dict, changes: dict) -> dict:
    """Deep copy of `data` with `changes` applied: {"a.b.0.c": value}; value DELETE removes the key."""
    out = copy.deepcopy(data)
    for dotted, value in changes.items():
        parts = [int(p) if p.isdigit() else p for p in dotted.split(".")]
        node = out
        for p in parts[:-1]:
            node = node[p]
        if value is DELETE:
            del node[parts[-1]]
        else:
            node[parts[-1]] = copy.deepcopy(value)
    return out


def findings_for(masters: dict, runners: dict | None = None, change: Change = Change()):
    """Validate in-process: `masters` maps file name -> data (dumped as YAML, then parsed with marks)."""
    src = Sources(None)
    for name, data in masters.items():
        src.masters.append(load_yaml_text(yaml.safe_dump(data, sort_keys=False), name))
    src.runners = load_yaml_text(yaml.safe_dump(RUNNERS if runners is None else runners, sort_keys=False),
                                 "runners.yaml")
    return check(src, change).findings


def value_paths(node, prefix=()):
    """Every path into a parsed document (keys and list indexes), the root first: where to mutate."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from value_paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from value_paths(v, prefix + (i,))
