"""Every single-node row the example repository plans renders engine and router commands that parse with
that tool's own parser: SGLang (each declared release), vLLM 0.33.0 (`vllm serve`, from the wheel),
TensorRT-LLM (`trtllm-serve serve` from its source, its options file merged and validated by its own
llm_args model), ATOM (its openai_server's parser from its source), sglang-router/smg/vllm-router. The
rows come from the matrix expansion `plan` uses, so a new config or point is checked without naming it
here; each row also dry-runs.

Multi-node rows (Dynamo and sglang-router PD workers) are checked by test_disagg_parsers.py.
"""

from __future__ import annotations

import json
import shlex

import pytest
from click.testing import CliRunner

from ci_tools import names
from ci_tools.cli import cli
from ci_tools.config.load import default_master_paths, load_recipe, read_masters, read_runners
from ci_tools.config.recipe import resolve_point
from ci_tools.runner.inputs import eval_policy
from ci_tools.runner.plan import Settings, build_plan
from ci_tools.sweep.matrix import Filters, expand
from ci_tools.sweep.row import parse_row
from tests.engines.harness import REPO, checked_versions, parse_many


def example_rows() -> list[tuple[str, dict]]:
    entries = read_masters(default_master_paths(REPO), REPO).entries
    hardware = (read_runners(REPO / names.RUNNERS, REPO).data or {}).get("hardware") or {}
    rows, seen = [], set()
    for r in expand(entries, hardware, Filters()):
        if r.row.is_multinode:
            continue
        d = r.row.replace(config_key=r.key).as_dict()
        name = (f"{r.key}/tp{d['tp']}-ep{d['ep']}{'-dpa' if d.get('dp-attn') else ''}-c{d['conc']}"
                f"{'-eval' if d.get('run-eval') else ''}-{d.get('isl', 'agentic')}x{d.get('osl', '')}")
        if name not in seen:
            seen.add(name)
            rows.append((name, d))
    return rows


ROWS = example_rows()


def commands(row: dict) -> tuple[str, tuple[str, ...], list[tuple[str, str, list[str], dict]]]:
    """(engine, versions to check, [(parser, version, args, files)]) of one row's server and router commands:
    at the declared releases ci-tools has a parser of, else at every pinned one."""
    rel = read_masters(default_master_paths(REPO), REPO).entries[row["config-key"]]["recipe"]
    recipe = load_recipe(REPO / rel, rel)
    point = resolve_point(recipe, int(row["tp"]), int(row.get("ep", 1)), bool(row.get("dp-attn")), int(row["conc"]))
    plan = build_plan(row, point, Settings(root=str(REPO), evals=eval_policy(parse_row(row, "row"), REPO)), "out")
    server = plan.proc("server").command
    versions = checked_versions(server.parser, recipe.engine_versions)
    out = [(server.parser, v, list(server.args), dict(server.files)) for v in versions]
    router = plan.proc("router")
    if router is not None:
        out.append((router.command.parser, point.router["version"], list(router.command.args), {}))
    return recipe.engine, versions, out


def test_the_examples_cover_every_engine():
    engines = {commands(row)[0] for _, row in ROWS}
    assert engines == {"sglang", "vllm", "trtllm", "atom"}, engines
    assert len(ROWS) >= 20


@pytest.mark.parametrize("name,row", ROWS, ids=[n for n, _ in ROWS])
def test_every_command_of_every_example_row_parses(name, row):
    _, _, cmds = commands(row)
    bad = []
    for parser, version, args, files in cmds:
        result = parse_many(parser, version, [args], files)[0]
        if not result.ok:
            bad.append(f"{name}: {parser} {version} rejects `{shlex.join(args)}`: {result.error}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name,row", ROWS, ids=[n for n, _ in ROWS])
def test_every_example_row_dry_runs(tmp_path, name, row):
    path = tmp_path / "row.json"
    path.write_text(json.dumps(row))
    res = CliRunner().invoke(cli, ["runner", "run", "--row", str(path), "--dry-run", "--root", str(REPO),
                                   "--out", "out", "--runner-name", ""],
                             env={"CUDA_VISIBLE_DEVICES": None, "CI_TOOLS_GPUS": None})
    assert res.exit_code == 0, res.output


