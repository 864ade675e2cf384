"""Rules across files (master <-> runners.yaml, master <-> recipe) and the naming advisory, each case
one edit of a scratch copy of the example data, checked through the CLI's JSON output."""

from __future__ import annotations

import json

import pytest
from clirun import run
from test_cli_bad_input import MASTER, RECIPE, SEED, _edit, _write

from ci_tools import names

B300_RECIPE = "recipes/b300-dsv41flash-fp4-sglang/fixed-seq.yaml"


def _rename_b300(root, new: str) -> None:
    """Rename the B300 entry, and its recipe's config-key with it (naming cases test the key alone)."""
    _edit(root, MASTER, "dsv41flash-fp4-b300-sglang:\n", f"{new}:\n")
    _edit(root, B300_RECIPE, "config-key: dsv41flash-fp4-b300-sglang\n", f"config-key: {new}\n")


CASES = [
    # id, edit, severity, expected (file, text on the line the finding must point at, message fragment)
    ("recipe-point-not-in-master",
     lambda r: _edit(r, RECIPE, "  tp4-c4:\n    tp: 4\n    ep: 1            # EP1", "  tp4-c4:\n    tp: 4\n    ep: 4            # EP1"),
     "error", (RECIPE, "  tp4-c4:", "recipe point 'tp4-c4' (tp=4 ep=4 dp-attn=false conc=4) is not in the search space "
                                    f"of master entry {SEED} ({MASTER}:91)")),
    ("master-point-not-in-recipe",
     lambda r: _edit(r, RECIPE, "  tp4-c4:\n    tp: 4\n    ep: 1            # EP1", "  tp4-c4:\n    tp: 4\n    ep: 4            # EP1"),
     "error", (MASTER, "{ tp: 4, ep: 1, kv-offloading: none, spec-decoding: mtp, conc-list: [4, 16] }",
               f"master point tp=4 ep=1 dp-attn=false conc=4 of {SEED} has no point in its recipe {RECIPE}:53")),
    ("dp-attn-matters",
     lambda r: _edit(r, RECIPE, "    dp-attn: true\n    conc: 128", "    dp-attn: false\n    conc: 128"),
     "error", (RECIPE, "  dep2-c128:", "recipe point 'dep2-c128' (tp=2 ep=2 dp-attn=false conc=128) is not in the search space")),
    ("duplicate-recipe-points",
     lambda r: _edit(r, RECIPE, "  tp4-c4:\n    tp: 4\n    ep: 1            # EP1, not EP4: at batch 1-5 EP4 makes every decode step wait for the busiest expert rank\n    conc: 4\n",
                     "  tp4-c4:\n    tp: 4\n    ep: 1\n    conc: 4\n  tp4-c4-again:\n    tp: 4\n    ep: 1\n    conc: 4\n"),
     "error", (RECIPE, "  tp4-c4-again:", "recipe points 'tp4-c4' and 'tp4-c4-again' are the same point (tp=4 ep=1 dp-attn=false conc=4)")),
    ("router-version",
     lambda r: _edit(r, RECIPE, '      version: "0.3.2"', '      version: "0.4.0"'),
     "error", (RECIPE, "    router: &dep2-router", "recipe point 'dep2-c64' runs behind sglang-router 0.4.0, but master entry "
                                      f"{SEED} declares sglang-router 0.3.2 for it")),
    ("router-missing-in-master",
     lambda r: _edit(r, MASTER, ', conc-list: [64, 128],\n          router: { name: sglang-router, version: "0.3.2" } }',
                     ", conc-list: [64, 128] }"),
     "error", (RECIPE, "    router: *dep2-router", "recipe point 'dep2-c128' runs behind sglang-router 0.3.2, but master entry "
                                       f"{SEED} declares no router for it")),
    ("recipe-config-key",
     lambda r: _edit(r, RECIPE, f"config-key: {SEED}", "config-key: something-else"),
     "error", (RECIPE, "config-key:", f"recipe says it serves 'something-else', but it is the recipe of master entry '{SEED}' ({MASTER}:90)")),
    ("recipe-model",
     lambda r: _edit(r, RECIPE, "model: deepseek-ai/DeepSeek-V4.1-Flash", "model: deepseek-ai/DeepSeek-V4-Pro"),
     "error", (RECIPE, "model:", f"recipe model 'deepseek-ai/DeepSeek-V4-Pro' differs from master entry {SEED}'s model")),
    ("recipe-other-image",
     lambda r: _edit(r, RECIPE, "image: lmsysorg/sglang:nightly-dev-cu13-20261012-e6072935", "image: lmsysorg/sglang:v0.5.9"),
     "error", (RECIPE, "image:", "recipe image differs from the image of master entry")),
    ("orphan-recipe",
     lambda r: _write(r, "recipes/extra/agentic.yaml", (r / RECIPE).read_text(encoding="utf-8").replace(
         f"config-key: {SEED}", "config-key: nobody")),
     "warning", ("recipes/extra/agentic.yaml", "config-key:", "this recipe is not referenced by any master entry, so it never runs")),
    ("recipe-schema-error-is-not-orphan",
     lambda r: _edit(r, RECIPE, "engine: sglang", "engine: tensorflow"),
     "error", (RECIPE, "engine:", "'engine' must be one of \"sglang\", \"vllm\", \"trtllm\", \"atom\", got string 'tensorflow'")),
    ("dram-needs-runner-hardware",
     lambda r: _edit(r, names.RUNNERS, "  cluster:gb300-nv:\n    available-cpu-dram-mib: 860160\n", "  cluster:gb300-nv:\n"),
     "error", (MASTER, "  runner: cluster:gb300-nv", "kv-offloading: dram needs the CPU DRAM of runner 'cluster:gb300-nv'")),
    ("pp-is-part-of-the-point",
     lambda r: _edit(r, MASTER, "{ tp: 4, ep: 1, kv-offloading: none, spec-decoding: mtp, conc-list: [4, 16] }",
                     "{ tp: 4, ep: 1, pp: 2, kv-offloading: none, spec-decoding: mtp, conc-list: [4, 16] }"),
     "error", (RECIPE, "  tp4-c4:", f"recipe point 'tp4-c4' has pp 1, but master entry {SEED} runs pp 2")),
    ("dram-offload-needs-the-recipes-kv-offload",
     lambda r: _edit(r, MASTER, "{ tp: 4, ep: 1, kv-offloading: none, spec-decoding: mtp, conc-list: [4, 16] }",
                     "{ tp: 4, ep: 1, kv-offloading: dram, kv-offload-backend: { name: hicache }, spec-decoding: mtp, "
                     "conc-list: [4, 16] }"),
     "error", (RECIPE, "  tp4-c4:", f"master entry {SEED} offloads KV for point 'tp4-c4' (dram, hicache;")),
    ("naming-gpu",
     lambda r: _rename_b300(r, "dsv41flash-fp4-h100-sglang"),
     "warning", (MASTER, "dsv41flash-fp4-h100-sglang:", "config key 'dsv41flash-fp4-h100-sglang' names GPU 'h100' but runs on runner 'b300' (b300)")),
    ("naming-prefix-and-framework",
     lambda r: _rename_b300(r, "b300-vllm-dsv41"),
     "warning", (MASTER, "b300-vllm-dsv41:", "does not start with 'dsv41flash-fp4-' (model-prefix-precision-); does not contain the framework 'sglang'")),
    ("naming-characters",
     lambda r: _rename_b300(r, "dsv41flash-fp4-b300-sglang_Test"),
     "warning", (MASTER, "sglang_Test:", "uses characters other than lowercase letters")),
]


@pytest.mark.parametrize("edit,severity,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_crossfile_case(scratch, edit, severity, expected):
    edit(scratch)
    res = run(["config", "validate", "--format", "json"], cwd=scratch)
    body = json.loads(res.out)
    group = body["errors" if severity == "error" else "warnings"]
    file, needle, fragment = expected
    lines = (scratch / file).read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if needle in text and not text.lstrip().startswith("#"))
    hits = [f for f in group if f["file"] == file and fragment in f["message"]]
    assert hits, json.dumps(body, indent=1)
    assert hits[0]["line"] == line, hits
    assert res.code == (1 if body["errors"] else 0)
    if severity == "warning":
        assert body["errors"] == [], body["errors"]
