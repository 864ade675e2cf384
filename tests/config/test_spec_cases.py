"""Spec §5 master/runner acceptance cases 1-40 (plus the §7.10 shape gap), as one table.

Each case mutates a small valid entry and names the message it must produce (None: must be valid).
Deliberate deviations from the reference implementation, all stricter: `tp: "8"` is rejected (the
reference coerces it and copies the string into the matrix), tp/ep/isl/osl must be >= 1, and the
agentic entry shape must match the entry's `multinode` (the reference crashes later with KeyError).
"""

from __future__ import annotations

import pytest
from cfgdata import BASES, DELETE, RUNNERS, findings_for, mutate

W = "scenarios.fixed-seq-len.0.search-space.0"  # the first fixed search-space entry
A = "scenarios.agentic-coding.0.search-space.0"  # the first agentic search-space entry

CASES = [
    # id, base, changes, expected message fragment (None = no error)
    ("1-worker-valid", "mn", {}, None),
    ("2-worker-pp-0", "mn", {W + ".prefill.pp": 0}, "'pp' must be at least 1, got 0"),
    ("2-worker-dcp-0", "mn", {W + ".decode.dcp-size": 0}, "'dcp-size' must be at least 1, got 0"),
    ("2-worker-pcp-0", "mn", {W + ".decode.pcp-size": 0}, "'pcp-size' must be at least 1, got 0"),
    ("3-worker-dcp-divides", "mn", {W + ".prefill.dcp-size": 3}, "'tp' (4) must be divisible by 'dcp-size' (3)"),
    ("4-worker-missing-ep", "mn", {W + ".prefill.ep": DELETE}, "missing required field 'ep'"),
    ("4-worker-missing-dp-attn", "mn", {W + ".decode.dp-attn": DELETE}, "missing required field 'dp-attn'"),
    ("4-worker-unknown", "mn", {W + ".decode.unknown-field": 1}, "unknown field 'unknown-field'"),
    ("5-sn-dcp-divides", "sn", {W: {"tp": 8, "dcp-size": 3, "pcp-size": 2, "conc-list": [4]}},
     "'tp' (8) must be divisible by 'dcp-size' (3)"),
    ("6-range-and-list", "sn", {W + ".conc-list": [4, 8]}, "both a 'conc-list' and a 'conc-start'/'conc-end' range"),
    ("7-no-conc", "sn", {W: {"tp": 8}}, "no concurrency given (none)"),
    ("7-lone-start", "sn", {W: {"tp": 8, "conc-start": 4}}, "no concurrency given (only 'conc-start')"),
    ("8-start-gt-end", "sn", {W + ".conc-start": 64, W + ".conc-end": 4}, "'conc-start' (64) must be <= 'conc-end' (4)"),
    ("9-start-0", "sn", {W + ".conc-start": 0}, "must be greater than 0, got 0..64"),
    ("9-start-neg", "sn", {W + ".conc-start": -1}, "must be greater than 0, got -1..64"),
    ("9-end-0", "sn", {W + ".conc-start": 1, W + ".conc-end": 0}, "must be greater than 0, got 1..0"),
    ("10-list-has-0", "sn", {W: {"tp": 8, "conc-list": [4, 0, 16]}}, "'conc-list' values must be greater than 0, got 0"),
    ("11-list-only", "sn", {W: {"tp": 8, "conc-list": [4, 8]}}, None),
    ("12-pp-bool", "sn", {W + ".pp": True}, "'pp' must be an integer, got boolean true"),
    ("12-pp-float", "sn", {W + ".pp": 2.0}, "'pp' must be an integer, got number 2.0"),
    ("12-tp-string-strict", "sn", {W + ".tp": "8"}, "'tp' must be an integer, got string '8'"),
    ("13-spec-eagle3", "sn", {W + ".spec-decoding": "eagle3"}, "'spec-decoding' must be one of \"mtp\", \"draft_model\", \"none\""),
    ("13-spec-mtp", "sn", {W + ".spec-decoding": "mtp"}, None),
    ("13-spec-draft", "sn", {W + ".spec-decoding": "draft_model"}, None),
    ("13-spec-none", "sn", {W + ".spec-decoding": "none"}, None),
    # an unknown framework was accepted: it names the result files and picks the frontend rules
    ("framework-unknown", "sn", {"framework": "tensorflow"}, "'framework' must be one of \"sglang\", \"vllm\""),
    ("framework-typo", "mn", {"framework": "dynamo-sgl"}, "'framework' must be one of"),
    ("framework-atom", "sn", {"framework": "atom"}, None),
    ("framework-llmd", "mn", {"framework": "llmd-vllm"}, None),
    ("14-empty-list-plus-range", "sn", {W + ".conc-list": []}, None),
    ("15-router-no-version", "sn", {"router": {"name": "sglang-router"}}, "missing required field 'version'"),
    ("15-router-no-name", "sn", {"router": {"version": "1"}}, "missing required field 'name'"),
    ("15-router-extra", "sn", {"router": {"name": "r", "version": "1", "mode": "x"}}, "unknown field 'mode'"),
    ("15-router-empty-name", "sn", {"router": {"name": "", "version": "1"}}, "'name' must not be empty"),
    ("15-router-empty-version", "sn", {"router": {"name": "r", "version": ""}}, "'version' must not be empty"),
    ("16-version-image", "mn", {"router": {"name": "nixl", "version": "image:vllm/vllm-openai:v0.23.0"}},
     "not an image reference"),
    ("16-version-repo-like", "mn", {"router": {"name": "nixl", "version": "lmsysorg/sglang:v1"}}, None),
    ("17-mn-kvp2p-empty", "mn", {"kv-p2p-transfer": DELETE, W + ".kv-p2p-transfer": ""}, "'kv-p2p-transfer' must not be empty"),
    ("17-mn-kvp2p-mapping", "mn", {"kv-p2p-transfer": DELETE, W + ".kv-p2p-transfer": {"name": "nixl"}},
     "'kv-p2p-transfer' must be a string (or left out), got a mapping"),
    ("18-backend-valid", "ag", {A + ".kv-offloading": "dram", A + ".kv-offload-backend": {"name": "lmcache", "version": "0.5.1"}}, None),
    ("18-backend-extra", "ag", {A + ".kv-offloading": "dram", A + ".kv-offload-backend": {"name": "lmcache", "mode": "x"}},
     "unknown field 'mode'"),
    ("18-backend-image-version", "ag", {A + ".kv-offloading": "dram",
                                       A + ".kv-offload-backend": {"name": "lmcache", "version": "image:x"}},
     "not an image reference"),
    ("19-backend-with-none", "ag", {A + ".kv-offload-backend": {"name": "hicache"}},
     "kv-offload-backend is set while kv-offloading is 'none'"),
    ("20-dram-no-backend", "ag", {A + ".kv-offloading": "dram"}, "kv-offloading: dram needs a kv-offload-backend"),
    ("21-sn-agentic-no-kv-offloading", "ag", {A + ".kv-offloading": DELETE}, "missing required field 'kv-offloading'"),
    ("22-dram-no-utilization", "ag", {A + ".kv-offloading": "dram", A + ".kv-offload-backend": {"name": "hicache"},
                                      "scenarios.agentic-coding.0.dram-utilization": DELETE},
     "kv-offloading: dram needs dram-utilization"),
    ("22-utilization-0", "ag", {"scenarios.agentic-coding.0.dram-utilization": 0}, "'dram-utilization' must be greater than 0, got 0"),
    ("22-utilization-1", "ag", {"scenarios.agentic-coding.0.dram-utilization": 1.0}, None),
    ("23-total-cpu-dram-gb", "ag", {"scenarios.agentic-coding.0.total-cpu-dram-gb": 100}, "unknown field 'total-cpu-dram-gb'"),
    ("23-gpus-per-node", "ag", {"scenarios.agentic-coding.0.gpus-per-node": 8}, "unknown field 'gpus-per-node'"),
    ("23-available-cpu-dram", "ag", {A + ".available-cpu-dram-mib": 8}, "unknown field 'available-cpu-dram-mib'"),
    ("23-duration", "ag", {"scenarios.agentic-coding.0.duration": 3600}, "unknown field 'duration'"),
    ("23-trace-source", "ag", {"scenarios.agentic-coding.0.trace-source": "x"}, "unknown field 'trace-source'"),
    ("24-mn-agentic-pp", "agm", {A + ".pp": 1}, "unknown field 'pp'"),
    ("25-sn-agentic-tp-and-workers", "ag", {A + ".prefill": {"num-worker": 1, "tp": 8, "ep": 1, "dp-attn": False}},
     "unknown field 'prefill'"),
    ("25-mn-agentic-only-prefill", "agm", {A + ".decode": DELETE}, "missing required field 'decode'"),
    ("26-hardware-one-side", "mn", {W + ".decode.hardware": DELETE}, "'hardware' is set on only one of prefill/decode"),
    ("26-hardware-empty", "mn", {W + ".decode.hardware": ""}, "'hardware' must not be empty"),
    ("27-sn-entry-multinode-true", "sn", {"multinode": True}, "unknown field 'tp'"),
    ("27-mn-entry-multinode-false", "mn", {"multinode": False}, "'disagg' must be false"),
    ("27-multinode-missing", "sn", {"multinode": DELETE}, "missing required field 'multinode'"),
    ("27-multinode-string", "sn", {"multinode": "false"}, "'multinode' must be true or false, got string 'false'"),
    ("28-sn-disagg", "sn", {"disagg": True}, "'disagg' must be false, got boolean true"),
    ("28-sn-disagg-false", "sn", {"disagg": False}, None),
    ("29-sn-kv-p2p", "sn", {"kv-p2p-transfer": "nixl"}, "unknown field 'kv-p2p-transfer'"),
    ("30-mn-agg-with-kv-p2p", "mn", {"disagg": False}, None),
    ("31-router-twice", "mn", {"router": {"name": "r", "version": "1"}, W + ".router": {"name": "r", "version": "1"}},
     "router is declared both at the top level of the entry and in this search-space entry"),
    ("31-kvp2p-twice", "mn", {W + ".kv-p2p-transfer": "nixl"},
     "kv-p2p-transfer is declared both at the top level of the entry and in this search-space entry"),
    ("32-router-top-kvp2p-entry", "mn", {"router": {"name": "r", "version": "1"}, "kv-p2p-transfer": DELETE,
                                        W + ".kv-p2p-transfer": "mooncake"}, None),
    ("33-disagg-no-kvp2p", "mn", {"kv-p2p-transfer": DELETE}, "disagg: true requires kv-p2p-transfer"),
    ("34-sn-agentic-kvp2p", "ag", {A + ".kv-p2p-transfer": "nixl"}, "unknown field 'kv-p2p-transfer'"),
    ("35-agentic-plain-runner", "ag", {"runner": "h200"}, "agentic configs must run on a 'cluster:<name>' runner, got 'h200'"),
    ("35-agentic-mn-cluster-runner", "agm", {}, None),
    ("36-missing-model", "sn", {"model": DELETE}, "missing required field 'model'"),
    ("37-no-scenario", "sn", {"scenarios": {"fixed-seq-len": []}}, "at least one scenario must be specified"),
    ("gap-mn-agentic-with-tp", "agm", {A: {"tp": 8, "kv-offloading": "none", "conc-list": [4]}}, "unknown field 'tp'"),
    ("yaml-boolean-string", "sn", {"precision": False}, "'precision' must be a string, got boolean false"),
    ("yaml-number-version", "sn", {"router": {"name": "r", "version": 0.3}}, "'version' must be a string, got number 0.3"),
    ("strict-isl-0", "sn", {"scenarios.fixed-seq-len.0.isl": 0}, "'isl' must be at least 1, got 0"),
]