# The check can fail: one broken flag per engine, each rejected by that engine's own parser.
BROKEN = [
    ("vllm", "0.33.0", ["/models/m", "--tensor-parallel-size", "8", "--max-num-seq", "4x"], "--max-num-seq"),
    ("vllm", "0.33.0", ["/models/m", "--tensor-paralel-size", "8"], "unrecognized arguments"),
    ("vllm", "0.33.0", ["/models/m", "--enable-auto-tool-choice"], "requires --tool-call-parser"),
    ("trtllm", "1.3.0rc3", ["/models/m", "--trust-remote-code"], "No such option '--trust-remote-code'"),
    ("trtllm", "1.3.0rc3", ["/models/m", "--tp_size", "eight"], "is not a valid integer"),
    ("trtllm", "1.3.0rc3", ["/models/m", "--backend", "vllm"], "is not one of"),
    ("trtllm", "1.3.0rc3", ["/models/m", "--log_level", "loud"], "is not one of"),      # a choice its code computes
    ("atom", "0.1.3", ["--model", "/models/m", "--kv-cache-dtype", "fp8"], "unrecognized arguments"),
    ("atom", "0.1.6rc1.dev323", ["--model", "/models/m", "--method", "medusa"], "invalid choice: 'medusa'"),
    ("vllm-router", "0.1.14", ["--worker-urls", "http://w:1", "--policy", "sticky"], "invalid choice"),
    ("sglang", "0.5.22", ["--model-path", "/models/m", "--tp-size", "8", "--cuda-graph-max-bs", "4"], "ambiguous option"),
]


@pytest.mark.parametrize("parser,version,args,error", BROKEN, ids=[f"{p}:{a[-1]}" for p, _, a, _ in BROKEN])
def test_a_broken_flag_is_rejected_by_its_engine(parser, version, args, error):
    result = parse_many(parser, version, [args])[0]
    assert not result.ok and error in result.error, result


# Topologies of InferenceX's single-node rows that the example rows lack, so that every branch of each
# plug-in's topology rendering meets its parser: vLLM's DEP with ep > tp (InferenceX's `tp: 1, ep: 8`
# is data-parallel 8 over tp 1) is in no example row, and its flags went unparsed.
FLEET_TOPOLOGIES = [(8, 1, False), (8, 8, False), (8, 8, True), (1, 8, True), (2, 8, True), (4, 4, True)]


@pytest.mark.parametrize("engine,version", [("sglang", "0.5.22"), ("vllm", "0.33.0"), ("trtllm", "1.3.0rc3"),
                                            ("atom", "0.1.3"), ("atom", "0.1.6rc1.dev323")])
def test_every_topology_the_fleet_runs_parses(engine, version):
    from ci_tools.engines import ServeSpec
    from ci_tools.engines import engine as plugin_of

    plugin, named = plugin_of(engine), {}
    for tp, ep, dpa in FLEET_TOPOLOGIES:
        spec = ServeSpec("/models/m", "m", "0.0.0.0", 8000, tp=tp, ep=ep, dp_attn=dpa, files_dir="/job",
                         versions=(version,))
        if not plugin.topology_problems(spec):      # a refused topology is refused before any command
            cmd = plugin.server(spec)
            named[f"tp{tp} ep{ep}{' dp-attn' if dpa else ''}"] = (list(cmd.args), dict(cmd.files))
    assert "tp1 ep8 dp-attn" in named or engine in ("sglang", "atom"), named
    results = [parse_many(engine, version, [a], f)[0] for a, f in named.values()]
    bad = [f"{n}: rejects `{shlex.join(a)}`: {r.error}" for (n, (a, _)), r in zip(named.items(), results) if not r.ok]
    assert not bad, "\n".join(bad)


def test_a_trtllm_recipe_may_write_options_with_hyphens():
    """`trust-remote-code: true` in a TensorRT-LLM recipe used to render `--trust-remote-code`, which
    trtllm-serve rejects; it renders trtllm-serve's own `--trust_remote_code` now."""
    from ci_tools.engines import ServeSpec, trtllm

    spec = ServeSpec("/models/m", "m", "0.0.0.0", 8000, tp=8, ep=1, dp_attn=False,
                     args={"trust-remote-code": True, "kv-cache-free-gpu-memory-fraction": 0.85, "max_batch_size": 4})
    args = list(trtllm.server(spec).args)
    assert "--trust_remote_code" in args and "--kv_cache_free_gpu_memory_fraction" in args
    assert parse_many("trtllm", "1.3.0rc3", [args])[0].ok


