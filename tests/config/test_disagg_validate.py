"""`config validate` on disaggregated recipes: worker topology against the master entry and the runner."""

from __future__ import annotations

import json

import pytest

from ci_tools import names

from clirun import run
from test_cli_bad_input import MASTER, _edit

FIXED = names.RECIPES_DIR + "/gb300-dsv41flash-fp4-dynamo-sglang/disagg-8k1k.yaml"
AGENTIC = names.RECIPES_DIR + "/gb300-dsv41flash-fp4-dynamo-sglang/agentic-disagg.yaml"
KEY = "dsv41flash-fp4-gb300-dynamo-sglang-disagg"
DEP8 = "    decode:\n      num-worker: 1\n      tp: 8\n      ep: 8\n      dp-attn: true\n      nodes: 2\n"

CASES = [
    # id, edit, expected (file, text on the line the finding must point at, message fragment)
    ("worker-does-not-fill-its-nodes",
     lambda r: _edit(r, FIXED, DEP8, DEP8.replace("nodes: 2", "nodes: 1")),
     (FIXED, "      nodes: 1", "point '2p1d-dep8' decode: a worker of 8 GPUs on 1 node(s) of 4 GPUs (runner gb300) "
                                "neither fills its nodes nor is an equal share of one")),
    ("point-needs-more-nodes-than-the-runner",
     lambda r: _edit(r, names.RUNNERS, "    nodes: 18          # one NVL72", "    nodes: 3          # one NVL72"),
     (FIXED, "  2p1d-dep8:", "point '2p1d-dep8' needs 4 nodes; runner gb300 has 3")),
    ("kv-transfer-differs",
     lambda r: _edit(r, FIXED, "kv-transfer: nixl", "kv-transfer: mooncake"),
     (FIXED, "kv-transfer: mooncake", f"kv-transfer 'mooncake' differs from master entry {KEY}'s kv-p2p-transfer (nixl)")),
    ("concurrencies-differ",
     lambda r: _edit(r, FIXED, "conc: [64, 128]", "conc: [64]"),
     (FIXED, "conc: [64]", "point '1p2d-dep4' lists conc [64], but master entry")),
    ("router-version-differs",
     lambda r: _edit(r, FIXED, 'version: "1.6.1"', 'version: "1.4.0"'),
     (FIXED, "frontend:", "frontend dynamo-router 1.4.0 is not the router master entry")),
    ("frontend-kind-for-the-framework",
     lambda r: _edit(r, FIXED, "kind: dynamo", "kind: sglang-router"),
     (FIXED, "kind: sglang-router", "frontend kind 'sglang-router' does not serve framework 'dynamo-sglang'")),
    ("master-topology-without-a-point",
     lambda r: _edit(r, MASTER, "        decode: { num-worker: 2, tp: 4, ep: 4, dp-attn: true }",
                     "        decode: { num-worker: 3, tp: 4, ep: 4, dp-attn: true }"),
     (MASTER, "conc-list: [64, 128]", "search-space entry (prefill 1 worker(s) x tp4 ep4 dp-attn, decode 3 worker(s)")),
    ("recipe-point-not-in-master",
     lambda r: _edit(r, MASTER, "        decode: { num-worker: 2, tp: 4, ep: 4, dp-attn: true }",
                     "        decode: { num-worker: 3, tp: 4, ep: 4, dp-attn: true }"),
     (FIXED, "  1p2d-dep4:", "point '1p2d-dep4' (prefill 1 worker(s) x tp4 ep4 dp-attn, decode 2 worker(s) x tp4 ep4 "
                             "dp-attn) is not in the search space")),
    ("placement-flag-in-args",
     lambda r: _edit(r, FIXED, "    chunked-prefill-size: 32768", "    chunked-prefill-size: 32768\n    disaggregation-mode: prefill"),
     (FIXED, "disaggregation-mode: prefill", "`disaggregation-mode` is set in args, but the runner renders it")),
    ("simulated-acceptance-committed",
     lambda r: _edit(r, AGENTIC, '    SGLANG_NUMA_BIND_V2: "0"', '    SGLANG_NUMA_BIND_V2: "0"\n    SGLANG_SIMULATE_ACC_LEN: "3"'),
     (AGENTIC, "SGLANG_SIMULATE_ACC_LEN", "`SGLANG_SIMULATE_ACC_LEN` must not be committed")),
    ("kv-offload-missing",
     lambda r: _edit(r, AGENTIC, "kv-offload:\n  backend: hicache\n  medium: dram\n  workers: [prefill]\n  args:\n"
                     "    enable-hierarchical-cache: true\n    hicache-write-policy: write_through\n", ""),
     (AGENTIC, "config-key:", "benchmarks kv-offloading dram (hicache), but the recipe has no `kv-offload`")),
    ("engine-runs-the-framework",
     lambda r: _edit(r, FIXED, "engine: sglang", "engine: vllm"),
     (FIXED, "engine: vllm", f"engine 'vllm' does not run framework 'dynamo-sglang' of master entry {KEY}")),
    ("pp-is-part-of-the-point",
     lambda r: _edit(r, MASTER, "        prefill: { num-worker: 2, tp: 4, ep: 4, dp-attn: true }",
                     "        prefill: { num-worker: 2, tp: 4, ep: 4, dp-attn: true, pp: 2 }"),
     (MASTER, "- conc-list: [512]",
      "search-space entry (prefill 2 worker(s) x tp4 ep4 pp2 dp-attn, decode 1 worker(s) x tp8 ep8 dp-attn) has no "
      "point in its recipe")),
    ("single-node-recipe-for-a-multinode-entry",
     lambda r: _edit(r, MASTER, "  recipe: recipes/gb300-dsv41flash-fp4-dynamo-sglang/disagg-8k1k.yaml",
                     "  recipe: recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"),
     (names.RECIPES_DIR + "/gb300-dsv41flash-fp4-sglang/agentic.yaml", "config-key:",
      f"master entry {KEY} is multinode, but this recipe is a single-node recipe")),
]


@pytest.mark.parametrize("edit,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_disagg_case(scratch, edit, expected):
    edit(scratch)
    res = run(["config", "validate", "--format", "json"], cwd=scratch)
    body = json.loads(res.out)
    file, needle, fragment = expected
    lines = (scratch / file).read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if needle in text and not text.lstrip().startswith("#"))
    hits = [f for f in body["errors"] if f["file"] == file and fragment in f["message"]]
    assert hits, json.dumps(body, indent=1)
    assert line in [h["line"] for h in hits], hits
    assert res.code == 1


def test_the_example_disaggregated_recipes_validate_clean(scratch):
    res = run(["config", "validate", "--format", "json"], cwd=scratch)
    body = json.loads(res.out)
    assert res.code == 0 and body["errors"] == [] and body["warnings"] == [], res.out
