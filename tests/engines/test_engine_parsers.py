"""Every engine and router command the example repository renders parses with that engine's own parser.

Pinned parsers (tests/engines/wheels.txt, installed by dev.py into .venv-engines):
  SGLang 0.5.21 and 0.5.22 (they bracket the seed recipe's 20261012 nightly; the recipe's
  `engine-versions` names them) and 0.5.23 (the release after, for the `--attn-dp-size` spelling);
  sglang-router 0.3.2 (what the master declares for DEP2) and smg 1.13.0 (its successor).
Every command of every example row (SGLang, vLLM, TensorRT-LLM, routers) is parsed in
test_example_rows.py; this file holds the SGLang- and router-specific checks and the goldens.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from ci_tools.config.recipe import resolve_point
from ci_tools.config.load import load_recipe
from ci_tools.engines import ServeSpec, routers, sglang
from ci_tools.runner.plan import Settings, build_plan
from tests.engines.harness import failures, parse, parse_many, pinned, venv, wheel_dir

REPO = Path(__file__).resolve().parents[2]
SEED_RECIPE = "recipes/gb300-dsv41flash-fp4-sglang/agentic.yaml"
SGLANG_BRACKET = ("0.5.21", "0.5.22")
SGLANG_AFTER = "0.5.23"
ROUTER = ("sglang-router", "0.3.2")
GOLDEN = REPO / "tests/golden/runner"


def recipe_commands(path: str) -> tuple[tuple[str, ...], dict[str, list[str]], dict[tuple[str, str], dict[str, list[str]]]]:
    """(engine versions, {point: server args}, {(router, version): {point: router args}}) for a recipe."""
    recipe = load_recipe(REPO / path, path)
    servers: dict[str, list[str]] = {}
    router_cmds: dict[tuple[str, str], dict[str, list[str]]] = {}
    for name, pt in recipe.points().items():
        point = resolve_point(recipe, pt["tp"], pt.get("ep", 1), pt.get("dp-attn", False), pt["conc"])
        row = {"tp": point.key.tp, "ep": point.key.ep, "dp-attn": point.key.dp_attn, "conc": point.key.conc,
               "image": recipe.image, "model": recipe.model, "scenario-type": "agentic-coding"}
        plan = build_plan(row, point, Settings(), "out")
        servers[name] = list(plan.proc("server").command.args)
        router = plan.proc("router")
        if router is not None:
            key = (router.command.parser, point.router["version"])
            router_cmds.setdefault(key, {})[name] = list(router.command.args)
    return recipe.engine_versions, servers, router_cmds


def test_seed_recipe_names_the_bracketing_releases():
    recipe = load_recipe(REPO / SEED_RECIPE, SEED_RECIPE)
    assert recipe.engine_versions == SGLANG_BRACKET
    assert set(SGLANG_BRACKET) | {SGLANG_AFTER} <= set(pinned()["sglang"])
    assert ROUTER[1] in pinned()[ROUTER[0]]


def test_the_seed_has_seven_points_and_two_routed_ones():
    _, servers, router_cmds = recipe_commands(SEED_RECIPE)
    assert len(servers) == 7
    assert sorted(router_cmds[ROUTER]) == ["dep2-c128", "dep2-c64"]


def test_the_parser_rejects_what_the_seed_pr_wrote():
    """The check can fail: the PR's original spellings exit 2 on every bracketing release."""
    base = ["--model-path", "/models/m"]
    for version in SGLANG_BRACKET:
        results = parse_many("sglang", version, [base + ["--cuda-graph-max-bs", "256"],
                                                 base + ["--swa-bounded-replay"],
                                                 base + ["--swa-tail-tokens", "4096"]])
        assert [r.ok for r in results] == [False, False, False]
        assert "ambiguous option: --cuda-graph-max-bs" in results[0].error
        assert "unrecognized arguments: --swa-bounded-replay" in results[1].error


def _dp_args(versions: tuple[str, ...]) -> list[str]:
    spec = ServeSpec("/models/m", "m", "0.0.0.0", 30000, tp=2, ep=2, dp_attn=True, versions=versions)
    return list(sglang.server(spec).args)


