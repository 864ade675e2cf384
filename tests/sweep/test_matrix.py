"""Matrix expansion and eval selection against the spec's acceptance cases
(inferencex-config-changelog-matrix.md §5, cases 46-93) and its corpus figures (§6)."""

import copy
import json

import pytest

from ci_tools.errors import InputError
from ci_tools.sweep.matrix import (Filters, KeyedRow, expand, mark_all_evals, mark_evals, select_evals,
                                  seq_len_name)
from ci_tools.sweep.row import make_row

S_KEY = "dsr1-fp8-mi300x-sglang"
S = {S_KEY: {"image": "img", "model": "m", "model-prefix": "dsr1", "precision": "fp8", "framework": "sglang",
             "runner": "mi300x", "multinode": False,
             "scenarios": {"fixed-seq-len": [
                 {"isl": 1024, "osl": 1024, "search-space": [{"tp": 8, "conc-start": 4, "conc-end": 64}]},
                 {"isl": 8192, "osl": 1024, "search-space": [{"tp": 8, "conc-start": 4, "conc-end": 64}]}]}}}
M_KEY = "dsr1-fp4-gb200-dynamo-trt"
M = {M_KEY: {"image": "img", "model": "m", "model-prefix": "dsr1", "precision": "fp4", "framework": "dynamo-trt",
             "runner": "gb200", "multinode": True, "disagg": True, "kv-p2p-transfer": "nixl",
             "scenarios": {"fixed-seq-len": [{"isl": 1024, "osl": 1024, "search-space": [{
                 "conc-list": [2150],
                 "prefill": {"hardware": "gb200", "num-worker": 5, "tp": 4, "ep": 4, "dp-attn": True},
                 "decode": {"hardware": "h100", "num-worker": 1, "tp": 8, "ep": 8, "dp-attn": True}}]}]}}}
HW = {"cluster:b300-nv": {"available-cpu-dram-mib": 2964436, "gpus-per-node": 8},
      "cluster:mi355x-amds": {"available-cpu-dram-mib": 3095781, "gpus-per-node": 8}}


def rows(entries, hw=HW, **kw):
    return [r.row for r in expand(entries, hw, Filters(**kw))]


def sn(search, seq=(1024, 1024), **top):
    entry = {"image": "img", "model": "m", "model-prefix": "p", "precision": "fp8", "framework": "vllm",
             "runner": "h200", "multinode": False,
             "scenarios": {"fixed-seq-len": [{"isl": seq[0], "osl": seq[1], "search-space": search}]}}
    entry.update(top)
    return {"k": entry}


def mn(search, seq=(8192, 1024)):
    return {"k": {"image": "img", "model": "m", "model-prefix": "p", "precision": "fp4", "framework": "dynamo-trt",
                  "runner": "h200", "multinode": True, "disagg": True, "kv-p2p-transfer": "nixl",
                  "scenarios": {"fixed-seq-len": [{"isl": seq[0], "osl": seq[1], "search-space": search}]}}}


def W(nw=1, tp=4, ep=1, dpa=False, **kw):
    return {"num-worker": nw, "tp": tp, "ep": ep, "dp-attn": dpa, **kw}


def agentic(search, multinode=False, runner="cluster:b300-nv", util=None, mp="dsv4"):
    cfg = {"search-space": search}
    if util is not None:
        cfg["dram-utilization"] = util
    return {"a": {"image": "img", "model": "m", "model-prefix": mp, "precision": "fp4", "framework": "sglang",
                  "runner": runner, "multinode": multinode, **({"disagg": True} if multinode else {}),
                  "scenarios": {"agentic-coding": [cfg]}}}


@pytest.mark.parametrize("isl, osl, name", [(1024, 1024, "1k1k"), (8192, 1024, "8k1k"), (2048, 2048, "2048_2048"),
                                            (4096, 1024, "4096_1024")])
def test_46_seq_len_name(isl, osl, name):
    assert seq_len_name(isl, osl) == name


