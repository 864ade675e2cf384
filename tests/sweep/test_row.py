"""The typed matrix row: parsed once, read by attribute, never changed in place, written back with
InferenceX's key order byte for byte."""

from __future__ import annotations

import hashlib
import json

import pytest

from ci_tools.errors import InputError
from ci_tools.sweep.matrix import Filters, expand, select_evals
from ci_tools.sweep.row import MultiNodeRow, SingleNodeRow, as_row, make_row, parse_row

SN = {"image": "img", "model": "m", "model-prefix": "p", "precision": "fp8", "framework": "sglang", "runner": "h200",
      "isl": 8192, "osl": 1024, "tp": 4, "pp": 1, "dcp-size": 1, "pcp-size": 2, "conc": 64, "max-model-len": 9472,
      "ep": 4, "dp-attn": True, "spec-decoding": "mtp", "exp-name": "p_8k1k", "disagg": False, "run-eval": False}
MN = {"image": "img", "model": "m", "model-prefix": "p", "precision": "fp4", "framework": "dynamo-trt",
      "runner": "gb200", "spec-decoding": "none",
      "prefill": {"hardware": "gb200", "num-worker": 2, "tp": 4, "ep": 4, "dp-attn": True, "pp": 1, "dcp-size": 1,
                  "pcp-size": 1},
      "decode": {"num-worker": 1, "tp": 8, "ep": 8, "dp-attn": False, "pp": 2, "dcp-size": 1, "pcp-size": 1},
      "conc": [16, 32], "kv-offloading": "none", "total-cpu-dram-gb": 0, "duration": 3600,
      "exp-name": "p_p2x4ep4dpa_d1x8ep8_conc16", "disagg": True, "scenario-type": "agentic-coding",
      "router": {"name": "dynamo-router", "version": "1.0"}}


def test_attributes_of_a_single_node_row():
    r = parse_row(SN, "row.json")
    assert isinstance(r, SingleNodeRow) and not r.is_multinode and not r.is_agentic
    assert (r.tp, r.ep, r.dp_attn, r.pp, r.pcp_size, r.conc, r.concs, r.gpus) == (4, 4, True, 1, 2, 64, (64,), 8)
    assert (r.isl, r.osl, r.scenario_type, r.spec_decoding, r.run_eval, r.is_eval) == (8192, 1024, "fixed-seq-len",
                                                                                     "mtp", False, False)


def test_attributes_of_a_multi_node_row():
    r = parse_row(MN, "row.json")
    assert isinstance(r, MultiNodeRow) and r.is_multinode and r.is_agentic
    assert (r.prefill.num_worker, r.prefill.tp, r.prefill.dp_attn, r.prefill.hardware) == (2, 4, True, "gb200")
    assert (r.decode.pp, r.decode.hardware, r.conc, r.gpus) == (2, None, (16, 32), 2 * 4 + 8 * 2)
    assert r.router == {"name": "dynamo-router", "version": "1.0"} and r.isl is None and r.eval_conc is None


def test_replace_keeps_every_key_in_place_and_appends_new_ones():
    r = make_row(dict(SN))
    new = r.replace(run_eval=True, eval_only=True, conc=128)
    assert list(new) == list(SN) + ["eval-only"]
    assert (new.conc, new.run_eval, new.eval_only) == (128, True, True)
    assert r.as_dict() == SN                                             # the row it came from is unchanged
    assert list(new.without("eval_only", "run_eval")) == [k for k in SN if k != "run-eval"]
    assert type(new) is SingleNodeRow and type(make_row(dict(MN)).replace(conc=[8])) is MultiNodeRow


def test_a_row_cannot_be_changed_in_place():
    r = make_row(dict(SN))
    with pytest.raises(TypeError):
        r["tp"] = 8                                                      # type: ignore[index]
    with pytest.raises(AttributeError):
        r.tp = 8                                                         # type: ignore[misc]


def test_flags_written_as_text_are_read_as_flags():
    r = parse_row({**SN, "run-eval": "true", "dp-attn": "false", "eval-only": "yes"}, "row.json")
    assert (r["run-eval"], r["dp-attn"], r["eval-only"]) == (True, False, True)