def test_dp_attention_spelling_follows_the_releases():
    old = _dp_args(SGLANG_BRACKET)          # the nightly: 0.5.21 knows only the old spelling
    assert "--enable-dp-attention" in old and "--attn-dp-size" not in old
    for version in SGLANG_BRACKET:
        assert parse("sglang", version, old).ok
    new = _dp_args(("0.5.22", SGLANG_AFTER))  # both know --attn-dp-size: no deprecated flag
    assert "--attn-dp-size" in new and "--enable-dp-attention" not in new
    for version in ("0.5.22", SGLANG_AFTER):
        result = parse("sglang", version, new)
        assert result.ok and not result.deprecated, result
    assert not parse("sglang", "0.5.21", new).ok
    assert any("--enable-dp-attention" in d for d in parse("sglang", SGLANG_AFTER, old).deprecated)


def _env_names_read(version: str) -> set[str]:
    """Every SGLANG_* name in the release's Python sources (what it can possibly read)."""
    root = wheel_dir("sglang", version) / "sglang"
    out = subprocess.run(["grep", "-rhoE", "--include=*.py", r"SGLANG_[A-Z0-9_]+", str(root)],
                         capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_every_sglang_env_var_of_the_seed_is_read_by_the_engine():
    recipe = load_recipe(REPO / SEED_RECIPE, SEED_RECIPE)
    names = set()
    for pt in recipe.points().values():
        point = resolve_point(recipe, pt["tp"], pt.get("ep", 1), pt.get("dp-attn", False), pt["conc"])
        row = {"tp": point.key.tp, "ep": point.key.ep, "dp-attn": point.key.dp_attn, "conc": point.key.conc,
               "image": recipe.image, "model": recipe.model, "scenario-type": "agentic-coding"}
        names |= {k for k in build_plan(row, point, Settings(), "out").proc("server").env if k.startswith("SGLANG_")}
    assert "SGLANG_SIMULATE_ACC_LEN" in names
    for version in SGLANG_BRACKET:
        read = _env_names_read(version)
        assert "SGLANG_NUMA_BIND_V2" in read      # the grep finds real names
        unread = sorted(names - read)
        assert not unread, f"SGLang {version} reads none of {unread}"
        assert "SGLANG_ENABLE_SPEC_V2" not in read     # why the recipe dropped it


# ---- goldens: every pinned command line must be one the real parser accepts ------------------------

def golden_commands(text: str) -> list[tuple[str, list[str]]]:
    """(launcher kind, parser-visible args) of each engine/router command in a dry-run golden."""
    out = []
    for block in re.split(r"\n(?=# )", text):
        body = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
        if not body.strip():
            continue
        words = shlex.split(body.replace("\\\n", " "))
        if "sglang.launch_server" in words:
            out.append(("sglang", words[words.index("sglang.launch_server") + 1:]))
        for rel in routers.RELEASES.values():
            if rel.module in words:
                i = words.index(rel.module)
                assert words[i - 2: i] == [rel.dist, rel.version], "router command without its version guard"
                out.append((f"{rel.name}=={rel.version}", words[i + 1:]))
    return out


def golden_files() -> list[Path]:
    """The single-node dry-run goldens (multi-node ones: `test_every_multinode_worker_command_parses`)."""
    return sorted(p for p in GOLDEN.glob("*.txt") if p.read_text(encoding="utf-8").startswith("# job "))


def test_goldens_exist():
    assert len(golden_files()) >= 14


@pytest.mark.parametrize("path", golden_files(), ids=lambda p: p.name)
def test_every_golden_command_parses(path):
    text = path.read_text(encoding="utf-8")
    recipe_file = re.search(r"^# recipe (\S+) point", text, re.M).group(1)
    versions = load_recipe(REPO / recipe_file, recipe_file).engine_versions
    commands = golden_commands(text)
    assert any(kind == "sglang" for kind, _ in commands), f"{path.name}: no engine command found"
    problems = []
    for i, (kind, args) in enumerate(commands):
        if kind == "sglang":
            for v in versions:
                problems += failures("sglang", v, {f"{path.name} command {i}": args})
        else:
            name, version = kind.split("==")
            problems += failures(name, version, {f"{path.name} command {i}": args})
    assert not problems, "\n".join(problems)


# Dynamo's SGLang worker (`python3 -m dynamo.sglang`) takes SGLang's own options plus these of its own
# (each with one value); the ai-dynamo wheel is not pinned here, so only the SGLang part is parsed.
DYNAMO_ONLY = ("--namespace", "--discovery-backend", "--request-plane", "--event-plane")


def multinode_worker_commands(text: str) -> list[list[str]]:
    out = []
    for block in re.split(r"\n(?=# )", text):
        body = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
        words = shlex.split(body.replace("\\\n", " ")) if body.strip() else []
        for module in ("dynamo.sglang", "sglang.launch_server"):
            if module in words:
                args = words[words.index(module) + 1:]
                keep, i = [], 0
                while i < len(args):
                    if args[i] in DYNAMO_ONLY and module == "dynamo.sglang":
                        i += 2
                        continue
                    keep.append(args[i])
                    i += 1
                out.append(keep)
    return out


MULTINODE = sorted((GOLDEN / "multinode").glob("*.txt"))


def test_multinode_goldens_exist():
    assert len(MULTINODE) >= 4 and all(multinode_worker_commands(p.read_text(encoding="utf-8")) for p in MULTINODE)


@pytest.mark.parametrize("path", MULTINODE, ids=lambda p: p.name)
def test_every_multinode_worker_command_parses_with_sglang(path):
    """Prefill/decode workers of the disaggregated goldens: the SGLang options parse on both releases
    bracketing the image (the same 20261012 nightly as the seed recipe)."""
    text = path.read_text(encoding="utf-8")
    recipe_file = re.search(r"^# recipe (\S+) point", text, re.M).group(1)
    seed_image = load_recipe(REPO / SEED_RECIPE, SEED_RECIPE).image
    recipe = load_recipe(REPO / recipe_file, recipe_file)
    assert recipe.image == seed_image, "another image: name its engine-versions and check them here"
    workers = {f"{path.name} worker {i}": argv for i, argv in enumerate(multinode_worker_commands(text))}
    problems = [p for v in (recipe.engine_versions or SGLANG_BRACKET) for p in failures("sglang", v, workers)]
    assert not problems, "\n".join(problems)


# ---- routers --------------------------------------------------------------------------------------

def test_the_client_sends_the_session_id_in_the_routers_key_header():
    recipe = load_recipe(REPO / SEED_RECIPE, SEED_RECIPE)
    point = resolve_point(recipe, 2, 2, True, 64)
    row = {"tp": 2, "ep": 2, "dp-attn": True, "conc": 64, "image": recipe.image, "model": recipe.model,
           "scenario-type": "agentic-coding"}
    client = build_plan(row, point, Settings(), "out").proc("client").argv
    header = client[client.index("--session-header") + 1]
    assert header == routers.release(*ROUTER).routing_key_header == "x-smg-routing-key"
    # the header is really in the router release: its compiled core names it
    so = next((wheel_dir("sglang-router", "0.3.2") / "sglang_router").glob("*.so"))
    assert b"x-smg-routing-key" in so.read_bytes()


def test_smg_release_in_the_table_parses_its_session_routing_options():
    rel = routers.release("smg", "1.13.0")
    cmd = routers.command(rel, "0.0.0.0", 8000, ["http://127.0.0.1:30000"],
                          {"policy": "cache_aware", "dp-aware": True, "routing-key-override": True})
    assert parse("smg", "1.13.0", list(cmd.args)).ok
    assert not parse("sglang-router", "0.3.2", list(cmd.args)).ok     # 0.3.2 has no routing-key override


@pytest.mark.parametrize("port,args,want", [
    (8000, {}, ["--prometheus-port", "8001"]),      # the routers' own default is 29000 for every job
    (8100, None, ["--prometheus-port", "8101"]),    # another runner's port on the same host: its own
    (8000, {"prometheus-port": 9100}, []),          # the recipe's value is kept (render_args adds it)
])
def test_the_router_metrics_port_follows_its_http_port(port, args, want):
    assert routers.metrics_options(port, args) == want


@pytest.mark.parametrize("router", [ROUTER, ("smg", "1.13.0")])
def test_both_routers_take_the_metrics_port(router):
    cmd = routers.command(routers.release(*router), "0.0.0.0", 8000, ["http://127.0.0.1:30000"], {})
    assert cmd.args[cmd.args.index("--prometheus-port") + 1] == "8001"
    assert parse(*router, list(cmd.args)).ok


def _guard(want: str) -> subprocess.CompletedProcess:
    """The router command's version guard, run for real against the installed 0.3.2 wheel. The module
    it then runs is the wheel's `sglang_router.cli` with `--version` (answered by the router's compiled
    core) instead of `launch_router`, whose start needs a worker and the HTTP stack."""
    rel = routers.release(*ROUTER)
    argv = [str(venv() / "bin" / "python"), *routers.command(rel, "h", 1, [], {}).launcher[1:]]
    argv[argv.index(rel.version)] = want
    argv[argv.index(rel.module)] = "sglang_router.cli"
    return subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(wheel_dir(*ROUTER)), "PATH": "/usr/bin:/bin"})


