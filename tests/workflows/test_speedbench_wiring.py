"""speedbench-al.yml (docs/maintainer.md, "Acceptance-length references"): dispatched by hand only; the
matrix from `config acceptance-matrix`, each cell measured on its own runner by `runner acceptance`
(its own outputs name the artifact), the update job reading back exactly those artifacts and the
matrix, with the collection's PR as the only write."""

from __future__ import annotations

import yaml

from ci_tools import names
from ci_tools.runner import budget
from wf_env import WORKFLOWS


def _wf() -> dict:
    return yaml.safe_load((WORKFLOWS / names.ACCEPTANCE_WORKFLOW).read_text())


def test_only_a_writer_dispatching_it_starts_it():
    wf = _wf()
    assert list(wf[True]) == ["workflow_dispatch"]          # PyYAML reads `on:` as True
    assert wf["permissions"] == {}
    assert set(wf[True]["workflow_dispatch"]["inputs"]) == {"thinking", "dry-run", "open-pr", "allow-partial"}


def test_each_cell_is_measured_on_its_runner_and_uploaded_under_the_commands_name():
    jobs = _wf()["jobs"]
    job = jobs["measure"]
    assert job["strategy"]["matrix"] == {"cell": "${{ fromJson(needs.matrix.outputs.matrix) }}"}
    assert job["strategy"]["fail-fast"] is False           # one failed cell must not cancel the others
    assert jobs["matrix"]["outputs"]["matrix"] == "${{ steps.matrix.outputs.matrix }}"
    assert job["runs-on"] == ["self-hosted", "${{ matrix.cell.runner }}"]
    assert job["timeout-minutes"] == budget.JOB_TIMEOUT_MINUTES
    assert "!inputs.dry-run" in job["if"]
    steps = {s.get("id") or s.get("name") or s.get("uses"): s for s in job["steps"]}
    assert steps["run"]["run"].startswith("exec ci-tools runner acceptance ")     # cancel reaches ci-tools
    assert steps["run"]["env"]["CI_TOOLS_RUN_URL"].endswith("/actions/runs/${{ github.run_id }}")
    assert steps["Stop everything this job started"]["if"] == "always()"
    upload = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "${{ steps.run.outputs.artifact-acceptance }}"
    assert upload["with"]["path"] == "${{ steps.run.outputs.acceptance-file }}"


def test_the_update_reads_back_every_cell_and_opens_the_pr():
    job = _wf()["jobs"]["update"]
    assert job["needs"] == ["matrix", "measure"] and job["if"].startswith("${{ always() && !inputs.dry-run")
    assert job["permissions"] == {"contents": "write", "pull-requests": "write", "actions": "read"}
    download = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact@"))
    assert download["with"]["pattern"] == names.ACCEPTANCE_ARTIFACT_PREFIX + "*"
    update = next(s for s in job["steps"] if s.get("id") == "update")
    assert "ci-tools config acceptance-update " in update["run"] and '--run-id "$RUN_ID"' in update["run"]
    assert update["env"]["RUN_ID"] == "${{ github.run_id }}"
    assert update["env"]["CI_TOOLS_ACCEPTANCE_OPEN_PR"] == "${{ inputs.open-pr }}"


def test_the_cells_it_asks_for_are_cells_runner_acceptance_can_measure(tmp_path, monkeypatch):
    """The matrix step's own command on the example repository: every cell dry-runs through
    `runner acceptance` with the step count it names and the metric reads."""
    import json

    from click.testing import CliRunner

    import wf_contract as wc
    from ci_tools.cli import cli
    from ci_tools.runner.run_flow import prepare_acceptance
    from ci_tools.runner.run_plan import RunRequest
    from wf_env import REPO

    step = next(s for s in _wf()["jobs"]["matrix"]["steps"] if s.get("id") == "matrix")
    (argv,) = wc.ci_tools_commands(step["run"])
    argv = [{"${THINKING:-both}": "both"}.get(a, a) for a in argv if a not in ("--format", "github")]
    monkeypatch.chdir(REPO)
    res = CliRunner().invoke(cli, [*argv, "--format", "json"])
    assert res.exit_code == 0, res.output
    cells = json.loads(res.output)
    assert len(cells) == 8 and {(c["thinking"], c["mtp"]) for c in cells} == {(t, k) for t in (True, False)
                                                                              for k in (1, 2, 3, 4)}
    for i, cell in enumerate(cells):
        path = tmp_path / f"cell{i}.json"
        path.write_text(json.dumps(cell))
        job = prepare_acceptance(RunRequest(row_path=path, root=REPO, dry_run=True, out=tmp_path / "o"), None, None)
        assert f"--speculative-num-steps {cell['mtp']} " in job.commands
        assert f"--speculative-num-draft-tokens {cell['mtp'] + 1} " in job.commands
        assert "/server_info" in job.commands and "SGLANG_SIMULATE_ACC" not in job.commands
        assert job.outputs["artifact-acceptance"] == names.ACCEPTANCE_ARTIFACT_PREFIX + cell["id"]
