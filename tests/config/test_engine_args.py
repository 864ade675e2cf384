"""Recipe engine arguments (issue 25, finding 8): wrong kinds and ranges config validate accepted."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ci_tools.config import engineargs
from ci_tools.engines.argkinds import KINDS

from clirun import run

ROOT = Path(__file__).resolve().parents[2]
RECIPE = "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"
NAN, INF = float("nan"), float("inf")

# (engine, argument, value, what the message says): each was accepted and reached the runner
WRONG = [
    ("sglang", "chunked-prefill-size", NAN, "must be a finite number, got nan"),
    ("sglang", "chunked-prefill-size", INF, "must be a finite number, got inf"),
    ("sglang", "chunked-prefill-size", 16384.0, "must be an integer, got 16384.0"),
    ("sglang", "chunked-prefill-size", "16k", "must be an integer, got '16k'"),
    ("sglang", "chunked-prefill-size", [4096, 8192], "must be an integer, got a list"),
    ("sglang", "max-running-requests", 0, "must be at least 1, got 0"),
    ("sglang", "max-running-requests", -4, "must be at least 1, got -4"),
    ("sglang", "speculative-num-steps", 0, "must be at least 1, got 0"),
    ("sglang", "cuda-graph-max-bs-decode", True, "must be an integer, got true (a bare flag)"),
    ("sglang", "mem-fraction-static", 1.5, "greater than 0 and at most 1, got 1.5"),
    ("sglang", "mem-fraction-static", -INF, "must be a finite number, got -inf"),
    ("vllm", "max-num-seqs", 0, "must be at least 1, got 0"),
    ("vllm", "gpu-memory-utilization", 90, "greater than 0 and at most 1, got 90"),
    ("trtllm", "max_batch_size", NAN, "must be a finite number, got nan"),
]

RIGHT = [
    ("sglang", "chunked-prefill-size", 16384),
    ("sglang", "chunked-prefill-size", -1),          # SGLang's "no chunking"
    ("sglang", "chunked-prefill-size", "16384"),     # rendered the same, parsed the same
    ("sglang", "max-running-requests", None),        # drops a base argument
    ("sglang", "max-running-requests", False),
    ("sglang", "mem-fraction-static", 0.85),
    ("sglang", "mem-fraction-static", 1),
    ("sglang", "trust-remote-code", True),           # a flag
    ("sglang", "speculative-algorithm", "NEXTN"),    # no number kind: the engine's to judge
    ("vllm", "max-num-seqs", 256),
    ("trtllm", "max_batch_size", 64),
]


@pytest.mark.parametrize("engine,name,value,message", WRONG)
def test_a_wrong_engine_argument_is_refused(engine, name, value, message):
    found = engineargs.problem(engine, name, value)
    assert found is not None and message in found[0] and found[1], found


@pytest.mark.parametrize("engine,name,value", RIGHT)
def test_a_right_engine_argument_passes(engine, name, value):
    assert engineargs.problem(engine, name, value) is None


def test_the_range_rules_name_number_arguments_of_the_engines_parser():
    """A misspelt name in POSITIVE or FRACTIONS would check nothing: each is an integer (or number)
    argument of the engine's parser (argkinds.json is generated from the wheels, tests/engines)."""
    for engine, names in engineargs.POSITIVE.items():
        assert {n: KINDS[engine].get(n) for n in names} == {n: "int" for n in names}
    for engine, names in engineargs.FRACTIONS.items():
        assert {n: KINDS[engine].get(n) for n in names} == {n: "float" for n in names}


@pytest.mark.parametrize("section", ["serve", "point"])
def test_config_validate_locates_each_wrong_argument(tmp_path: Path, section):
    root = tmp_path / "repo"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "tests", "docs"))
    path = root / RECIPE
    text = path.read_text()
    if section == "serve":
        text = text.replace("    chunked-prefill-size: 16384\n",
                            "    chunked-prefill-size: 16384.0\n    max-running-requests: 0\n", 1)
    else:
        text = text.replace("    args:\n", "    args:\n      mem-fraction-static: 1.5\n", 1)
    path.write_text(text)
    res = run(["config", "validate"], cwd=root)
    assert res.code == 1, res.out + res.err
    lines = text.splitlines()
    for name in (("chunked-prefill-size", "max-running-requests") if section == "serve" else ("mem-fraction-static",)):
        line = next(i for i, t in enumerate(lines, 1) if t.strip().startswith(name + ":") and not t.strip().endswith("16384"))
        assert f"{RECIPE}:{line}:" in res.out and f"engine argument '{name}'" in res.out, res.out
    assert "hint: " in res.out