def test_47_full_sweep_single_node():
    out = rows(S)
    assert len(out) == 10
    assert [r["conc"] for r in out] == [4, 8, 16, 32, 64] * 2
    assert {r["exp-name"] for r in out} == {"dsr1_1k1k", "dsr1_8k1k"}
    assert all(r["max-model-len"] == r["isl"] + r["osl"] + 256 for r in out)
    assert all((r["pp"], r["dcp-size"], r["pcp-size"]) == (1, 1, 1) for r in out)


def test_47_key_order_is_inferencex():
    assert list(rows(S)[0]) == ["image", "model", "model-prefix", "precision", "framework", "runner", "isl", "osl",
                                "tp", "pp", "dcp-size", "pcp-size", "conc", "max-model-len", "ep", "dp-attn",
                                "spec-decoding", "exp-name", "disagg", "run-eval"]


@pytest.mark.parametrize("kw, concs", [
    ({"seq_lens": ("1k1k",)}, [4, 8, 16, 32, 64]),                       # 48
    ({"seq_lens": ("1k1k",), "max_conc": 16}, [4, 8, 16]),                # 49
    ({"seq_lens": ("1k1k",), "max_conc": 1}, [1]),
    ({"seq_lens": ("1k1k",), "max_conc": 0}, []),
    ({"seq_lens": ("1k1k",), "max_conc": -100}, []),
    ({"seq_lens": ("1k1k",), "step": 4}, [4, 16, 64]),                    # 50
    ({"seq_lens": ("1k1k",), "min_conc": 10}, [10, 20, 40, 64]),          # 52
    ({"seq_lens": ("1k1k",), "max_conc": 50}, [4, 8, 16, 32, 50]),
    ({"seq_lens": ("1k1k",), "min_conc": 100}, []),
])
def test_48_to_52_single_node_filters(kw, concs):
    assert [r["conc"] for r in rows(S, **kw)] == concs


@pytest.mark.parametrize("kw, message", [({"step": 1}, "greater than 1"),
                                         ({"min_conc": 16, "max_conc": 8}, "less than or equal")])
def test_50_bad_filters(kw, message):
    with pytest.raises(InputError, match=message):
        rows(S, **kw)


@pytest.mark.parametrize("kw, concs", [({}, [4, 16, 64]), ({"min_conc": 8, "max_conc": 32}, [16]),
                                       ({"max_conc": 2}, [2])])
def test_53_single_node_list(kw, concs):
    assert [r["conc"] for r in rows(sn([{"tp": 8, "conc-list": [4, 16, 64]}]), **kw)] == concs


@pytest.mark.parametrize("search, kw, concs", [
    ({"conc-start": 1, "conc-end": 8}, {}, [[1, 2, 4, 8]]),                              # 54
    ({"conc-list": [100, 200, 400]}, {"max_conc": 1}, [[1]]),
    ({"conc-list": [100, 200, 400]}, {"max_conc": 0}, []),
    ({"conc-start": 4, "conc-end": 64}, {"max_conc": 50}, [[4, 8, 16, 32]]),              # 55
    ({"conc-start": 4, "conc-end": 64}, {"min_conc": 10}, [[16, 32, 64]]),
])
def test_54_55_multi_node_concs(search, kw, concs):
    out = rows(mn([{**search, "prefill": W(), "decode": W()}]), **kw)
    assert [r["conc"] for r in out] == concs


def test_a_max_conc_below_one_skips_a_single_node_list_but_keeps_a_multi_node_one_with_values_under_it():
    """InferenceX's two rules for --max-conc <= 0 on listed concurrencies (the one difference between
    the single- and multi-node filters, which share their code): single-node skips the entry, multi-node
    keeps the values <= the max."""
    assert rows(sn([{"tp": 8, "conc-list": [-1, 4]}]), max_conc=0) == []
    out = rows(mn([{"conc-list": [-1, 4], "prefill": W(), "decode": W()}]), max_conc=0)
    assert [r["conc"] for r in out] == [[-1]]


