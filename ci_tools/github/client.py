"""The GitHub adapter: exactly the calls ci-tools makes, nothing else, each answering the plain models of
`models.py` (the requests, their retries, pagination and caching are `rest.py`'s).

A list that ended early is refused: the timeline and the comment list carry no total, so they are
checked against the PR's own `comments` count, read before the list.
"""

from __future__ import annotations

from typing import Iterator

from ci_tools.github.events import _Reader, pull_request_from
from ci_tools.github.models import (PERMISSION_NOT_FOUND, Artifact, CheckRun, Comment, Commit,
                                    Comparison, EditHistory, Job, Label, PullRequest, Timeline, WorkflowRun,
                                    artifact_from_json, check_run_from_json, comment_from_json, commit_from_json,
                                    comparison_from_json, job_from_json, label_from_json, named_artifact,
                                    run_from_json, timeline_from_json)
from ci_tools.github.rest import (DEFAULT_API_URL, MAX_PAGES, PER_PAGE, GitHubError, Rest, TeamUnreadable,
                                  token_from_env)

__all__ = ["DEFAULT_API_URL", "GitHub", "GitHubError", "TeamUnreadable", "token_from_env"]

# GitHub links a fresh merge commit to its pull request a few seconds late; asking again after these
# pauses (a push with no PR at all costs ~9 s more) keeps main from running a full sweep for lack of it.
ASSOCIATION_WAITS = (3.0, 6.0)
# the run statuses of a run not yet completed that `active_runs` lists (a run is `in_progress` once any
# of its jobs is; its other jobs can still wait for a runner)
ACTIVE_RUN_STATUSES = ("queued", "in_progress")
MAX_CHECK_SUMMARY = 65_535   # characters of a check run's output.summary (GitHub's limit)

# GitHub's edit history of a comment or review (the Comment interface of its GraphQL schema).
_EDITS_QUERY = """
query($id: ID!, $after: String) {
  node(id: $id) {
    ... on Comment {
      author { login }
      lastEditedAt
      userContentEdits(first: 100, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes { editor { login } editedAt }
      }
    }
  }
}
"""