# YAML's .nan and .inf passed every schema range (a NaN compares false with any bound): the schemas'
# numbers are finite now, so the file's own rule (or the engine-argument one) never sees them
NON_FINITE = [
    ("inferencex-e2e/configs/nvidia-master.yaml", "    - dram-utilization: 0.80\n", "    - dram-utilization: .nan\n",
     "'dram-utilization' must be a number (or left out), got nan (not a finite number)"),
    (RECIPE, "synthetic-acceptance: 3.51\n", "synthetic-acceptance: .inf\n",
     "'synthetic-acceptance' must be a number (or left out), got inf (not a finite number)"),
    (RECIPE, "    chunked-prefill-size: 16384\n", "    chunked-prefill-size: .nan\n",
     "serve.args: 'chunked-prefill-size' has an unexpected form: got nan (not a finite number)"),
]


@pytest.mark.parametrize("rel,old,new,message", NON_FINITE)
def test_a_non_finite_number_is_refused_where_it_is_written(tmp_path: Path, rel, old, new, message):
    root = tmp_path / "repo"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "tests", "docs"))
    text = (root / rel).read_text()
    assert old in text
    (root / rel).write_text(text.replace(old, new, 1))
    line = text[:text.index(old)].count("\n") + 1
    res = run(["config", "validate"], cwd=root)
    assert res.code == 1
    assert f"{rel}:{line}:" in res.out and message in res.out, res.out
    assert "hint: write a finite number" in res.out


def test_a_nodes_dram_has_a_sane_bound(tmp_path: Path):
    """`available-cpu-dram-mib: 10^30` passed (the schema had only a minimum); a unit slip now stops."""
    runners = tmp_path / "runners.yaml"
    runners.write_text((ROOT / "inferencex-e2e/configs/runners.yaml").read_text()
                       .replace("available-cpu-dram-mib: 2964436", "available-cpu-dram-mib: " + "1" + "0" * 30, 1))
    res = run(["config", "validate", "--master", str(ROOT / "inferencex-e2e/configs/nvidia-master.yaml"),
               "--runners", str(runners)])
    assert res.code == 1
    assert "'available-cpu-dram-mib' must be at most 67108864" in res.out and "check the unit" in res.out


# Issue 35: recipes accepted unknown engine flags; the server then failed on the GPU host after queueing.
# Each name below is refused at the line it is written, with the parser's own spelling as the fix.
UNKNOWN = [
    (RECIPE, "    chunked-prefill-size: 16384\n", "    chunked-prefil-size: 16384\n",
     "sglang has no option --chunked-prefil-size (checked at 0.5.21, 0.5.22)", "did you mean `chunked-prefill-size`"),
    (RECIPE, "    chunked-prefill-size: 16384\n", "    chunked-prefill-size: 16384\n    attn-dp-size: 2\n",
     "sglang 0.5.21 has no option --attn-dp-size (only 0.5.22 has it)", "declare only releases that have it"),
    ("recipes/b300-dsv41flash-fp4-vllm/fixed-seq.yaml", "    gpu-memory-utilization: 0.9\n",
     "    gpu-memory-utilisation: 0.9\n", "vllm has no option --gpu-memory-utilisation (checked at 0.33.0)",
     "did you mean `gpu-memory-utilization`"),
    ("recipes/gb300-dsv41flash-fp4-dynamo-sglang/disagg-8k1k.yaml", "    router-mode: round-robin\n",
     "    router-mod: round-robin\n", "--router-mod is an abbreviation of dynamo.frontend's --router-mode",
     "write `router-mode`"),
    ("recipes/b300-dsv41flash-fp4-trt/mtp.yaml", "      num_nextn_predict_layers: 3\n",
     "      num_nextn_predict_layer: 3\n",
     "options: trtllm 1.3.0rc3 MTP's options file has no key `num_nextn_predict_layer` in speculative_config",
     "did you mean `num_nextn_predict_layers`"),
    ("recipes/b300-dsv41flash-fp4-trt/mtp.yaml", "      speculative_config: {num_nextn_predict_layers: 1}",
     "      speculative_config: {num_nextn_predict_layers: 1}\n      enable_attention_dp: true",
     "options: `enable_attention_dp` comes from the point's dp-attn", "the runner writes it"),
]


@pytest.mark.parametrize("rel,old,new,message,hint", UNKNOWN,
                         ids=["typo", "later-release", "vllm", "abbreviation", "trtllm-option", "runner-option"])
def test_an_argument_the_parser_does_not_know_is_refused_where_it_is_written(tmp_path: Path, rel, old, new, message,
                                                                             hint):
    root = tmp_path / "repo"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", "tests", "docs"))
    text = (root / rel).read_text()
    assert old in text
    (root / rel).write_text(text.replace(old, new, 1))
    # the finding points at the last line the change wrote (the one that names the refused argument)
    line = text[:text.index(old)].count("\n") + 1 + new.rstrip("\n").count("\n")
    res = run(["config", "validate"], cwd=root)
    assert res.code == (0 if "abbreviation" in message else 1), res.out
    assert f"{rel}:{line}:" in res.out and message in res.out and hint in res.out, res.out
