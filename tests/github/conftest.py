"""Fixtures: a fake GitHub over real HTTP and a client pointed at it with instant, recorded sleeps."""

from __future__ import annotations

import pytest

from ci_tools.github.client import GitHub
from ci_tools.github.rest import WRITE_INTERVAL_ENV
from fake_github import FakeGitHub, Server


@pytest.fixture
def fake(shared):
    fake = FakeGitHub(shared / "corpus")
    with Server(fake) as server:
        fake.url = server.url
        yield fake
    assert not fake.schema_errors, "the fake answered outside GitHub's schema:\n" + "\n".join(fake.schema_errors)


@pytest.fixture
def slept() -> list[float]:
    return []


@pytest.fixture
def gh(fake, slept):
    return GitHub(fake.repo, "test-token", api_url=fake.url, sleep=slept.append, seconds_between_writes=0)


@pytest.fixture
def env(fake, tmp_path):
    """Environment for CLI runs against the fake: no pause between writes (a local server has no rate
    limit; the pause itself is tested in test_gh_client_edges.py)."""
    return {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": fake.repo, "GITHUB_API_URL": fake.url,
            "GITHUB_OUTPUT": str(tmp_path / "out.txt"), WRITE_INTERVAL_ENV: "0"}