def test_56_57_58_max_tp_ep():
    two = sn([{"tp": 4, "conc-start": 4, "conc-end": 64}, {"tp": 8, "conc-start": 4, "conc-end": 64}])
    assert {r["tp"] for r in rows(two, max_tp=4)} == {4} and len(rows(two, max_tp=4)) == 5
    assert rows(S, max_tp=2) == [] and rows(S, max_tp=0) == []
    one = sn([{"tp": 8, "ep": 8, "conc-start": 4, "conc-end": 4}])
    assert [r["ep"] for r in rows(one, max_ep=2)] == [2]
    assert rows(one, max_ep=0) == []
    assert [r["ep"] for r in rows(sn([{"tp": 8, "conc-list": [4]}]), max_ep=2)] == [1]
    mix = sn([{"tp": 8, "ep": 8, "conc-start": 100, "conc-end": 200}, {"tp": 2, "ep": 8, "conc-start": 100,
                                                                        "conc-end": 200}])
    out = rows(mix, max_tp=2, max_ep=1, max_conc=1)
    assert [(r["tp"], r["ep"], r["conc"]) for r in out] == [(2, 1, 1)]


def test_59_defaults_and_spec():
    r = rows(sn([{"tp": 4, "ep": 4, "dp-attn": True, "spec-decoding": "mtp", "conc-start": 4, "conc-end": 4}]))[0]
    assert (r["ep"], r["dp-attn"], r["spec-decoding"], r["disagg"]) == (4, True, "mtp", False)


def test_60_runner_type():
    assert rows(S, runner_type=("mi300x",)) and rows(S, runner_type=("h100",)) == []


def test_63_multi_node_row():
    out = rows(M)
    assert len(out) == 1
    r = out[0]
    assert r["conc"] == [2150] and r["prefill"]["num-worker"] == 5 and r["decode"]["num-worker"] == 1
    assert (r["prefill"]["hardware"], r["decode"]["hardware"]) == ("gb200", "h100")
    assert list(r["prefill"]) == ["hardware", "num-worker", "tp", "ep", "dp-attn", "pp", "dcp-size", "pcp-size"]
    assert list(r) == ["image", "model", "model-prefix", "precision", "framework", "runner", "isl", "osl",
                       "spec-decoding", "prefill", "decode", "conc", "max-model-len", "exp-name", "disagg",
                       "run-eval", "kv-p2p-transfer"]
    assert rows(M, single_node=True) == []


def test_64_worker_parallelism_echoed():
    m = copy.deepcopy(M)
    ss = m[M_KEY]["scenarios"]["fixed-seq-len"][0]["search-space"][0]
    ss["prefill"].update({"pp": 2, "dcp-size": 2, "pcp-size": 2})
    ss["decode"].update({"pp": 2, "dcp-size": 4, "pcp-size": 1})
    r = rows(m)[0]
    assert [r["prefill"][k] for k in ("pp", "dcp-size", "pcp-size")] == [2, 2, 2]
    assert [r["decode"][k] for k in ("pp", "dcp-size", "pcp-size")] == [2, 4, 1]


def test_65_node_type_split():
    both = {**S, **M}
    assert len(rows(both)) == 11
    assert all("tp" in r for r in rows(both, single_node=True))
    assert all("prefill" in r for r in rows(both, multi_node=True))
    assert len(rows(both, single_node=True, multi_node=True)) == 11


def test_67_test_config_conc_filter():
    out = rows(S, config_keys=(S_KEY,), seq_lens=("1k1k",), concs=(4,))
    assert [(r["conc"], r["pp"], r["dcp-size"], r["pcp-size"]) for r in out] == [(4, 1, 1, 1)]
    assert rows(sn([{"tp": 8, "conc-list": [4, 8]}]), concs=(5,)) == []