def test_profile_dry_run_of_the_seed_dep2_c64_row_parses_with_sglang(tmp_path):
    """`runner profile --dry-run` of the seed's DEP2 c64 row: the server command parses with each declared
    SGLang release's parser and runs with the profiler switch; the profile calls go to the engine."""
    from ci_tools.runner.run_flow import prepare_profile
    from ci_tools.runner.run_plan import RunRequest

    name, row = next((n, r) for n, r in ROWS if r.get("framework") == "sglang" and r.get("dp-attn")
                     and int(r["tp"]) == 2 and int(r["conc"]) == 64 and not r.get("run-eval"))
    (tmp_path / "row.json").write_text(json.dumps(row))
    job = prepare_profile(RunRequest(row_path=tmp_path / "row.json", root=REPO, dry_run=True, out=tmp_path / "o"),
                          requests=None)
    text = job.commands
    assert f"SGLANG_TORCH_PROFILER_DIR={tmp_path / 'o' / 'profile_traces'}" in text
    assert "POST http://127.0.0.1:30000/start_profile" in text and "/stop_profile" in text
    assert "--request-count 128" in text and "--benchmark-duration" not in text
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("# server (log")) + 1
    block = []
    while True:           # the server's shell command, continued over lines ending in a backslash
        block.append(lines[at].rstrip("\\"))
        if not lines[at].endswith("\\"):
            break
        at += 1
    tokens = shlex.split(" ".join(block))
    args = tokens[tokens.index("sglang.launch_server") + 1:]
    assert "SGLANG_TORCH_PROFILER_DIR=" + str(tmp_path / "o" / "profile_traces") in tokens
    _, versions, _ = commands(row)
    for v in versions:
        result = parse_many("sglang", v, [args])[0]
        assert result.ok, f"{name}: sglang {v} rejects `{shlex.join(args)}`: {result.error}"


def test_profile_server_command_of_a_vllm_row_parses_with_vllm():
    """`runner profile` of a vLLM row: `--profiler-config` (vLLM 0.33 reads no VLLM_TORCH_PROFILER_DIR)
    parses with vLLM's own `vllm serve` parser; a misspelt key in the same JSON does not."""
    from ci_tools.runner.profile import profile_plan

    name, row = next((n, r) for n, r in ROWS if r.get("framework") == "vllm" and not r.get("run-eval"))
    rel = read_masters(default_master_paths(REPO), REPO).entries[row["config-key"]]["recipe"]
    recipe = load_recipe(REPO / rel, rel)
    point = resolve_point(recipe, int(row["tp"]), int(row.get("ep", 1)), bool(row.get("dp-attn")), int(row["conc"]))
    plan, _ = profile_plan(build_plan(row, point, Settings(root=str(REPO)), "out"), "/out/profile_traces", None)
    args = list(plan.proc("server").command.args)
    at = args.index("--profiler-config") + 1
    assert json.loads(args[at]) == {"profiler": "torch", "torch_profiler_dir": "/out/profile_traces"}
    misspelt = args[:at] + [json.dumps({"profiler": "torch", "torch_profiler_dri": "/out"})] + args[at + 1:]
    ok, bad = parse_many("vllm", "0.33.0", [args, misspelt])
    assert ok.ok, f"{name}: vllm 0.33.0 rejects `{shlex.join(args)}`: {ok.error}"
    assert not bad.ok and "unexpected_keyword_argument" in bad.error, bad   # pydantic: ProfilerConfig


def test_every_acceptance_cell_parses_with_its_engines_parser():
    """The SPEED-Bench collection serves each cell with its own step count (runner/acceptance.py's
    spec_args): every cell of the example matrix, at every declared release, parses with SGLang's parser."""
    from dataclasses import replace

    from ci_tools.config.acceptance import collection_matrix, references
    from ci_tools.runner.acceptance import spec_args
    from ci_tools.yaml.load import load_yaml_file

    refs = references(load_yaml_file(REPO / names.ACCEPTANCE_REFERENCES, names.ACCEPTANCE_REFERENCES).data)
    recipes = [(p.relative_to(REPO).as_posix(), load_yaml_file(p, p.relative_to(REPO).as_posix()))
               for p in sorted((REPO / names.RECIPES_DIR).rglob("*.yaml"))]
    cells = collection_matrix(recipes, refs, masters=read_masters(default_master_paths(REPO), REPO).entries)
    bad, checked = [], 0
    for cell in cells:
        row = cell["serve"]
        recipe = load_recipe(REPO / row["recipe"], row["recipe"])
        point = resolve_point(recipe, int(row["tp"]), int(row["ep"]), bool(row["dp-attn"]), int(row["conc"]))
        point = replace(point, args=spec_args(point.engine, point.args, int(cell["mtp"])), synthetic_acceptance=None)
        server = build_plan(row, point, Settings(root=str(REPO)), "out").proc("server").command
        for version in recipe.engine_versions:
            result = parse_many(server.parser, version, [list(server.args)])[0]
            checked += 1
            if not result.ok:
                bad.append(f"{cell['id']}: {server.parser} {version}: {result.error}")
    assert checked == 16 and not bad, "\n".join(bad)     # 8 cells x the recipe's two SGLang releases
