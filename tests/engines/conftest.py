"""The engines' parser checks of one test session share the Dynamo runs they make (harness.SESSION_RUNS)."""

from __future__ import annotations

import pytest

from tests.engines import harness


@pytest.fixture(scope="session", autouse=True)
def _session_runs(request, tmp_path_factory):
    # pytest-xdist's workers each have a folder below the session's own: the session's is shared by them, and
    # pytest removes it with the session's other temporary folders (it keeps the last few sessions' only)
    base = tmp_path_factory.getbasetemp()
    harness.SESSION_RUNS = (base.parent if hasattr(request.config, "workerinput") else base) / "dynamo-runs"
    yield
    harness.SESSION_RUNS = None