def test_69_empty_list_with_range_expands_range():
    # DEVIATION: InferenceX's test-config emits nothing here; both our commands expand the range
    assert len(rows(sn([{"tp": 8, "conc-list": [], "conc-start": 1, "conc-end": 16}]), concs=())) == 5


def test_71_agentic_single_node_dram():
    out = rows(agentic([{"tp": 8, "ep": 1, "kv-offloading": "dram", "kv-offload-backend": {"name": "hicache"},
                         "conc-list": [64]}], util=0.80))
    r = out[0]
    assert (r["total-cpu-dram-gb"], r["duration"], r["scenario-type"]) == (2399, 3600, "agentic-coding")
    assert r["exp-name"] == "dsv4_tp8_conc64_kvdram-hicache"
    assert list(r)[-2:] == ["scenario-type", "kv-offload-backend"]


@pytest.mark.parametrize("extra, gb", [({}, 1199), ({"dcp-size": 2}, 1199), ({"pcp-size": 2}, 2399),
                                       ({"pp": 2}, 2399)])
def test_72_dram_budgets(extra, gb):
    out = rows(agentic([{"tp": 4, "kv-offloading": "dram", "kv-offload-backend": {"name": "h"}, "conc-list": [1],
                         **extra}], util=0.80))
    assert out[0]["total-cpu-dram-gb"] == gb


def test_73_dram_exceeds_node():
    hw = {"cluster:b300-nv": {"available-cpu-dram-mib": 2964436, "gpus-per-node": 2}}
    with pytest.raises(InputError, match="exceeds gpus-per-node"):
        rows(agentic([{"tp": 4, "kv-offloading": "dram", "kv-offload-backend": {"name": "h"}, "conc-list": [1]}],
                     util=0.8), hw=hw)


def test_74_agentic_multi_node_rows():
    ss = {"conc-list": [16, 32, 64, 128, 256],
          "prefill": W(2, 4, 4, hardware="gb200", pp=2, **{"dcp-size": 2, "pcp-size": 2}),
          "decode": W(1, 4, 1, hardware="h100", pp=2, **{"dcp-size": 2, "pcp-size": 1})}
    out = rows(agentic([ss], multinode=True))
    assert [r["conc"] for r in out] == [[16], [32], [64], [128], [256]]
    assert [r["exp-name"] for r in out] == [f"dsv4_p2x4ep4_d1x4_conc{c}" for c in (16, 32, 64, 128, 256)]
    assert list(out[0])[:10] == ["image", "model", "model-prefix", "precision", "framework", "runner",
                                 "spec-decoding", "prefill", "decode", "conc"]


@pytest.mark.parametrize("decode_tp", [8, 4])
def test_75_agentic_multi_node_dram(decode_tp):
    ss = {"kv-offloading": "dram", "kv-offload-backend": {"name": "hicache"}, "conc-list": [16],
          "prefill": W(1, 8), "decode": W(1, decode_tp)}
    r = rows(agentic([ss], multinode=True, runner="cluster:mi355x-amds", util=0.80))[0]
    assert r["total-cpu-dram-gb"] == 2399
    assert r["exp-name"] == f"dsv4_p1x8_d1x{decode_tp}_conc16_kvdram-hicache"


def test_76_agentic_worker_does_not_divide():
    ss = {"kv-offloading": "dram", "kv-offload-backend": {"name": "h"}, "conc-list": [16],
          "prefill": W(1, 6), "decode": W(1, 8)}
    with pytest.raises(InputError, match="does not divide"):
        rows(agentic([ss], multinode=True, util=0.5))


def test_77_dram_without_hardware_names_known_keys():
    with pytest.raises(InputError, match="cluster:nohw.*cluster:a"):
        rows(agentic([{"tp": 8, "kv-offloading": "dram", "kv-offload-backend": {"name": "h"}, "conc-list": [1]}],
                     runner="cluster:nohw", util=0.5), hw={"cluster:a": {"available-cpu-dram-mib": 1,
                                                                         "gpus-per-node": 8}})


