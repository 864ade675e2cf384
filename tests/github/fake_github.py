"""A local fake of the GitHub REST API: real HTTP on 127.0.0.1, stdlib server in a thread.

It holds just enough state for the calls ci-tools makes (PRs, comments, label and commit timeline,
workflow runs, artifacts, comparisons, statuses, permissions, teams, dispatches, runners). Object shapes start
from the real webhook payloads in ../shared/corpus/github-webhooks and every response body is
checked against GitHub's published schemas (githubkit's pydantic models): a response that does not
validate is recorded in `schema_errors`, which the fixture asserts empty, so the fake cannot drift
from the real API.

Faults: `fail(method, path_regex, status, times, headers, body)` queues failures (5xx, 429 with
Retry-After, secondary-rate-limit 403, `rate_limited()` for GitHub's primary limit); `page_size` forces
short pages (Link headers still point on).

GitHub's limits and edge answers, as the API has them: list pages carry `Link` with `rel="prev"`,
`"next"`, `"last"` and `"first"`; a filtered workflow-run list (`branch`, `event`, `status`, ...)
serves at most its first 1,000 runs while `total_count` counts them all; an expired artifact is listed
with `expired: true` and its zip answers 410; `permission_not_found` holds logins the collaborator
permission endpoint answers 404 for (GitHub does for some users who are not collaborators); a
repository_dispatch whose `client_payload` has more than 10 top-level keys (or 64 KB) gets 422.

Tokens follow GitHub's rules (`grant(token, kind, permissions)`): every endpoint must be in GitHub's
per-endpoint permission table (`data/github-permissions.json`, kept with its source version); a token
without the permission an endpoint needs gets GitHub's 403 "Resource not accessible by integration"
with `X-Accepted-GitHub-Permissions`; a GITHUB_TOKEN (kind "github_token": repository permissions only,
metadata read always) gets 404 from every organization endpoint, as on github.com. A token never
granted is a test token with every permission. Each request must name an API version GitHub serves
(`X-GitHub-Api-Version`); the fake answers with the version it used (`X-GitHub-Api-Version-Selected`).
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import os
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

T0 = "2026-10-01T00:00:00Z"
# GitHub's default artifact retention is 90 days from upload. Counted from the real clock, not T0: a
# command run without a fixed `now` (the workflow scenarios) must not see every artifact expire once
# the calendar passes T0 + 90 days.
FAR_EXPIRY = (datetime.now(timezone.utc) + timedelta(days=90)).strftime("%Y-%m-%dT%H:%M:%SZ")
API_VERSIONS = ("2022-11-28", "2026-03-10")      # the REST API versions GitHub serves
LEVELS = {"none": 0, "read": 1, "write": 2, "admin": 3}
# "This endpoint will return up to 1,000 results for each search when using the following parameters:
# actor, branch, check_suite_id, created, event, head_sha, status" (GitHub's workflow-runs reference);
# past it the pages come empty while total_count still counts every run.
RUN_SEARCH_CAP = 1000
RUN_SEARCH_FILTERS = ("actor", "branch", "check_suite_id", "created", "event", "head_sha", "status")
# repository_dispatch: `client_payload` has `maxProperties: 10` and must be under 64 KB (GitHub's description).
DISPATCH_MAX_KEYS = 10
DISPATCH_MAX_BYTES = 64 * 1024
# endpoints whose last parameter may hold slashes (a file path; a ref such as heads/main), as GitHub routes them
SLASHED_TAILS = ("/contents/{path}", "/git/ref/{ref}", "/git/refs/{ref}")
PERMISSIONS_FILE = Path(__file__).resolve().parent / "data" / "github-permissions.json"


def graphql_schema_file() -> Path:
    """GitHub's GraphQL schema as @octokit/graphql-schema publishes it (introspection JSON; dev.py installs
    it next to yaml-language-server, CI_TOOLS_GITHUB_GRAPHQL_SCHEMA points at it)."""
    default = Path(__file__).resolve().parents[2] / ".venv" / "github-graphql-schema" / "node_modules" / \
        "@octokit" / "graphql-schema" / "schema.json"
    return Path(os.environ.get("CI_TOOLS_GITHUB_GRAPHQL_SCHEMA") or default)


@functools.lru_cache(maxsize=1)
def github_graphql_schema():
    from graphql import build_client_schema

    path = graphql_schema_file()
    if not path.exists():
        raise RuntimeError(f"GitHub's GraphQL schema is not at {path}: run `python3 dev.py test` once (it installs "
                           "@octokit/graphql-schema), or set CI_TOOLS_GITHUB_GRAPHQL_SCHEMA")
    data = json.loads(path.read_text())
    schema = build_client_schema(data.get("data", data))
    # GitHub's published schema itself breaks a few of the spec's interface rules (a field deprecated on
    # PullRequest but not on the interface Reactable): graphql-core would refuse every query for that,
    # so those schema errors are set aside; each query is still validated against the schema in full.
    schema._validation_errors = []
    return schema


def recorded_plan(labels: tuple[str, ...]) -> dict:
    """The part of a sweep's plan.json that says what it swept, as `ci-tools plan` writes it for these labels."""
    from ci_tools.sweep.gate import mode_for
    from ci_tools.sweep.load import load_policy

    mode = mode_for(tuple(labels), load_policy(Path(__file__).resolve().parents[2]))
    return {"sweep": mode is not None, "reason": "recorded by the fake", "mode": mode.as_dict() if mode else None}


@dataclass(frozen=True)
class Endpoint:
    verb: str
    template: str
    regex: re.Pattern
    needs: tuple[tuple[str, str], ...]      # any one of (permission, access) suffices
    org: bool                               # an organization permission (GITHUB_TOKEN: 404)


def permission_table(path: Path = PERMISSIONS_FILE) -> list[Endpoint]:
    """GitHub's table as (endpoint -> the permissions, any one of which grants it)."""
    data = json.loads(path.read_text())
    needs: dict[tuple[str, str], list[tuple[str, str]]] = {}
    org: set[tuple[str, str]] = set()
    sections = {k: v for k, v in data.items() if not k.startswith("_")}
    sections.update({k: {"permissions": v} for k, v in data["_not_in_source"].items() if k != "why"})
    for key, section in sections.items():
        for e in section["permissions"]:
            ep = (e["verb"].upper(), e["requestPath"])
            needs.setdefault(ep, []).append((key.replace("_", "-"), e["access"]))
            if key == "members" or "Organization permissions" in section.get("displayTitle", ""):
                org.add(ep)
    out = []
    for (verb, template), alternatives in needs.items():
        pattern = re.sub(r"\\{[a-z_]+\\}", "[^/]+", re.escape(template))
        if template.endswith(SLASHED_TAILS):   # a file path or a ref like heads/main: slashes included
            pattern = pattern[: pattern.rindex("[^/]+")] + ".+"
        rx = re.compile("^" + pattern + "$")
        out.append(Endpoint(verb, template, rx, tuple(alternatives), (verb, template) in org))
    return out


@dataclass
class Grant:
    kind: str                                # "github_token" | "app" | "test"
    permissions: dict[str, str] | None       # None: every permission ("test" tokens)
    app: str = "github-actions"              # the GitHub App whose token it is (a GITHUB_TOKEN: GitHub Actions)

    def allows(self, permission: str, access: str) -> bool:
        if self.permissions is None:
            return True
        granted = "read" if permission == "metadata" and self.kind == "github_token" else "none"
        granted = max(granted, self.permissions.get(permission, "none"), key=LEVELS.__getitem__)
        return LEVELS[granted] >= LEVELS[access]


def _user(template: dict, login: str, type_: str = "User") -> dict:
    u = copy.deepcopy(template)
    u.update(login=login, type=type_, id=abs(hash(login)) % 10**8, node_id=f"U_{login}",
             html_url=f"https://github.com/{login}", url=f"https://api.github.com/users/{login}")
    return u


def _label(name: str) -> dict:
    return {"id": abs(hash(name)) % 10**9, "node_id": f"L_{name}", "url": f"https://api.github.com/labels/{name}",
            "name": name, "color": "ededed", "default": False, "description": None,
            "archived_at": None, "archived_by": None}


