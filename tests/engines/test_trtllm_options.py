"""Speculative decoding on TensorRT-LLM (issue 40): a recipe's `options` (MTP, EAGLE and any other LLM-API option)
reach the options file the runner writes, and that file is what TensorRT-LLM's own code takes: trtllm-serve's
serve command merges it (update_llm_args_with_extra_dict) and its argument model validates it (TorchLlmArgs),
both from 1.3.0rc3's source (tests/engines/trtllm_host.py). config validate checks the same keys against the
table generated from that model (ci_tools/engines/argkinds.json, OPTION_FILES)."""

from __future__ import annotations

import pytest
import yaml

from ci_tools.config.engineargs import option_file_problems
from ci_tools.config.load import load_recipe
from ci_tools.config.recipe import resolve_point
from ci_tools.engines import ServeSpec, trtllm
from ci_tools.runner.plan import Settings, build_plan
from tests.engines.harness import REPO, parse_many

VERSION = "1.3.0rc3"
MTP_RECIPE = "recipes/b300-dsv41flash-fp4-trt/mtp.yaml"


def _server(options: dict, dp_attn: bool = False) -> tuple[list[str], dict[str, str]]:
    spec = ServeSpec("/models/m", "m", "0.0.0.0", 8000, tp=8, ep=8 if dp_attn else 1, dp_attn=dp_attn,
                     args={"backend": "pytorch"}, files_dir="/job", options=options)
    cmd = trtllm.server(spec)
    return list(cmd.args), dict(cmd.files)


MTP = {"speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layers": 3}}
EAGLE = {"speculative_config": {"decoding_type": "Eagle3", "max_draft_len": 3, "speculative_model": "/models/draft"}}


@pytest.mark.parametrize("options,dp_attn", [(MTP, False), (MTP, True), (EAGLE, False),
                                              ({"speculative_config": {"decoding_type": "Eagle", "max_draft_len": 2,
                                                                       "speculative_model": "/models/d"}}, False),
                                              ({"moe_config": {"backend": "CUTLASS"}, **MTP}, True)])
def test_the_options_file_the_runner_writes_is_taken_by_trtllm(options, dp_attn):
    args, files = _server(options, dp_attn)
    path = args[args.index("--extra_llm_api_options") + 1]
    written = yaml.safe_load(files[path])
    assert written == ({"enable_attention_dp": True} if dp_attn else {}) | options
    result = parse_many("trtllm", VERSION, [args], files)[0]
    assert result.ok, result.error
    assert option_file_problems("trtllm", (), options) == []


# a key its argument model does not take: refused by TensorRT-LLM's own code and by config validate alike
BROKEN = [
    ({"speculative_config": {"decoding_type": "MTP", "num_nextn_predict_layer": 3}}, "num_nextn_predict_layer"),
    ({"speculative_config": {"decoding_type": "Medusa3", "max_draft_len": 3}}, "Medusa3"),
    ({"enable_attention_db": True}, "enable_attention_db"),
    ({"kv_cache_config": {"host_cache_sizes": 1}}, "host_cache_sizes"),
]


@pytest.mark.parametrize("options,word", BROKEN, ids=[w for _, w in BROKEN])
def test_a_key_trtllm_does_not_take_is_refused_by_its_code_and_by_config_validate(options, word):
    args, files = _server(options)
    result = parse_many("trtllm", VERSION, [args], files)[0]
    assert not result.ok and word in result.error, result
    found = option_file_problems("trtllm", (), options)
    assert found and word in found[0][1], found


def test_config_validate_says_what_to_write_and_what_the_runner_owns():
    (path, message, hint), = option_file_problems("trtllm", (), BROKEN[0][0])
    assert path == ("speculative_config", "num_nextn_predict_layer") and "did you mean `num_nextn_predict_layers`" in hint
    (_, message, hint), = option_file_problems("trtllm", (), {"enable_attention_dp": True})
    assert "comes from the point's dp-attn" in message
    (_, message, hint), = option_file_problems("sglang", (), MTP)
    assert "sglang reads no options file" in message and "`args`" in hint


def test_the_example_mtp_recipe_renders_its_speculative_config_and_trtllm_takes_it():
    recipe = load_recipe(REPO / MTP_RECIPE, MTP_RECIPE)
    for tp, ep, dpa, conc, layers in ((8, 1, False, 4, 3), (8, 8, True, 256, 1)):
        point = resolve_point(recipe, tp, ep, dpa, conc)
        row = {"tp": tp, "ep": ep, "dp-attn": dpa, "conc": conc, "image": recipe.image, "model": recipe.model,
               "isl": 1024, "osl": 1024}
        server = build_plan(row, point, Settings(), "/job").proc("server").command
        files = dict(server.files)
        written = yaml.safe_load(next(iter(files.values())))
        assert written["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": layers}
        assert written.get("enable_attention_dp", False) == dpa
        result = parse_many("trtllm", VERSION, [list(server.args)], files)[0]
        assert result.ok, result.error