def test_78_agentic_ignores_max_tp_and_seq_lens():
    out = rows(agentic([{"tp": 8, "kv-offloading": "none", "conc-list": [1, 32, 64]}]),
               max_conc=40, max_tp=4, seq_lens=("1k1k",))
    assert [(r["conc"], r["tp"]) for r in out] == [(1, 8), (32, 8)]


def test_agentic_shape_mismatch_is_a_clean_error():
    with pytest.raises(InputError, match="does not fit"):
        rows(agentic([{"tp": 8, "kv-offloading": "none", "conc-list": [1]}], multinode=True))


# ---- eval selection -----------------------------------------------------------------------------

def sn_row(conc, seq=(8192, 1024), **kw):
    return {"model": "m", "runner": "r", "framework": "f", "precision": "p", "isl": seq[0], "osl": seq[1], "tp": 8,
            "ep": 1, "spec-decoding": "none", "dp-attn": False, "conc": conc, "exp-name": "x", "run-eval": False, **kw}


def mn_row(conc, seq=(8192, 1024), nw=1, dpa=True):
    return {"model": "m", "runner": "r", "isl": seq[0], "osl": seq[1], "prefill": W(nw, 4, 4, dpa),
            "decode": W(1, 8, 8, dpa), "conc": conc, "exp-name": "x", "run-eval": False}


def marked_rows(rs, include_agentic):
    """`mark_evals` over these row objects (it returns new rows)."""
    return [k.row for k in mark_evals([KeyedRow("k", make_row(r)) for r in rs], include_agentic=include_agentic)]


def all_marked(rs):
    return [k.row for k in mark_all_evals([KeyedRow("k", r) for r in rs])]


def ag_sn(conc):
    return {"model": "m", "runner": "r", "framework": "f", "precision": "p", "tp": 8, "conc": conc,
            "exp-name": f"x{conc}", "scenario-type": "agentic-coding"}


def ag_mn(conc, tp=4):
    return {"model": "m", "runner": "r", "prefill": W(1, tp), "decode": W(1, tp), "conc": [conc],
            "exp-name": f"x{conc}", "scenario-type": "agentic-coding"}


def test_81_agentic_single_node_evals():
    given = [KeyedRow("k", make_row(ag_sn(32))), KeyedRow("k", make_row(ag_sn(64)))]
    rs = [k.row for k in mark_evals(given, include_agentic=True)]
    assert [r["run-eval"] for r in rs] == [False, True]
    assert [k.row for k in given] == [ag_sn(32), ag_sn(64)]          # marking returns new rows
    assert [r.run_eval for r in all_marked(rs)] == [True, True] and not rs[0].run_eval
    rs = [ag_sn(32), ag_sn(64)]
    rs = marked_rows(rs, False)
    assert [r["run-eval"] for r in rs] == [False, False]


def test_82_agentic_multi_node_evals():
    rs = [ag_mn(8), ag_mn(16), ag_mn(32)]
    rs = marked_rows(rs, True)
    assert [r["run-eval"] for r in rs] == [False, False, True] and rs[2]["eval-conc"] == 32
    rs = [ag_mn(16, 4), ag_mn(32, 4), ag_mn(64, 8), ag_mn(96, 8)]
    rs = marked_rows(rs, True)
    assert [(r["conc"], r.get("eval-conc")) for r in rs if r["run-eval"]] == [([32], 32), ([96], 96)]


@pytest.mark.parametrize("concs, marked", [([8, 16, 32, 64], [False, False, True, True]),
                                           ([32, 128, 512], [False, True, True]),
                                           ([16, 32, 64, 128], [False, False, True, True])])
def test_83_84_fixed_single_node_evals(concs, marked):
    rs = [sn_row(c) for c in concs]
    rs = marked_rows(rs, False)
    assert [r["run-eval"] for r in rs] == marked


def test_84_1k1k_never_marked():
    rs = [sn_row(c, seq=(1024, 1024)) for c in (16, 32, 64)]
    rs = marked_rows(rs, False)
    assert not any(r["run-eval"] for r in rs)