@dataclass
class Fault:
    method: str
    pattern: re.Pattern
    status: int
    times: int
    headers: dict
    body: dict


@dataclass
class FakeGitHub:
    corpus: Path
    repo: str = "octo/bench"
    bot: str = "github-actions[bot]"
    page_size: int | None = None           # force short pages
    drop_next: str | None = None           # a path regex whose pages come without `Link: next` (a broken proxy)
    flaky: int | None = None               # every distinct GET first answers with this status once
    requests: list[str] = field(default_factory=list)
    schema_errors: list[str] = field(default_factory=list)
    statuses: list[dict] = field(default_factory=list)
    check_runs: list[dict] = field(default_factory=list)     # completed check runs, oldest first (`_sha` their commit)
    repo_labels: dict = field(default_factory=dict)           # the repository's labels by lower-case name
    dispatches: list[dict] = field(default_factory=list)
    tokens: dict[str, Grant] = field(default_factory=dict)
    # one row per answered request: (token, "VERB template", the permissions any one of which it needed)
    authorised: list[tuple[str, str, tuple]] = field(default_factory=list)
    refused: list[tuple[str, str, int]] = field(default_factory=list)    # (token, "VERB path", status)
    api_versions: list[str] = field(default_factory=list)

    def __post_init__(self):
        hooks = self.corpus / "github-webhooks"
        sync = json.loads((hooks / "pull_request/synchronize.payload.json").read_text())
        self._pr_t = sync["pull_request"]
        self._user_t = self._pr_t["user"]
        self._comment_t = json.loads((hooks / "issue_comment/created.payload.json").read_text())["comment"]
        self._review_t = json.loads((hooks / "pull_request_review/submitted.payload.json").read_text())["review"]
        self._org_t = json.loads((hooks / "pull_request_review/submitted.with-organization.payload.json").read_text())[
            "organization"]
        self._run_t = json.loads((hooks / "workflow_run/completed.with-pull-requests.payload.json").read_text())[
            "workflow_run"]
        self.pulls: dict[int, dict] = {}
        self.comments: dict[int, dict] = {}          # id -> comment (with "_issue")
        self.events: dict[int, list[dict]] = {}      # PR -> labeled/unlabeled/committed timeline items
        self.commit_pulls: dict[str, list[int]] = {}
        self.association_lag: dict[str, int] = {}    # sha -> how many more asks answer [] (GitHub's lag)
        self.pr_files: dict[int, list] = {}             # PR -> paths, or (old, new) for a rename
        self.runs: dict[int, dict] = {}
        self.artifacts: dict[int, list[dict]] = {}
        self.compares: dict[tuple[str, str], tuple[str, list[str]]] = {}
        self.trees: dict[str, str] = {}              # commit -> tree sha
        self.tree_entries: dict[str, dict[str, str]] = {}   # tree sha -> top-level name -> object sha
        self.permissions: dict[str, str] = {}
        self.permission_not_found: set[str] = set()  # logins the permission endpoint answers 404 for
        self.teams: dict[tuple[str, str], set[str]] = {}
        self.reviews: dict[int, dict] = {}           # id -> review (with "_pr")
        self.endpoints = permission_table()
        self.faults: list[Fault] = []
        self.after_write: list[list] = []            # [method, path regex, status, times left, raw, body]
        self.app_runs: dict[str, list[dict]] = {}    # another repository (the results app) -> its runs
        self.app_acknowledges = True                 # a received dispatch starts the app's named run
        self.slows: list[list] = []                  # [method, path regex, seconds, times left]
        self.runners: list[dict] = []
        self.jobs: dict[int, list[dict]] = {}        # run id -> jobs
        self.blobs: dict[int, bytes] = {}            # artifact id -> zip archive
        self.blob_url = ""                           # the storage host downloads redirect to (Server sets it)
        self.leaked_tokens: list[str] = []           # Authorization headers that reached the storage host
        self.branches: dict[str, str] = {}           # branch -> head commit sha (git refs, contents, new PRs)
        self.files: dict[tuple[str, str], str] = {}  # (branch, path) -> text
        self._query: dict = {}
        self._grant = Grant("test", None)     # the token of the request being answered
        self._flaked: set[str] = set()
        self._ids = itertools.count(1000)
        self._clock = itertools.count(1)
        self._lock = threading.Lock()

    # ---- state builders -------------------------------------------------------------------------
    def tick(self) -> str:
        n = next(self._clock)
        return f"2026-10-{1 + n // 1440:02d}T{(n // 60) % 24:02d}:{n % 60:02d}:00Z"

    def add_pr(self, number: int, *, head_sha: str, head_ref: str = "feature", labels=(), merged_at=None,
               state="open", draft=False, body="", author="alice", commits=None, fork: str | None = None) -> dict:
        pr = copy.deepcopy(self._pr_t)
        pr.update(number=number, state=state, draft=draft, body=body, merged_at=merged_at,
                  merged=merged_at is not None, title=f"PR {number}", labels=[_label(l) for l in labels],
                  user=_user(self._user_t, author), html_url=f"https://github.com/{self.repo}/pull/{number}",
                  commits=len(commits or [head_sha]))
        pr["head"] = copy.deepcopy(pr["head"])
        pr["head"].update(sha=head_sha, ref=head_ref)
        pr["head"]["repo"] = copy.deepcopy(pr["head"]["repo"])
        pr["head"]["repo"]["full_name"] = fork or self.repo
        pr["base"]["repo"]["full_name"] = self.repo
        self.pulls[number] = pr
        self.events.setdefault(number, [])
        for sha in commits or [head_sha]:
            self.add_commit(number, sha)
        return pr

    def add_commit(self, pr: int, sha: str, tree: str | None = None) -> None:
        self.trees[sha] = tree or f"tree-{sha}"
        self.events[pr].append({"event": "committed", "sha": sha, "node_id": f"C_{sha}",
                                "url": f"https://api.github.com/repos/{self.repo}/git/commits/{sha}",
                                "html_url": f"https://github.com/{self.repo}/commit/{sha}",
                                "author": {"name": "a", "email": "a@x", "date": self.tick()},
                                "committer": {"name": "a", "email": "a@x", "date": self.tick()},
                                "message": "change", "tree": {"sha": self.trees[sha], "url": "https://x"},
                                "parents": [], "verification": {"verified": False, "reason": "unsigned",
                                                                "signature": None, "payload": None,
                                                                "verified_at": None},
                                "_at": self.tick()})

    def label(self, pr: int, name: str, added: bool = True, at: str | None = None) -> None:
        at = at or self.tick()
        self.events[pr].append({"id": next(self._ids), "node_id": "LE", "url": "https://x",
                                "actor": _user(self._user_t, "maint"), "event": "labeled" if added else "unlabeled",
                                "commit_id": None, "commit_url": None, "created_at": at,
                                "performed_via_github_app": None, "label": {"name": name, "color": "ededed"},
                                "_at": at})
        names = [l["name"] for l in self.pulls[pr]["labels"] if l["name"] != name]
        self.pulls[pr]["labels"] = [_label(n) for n in names + ([name] if added else [])]

    def add_comment(self, pr: int, body: str, *, author: str = "alice", association: str = "MEMBER",
                    type_: str = "User", at: str | None = None) -> dict:
        c = copy.deepcopy(self._comment_t)
        cid = next(self._ids)
        at = at or self.tick()
        c.update(id=cid, node_id=f"IC_{cid}", body=body, user=_user(self._user_t, author, type_),
                 author_association=association, created_at=at, updated_at=at,
                 html_url=f"https://github.com/{self.repo}/pull/{pr}#issuecomment-{cid}",
                 url=f"https://api.github.com/repos/{self.repo}/issues/comments/{cid}",
                 issue_url=f"https://api.github.com/repos/{self.repo}/issues/{pr}")
        c["_issue"] = pr
        self.comments[cid] = c
        return c

    def add_run(self, run_id: int, *, head_sha: str, conclusion: str | None = "success", branch: str = "feature",
                event: str = "pull_request", status: str = "completed", path: str = ".github/workflows/run-sweep.yml",
                created_at: str | None = None, artifacts=("results_bmk", "evals_passed", "changelog-metadata"), expired=(),
                pull_requests=(), attempt: int = 1, display_title: str | None = None,
                name: str | None = None, head_repo: str | None = None, expires_at: str = FAR_EXPIRY,
                plan_labels: tuple[str, ...] | None = ("full-sweep-fail-fast",)) -> dict:
        """`display_title` is the run name (a workflow's `run-name:`, else the commit message);
        `name` the workflow's `name:`, as GitHub returns both. `head_repo`: OWNER/NAME of the head
        commit's repository (a fork's, for a fork PR's own pull_request run); default this one.
        `expires_at`: when the run's artifacts expire (GitHub: 90 days after upload by default);
        the names in `expired` are listed already expired, and their zips answer 410.
        `plan_labels`: the labels the run was planned under; its changelog-metadata artifact then holds
        the plan.json `ci-tools plan` writes for them (None: an artifact without one)."""
        run = copy.deepcopy(self._run_t)
        run.update(display_title=display_title if display_title is not None else run["display_title"],
                   name=name if name is not None else run["name"])
        run.update(id=run_id, head_sha=head_sha, conclusion=conclusion, head_branch=branch, event=event,
                   status=status, path=path, created_at=created_at or self.tick(), run_attempt=attempt,
                   html_url=f"https://github.com/{self.repo}/actions/runs/{run_id}",
                   pull_requests=[{"id": n, "number": n, "url": "https://x",
                                   "head": {"ref": branch, "sha": head_sha, "repo": run["pull_requests"][0]["head"]["repo"]},
                                   "base": run["pull_requests"][0]["base"]} for n in pull_requests])
        run["repository"] = {**run["repository"], "full_name": self.repo}
        run["head_repository"] = {**run["head_repository"], "full_name": head_repo or self.repo}
        self.runs[run_id] = run
        self.artifacts[run_id] = [self._artifact(run_id, n, n in expired, expires_at) for n in [*artifacts, *expired]]
        if "changelog-metadata" in artifacts:
            self.add_artifact_files(run_id, "changelog-metadata", {} if plan_labels is None else {
                "plan.json": json.dumps(recorded_plan(plan_labels)).encode()})
        return run

    def add_repo_label(self, name: str, color: str = "ededed", description: str | None = None) -> dict:
        lid = next(self._ids)
        label = {"id": lid, "node_id": f"LA_{lid}", "url": f"https://api.github.com/repos/{self.repo}/labels/{name}",
                 "name": name, "description": description, "color": color, "default": False,
                 "archived_at": None, "archived_by": None}
        self.repo_labels[name.lower()] = label
        return label

    def _put_label(self, name: str | None, body: dict):
        """POST /labels (name taken: 422, as GitHub) or PATCH /labels/{name} (unknown: 404); GitHub's
        rules: a colour is six hex digits without '#', a description at most 100 characters."""
        color = body.get("color")
        if color is not None and not re.fullmatch(r"[0-9a-fA-F]{6}", str(color)):
            return 422, {"message": "Validation Failed", "errors": [{"resource": "Label", "code": "invalid",
                                                                   "field": "color"}]}, None
        if len(str(body.get("description") or "")) > 100:
            return 422, {"message": "Validation Failed", "errors": [{"resource": "Label", "code": "invalid",
                                                                   "field": "description"}]}, None
        if name is None:
            if str(body.get("name", "")).lower() in self.repo_labels or not body.get("name"):
                return 422, {"message": "Validation Failed", "errors": [{"resource": "Label", "code": "already_exists",
                                                                       "field": "name"}]}, None
            return 201, self.add_repo_label(str(body["name"]), str(color or "ededed"), body.get("description")), "Label"
        label = self.repo_labels.pop(name.lower(), None)
        if label is None:
            return 404, {"message": "Not Found"}, None
        new = str(body.get("new_name") or label["name"])
        label.update(name=new, color=str(color or label["color"]),
                     description=body["description"] if "description" in body else label["description"])
        self.repo_labels[new.lower()] = label
        return 200, label, "Label"

    @staticmethod
    def _public(obj: dict) -> dict:
        return {k: v for k, v in obj.items() if not k.startswith("_")}

    def _create_check_run(self, body: dict):
        """POST /check-runs as GitHub answers it: the body checked against GitHub's schema (a completed
        run needs its conclusion), the run owned by the app of the token (a GITHUB_TOKEN's is GitHub
        Actions), its `started_at` and `completed_at` the creator's where it sends them, else the clock's."""
        from githubkit_schemas.latest import models as m

        try:
            (m.ReposOwnerRepoCheckRunsPostBodyOneof0 if body.get("status") == "completed" or "conclusion" in body
             else m.ReposOwnerRepoCheckRunsPostBodyOneof1).model_validate(body)
        except Exception as exc:  # pydantic.ValidationError: GitHub answers 422
            return 422, {"message": "Invalid request.", "errors": [str(exc)[:300]],
                         "documentation_url": "https://docs.github.com/rest/checks/runs#create-a-check-run"}, None
        output = body.get("output") or {}
        if len(str(output.get("summary") or "")) > 65_535:
            return 422, {"message": "Invalid request.\n\noutput.summary is too long (maximum is 65535 characters)"}, None
        cid, at = next(self._ids), self.tick()
        sha = str(body["head_sha"])
        slug = self._grant.app
        app = {"id": 15368 if slug == "github-actions" else abs(hash(slug)) % 10**6, "slug": slug,
               "node_id": f"A_{slug}", "client_id": None,
               "owner": _user(self._user_t, "github", "Organization"), "name": "GitHub Actions" if slug == "github-actions"
               else slug, "description": "",
               "external_url": "https://help.github.com/en/actions", "html_url": f"https://github.com/apps/{slug}",
               "created_at": T0, "updated_at": T0, "permissions": {"checks": "write", "metadata": "read"},
               "events": ["check_run"], "installations_count": None}
        run = {"id": cid, "head_sha": sha, "node_id": f"CR_{cid}", "external_id": body.get("external_id") or "",
               "url": f"https://api.github.com/repos/{self.repo}/check-runs/{cid}",
               "html_url": f"https://github.com/{self.repo}/runs/{cid}", "details_url": body.get("details_url"),
               "status": "completed" if body.get("conclusion") else body.get("status") or "queued",
               "conclusion": body.get("conclusion"), "started_at": body.get("started_at") or at,
               "completed_at": (body.get("completed_at") or at) if body.get("conclusion") else None,
               "output": {"title": output.get("title"), "summary": output.get("summary"), "text": output.get("text"),
                          "annotations_count": 0, "annotations_url": "https://x"},
               "name": str(body["name"]), "check_suite": {"id": 1}, "app": app, "pull_requests": [],
               "deployment": None, "_sha": sha}
        self.check_runs.append(run)
        return 201, self._public(run), "CheckRun"

    def _artifact(self, run_id: int, name: str, expired: bool, expires_at: str = FAR_EXPIRY) -> dict:
        aid = next(self._ids)
        return {"id": aid, "node_id": f"A_{aid}", "name": name, "size_in_bytes": 10, "expired": expired,
                "url": f"https://api.github.com/repos/{self.repo}/actions/artifacts/{aid}",
                "archive_download_url": f"https://api.github.com/repos/{self.repo}/actions/artifacts/{aid}/zip",
                "created_at": T0, "expires_at": expires_at, "updated_at": T0, "digest": None,
                "workflow_run": {"id": run_id}}

    def expire(self, run_id: int, name: str | None = None) -> None:
        """Let a run's artifact `name` (every artifact when None) expire, as GitHub does after the
        retention period: listed with `expired: true`, its zip answers 410 from then on."""
        for art in self.artifacts.get(run_id, []):
            if name is None or art["name"] == name:
                art["expired"] = True

    def _artifact_by_id(self, artifact_id: int) -> dict | None:
        return next((a for arts in self.artifacts.values() for a in arts if a["id"] == artifact_id), None)

    def add_artifact_files(self, run_id: int, name: str, files: dict[str, bytes]) -> dict:
        """Give a run's artifact `name` (added if missing) a zip archive holding `files`."""
        import io
        import zipfile

        art = next((a for a in self.artifacts.setdefault(run_id, []) if a["name"] == name), None)
        if art is None:
            art = self._artifact(run_id, name, False)
            self.artifacts[run_id].append(art)
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for path, data in files.items():
                z.writestr(path, data)
        self.blobs[art["id"]] = buf.getvalue()
        art["size_in_bytes"] = len(self.blobs[art["id"]])
        return art

    def add_job(self, run_id: int, name: str, *, status: str = "completed", conclusion: str | None = "success",
                labels=("self-hosted",), created_at: str = T0, started_at: str = T0) -> dict:
        """`labels`: the job's `runs-on` labels, as GitHub lists them. GitHub's job schema requires a
        `started_at` string, a queued job's too (ci-tools reads it only for a job in progress)."""
        jid = next(self._ids)
        run = self.runs[run_id]
        job = {"id": jid, "run_id": run_id, "run_url": "https://x", "run_attempt": 1, "node_id": f"J_{jid}",
               "head_sha": run["head_sha"], "url": "https://x",
               "html_url": f"https://github.com/{self.repo}/actions/runs/{run_id}/job/{jid}",
               "status": status, "conclusion": conclusion if status == "completed" else None,
               "created_at": created_at, "started_at": started_at,
               "completed_at": started_at if status == "completed" else None,
               "name": name, "steps": [], "check_run_url": "https://x", "labels": list(labels),
               "runner_id": None, "runner_name": None, "runner_group_id": None, "runner_group_name": None,
               "workflow_name": run["name"], "head_branch": run["head_branch"]}
        self.jobs.setdefault(run_id, []).append(job)
        return job

    def add_runner(self, name: str, *, status: str = "online", busy: bool = False, labels=("self-hosted",)) -> dict:
        rid = next(self._ids)
        runner = {"id": rid, "runner_group_id": 1, "name": name, "os": "Linux", "status": status, "busy": busy,
                  "ephemeral": False,
                  "labels": [{"id": i + 1, "name": l, "type": "read-only" if l == "self-hosted" else "custom"}
                             for i, l in enumerate(labels)]}
        self.runners.append(runner)
        return runner

    def rate_limited(self, method: str, path: str, *, reset: int, times: int = 1, status: int = 403) -> None:
        """GitHub's primary rate limit: 403 (or 429) with `x-ratelimit-remaining: 0` and the reset time
        (epoch seconds) in `x-ratelimit-reset`; no Retry-After."""
        self.fail(method, path, status, times=times,
                  headers={"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-used": "5000",
                           "x-ratelimit-reset": str(reset), "x-ratelimit-resource": "core"},
                  body={"message": "API rate limit exceeded for installation ID 1.",
                        "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"})

    def grant(self, token: str, kind: str, permissions: dict[str, str], app: str = "github-actions") -> str:
        """Register `token`: kind "github_token" (a job's GITHUB_TOKEN with its `permissions:`) or "app"
        (an installation token of the GitHub App `app` with these repository and organization permissions)."""
        self.tokens[token] = Grant(kind, {k.replace("_", "-"): v for k, v in permissions.items()}, app)
        return token

    def add_review(self, pr: int, body: str, *, author: str = "alice", state: str = "commented",
                   association: str = "MEMBER", commit: str | None = None) -> dict:
        r = copy.deepcopy(self._review_t)
        rid = next(self._ids)
        r.update(id=rid, node_id=f"PRR_{rid}", body=body, user=_user(self._user_t, author), state=state.upper(),
                 author_association=association, commit_id=commit or self.pulls[pr]["head"]["sha"],
                 submitted_at=self.tick(), html_url=f"https://github.com/{self.repo}/pull/{pr}#pullrequestreview-{rid}",
                 pull_request_url=f"https://api.github.com/repos/{self.repo}/pulls/{pr}")
        r["_pr"] = pr
        self.reviews[rid] = r
        return r

    def edit(self, obj: dict, body: str, *, editor: str) -> dict:
        """`editor` edits a comment or review body, as GitHub keeps it: the first edit also records the
        original as an edit by its author at creation (`includesCreatedEdit`); history is newest first."""
        at = self.tick()
        edits = obj.setdefault("_edits", [])
        if not edits:
            edits.append({"editor": obj["user"]["login"], "at": obj.get("created_at") or obj.get("submitted_at"),
                          "diff": obj["body"]})
        edits.append({"editor": editor, "at": at, "diff": body})
        obj["body"] = body
        if "updated_at" in obj:
            obj["updated_at"] = at
        return obj

    def force_push(self, pr: int, sha: str, tree: str | None = None, *, actor: str = "alice",
                   keep: tuple[str, ...] = ()) -> None:
        """The head branch force-pushed to `sha`, as GitHub shows it: a `head_ref_force_pushed` event on
        its clock (the common issue-event fields; `commit_id` the new head), and the PR's commits are
        those of the new branch, so the `committed` items of commits it no longer has leave the
        timeline. `keep`: earlier commits the new head still has (a rewrite of the last commit only)."""
        at = self.tick()
        self.events[pr] = [e for e in self.events[pr] if e["event"] != "committed" or e["sha"] in keep]
        self.branch_event(pr, "head_ref_force_pushed", actor=actor, commit=sha, at=at)
        self.add_commit(pr, sha, tree)
        self.pulls[pr]["head"]["sha"] = sha
        self.pulls[pr]["commits"] = 1 + len(keep)

    def branch_event(self, pr: int, kind: str, *, actor: str = "alice", commit: str | None = None,
                     at: str | None = None) -> None:
        """A timeline event that moves the head branch (`head_ref_force_pushed`, `head_ref_deleted`,
        `head_ref_restored`): GitHub's common issue-event fields, `created_at` on its clock."""
        at = at or self.tick()
        self.events[pr].append({"id": next(self._ids), "node_id": f"HRE_{kind}", "url": "https://x",
                                "actor": _user(self._user_t, actor), "event": kind, "commit_id": commit,
                                "commit_url": f"https://api.github.com/repos/{self.repo}/commits/{commit}"
                                if commit else None, "created_at": at, "performed_via_github_app": None,
                                "_at": at})

    def add_app_run(self, repo: str, display_title: str) -> dict:
        """A repository_dispatch run in another repository (the results app), named `display_title`."""
        run = copy.deepcopy(self._run_t)
        rid = next(self._ids)
        run.update(id=rid, display_title=display_title, event="repository_dispatch", head_branch="main",
                   status="queued", conclusion=None, created_at=self.tick(), pull_requests=[],
                   html_url=f"https://github.com/{repo}/actions/runs/{rid}")
        run["repository"] = {**run["repository"], "full_name": repo}
        run["head_repository"] = {**run["head_repository"], "full_name": repo}
        self.app_runs.setdefault(repo, []).append(run)
        return run

    def fail_after_write(self, method: str, path: str, status: int, *, times: int = 1, raw: bytes | None = None,
                         body: dict | None = None) -> None:
        """Carry out the next `times` matching requests, then answer `status` with `body` (or the bytes
        `raw`: a garbled answer): a write that happened although the client was told it failed."""
        self.after_write.append([method, re.compile(path), status, times, raw, body or {"message": "Bad Gateway"}])

    def fail(self, method: str, path: str, status: int, *, times: int = 1, headers: dict | None = None,
             body: dict | None = None) -> None:
        self.faults.append(Fault(method, re.compile(path), status, times, headers or {},
                                 body or {"message": "Server Error"}))

    def slow(self, method: str, path: str, seconds: float, *, times: int = 1) -> None:
        """Carry out the next `times` matching requests, then answer only after `seconds` (a slow
        GitHub: the client may time out although the write happened)."""
        self.slows.append([method, re.compile(path), seconds, times])

    def delay_for(self, method: str, path: str) -> float:
        with self._lock:
            for rule in self.slows:
                if rule[3] > 0 and rule[0] == method and rule[1].search(path):
                    rule[3] -= 1
                    return rule[2]
        return 0.0

    def bot_comments(self, pr: int) -> list[dict]:
        return [c for c in self.comments.values() if c["_issue"] == pr and c["user"]["login"] == self.bot]

    # ---- serving --------------------------------------------------------------------------------
    def _timeline(self, pr: int) -> list[dict]:
        items = [dict(e) for e in self.events.get(pr, [])]
        for c in self.comments.values():
            if c["_issue"] == pr:
                e = {k: v for k, v in c.items() if k not in ("_issue", "_edits")}
                e.update(event="commented", actor=c["user"], _at=c["created_at"])
                items.append(e)
        items.sort(key=lambda e: e["_at"])
        return [{k: v for k, v in e.items() if k != "_at"} for e in items]

    def _commit(self, sha: str) -> dict:
        user = _user(self._user_t, "alice")
        return {"url": "https://x", "sha": sha, "node_id": f"C_{sha}", "html_url": "https://x",
                "comments_url": "https://x", "author": user, "committer": user, "parents": [],
                "commit": {"url": "https://x", "author": None, "committer": None, "message": "m",
                           "comment_count": 0, "tree": {"sha": self.trees.get(sha, f"tree-{sha}"), "url": "https://x"}}}

    def _diff(self, name: str | tuple[str, str]) -> dict:
        """A file of a PR or comparison: a path (modified), or (old path, new path): a rename, which
        GitHub lists under the new name with status `renamed` and the old one as `previous_filename`."""
        entry = {"sha": "0" * 40, "filename": name, "status": "modified", "additions": 1, "deletions": 0, "changes": 1,
                 "blob_url": "https://x", "raw_url": "https://x", "contents_url": "https://x"}
        if isinstance(name, tuple):
            entry.update(filename=name[1], previous_filename=name[0], status="renamed", additions=0, changes=0)
        return entry

    # ---- branches, files and new pull requests (a file-update PR) ---------------------------------
    def add_branch(self, name: str, sha: str, files: dict[str, str] | None = None) -> None:
        self.branches[name] = sha
        for path, text in (files or {}).items():
            self.files[(name, path)] = text

    @staticmethod
    def blob_sha(text: str) -> str:
        import hashlib

        data = text.encode("utf-8")
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    def _ref(self, branch: str) -> dict:
        sha = self.branches[branch]
        return {"ref": f"refs/heads/{branch}", "node_id": f"REF_{branch}",
                "url": f"https://api.github.com/repos/{self.repo}/git/refs/heads/{branch}",
                "object": {"type": "commit", "sha": sha,
                           "url": f"https://api.github.com/repos/{self.repo}/git/commits/{sha}"}}

    def _content(self, branch: str, path: str) -> dict:
        import base64

        text = self.files[(branch, path)]
        sha = self.blob_sha(text)
        api = f"https://api.github.com/repos/{self.repo}/contents/{path}?ref={branch}"
        html = f"https://github.com/{self.repo}/blob/{branch}/{path}"
        git = f"https://api.github.com/repos/{self.repo}/git/blobs/{sha}"
        return {"type": "file", "encoding": "base64", "size": len(text.encode()), "name": path.rsplit("/", 1)[-1],
                "path": path, "content": base64.b64encode(text.encode()).decode(), "sha": sha, "url": api,
                "git_url": git, "html_url": html,
                "download_url": f"https://raw.githubusercontent.com/{self.repo}/{branch}/{path}",
                "_links": {"git": git, "html": html, "self": api}}

    def _files_route(self, method: str, path: str, body: dict | None):
        """GitHub's git-ref, contents and create-pull answers, with their refusals (422 for an existing
        ref or a missing sha, 409 for a stale one, 404 for an unknown branch)."""
        r = re.escape(self.repo)
        m = lambda pat: re.fullmatch(pat, path)  # noqa: E731
        if method == "GET" and (g := m(rf"/repos/{r}/git/ref/heads/(.+)")):
            return (200, self._ref(g[1]), "GitRef") if g[1] in self.branches else (404, None, None)
        if method == "POST" and m(rf"/repos/{r}/git/refs"):
            ref, sha = str((body or {}).get("ref", "")), str((body or {}).get("sha", ""))
            name = ref.removeprefix("refs/heads/")
            if not ref.startswith("refs/heads/") or not sha:
                return 422, {"message": "Reference name must start with 'refs/' and contain a sha"}, None
            if name in self.branches:
                return 422, {"message": "Reference already exists", "status": "422"}, None
            source = next((b for b, s in self.branches.items() if s == sha), None)
            if source is None:
                return 422, {"message": "Object does not exist", "status": "422"}, None
            self.branches[name] = sha
            for (b, p), text in list(self.files.items()):
                if b == source:
                    self.files[(name, p)] = text
            return 201, self._ref(name), "GitRef"
        if (g := m(rf"/repos/{r}/contents/(.+)")) and method in ("GET", "PUT"):
            file = g[1]
            if method == "GET":
                branch = self._query.get("ref", ["main"])[0]
                return (200, self._content(branch, file), "ContentFile") if (branch, file) in self.files \
                    else (404, None, None)
            branch = str((body or {}).get("branch") or "main")
            if branch not in self.branches:
                return 404, {"message": f"Branch {branch} not found"}, None
            current = self.files.get((branch, file))
            given = (body or {}).get("sha")
            if current is not None and not given:
                return 422, {"message": "Invalid request.\n\n\"sha\" wasn't supplied.", "status": "422"}, None
            if current is not None and given != self.blob_sha(current):
                return 409, {"message": f"{file} does not match {given}", "status": "409"}, None
            import base64
            import hashlib

            self.files[(branch, file)] = base64.b64decode(str((body or {}).get("content", ""))).decode("utf-8")
            parent = self.branches[branch]
            commit_sha = hashlib.sha1(f"{parent}{file}{body.get('message')}".encode()).hexdigest()
            self.branches[branch] = commit_sha
            content = {k: v for k, v in self._content(branch, file).items() if k not in ("content", "encoding")}
            who = {"name": "github-actions[bot]", "email": "41898282+github-actions[bot]@users.noreply.github.com",
                   "date": self.tick()}
            commit = {"sha": commit_sha, "node_id": f"C_{commit_sha}",
                      "url": f"https://api.github.com/repos/{self.repo}/git/commits/{commit_sha}",
                      "html_url": f"https://github.com/{self.repo}/commit/{commit_sha}", "author": who,
                      "committer": who, "message": str(body.get("message")),
                      "tree": {"url": "https://x", "sha": f"tree-{commit_sha}"},
                      "parents": [{"url": "https://x", "html_url": "https://x", "sha": parent}],
                      "verification": {"verified": False, "reason": "unsigned", "signature": None, "payload": None,
                                       "verified_at": None}}
            return (201 if current is None else 200), {"content": content, "commit": commit}, "FileCommit"
        if method == "POST" and m(rf"/repos/{r}/pulls"):
            head, base = str((body or {}).get("head", "")), str((body or {}).get("base", ""))
            if head not in self.branches or base not in self.branches or not (body or {}).get("title"):
                return 422, {"message": "Validation Failed", "errors": [{"resource": "PullRequest", "field": "head",
                                                                       "code": "invalid"}]}, None
            if any(p["head"]["ref"] == head and p["state"] == "open" for p in self.pulls.values()):
                return 422, {"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom",
                             "message": f"A pull request already exists for {self.repo.split('/')[0]}:{head}."}]}, None
            number = max(self.pulls, default=0) + 1
            pr = self.add_pr(number, head_sha=self.branches[head], head_ref=head, author=self.bot.removesuffix("[bot]"),
                             body=str(body.get("body") or ""))
            pr["title"] = str(body["title"])
            pr["base"]["ref"] = base
            return 201, pr, "PullRequest"
        return None

    def route(self, method: str, path: str, body: dict | None):
        r = re.escape(self.repo)
        m = lambda pat: re.fullmatch(pat, path)  # noqa: E731
        answered = self._files_route(method, path, body)
        if answered is not None:
            return answered
        if method == "GET" and (g := m(rf"/repos/{r}/commits/([0-9a-zA-Z]+)/statuses")):
            found = [{k: v for k, v in st.items() if k != "_sha"} for st in reversed(self.statuses) if st["_sha"] == g[1]]
            return 200, found, ("list", "Status")
        if method == "GET" and (g := m(rf"/repos/{r}/commits/([0-9a-zA-Z]+)/check-runs")):
            # newest first; `check_name` filters by name; GitHub's default `filter=latest` keeps the newest
            # of each name in a check suite (one per app here), `filter=all` every one
            wanted = self._query.get("check_name", [None])[0]
            every = self._query.get("filter", ["latest"])[0] == "all"
            found, seen = [], set()
            for c in reversed(self.check_runs):
                if c["_sha"] == g[1] and (wanted is None or c["name"] == wanted) \
                        and (every or (c["name"], c["app"]["slug"]) not in seen):
                    seen.add((c["name"], c["app"]["slug"]))
                    found.append(self._public(c))
            return 200, {"total_count": len(found), "check_runs": found}, "ReposOwnerRepoCommitsRefCheckRunsGetResponse200"
        if method == "POST" and m(rf"/repos/{r}/check-runs"):
            return self._create_check_run(body or {})
        if method == "GET" and m(rf"/repos/{r}/labels"):
            return 200, list(self.repo_labels.values()), ("list", "Label")
        if method == "POST" and m(rf"/repos/{r}/labels"):
            return self._put_label(None, body or {})
        if method == "PATCH" and (g := m(rf"/repos/{r}/labels/([^/]+)")):
            from urllib.parse import unquote

            return self._put_label(unquote(g[1]), body or {})
        if method == "GET" and (g := m(rf"/repos/{r}/commits/([0-9a-f]+)/pulls")):
            if self.association_lag.get(g[1], 0) > 0:
                self.association_lag[g[1]] -= 1
                return 200, [], ("list", "PullRequestSimple")
            return 200, [self.pulls[n] for n in self.commit_pulls.get(g[1], [])], ("list", "PullRequestSimple")
        if method == "GET" and m(rf"/repos/{r}/pulls"):
            # GitHub's default state is open; the list is by creation, oldest first with direction=asc
            return 200, [p for n, p in sorted(self.pulls.items()) if p["state"] == "open"], ("list", "PullRequestSimple")
        if method == "GET" and (g := m(rf"/repos/{r}/pulls/(\d+)")):
            if int(g[1]) not in self.pulls:
                return 404, None, None
            pr = self.pulls[int(g[1])]
            # GitHub counts the conversation's comments on the PR object (`comments`)
            pr["comments"] = sum(1 for c in self.comments.values() if c["_issue"] == int(g[1]))
            if int(g[1]) in self.pr_files:
                pr["changed_files"] = len(self.pr_files[int(g[1])])
            return 200, pr, "PullRequest"
        if method == "GET" and (g := m(rf"/repos/{r}/pulls/(\d+)/files")):
            # GitHub lists at most 3,000 files of a pull request
            return 200, [self._diff(f) for f in self.pr_files.get(int(g[1]), [])[:3000]], ("list", "DiffEntry")
        if method == "GET" and (g := m(rf"/repos/{r}/issues/(\d+)/timeline")):
            return 200, self._timeline(int(g[1])), ("list", "timeline")
        if method == "GET" and (g := m(rf"/repos/{r}/issues/(\d+)/comments")):
            return 200, [{k: v for k, v in c.items() if k not in ("_issue", "_edits")} for c in sorted(
                self.comments.values(), key=lambda c: c["id"]) if c["_issue"] == int(g[1])], ("list", "IssueComment")
        if method == "DELETE" and (g := m(rf"/repos/{r}/issues/comments/(\d+)")):
            return (204, None, None) if self.comments.pop(int(g[1]), None) else (404, None, None)
        if method == "GET" and (g := m(rf"/repos/{r}/actions/runs/(\d+)/jobs")):
            return 200, list(self.jobs.get(int(g[1]), [])), ("wrapped", "jobs", "Job")
        if method == "GET" and (g := m(rf"/repos/{r}/actions/artifacts/(\d+)/zip")):
            art = self._artifact_by_id(int(g[1]))
            if art is not None and art["expired"]:
                return 410, {"message": "Artifact has expired",
                             "documentation_url": "https://docs.github.com/rest/actions/artifacts#download-an-artifact"}, None
            # GitHub redirects to short-lived storage on another host (a signed URL): here the blob
            # listener on 127.0.0.2, which refuses a request that carries the API token
            return ((302, None, {"Location": f"{self.blob_url}/_blob/{g[1]}?sig=signed"}) if int(g[1]) in self.blobs
                    else (404, None, None))
        if (g := m(rf"/repos/{r}/issues/comments/(\d+)")) and method in ("GET", "PATCH"):
            c = self.comments.get(int(g[1]))
            if c is None:
                return 404, None, None
            if method == "PATCH":
                c["body"] = body["body"]
                c["updated_at"] = self.tick()
            return 200, {k: v for k, v in c.items() if k not in ("_issue", "_edits")}, "IssueComment"
        if method == "POST" and (g := m(rf"/repos/{r}/issues/(\d+)/comments")):
            c = self.add_comment(int(g[1]), body["body"], author=self.bot, association="NONE", type_="Bot")
            return 201, {k: v for k, v in c.items() if k != "_issue"}, "IssueComment"
        if method == "GET" and (g := m(rf"/repos/{r}/collaborators/([^/]+)/permission")):
            if g[1].lower() in {u.lower() for u in self.permission_not_found}:
                return 404, None, None
            perm = self.permissions.get(g[1], "none")
            user = {**_user(self._user_t, g[1]), "role_name": perm}
            return 200, {"permission": perm, "role_name": perm, "user": user}, \
                "RepositoryCollaboratorPermission"
        if method == "GET" and (g := m(r"/orgs/([^/]+)/teams/([^/]+)/memberships/([^/]+)")):
            if g[3] in self.teams.get((g[1], g[2]), set()):
                return 200, {"url": "https://x", "role": "member", "state": "active"}, "TeamMembership"
            return 404, None, None
        if method == "GET" and (g := m(r"/orgs/([^/]+)/teams/([^/]+)")):
            if (g[1], g[2]) not in self.teams:
                return 404, None, None
            return 200, self._team(g[1], g[2]), "TeamFull"
        if method == "GET" and (g := m(rf"/repos/{r}/pulls/(\d+)/reviews/(\d+)")):
            rv = self.reviews.get(int(g[2]))
            if rv is None or rv["_pr"] != int(g[1]):
                return 404, None, None
            out = {k: v for k, v in rv.items() if k not in ("_pr", "_edits")}
            out["_links"] = {"html": {"href": rv["html_url"]}, "pull_request": {"href": rv["pull_request_url"]}}
            return 200, out, "PullRequestReview"
        if method == "GET" and (g := m(rf"/repos/{r}/actions/runs/(\d+)")):
            run = self.runs.get(int(g[1]))
            return (200, run, "WorkflowRun") if run else (404, None, None)
        if method == "GET" and (g := m(rf"/repos/{r}/actions/runs/(\d+)/artifacts")):
            return 200, self.artifacts.get(int(g[1]), []), ("wrapped", "artifacts", "Artifact")
        if method == "GET" and m(rf"/repos/{r}/actions/runners"):
            return 200, list(self.runners), ("wrapped", "runners", "Runner")
        if method == "GET" and (g := m(rf"/repos/{r}/actions/workflows/([^/]+)/runs")):
            return 200, None, ("runs", g[1])
        if method == "GET" and (g := m(rf"/repos/{r}/commits/([0-9a-zA-Z]+)")):
            return 200, self._commit(g[1]), "Commit"
        if method == "GET" and (g := m(rf"/repos/{r}/git/trees/([0-9a-zA-Z-]+)")):
            entries = self.tree_entries.get(g[1], {"inferencex-e2e": "t-e2e", "recipes": "t-recipes", "README.md": "b-1"})
            return 200, {"sha": g[1], "url": "https://x", "truncated": False,
                         "tree": [{"path": n, "mode": "040000" if "." not in n else "100644",
                                   "type": "tree" if "." not in n else "blob", "sha": s, "url": "https://x"}
                                  for n, s in entries.items()]}, "GitTree"
        if method == "GET" and (g := m(rf"/repos/{r}/compare/([0-9a-zA-Z]+)\.\.\.([0-9a-zA-Z]+)")):
            status, files = self.compares.get((g[1], g[2]), ("identical" if g[1] == g[2] else "diverged", []))
            base = self._commit(g[1])
            return 200, {"url": "https://x", "html_url": "https://x", "permalink_url": "https://x",
                         "diff_url": "https://x", "patch_url": "https://x", "base_commit": base,
                         "merge_base_commit": base, "status": status, "ahead_by": 1, "behind_by": 0,
                         "total_commits": 1, "commits": [],
                         # GitHub lists at most 300 files of a comparison
                         "files": [self._diff(f) for f in files[:300]]}, "CommitComparison"
        if method == "POST" and (g := m(rf"/repos/{r}/statuses/([0-9a-zA-Z]+)")):
            st = {"url": "https://x", "avatar_url": None, "id": next(self._ids), "node_id": "S",
                  "state": body["state"], "description": body.get("description"),
                  "target_url": body.get("target_url"), "context": body["context"], "created_at": (at := self.tick()),
                  "updated_at": at, "creator": _user(self._user_t, self.bot, "Bot"), "_sha": g[1]}
            self.statuses.append(st)
            return 201, {k: v for k, v in st.items() if k != "_sha"}, "Status"
        if method == "POST" and m(r"/repos/[^/]+/[^/]+/dispatches"):
            payload = (body or {}).get("client_payload") or {}
            if len(payload) > DISPATCH_MAX_KEYS or len(json.dumps(payload)) >= DISPATCH_MAX_BYTES:
                return 422, {"message": f"Invalid request.\n\nNo more than {DISPATCH_MAX_KEYS} properties are allowed; "
                             f"{len(payload)} were supplied." if len(payload) > DISPATCH_MAX_KEYS else
                             "Invalid request.\n\nclient_payload must be less than 64KB.",
                             "documentation_url": "https://docs.github.com/rest/repos/repos#create-a-repository-dispatch-event",
                             "status": "422"}, None
            target = path.split("/")[2] + "/" + path.split("/")[3]
            self.dispatches.append({"repo": target, **body})
            if self.app_acknowledges:
                # the results app's contract: its receiving workflow's run is named for the dispatch
                key = payload.get("dispatch-key")
                self.add_app_run(target, f"{body['event_type']} {key}" if key else body["event_type"])
            return 204, None, None
        if method == "GET" and (g := m(r"/repos/([^/]+/[^/]+)/actions/runs")):
            if g[1] == self.repo:
                return 200, None, ("runs", None)       # this repository's runs, every workflow's, filtered
            return 200, sorted(self.app_runs.get(g[1], []), key=lambda r: (r["created_at"], r["id"]), reverse=True), \
                ("wrapped", "workflow_runs", "WorkflowRun")
        return 404, None, None

    # ---- GraphQL: queries run by graphql-core against GitHub's published schema --------------------
    def graphql(self, body: dict, grant: Grant) -> dict:
        """POST /graphql. The query is validated and executed against GitHub's own schema
        (@octokit/graphql-schema), so a field or argument GitHub does not have fails here as there.
        Errors come back as GitHub sends them: HTTP 200 with an `errors` list."""
        from graphql import graphql_sync

        def node(info, id):
            obj, kind = self._node(id)
            if obj is None:
                raise LookupError(f"Could not resolve to a node with the global id of '{id}'")
            # reading a PR's comment needs issues or pull-requests read; a review pull-requests read
            needs = (("pull-requests", "read"),) if kind == "PullRequestReview" else \
                (("issues", "read"), ("pull-requests", "read"))
            if not any(grant.allows(p, a) for p, a in needs):
                raise PermissionError("Resource not accessible by integration")
            return self._graphql_comment(obj, kind)

        result = graphql_sync(github_graphql_schema(), body.get("query") or "", root_value={"node": node},
                              variable_values=body.get("variables") or {})
        out: dict = {"data": result.data}
        if result.errors:
            out["errors"] = [{"type": "NOT_FOUND" if isinstance(e.original_error, LookupError) else
                              "FORBIDDEN" if isinstance(e.original_error, PermissionError) else None,
                              "message": e.message, "path": e.path,
                              "locations": [{"line": l.line, "column": l.column} for l in e.locations or []]}
                             for e in result.errors]
            if result.data is None:
                out.pop("data")
        return out

    def _node(self, node_id: str):
        for c in self.comments.values():
            if c["node_id"] == node_id:
                return c, "IssueComment"
        for rv in self.reviews.values():
            if rv["node_id"] == node_id:
                return rv, "PullRequestReview"
        return None, None

    def _graphql_comment(self, obj: dict, kind: str) -> dict:
        actor = lambda login: {"__typename": "Bot" if login.endswith("[bot]") else "User", "login": login}  # noqa: E731
        edits = list(reversed(obj.get("_edits", [])))          # newest first, as GitHub lists them

        def user_content_edits(info, first=None, after=None, **_):
            start = int(after) + 1 if after is not None else 0
            per = min(first or 100, 100, self.page_size or 100)
            page = edits[start:start + per]
            return {"totalCount": len(edits),
                    "pageInfo": {"hasNextPage": start + per < len(edits), "hasPreviousPage": start > 0,
                                 "startCursor": str(start) if page else None,
                                 "endCursor": str(start + len(page) - 1) if page else None},
                    "nodes": [{"__typename": "UserContentEdit", "id": f"UCE_{obj['id']}_{i}",
                               "editor": actor(e["editor"]) if e["editor"] else None, "editedAt": e["at"],
                               "createdAt": e["at"], "updatedAt": e["at"], "diff": e["diff"], "deletedAt": None}
                              for i, e in enumerate(page, start)]}

        return {"__typename": kind, "id": obj["node_id"], "body": obj["body"], "author": actor(obj["user"]["login"]),
                "lastEditedAt": edits[0]["at"] if edits else None, "includesCreatedEdit": bool(edits),
                "createdAt": obj.get("created_at") or obj.get("submitted_at"), "userContentEdits": user_content_edits}

    def _team(self, org: str, slug: str) -> dict:
        o = {**self._org_t, "login": org, "html_url": f"https://github.com/{org}", "description": None,
             "has_organization_projects": True, "has_repository_projects": True, "public_repos": 1,
             "public_gists": 0, "followers": 0, "following": 0, "created_at": T0, "updated_at": T0,
             "type": "Organization", "archived_at": None}
        return {"id": abs(hash((org, slug))) % 10**8, "node_id": f"T_{slug}", "url": "https://x", "html_url": "https://x",
                "name": slug, "slug": slug, "description": None, "privacy": "closed", "notification_setting":
                "notifications_enabled", "permission": "pull", "members_url": "https://x", "repositories_url": "https://x",
                "parent": None, "members_count": len(self.teams[(org, slug)]), "repos_count": 1, "created_at": T0,
                "updated_at": T0, "organization": o, "type": "organization"}

    def endpoint(self, method: str, path: str) -> Endpoint | None:
        hits = [e for e in self.endpoints if e.verb == method and e.regex.match(path)]
        return min(hits, key=lambda e: e.template.count("{")) if hits else None

    def check_token(self, method: str, path: str, token: str):
        """None when the request may proceed, else GitHub's answer to it."""
        ep = self.endpoint(method, path)
        if ep is None:
            self.schema_errors.append(f"{method} {path}: not in GitHub's permission table (data/github-permissions.json);"
                                      " add the endpoint from the source table before calling it")
            return 404, {"message": "Not Found"}, {}
        grant = self.tokens.get(token, Grant("test", None))
        if ep.org and grant.kind == "github_token":
            self.refused.append((token, f"{method} {path}", 404))
            return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, {}
        if not any(grant.allows(p, a) for p, a in ep.needs):
            accepted = "; ".join(f"{p.replace('-', '_')}={a}" for p, a in ep.needs)
            self.refused.append((token, f"{method} {path}", 403))
            return 403, {"message": "Resource not accessible by integration",
                         "documentation_url": "https://docs.github.com/rest"}, {"X-Accepted-GitHub-Permissions": accepted}
        self.authorised.append((token, f"{method} {ep.template}", ep.needs))
        return None

    def validate(self, kind, obj) -> None:
        from githubkit_schemas.latest import models as m

        def one(name: str, item: dict):
            try:
                getattr(m, name).model_validate(item)
            except Exception as exc:  # pydantic.ValidationError
                self.schema_errors.append(f"{name}: {str(exc)[:800]}")

        if kind is None:
            return
        if isinstance(kind, str):
            one(kind, obj)
        elif kind[0] == "list" and kind[1] == "timeline":
            names = {"commented": "TimelineCommentEvent", "labeled": "LabeledIssueEvent",
                     "unlabeled": "UnlabeledIssueEvent", "committed": "TimelineCommittedEvent",
                     # GitHub's description has no model of its own for the head-branch events: the
                     # generic issue event (common fields) is StateChangeIssueEvent
                     "head_ref_force_pushed": "StateChangeIssueEvent", "head_ref_deleted": "StateChangeIssueEvent",
                     "head_ref_restored": "StateChangeIssueEvent"}
            for item in obj:
                one(names[item["event"]], item)
        elif kind[0] == "list":
            for item in obj:
                one(kind[1], item)

    def paginate(self, items: list, query: dict, base: str, wrap: str | None, cap: int | None = None):
        """One page of `items`, with GitHub's Link header (prev, next, last, first). `cap`: only the
        first `cap` items are served (a capped search), while `total_count` still counts them all."""
        per = min(int(query.get("per_page", ["30"])[0]), 100)
        if self.page_size:
            per = min(per, self.page_size)
        page = int(query.get("page", ["1"])[0])
        served = items if cap is None else items[:cap]
        chunk = served[(page - 1) * per: page * per]
        last = max(1, -(-len(served) // per))
        q = {k: v[0] for k, v in query.items()}

        def link(n: int, rel: str) -> str:
            return f'<{base}?{urlencode({**q, "page": str(n)})}>; rel="{rel}"'

        rels = []
        if page > 1:
            rels.append(link(page - 1, "prev"))
        if page < last and not (self.drop_next and re.search(self.drop_next, base)):
            rels.append(link(page + 1, "next"))
        if page < last:
            rels.append(link(last, "last"))
        if page > 1:
            rels.append(link(1, "first"))
        headers = {"Link": ", ".join(rels)} if rels else {}
        return ({"total_count": len(items), wrap: chunk} if wrap else chunk), headers

    def handle(self, method: str, raw_path: str, body: dict | None, base_url: str, headers: dict | None = None,
               host: str = "api"):
        url = urlparse(raw_path)
        query = parse_qs(url.query)
        headers_in = {k.lower(): v for k, v in (headers or {}).items()}
        with self._lock:
            self.requests.append(f"{method} {url.path}" + (f"?{url.query}" if url.query else ""))
            version = headers_in.get("x-github-api-version")
            self.api_versions.append(version or "")
            if version is not None and version not in API_VERSIONS:
                return 400, {"message": f"Unsupported 'X-GitHub-Api-Version': {version}",
                             "documentation_url": "https://docs.github.com/rest/about-the-rest-api/api-versions"}, {}
            if (blob := re.fullmatch(r"/_blob/(\d+)", url.path)) is not None or host != "api":
                # storage on another host: only there, only GET, and (as blob storage does for a
                # request with a foreign Authorization) refused when the token came along
                if host != "blob" or blob is None or method != "GET":
                    return 404, {"message": "Not Found"}, {}
                if "authorization" in headers_in:
                    self.leaked_tokens.append(headers_in["authorization"])
                    return 403, {"message": "AuthenticationFailed: a signed URL takes no Authorization header"}, {}
                return 200, self.blobs[int(blob[1])], {}
            token = (headers_in.get("authorization") or "").split(" ", 1)[-1]
            if method == "POST" and url.path == "/graphql":
                return 200, self.graphql(body or {}, self.tokens.get(token, Grant("test", None))), {}
            refused = self.check_token(method, url.path, token)
            if refused is not None:
                return refused
            if self.flaky and method == "GET" and raw_path not in self._flaked:
                self._flaked.add(raw_path)
                headers = {"Retry-After": "1"} if self.flaky in (429, 403) else {}
                return self.flaky, {"message": "You have exceeded a secondary rate limit" if self.flaky == 403
                                    else "flaky"}, headers
            for f in self.faults:
                if f.times > 0 and f.method == method and f.pattern.search(url.path):
                    f.times -= 1
                    return f.status, f.body, f.headers
            self._query = query
            self._grant = self.tokens.get(token, Grant("test", None))
            status, obj, kind = self.route(method, url.path, body)
            for rule in self.after_write:
                if rule[3] > 0 and rule[0] == method and rule[1].search(url.path):
                    rule[3] -= 1
                    return rule[2], rule[4] if rule[4] is not None else rule[5], \
                        {"Content-Type": "application/json"} if rule[4] is not None else {}
            headers: dict = {}
            if status == 302 or isinstance(obj, bytes):  # a redirect, or an archive: no JSON, no schema
                return status, obj, kind or {}
            if isinstance(kind, tuple) and kind[0] == "runs":
                wf = kind[1]
                runs = [r for r in self.runs.values() if (wf is None or r["path"].endswith("/" + wf))
                        and r["head_branch"] == query.get("branch", [r["head_branch"]])[0]
                        and r["event"] == query.get("event", [r["event"]])[0]
                        and r["status"] == query.get("status", [r["status"]])[0]]
                runs.sort(key=lambda r: (r["created_at"], r["id"]), reverse=True)
                for r in runs:
                    self.validate("WorkflowRun", r)
                capped = any(k in query for k in RUN_SEARCH_FILTERS)
                obj, headers = self.paginate(runs, query, base_url + url.path, "workflow_runs",
                                             cap=RUN_SEARCH_CAP if capped else None)
            elif isinstance(kind, tuple) and kind[0] == "wrapped":
                for a in obj:
                    self.validate(kind[2], a)
                obj, headers = self.paginate(obj, query, base_url + url.path, kind[1])
            elif isinstance(kind, tuple) and kind[0] == "list":
                self.validate(kind, obj)
                obj, headers = self.paginate(obj, query, base_url + url.path, None)
            else:
                self.validate(kind, obj)
            if status == 404:
                obj = {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
            headers["X-GitHub-Api-Version-Selected"] = version or API_VERSIONS[0]
            return status, obj, headers


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHub
    base_url: str

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        status, obj, headers = self.fake.handle(method, self.path, body, self.base_url, dict(self.headers.items()),
                                                 self.host)
        delay = self.fake.delay_for(method, urlparse(self.path).path)
        if delay:
            threading.Event().wait(delay)
        raw = isinstance(obj, bytes)
        data = obj if raw else b"" if obj is None else json.dumps(obj).encode()
        headers = dict(headers)
        self.send_response(status)
        self.send_header("Content-Type", headers.pop("Content-Type", "application/zip" if raw else "application/json"))
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._serve("GET")

    def do_POST(self):
        self._serve("POST")

    def do_PATCH(self):
        self._serve("PATCH")

    def do_DELETE(self):
        self._serve("DELETE")

    def do_PUT(self):
        self._serve("PUT")


class Server:
    def __init__(self, fake: FakeGitHub):
        self.fake = fake
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.httpd.RequestHandlerClass = type("H", (_Handler,), {"fake": fake, "base_url": self.url, "host": "api"})
        # artifact storage is another host (GitHub: *.blob.core.windows.net); 127.0.0.2 is loopback too
        self.blobd = ThreadingHTTPServer(("127.0.0.2", 0), type("B", (_Handler,), {"fake": fake, "host": "blob"}))
        fake.blob_url = f"http://127.0.0.2:{self.blobd.server_address[1]}"
        self.blobd.RequestHandlerClass.base_url = fake.blob_url
        self.threads = [threading.Thread(target=h.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
                        for h in (self.httpd, self.blobd)]

    def __enter__(self) -> "Server":
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        for h in (self.httpd, self.blobd):
            h.shutdown()
            h.server_close()
