"""Finding 23.5: the recipe chooses the container image and the container gets HF_TOKEN; in a trusted
sweep of a fork PR that recipe is the fork's. The policy's image allowlist (`images: allowed:`,
schema-checked) is enforced by `config validate`, `plan` and `runner run` (the trusted copy)."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from ci_tools.config.images import allowed, allowlist_of, problem, repository_of

IMAGE = "lmsysorg/sglang:nightly-dev-cu13-20261012-e6072935@sha256:" + "9" * 64


@pytest.mark.parametrize("image,repository", [
    (IMAGE, "docker.io/lmsysorg/sglang"),
    ("nginx:1.27", "docker.io/library/nginx"),
    ("docker.io/lmsysorg/sglang@sha256:" + "0" * 64, "docker.io/lmsysorg/sglang"),
    ("index.docker.io/vllm/vllm-openai:v0.9", "docker.io/vllm/vllm-openai"),
    ("nvcr.io/nvidia/tritonserver:25.01-py3", "nvcr.io/nvidia/tritonserver"),
    ("localhost:5000/a/b:1", "localhost:5000/a/b"),
    ("reg.example:5000/team/img", "reg.example:5000/team/img"),
    ("ghcr.io/evil/sglang:latest@sha256:" + "1" * 64, "ghcr.io/evil/sglang"),
])
def test_image_references_are_normalised_as_docker_does(image, repository):
    assert repository_of(image) == repository


ALLOW = ("docker.io/lmsysorg/sglang", "nvcr.io/nvidia/*")


@pytest.mark.parametrize("image,ok", [
    (IMAGE, True),
    ("nvcr.io/nvidia/tritonserver:25.01@sha256:" + "0" * 64, True),
    ("ghcr.io/evil/sglang@sha256:" + "1" * 64, False),              # digest-pinned, but not whose
    ("docker.io/lmsysorg/sglang-fork@sha256:" + "1" * 64, False),   # a prefix is not the repository
    ("evil.example/lmsysorg/sglang@sha256:" + "1" * 64, False),     # the same path on another registry
    ("lmsysorg/sglang.evil.example/x@sha256:" + "1" * 64, False),
])
def test_the_allowlist_names_registries_and_repositories(image, ok):
    assert allowed(image, ALLOW) is ok
    assert (problem(image, ALLOW, "p.yaml") is None) is ok


def test_a_policy_without_an_allowlist_allows_nothing_to_be_checked():
    assert allowlist_of({"labels": {}}) is None
    assert "has no `images: allowed:`" in problem(IMAGE, None, "p.yaml")


def test_the_shipped_policy_has_an_allowlist_its_images_pass_and_the_schema_checks_it(repo_root):
    schema = json.loads((repo_root / "ci_tools" / "schemas" / "ci-policy.schema.json").read_text())
    data = yaml.safe_load((repo_root / "inferencex-e2e" / "ci-policy.yaml").read_text())
    jsonschema.Draft202012Validator(schema).validate(data)
    patterns = allowlist_of(data)
    masters = "\n".join(p.read_text() for p in (repo_root / "inferencex-e2e" / "configs").glob("*-master.yaml"))
    images = {line.split("image:", 1)[1].strip() for line in masters.splitlines() if "image:" in line}
    assert patterns and images and all(allowed(i, patterns) for i in images)
    for bad in (["ghcr.io"], ["https://ghcr.io/x"], [], ["Docker.io/x"]):
        assert list(jsonschema.Draft202012Validator(schema).iter_errors({**data, "images": {"allowed": bad}})), bad


# ---- enforced by config validate, plan and runner run ---------------------------------------------

import subprocess  # noqa: E402
from pathlib import Path  # noqa: E402

from test_bump_image import KEY, cli, copy  # noqa: E402,F401  (copy: the repository's configs in tmp_path)

EVIL = "ghcr.io/evil/sglang:nightly@sha256:" + "e" * 64
MASTER = "inferencex-e2e/configs/nvidia-master.yaml"


@pytest.fixture
def evil(copy) -> Path:
    """The repository's configs with the seed config's image (master and recipe) on another registry."""
    assert cli(copy, "config", "bump-image", "--config-key", KEY, "--image", EVIL).returncode == 0
    return copy


def test_config_validate_refuses_an_image_off_the_allowlist_at_its_line(evil):
    out = cli(evil, "config", "validate", "--root", str(evil))
    line = next(n for n, text in enumerate((evil / MASTER).read_text().splitlines(), 1) if EVIL in text)
    assert out.returncode == 1
    assert f"{MASTER}:{line}" in out.stdout + out.stderr and "not on the image allowlist" in out.stdout + out.stderr


ALLOW_EVIL = ("    - nvcr.io/nvidia/*\n", "    - nvcr.io/nvidia/*\n    - ghcr.io/evil/*\n")
PLAN = ("plan", "--base", "base", "--head", "HEAD", "--label", "full-sweep-fail-fast")


def select_evil(evil: Path, *, own_allowlist: bool = False) -> None:
    """A git history of `evil`: `base`, then HEAD appends a changelog entry selecting the seed config
    (whose image is EVIL); `own_allowlist`: HEAD's policy also allows ghcr.io/evil/* (a fork's)."""
    git = lambda *a: subprocess.run(["git", "-C", str(evil), *a], check=True, capture_output=True)  # noqa: E731
    commit = lambda msg: git("-c", "user.name=a", "-c", "user.email=a@x", "commit", "-q", "-m", msg)  # noqa: E731
    git("init", "-q")
    git("add", "-A")
    commit("base")
    git("tag", "base")
    if own_allowlist:
        own = evil / "inferencex-e2e" / "ci-policy.yaml"
        own.write_text(own.read_text().replace(*ALLOW_EVIL))
    log = evil / "inferencex-e2e" / "perf-changelog.yaml"
    log.write_text(log.read_text().rstrip("\n") + f"\n\n- config-keys:\n    - {KEY}\n  description:\n    - \"x\"\n"
                   "  pr-link: XXX\n")
    git("add", "-A")
    commit("evil image")


def test_plan_refuses_a_selected_config_whose_image_is_off_the_allowlist(evil):
    select_evil(evil)
    out = cli(evil, *PLAN, "--repo", str(evil))
    shown = out.stdout + out.stderr          # the refusal is a verdict, shown in full in every format
    assert out.returncode == 1 and "not on the image allowlist" in shown and "no sweep planned" in shown


def test_plan_with_the_trusted_policy_refuses_what_the_forks_own_policy_allows(evil, repo_root, tmp_path_factory):
    """A trusted sweep plans a fork's commit: `plan --image-policy` (trusted-sweep.yml and the release
    step pass the workflow commit's policy, as benchmark.yml does for the runner) checks the images
    against it; the fork's policy, which allows its own registry, plans the row."""
    select_evil(evil, own_allowlist=True)
    forks_own = cli(evil, *PLAN, "--repo", str(evil))
    assert "not on the image allowlist" not in forks_own.stdout + forks_own.stderr
    trusted = cli(evil, *PLAN, "--repo", str(evil), "--image-policy", str(repo_root / "inferencex-e2e" / "ci-policy.yaml"))
    shown = trusted.stdout + trusted.stderr
    assert trusted.returncode == 1 and "ghcr.io/evil/sglang" in shown and "not on the image allowlist" in shown
    missing = cli(evil, *PLAN, "--repo", str(evil), "--image-policy", str(tmp_path_factory.mktemp("p") / "nope.yaml"))
    assert missing.returncode == 2 and "image policy not found" in missing.stderr and "Traceback" not in missing.stderr