def test_85_86_87_fixed_multi_node_evals():
    rs = [mn_row([1])]
    rs = marked_rows(rs, False)
    assert rs[0]["run-eval"] is False and "eval-conc" not in rs[0]
    rs = [mn_row([8, 16, 32], dpa=True), mn_row([8, 16, 64], dpa=False)]
    rs = marked_rows(rs, False)
    assert [r["eval-conc"] for r in rs] == [32, 64]
    rs = [mn_row([32], nw=1), mn_row([64], nw=2), mn_row([128], nw=3)]
    rs = marked_rows(rs, False)
    assert [r["eval-conc"] for r in rs] == [32, 64, 128]
    rs = [mn_row([2, 4, 8, 16, 32]), mn_row([64, 128, 256])]
    rs = marked_rows(rs, False)
    assert [r["run-eval"] for r in rs] == [False, True] and rs[1]["eval-conc"] == 256


def test_88_mark_all():
    rs = [sn_row(16, seq=(1024, 1024)), sn_row(16), mn_row([1, 4, 8, 16], dpa=True), mn_row([32], dpa=False)]
    rs = marked_rows(rs, True)
    out = all_marked(rs)
    assert [r["run-eval"] for r in out] == [False, True, True, True]
    assert all(r.get("eval-all-concs") and "eval-conc" not in r for r in out[2:])


def test_89_90_mark_all_merges_multi_node():
    rs = [mn_row([1, 4, 8, 16, 32])]
    rs = marked_rows(rs, True)
    out = all_marked(rs)
    assert len(out) == 1 and out[0]["conc"] == [1, 4, 8, 16, 32] and out[0]["eval-all-concs"]
    assert "eval-conc" not in out[0]
    rs = [mn_row([4, 8, 16]), mn_row([16, 32]), mn_row([4, 8], seq=(1024, 1024))]
    rs = marked_rows(rs, True)
    out = all_marked(rs)
    assert out[0]["conc"] == [4, 8, 16, 32] and out[0]["eval-all-concs"] and "eval-conc" not in out[0]
    assert len(out) == 2 and "eval-all-concs" not in out[1]


def test_91_mark_all_agentic():
    rs = [ag_sn(4), ag_mn(2), ag_mn(16), ag_mn(32)]
    rs = marked_rows(rs, True)
    out = all_marked(rs)
    assert out[0]["run-eval"] is True and "eval-conc" not in out[0]
    assert len(out) == 2 and out[1]["conc"] == [2, 16, 32] and out[1]["eval-conc"] == 32
    assert "eval-all-concs" not in out[1]


@pytest.mark.parametrize("flags", [{"all_evals": True, "evals_only": False}, {"all_evals": True, "evals_only": True}])
def test_92_test_config_all_evals(flags):
    out = select_evals(expand(S, HW, Filters(config_keys=(S_KEY,))), **flags)
    assert len(out) == 5 and all(r.row["isl"] == 8192 for r in out)
    assert min(r.row["conc"] for r in out) == 4
    assert all(r.row["run-eval"] and r.row["eval-only"] for r in out)


def test_93_multi_node_all_evals():
    m = mn([{"conc-list": [4, 16, 64], "prefill": W(), "decode": W()}])
    out = select_evals(expand(m, HW, Filters()), all_evals=True, evals_only=False)
    assert len(out) == 1 and out[0].row["conc"] == [4, 16, 64]
    assert out[0].row["eval-all-concs"] and "eval-conc" not in out[0].row and out[0].row["eval-only"]


# ---- corpus equivalence (spec §6: InferenceX's generator on both masters) ------------------------

