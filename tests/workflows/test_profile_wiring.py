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


def test_each_row_is_profiled_on_its_runner_and_uploaded_under_the_commands_name():
    jobs = _profile()["jobs"]
    job = jobs["profile"]
    assert job["strategy"]["matrix"] == {"row": "${{ fromJson(needs.rows.outputs.matrix) }}"}
    assert jobs["rows"]["outputs"]["matrix"] == "${{ steps.rows.outputs.matrix }}"
    assert job["runs-on"] == ["self-hosted", "${{ matrix.row.runner }}"]
    assert job["timeout-minutes"] == budget.JOB_TIMEOUT_MINUTES
    steps = {s.get("id") or s.get("name") or s.get("uses"): s for s in job["steps"]}
    assert steps["run"]["run"].startswith("exec ci-tools runner profile ")     # cancel reaches ci-tools
    assert "CI_TOOLS_PROFILE_REQUESTS" in steps["run"]["env"]
    assert steps["Stop everything this job started"]["if"] == "always()"
    upload = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "${{ steps.run.outputs.artifact-profile }}"
    assert upload["with"]["path"].endswith("/out/" + names.PROFILE_TRACE_DIR)