def test_the_router_command_runs_only_the_declared_version():
    ok = _guard("0.3.2")
    assert ok.returncode == 0 and "0.3.2" in ok.stdout, ok.stderr[-2000:]
    wrong = _guard("0.3.1")
    assert wrong.returncode == 1
    assert "the master declares router sglang-router 0.3.1, but the image has 0.3.2" in wrong.stderr


# ---- vllm-router (vllm-project/router): installed into the job, one worker per DP rank --------------

VLLM_ROUTER = ("vllm-router", "0.1.14")


def _vllm_dep8_plan():
    from dataclasses import replace

    from ci_tools.config.recipe import ResolvedPoint, PointKey

    point = ResolvedPoint("recipes/x.yaml", "dep8-c64", PointKey(8, 8, True, 64), "vllm",
                          "vllm/vllm-openai:v0.33.0@sha256:" + "a" * 64, "org/m", engine_versions=("0.33.0",),
                          router={"name": "vllm-router", "version": "0.1.14", "routing-key": "session-id",
                                  "args": {"policy": "consistent_hash"}})
    row = {"tp": 8, "ep": 8, "dp-attn": True, "conc": 64, "image": point.image, "model": "org/m",
           "scenario-type": "agentic-coding", "router": {"name": "vllm-router", "version": "0.1.14"}}
    return build_plan(row, replace(point), Settings(), "/job")