@pytest.fixture(scope="module")
def corpus(request):
    from pathlib import Path

    import yaml

    from tests.conftest import shared_dir
    base = shared_dir() / "corpus" / "inferencex" / "configs"
    if not base.is_dir():
        pytest.fail(f"the shared corpus is missing: {base}")
    entries = {}
    for name in ("nvidia-master.yaml", "amd-master.yaml"):
        entries.update(yaml.load((base / name).read_text(), Loader=yaml.CSafeLoader))
    hw = yaml.load((base / "runners.yaml").read_text(), Loader=yaml.CSafeLoader)["hardware"]
    return entries, hw, Path(base)


def _generate(corpus, no_evals=False, evals_only=False, all_evals=False, **kw):
    entries, hw, _ = corpus
    out = select_evals(expand(entries, hw, Filters(**kw)), all_evals=all_evals, evals_only=evals_only,
                       no_evals=no_evals)
    return [r.row.as_dict() for r in out]


@pytest.mark.parametrize("kw, count, size", [
    ({"no_evals": True}, 1820, 1_030_702),
    ({}, 1820, 1_050_109),
    ({"evals_only": True}, 645, 446_296),
    ({"all_evals": True}, 1663, 956_417),
    ({"single_node": True}, 1172, 522_943),
    ({"multi_node": True}, 648, 527_167),
    ({"seq_lens": ("1k1k",)}, 747, 468_793),
    ({"scenario_types": ("agentic-coding",)}, 746, 468_042),
    ({"min_conc": 4, "max_conc": 64}, 1402, 816_384),
    ({"step": 4}, 1588, 955_090),
])
def test_corpus_full_sweep_equivalence(corpus, kw, count, size):
    """Counts and stdout byte sizes measured on InferenceX's generator (spec §6); the byte size pins
    every key, value and separator of every row (stdout = json.dumps(rows) + newline)."""
    out = _generate(corpus, **kw)
    assert len(out) == count
    assert len(json.dumps(out)) + 1 == size


def test_corpus_shapes(corpus):
    out = _generate(corpus, no_evals=True)
    kinds = {"fixed SN": 0, "agentic SN": 0, "fixed MN": 0, "agentic MN": 0}
    for r in out:
        ag, mnode = r.get("scenario-type") == "agentic-coding", "prefill" in r
        kinds[f"{'agentic' if ag else 'fixed'} {'MN' if mnode else 'SN'}"] += 1
        assert list(r)[:6] == ["image", "model", "model-prefix", "precision", "framework", "runner"]
        if not ag:
            assert r["run-eval"] is False
        else:
            assert "run-eval" not in r and r["duration"] == 3600
    assert kinds == {"fixed SN": 690, "agentic SN": 482, "fixed MN": 384, "agentic MN": 264}


def test_corpus_default_eval_marks(corpus):
    out = _generate(corpus)
    assert sum(r["run-eval"] for r in out) == 519
    assert sum("eval-conc" in r for r in out) == 317


def test_corpus_per_vendor(corpus):
    entries, hw, _ = corpus
    nv = [k for k in entries][:152]
    assert len(_generate(corpus, no_evals=True, config_keys=tuple(nv))) == 1355
    assert len(_generate(corpus, no_evals=True, config_keys=tuple(list(entries)[152:]))) == 465


def test_79_corpus_power_ab_pair(corpus):
    keys = ("qwen3.5-fp4-b300-sglang-agentic-power-ab", "qwen3.5-fp8-b300-sglang-agentic-power-ab")
    out = _generate(corpus, no_evals=True, config_keys=keys, concs=(16, 32))
    assert len(out) == 8
    assert {(r["precision"], r["kv-offloading"], r["conc"]) for r in out} == {
        (p, kv, c) for p in ("fp4", "fp8") for kv in ("none", "dram") for c in (16, 32)}
    assert all(r["image"] == "lmsysorg/sglang:v0.5.16-cu130" and (r["tp"], r["ep"], r["spec-decoding"]) == (2, 2, "mtp")
               for r in out)
    assert all((r.get("kv-offload-backend") == {"name": "hicache"}) == (r["kv-offloading"] == "dram") for r in out)
    assert all(("kv-offload-backend" in r) == (r["kv-offloading"] == "dram") for r in out)