def test_keys_it_does_not_know_are_kept_in_place():
    r = parse_row({"id": 7, **SN, "recipe": "recipes/x.yaml", "note": {"a": 1}}, "row.json")
    assert list(r.as_dict()) == ["id", *SN, "recipe", "note"] and r.recipe == "recipes/x.yaml"


@pytest.mark.parametrize("change, message", [
    ({"tp": "4"}, "`tp` must be an integer, not a string ('4')"),
    ({"tp": True}, "`tp` must be an integer, not a flag (True)"),
    ({"conc": [4, 8]}, "`conc` must be one integer per job (multi-node rows carry lists)"),
    ({"run-eval": "maybe"}, "`run-eval` must be true or false, not a string ('maybe')"),
    ({"duration": "1h"}, "`duration` must be a number of seconds"),
    ({"router": "dynamo"}, "`router` must be an object, not a string"),
    ({"image": 3}, "`image` must be a string, not an integer (3)"),
    ({"prefill": {"num-worker": "2", "tp": 4}, "decode": {"tp": 4}, "conc": [4]}, "`prefill.num-worker` must be an integer"),
    ({"prefill": {"tp": 4}, "decode": 8, "conc": [4]}, "`decode` must be an object (the worker group), not an integer"),
    ({"prefill": {"tp": 4}, "decode": {"tp": 4}, "conc": 4}, "`conc` of a multi-node row must be a list of integers"),
])
def test_a_row_of_the_wrong_kind_is_refused_naming_the_key_and_the_file(change, message):
    with pytest.raises(InputError) as exc:
        parse_row({**SN, **change}, "out/row.json")
    assert str(exc.value).startswith("out/row.json: not a matrix row ci-tools can read: ") and message in str(exc.value)


def test_every_problem_is_named_at_once():
    with pytest.raises(InputError) as exc:
        parse_row({**SN, "tp": "4", "ep": None, "isl": 1.5, "disagg": 2}, "row.json")
    assert all(part in str(exc.value) for part in ("`tp`", "`isl`", "`disagg`")) and "`ep`" not in str(exc.value)


def test_not_an_object():
    with pytest.raises(InputError, match="row.json: expected one matrix row \\(a JSON object\\), not a list"):
        parse_row([SN], "row.json")


def test_as_row_takes_a_row_as_it_is():
    r = make_row(dict(SN))
    assert as_row(r) is r and as_row(dict(SN)) == r


def test_every_corpus_row_reads_back_byte_for_byte(corpus_rows):
    """Every row of InferenceX's full sweep (evals marked, and with --all-evals) parses and writes back the
    same bytes: nothing is lost or reordered by the typed row."""
    for rows in corpus_rows:
        text = json.dumps([r.row.as_dict() for r in rows])
        assert json.dumps([parse_row(r.row.as_dict(), "x").as_dict() for r in rows]) == text


def test_full_sweep_bytes_are_pinned(corpus_rows):
    """The full sweep of the corpus, byte for byte, as ci-tools 47e9b4e printed it (whose sizes are the
    ones measured on InferenceX's generator, test_matrix.py): a change to the row type that moves one key
    or one value changes a digest."""
    digests = [hashlib.sha256(json.dumps([r.row.as_dict() for r in rows]).encode()).hexdigest() for rows in corpus_rows]
    assert digests == ["67edb9db8de3dd2a40c093795907a21becca34173d21e42df5fa5e602187d630",    # evals marked
                       "97e2f78a071bb4b6fbc03d7d76d8d2cfbdee9b23c7bf7a72dd9fa923beccf7df"]    # --all-evals


@pytest.fixture(scope="module")
def corpus_rows():
    import yaml

    from tests.conftest import shared_dir

    base = shared_dir() / "corpus" / "inferencex" / "configs"
    if not base.is_dir():
        pytest.fail(f"the shared corpus is missing: {base}")
    entries = {}
    for name in ("nvidia-master.yaml", "amd-master.yaml"):
        entries.update(yaml.load((base / name).read_text(), Loader=yaml.CSafeLoader))
    hw = yaml.load((base / "runners.yaml").read_text(), Loader=yaml.CSafeLoader)["hardware"]
    return [select_evals(expand(entries, hw, Filters()), all_evals=all_evals, evals_only=False)
            for all_evals in (False, True)]
