"""The Dynamo/engine table (ci_tools/engines/compat.py) agrees with the real wheels, and `config validate`
refuses a pair that does not import, at the recipe's frontend version, naming the release that works.

Each row's worker module is imported from the pinned ai-dynamo wheels on each engine wheel the row names
(tests/engines/wheels-torch.txt) and its own parse function run once (tests/engines/dynamo_host.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tools.config.load import load_sources
from ci_tools.config.validate import check
from ci_tools.engines.compat import DYNAMO_WORKERS, dynamo_problems, published
from tests.engines.harness import dynamo_run, pinned

REPO = Path(__file__).resolve().parents[2]
MINIMAL = {"sglang": ["--model-path", "/models/m"], "vllm": ["--model", "/models/m"]}
CASES = [(r, v, v in r.works) for r in DYNAMO_WORKERS for v in (*r.works, *r.fails)]


def test_every_version_the_table_names_is_pinned():
    wheels = pinned("torch")
    for r in DYNAMO_WORKERS:
        assert r.dynamo in wheels["ai-dynamo"] and r.dynamo in wheels["ai-dynamo-runtime"], r
        assert set(r.works) | set(r.fails) <= set(wheels[r.engine]), r


@pytest.mark.heavy      # a process per row, each importing Dynamo and its engine over torch: ~5 min on 2 cores
@pytest.mark.parametrize("r,version,imports", CASES,
                         ids=[f"dynamo{r.dynamo}-{r.engine}{v}" for r, v, _ in CASES])
def test_the_table_says_what_the_wheels_do(r, version, imports):
    run = dynamo_run(r.dynamo, f"dynamo.{r.engine}", (r.engine, version), [MINIMAL[r.engine]])
    assert run.built == imports, run.error
    if imports:
        assert run.results[0]["ok"], run.results
    else:
        assert r.why.split(" (")[0] in run.error, run.error


@pytest.mark.parametrize("dynamo,engine,versions,says", [
    ("1.6.1", "sglang", ("0.5.21", "0.5.22"), None),
    ("1.3.0", "sglang", ("0.5.21", "0.5.22"), "Dynamo 1.3.0's sglang worker (ai-dynamo 1.3.0.post1) on sglang "
                                              "0.5.21, 0.5.22 fails to import"),
    ("1.3.0", "sglang", ("0.5.22",), "declare Dynamo 1.6.1"),
    ("1.6.1", "sglang", ("0.5.30",), "is not known to import; it runs on sglang 0.5.21, 0.5.22, 0.5.23"),
    ("1.6.1", "trtllm", ("1.3.0",), "not in ci_tools/engines/compat.py"),
    ("1.6.1", "sglang", (), None),        # no engine-versions: the image's release is unknown here
    # ... so a release not in the table is not judged either (InferenceX's Dynamo commits and dev builds),
    # while the same release with engine-versions is refused (the row above naming trtllm 1.3.0)
    ("1.7.0.dev0", "sglang", (), None),
    ("1.7.0.dev0", "sglang", ("0.5.22",), "not in ci_tools/engines/compat.py"),
])
def test_dynamo_problems(dynamo, engine, versions, says):
    found = dynamo_problems(dynamo, engine, versions)
    assert (found == []) if says is None else (len(found) == 1 and says in found[0]), found


def test_published_names_the_wheel():
    assert published("1.3.0") == "1.3.0.post1" and published("1.6.1") == "1.6.1"


def test_validate_refuses_dynamo_1_3_with_sglang_0_5_21_at_the_recipes_frontend_version(tmp_path):
    """The example repository as it was before this table: Dynamo 1.3.0 over SGLang 0.5.21/0.5.22."""
    import shutil

    root = tmp_path / "repo"
    for part in ("inferencex-e2e", "recipes"):
        shutil.copytree(REPO / part, root / part)
    master = root / "inferencex-e2e/configs/nvidia-master.yaml"
    master.write_text(master.read_text().replace('dynamo-router, version: "1.6.1"', 'dynamo-router, version: "1.3.0"'))
    where = {}
    for recipe in sorted((root / "recipes/gb300-dsv41flash-fp4-dynamo-sglang").glob("*.yaml")):
        lines = recipe.read_text().splitlines()
        where[str(recipe.relative_to(root))] = next(i for i, t in enumerate(lines, 1) if t == '  version: "1.6.1"')
        recipe.write_text("\n".join(lines).replace('  version: "1.6.1"', '  version: "1.3.0"') + "\n")
    report = check(load_sources(root))
    assert {(f.file, f.line) for f in report.errors} == set(where.items()), [f.message for f in report.errors]
    for f in report.errors:
        assert "sglang.srt.server_args_config_parser" in f.message and "declare Dynamo 1.6.1" in f.message
