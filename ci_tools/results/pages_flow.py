"""`results publish`: the sweep report onto the repository's GitHub Pages branch (shell).

The site is a branch (`gh-pages` by default, served by Pages "deploy from a branch"): a report is
added at `pages.run_dir(pr, run)`, old runs are pruned (`pages.prune`), the index is rewritten, and
the branch is pushed. A push that loses a race with another run's is fetched and redone (the
layout is recomputed from what is there), so two sweeps publishing at once both end up on the site.
Pages is the deployment: only the repository's own setting (`CI_TOOLS_REPORT_PAGES`) turns it on.
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ci_tools.errors import InputError
from ci_tools.github.models import WorkflowRun
from ci_tools.gitio import Git
from ci_tools.results import pages

ATTEMPTS = 3
AUTHOR = ("-c", "user.name=ci-tools", "-c", "user.email=ci-tools@users.noreply.github.com")


# (PR, why) of a finished sweep run: the status card's rule (`prbot.card.decide.card_pr`), which the
# command passes in; the card lives on a floor above results, so results does not import it.
PrOfRun = Callable[[WorkflowRun], tuple[int | None, str]]


@dataclass
class Published:
    published: bool
    reason: str = ""
    path: str = ""
    pruned: list[str] = field(default_factory=list)
    attempts: int = 0
    notes: list[str] = field(default_factory=list)
    url: str = ""          # the page's address on the Pages site (the deployment's URL)


def target_of(event_name: str, payload: dict, pr_of_run: PrOfRun,
              main_branch: str = "main") -> tuple[bool, int | None, str]:
    """(publish?, PR number or None for main, why not). A workflow_run event (report-pages.yml) is
    judged by the finished sweep run: its PR as the status card finds it (`pr_of_run`), or a push to main."""
    if event_name == "workflow_run":
        from ci_tools.github.events import parse_event

        run = parse_event(payload, "workflow_run").workflow_run
        raw = payload.get("workflow_run") or {}
        if run is not None and raw.get("event") == "push":
            return _push(f"refs/heads/{raw.get('head_branch')}", main_branch)
        pr, why = pr_of_run(run) if run is not None else (None, "the event names no workflow run")
        return (pr is not None), pr, "" if pr is not None else why
    if event_name in ("pull_request", "pull_request_target"):
        number = (payload.get("pull_request") or {}).get("number")
        if isinstance(number, int):
            return True, number, ""
        return False, None, "the event names no pull request"
    if event_name == "push":
        return _push(payload.get("ref"), main_branch)
    if event_name == "workflow_dispatch":
        asked = str((payload.get("inputs") or {}).get("pr") or "")
        if asked.isdigit():
            return True, int(asked), ""
    return False, None, f"a {event_name} run is not a PR's or main's sweep"


def _push(ref, main_branch: str) -> tuple[bool, int | None, str]:
    if ref == f"refs/heads/{main_branch}":
        return True, None, ""
    return False, None, f"a push to {ref}, not to {main_branch}"


def _layout(site: Path, report: Path, pr: int | None, run_id: int, keep: int,
            open_prs: set[int] | None = None) -> tuple[str, list[str]]:
    d = pages.run_dir(pr, run_id)
    (site / d).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(report, site / d / pages.PAGE)
    dirs = [f"{top.name}/{run.name}" for top in site.iterdir() if top.is_dir() and not top.name.startswith(".")
            for run in top.iterdir() if run.is_dir()]
    # the PR being published stays whatever the list says: it may have closed while its sweep ran
    pruned = pages.prune(dirs, None if open_prs is None else open_prs | ({pr} if pr is not None else set()),
                         keep_per_pr=keep)
    for gone in pruned:
        shutil.rmtree(site / gone)
    kept = sorted(set(dirs) - set(pruned))
    (site / pages.PAGE).write_text(pages.index_html(kept), encoding="utf-8")
    (site / ".nojekyll").write_text("")  # serve the files as they are
    return d, pruned


def publish(report: Path, *, remote: str, branch: str, pr: int | None, run_id: int, token: str | None = None,
            keep: int = pages.KEEP_PER_PR, open_prs: set[int] | None = None) -> Published:
    """Add the report, prune (beyond `keep` runs per PR; every run of a PR not in `open_prs` when that
    is known), rewrite the index, push; a push that lost a race is redone on the new branch head."""
    if not report.is_file():
        raise InputError(f"{report}: no such report (write it with `ci-tools results report`)", exit_code=2)
    auth: tuple[str, ...] = ()
    if token:
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        auth = ("-c", f"http.extraheader=AUTHORIZATION: basic {basic}")
    with tempfile.TemporaryDirectory(prefix="ci-tools-pages-") as tmp:
        site = Path(tmp) / "site"
        site.mkdir()
        git = Git(site)
        git.run("init", "-q")
        for attempt in range(1, ATTEMPTS + 1):
            fetched = git.run(*auth, "fetch", "-q", "--depth", "1", remote, f"refs/heads/{branch}", check=False)
            if fetched.returncode == 0:
                git.run("checkout", "-q", "-f", "-B", branch, "FETCH_HEAD")
                git.run("clean", "-q", "-fdx")
            elif b"couldn't find remote ref" in fetched.stderr:
                git.run("checkout", "-q", "--orphan", branch)   # the first report: the branch starts here
            else:
                raise InputError(f"cannot fetch {branch} from the repository: "
                                 + fetched.stderr.decode("utf-8", "replace").strip())
            path, pruned = _layout(site, report, pr, run_id, keep, open_prs)
            git.run("add", "-A")
            git.run(*AUTHOR, "commit", "-q", "-m", f"sweep report: {path}" + (f" (pruned {', '.join(pruned)})" if pruned else ""))
            pushed = git.run(*auth, "push", "-q", remote, f"HEAD:refs/heads/{branch}", check=False)
            if pushed.returncode == 0:
                return Published(True, path=path, pruned=pruned, attempts=attempt)
            err = pushed.stderr.decode("utf-8", "replace")
            if "rejected" not in err and "fetch first" not in err and "non-fast-forward" not in err:
                raise InputError(f"cannot push the report to {branch}: {err.strip()} "
                                 "(the job needs `contents: write`; a fork's pull request has no such token)")
    raise InputError(f"the {branch} branch kept moving while the report was pushed ({ATTEMPTS} attempts); "
                     "re-run the job to publish it")


def run_publish(report: Path, *, enabled: str, event_name: str, event_path: Path | None, run_id: int,
                repository: str, branch: str, remote: str | None, token: str | None, keep: int,
                pr_of_run: PrOfRun, server: str = "https://github.com", decide: bool = False,
                open_prs: Callable[[], list[int]] | None = None, site: str = "") -> Published:
    """Publish the report, or only say whether it would be (`decide`: the workflow downloads the
    report artifact only then)."""
    if enabled.strip().lower() not in ("true", "1", "yes"):
        return Published(False, "publishing is off (set the repository variable CI_TOOLS_REPORT_PAGES to true)")
    if not decide and not report.is_file():
        raise InputError(f"{report}: no such report (write it with `ci-tools results report`)", exit_code=2)
    payload = {}
    if event_path is not None:
        try:
            payload = json.loads(event_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"{event_path}: cannot read the event payload ({exc})", exit_code=2) from None
    ok, pr, why = target_of(event_name, payload, pr_of_run)
    if not ok:
        return Published(False, why)
    site = pages.site_of(site, enabled, repository)
    page_url = pages.url(site, pr, run_id) if site else ""
    if decide:
        return Published(False, "", path=pages.run_dir(pr, run_id), url=page_url)
    if remote is None:
        if not repository:
            raise InputError("no repository: pass --remote or set GITHUB_REPOSITORY", exit_code=2)
        remote = f"{server.rstrip('/')}/{repository}.git"
    open_set, notes = _open_prs(open_prs)
    done = publish(report, remote=remote, branch=branch, pr=pr, run_id=run_id, token=token, keep=keep,
                   open_prs=open_set)
    done.notes += notes
    done.url = page_url
    return done


def _open_prs(lister: Callable[[], list[int]] | None) -> tuple[set[int] | None, list[str]]:
    """The open PRs (their pages are kept; a closed PR's go), or None with why when unknown: then only
    the newest runs per PR are kept, and the closed PRs' pages wait for a later run."""
    if lister is None:
        return None, ["closed PRs' pages were not pruned: no repository to list its open PRs from "
                      "(GITHUB_REPOSITORY and GITHUB_TOKEN)"]
    try:
        return set(lister()), []
    except InputError as exc:
        return None, [f"closed PRs' pages were not pruned: the open PRs could not be listed ({exc.message}; "
                      "the job needs `pull-requests: read`)"]


def open_prs_of(repository: str, token: str | None, api_url: str) -> Callable[[], list[int]] | None:
    """A lister of the repository's open PRs through the API, when there is a repository and a token."""
    if not repository or not token:
        return None

    def lister() -> list[int]:
        from ci_tools.github.client import GitHub

        return GitHub(repository, token, api_url=api_url).open_pull_numbers(None)
    return lister