def test_every_plan_of_a_forks_commit_passes_the_trusted_policy():
    """The workflow steps that plan the approved fork commit (`--root pr`) read the trusted checkout's
    policy for the image allowlist."""
    workflows = Path(__file__).resolve().parents[2] / ".github" / "workflows"
    steps = [line for wf in sorted(workflows.glob("*.yml")) for line in
             wf.read_text().replace("\\\n", " ").splitlines() if "ci-tools plan" in line and "--root pr" in line]
    pr_args = [line for wf in sorted(workflows.glob("*.yml")) for line in wf.read_text().splitlines()
               if "args+=(--root pr" in line]
    assert len(steps) == 2 and len(pr_args) == 1
    assert all("--image-policy inferencex-e2e/ci-policy.yaml" in line for line in steps + pr_args)


def runner_dry_run(root: Path, tmp: Path, policy: Path | None, image: str = EVIL,
                   command: str = "run") -> subprocess.CompletedProcess:
    row = {"config-key": KEY, "image": image, "model": "deepseek-ai/DeepSeek-V4-Flash", "tp": 4, "ep": 4,
           "dp-attn": False, "conc": 1, "runner": "gb300", "precision": "fp4", "framework": "sglang",
           "exp-name": "x", "scenario-type": "agentic-coding"}
    (tmp / "row.json").write_text(json.dumps(row))
    args = ["runner", command, "--row", str(tmp / "row.json"), "--root", str(root), "--out", str(tmp / "out"), "--dry-run"]
    return cli(root, *args, *(["--image-policy", str(policy)] if policy else []))


@pytest.mark.parametrize("command", ["run", "profile"])   # a profiled container gets HF_TOKEN as well
def test_runner_run_refuses_an_image_the_trusted_policy_does_not_allow(evil, repo_root, tmp_path_factory, command):
    tmp_path = tmp_path_factory.mktemp(command)
    trusted = repo_root / "inferencex-e2e" / "ci-policy.yaml"      # the workflow commit's copy
    # the checked-out (fork's) policy allows its own registry: the runner does not read it
    own = evil / "inferencex-e2e" / "ci-policy.yaml"
    own.write_text(own.read_text().replace(*ALLOW_EVIL))
    refused = runner_dry_run(evil, tmp_path, trusted, command=command)
    assert refused.returncode == 1 and "not started" in refused.stderr and "ghcr.io/evil/sglang" in refused.stderr
    assert "Traceback" not in refused.stderr
    no_list = tmp_path / "no-list.yaml"
    no_list.write_text("policy-version: 1\nrepository: a/b\nlabels: {primary: {}}\n")
    assert "no `images: allowed:`" in runner_dry_run(evil, tmp_path, no_list, command=command).stderr


@pytest.mark.parametrize("command", ["run", "profile"])
def test_runner_run_starts_an_allowed_image(copy, tmp_path_factory, command):
    root = copy
    image = next(l.split("image:", 1)[1].strip() for l in (root / MASTER).read_text().splitlines() if "image:" in l)
    done = runner_dry_run(root, tmp_path_factory.mktemp(command), root / "inferencex-e2e" / "ci-policy.yaml", image,
                          command=command)
    assert done.returncode == 0 and "not started" not in done.stderr, done.stderr