@pytest.mark.parametrize("base,changes,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_master_case(base, changes, expected):
    key, data = BASES[base]
    errors = [f for f in findings_for({"m.yaml": {key: mutate(data, changes)}}) if f.severity == "error"]
    if expected is None:
        assert errors == [], [e.as_text() for e in errors]
    else:
        assert any(expected in e.message for e in errors), [e.as_text() for e in errors]
        assert all(e.line is not None for e in errors), "every schema/rule error is located"


def test_conc_start_beside_list_is_a_warning_not_an_error():
    key, data = BASES["sn"]
    found = findings_for({"m.yaml": {key: mutate(data, {W: {"tp": 8, "conc-start": 4, "conc-list": [4]}})}})
    assert [(f.severity, f.message.split(": ", 1)[1]) for f in found] == [
        ("warning", "'conc-start' is ignored: without both range ends, 'conc-list' is used")]


@pytest.mark.parametrize("changes,expected", [
    ({W: {"tp": 8, "conc-list": [4, 8, 4]}}, "concurrency 4 with this exact topology is already listed earlier in this list"),
    ({"scenarios.fixed-seq-len.0.search-space.1": {"tp": 8, "conc-list": [64]}},
     "concurrency 64 with this exact topology is already listed in another search-space entry, so the same point "
     "would be benchmarked twice (see line 14)"),
], ids=["within-a-list", "across-entries"])
def test_duplicate_points_warn(changes, expected):
    key, data = BASES["sn"]
    found = findings_for({"m.yaml": {key: mutate(data, {"scenarios.fixed-seq-len.0.search-space": [
        {"tp": 8, "conc-start": 4, "conc-end": 64}, {"tp": 4, "conc-list": [4]}]}) | {}}})
    assert found == []
    found = findings_for({"m.yaml": {key: mutate(mutate(data, {"scenarios.fixed-seq-len.0.search-space": [
        {"tp": 8, "conc-start": 4, "conc-end": 64}, {"tp": 4, "conc-list": [4]}]}), changes)}})
    assert [(f.severity, expected in f.message) for f in found] == [("warning", True)], [f.as_text() for f in found]


@pytest.mark.parametrize("files,expected", [
    ({"a.yaml": {"k": BASES["sn"][1]}, "b.yaml": {"k": BASES["sn"][1]}}, "config key 'k' is defined twice (first at a.yaml:1)"),
    ({"a.yaml": {"a*b": BASES["sn"][1]}}, "config key 'a*b' contains '*'"),
    ({"a.yaml": [BASES["sn"][1]]}, "a master config must be a mapping of config key -> entry, got a list"),
    ({"a.yaml": {"k": "not an entry"}}, "must be a mapping, got string"),
], ids=["38-duplicate-across-files", "38-wildcard", "38-root-list", "entry-not-mapping"])
def test_file_level_case(files, expected):
    errors = [f for f in findings_for(files) if f.severity == "error"]
    assert any(expected in e.message for e in errors), [e.as_text() for e in errors]


def _runners(**labels_or_hw):
    return mutate(RUNNERS, labels_or_hw)


@pytest.mark.parametrize("runners,expected", [
    (_runners(**{"labels.mi300x": "h100-cr_0"}), "'mi300x' must be a list, got string 'h100-cr_0'"),
    (_runners(**{"labels.mi300x": ["h100-cr_0", 123]}), "'mi300x' must be a string, got integer 123"),
    (_runners(**{"labels.mi300x": []}), "'mi300x' must not be empty"),
    ({"mi300x": ["a_0"]}, "missing required field 'labels'"),
    (_runners(**{"hardware.cluster:b300-nv.available-cpu-dram-mib": 0}), "'available-cpu-dram-mib' must be at least 1, got 0"),
    (_runners(**{"hardware.cluster:b300-nv.gpus-per-node": 0}), "'gpus-per-node' must be at least 1, got 0"),
    (_runners(**{"hardware.cluster:b300-nv.cpus": 1}), "unknown field 'cpus'"),
], ids=["39-not-list", "39-not-strings", "39-empty", "40-flat", "40-dram-0", "40-gpus-0", "40-unknown"])
def test_runners_case(runners, expected):
    key, data = BASES["sn"]
    errors = [f for f in findings_for({"m.yaml": {key: data}}, runners) if f.severity == "error"]
    assert any(expected in e.message for e in errors), [e.as_text() for e in errors]
    assert all(e.file == "runners.yaml" for e in errors)


def test_all_bases_are_valid_and_clean():
    found = findings_for({"m.yaml": {key: data for key, data in BASES.values()}})
    assert found == [], [f.as_text() for f in found]


def test_ladder_refuses_a_start_below_one():
    # Found by the fuzzer: 0 * 2 == 0, so a ladder from 0 never ended (and ate all memory).
    from ci_tools.config.points import conc_ladder

    with pytest.raises(ValueError, match="start must be at least 1"):
        conc_ladder(0, 5)


@pytest.mark.parametrize("ss", [{"tp": 8, "conc-start": 0, "conc-end": 8}, {"tp": 8, "conc-start": -3, "conc-end": 8},
                                {"tp": 8, "conc-start": 0, "conc-end": 8, "conc-list": [1, 2]}])
def test_bad_ranges_are_reported_not_expanded(ss):
    key, data = BASES["sn"]
    found = findings_for({"m.yaml": {key: mutate(data, {W: ss})}})
    assert found and all(f.severity == "error" for f in found)
