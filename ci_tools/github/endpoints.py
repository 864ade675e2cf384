"""Every REST endpoint ci-tools calls, with the token permission it needs, and which template a request
path matches: a refused call names the permission it lacked, and the tests hold the table to GitHub's
per-endpoint permissions and to what the client really calls."""

from __future__ import annotations

import re

# Every endpoint ci-tools calls, with the token permission it needs: GitHub's per-endpoint table for
# installation tokens (a GITHUB_TOKEN is one), `tests/github/data/github-permissions.json`, is checked
# against this in the tests. Used to say which permission a 403 is missing; the docs list it per job.
ENDPOINTS: dict[tuple[str, str], str] = {
    ("GET", "/repos/{owner}/{repo}/commits/{commit_sha}/pulls"): "pull-requests: read",
    ("GET", "/repos/{owner}/{repo}/pulls"): "pull-requests: read",
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"): "pull-requests: read",
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/files"): "pull-requests: read",
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}"): "pull-requests: read",
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/timeline"): "issues: read",
    ("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}"): "issues: read",
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): "issues: read",
    ("DELETE", "/repos/{owner}/{repo}/issues/comments/{comment_id}"): "issues: write",
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"): "issues: write",
    ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"): "issues: write",
    ("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission"): "metadata: read",
    ("GET", "/orgs/{org}/teams/{team_slug}"): "members: read",
    ("GET", "/orgs/{org}/teams/{team_slug}/memberships/{username}"): "members: read",
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/actions/runners"): "administration: read",
    ("GET", "/repos/{owner}/{repo}/commits/{ref}"): "contents: read",
    ("GET", "/repos/{owner}/{repo}/compare/{basehead}"): "contents: read",
    ("GET", "/repos/{owner}/{repo}/git/trees/{tree_sha}"): "contents: read",
    ("POST", "/repos/{owner}/{repo}/check-runs"): "checks: write",
    ("GET", "/repos/{owner}/{repo}/labels"): "issues: read",
    ("POST", "/repos/{owner}/{repo}/labels"): "issues: write",
    ("PATCH", "/repos/{owner}/{repo}/labels/{name}"): "issues: write",
    ("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs"): "checks: read",
    ("POST", "/repos/{owner}/{repo}/dispatches"): "contents: write",
    ("GET", "/repos/{owner}/{repo}/actions/runs"): "actions: read",
    ("GET", "/repos/{owner}/{repo}/git/ref/{ref}"): "contents: read",
    ("POST", "/repos/{owner}/{repo}/git/refs"): "contents: write",
    ("GET", "/repos/{owner}/{repo}/contents/{path}"): "contents: read",
    ("PUT", "/repos/{owner}/{repo}/contents/{path}"): "contents: write",
    ("POST", "/repos/{owner}/{repo}/pulls"): "pull-requests: write",
}

# GraphQL has one endpoint; a query may read what the token's repository permissions allow (a PR's
# comments and reviews: `pull-requests: read`), so it is not in the REST table above.
GRAPHQL = ("POST", "/graphql")


def _template_regex(template: str) -> re.Pattern:
    # A file path and a git reference hold slashes (`configs/al.yaml`, `heads/feature`), as GitHub reads them.
    pattern = re.sub(r"(/contents/|/git/ref/)\\{(ref|path)\\}$", r"\1.+", re.escape(template))
    return re.compile("^" + re.sub(r"\\{[a-z_]+\\}", "[^/]+", pattern) + "$")


_ENDPOINT_RE = [(verb, _template_regex(t), t, perm) for (verb, t), perm in ENDPOINTS.items()]


def endpoint_of(verb: str, url: str) -> tuple[str, str] | None:
    """(template, permission) of a request path; the most specific template wins."""
    path = re.sub(r"^https?://[^/]+", "", url).split("?")[0]
    hits = [(t, perm) for v, rx, t, perm in _ENDPOINT_RE if v == verb and rx.match(path)]
    return min(hits, key=lambda h: h[0].count("{")) if hits else None