class GitHub(Rest):
    """The narrow interface. `repo` is "owner/name". Construct with `GitHub.from_env()` in commands."""

    # ---- the calls ci-tools makes ---------------------------------------------------------------
    def pulls_for_commit(self, sha: str) -> list[PullRequest]:
        return [pull_request_from(p, f"commits/{sha[:12]}/pulls", _Reader("GitHub API"))
                for p in self._list(self._r(f"/commits/{sha}/pulls"))]

    def merged_pull_requests(self, sha: str) -> list[PullRequest]:
        """The merged PRs of a commit, asked again (ASSOCIATION_WAITS) while GitHub reports none."""
        for wait in (*ASSOCIATION_WAITS, None):
            merged = [p for p in self.pulls_for_commit(sha) if p.merged_at]
            if merged or wait is None:
                return merged
            self._cache.pop(f"list:{self._r(f'/commits/{sha}/pulls')}?[]", None)   # _iter's key, no params
            self.log.sleeps.append(wait)
            self._sleep(wait)
        return []

    def open_pull_numbers(self, base: str | None) -> list[int]:
        """The numbers of the open PRs into `base` (None: into any branch), oldest first (every page)."""
        params = {"state": "open", **({"base": base} if base else {}), "sort": "created", "direction": "asc"}
        return [int(p["number"]) for p in self._list(self._r("/pulls"), params)]

    def _pull(self, number: int) -> dict:
        key = f"pull:{number}"
        if key not in self._cache:
            self._cache[key] = self._get(self._r(f"/pulls/{number}"))
        return self._cache[key]

    def pull_request(self, number: int) -> PullRequest:
        """The PR, parsed once into the plain `PullRequest` the decisions take."""
        return pull_request_from(self._pull(number), f"pulls/{number}", _Reader("GitHub API"))

    def pull_files(self, number: int) -> list[str]:
        """Every path the PR changes: each file's name and, for a renamed one, its old name too (a move
        takes the file away from the old path, so whoever owns that path must approve it as well).
        GitHubError when GitHub listed fewer than the PR's `changed_files` (the endpoint stops at
        3,000): a sign-off is never verified on a partial list."""
        entries = self._list(self._r(f"/pulls/{number}/files"))
        total = self._pull(number).get("changed_files")
        if isinstance(total, int) and len(entries) < total:
            raise GitHubError(f"GitHub listed {len(entries)} of the {total} files PR #{number} changes (it lists at most "
                              "3,000); refusing to decide on a partial list.")
        paths: list[str] = []
        for f in entries:
            paths.append(f["filename"])
            if f.get("previous_filename") and f["previous_filename"] != f["filename"]:
                paths.append(str(f["previous_filename"]))
        return paths

    def timeline(self, number: int) -> Timeline:
        """Comments, label events, commits and head-branch events of a PR from its one chronological
        list; GitHubError when it holds fewer comments than the PR counts (`_check_comments`)."""
        expected = self._comment_count(number)
        items = self._list(self._r(f"/issues/{number}/timeline"))
        self._check_comments(number, sum(1 for i in items if i.get("event") == "commented"), expected, "timeline")
        return timeline_from_json(items)

    def _comment_count(self, number: int) -> int | None:
        """The PR's own count of its conversation comments, read BEFORE a list is: comments posted
        meanwhile only make the list longer, so a list shorter than the count is cut short."""
        count = self._pull(number).get("comments")
        return count if isinstance(count, int) and not isinstance(count, bool) else None

    def _check_comments(self, number: int, listed: int, expected: int | None, what: str) -> None:
        # The timeline and comment lists carry no total_count: the only proof that no page is missing
        # (a proxy that drops `Link: next`, a short page taken as the last) is the PR's comment count.
        # Comments this client deleted since are allowed for; one deleted by someone else between the
        # two reads fails the job (re-run), which is the safe side.
        if expected is not None and listed < expected - self._deleted:
            raise GitHubError(f"GitHub API GET {self._r(f'/issues/{number}/{what}')}: the list holds {listed} of the "
                              f"{expected} comments PR #{number} counts, so a page is missing; refusing to decide "
                              "on a partial list. Re-run the job.")

    def comment(self, comment_id: int) -> Comment:
        return comment_from_json(self._get(self._r(f"/issues/comments/{comment_id}")))

    def create_comment(self, number: int, body: str) -> Comment:
        return comment_from_json(self._request("POST", self._r(f"/issues/{number}/comments"), body={"body": body})[1])

    def update_comment(self, comment_id: int, body: str) -> Comment:
        return comment_from_json(self._request("PATCH", self._r(f"/issues/comments/{comment_id}"),
                                               body={"body": body})[1])

    def permission(self, login: str) -> str:
        """The user's repository permission; `PERMISSION_NOT_FOUND` where GitHub answers 404 (it does
        for some users who are not collaborators): one commenter's missing record is their lack of
        permission, never a failure of the whole decision (issue 23)."""
        key = f"perm:{login.lower()}"
        if key not in self._cache:
            try:
                data = self._get(self._r(f"/collaborators/{login}/permission"))
                self._cache[key] = str(data.get("permission", "none"))
            except GitHubError as exc:
                if exc.status != 404:
                    raise
                self._cache[key] = PERMISSION_NOT_FOUND
        return self._cache[key]

    def team_member(self, org: str, team: str, login: str) -> bool:
        """Is `login` an active member of @org/team? GitHub answers 404 both for "not a member" and for a
        team this token cannot see (a GITHUB_TOKEN never can: it has no organization permissions), so a
        404 counts as "not a member" only once the team itself is readable; otherwise `TeamUnreadable`."""
        key = f"team:{org}/{team}:{login.lower()}"
        if key not in self._cache:
            try:
                data = self._get(f"/orgs/{org}/teams/{team}/memberships/{login}")
                self._cache[key] = data.get("state") == "active"
            except GitHubError as exc:
                if exc.status not in (403, 404):
                    raise
                if exc.status == 403 or not self._team_visible(org, team):
                    raise TeamUnreadable(
                        f"cannot read team membership with this token: GitHub answers {exc.status} for "
                        f"@{org}/{team}. A GITHUB_TOKEN cannot read organization teams; the workflow needs "
                        "TEAM_MEMBERSHIP_TOKEN, a token with the organization permission Members: read "
                        "(see docs/workflows.md, \"Deployment prerequisites\")", status=exc.status) from None
                self._cache[key] = False
        return self._cache[key]

    def _team_visible(self, org: str, team: str) -> bool:
        key = f"team:{org}/{team}"
        if key not in self._cache:
            try:
                self._get(f"/orgs/{org}/teams/{team}")
                self._cache[key] = True
            except GitHubError as exc:
                if exc.status not in (403, 404):
                    raise
                self._cache[key] = False
        return self._cache[key]

    def review_comment(self, number: int, review_id: int) -> Comment:
        """A review, as the sign-off reads a comment: its body, author and when it was submitted."""
        return comment_from_json(self._get(self._r(f"/pulls/{number}/reviews/{review_id}")), kind="review")

    def edit_history(self, node_id: str) -> EditHistory:
        """Who edited a comment or review body and when, from the edit history GitHub keeps (GraphQL
        `userContentEdits`; REST has none). Every page is read: a sign-off is judged on all its edits."""
        editors: list[str | None] = []
        after, last_edited, author = None, None, ""
        for _ in range(MAX_PAGES):
            data = self.graphql(_EDITS_QUERY, {"id": node_id, "after": after})
            node = data.get("node")
            if not isinstance(node, dict):
                raise GitHubError(f"GitHub GraphQL: no comment or review with id {node_id!r}; its edit history "
                                  "cannot be read, so nothing was decided.")
            author = str((node.get("author") or {}).get("login") or "")
            last_edited = node.get("lastEditedAt")
            edits = node.get("userContentEdits") or {}
            for e in edits.get("nodes") or []:
                editors.append((e.get("editor") or {}).get("login") if isinstance(e, dict) else None)
            info = edits.get("pageInfo") or {}
            if not info.get("hasNextPage"):
                if len(editors) < int(edits.get("totalCount") or 0):
                    raise GitHubError(f"GitHub GraphQL: the edit history of {node_id} lists {len(editors)} of its "
                                      f"{edits.get('totalCount')} edits; refusing to decide on a partial list.")
                return EditHistory(author=author, last_edited_at=last_edited, editors=tuple(editors))
            after = info.get("endCursor")
        raise GitHubError(f"GitHub GraphQL: the edit history of {node_id} has more than {MAX_PAGES} pages; refusing "
                          "to decide on a partial list.")

    def graphql(self, query: str, variables: dict) -> dict:
        """One GraphQL query. GitHub answers errors with HTTP 200 and an `errors` list: those fail too."""
        _, data = self._request("POST", self._requester.graphql_url, body={"query": query, "variables": variables})
        if not isinstance(data, dict) or data.get("errors") or not isinstance(data.get("data"), dict):
            errors = data.get("errors") if isinstance(data, dict) else data
            raise GitHubError(f"GitHub GraphQL query failed: {errors!r:.300}. Nothing was decided; a FORBIDDEN "
                              "error means the token cannot read the comment (it needs `pull-requests: read`).")
        return data["data"]

    def _run(self, run_id: int) -> dict:
        key = f"run:{run_id}"
        if key not in self._cache:
            self._cache[key] = self._get(self._r(f"/actions/runs/{run_id}"))
        return self._cache[key]

    def workflow_run(self, run_id: int) -> WorkflowRun:
        """A run, parsed once into the plain `WorkflowRun` the decisions take."""
        return run_from_json(self._run(run_id))

    def runs(self, workflow: str, *, branch: str, event: str = "pull_request",
             status: str = "completed") -> Iterator[WorkflowRun]:
        """A workflow's runs on a branch, newest first, fetched lazily page by page."""
        return (run_from_json(data) for data in self._iter(self._r(f"/actions/workflows/{workflow}/runs"),
                                                           {"branch": branch, "event": event, "status": status},
                                                           key="workflow_runs"))

    def recent_runs(self, workflow: str, *, branch: str, event: str, limit: int = PER_PAGE) -> list[WorkflowRun]:
        """A workflow's newest runs of any status (queued, pending and running ones included): one page."""
        runs = self._iter(self._r(f"/actions/workflows/{workflow}/runs"), {"branch": branch, "event": event},
                          key="workflow_runs")
        return [run_from_json(run) for _, run in zip(range(limit), runs)]

    def active_runs(self) -> list[dict]:
        """Every run of the repository, of any workflow, that waits for or holds runners: GitHub's run
        list filtered by `status` (one value a request), queued runs first, then in-progress ones."""
        return [run for status in ACTIVE_RUN_STATUSES
                for run in self._iter(self._r("/actions/runs"), {"status": status}, key="workflow_runs")]

    def artifacts(self, run_id: int) -> list[Artifact]:
        return [artifact_from_json(a) for a in self._list(self._r(f"/actions/runs/{run_id}/artifacts"), key="artifacts")
                if isinstance(a, dict) and isinstance(a.get("id"), int)]

    def run_plan(self, run_id: int, *, max_bytes: int = 16 * 1024 * 1024) -> dict | None:
        """The plan a run recorded when it started (`plan.json` in its changelog-metadata artifact), or
        None when it has none; cached. Only a missing file is None: a failed download fails closed."""
        import io
        import json
        import zipfile

        from ci_tools import names

        key = f"plan:{run_id}"
        if key not in self._cache:
            art = named_artifact(self.artifacts(run_id), names.CHANGELOG_METADATA)
            plan = None
            if art is not None:
                data = self.artifact_zip(art.id, max_bytes=max_bytes)
                try:
                    with zipfile.ZipFile(io.BytesIO(data)) as z:
                        member = next((n for n in z.namelist() if n.rsplit("/", 1)[-1] == names.PLAN_JSON), None)
                        if member is not None and z.getinfo(member).file_size <= max_bytes:
                            plan = json.loads(z.read(member))
                except (zipfile.BadZipFile, ValueError, RecursionError) as exc:
                    raise GitHubError(f"run {run_id}'s {names.CHANGELOG_METADATA} artifact is not a readable zip with "
                                      f"a JSON {names.PLAN_JSON} ({type(exc).__name__}); nothing was decided") from None
            self._cache[key] = plan if isinstance(plan, dict) else None
        return self._cache[key]

    def runners(self) -> list[dict]:
        """The repository's self-hosted runners (needs an admin-scoped token)."""
        return self._list(self._r("/actions/runners"), key="runners")

    def commit(self, sha: str) -> Commit:
        key = f"commit:{sha}"
        if key not in self._cache:
            self._cache[key] = commit_from_json(self._get(self._r(f"/commits/{sha}")))
        return self._cache[key]

    def compare(self, base: str, head: str) -> Comparison:
        key = f"compare:{base}...{head}"
        if key not in self._cache:
            self._cache[key] = comparison_from_json(self._get(self._r(f"/compare/{base}...{head}")))
        return self._cache[key]

    def top_level_tree(self, sha: str) -> dict[str, str]:
        """name -> object sha of the top-level entries of commit `sha`'s tree (two calls, cached): equal
        sha means an unchanged folder, however many files a comparison would have to list."""
        key = f"toptree:{sha}"
        if key not in self._cache:
            data = self._get(self._r(f"/git/trees/{self.commit(sha).tree_sha}"))
            self._cache[key] = {str(e.get("path")): str(e.get("sha")) for e in data.get("tree") or []}
        return self._cache[key]

    def create_check_run(self, sha: str, *, name: str, conclusion: str, title: str, summary: str,
                         details_url: str | None = None) -> CheckRun:
        """A completed check run on `sha` (what branch protection requires by `name`), with a title
        and a Markdown summary a reviewer reads on the Checks tab (GitHub keeps 65,535 characters)."""
        body = {"name": name, "head_sha": sha, "status": "completed", "conclusion": conclusion,
                "output": {"title": title[:255], "summary": summary[:MAX_CHECK_SUMMARY]}}
        if details_url:
            body["details_url"] = details_url
        return check_run_from_json(self._request("POST", self._r("/check-runs"), body=body)[1])

    def check_runs(self, sha: str, name: str | None = None, *, every: bool = False) -> list[CheckRun]:
        """The check runs of `sha` (fresh: a writer reads back what it and others set), newest first, by
        `name` when given: GitHub's newest of each name (its default `filter=latest`), or with `every`
        each one ever created (`filter=all`: a record older than the newest verdict, the sign-off's
        after-push check)."""
        params = {**({"check_name": name} if name else {}), **({"filter": "all"} if every else {})}
        self._cache.pop(f"list:{self._r(f'/commits/{sha}/check-runs')}?{sorted(params.items())}", None)
        return [check_run_from_json(c) for c in self._list(self._r(f"/commits/{sha}/check-runs"), params,
                                                             key="check_runs") if isinstance(c, dict)]

    def labels(self) -> list[Label]:
        """The repository's labels."""
        return [label_from_json(x) for x in self._list(self._r("/labels")) if isinstance(x, dict)]

    def create_label(self, name: str, *, color: str, description: str) -> Label:
        return label_from_json(self._request("POST", self._r("/labels"), body={"name": name, "color": color,
                                                                               "description": description})[1])

    def update_label(self, name: str, *, color: str, description: str) -> Label:
        from urllib.parse import quote

        return label_from_json(self._request("PATCH", self._r(f"/labels/{quote(name, safe='')}"),
                                             body={"new_name": name, "color": color, "description": description})[1])

    def dispatch_run_names(self, repo: str) -> list[str]:
        """The run names of `repo`'s newest repository_dispatch runs (one page, fresh: a re-run asks
        whether its dispatch arrived). The results app names each run for the dispatch it received."""
        _, data = self._request("GET", f"/repos/{repo}/actions/runs",
                                {"event": "repository_dispatch", "per_page": PER_PAGE})
        runs = data.get("workflow_runs") if isinstance(data, dict) else None
        if not isinstance(runs, list):
            raise GitHubError(f"GitHub API GET /repos/{repo}/actions/runs: expected workflow_runs, got "
                              f"{type(runs).__name__}; nothing was sent")
        return [str(r.get("display_title") or "") for r in runs if isinstance(r, dict)]

    # ---- a file-update pull request (config acceptance-update) ----------------------------------
    def branch_sha(self, branch: str) -> str:
        return str(self._get(self._r(f"/git/ref/heads/{branch}"))["object"]["sha"])

    def create_branch(self, branch: str, sha: str) -> None:
        self._request("POST", self._r("/git/refs"), body={"ref": f"refs/heads/{branch}", "sha": sha})

    def file_sha(self, path: str, ref: str) -> str | None:
        """The blob sha of `path` at `ref` (what an update must name), None when the file is not there."""
        try:
            data = self._get(self._r(f"/contents/{path}"), {"ref": ref})
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        return str(data.get("sha")) if isinstance(data, dict) else None

    def put_file(self, path: str, text: str, *, branch: str, message: str, sha: str | None) -> None:
        """Create or update one file on `branch` (one commit)."""
        import base64

        body = {"message": message, "content": base64.b64encode(text.encode("utf-8")).decode("ascii"),
                "branch": branch, **({"sha": sha} if sha else {})}
        self._request("PUT", self._r(f"/contents/{path}"), body=body)

    def create_pull(self, *, title: str, head: str, base: str, body: str) -> PullRequest:
        data = self._request("POST", self._r("/pulls"), body={"title": title, "head": head, "base": base, "body": body})[1]
        return pull_request_from(data, "pulls", _Reader("GitHub API"))

    def dispatch(self, repo: str, event_type: str, client_payload: dict) -> None:
        self._request("POST", f"/repos/{repo}/dispatches",
                      body={"event_type": event_type, "client_payload": client_payload})

    # ---- the status card, main's results --------------------------------------------------------
    def issue_comments(self, number: int, *, fresh: bool = False) -> list[Comment]:
        """A PR's conversation comments; `fresh` reads them again instead of from this process's cache
        (the card writer must see what another job wrote a moment ago)."""
        path, params = self._r(f"/issues/{number}/comments"), None
        if fresh:
            self._cache.pop(f"list:{path}?{sorted((params or {}).items())}", None)
        expected = self._comment_count(number)
        items = self._list(path, params)
        self._check_comments(number, len(items), expected, "comments")
        return [comment_from_json(c) for c in items]

    def delete_comment(self, comment_id: int) -> None:
        self._request("DELETE", self._r(f"/issues/comments/{comment_id}"))
        self._deleted += 1

    def run_jobs(self, run_id: int) -> list[Job]:
        """The jobs of a run's latest attempt (called workflows' jobs included, named `caller / job`)."""
        return [job_from_json(j) for j in self._list(self._r(f"/actions/runs/{run_id}/jobs"), {"filter": "latest"},
                                                     key="jobs") if isinstance(j, dict)]