def test_vllm_router_command_parses_with_its_own_parser_and_addresses_every_dp_rank():
    plan = _vllm_dep8_plan()
    cmd = plan.proc("router").command
    args = list(cmd.args)
    assert args[args.index("--intra-node-data-parallel-size") + 1] == "8"   # vLLM DP8: eight engines behind :30000
    assert parse(*VLLM_ROUTER, args).ok, parse(*VLLM_ROUTER, args)
    broken = args + ["--policy", "sticky"]
    assert "invalid choice: 'sticky'" in parse(*VLLM_ROUTER, broken).error


def test_vllm_router_is_installed_into_its_own_folder_of_the_job_by_hash():
    from ci_tools.engines import install

    plan = _vllm_dep8_plan()
    router = plan.proc("router")
    assert router.argv[:3] == ["python3", "-c", install.GUARD]
    target, reqs = router.argv[3], router.argv[5:5 + int(router.argv[4])]
    assert target == "/job/router/site" and router.mounts == ("/job/router",)
    assert reqs == list(routers.release(*VLLM_ROUTER).requirements) and install.requirement_problems(reqs) == []
    assert ("/job/router/README" in dict(plan.files)) and install.unwrap(router.argv)[3:6] == \
        ["vllm-router", "0.1.14", "vllm_router.launch_router"]


def test_vllm_router_reads_the_session_id_header_the_client_sends():
    client = _vllm_dep8_plan().proc("client").argv
    assert client[client.index("--session-header") + 1] == "x-session-id"
    so = next(wheel_dir(*VLLM_ROUTER).glob("vllm_router_rs*.so"))
    assert b"x-session-id" in so.read_bytes() and b"X-data-parallel-rank" in so.read_bytes()


def test_vllm_router_routes_by_session_only_under_consistent_hash():
    r = {"name": "vllm-router", "version": "0.1.14", "routing-key": "session-id"}
    assert "only under `policy: consistent_hash`" in routers.problems(r)[0]
    assert routers.problems({**r, "args": {"policy": "consistent_hash"}}) == []
