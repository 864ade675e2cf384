"""For every engine plug-in, an eval row's server runs without simulated acceptance: the recipe's
`synthetic-acceptance` is not applied and acceptance-forcing variables are removed (and recorded),
while the same point's throughput run keeps them."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.config.recipe import resolve_point
from ci_tools.config.load import load_recipe
from ci_tools.engines import ENGINE_NAMES
from ci_tools.evals import policy as ep
from ci_tools.runner.backends import Host, launches
from ci_tools.runner.plan import Settings, build_plan
from ci_tools.yaml.load import load_yaml_file
from tests.conftest import REPO

POLICY = ep.policy_from_doc(load_yaml_file(REPO / "inferencex-e2e/ci-policy.yaml", "ci-policy.yaml"))
IMAGE = "example.org/stub:1@sha256:" + "0" * 64
RECIPE = f"""recipe-version: 1
config-key: stub-{{engine}}
engine: {{engine}}
image: {IMAGE}
model: stub
synthetic-acceptance: 3.2
serve:
  env: {{{{TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: "2", SYNTHETIC_ACCEPTANCE_LENGTH: "3", KEEP: "1"}}}}
points:
  tp2-c4: {{{{tp: 2, ep: 1, conc: 4}}}}
"""
ROW = {"image": IMAGE, "model": "stub", "model-prefix": "stub", "tp": 2, "ep": 1, "conc": 4, "isl": 1024,
       "osl": 1024, "scenario-type": "fixed-seq-len"}


# ATOM fixes the acceptance length by a flag it has from 0.1.6rc1.dev311 on: the recipe names such a release
VERSIONS = {"atom": "engine-versions: [0.1.6rc1.dev323]\n"}


def plan(tmp_path: Path, engine: str, **row):
    path = tmp_path / f"{engine}.yaml"
    path.write_text(RECIPE.format(engine=engine) + VERSIONS.get(engine, ""))
    point = resolve_point(load_recipe(path, path.name), 2, 1, False, 4)
    return build_plan({**ROW, **row}, point, Settings(evals=POLICY), "out")


@pytest.mark.parametrize("backend", ["docker", "slurm", "process"])
@pytest.mark.parametrize("engine", ENGINE_NAMES)
def test_eval_server_never_simulates_acceptance(tmp_path, engine, backend):
    p = plan(tmp_path, engine, **{"run-eval": True, "eval-only": True})
    server = p.proc("server")
    assert server.env == {"KEEP": "1"}
    assert p.evals["acceptance"] == {"simulated": False,
                                     "removed-env": ["SYNTHETIC_ACCEPTANCE_LENGTH",
                                                     "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"]}
    words = [w for lc in launches(p, backend, Settings(), Host(label="cit-x")) for w in lc.argv + list(lc.env)]
    assert not [w for w in words if any(pref in w for pref in ep.SIMULATED_ACCEPTANCE_ENV_PREFIXES)], words
    throughput = plan(tmp_path, engine).proc("server")
    if engine == "atom":          # a flag of its own server, not an environment variable
        argv = list(throughput.argv)
        assert argv[argv.index("--spec-decode-acceptance-length") + 1] == "3.2"
    else:
        assert throughput.env["SGLANG_SIMULATE_ACC_LEN"] == "3.2"
    assert "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS" in throughput.env
