"""How the workflows apply the plan's priorities (docs/maintainer.md, "Job priority").

GitHub creates a matrix's jobs in the order of its rows and documents no other ordering of queued
jobs, so the priority reaches GitHub only as the row order the plan writes: every benchmark matrix
must take the plan's rows as they are (no include/exclude, no re-sorting step, no max-parallel that
would hold the first rows back behind a limit), and the job name carries the score for people.
"""

from __future__ import annotations

import re

import yaml

from wf_env import WORKFLOWS


def _load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def test_benchmark_matrix_is_the_plans_rows_in_their_order():
    job = _load("benchmark.yml")["jobs"]["run"]
    strategy = job["strategy"]
    assert strategy["matrix"] == {"row": "${{ fromJson(inputs.rows) }}"}, "the matrix must be the rows as planned"
    assert "max-parallel" not in strategy
    assert job["name"].startswith("p${{ matrix.row.priority }} | ")


def test_every_benchmark_call_passes_a_plan_output_unchanged():
    calls = 0
    for path in sorted(WORKFLOWS.glob("*.yml")):
        for name, job in (yaml.safe_load(path.read_text()).get("jobs") or {}).items():
            if not str(job.get("uses", "")).endswith("/.github/workflows/benchmark.yml"):
                continue
            calls += 1
            rows = job["with"]["rows"].strip()
            # the canary list, or one bucket's matrix output: the plan's (or release's) JSON as written
            assert re.fullmatch(r"\$\{\{ (inputs\.canary|needs\.release\.outputs\[format\('matrix-\{0\}', "
                                r"matrix\.bucket\)\]) \}\}", rows), f"{path.name} {name}: rows: {rows}"
    assert calls >= 2


def test_the_plan_step_writes_the_matrix_outputs_from_ci_tools():
    """The rows are sorted where they are made: by `ci-tools plan`, whose outputs the pipeline forwards."""
    text = (WORKFLOWS / "sweep-pipeline.yml").read_text()
    assert "canary: ${{ steps.plan.outputs.canary }}" in text
    assert "jq" not in text.replace("jq .", "")
