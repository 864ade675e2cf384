"""Recipe resolution: merge rules, the seven seed points, clear errors for absent points."""

from __future__ import annotations

import pytest

from ci_tools.config.recipe import merge_args, merge_env, recipe_from_data, render_args, resolve_point
from ci_tools.config.load import load_recipe
from ci_tools.errors import InputError

from runner_support import REPO, seed_rows

SEED = REPO / "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"


@pytest.mark.parametrize("base,override,expected", [
    ({"a": 1, "b": True}, {}, {"a": 1, "b": True}),
    ({"a": 1, "b": True}, {"a": 2}, {"a": 2, "b": True}),               # replaced in place
    ({"a": 1, "b": True}, {"b": False}, {"a": 1}),                      # false drops
    ({"a": 1, "b": True}, {"a": None}, {"b": True}),                    # null drops
    ({"a": 1}, {"c": "x", "d": True}, {"a": 1, "c": "x", "d": True}),   # new ones appended
    (None, None, {}),
])
def test_merge_args(base, override, expected):
    got = merge_args(base, override)
    assert got == expected
    assert list(got) == list(expected)


def test_merge_env_stringifies_and_drops_null():
    assert merge_env({"A": 1, "B": "x"}, {"B": None, "C": True}) == {"A": "1", "C": "1"}


def test_render_args_booleans_as_flags():
    assert render_args({"trust-remote-code": True, "x": 3, "off": False, "none": None, "f": 0.85}) == \
        ["--trust-remote-code", "--x", "3", "--f", "0.85"]


def test_all_seed_points_resolve():
    recipe = load_recipe(SEED)
    names = []
    for name, row in seed_rows():
        pt = resolve_point(recipe, row["tp"], row["ep"], row["dp-attn"], row["conc"])
        names.append(pt.name)
        assert pt.args["trust-remote-code"] is True
        assert "SGLANG_ENABLE_SPEC_V2" not in pt.env   # read by no SGLang release (tests/engines)
    assert names == ["tp4-c1", "tp4-c4", "tp4-c16", "tp2-c16", "tp2-c32", "dep2-c64", "dep2-c128"]


def test_merge_key_override_and_router():
    recipe = load_recipe(SEED)
    c128 = resolve_point(recipe, 2, 2, True, 128)
    c64 = resolve_point(recipe, 2, 2, True, 64)
    assert c64.args["prefill-decode-interval"] == 24
    assert c128.args["prefill-decode-interval"] == 16          # overrides the merged anchor
    assert c128.args["moe-a2a-backend"] == "megamoe"            # inherited through <<
    assert c128.args["mem-fraction-static"] == 0.85
    assert c128.router["args"] == {"policy": "cache_aware", "dp-aware": True}
    assert c128.router["routing-key"] == "session-id"
    tp2 = resolve_point(recipe, 2, 1, False, 16)
    assert tp2.router is None
    assert tp2.env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"


def test_absent_point_lists_available():
    recipe = load_recipe(SEED)
    with pytest.raises(InputError) as exc:
        resolve_point(recipe, 4, 4, False, 8)
    f = exc.value.findings[0]
    assert "no point with tp=4 ep=4 dp-attn=false conc=8" in f.message
    assert "tp4-c1 (tp=4 ep=4 dp-attn=false conc=1)" in f.hint and "dep2-c128" in f.hint
    assert f.line is not None  # located at `points:`


@pytest.mark.parametrize("data,message", [
    ({"serve": {"env": {"SGLANG_SIMULATE_ACC_LEN": "3"}}, "points": {"p": {"tp": 1, "conc": 1}}},
     "must not be committed"),
    ({"serve": {"args": {"tp-size": 4}}, "points": {"p": {"tp": 1, "conc": 1}}}, "come from the point"),
    ({"points": {"p": {"tp": 1, "conc": 1}, "q": {"tp": 1, "conc": 1}}}, "several points match"),
])
def test_recipe_mistakes_rejected(data, message):
    with pytest.raises(InputError) as exc:
        resolve_point(recipe_from_data(data), 1, 1, False, 1)
    assert message in str(exc.value) or message in exc.value.findings[0].message
