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
from ci_tools.engines.compat import (DYNAMO_WORKERS, EXTRA_PINS, bundled, dynamo_problems, frontend_problems, kind,
                                     published, release_problems)
from tests.engines.harness import WORKER_ARGV, dist_dir, dynamo_run, pinned

REPO = Path(__file__).resolve().parents[2]
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
    run = dynamo_run(r.dynamo, f"dynamo.{r.engine}", (r.engine, version), [WORKER_ARGV[r.engine]])
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
    ("1.6.1", "sglang", ("0.5.30",), "is not known to import; it runs on sglang 0.5.18, 0.5.21, 0.5.22, 0.5.23"),
    ("1.6.1", "trtllm", ("1.3.0",), "TensorRT-LLM worker cannot be checked against TensorRT-LLM 1.3.0"),
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
        text = "\n".join(lines).replace('  version: "1.6.1"', '  version: "1.3.0"')
        # the wheels it installs name the release too (else that mismatch is the finding)
        text = text.replace("ai-dynamo==1.6.1", "ai-dynamo==1.3.0.post1").replace("ai-dynamo-runtime==1.6.1",
                                                                                 "ai-dynamo-runtime==1.3.0.post1")
        recipe.write_text(text + "\n")
    report = check(load_sources(root))
    assert {(f.file, f.line) for f in report.errors} == set(where.items()), [f.message for f in report.errors]
    for f in report.errors:
        assert "sglang.srt.server_args_config_parser" in f.message and "declare Dynamo 1.6.1" in f.message


# ---- how a declared Dynamo release is had (issue 40: every release the masters declare) ----------------

@pytest.mark.parametrize("version,kind_", [
    ("0.8.0", "pypi"), ("1.3.0", "pypi"), ("0.8.1.post3", "pypi"), ("1.3.0.dev20260718", "dev"),
    ("1.4.0.dev20260807", "dev"), ("1.3.0.dev1", "dev"), ("v1.3.0-deepseek-v4-dev.1", "tag"), ("v1.3.0-dev.1", "tag"),
    ("46520ca59afe992fb5ef61b3197b2316f8df9b2b", "commit"), ("9.9.9", "unpublished")])
def test_kind(version, kind_):
    assert kind(version) == kind_


@pytest.mark.parametrize("image,carried", [
    ("nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1", ("0.8.1.post1", "trtllm")),
    ("nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:1.3.0-deepseek-v4-dev.1@sha256:" + "a" * 64,
     ("1.3.0-deepseek-v4-dev.1", "trtllm")),
    ("nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.3.0-dev.1-cuda13", ("1.3.0-dev.1", "trtllm")),
    ("nvcr.io/nvidia/ai-dynamo/sglang-runtime:0.9.1", ("0.9.1", "sglang")),
    ("nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc24", None), ("lmsysorg/sglang:v0.5.8", None)])
def test_nvidias_runtime_images_carry_their_release(image, carried):
    assert bundled(image) == carried


PIN = "ai-dynamo==0.9.1 --hash=sha256:" + "1" * 64


@pytest.mark.parametrize("version,engine,image,install,says", [
    ("0.9.1", "sglang", "lmsysorg/sglang:v0.5.8.post1", [PIN], None),
    ("0.9.1", "sglang", "lmsysorg/sglang:v0.5.8.post1", None, "is not in the image"),
    ("0.9.1", "sglang", "lmsysorg/sglang:v0.5.8.post1", ["ai-dynamo==0.9.0 --hash=sha256:" + "1" * 64],
     "`install:` pins ai-dynamo 0.9.0"),
    ("v1.3.0-dev.1", "trtllm", "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:1.3.0-dev.1-cuda13", None, None),
    ("0.8.1.post1", "trtllm", "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1", None, None),
    ("0.8.1.post1", "sglang", "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1", None,
     "runtime for trtllm, but the recipe's engine is sglang"),
    ("v1.3.0-deepseek-v4-dev.1", "trtllm", "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc24", None,
     "published only as NVIDIA's Dynamo runtime image of that name"),
    ("1.4.0.dev20260807", "trtllm", "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc24", None,
     "nightly dev build, published only on NVIDIA's own package index"),
    ("92f5b3b8d7dd5ab9179d4b1034bd2c1c0803693e", "sglang", "lmsysorg/sglang:x", None, "is a git commit of ai-dynamo"),
])
def test_a_release_is_had_as_it_is_published_or_refused_with_why(version, engine, image, install, says):
    found = release_problems(version, engine, image, install)
    assert (found == []) if says is None else (len(found) == 1 and says in found[0]), found


def test_a_dev_build_names_the_pypi_release_before_it():
    found = release_problems("1.3.0.dev20260718", "sglang", "lmsysorg/sglang:x", None)
    assert "declare a PyPI release (e.g. 1.2.1, the last before it)" in found[0]


def test_the_runtime_images_pair_is_not_judged_by_the_table():
    """NVIDIA's runtime image carries the engine its Dynamo was built with: no measured row is needed."""
    image = "nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1"
    assert frontend_problems("0.8.1.post1", "trtllm", ("1.2.0rc6.post2",), image, None) == []
    assert "runtime image for TensorRT-LLM" in frontend_problems("1.6.1", "trtllm", ("1.3.0rc24",),
                                                                     "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc24",
                                                                     ["ai-dynamo==1.6.1 --hash=sha256:" + "1" * 64])[0]


def test_the_extras_pins_are_the_wheels():
    """EXTRA_PINS is what each pinned ai-dynamo wheel's METADATA says its extras pin."""
    import email

    for version in pinned("torch")["ai-dynamo"]:
        meta = next(dist_dir("ai-dynamo", version, "torch").glob("*.dist-info/METADATA")).read_text()
        found = {}
        for req in email.message_from_string(meta).get_all("Requires-Dist") or []:
            for extra, engine in (("sglang", "sglang"), ("vllm", "vllm"), ("trtllm", "trtllm")):
                if f"extra == '{extra}'" in req or f'extra == "{extra}"' in req:
                    name = req.split("==")[0].split("[")[0].strip()
                    if name in ("sglang", "vllm", "tensorrt-llm"):
                        found[engine] = req.split("==")[1].split(";")[0].strip()
        assert found == EXTRA_PINS[version], version
