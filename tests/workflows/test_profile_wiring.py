"""profile.yml (docs/maintainer.md, "Profiling one point"): dispatched by hand only, the rows from
`ci-tools matrix`, each profiled on its own runner with `runner profile`'s own outputs naming the
artifact, and the same job budget as a benchmark job (`runner profile` plans with `runner run`'s)."""

from __future__ import annotations

import yaml

from ci_tools import names
from ci_tools.runner import budget
from wf_env import WORKFLOWS


def _profile() -> dict:
    return yaml.safe_load((WORKFLOWS / "profile.yml").read_text())


def test_only_a_writer_dispatching_it_starts_it():
    wf = _profile()
    assert list(wf[True]) == ["workflow_dispatch"]          # PyYAML reads `on:` as True
    assert wf["permissions"] == {}


def test_the_requester_is_checked_on_a_github_hosted_runner_before_a_gpu_is_held():
    jobs = _profile()["jobs"]
    auth = jobs["authorize"]
    assert auth["runs-on"] == "ubuntu-latest" and "needs" not in auth
    assert jobs["rows"]["needs"] == "authorize" and jobs["profile"]["needs"] == "rows"
    [step] = [s for s in auth["steps"] if "run" in s]
    assert step["run"] == 'ci-tools runner profile --requested-by "$REQUESTER" --authorize-only --format github'
    # who started this run, or re-ran it (a re-run by a non-maintainer is refused too)
    assert step["env"] == {"GITHUB_TOKEN": "${{ github.token }}", "REQUESTER": "${{ github.triggering_actor }}"}


def test_each_row_is_profiled_on_its_runner_and_uploaded_under_the_commands_name():
    jobs = _profile()["jobs"]
    job = jobs["profile"]
    assert job["strategy"]["matrix"] == {"row": "${{ fromJson(needs.rows.outputs.matrix) }}"}
    assert jobs["rows"]["outputs"]["matrix"] == "${{ steps.rows.outputs.matrix }}"
    assert job["runs-on"] == ["self-hosted", "${{ matrix.row.runner }}"]
    assert job["timeout-minutes"] == budget.JOB_TIMEOUT_MINUTES
    steps = {s.get("id") or s.get("name") or s.get("uses"): s for s in job["steps"]}
    assert steps["run"]["run"].startswith("exec ci-tools runner profile ")     # cancel reaches ci-tools
    # the container gets HF_TOKEN: its image is checked against the allowlist, as benchmark.yml's is
    assert "--image-policy inferencex-e2e/ci-policy.yaml" in steps["run"]["run"]
    assert "CI_TOOLS_PROFILE_REQUESTS" in steps["run"]["env"]
    assert steps["Stop everything this job started"]["if"] == "always()"
    upload = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "${{ steps.run.outputs.artifact-profile }}"
    assert upload["with"]["path"].endswith("/out/" + names.PROFILE_TRACE_DIR)


def test_the_rows_it_asks_for_are_rows_runner_profile_can_serve(tmp_path, monkeypatch):
    """The rows step's own command, on the example repository, for the seed key at conc 64: each row
    dry-runs through `runner profile` (InferenceX's matrix rows carry no config-key, and a row
    without one names no recipe: --with-config-key adds it). The optional inputs (master file, sequence
    length) narrow the rows through the step's own shell."""
    import json
    import subprocess

    from click.testing import CliRunner

    import wf_contract as wc
    from ci_tools.cli import cli
    from ci_tools.runner.run_flow import prepare_profile
    from ci_tools.runner.run_plan import RunRequest
    from wf_env import REPO

    step = next(s for s in _profile()["jobs"]["rows"]["steps"] if s.get("id") == "rows")
    (argv,) = wc.ci_tools_commands(step["run"])
    monkeypatch.chdir(REPO)

    def rows_of(**inputs: str) -> list[dict]:
        """The step's command as its shell runs it for these inputs (the optional ones as `args`)."""
        args = subprocess.run(["bash", "-c", step["run"].split("ci-tools ")[0] + 'printf "%s\\n" "${args[@]}"'],
                              env={"PATH": "/usr/bin:/bin", **inputs}, capture_output=True, text=True, check=True)
        env = {"$" + k: v for k, v in inputs.items()}
        words = [w for a in argv if a not in ("--format", "github")
                 for w in (args.stdout.split() if a == "${args[@]}" else [env.get(a, a)])]
        res = CliRunner().invoke(cli, words + ["--format", "json"])
        assert res.exit_code == 0, res.output
        return json.loads(res.output)

    key = {"CONFIG_KEY": "dsv41flash-fp4-b300-sglang", "CONC": "64"}
    rows = rows_of(**key, CONFIG_FILE="", SEQ_LEN="any")
    assert sorted(r["isl"] for r in rows) == [1024, 8192]
    one = rows_of(**key, CONFIG_FILE="inferencex-e2e/configs/nvidia-master.yaml", SEQ_LEN="8k1k")
    assert [r["isl"] for r in one] == [8192]
    for i, row in enumerate(rows):
        path = tmp_path / f"row{i}.json"
        path.write_text(json.dumps(row))
        job = prepare_profile(RunRequest(row_path=path, root=REPO, dry_run=True, out=tmp_path / "o"), requests=None)
        assert "/start_profile" in job.commands and "artifact-profile" in job.outputs
