"""The fake answers GitHub's edge cases as GitHub does (raw HTTP, no client in between): the pages'
Link relations, the 1,000-run cap of filtered run lists, expired artifacts, the permission endpoint's
404, the 10-key limit of a repository_dispatch payload."""

from __future__ import annotations

import re

import httpx

HEADERS = {"Authorization": "Bearer t", "X-GitHub-Api-Version": "2022-11-28"}


def get(fake, path: str, **params) -> httpx.Response:
    return httpx.get(fake.url + path, params=params, headers=HEADERS, follow_redirects=True)


def links(resp: httpx.Response) -> dict[str, int]:
    return {rel: int(re.search(r"[?&]page=(\d+)", url)[1])
            for url, rel in re.findall(r'<([^>]+)>;\s*rel="(\w+)"', resp.headers.get("link", ""))}


def test_pages_carry_prev_next_last_and_first(fake):
    fake.add_pr(1, head_sha="a" * 40)
    for i in range(250):
        fake.add_comment(1, f"c{i}")
    path = f"/repos/{fake.repo}/issues/1/comments"
    assert links(get(fake, path, per_page=100)) == {"next": 2, "last": 3}
    assert links(get(fake, path, per_page=100, page=2)) == {"prev": 1, "next": 3, "last": 3, "first": 1}
    last = get(fake, path, per_page=100, page=3)
    assert links(last) == {"prev": 2, "first": 1} and len(last.json()) == 50


def test_a_filtered_run_list_serves_1000_runs_and_counts_them_all(fake):
    for i in range(1050):
        fake.add_run(10_000 + i, head_sha="a" * 40, branch="main", event="push", artifacts=())
    path = f"/repos/{fake.repo}/actions/workflows/run-sweep.yml/runs"
    tenth = get(fake, path, branch="main", per_page=100, page=10)
    assert tenth.json()["total_count"] == 1050 and len(tenth.json()["workflow_runs"]) == 100
    assert "next" not in links(tenth)
    assert get(fake, path, branch="main", per_page=100, page=11).json()["workflow_runs"] == []
    # unfiltered, the whole list is served
    assert len(get(fake, path, per_page=100, page=11).json()["workflow_runs"]) == 50


def test_an_expired_artifact_is_listed_expired_and_its_zip_answers_410(fake):
    fake.add_run(5, head_sha="a" * 40, artifacts=(), expires_at="2026-12-30T00:00:00Z")
    live = fake.add_artifact_files(5, "results_bmk", {"r.json": b"{}"})
    assert get(fake, f"/repos/{fake.repo}/actions/artifacts/{live['id']}/zip").status_code == 200
    fake.expire(5, "results_bmk")
    listed = get(fake, f"/repos/{fake.repo}/actions/runs/5/artifacts").json()["artifacts"]
    assert [(a["name"], a["expired"]) for a in listed] == [("results_bmk", True)]
    gone = get(fake, f"/repos/{fake.repo}/actions/artifacts/{live['id']}/zip")
    assert gone.status_code == 410 and gone.json()["message"] == "Artifact has expired"


def test_the_permission_endpoint_answers_404_for_some_non_collaborators(fake):
    fake.permission_not_found.add("drive-by")
    assert get(fake, f"/repos/{fake.repo}/collaborators/drive-by/permission").status_code == 404
    assert get(fake, f"/repos/{fake.repo}/collaborators/someone/permission").json()["permission"] == "none"


def test_a_dispatch_payload_of_more_than_10_keys_is_refused_with_422(fake):
    def send(n: int) -> httpx.Response:
        return httpx.post(f"{fake.url}/repos/{fake.repo}/dispatches", headers=HEADERS,
                          json={"event_type": "e", "client_payload": {f"k{i}": i for i in range(n)}})

    assert send(10).status_code == 204
    refused = send(11)
    assert refused.status_code == 422 and "No more than 10" in refused.json()["message"]
    assert len(fake.dispatches) == 1


def test_a_primary_rate_limit_answers_403_with_remaining_0_and_the_reset(fake):
    fake.add_pr(1, head_sha="a" * 40)
    fake.rate_limited("GET", r"/pulls/1$", reset=1_900_000_000)
    resp = get(fake, f"/repos/{fake.repo}/pulls/1")
    assert resp.status_code == 403 and resp.headers["x-ratelimit-remaining"] == "0"
    assert resp.headers["x-ratelimit-reset"] == "1900000000" and "retry-after" not in resp.headers
    assert get(fake, f"/repos/{fake.repo}/pulls/1").status_code == 200
